"""LangChain's response_format -> structured_response, in tenxgraph: Agent output_schema.

Run: python examples/003_structured_response.py
"""

from pydantic import BaseModel, Field

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import Message


class CourseRecommendation(BaseModel):
    """Course recommendation."""

    course_name: str = Field(description="Name of the recommended course")
    reason: str = Field(description="Why it is recommended")
    difficulty: str = Field(description="Difficulty: beginner/intermediate/advanced")


model = ScriptedModel(
    ['{"course_name": "Python 3 basics", "reason": "simple syntax", "difficulty": "beginner"}']
)
agent = create_agent(
    model,
    output_schema=CourseRecommendation,
    system_prompt="You are the EXAMPLE learning advisor.",
)
result = agent.invoke({"messages": [Message.text_message("Recommend a course for a beginner")]})

if "structured_response" in result:
    rec = result["structured_response"]
    print(f"Recommended course: {rec.course_name}")
    print(f"Reason: {rec.reason}")
    print(f"Difficulty: {rec.difficulty}")
# also on the state, and on the answer message as parsed_content
assert result["state"].structured_response == rec == result["messages"][-1].parsed_content

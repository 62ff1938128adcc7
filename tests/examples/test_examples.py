"""Every file in examples/ runs as a user would run it, and prints what it should."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"

EXPECTED = {
    "000_agent_state.py": "merged roles: ['user', 'assistant']",
    "000_context_accumulates.py": "tool calls paired with results: True",
    "000_create_messages.py": "tool message: tool 'Sunny, 22C'",
    "000_custom_state.py": "Selected city: Paris",
    "000_keep_context_within_window.py": "saw user turns: question 0 + question 2 ... question 11",
    "000_tool_result.py": "selected_city = Lisbon",
    "001_preserving_facts.py": "decisions_made: ['We decided: go to Rome', 'We decided: leave",
    "001_summarizing.py": "context_summary: Earlier the user said: my name is Ada; I live in",
    "001_trimming.py": "persisted context: ['turn 3', 'turn 4', 'turn 5']",
    "002_inspecting_a_response.py": "Called get_weather({'location': 'London'})",
    "002_messages_reference.py": "round trip: ok, 15 blocks",
    "003_custom_state_tools.py": "Cart: ['Python tutorial']",
    "003_jump_to.py": "Sensitive question: Sorry, for security reasons I cannot answer",
    "003_messages_reducer.py": "after edits: ['Hello there!', 'How can I help you?', 'Anything",
    "003_middleware_state_schema.py": "ShopStateWithMiddleware cart: ['tea'] model calls: 1",
    "003_structured_response.py": "Difficulty: beginner",
    "004_app_state.py": "Error: app_state value for 'function' is not JSON-serializable",
    "004_conversation_history.py": "You told me: Hello, my name is Strands!",
    "004_direct_tool_calls.py": "[('assistant', ['tool_call']), ('tool', ['tool_result'])]",
    "004_invocation_state.py": "{'request_id': 'r-42', 'user_id': 'u-1', 'answered': True}",
    "004_sliding_window.py": "messages kept in context: 10",
    "004_snapshots.py": "['remember: blue', 'noted']",
    "custom_state_workflow.py": "Expense of $240.0 approved. | audit: ['classified travel",
    "local_model.py": "[tools] tool result: It is sunny and 21C in",
    "long_summarized_conversation.py": "turn 40: log 80 messages",
    "multi_agent.py": "billing answers the next message: Glad to help. Anything else?",
    "postgres_redis.py": "deleted the example thread: True",
    "serve_demo.py": "'ask me' -> Thanks! You answered: green",
    "streaming.py": "run result: 1 new message(s), 11 streamed chunks",
    "tool_calling_agent.py": "-> ERROR tool 'get_weather' failed: LookupError: no forecast",
}
MARKS = {
    "local_model.py": [pytest.mark.local_model],
    "postgres_redis.py": [pytest.mark.postgres, pytest.mark.redis],
}


def test_every_example_is_checked() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize(
    "name", [pytest.param(name, marks=MARKS.get(name, [])) for name in sorted(EXPECTED)]
)
def test_example_runs(name: str) -> None:
    if name == "local_model.py":
        pytest.importorskip("llama_cpp", reason="llama-cpp-python (extra 'local') is not installed")
    result = subprocess.run(
        [sys.executable, f"examples/{name}"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert EXPECTED[name] in result.stdout, result.stdout
    assert result.stderr == ""  # no warnings, no stray output

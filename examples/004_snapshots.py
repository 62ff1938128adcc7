"""Strands' snapshots and session persistence, in tenxgraph: snapshot and restore a thread.

Run: python examples/004_snapshots.py
"""

import tempfile
from pathlib import Path

from tenxgraph.core.graph import ThreadSnapshot, create_agent
from tenxgraph.core.llm import FunctionModel
from tenxgraph.core.state import Message
from tenxgraph.storage.checkpointer import SqliteCheckpointer

with tempfile.TemporaryDirectory() as directory:
    checkpointer = SqliteCheckpointer(Path(directory) / "threads.sqlite")
    agent = create_agent(FunctionModel(lambda r: "noted"), checkpointer=checkpointer)
    config = {"thread_id": "session"}
    agent.invoke({"messages": [Message.text_message("remember: blue")]}, config)

    snapshot = agent.snapshot(config)  # state + context window, as JSON data
    saved = snapshot.model_dump_json()

    agent.invoke({"messages": [Message.text_message("actually: red")]}, config)
    agent.restore(config, ThreadSnapshot.model_validate_json(saved))
    print([m.text() for m in agent.get_state(config).context])

"""The TypeScript client's message types are generated from ``Message``'s JSON schema.

The generated files are committed (the TypeScript build needs no Python);
these tests regenerate them and fail when the committed ones differ, so the
two languages never drift apart.
"""

from __future__ import annotations

import json
from pathlib import Path

from tenxgraph.client import schema
from tenxgraph.core.state import Message

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "typescript"


def test_the_committed_schema_and_types_are_what_the_generator_writes() -> None:
    stale = [
        str(path.relative_to(PACKAGE))
        for path, text in schema.generated(PACKAGE).items()
        if not path.is_file() or path.read_text(encoding="utf-8") != text
    ]
    assert stale == [], f"run `python -m tenxgraph.client.schema clients/typescript`: {stale}"


def test_the_schema_is_pydantics_and_validates_what_the_server_sends() -> None:
    committed = json.loads((PACKAGE / schema.SCHEMA_FILE).read_text(encoding="utf-8"))
    assert committed == Message.model_json_schema()
    blocks = committed["properties"]["content"]["items"]["discriminator"]["mapping"]
    assert blocks["remote_tool_call"] == "#/$defs/RemoteToolCallBlock"


def test_every_content_block_has_an_interface_with_its_literal_type() -> None:
    types = (PACKAGE / schema.TYPES_FILE).read_text(encoding="utf-8")
    mapping = Message.model_json_schema()["properties"]["content"]["items"]["discriminator"]
    for tag, ref in mapping["mapping"].items():
        name = ref.rsplit("/", 1)[-1]
        assert f"export interface {name} {{\n  type: {json.dumps(tag)};" in types
        assert f"| {name}" in types or f"= {name} |" in types  # in the ContentBlock union
    assert 'role: "user" | "assistant" | "system" | "tool";' in types
    assert "export interface Message {" in types


def test_check_mode_reports_a_stale_file(tmp_path: Path) -> None:
    assert schema.main([str(tmp_path)]) == 0
    assert schema.main([str(tmp_path), "--check"]) == 0
    (tmp_path / schema.TYPES_FILE).write_text("// edited by hand\n", encoding="utf-8")
    assert schema.main([str(tmp_path), "--check"]) == 1

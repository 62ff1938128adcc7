"""``MCPTool``: one tool of an MCP server, as a tenxgraph ``Tool`` with the server's JSON schema."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from tenxgraph.core.graph import Tool
from tenxgraph.core.llm.base import ToolSpec
from tenxgraph.errors import ToolArgumentsError

__all__ = ["MCPTool", "tool_name"]

_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(prefix: str, name: str) -> str:
    """The tenxgraph name of MCP tool ``name``: prefixed, other characters as ``_``, 64 at most."""
    return _NOT_ALLOWED.sub("_", f"{prefix}{name}")[:64] or "_"


def _never_called() -> None:
    """Placeholder function; ``MCPTool`` replaces it with the call to its server."""


class MCPTool(Tool):
    """A tool of an MCP server: the model sees the server's schema; calls go to the server.

    The arguments are checked against the schema (with ``jsonschema``, which
    the ``mcp`` SDK brings) before anything is sent; a schema the checker
    cannot read is left to the server, which checks its own arguments.
    """

    def __init__(
        self,
        name: str,
        mcp_name: str,
        description: str,
        parameters: Mapping[str, Any],
        call: Callable[[str, dict[str, Any]], Awaitable[Any]],
        *,
        server: str,
    ) -> None:
        super().__init__(_never_called, name=name, description=description or name)
        self.mcp_name = mcp_name
        """The tool's name on its server (``name`` is the one the model sees)."""
        self.server = server
        """The name of the ``MCPTools`` it came from."""
        self.parameters = dict(parameters) or {"type": "object", "properties": {}}
        self._validator = _validator(self.parameters)

        async def run(**arguments: Any) -> Any:
            return await call(mcp_name, arguments)

        self.function = run
        self.is_async = True
        self.injected = frozenset()

    def spec(self) -> ToolSpec:
        """What the model is told: the server's description and input schema."""
        return ToolSpec(self.name, self.description, dict(self.parameters))

    def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        """Check the model's arguments against the server's schema."""
        if self._validator is not None:
            problems = [
                f"{'.'.join(str(p) for p in error.absolute_path) or '(arguments)'}: {error.message}"
                for error in self._validator.iter_errors(args)
            ]
            if problems:
                raise ToolArgumentsError(
                    f"invalid arguments for MCP tool {self.name!r}: {'; '.join(problems)}"
                )
        return dict(args)

    def __repr__(self) -> str:
        return f"MCPTool({self.name!r}, server={self.server!r})"


def _validator(schema: dict[str, Any]) -> Any:
    import jsonschema  # type: ignore[import-untyped]  # comes with the mcp SDK; no stubs

    try:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        return cls(schema)
    except Exception:  # a schema the checker cannot read: the server checks the arguments
        return None

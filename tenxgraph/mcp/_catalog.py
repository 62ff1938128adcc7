"""What an MCP server lists besides tools: its resources, resource templates and prompts.

These are tenxgraph's own small models, not the SDK's types, so code that
lists a server's resources or prompts does not depend on the SDK's version.
``MCPTools.list_resources()`` and the others return them; reading a resource
or getting a prompt gives content blocks and messages (``_content``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from tenxgraph.errors import ConfigError

__all__ = ["MCPPrompt", "MCPPromptArgument", "MCPResource", "MCPResourceTemplate"]


class _Listed(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MCPResource(_Listed):
    """A resource an MCP server lists; ``MCPTools.read_resource(uri)`` reads it."""

    uri: str
    """Its address on the server (``file:///...``, ``notes://today``...)."""
    name: str
    """The server's name for it."""
    title: str | None = None
    """A name for people, when the server gives one."""
    description: str | None = None
    """What it holds, in the server's words."""
    mime_type: str | None = None
    """Its MIME type, when the server says."""
    size: int | None = None
    """Its size in bytes, when the server says."""


class MCPResourceTemplate(_Listed):
    """A family of resources addressed by a URI template (RFC 6570), such as ``notes://{day}``.

    Fill the template in and read the URI with ``MCPTools.read_resource``.
    """

    uri_template: str
    """The URI with ``{placeholders}``."""
    name: str
    """The server's name for the family."""
    title: str | None = None
    """A name for people, when the server gives one."""
    description: str | None = None
    """What the resources hold, and what the placeholders mean."""
    mime_type: str | None = None
    """The MIME type of every resource of the family, when the server says."""


class MCPPromptArgument(_Listed):
    """One argument of an MCP prompt (a string, as the protocol has it)."""

    name: str
    """The argument's name."""
    description: str | None = None
    """What to pass, in the server's words."""
    required: bool = False
    """Whether ``get_prompt`` must be given it."""


class MCPPrompt(_Listed):
    """A prompt an MCP server lists; ``MCPTools.get_prompt(name, arguments)`` fills it in."""

    name: str
    """The prompt's name on the server."""
    title: str | None = None
    """A name for people, when the server gives one."""
    description: str | None = None
    """What the prompt is for."""
    arguments: tuple[MCPPromptArgument, ...] = ()
    """The arguments it takes, all strings."""

    def check(self, arguments: Mapping[str, Any]) -> dict[str, str]:
        """``arguments`` as the server is sent them, or ``ConfigError`` naming what is wrong.

        Checked here rather than left to the server: servers answer a
        missing argument with anything from a clear message to an
        "internal error", and some ignore an argument they do not know,
        so a misspelt name would change nothing without saying so.
        """
        for key, value in arguments.items():
            if not isinstance(value, str):
                raise ConfigError(
                    f"MCP prompt {self.name!r}: argument {key!r} must be a string "
                    f"(prompt arguments are text), got {type(value).__name__}"
                )
        known = [argument.name for argument in self.arguments]
        unknown = sorted(set(arguments) - set(known))
        if unknown:
            raise ConfigError(
                f"MCP prompt {self.name!r} has no argument {', '.join(map(repr, unknown))}; "
                f"it takes: {', '.join(known) or 'no arguments'}"
            )
        missing = [a.name for a in self.arguments if a.required and a.name not in arguments]
        if missing:
            raise ConfigError(
                f"MCP prompt {self.name!r} needs the argument {', '.join(map(repr, missing))}"
            )
        return dict(arguments)


def resource_of(item: Any) -> MCPResource:
    """The ``MCPResource`` of an SDK ``Resource``."""
    return MCPResource(
        uri=str(item.uri),
        name=item.name,
        title=item.title,
        description=item.description,
        mime_type=item.mime_type,
        size=item.size,
    )


def template_of(item: Any) -> MCPResourceTemplate:
    """The ``MCPResourceTemplate`` of an SDK ``ResourceTemplate``."""
    return MCPResourceTemplate(
        uri_template=item.uri_template,
        name=item.name,
        title=item.title,
        description=item.description,
        mime_type=item.mime_type,
    )


def prompt_of(item: Any) -> MCPPrompt:
    """The ``MCPPrompt`` of an SDK ``Prompt``."""
    return MCPPrompt(
        name=item.name,
        title=item.title,
        description=item.description,
        arguments=tuple(
            MCPPromptArgument(
                name=argument.name,
                description=argument.description,
                required=bool(argument.required),
            )
            for argument in item.arguments or ()
        ),
    )

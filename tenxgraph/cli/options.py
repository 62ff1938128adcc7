"""What ``tenxgraph chat`` and ``demo`` are asked for, and the checks run before anything loads.

Apart from the rest of ``chat`` so that the command line can check the
options and print its first line before the run loop and the model
adapters are imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tenxgraph.cli.errors import CliError
from tenxgraph.cli.locations import DEFAULT_DB
from tenxgraph.cli.models import LOCAL, TEST_ECHO

__all__ = ["ChatOptions", "ContextChoice", "check_options"]

ContextChoice = Literal["trim", "summary", "none"]


@dataclass(frozen=True, slots=True)
class ChatOptions:
    """What ``tenxgraph chat`` was asked for on the command line."""

    model: str = LOCAL
    provider: str | None = None
    base_url: str | None = None
    thread: str | None = None
    db: str = DEFAULT_DB
    user: str | None = None
    context: ContextChoice = "trim"
    max_messages: int | None = None
    max_tokens: int = 256
    system: str = "You are a helpful assistant. Answer briefly."
    graph: str | None = None
    """``module:graph`` to chat with instead of the built-in agent (its model, tools, pauses)."""


def check_options(options: ChatOptions) -> None:
    """Reject option combinations that cannot work, before anything loads.

    Model names are checked here rather than left to ``resolve_model``,
    whose messages name its keyword arguments (``provider=``) where the
    user typed flags (``--provider``).
    """
    if options.max_messages is not None and options.max_messages < 1:
        raise CliError(f"--max-messages must be at least 1, got {options.max_messages}")
    if options.max_tokens < 1:
        raise CliError(f"--max-tokens must be at least 1, got {options.max_tokens}")
    _check_model(options.model, options.provider, options.base_url)


def _check_model(name: str, provider: str | None, base_url: str | None) -> None:
    if provider is None and base_url is None and name in (LOCAL, TEST_ECHO):
        return  # the default and the testing aid: nothing to resolve, no model layer to load
    from tenxgraph.core.llm.resolve import NAME_FORMS, PROVIDERS, guess_provider

    if provider is not None and provider not in PROVIDERS:
        raise CliError(f"unknown --provider {provider!r}; choose one of {', '.join(PROVIDERS)}")
    if provider == "openai-compatible" and base_url is None:
        raise CliError(
            "--provider openai-compatible needs --base-url (e.g. http://localhost:11434/v1)"
        )
    if provider is None and base_url is None and name != TEST_ECHO and not guess_provider(name):
        raise CliError(
            f"unknown model {name!r}: --model takes {NAME_FORMS}, or {TEST_ECHO}; for another "
            f"model pass --provider ({', '.join(PROVIDERS)}) or --base-url (an OpenAI-compatible "
            "server)"
        )

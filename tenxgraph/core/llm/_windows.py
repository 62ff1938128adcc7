"""Context windows of known model families, for budgets given as a fraction of the window.

The figures are the input windows the providers publish for each family
(tokens a request may hold). A model missing here reports None unless it is
told its window (``model.context_window = 32_000``).
"""

from __future__ import annotations

__all__ = ["known_context_window"]

_WINDOWS: tuple[tuple[str, int], ...] = (  # longest prefixes first
    ("gpt-4o-mini", 128_000),
    ("gpt-4o", 128_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4-turbo", 128_000),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("gpt-5", 400_000),
    ("o4-mini", 200_000),
    ("o3", 200_000),
    ("o1", 200_000),
    ("claude-", 200_000),
    ("gemini-1.5-pro", 2_097_152),
    ("gemini-1.5-flash", 1_048_576),
    ("gemini-2", 1_048_576),
    ("gemini-3", 1_048_576),
)


def known_context_window(model: str) -> int | None:
    """The published window of ``model``'s family, or None when the family is unknown."""
    name = model.rsplit("/", 1)[-1].lower()  # "models/gemini-2.5-flash", "openai/gpt-4o"
    for prefix, window in _WINDOWS:
        if name.startswith(prefix):
            return window
    return None

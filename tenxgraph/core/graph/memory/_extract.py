"""Extraction: a model turns a finished turn into facts, merged with the user's memories.

``aextract_memories(model, store, messages, user_id=...)`` sends the last
turn (from the latest user message on) and the user's memories most
relevant to it, and asks for the durable facts as JSON (structured output:
``{"facts": [{"text": ..., "key": ...}]}``). Each fact then updates rather
than duplicates:

- a fact with a ``key`` (the model names one it was shown, or a new short
  name) is put under that key, replacing the old value;
- a fact without one replaces the shown memory whose words it mostly shares
  (Jaccard similarity of their word sets, stop words left out, >=
  ``similar``; the candidates are the memories shown to the model and the
  store's best matches for the fact itself); else it is new,
  keyed by the hash of its words (``fact_key``), so a repeat is one memory.

Decision: failures change nothing. The model's answer is checked whole
(valid JSON of that shape, every key usable, at most ``max_facts`` facts,
every value storable) before the first write; a model error, a malformed
answer or a storage error is logged and returned in ``ExtractionResult``,
never raised into the caller's turn. ``MemoryExtraction`` runs it as an
``after_agent`` middleware hook, once per invoke.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from tenxgraph.core.graph._middleware import AgentMiddleware
from tenxgraph.core.graph.memory._tools import DEFAULT_NAMESPACE, fact_key, user_of
from tenxgraph.core.llm.base import ChatModel, ModelRequest
from tenxgraph.core.state.ids import DEFAULT_USER
from tenxgraph.core.state.message import Message
from tenxgraph.errors import ModelError, TenxGraphError
from tenxgraph.storage.longterm._checks import STOP_WORDS, check_key, encode_value
from tenxgraph.storage.longterm.base import MemoryItem, MemoryStore

__all__ = ["ExtractionResult", "MemoryExtraction", "aextract_memories"]

logger = logging.getLogger("tenxgraph.memory")

PROMPT = """You keep long-term memories about a user. From the conversation turn below, list the \
durable facts about the user worth remembering in later conversations (preferences, names, \
plans, circumstances); skip small talk and anything only true right now. Each fact is one short \
self-contained sentence. When a fact updates or repeats a known memory, give that memory's key; \
otherwise give a new short snake_case key or none. Answer with JSON only: \
{"facts": [{"text": "...", "key": "..."}]} (an empty list when there is nothing to remember)."""

_WORDS = re.compile(r"\w+")


class _Fact(BaseModel):
    text: str = Field(min_length=1, max_length=1_000)
    key: str | None = None


class _Answer(BaseModel):
    facts: list[_Fact]


@dataclass
class ExtractionResult:
    """What one extraction did."""

    saved: list[MemoryItem] = field(default_factory=list)
    """The items written (new or updated), in the model's order."""
    updated: int = 0
    """How many of them replaced an existing memory."""
    error: str | None = None
    """Why nothing was written, when something failed."""


async def aextract_memories(
    model: ChatModel,
    store: MemoryStore,
    messages: Sequence[Message],
    *,
    user_id: str = DEFAULT_USER,
    namespace: Sequence[str] = DEFAULT_NAMESPACE,
    max_facts: int = 10,
    similar: float = 0.5,
) -> ExtractionResult:
    """Extract the last turn's facts into ``store`` for ``user_id``; never raises on failure."""
    where = tuple(namespace)
    turn = _last_turn(messages)
    if not turn:
        return ExtractionResult()
    try:
        known = await store.asearch(
            where, query=_text(turn, user_only=True)[-2_000:], limit=10, user_id=user_id
        )
        answer = await model.complete(_request(turn, known))
        facts = _checked(answer.text(), max_facts)
        plan = []
        for fact in facts:
            near = (
                []
                if fact.key
                else await store.asearch(where, query=fact.text, limit=3, user_id=user_id)
            )
            plan.append((_key_for(fact, [*known, *near], similar), fact.text))
        result = ExtractionResult()
        for key, text in plan:
            item = await store.aput(where, key, {"text": text}, user_id=user_id)
            result.saved.append(item)
            result.updated += item.created_at < item.updated_at
        return result
    except (TenxGraphError, ValidationError, ValueError) as exc:
        logger.warning("memory extraction changed nothing: %s", exc)
        return ExtractionResult(error=f"{type(exc).__name__}: {exc}")


def _last_turn(messages: Sequence[Message]) -> list[Message]:
    starts = [index for index, message in enumerate(messages) if message.role == "user"]
    return list(messages[starts[-1] :]) if starts else []


def _text(turn: Sequence[Message], *, user_only: bool = False) -> str:
    lines = [
        f"{message.role}: {message.text()}"
        for message in turn
        if message.role in ("user", "assistant") and message.text().strip()
        if not user_only or message.role == "user"
    ]
    return "\n".join(lines)


def _request(turn: Sequence[Message], known: Sequence[MemoryItem]) -> ModelRequest:
    memories = "\n".join(f"- {item.key}: {item.value.get('text', item.value)}" for item in known)
    body = f"Known memories:\n{memories or '(none)'}\n\nConversation turn:\n{_text(turn)}"
    return ModelRequest(
        messages=[
            Message.text_message(PROMPT, role="system"),
            Message.text_message(body),
        ],
        output_schema=_Answer.model_json_schema(),
        output_schema_name="memories",
    )


def _checked(text: str, max_facts: int) -> list[_Fact]:
    """The model's facts, all checked before anything is written."""
    body = text.strip().removeprefix("```json").removeprefix("```").removesuffix("```")
    facts = _Answer.model_validate_json(body).facts
    if len(facts) > max_facts:
        raise ModelError(f"the model gave {len(facts)} facts, over max_facts={max_facts}")
    for fact in facts:
        if fact.key is not None:
            check_key(fact.key)
        encode_value({"text": fact.text})
    return facts


def _key_for(fact: _Fact, known: Sequence[MemoryItem], similar: float) -> str:
    if fact.key:
        return fact.key
    words = _word_set(fact.text)
    for item in known:
        theirs = _word_set(str(item.value.get("text", "")))
        if words and theirs and len(words & theirs) / len(words | theirs) >= similar:
            return item.key
    return fact_key(fact.text)


def _word_set(text: str) -> set[str]:
    return {word for word in _WORDS.findall(text.lower()) if word not in STOP_WORDS}


class MemoryExtraction(AgentMiddleware):
    """After each invoke, extract the turn's facts into the store (see ``aextract_memories``)."""

    def __init__(
        self,
        model: ChatModel,
        store: MemoryStore,
        *,
        namespace: Sequence[str] = DEFAULT_NAMESPACE,
        max_facts: int = 10,
    ) -> None:
        """Ask ``model`` (often a small, cheap one) for facts; keep them in ``store``."""
        self.model = model
        self.store = store
        self.namespace = tuple(namespace)
        self.max_facts = max_facts

    async def after_agent(self, state: Any, config: dict[str, Any]) -> None:  # type: ignore[override]
        """Extract from the turn that just ended; a failure is logged, the turn stands."""
        await aextract_memories(
            self.model,
            self.store,
            state.context,
            user_id=user_of(config),
            namespace=self.namespace,
            max_facts=self.max_facts,
        )

"""Messages <-> Gemini ``generateContent`` contents (plain dicts in google-genai's field names).

Requests: system messages become ``system_instruction``; roles map to
``user``/``model``; tool results become ``function_response`` parts of a user
turn, named after the call they answer (Gemini matches results by name).
Media goes inline (bytes) or by ``file_data`` (a Files API URI or a URL).
Thought signatures go back only to Gemini, on the part they came with.

Responses: text, thoughts, function calls and inline media become content
blocks. A function call without an id gets one (``call_`` + random hex),
kept in ``metadata["provider_data"]`` as generated so it is not sent back to
Gemini as if Gemini had chosen it. Citations and grounding sources become an
``AnnotationBlock`` whose spans index the answer's text.
"""

from __future__ import annotations

import base64
import itertools
import re
from typing import Any

from tenxgraph.core.llm._wire import (
    output_blocks,
    output_text,
    provider_blocks,
    unsupported,
)
from tenxgraph.core.state.message import Message, TokenUsages, new_message_id
from tenxgraph.core.state.message_block import (
    AnnotationBlock,
    AnnotationRef,
    AudioBlock,
    ContentBlock,
    DataBlock,
    DocumentBlock,
    ErrorBlock,
    ImageBlock,
    MediaRef,
    ReasoningBlock,
    RemoteToolCallBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    VideoBlock,
)
from tenxgraph.core.state.tool_arguments import tool_call

__all__ = ["PROVIDER", "from_wire_parts", "merge_part", "to_wire", "usage_from_wire"]

PROVIDER = "google"

Wire = dict[str, Any]


def to_wire(messages: list[Message]) -> tuple[list[Wire], list[Wire]]:
    """Return ``(system_parts, contents)`` for ``messages``."""
    calls = _calls_by_id(messages)
    system: list[Wire] = []
    contents: list[Wire] = []
    for index, message in enumerate(messages):
        where = f"message {index}"
        if message.role == "system":
            system.extend(_user_part(b, where) for b in message.content if _sent(b))
            continue
        if message.role == "assistant":
            role, parts = "model", _model_parts(message, where)
        elif message.role == "tool":
            role, parts = "user", _result_parts(message, calls, where)
        else:
            role = "user"
            parts = [
                _user_part(b, f"{where} block {i}")
                for i, b in enumerate(message.content)
                if _sent(b)
            ]
        if not parts:
            continue
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})
    return system, contents


def _sent(block: ContentBlock) -> bool:
    # Annotation blocks describe an earlier answer; they are not model input.
    return not isinstance(block, AnnotationBlock)


def _calls_by_id(messages: list[Message]) -> dict[str, tuple[str, bool]]:
    """Each call id -> (function name, whether the id is Gemini's own and may be sent)."""
    calls: dict[str, tuple[str, bool]] = {}
    for message in messages:
        if message.role != "assistant":
            continue
        opaque = provider_blocks(message, PROVIDER)
        for index, block in enumerate(message.content):
            if isinstance(block, ToolCallBlock | RemoteToolCallBlock):
                generated = bool(opaque.get(index, {}).get("generated_id"))
                calls[block.id] = (block.name, not generated)
    return calls


def _model_parts(message: Message, where: str) -> list[Wire]:
    opaque = provider_blocks(message, PROVIDER)
    parts: list[Wire] = []
    for index, block in enumerate(message.content):
        data = opaque.get(index, {})
        part: Wire
        if isinstance(block, TextBlock):
            part = {"text": block.text}
        elif isinstance(block, ReasoningBlock):
            if not data.get("thought"):
                continue  # another provider's reasoning: kept in history, not sent
            part = {"text": block.summary, "thought": True}
        elif isinstance(block, ToolCallBlock | RemoteToolCallBlock):
            call: Wire = {"name": block.name, "args": block.args}
            if not data.get("generated_id"):
                call["id"] = block.id
            part = {"function_call": call}
        elif isinstance(block, ErrorBlock):
            part = {"text": f"[error] {block.message}"}
        elif isinstance(block, AnnotationBlock):
            continue
        else:
            part = _user_part(block, f"{where} block {index}")
        if "thought_signature" in data:
            part["thought_signature"] = base64.b64decode(data["thought_signature"])
        parts.append(part)
    return parts


def _result_parts(message: Message, calls: dict[str, tuple[str, bool]], where: str) -> list[Wire]:
    parts: list[Wire] = []
    for index, block in enumerate(message.content):
        if not isinstance(block, ToolResultBlock):
            parts.append(_user_part(block, f"{where} block {index}"))
            continue
        name, send_id = calls.get(block.call_id, ("", False))
        response: Wire = {"name": name, "response": {}}
        if send_id:
            response["id"] = block.call_id
        texts, media = _split_output(block.output, f"{where} block {index}")
        key = "error" if block.is_error or block.status == "failed" else "output"
        response["response"] = {key: texts}
        if media:
            response["parts"] = media
        parts.append({"function_response": response})
    return parts


def _split_output(output: Any, where: str) -> tuple[str, list[Wire]]:
    """A tool output as response text plus media parts (Gemini's multimodal results)."""
    if isinstance(output, MediaRef):
        return "", [_media(output, where)]
    blocks = output_blocks(output)
    if blocks is None:
        return output_text(output), []
    texts = [b.text for b in blocks if isinstance(b, TextBlock)]
    media = [
        _media(b.media, where)
        for b in blocks
        if isinstance(b, ImageBlock | AudioBlock | VideoBlock | DocumentBlock)
    ]
    return "".join(texts), media


def _user_part(block: ContentBlock, where: str) -> Wire:
    if isinstance(block, TextBlock):
        return {"text": block.text}
    if isinstance(block, ImageBlock | AudioBlock | VideoBlock | DocumentBlock):
        return _media(block.media, where)
    if isinstance(block, DataBlock):
        media = block.media or MediaRef(kind="data", data_base64=block.data_base64 or "")
        return _media(media.model_copy(update={"mime_type": block.mime_type}), where)
    if isinstance(block, ErrorBlock):
        return {"text": f"[error] {block.message}"}
    raise unsupported(PROVIDER, f"{block.type} content outside an assistant message", where)


def _media(media: MediaRef, where: str) -> Wire:
    if media.kind == "data":
        if not media.mime_type:
            raise unsupported(PROVIDER, "inline media without a mime_type", where)
        blob: Wire = {
            "mime_type": media.mime_type,
            "data": base64.b64decode(media.data_base64 or ""),
        }
        return {"inline_data": blob}
    uri = media.url if media.kind == "url" else media.file_id
    file_data: Wire = {"file_uri": uri}
    if media.mime_type:
        file_data["mime_type"] = media.mime_type
    return {"file_data": file_data}


def merge_part(parts: list[Wire], part: Wire) -> None:
    """Add one streamed part to ``parts``.

    Text continues the previous text part of the same kind; a function call
    streamed in pieces (Vertex AI's ``partial_args``) continues its call.
    """
    last = parts[-1] if parts else None
    if last is None:
        pass
    elif "function_call" in part and (last.get("function_call") or {}).get("will_continue"):
        _continue_call(last["function_call"], part["function_call"])
        _keep_signature(last, part)
        return
    elif (
        "text" in part
        and "text" in last
        and bool(part.get("thought")) == bool(last.get("thought"))
        and "thought_signature" not in last
    ):
        last["text"] += part["text"]
        _keep_signature(last, part)
        return
    part = dict(part)
    if "function_call" in part:
        piece, part["function_call"] = part["function_call"], {}
        _continue_call(part["function_call"], piece)
    parts.append(part)


def _keep_signature(target: Wire, part: Wire) -> None:
    if "thought_signature" in part:
        target["thought_signature"] = part["thought_signature"]


def _continue_call(call: Wire, piece: Wire) -> None:
    """Fold one piece of a streamed function call into ``call`` (its args assembled)."""
    for key in ("id", "name"):
        if piece.get(key):
            call[key] = piece[key]
    args = call.setdefault("args", {})
    args.update(piece.get("args") or {})
    for partial in piece.get("partial_args") or []:
        _set_partial(args, partial)
    if piece.get("will_continue"):
        call["will_continue"] = True
    else:
        call.pop("will_continue", None)


def _set_partial(args: Wire, partial: Wire) -> None:
    """Set the value a ``partial_arg`` carries at its JSON path; string pieces concatenate."""
    path = str(partial.get("json_path") or "$")
    steps: list[str | int] = [
        int(index) if index else key
        for key, index in re.findall(r"\.([^.\[\]]+)|\[(\d+)\]", path.removeprefix("$"))
    ]
    if not steps:
        return
    if "string_value" in partial:
        value: Any = partial["string_value"]
    elif "number_value" in partial:
        value = partial["number_value"]
    elif "bool_value" in partial:
        value = partial["bool_value"]
    else:
        value = None
    container: Any = args
    for step, following in itertools.pairwise(steps):
        container = _slot(container, step, [] if isinstance(following, int) else {})
    current = _slot(container, steps[-1], None)
    if isinstance(value, str) and isinstance(current, str):
        value = current + value
    container[steps[-1]] = value


def _slot(container: Any, step: str | int, default: Any) -> Any:
    """``container[step]``, set to ``default`` first when it is missing."""
    if isinstance(step, int):
        container.extend([None] * (step + 1 - len(container)))
        if container[step] is None:
            container[step] = default
    elif container.get(step) is None:
        container[step] = default
    return container[step]


def from_wire_parts(
    parts: list[Wire], candidate: Wire, refused: dict[str, Any]
) -> tuple[list[ContentBlock], dict[int, dict[str, Any]]]:
    """Return our blocks for a candidate's merged parts, and the opaque data per block.

    Calls whose arguments are refused are recorded in ``refused`` (see
    ``tool_call``); a call still ``will_continue`` when the stream ended was cut off.
    """
    blocks: list[ContentBlock] = []
    opaque: dict[int, dict[str, Any]] = {}
    for part in parts:
        data: dict[str, Any] = {}
        if part.get("thought_signature"):
            data["thought_signature"] = part["thought_signature"]
        block: ContentBlock | None = None
        if "function_call" in part:
            call = part["function_call"]
            call_id = call.get("id")
            if not call_id:
                call_id = f"call_{new_message_id()[:24]}"
                data["generated_id"] = True
            complete = not call.get("will_continue")
            block = tool_call(call_id, call["name"], call.get("args"), refused, complete=complete)
        elif "text" in part and part.get("thought"):
            data["thought"] = True  # marks Gemini's own thoughts, which may go back to Gemini
            block = ReasoningBlock(summary=part["text"])
        elif "text" in part:
            block = TextBlock(text=part["text"])
        elif "inline_data" in part:
            blob = part["inline_data"]
            mime = blob.get("mime_type") or "application/octet-stream"
            media = MediaRef(kind="data", data_base64=blob.get("data") or "", mime_type=mime)
            block = (
                ImageBlock(media=media)
                if mime.startswith("image/")
                else DataBlock(mime_type=mime, media=media)
            )
        # Code execution parts stay in ``raw``: Gemini ran that code itself.
        if block is None:
            continue
        if data:
            opaque[len(blocks)] = data
        blocks.append(block)
    annotation = _annotations(candidate)
    if annotation is not None:
        blocks.append(annotation)
    return blocks, opaque


def _annotations(candidate: Wire) -> AnnotationBlock | None:
    refs: list[AnnotationRef] = []
    spans: list[tuple[int, int]] = []
    for citation in (candidate.get("citation_metadata") or {}).get("citations") or []:
        refs.append(AnnotationRef(url=citation.get("uri"), title=citation.get("title")))
        spans.append((citation.get("start_index") or 0, citation.get("end_index") or 0))
    grounding = candidate.get("grounding_metadata") or {}
    chunks = grounding.get("grounding_chunks") or []
    for support in grounding.get("grounding_supports") or []:
        segment = support.get("segment") or {}
        for chunk_index in support.get("grounding_chunk_indices") or []:
            web = (chunks[chunk_index] if chunk_index < len(chunks) else {}).get("web") or {}
            refs.append(AnnotationRef(url=web.get("uri"), title=web.get("title")))
            spans.append((segment.get("start_index") or 0, segment.get("end_index") or 0))
    if not refs:
        return None
    return AnnotationBlock(kind="citation", refs=refs, spans=spans)


def usage_from_wire(usage: Wire) -> TokenUsages:
    """Gemini usage; thoughts count as completion tokens and as reasoning tokens."""
    prompt = (usage.get("prompt_token_count") or 0) + (
        usage.get("tool_use_prompt_token_count") or 0
    )
    thoughts = usage.get("thoughts_token_count") or 0
    completion = (usage.get("candidates_token_count") or 0) + thoughts
    return TokenUsages(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=usage.get("total_token_count") or prompt + completion,
        reasoning_tokens=thoughts,
        cache_read_input_tokens=usage.get("cached_content_token_count") or 0,
    )

"""Property tests of trim_messages and filter_messages on random conversations with tool traffic.

Whatever the options: the output keeps the input's order, holds the input's
own messages (or copies that only lost tool traffic / content at the edge),
never holds a tool result without its call nor a call separated from its
results, and meets the budget whenever that is possible.
"""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tenxgraph.core.state import (
    CharEstimateCounter,
    Message,
    ToolCallBlock,
    ToolResultBlock,
    filter_messages,
    pairing_violations,
    trim_messages,
)

from .convo import assistant, calls, results, system, user

ROLES = ["user", "assistant", "system", "tool", "human", "ai"]


@st.composite
def conversations(draw: st.DrawFn) -> tuple[list[Message], bool]:
    """Conversations with parallel and chained tool calls (up to a long single turn),
    results split or grouped, system messages anywhere, orphan results (when the flag
    says so) and a pending call at the end. Returns (messages, has_orphans)."""
    ids = itertools.count()
    messages: list[Message] = []
    orphans = False
    kinds = ["user", "assistant", "system", "tools", "tools", "long_turn", "orphan"]
    for kind in draw(st.lists(st.sampled_from(kinds), max_size=12)):
        if kind == "user":
            messages.append(user("u" * draw(st.integers(0, 60))))
        elif kind == "assistant":
            messages.append(assistant("a" * draw(st.integers(0, 60))))
        elif kind == "system":
            messages.append(system("s" * draw(st.integers(0, 40))))
        elif kind == "orphan":
            messages.append(results(f"nobody{next(ids)}"))
            orphans = True
        else:
            rounds = draw(st.integers(1, 40)) if kind == "long_turn" else 1
            if kind == "long_turn":
                messages.append(user("research"))
            for _ in range(rounds):
                call_ids = [f"c{next(ids)}" for _ in range(draw(st.integers(1, 3)))]
                messages.append(calls(*call_ids, text=draw(st.sampled_from([None, "checking"]))))
                order = draw(st.permutations(call_ids))
                size = draw(st.integers(0, 120))
                if draw(st.booleans()):
                    messages.extend(results(i, output="r" * size) for i in order)
                else:
                    messages.append(results(*order, output="r" * size))
    if draw(st.booleans()):
        messages.append(calls("pending"))
    return messages, orphans


def role_option(draw: st.DrawFn) -> str | list[str] | None:
    return draw(st.none() | st.sampled_from(ROLES) | st.lists(st.sampled_from(ROLES), max_size=2))


def check_pairing(before: list[Message], after: list[Message], had_orphans: bool) -> None:
    problems = pairing_violations(after, allow_pending_tail=True)
    assert not [p for p in problems if "without its call" in p.problem]  # no orphan result
    if not had_orphans:  # a well-paired input gives a well-paired output
        assert not problems
    pending = [m for m in after if any(c.id == "pending" for c in m.tool_calls())]
    assert not pending or after[-1] is before[-1]  # a pending call stays last


def is_orphan(message: Message) -> bool:
    """A result the generator made to answer no call (``conversations``' "orphan")."""
    return message.role == "tool" and all(
        block.call_id.startswith("nobody") for block in message.tool_results()
    )


def check_subsequence(before: list[Message], after: list[Message]) -> None:
    position = {m.message_id: i for i, m in enumerate(before)}
    kept = [position[m.message_id] for m in after]
    assert kept == sorted(kept) and len(set(kept)) == len(kept)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), convo=conversations())
def test_trim_messages_properties(data: st.DataObject, convo: tuple[list[Message], bool]) -> None:
    messages, orphans = convo
    last = data.draw(st.booleans(), label="last")
    by_tokens = data.draw(st.booleans(), label="by_tokens")
    limit = data.draw(st.integers(0, 300) if by_tokens else st.integers(0, 20), label="limit")
    options: dict[str, object] = {"strategy": "last" if last else "first"}
    options["max_tokens" if by_tokens else "max_messages"] = limit
    if last:
        options["include_system"] = data.draw(st.booleans(), label="include_system")
        start_on = data.draw(st.none() | st.sampled_from(["user", "assistant", "system"]))
        options["start_on"] = start_on
    end_on = data.draw(st.none() | st.sampled_from(ROLES), label="end_on")
    options["end_on"] = end_on
    partial = by_tokens and data.draw(st.booleans(), label="allow_partial")
    options["allow_partial"] = partial
    if partial:  # lines by default, or words, or a splitter that finds nothing
        options["text_splitter"] = data.draw(
            st.sampled_from([None, lambda text: text.split(" "), lambda text: []])
        )
    dumps = [m.model_dump() for m in messages]

    after = trim_messages(messages, **options)  # type: ignore[arg-type]

    assert [m.model_dump() for m in messages] == dumps  # nothing edited in place
    check_subsequence(messages, after)
    check_pairing(messages, after, orphans)
    originals = {m.message_id: m for m in messages}
    copies = [m for m in after if m is not originals[m.message_id]]
    for copy in copies:  # a copy is a partial message or a result list without orphans
        original = originals[copy.message_id]
        assert (partial and copy.role != "tool") or (orphans and copy.role == "tool")
        assert len(copy.content) <= len(original.content)
    assert len([c for c in copies if c.role != "tool"]) <= 1  # at most one partial message
    cost = CharEstimateCounter().count if by_tokens else len
    ends = {"human": "user", "ai": "assistant"}.get(end_on or "", end_on)
    # orphan results are dropped first (never returned), so end_on cannot end on one
    last_end = max(
        (i for i, m in enumerate(messages) if m.role == ends and not is_orphan(m)), default=-1
    )
    # include_system keeps the system messages of what end_on leaves (end_on applies first)
    systems = [
        m for i, m in enumerate(messages) if m.role == "system" and (not end_on or i <= last_end)
    ]
    if options.get("include_system"):
        assert all(m in after for m in systems)
        if cost(systems) > limit:
            assert after == systems  # the only case the budget cannot be met
            return
    assert cost(after) <= limit
    rest = [m for m in after if not (options.get("include_system") and m.role == "system")]
    if rest and options.get("start_on"):
        assert rest[0].role == options["start_on"]
    tail = rest if options.get("include_system") else after
    if tail and end_on and not (options.get("include_system") and ends == "system"):
        lead = next(m for m in reversed(tail) if m.role != "tool")
        assert tail[-1].role == ends or lead.role == ends


@settings(max_examples=60, deadline=None)
@given(convo=conversations(), last=st.booleans())
def test_trim_keeps_a_contiguous_run_of_whole_units(
    convo: tuple[list[Message], bool], last: bool
) -> None:
    messages, orphans = convo
    clean = filter_messages(messages)  # only drops orphan results
    assert orphans or all(a is b for a, b in zip(clean, messages, strict=True))
    for limit in (0, 1, 3, 7, len(clean)):
        after = trim_messages(messages, max_messages=limit, strategy="last" if last else "first")
        assert len(after) <= limit
        expected = clean[len(clean) - len(after) :] if last else clean[: len(after)]
        assert [m.message_id for m in after] == [m.message_id for m in expected]
    assert len(trim_messages(messages, max_messages=len(clean))) == len(clean)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), convo=conversations())
def test_filter_messages_properties(data: st.DataObject, convo: tuple[list[Message], bool]) -> None:
    messages, orphans = convo
    all_ids = [m.message_id for m in messages]
    include_roles = role_option(data.draw)
    exclude_roles = role_option(data.draw)
    include_ids = data.draw(
        st.none() | st.lists(st.sampled_from(all_ids)) if all_ids else st.none()
    )
    exclude_ids = data.draw(
        st.none() | st.lists(st.sampled_from(all_ids)) if all_ids else st.none()
    )
    call_ids = [c.id for m in messages for c in m.tool_calls()]
    selection = st.booleans() | st.lists(st.sampled_from([*call_ids, "lookup"]))
    include_calls = data.draw(selection, label="include_tool_calls")
    exclude_calls = data.draw(st.none() | selection, label="exclude_tool_calls")

    after = filter_messages(
        messages,
        include_roles=include_roles,
        exclude_roles=exclude_roles,
        include_ids=include_ids,
        exclude_ids=exclude_ids,
        include_tool_calls=include_calls,
        exclude_tool_calls=exclude_calls,
    )

    check_subsequence(messages, after)
    check_pairing(messages, after, orphans)
    aliases = {"human": "user", "ai": "assistant"}

    def roles(option: str | list[str] | None) -> set[str]:
        values = [option] if isinstance(option, str) else option or []
        return {aliases.get(v, v) for v in values}

    originals = {m.message_id: m for m in messages}
    for message in after:
        assert message.role not in roles(exclude_roles)
        assert message.message_id not in (exclude_ids or [])
        if include_roles is not None or include_ids is not None:
            assert message.role in roles(include_roles) or message.message_id in (include_ids or [])
        original = originals[message.message_id]
        if message is not original:  # a copy only lost tool calls or tool results
            lost = [b for b in original.content if b not in message.content]
            assert lost and all(isinstance(b, ToolCallBlock | ToolResultBlock) for b in lost)
        for call in message.tool_calls():
            if include_calls is not True:
                assert include_calls and (call.id in include_calls or call.name in include_calls)
            if exclude_calls is not None and exclude_calls is not False:
                assert exclude_calls is not True
                assert call.id not in exclude_calls and call.name not in exclude_calls
    # a message with no tool traffic that passes the role and id filters is kept
    for message in messages:
        if message.role in ("user", "system") or (
            message.role == "assistant" and not message.tool_calls()
        ):
            passes = message.role not in roles(exclude_roles) and message.message_id not in (
                exclude_ids or []
            )
            if include_roles is not None or include_ids is not None:
                passes = passes and (
                    message.role in roles(include_roles)
                    or message.message_id in (include_ids or [])
                )
            assert (message in after) == passes

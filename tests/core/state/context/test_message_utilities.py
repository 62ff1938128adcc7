"""trim_messages and filter_messages, case by case (issue 18, item 5)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from tenxgraph.core.state import (
    ImageBlock,
    MediaRef,
    Message,
    TextBlock,
    filter_messages,
    is_paired,
    trim_messages,
)
from tenxgraph.errors import ConfigError, StateError

from .convo import assistant, calls, ids, results, roles, system, tool_turn, user


class WordCounter:
    """One token per word, plus one per message: easy to reason about in a test."""

    def count(self, messages: Sequence[Message]) -> int:
        return sum(len(m.text().split()) + 1 for m in messages)


def texts(messages: Sequence[Message]) -> list[str]:
    return [m.text() or m.role for m in messages]


CHAT = [
    system("be nice"),
    user("what is two plus two"),
    assistant("four"),
    user("and times three"),
    assistant("twelve"),
    user("thanks a lot"),
]


def test_last_keeps_the_most_recent_messages_that_fit() -> None:
    kept = trim_messages(CHAT, max_tokens=8, token_counter=WordCounter())
    assert texts(kept) == ["twelve", "thanks a lot"]  # 2 + 4 = 6; "and times three" would be 10
    assert all(a is b for a, b in zip(kept, CHAT[-2:], strict=True))


def test_include_system_and_start_on_give_a_valid_chat() -> None:
    kept = trim_messages(
        CHAT,
        max_tokens=14,
        token_counter=WordCounter(),
        include_system=True,
        start_on="human",  # LangChain's name for the user role
    )
    # system (3) leaves 11: "thanks a lot" (4), "twelve" (2), "and times three" (4) fit
    assert texts(kept) == ["be nice", "and times three", "twelve", "thanks a lot"]
    kept = trim_messages(CHAT, max_tokens=9, token_counter=WordCounter(), include_system=True)
    assert texts(kept) == ["be nice", "twelve", "thanks a lot"]
    kept = trim_messages(
        CHAT, max_tokens=9, token_counter=WordCounter(), include_system=True, start_on="user"
    )
    assert texts(kept) == ["be nice", "thanks a lot"]


def test_system_messages_alone_over_the_budget_are_all_that_is_kept() -> None:
    kept = trim_messages(CHAT, max_tokens=2, token_counter=WordCounter(), include_system=True)
    assert texts(kept) == ["be nice"]


def test_first_keeps_the_earliest_messages_and_end_on_applies_after() -> None:
    kept = trim_messages(CHAT, max_messages=4, strategy="first")
    assert texts(kept) == ["be nice", "what is two plus two", "four", "and times three"]
    kept = trim_messages(CHAT, max_messages=4, strategy="first", end_on="ai")
    assert texts(kept) == ["be nice", "what is two plus two", "four"]


def test_end_on_with_last_applies_before_the_budget() -> None:
    kept = trim_messages(CHAT, max_messages=2, end_on="assistant")
    assert texts(kept) == ["and times three", "twelve"]
    assert trim_messages(CHAT, max_messages=5, end_on="tool") == []  # no tool message at all


def test_a_tool_call_and_its_results_are_kept_or_dropped_together() -> None:
    conversation = [
        user("compare"),
        calls("a", "b", text="checking both"),
        results("a", output="A is 3"),
        results("b", output="B is 5"),
        assistant("B wins"),
    ]
    for limit in range(6):
        kept = trim_messages(conversation, max_messages=limit)
        assert is_paired(kept)
        assert len(kept) in {0, 1, 4, 5}  # never inside the call group
        first = trim_messages(conversation, max_messages=limit, strategy="first")
        assert is_paired(first) and len(first) in {0, 1, 4, 5}
    # end_on the call's role brings its results along
    kept = trim_messages(conversation[:4], max_messages=9, end_on="assistant")
    assert ids(kept) == ids(conversation[:4])


def test_orphan_results_are_never_returned() -> None:
    conversation = [user("hi"), results("ghost", output="?"), *tool_turn(1)]
    kept = trim_messages(conversation, max_messages=10)
    assert ids(kept) == ids([conversation[0], *conversation[2:]])
    mixed = Message.tool_message([*results("t9").content, *results("ghost").content])
    kept = trim_messages([*tool_turn(9)[:2], mixed], max_messages=10)
    assert [b.call_id for b in kept[-1].tool_results()] == ["t9"]
    assert kept[-1].message_id == mixed.message_id


def test_allow_partial_keeps_the_last_blocks_or_lines() -> None:
    lines = "\n".join(f"line {n}" for n in range(10))
    conversation = [user(lines), assistant("ok")]
    kept = trim_messages(
        conversation, max_tokens=9, token_counter=WordCounter(), allow_partial=True
    )
    # "ok" costs 2; 7 left: three lines of two words plus the message's 1
    assert texts(kept) == ["line 7\nline 8\nline 9", "ok"]
    assert kept[0].message_id == conversation[0].message_id
    first = trim_messages(
        conversation,
        max_tokens=5,
        token_counter=WordCounter(),
        allow_partial=True,
        strategy="first",
    )
    assert texts(first) == ["line 0\nline 1\n"]
    image = ImageBlock(media=MediaRef(kind="url", url="https://example.com/a.png"))
    blocks = Message(role="user", content=[TextBlock(text="look at"), image, TextBlock(text="x y")])
    kept = trim_messages([blocks], max_tokens=3, token_counter=WordCounter(), allow_partial=True)
    assert kept[0].content == [image, TextBlock(text="x y")]  # the last blocks that fit


def test_allow_partial_never_splits_tool_traffic() -> None:
    conversation = [user("q"), calls("a", text="word " * 50), results("a", output="r " * 50)]
    kept = trim_messages(
        conversation, max_tokens=30, token_counter=WordCounter(), allow_partial=True
    )
    assert kept == []


def test_message_like_input_is_accepted() -> None:
    kept = trim_messages([("system", "rules"), ("human", "hi"), ("ai", "hello")], max_messages=1)
    assert roles(kept) == ["assistant"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, "exactly one of max_tokens and max_messages"),
        ({"max_tokens": 5, "max_messages": 5}, "exactly one of max_tokens and max_messages"),
        ({"max_tokens": -1}, "max_tokens"),
        ({"max_messages": True}, "max_messages"),
        ({"max_messages": 3, "strategy": "middle"}, "strategy"),
        ({"max_messages": 3, "strategy": "first", "include_system": True}, "include_system"),
        ({"max_messages": 3, "strategy": "first", "start_on": "user"}, "start_on"),
        ({"max_messages": 3, "start_on": "tool"}, "start_on"),
        ({"max_messages": 3, "start_on": "robot"}, "start_on"),
        ({"max_messages": 3, "end_on": ["user", 3]}, "end_on"),
        ({"max_messages": 3, "token_counter": WordCounter()}, "token_counter"),
        ({"max_tokens": 3, "token_counter": len}, "token_counter"),
        ({"max_messages": 3, "allow_partial": True}, "allow_partial"),
    ],
)
def test_bad_trim_options_raise_config_errors_naming_them(
    kwargs: dict[str, object], match: str
) -> None:
    with pytest.raises(ConfigError, match=f"trim_messages: .*{match}"):
        trim_messages(CHAT, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [CHAT[0], "hello", 42, [CHAT[0], 42]])
def test_bad_messages_raise_state_errors(bad: object) -> None:
    with pytest.raises(StateError, match=r"trim_messages: messages"):
        trim_messages(bad, max_messages=3)  # type: ignore[arg-type]
    with pytest.raises(StateError, match=r"filter_messages: messages"):
        filter_messages(bad)  # type: ignore[arg-type]


TOOLS = [
    system("rules"),
    Message.text_message("weather and news", message_id="q"),
    calls("w", text="Let me look.", name="weather"),
    results("w", output="sunny"),
    calls("n", name="news"),
    results("n", output="calm"),
    Message.text_message("Sunny and calm.", role="assistant", message_id="a"),
]


def test_filter_by_role_keeps_langchain_semantics() -> None:
    assert texts(filter_messages(TOOLS, include_roles="system")) == ["rules"]
    kept = filter_messages(TOOLS, include_roles=["human", "system"])
    assert texts(kept) == ["rules", "weather and news"]
    kept = filter_messages(TOOLS, include_roles="user", include_ids=["a"])  # either condition
    assert texts(kept) == ["weather and news", "Sunny and calm."]
    kept = filter_messages(TOOLS, include_roles="user", exclude_ids="q")  # exclusion wins
    assert kept == []


def test_dropping_one_side_of_an_exchange_drops_the_other() -> None:
    kept = filter_messages(TOOLS, exclude_roles="tool")
    assert texts(kept) == ["rules", "weather and news", "Let me look.", "Sunny and calm."]
    assert kept[2].tool_calls() == [] and kept[2].message_id == TOOLS[2].message_id
    assert is_paired(kept)
    kept = filter_messages(TOOLS, exclude_roles="assistant")  # results lose their calls
    assert texts(kept) == ["rules", "weather and news"]
    kept = filter_messages(TOOLS, exclude_ids=[TOOLS[5].message_id])
    assert texts(kept) == ["rules", "weather and news", "Let me look.", "sunny", "Sunny and calm."]
    assert is_paired(kept)


def test_tool_call_filters_by_call_id_or_tool_name() -> None:
    kept = filter_messages(TOOLS, include_tool_calls=["news"])
    # the weather call goes (its message keeps its text), the news exchange stays
    assert texts(kept) == [
        "rules",
        "weather and news",
        "Let me look.",
        "assistant",
        "calm",
        "Sunny and calm.",
    ]
    assert [c.name for m in kept for c in m.tool_calls()] == ["news"]
    kept = filter_messages(TOOLS, exclude_tool_calls=["w"])
    assert [c.name for m in kept for c in m.tool_calls()] == ["news"]
    no_tools = filter_messages(TOOLS, include_tool_calls=False)
    assert no_tools == filter_messages(TOOLS, exclude_tool_calls=True)
    assert texts(no_tools) == ["rules", "weather and news", "Let me look.", "Sunny and calm."]
    assert is_paired(no_tools)


def test_parallel_results_in_one_message_lose_only_the_dropped_call() -> None:
    conversation = [user("both"), calls("x", "y"), results("x", "y")]
    kept = filter_messages(conversation, exclude_tool_calls="x")
    assert [c.id for c in kept[1].tool_calls()] == ["y"]
    assert [r.call_id for r in kept[2].tool_results()] == ["y"]
    assert is_paired(kept)


def test_a_pending_call_stays_and_orphans_go() -> None:
    conversation = [user("go"), results("ghost"), calls("p")]
    kept = filter_messages(conversation)
    assert ids(kept) == ids([conversation[0], conversation[2]])
    assert is_paired(kept, allow_pending_tail=True)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"include_roles": "robot"}, "include_roles"),
        ({"exclude_roles": [None]}, "exclude_roles"),
        ({"include_roles": {"user": 1}}, "include_roles"),
        ({"include_ids": [1.5]}, "include_ids"),
        ({"exclude_ids": 3.0}, "exclude_ids"),
        ({"include_tool_calls": [1]}, "include_tool_calls"),
        ({"exclude_tool_calls": 0}, "exclude_tool_calls"),
    ],
)
def test_bad_filter_options_raise_config_errors_naming_them(
    kwargs: dict[str, object], match: str
) -> None:
    with pytest.raises(ConfigError, match=f"filter_messages: {match}"):
        filter_messages(TOOLS, **kwargs)  # type: ignore[arg-type]


def words(text: str) -> list[str]:
    """A splitter that keeps each word's following space, so the pieces join back."""
    return [word + " " for word in text.split(" ")[:-1]] + text.split(" ")[-1:]


def test_a_text_splitter_cuts_the_edge_message_to_fit() -> None:
    """LangChain's text_splitter: the budget is filled piece by piece (issue 37)."""
    conversation = [user("one two three four five six"), assistant("ok")]
    kept = trim_messages(
        conversation,
        max_tokens=6,
        token_counter=WordCounter(),
        allow_partial=True,
        text_splitter=words,
    )
    assert texts(kept) == ["four five six", "ok"]  # "ok" costs 2; 3 words + 1 fill the rest
    assert kept[0].message_id == conversation[0].message_id
    first = trim_messages(
        conversation,
        max_tokens=3,
        token_counter=WordCounter(),
        allow_partial=True,
        text_splitter=words,
        strategy="first",
    )
    assert texts(first) == ["one two "]


class SentenceSplitter:
    """Shaped like LangChain's TextSplitter: a split_text method."""

    def split_text(self, text: str) -> list[str]:
        return [sentence + "." for sentence in text.split(".") if sentence]


def test_a_message_of_several_blocks_keeps_whole_blocks_then_pieces_of_the_next() -> None:
    image = ImageBlock(media=MediaRef(kind="url", url="https://example.com/a.png"))
    long = TextBlock(text="First part. Second part. Third part.")
    message = Message(role="user", content=[long, image, TextBlock(text=" see this")])
    kept = trim_messages(
        [message],
        max_tokens=6,
        token_counter=WordCounter(),
        allow_partial=True,
        text_splitter=SentenceSplitter(),
    )
    # " see this" (2) + 1 for the message leave 3 words: one sentence of the first block
    assert kept[0].content == [TextBlock(text=" Third part."), image, TextBlock(text=" see this")]
    first = trim_messages(
        [message],
        max_tokens=5,
        token_counter=WordCounter(),
        allow_partial=True,
        text_splitter=SentenceSplitter(),
        strategy="first",
    )
    assert first[0].content == [TextBlock(text="First part. Second part.")]


def test_a_splitter_that_returns_nothing_keeps_no_part() -> None:
    conversation = [user("too long to keep"), assistant("ok")]
    for pieces in ([], [""]):
        kept = trim_messages(
            conversation,
            max_tokens=4,
            token_counter=WordCounter(),
            allow_partial=True,
            text_splitter=lambda text, pieces=pieces: pieces,  # type: ignore[misc]
        )
        assert texts(kept) == ["ok"]


def test_a_splitter_never_cuts_tool_traffic_and_pairing_holds() -> None:
    seen: list[str] = []

    def splitter(text: str) -> list[str]:
        seen.append(text)
        return words(text)

    conversation = [
        user("please look this up for me"),
        calls("a", text="looking it up now"),
        results("a", output="a long result " * 5),
        assistant("here it is"),
    ]
    options = {"token_counter": WordCounter(), "allow_partial": True, "text_splitter": splitter}
    kept = trim_messages(conversation, max_tokens=28, **options)  # type: ignore[arg-type]
    # the answer (4), call (5) and result (16) fit whole; 3 left: two words of the question
    assert texts(kept) == ["for me", "looking it up now", "a long result " * 5, "here it is"]
    assert is_paired(kept) and all(a is b for a, b in zip(kept[1:], conversation[1:], strict=True))
    kept = trim_messages(conversation, max_tokens=20, strategy="first", **options)  # type: ignore[arg-type]
    assert texts(kept) == ["please look this up for me"]  # the tool group is not cut
    assert seen == ["please look this up for me"]  # the splitter never saw tool traffic


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_tokens": 3, "text_splitter": words}, "text_splitter .*allow_partial=True"),
        ({"max_tokens": 3, "allow_partial": True, "text_splitter": "\n"}, "text_splitter"),
        (
            {"max_tokens": 3, "allow_partial": True, "text_splitter": lambda text: text},
            "text_splitter must return a list of texts, got str",
        ),
    ],
)
def test_bad_text_splitters_raise_config_errors(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=f"trim_messages: {match}"):
        trim_messages(CHAT, token_counter=WordCounter(), **kwargs)  # type: ignore[arg-type]

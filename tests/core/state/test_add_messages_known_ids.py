"""add_messages on long lists: the remembered ids never change what it returns."""

from __future__ import annotations

import random

import pytest

from tenxgraph.core.state import Message, _known_ids, add_messages, reducers


def reference(left: list[Message], right: list[Message]) -> list[Message]:
    """add_messages' documented rules, read from scratch."""
    ids = {m.message_id for m in left}
    return left + [m for m in right if not m.delta and m.message_id not in ids]


def history(size: int, prefix: str = "m") -> list[Message]:
    return [Message.text_message(str(i), message_id=f"{prefix}{i}") for i in range(size)]


def msg(message_id: str) -> Message:
    return Message.text_message(message_id, message_id=message_id)


def same(got: list[Message], expected: list[Message]) -> bool:
    """The same message objects in the same order."""
    return list(map(id, got)) == list(map(id, expected))


@pytest.fixture
def small_lists_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reducers, "MIN_SIZE", 3)


def test_a_long_list_and_the_list_returned_are_remembered() -> None:
    left = history(_known_ids.MIN_SIZE)
    new, other, x = msg("new"), msg("other"), msg("x")
    merged = add_messages(left, [new])
    assert id(left) in _known_ids._entries and id(merged) in _known_ids._entries
    assert same(add_messages(left, [msg("m5"), new]), [*left, new])
    chained = add_messages(merged, [msg("new"), msg("m7"), other])
    assert same(chained, [*left, new, other])
    assert same(add_messages(chained, [msg("other"), msg("new"), x]), [*chained, x])
    assert len(left) == _known_ids.MIN_SIZE  # never changed


def test_a_short_list_is_not_remembered() -> None:
    left = history(_known_ids.MIN_SIZE - 1)
    add_messages(left, [msg("new")])
    assert id(left) not in _known_ids._entries


@pytest.mark.usefixtures("small_lists_remembered")
def test_changes_in_place_are_noticed() -> None:
    left = history(5)
    m0, m1, m2 = left[0], left[1], left[2]
    add_messages(left, [msg("a")])
    left[2] = msg("b")  # m2 leaves the list, b comes in
    assert same(add_messages(left, [m2, msg("b")]), [*left, m2])
    left.append(msg("c"))
    assert same(add_messages(left, [msg("c")]), left)
    del left[0]
    assert same(add_messages(left, [m0]), [*left, m0])
    left.clear()
    left.extend(history(4, "n"))
    assert same(add_messages(left, [m1, msg("n1")]), [*left, m1])
    left.reverse()
    z = msg("z")
    assert same(add_messages(left, [msg("n3"), z]), [*left, z])


@pytest.mark.usefixtures("small_lists_remembered")
def test_a_returned_list_changed_in_place_is_read_again() -> None:
    a, b = msg("a"), msg("b")
    merged = add_messages(history(5), [a])
    merged[-1] = b
    assert same(add_messages(merged, [a, msg("b")]), [*merged, a])
    merged = add_messages(history(5), [a])
    merged.pop()
    merged.append(msg("a2"))
    assert same(add_messages(merged, [a]), [*merged, a])


@pytest.mark.usefixtures("small_lists_remembered")
def test_branches_from_one_list_do_not_see_each_other() -> None:
    left = history(5)
    a, b = msg("a"), msg("b")
    one = add_messages(left, [a])
    two = add_messages(left, [b])
    assert same(add_messages(one, [b]), [*one, b])
    assert same(add_messages(two, [a]), [*two, a])
    assert same(add_messages(left, [a, b]), [*left, a, b])


@pytest.mark.usefixtures("small_lists_remembered")
def test_random_operations_match_the_rules() -> None:
    rng = random.Random(16)
    lists = [history(6)]
    for step in range(3000):
        left = rng.choice(lists)
        action = rng.random()
        if action < 0.15 and left:
            left[rng.randrange(len(left))] = msg(f"r{rng.randrange(40)}")
        elif action < 0.2 and left:
            del left[rng.randrange(len(left))]
        elif action < 0.25:
            left.append(msg(f"r{rng.randrange(40)}"))
        elif action < 0.3 and left:  # an equal copy: same id, another object
            index = rng.randrange(len(left))
            left[index] = left[index].model_copy()
        right = [msg(f"r{rng.randrange(40)}") for _ in range(rng.randrange(3))]
        if rng.random() < 0.1:
            right.append(Message.text_message("chunk", delta=True))
        merged = add_messages(left, right)
        assert same(merged, reference(left, right)), step
        lists.append(merged)
        if len(lists) > 12:
            lists.pop(rng.randrange(len(lists)))


def test_the_id_sets_merge_when_the_added_part_grows() -> None:
    ids = _known_ids.KnownIds(frozenset(range(10)))
    for n in range(100):
        ids = ids.plus([msg(f"x{n}")])
        assert "x0" in ids and f"x{n}" in ids and 9 in ids and "y" not in ids
    assert len(ids._extra) <= 64

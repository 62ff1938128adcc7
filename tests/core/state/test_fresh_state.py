"""A fresh ``AgentState`` is built cheaply but is the same as before: an ``AppState()``
equal in every respect, and a message index slot that subclasses keep, whatever their
own private attributes and ``model_post_init`` do."""

from __future__ import annotations

import copy
from typing import Any

from pydantic import PrivateAttr

from tenxgraph.core.state import AgentState, Message
from tenxgraph.core.state.app_state import AppState, empty_app_state


def test_the_empty_app_state_is_app_state() -> None:
    made, reference = empty_app_state(), AppState()
    assert type(made) is AppState
    assert made == reference and made.root == {} and made.model_dump() == reference.model_dump()
    assert made.model_fields_set == reference.model_fields_set
    assert made.root is not empty_app_state().root  # each state gets its own dict
    made.set("k", [1])
    assert made.get("k") == [1] and AgentState().app_state.get("k") is None


def test_fresh_states_are_equal_and_independent() -> None:
    one, two = AgentState(), AgentState()
    assert one == two and one.model_fields_set == set()
    assert one.execution_meta is not two.execution_meta and one.context is not two.context
    one.append_messages([Message.text_message("hi")])
    assert len(one.message_index()._ids) == 1 and two.context == []
    copied = one.model_copy(deep=True)
    assert copied.context == one.context
    assert copied.append_messages([Message.text_message("more")])
    assert len(one.context) == 1 and len(copied.context) == 2


class WithPrivate(AgentState):
    _notes: list[str] = PrivateAttr(default_factory=list)


class OwnPostInit(AgentState):
    def model_post_init(self, context: Any, /) -> None:  # does not call super()
        object.__setattr__(self, "__pydantic_private__", None)


def test_subclasses_keep_their_private_attributes_and_the_index() -> None:
    state = WithPrivate()
    state._notes.append("kept")
    assert state.append_messages([Message.text_message("hi")])
    assert state._notes == ["kept"] and len(state.message_index()._ids) == 1
    assert copy.deepcopy(state)._notes == ["kept"]
    bare = OwnPostInit()
    assert bare.__pydantic_private__ is None
    assert bare.take_direct_additions() == []
    assert bare.append_messages([Message.text_message("hi")])
    bare.context.append(Message.text_message("direct"))
    assert [m.text() for m in bare.take_direct_additions()] == ["direct"]

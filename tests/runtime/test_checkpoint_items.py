"""Foreach item lists are checkpointed once per activation, not at every superstep.

``RunState.split_parts`` / ``join_parts`` give the parts a checkpointer stores;
the file checkpointer writes each list once, in the log line of the first state that needs it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pydantic_core
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime import RunState, WorkflowBuilder
from runtime._state import PART_KINDS, parse_part_key, part_key
from runtime.checkpoint import FileCheckpointer, InMemoryCheckpointer
from runtime.errors import CorruptRunStateError
from runtime.paths import input_path
from runtime.state import TraceEvent
from runtime.testing.checkpointer_conformance import sample_run_state
from tests.runtime.engine_helpers import answer_all, engine, nested_capture


def pausing_foreach(pause_at: int):  # type: ignore[no-untyped-def]
    """A foreach over input.items whose body pauses at item ``pause_at`` (a branch on the item), then continues."""
    g = WorkflowBuilder("pausing", input_schema={"type": "object", "properties": {"items": {"type": "array"}}})
    each = g.foreach("each", input_path("items"))
    check = g.branch("check", each.item, [{"label": "stop", "op": "equals", "value": pause_at}])
    ask = g.interrupt("ask", prompt="go on?")
    g.chain(each, "loop", check, "stop", ask, "ok", each)
    g.set_route(check, "default", each)
    return g.build()


def test_split_then_join_gives_the_same_state() -> None:
    rs = sample_run_state()
    data, parts = rs.split_parts()
    assert all("items" not in a for a in data["activations"].values())
    assert all("input" not in scope for scope in data["scopes"].values())
    assert parts == {"items:act_3": rs.activations["act_3"].items, "input:root": rs.scopes["root"].input}
    assert sorted(RunState.parts_left_out(data)) == ["input:root", "items:act_3"]
    assert RunState.join_parts(json.dumps(data), parts) == rs
    assert RunState.join_parts(rs.model_dump(mode="json"), {}) == rs  # inline parts are kept
    assert RunState.parts_left_out(rs.model_dump(mode="json")) == []


def test_split_can_keep_chosen_parts_inline() -> None:
    rs = sample_run_state()
    data, parts = rs.split_parts(lambda key, value: key.startswith("input:"))
    assert list(parts) == ["items:act_3"]
    assert data["scopes"]["root"]["input"] == rs.scopes["root"].input
    assert RunState.join_parts(data, parts) == rs


def test_part_keys_are_kind_and_entry_id() -> None:
    assert part_key("items", "act_3") == "items:act_3"
    assert parse_part_key("input:root") == ("input", "root")
    assert set(PART_KINDS) == {"items", "input"}
    with pytest.raises(ValueError):
        parse_part_key("state:root")


def test_join_without_a_part_is_corrupt_not_empty() -> None:
    data, parts = sample_run_state().split_parts()
    with pytest.raises(CorruptRunStateError) as caught:
        RunState.join_parts(data, {"items:act_other": [], "input:root": parts["input:root"]})
    assert caught.value.details["activation_id"] == "act_3"
    assert caught.value.details["part"] == "items:act_3"
    with pytest.raises(CorruptRunStateError) as caught:
        RunState.join_parts(data, {"items:act_3": parts["items:act_3"]})
    assert caught.value.details["scope_id"] == "root"
    with pytest.raises(CorruptRunStateError):
        RunState.join_parts(b"{not json", {})


def test_file_checkpointer_writes_an_item_list_once(tmp_path: Path) -> None:
    cp = FileCheckpointer(tmp_path, snapshot_min_bytes=1 << 30)  # a snapshot holds every live part by design
    workflow = pausing_foreach(pause_at=30)
    items = list(range(40))
    paused = engine(checkpointer=cp).run(workflow, {"items": items})
    assert paused.status == "interrupted"
    records = [json.loads(line) for line in cp.log_path(paused.run_id).read_bytes().splitlines()]
    carrying = [n for n, record in enumerate(records) if any(key.startswith("items:") for key in record["new"])]
    assert len(carrying) == 1  # the snapshot is written with the first state that needs it, never again
    assert all("items" not in a for record in records for a in record["state"]["activations"].values())
    loaded = cp.load(paused.run_id)
    assert loaded == paused.run_state
    assert next(iter(loaded.activations.values())).items == items

    done = engine(checkpointer=cp).resume(loaded, paused.interrupts[0].interrupt_id, {}, workflow=workflow)
    assert done.status == "completed"
    last = json.loads(cp.log_path(paused.run_id).read_bytes().splitlines()[-1])
    assert not any(key.startswith("items:") for key in last["new"])
    assert cp.load(paused.run_id) == done.run_state


def test_delete_removes_the_log(tmp_path: Path) -> None:
    cp = FileCheckpointer(tmp_path)
    paused = engine(checkpointer=cp).run(pausing_foreach(pause_at=1), {"items": [0, 1, 2]})
    assert cp.log_path(paused.run_id).is_file()
    cp.delete(paused.run_id)
    assert list(tmp_path.iterdir()) == []


class Recording(InMemoryCheckpointer):
    """Keeps, for every save of a real run, the state's JSON next to its split parts (as a checkpointer stores them)."""

    def __init__(self, keep: Callable[[str, Any], bool] | None = None) -> None:
        super().__init__()
        self.keep = keep
        self.saved: list[tuple[dict[str, Any], bytes, bytes]] = []

    def save(self, run_state: RunState, events: Sequence[TraceEvent] = ()) -> None:
        super().save(run_state, events)
        data, parts = run_state.split_parts(self.keep)
        dump = run_state.model_dump(mode="json")
        self.saved.append((dump, pydantic_core.to_json(data), pydantic_core.to_json(parts)))


_names = st.text(max_size=6)
_customers = st.lists(st.fixed_dictionaries({"name": _names, "orders": st.lists(st.integers(-5, 5), max_size=4)}),
                      max_size=4)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(customers=_customers, outer=st.integers(1, 3), inner=st.integers(1, 3), interrupt=st.booleans(),
       inline_over=st.none() | st.integers(0, 3), inline_inputs=st.booleans())
def test_join_of_split_is_the_state_at_every_checkpoint_of_real_runs(
        customers: list[dict[str, Any]], outer: int, inner: int, interrupt: bool, inline_over: int | None,
        inline_inputs: bool) -> None:
    def keep(key: str, value: Any) -> bool:
        kind, _ = parse_part_key(key)
        if kind == "input":
            return inline_inputs
        return inline_over is not None and len(value) <= inline_over

    cp = Recording(keep)
    workflow = nested_capture(inner_concurrency=inner, outer_concurrency=outer, interrupt=interrupt)
    eng = engine(checkpointer=cp)
    result = answer_all(eng, eng.run(workflow, {"customers": customers}), workflow)
    assert result.status == "completed"
    assert cp.saved
    for dump, data, parts in cp.saved:
        stored_parts = json.loads(parts)
        assert sorted(RunState.parts_left_out(json.loads(data))) == sorted(stored_parts)
        assert RunState.join_parts(data, stored_parts).model_dump(mode="json") == dump

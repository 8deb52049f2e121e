"""RunState.snapshot: a cheap structural copy that later engine work can never change.

The in-memory checkpointer keeps snapshots instead of JSON, sharing JSON
values with the live state. That is only correct if the engine never mutates
a shared value in place; these tests check it over runs that exercise every
kind of state change (nested foreach with concurrency, interrupts and
resumes, subgraphs, failures on error routes), by comparing each snapshot,
restored at the end of the run, with the JSON taken at the moment it was saved.
"""

from __future__ import annotations

from collections.abc import Sequence

from runtime import RunState, WorkflowBuilder
from runtime._state import Lineage, RunStateSnapshot, new_snapshot
from runtime.checkpoint import InMemoryCheckpointer
from runtime.state import TraceEvent
from tests.runtime.engine_helpers import CUSTOMERS, answer_all, engine, nested_capture, single_foreach
from tests.runtime.factory_support import assert_same_as_constructor
from tests.runtime.test_engine_subgraph import broken_child, caller, child


class Recording:
    """A checkpointer that keeps, for every save, the snapshot and the JSON of that moment."""

    def __init__(self) -> None:
        self.saved: list[tuple[RunStateSnapshot, str]] = []

    def save(self, run_state: RunState, events: Sequence[TraceEvent] = ()) -> None:
        self.saved.append((run_state.snapshot(), run_state.model_dump_json()))

    def assert_snapshots_unchanged(self) -> None:
        assert self.saved
        for number, (snapshot, json_then) in enumerate(self.saved):
            assert snapshot.restore().model_dump_json() == json_then, f"save #{number} changed after it was taken"


def test_snapshots_of_nested_concurrent_foreach_with_interrupts_never_change() -> None:
    recording = Recording()
    eng = engine(checkpointer=recording)
    workflow = nested_capture(inner_concurrency=2, outer_concurrency=2, after_inner=True, interrupt=True)
    result = answer_all(eng, eng.run(workflow, {"customers": CUSTOMERS}), workflow, through_json=False)
    assert result.status == "completed", result.error
    assert len(recording.saved) > 10
    recording.assert_snapshots_unchanged()


def test_snapshots_across_subgraph_scopes_and_failures_never_change() -> None:
    recording = Recording()
    assert engine(checkpointer=recording, workflows={"child": child()}).run(caller(), {"n": 3}).status == "completed"
    failing = engine(checkpointer=recording, workflows={"child": broken_child()})
    assert failing.run(caller(error_route=True), {"n": 1}).status == "completed"
    assert failing.run(caller(), {"n": 1}).status == "failed"
    recording.assert_snapshots_unchanged()


def test_snapshot_is_independent_of_later_changes_to_the_live_state() -> None:
    recording = Recording()
    workflow = nested_capture(inner_concurrency=2, interrupt=True)
    paused = engine(checkpointer=recording).run(workflow, {"customers": CUSTOMERS})
    rs = paused.run_state
    snapshot, json_then = rs.snapshot(), rs.model_dump_json()
    activation = next(iter(rs.activations.values()))
    activation.running.append("frame_x")
    activation.next_index += 5
    next(iter(rs.frames.values())).status = "failed"
    rs.ready.append("frame_x")
    rs.scopes["root"].state = {"replaced": True}
    rs.interrupts.clear()
    rs.lineages.popitem()
    rs.step += 1
    assert snapshot.restore().model_dump_json() == json_then


def test_restored_states_are_independent_and_resumable() -> None:
    cp = InMemoryCheckpointer()
    eng = engine(checkpointer=cp)
    workflow = nested_capture(interrupt=True)
    paused = eng.run(workflow, {"customers": CUSTOMERS})
    first = cp.load(paused.run_id)
    first.scopes["root"].input["customers"].append({"name": "mutant", "orders": []})
    second = cp.load(paused.run_id)
    assert second.scopes["root"].input == {"customers": CUSTOMERS}
    finished = answer_all(eng, eng.resume(second, paused.interrupts[0].interrupt_id, {"answer": "yes"},
                                          workflow=workflow), workflow)
    assert finished.status == "completed"


def test_snapshot_shares_the_foreach_items_instead_of_copying_them() -> None:
    """What keeps a save's cost independent of the collection size: the items list is shared, not copied."""
    shared: list[bool] = []

    class Probe:
        def save(self, run_state: RunState, events: Sequence[TraceEvent] = ()) -> None:
            snapshot = run_state.snapshot()
            for key, activation in run_state.activations.items():
                shared.append(snapshot.data["activations"][key]["items"] is activation.items)
                assert snapshot.data["activations"][key]["running"] is not activation.running

    result = engine(checkpointer=Probe()).run(single_foreach(), {"orders": list(range(50))})
    assert result.status == "completed"
    assert len(shared) >= 50 and all(shared)


def test_snapshot_round_trips_a_builder_workflow_state_exactly() -> None:
    g = WorkflowBuilder("plain", state_schema={"type": "object", "properties": {"v": {}}})
    g.use("echo", id="e", input=[{"target": "value", "value": {"k": ["ü", 1.5, None]}}], output=[{"target": "v"}])
    result = engine().run(g.build())
    assert result.run_state.snapshot().restore() == result.run_state


def test_trusted_models_are_indistinguishable_from_validated_ones() -> None:
    """The engine builds frames and lineages without validation; they must behave like validated models."""
    from runtime._state import trusted
    from runtime.state import ExecutionFrame, Lineage

    values = {"frame_id": "frame_1", "parent_frame_id": None, "scope_id": "root", "lineage_id": "lineage_2",
              "node_id": "n", "status": "ready", "waiting_for": None, "metadata": {"foreach": {"index": 0}}, "steps": 0}
    built, checked = trusted(ExecutionFrame, dict(values)), ExecutionFrame.model_validate(values)
    assert built == checked
    assert built.model_dump_json() == checked.model_dump_json()
    assert built.model_copy(deep=True) == checked
    built.status = "waiting"
    assert built.status == "waiting" and built.model_dump()["status"] == "waiting"
    lineage = {"lineage_id": "lineage_2", "kind": "item", "scope_id": "root", "frame_id": "frame_1",
               "parent_lineage_id": "lineage_0"}
    assert trusted(Lineage, dict(lineage)) == Lineage.model_validate(lineage)


def test_the_snapshot_factory_builds_exactly_what_the_constructor_builds() -> None:
    assert_same_as_constructor(RunStateSnapshot, new_snapshot)


def test_snapshots_share_the_frozen_lineages_and_copy_the_frames() -> None:
    """A lineage never changes once made, so it is frozen and a snapshot holds the model itself; a frame changes in
    place (its node, status, steps), so a snapshot holds a copy of its fields."""
    import pydantic
    import pytest

    shared: list[bool] = []

    class Probe:
        def save(self, run_state: RunState, events: Sequence[TraceEvent] = ()) -> None:
            snapshot = run_state.snapshot()
            for key, lineage in run_state.lineages.items():
                shared.append(snapshot.data["lineages"][key] is lineage)
            for key, frame in run_state.frames.items():
                assert snapshot.data["frames"][key] is not frame.__dict__

    result = engine(checkpointer=Probe()).run(single_foreach(), {"orders": list(range(5))})
    assert result.status == "completed"
    assert shared and all(shared)
    lineage = next(iter(engine().run(single_foreach(), {"orders": [1]}).run_state.lineages.values()), None)
    lineage = lineage or Lineage(lineage_id="lineage_1", kind="root", scope_id="root", frame_id="frame_1")
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        lineage.kind = "item"

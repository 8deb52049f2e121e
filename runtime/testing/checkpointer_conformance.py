"""Tests every ``Checkpointer`` implementation must pass.

Use it by subclassing in a test module (pytest collects the inherited tests)::

    from runtime.testing.checkpointer_conformance import CheckpointerConformance

    class TestMyCheckpointer(CheckpointerConformance):
        def make_checkpointer(self):
            return MyCheckpointer(...)

        def reopen(self, checkpointer):          # optional: a new instance on the same storage
            return MyCheckpointer(...)

Add markers the implementation needs (``pytestmark = pytest.mark.django_db``)
in the subclass's module. The tests use only the public runtime API.
"""

from __future__ import annotations

from typing import Any

import pytest

from runtime import Engine, RunState, Workflow
from runtime._checkpoint import Checkpointer
from runtime.checkpoint import HistoryPolicy
from runtime.document import WorkflowRef
from runtime.engine import EngineOptions
from runtime.errors import CheckpointNotFoundError
from runtime.state import (
    Barrier,
    ExecutionFrame,
    ForeachActivation,
    Interrupt,
    Lineage,
    RuntimeScope,
    SequentialIds,
    TraceEvent,
)
from runtime.tasks import TaskRegistry


def sample_run_state(run_id: str = "run_0000000000001", *, step: int = 3, item: Any = None) -> RunState:
    """A small but complete live RunState: a root frame waiting on a foreach with one interrupted item."""
    item = {"name": "Ada", "tags": ["x", "ÿ", "日本"], "n": 1.5} if item is None else item
    ref = WorkflowRef(id="conformance")
    rs = RunState(run_id=run_id, workflow=ref, status="interrupted", step=step, id_seq=7, trace_seq=11)
    rs.scopes["root"] = RuntimeScope(scope_id="root", workflow=ref, root_frame_id="frame_1",
                                     input={"people": [item]}, state={"seen": [], "note": "ünïcode ✓"})
    rs.frames["frame_1"] = ExecutionFrame(frame_id="frame_1", scope_id="root", lineage_id="lineage_1",
                                          node_id="people", status="waiting", waiting_for="act_3")
    rs.frames["frame_4"] = ExecutionFrame(
        frame_id="frame_4", parent_frame_id="frame_1", scope_id="root", lineage_id="lineage_5", node_id="ask",
        status="interrupted", waiting_for="int_6",
        metadata={"foreach": {"node_id": "people", "activation_id": "act_3", "index": 0, "item": item,
                              "alias": "person"}},
    )
    rs.lineages["lineage_1"] = Lineage(lineage_id="lineage_1", kind="root", scope_id="root", frame_id="frame_1")
    rs.lineages["lineage_5"] = Lineage(lineage_id="lineage_5", kind="item", scope_id="root", frame_id="frame_4",
                                       parent_lineage_id="lineage_1")
    rs.activations["act_3"] = ForeachActivation(activation_id="act_3", node_id="people", scope_id="root",
                                                frame_id="frame_1", alias="person", items=[item], next_index=1,
                                                running=["frame_4"])
    rs.barriers["act_3"] = Barrier(activation_id="act_3", frame_id="frame_1", expected=1)
    rs.interrupts["int_6"] = Interrupt(interrupt_id="int_6", frame_id="frame_4", scope_id="root",
                                       lineage_id="lineage_5", node_id="ask", prompt="Greeting?",
                                       payload={"name": "Ada"}, resume_schema={"type": "object"}, step=step)
    return rs


def sample_events(run_id: str, first: int, count: int) -> list[TraceEvent]:
    return [
        TraceEvent(seq=first + i, kind="node_completed", run_id=run_id, step=first + i, time=1_700_000_000.25 + i,
                   scope_id="root", frame_id=f"frame_{i}", lineage_id=f"lineage_{i}", node_id="ask",
                   activation_id="act_3", index=i, label="ok", attempt=1, duration=0.5,
                   summary={"value": f"é{i}", "list": [1, 2, 3]})
        for i in range(count)
    ]


def _registry() -> TaskRegistry:
    registry = TaskRegistry()

    @registry.task
    def join(values: list[str], sep: str = ", ") -> str:
        return sep.join(values)

    @registry.task
    def double(x: int) -> int:
        return 2 * x

    return registry


def collecting_workflow() -> Workflow:
    """A foreach (four at a time) that collects its results and appends each to a state list too."""
    return Workflow.model_validate({
        "id": "conformance-lists",
        "input_schema": {"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "integer"}}},
                         "required": ["xs"]},
        "state_schema": {"type": "object", "properties": {"log": {"type": "array", "default": []}}},
        "nodes": [
            {"kind": "foreach", "id": "each", "over": "input.xs", "max_concurrency": 4, "results": "doubled"},
            {"kind": "task", "id": "double", "task": "double",
             "input": [{"target": "x", "path": "context.foreach.each.item"}],
             "output": [{"source": ".", "target": "log", "mode": "append"}]},
        ],
        "routes": [
            {"source": "each", "label": "loop", "target": "double"},
            {"source": "double", "label": "ok", "target": "each"},
        ],
        "outputs": [{"target": "doubled", "path": "state.doubled"}, {"target": "log", "path": "state.log"}],
    })


def greeting_workflow() -> Workflow:
    """Foreach (two at a time) whose items each pause at an interrupt, then a task joins the answers."""
    return Workflow.model_validate({
        "id": "conformance",
        "input_schema": {"type": "object", "properties": {"names": {"type": "array", "items": {"type": "string"}}},
                         "required": ["names"]},
        "state_schema": {"type": "object", "properties": {
            "greetings": {"type": "array", "items": {"type": "string"}, "default": []},
            "joined": {"type": "string"}}},
        "nodes": [
            {"kind": "foreach", "id": "people", "over": "input.names", "as": "person", "max_concurrency": 2},
            {"kind": "interrupt", "id": "ask", "prompt": "Greeting?",
             "input": [{"target": "name", "path": "context.foreach.people.item"}],
             "resume_schema": {"type": "object", "properties": {"answer": {"type": "string"}},
                               "required": ["answer"]},
             "output": [{"source": "answer", "target": "greetings", "mode": "append"}]},
            {"kind": "task", "id": "finish", "task": "join",
             "input": [{"target": "values", "path": "state.greetings"}],
             "output": [{"source": ".", "target": "joined"}]},
        ],
        "routes": [
            {"source": "people", "label": "loop", "target": "ask"},
            {"source": "ask", "label": "ok", "target": "people"},
            {"source": "people", "label": "done", "target": "finish"},
        ],
        "outputs": [{"target": "joined", "path": "state.joined"}],
    })


def _dump(rs: RunState) -> dict[str, Any]:
    return rs.model_dump(mode="json")


class CheckpointerConformance:
    """Inherit and implement ``make_checkpointer``; every ``test_*`` here then runs against it."""

    def make_checkpointer(self) -> Checkpointer:
        raise NotImplementedError("return a fresh, empty checkpointer")

    def reopen(self, checkpointer: Checkpointer) -> Checkpointer:
        """A second instance over the same storage; the default reuses the instance."""
        return checkpointer

    def _engine(self, checkpointer: Checkpointer) -> Engine:
        return Engine(registry=_registry(), options=EngineOptions(checkpointer=checkpointer, ids=SequentialIds()))

    # -- state -------------------------------------------------------------------------

    def test_save_then_load_returns_an_equal_state(self) -> None:
        cp = self.make_checkpointer()
        rs = sample_run_state()
        cp.save(rs)
        loaded = cp.load(rs.run_id)
        assert isinstance(loaded, RunState)
        assert _dump(loaded) == _dump(rs)

    def test_save_keeps_a_snapshot_not_a_reference(self) -> None:
        cp = self.make_checkpointer()
        rs = sample_run_state()
        cp.save(rs)
        expected = _dump(rs)
        rs.step = 99
        rs.scopes["root"].state = {"changed": True}
        rs.frames.pop("frame_4")
        assert _dump(cp.load(rs.run_id)) == expected

    def test_loaded_states_are_independent(self) -> None:
        cp = self.make_checkpointer()
        rs = sample_run_state()
        cp.save(rs)
        first = cp.load(rs.run_id)
        first.scopes["root"].state["seen"] = ["mutated"]
        assert cp.load(rs.run_id).scopes["root"].state["seen"] == []

    def test_latest_save_wins(self) -> None:
        cp = self.make_checkpointer()
        cp.save(sample_run_state(step=1))
        cp.save(sample_run_state(step=2))
        assert cp.load("run_0000000000001").step == 2

    def test_unknown_run_raises_checkpoint_not_found(self) -> None:
        cp = self.make_checkpointer()
        with pytest.raises(CheckpointNotFoundError) as caught:
            cp.load("run_0000000009999")
        assert caught.value.code == "checkpoint.not_found"

    def test_runs_are_isolated(self) -> None:
        cp = self.make_checkpointer()
        cp.save(sample_run_state("run_a", item={"who": "a"}), sample_events("run_a", 0, 2))
        cp.save(sample_run_state("run_b", item={"who": "b"}), sample_events("run_b", 0, 3))
        assert cp.load("run_a").scopes["root"].input == {"people": [{"who": "a"}]}
        assert cp.load("run_b").scopes["root"].input == {"people": [{"who": "b"}]}
        assert [e.run_id for e in cp.load_events("run_a")] == ["run_a", "run_a"]
        assert len(cp.load_events("run_b")) == 3

    def test_unicode_and_nested_values_round_trip(self) -> None:
        cp = self.make_checkpointer()
        item = {"text": "naïve — “quotes” \\ back\nslash \u0000 nul", "deep": {"a": [[1, None, True, 2.5e-7]]},
                "emoji": "🙂", "big": 2**53}
        rs = sample_run_state(item=item)
        cp.save(rs)
        assert cp.load(rs.run_id).frames["frame_4"].metadata["foreach"]["item"] == item

    # -- events ------------------------------------------------------------------------

    def test_events_accumulate_across_saves_in_seq_order(self) -> None:
        cp = self.make_checkpointer()
        rs = sample_run_state()
        rs.trace_seq = 5
        cp.save(rs, sample_events(rs.run_id, 0, 2))
        cp.save(rs, [])
        cp.save(rs, sample_events(rs.run_id, 2, 3))
        assert [e.seq for e in cp.load_events(rs.run_id)] == [0, 1, 2, 3, 4]

    def test_events_round_trip_every_field(self) -> None:
        cp = self.make_checkpointer()
        rs = sample_run_state()
        rs.trace_seq = 4
        events = sample_events(rs.run_id, 0, 4)
        cp.save(rs, events)
        loaded = cp.load_events(rs.run_id)
        assert [e.to_dict() for e in loaded] == [e.to_dict() for e in events]

    def test_events_of_an_unknown_run_are_empty(self) -> None:
        assert self.make_checkpointer().load_events("run_0000000008888") == []

    # -- deletion and persistence --------------------------------------------------

    def test_delete_forgets_state_and_events(self) -> None:
        cp = self.make_checkpointer()
        rs = sample_run_state()
        cp.save(rs, sample_events(rs.run_id, 0, 2))
        cp.delete(rs.run_id)
        with pytest.raises(CheckpointNotFoundError):
            cp.load(rs.run_id)
        assert cp.load_events(rs.run_id) == []

    def test_delete_of_an_unknown_run_does_nothing(self) -> None:
        cp = self.make_checkpointer()
        cp.save(sample_run_state("run_keep"))
        cp.delete("run_missing")
        assert cp.load("run_keep").run_id == "run_keep"

    def test_a_reopened_checkpointer_sees_saved_runs(self) -> None:
        cp = self.make_checkpointer()
        rs = sample_run_state()
        rs.trace_seq = 2
        cp.save(rs, sample_events(rs.run_id, 0, 2))
        again = self.reopen(cp)
        assert _dump(again.load(rs.run_id)) == _dump(rs)
        assert [e.seq for e in again.load_events(rs.run_id)] == [0, 1]

    # -- with the engine -----------------------------------------------------------

    def test_engine_saves_every_superstep_with_its_events(self) -> None:
        cp = self.make_checkpointer()
        result = self._engine(cp).run(greeting_workflow(), {"names": ["Ada", "Grace", "Edsger"]})
        assert result.status == "interrupted"
        assert len(result.interrupts) == 2
        assert _dump(cp.load(result.run_id)) == _dump(result.run_state)
        assert [e.identity() for e in cp.load_events(result.run_id)] == [e.identity() for e in result.trace]

    def test_resuming_a_loaded_checkpoint_matches_resuming_the_live_state(self) -> None:
        cp = self.make_checkpointer()
        workflow = greeting_workflow()
        first = self._engine(cp).run(workflow, {"names": ["Ada", "Grace", "Edsger"]})
        loaded = self.reopen(cp).load(first.run_id)
        outcomes = []
        for state in (first.run_state, loaded):
            engine = self._engine(self.make_checkpointer())
            current: RunState = state
            trace: list[tuple[Any, ...]] = []
            while current.status == "interrupted":
                pending = next(iter(current.interrupts.values()))
                result = engine.resume(current, pending.interrupt_id, {"answer": f"hi {pending.payload['name']}"},
                                       workflow=workflow)
                current = result.run_state
                trace.extend(e.identity() for e in result.trace)
            outcomes.append((result, trace))
        (live, live_trace), (restored, restored_trace) = outcomes
        assert restored.status == live.status == "completed"
        assert restored.output == live.output == {"joined": "hi Ada, hi Grace, hi Edsger"}
        assert _dump(restored.run_state) == _dump(live.run_state)
        assert restored_trace == live_trace

    def test_a_run_resumed_through_a_reopened_checkpointer_keeps_its_state_and_trace(self) -> None:
        """A restarted process: a new instance goes on saving a run another one stored, and a third loads it whole
        (the file log appends a snapshot there instead of rewriting what it holds)."""
        cp = self.make_checkpointer()
        workflow = greeting_workflow()
        first = self._engine(cp).run(workflow, {"names": ["Ada", "Grace", "Edsger"]})
        trace = [e.identity() for e in first.trace]
        again = self.reopen(cp)
        current = again.load(first.run_id)
        engine = self._engine(again)
        while current.status == "interrupted":
            pending = next(iter(current.interrupts.values()))
            result = engine.resume(current, pending.interrupt_id, {"answer": f"hi {pending.payload['name']}"},
                                   workflow=workflow)
            current = again.load(first.run_id)
            assert _dump(current) == _dump(result.run_state)
            trace.extend(e.identity() for e in result.trace)
        assert current.status == "completed"
        last = self.reopen(again)
        assert _dump(last.load(first.run_id)) == _dump(result.run_state)
        assert [e.identity() for e in last.load_events(first.run_id)] == trace

    def test_growing_lists_are_stored_whole_at_every_superstep(self) -> None:
        """Collected results and appended lists are stored in parts; every checkpoint must still load whole."""
        cp = self.make_checkpointer()
        steps: list[int] = []

        def check(run_state: RunState, _events: Any) -> None:
            steps.append(run_state.step)
            assert _dump(cp.load(run_state.run_id)) == _dump(run_state)

        engine = Engine(_registry(), EngineOptions(checkpointer=cp, ids=SequentialIds(), on_superstep=check))
        xs = list(range(300))
        result = engine.run(collecting_workflow(), {"xs": xs})
        assert result.status == "completed"
        assert result.output["doubled"] == [2 * x for x in xs]
        assert sorted(result.output["log"]) == result.output["doubled"]
        assert len(steps) > len(xs) // 4
        assert _dump(self.reopen(cp).load(result.run_id)) == _dump(result.run_state)

    # -- history -------------------------------------------------------------------

    def make_history_checkpointer(self, policy: HistoryPolicy) -> Checkpointer:
        raise NotImplementedError("return a fresh, empty checkpointer that keeps history by ``policy``")

    def _run_recorded(self, cp: Checkpointer, xs: list[int], run_id: str | None = None
                      ) -> tuple[Any, dict[int, dict[str, Any]]]:
        seen: dict[int, dict[str, Any]] = {}

        def record(run_state: RunState, _events: Any) -> None:
            seen[run_state.step] = _dump(run_state)

        engine = Engine(_registry(), EngineOptions(checkpointer=cp, ids=SequentialIds(), on_superstep=record))
        return engine.run(collecting_workflow(), {"xs": xs}, run_id=run_id), seen

    def test_history_keeps_every_checkpoint_and_each_loads_as_it_was(self) -> None:
        cp = self.make_history_checkpointer(HistoryPolicy())
        result, seen = self._run_recorded(cp, list(range(300)))
        assert result.status == "completed"
        assert [info.step for info in cp.history(result.run_id)] == sorted(seen)
        assert cp.history(result.run_id)[-1].status == "completed"
        again = self.reopen(cp)
        for step, expected in seen.items():
            assert _dump(again.load_at(result.run_id, step)) == expected, f"superstep {step}"
        assert _dump(again.load(result.run_id)) == _dump(result.run_state)

    def test_history_keeps_the_last_n_and_forgets_the_rest(self) -> None:
        cp = self.make_history_checkpointer(HistoryPolicy(keep_last=3))
        result, seen = self._run_recorded(cp, list(range(300)))
        last = sorted(seen)[-3:]
        assert [info.step for info in cp.history(result.run_id)] == last
        for step in last:
            assert _dump(cp.load_at(result.run_id, step)) == seen[step]
        with pytest.raises(CheckpointNotFoundError) as caught:
            cp.load_at(result.run_id, sorted(seen)[0])
        assert caught.value.details["step"] == sorted(seen)[0]
        assert _dump(self.reopen(cp).load(result.run_id)) == _dump(result.run_state)

    def test_history_until_end_is_dropped_when_the_run_completes(self) -> None:
        cp = self.make_history_checkpointer(HistoryPolicy(until_end=True))
        interrupted = self._engine(cp).run(greeting_workflow(), {"names": ["Ada", "Grace", "Edsger"]})
        assert interrupted.status == "interrupted"
        assert [i.status for i in cp.history(interrupted.run_id)][-1] == "interrupted"
        result, _seen = self._run_recorded(cp, list(range(40)), run_id="run_0000000000002")
        assert result.status == "completed"
        assert cp.history(result.run_id) == []
        assert _dump(cp.load(result.run_id)) == _dump(result.run_state)
        assert len(cp.history(interrupted.run_id)) >= 2  # another run's history is its own

    def test_history_keeps_a_superstep_saved_twice_once_as_last_saved(self) -> None:
        cp = self.make_history_checkpointer(HistoryPolicy())
        cp.save(sample_run_state(step=1))
        redone = sample_run_state(step=1)
        redone.trace_seq = 40
        cp.save(redone)
        cp.save(sample_run_state(step=2))
        assert [(i.step, i.trace_seq) for i in cp.history("run_0000000000001")] == [(1, 40), (2, 11)]
        assert cp.load_at("run_0000000000001", 1).trace_seq == 40

    def test_history_is_deleted_with_the_run_and_empty_for_an_unknown_one(self) -> None:
        cp = self.make_history_checkpointer(HistoryPolicy())
        rs = sample_run_state()
        cp.save(rs)
        assert [i.to_dict() for i in cp.history(rs.run_id)] == [
            {"step": 3, "status": "interrupted", "attempt": 1, "trace_seq": 11}]
        cp.delete(rs.run_id)
        assert cp.history(rs.run_id) == []
        assert cp.history("run_0000000007777") == []
        with pytest.raises(CheckpointNotFoundError):
            cp.load_at(rs.run_id, 3)

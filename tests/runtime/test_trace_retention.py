"""Trace retention: RunResult.trace keeps the last 1,000 events by default, or all, the last N or none; sinks and
checkpointers see every one, and the result says how many it left out and where they went."""

from __future__ import annotations

from typing import Any

import pytest

from runtime import Engine, Workflow, WorkflowBuilder
from runtime._options import DEFAULT_KEEP_TRACE
from runtime.checkpoint import InMemoryCheckpointer
from runtime.engine import EngineOptions
from runtime.errors import EngineOptionsError
from runtime.state import SequentialIds, TraceEvent
from tests.runtime.engine_helpers import registry as tasks


def loop() -> Workflow:
    g = WorkflowBuilder("loop", input_schema={"type": "object", "properties": {
        "xs": {"type": "array", "items": {"type": "integer"}}}, "required": ["xs"]})
    each = g.foreach("each", "input.xs", max_concurrency=3, results="doubled")
    d = g.use("double", "d", input=[{"target": "x", "path": each.item}])
    g.chain(each, "loop", d, "ok", each)
    g.output("doubled", "state.doubled")
    return g.build()


def run(items: int = 100, **engine_kwargs: Any) -> tuple[Any, list[TraceEvent], list[TraceEvent]]:
    cp = InMemoryCheckpointer()
    sunk: list[TraceEvent] = []
    eng = Engine(tasks(), EngineOptions(ids=SequentialIds(), checkpointer=cp, trace_sink=sunk.append, **engine_kwargs))
    result = eng.run(loop(), {"xs": list(range(items))})
    assert result.status == "completed"
    return result, cp.load_events(result.run_id), sunk


def test_asked_to_the_result_keeps_every_event() -> None:
    result, stored, sunk = run(600, keep_trace=None)
    assert len(stored) > DEFAULT_KEEP_TRACE
    assert [e.seq for e in result.trace] == list(range(len(stored)))
    assert [e.identity() for e in result.trace] == [e.identity() for e in stored] == [e.identity() for e in sunk]
    assert result.trace_omitted == 0


def test_by_default_the_result_keeps_the_last_thousand_and_says_how_many_it_left_out_and_where() -> None:
    result, stored, _ = run(600)
    assert len(stored) > DEFAULT_KEEP_TRACE == 1000
    assert [e.identity() for e in result.trace] == [e.identity() for e in stored[-DEFAULT_KEEP_TRACE:]]
    assert result.trace_omitted == len(stored) - DEFAULT_KEEP_TRACE
    assert result.trace_kept_by == ("checkpointer", "trace_sink")


def test_with_no_store_the_default_bound_still_holds_and_nothing_claims_to_keep_the_rest() -> None:
    result = Engine(registry=tasks(), options=EngineOptions(ids=SequentialIds())).run(loop(), {"xs": list(range(600))})
    assert result.status == "completed" and result.output["doubled"] == [2 * x for x in range(600)]
    assert len(result.trace) == DEFAULT_KEEP_TRACE
    assert result.trace[-1].kind == "run_completed"
    assert result.trace_omitted == result.run_state.trace_seq - DEFAULT_KEEP_TRACE > 0
    assert result.trace_kept_by == ()


def test_a_small_run_keeps_its_whole_trace_by_default() -> None:
    result, stored, _ = run(10)
    assert [e.identity() for e in result.trace] == [e.identity() for e in stored]
    assert result.trace_omitted == 0


@pytest.mark.parametrize("keep", [1, 7, 50])
def test_keeping_the_last_n_events(keep: int) -> None:
    result, stored, sunk = run(keep_trace=keep)
    assert len(stored) > 300
    assert [e.identity() for e in result.trace] == [e.identity() for e in stored[-keep:]]
    assert result.trace_omitted == len(stored) - keep
    assert [e.seq for e in sunk] == [e.seq for e in stored]  # the sink and the checkpointer still see all


def test_keeping_no_events_streams_them_all_to_the_sink_in_order() -> None:
    result, stored, sunk = run(keep_trace=0)
    assert result.trace == ()
    assert result.trace_omitted == len(stored)
    assert [e.seq for e in sunk] == list(range(len(stored)))
    assert result.output["doubled"] == [2 * x for x in range(100)]


def test_the_sink_sees_events_as_they_happen_before_the_superstep_is_saved() -> None:
    order: list[str] = []
    eng = Engine(registry=tasks(), options=EngineOptions(ids=SequentialIds(), keep_trace=0,
                 trace_sink=lambda e: order.append(f"event {e.seq}"),
                 on_superstep=lambda rs, events: order.append(f"saved {events[-1].seq}")))
    eng.run(loop(), {"xs": [1, 2]})
    for position, entry in enumerate(order):
        if entry.startswith("saved"):
            assert order[position - 1] == "event " + entry.split()[1]


@pytest.mark.parametrize("bad", [-1, True, 2.5, "all"])
def test_a_bad_retention_is_refused_with_what_is_allowed(bad: Any) -> None:
    with pytest.raises(EngineOptionsError, match="keep_trace must be 0 or a positive whole number or None"):
        Engine(registry=tasks(), options=EngineOptions(keep_trace=bad))


def test_a_run_no_one_watches_is_numbered_like_one_that_is_saved() -> None:
    # Nothing sees an event here (no checkpointer, hook or sink, none kept), so the engine builds none; the
    # state's counters must still move on exactly as they do when every event is stored.
    watched, stored, _ = run()
    unwatched = Engine(tasks(), EngineOptions(ids=SequentialIds(), keep_trace=0)).run(loop(), {"xs": list(range(100))})
    assert unwatched.trace == ()
    assert unwatched.run_state.trace_seq == watched.run_state.trace_seq == len(stored)
    assert unwatched.run_state.model_dump(mode="json") == watched.run_state.model_dump(mode="json")


@pytest.mark.parametrize("keep", [1, 7, 1000])
def test_the_recorder_holds_a_bounded_number_of_events_however_long_the_call(keep: int) -> None:
    """What the recorder holds for the result is cut back to the last ``keep`` as it grows: a call's memory does not
    grow with its history, whatever retains the events."""
    from runtime._algo import Recorder, over_kept
    from runtime._state import new_run_state
    from runtime.document import WorkflowRef

    recorder = Recorder(new_run_state("run_1", WorkflowRef(id="w")), clock=lambda: 0.0, keep=keep)
    most = 0
    for _ in range(5_000):
        recorder.emit("node_started")
        recorder.emit("node_completed")
        recorder.take_step()
        most = max(most, len(recorder.events))
    assert keep <= most <= over_kept(keep) < 2 * keep + 20
    assert [e.seq for e in recorder.kept()] == list(range(10_000 - keep, 10_000))
    assert recorder.omitted() == 10_000 - keep

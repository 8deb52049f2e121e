"""Each frame's step counter (``ExecutionFrame.steps``, what ``EngineOptions(max_steps=)`` bounds) as every checkpoint
saves it, pinned superstep by superstep for a route cycle, nested foreach loops, a foreach whose items cycle, an
interrupt answered through the JSON state, and a run carried on from its checkpoint after a crash. The figures
were recorded before the counter's write moved off pydantic's ``__setattr__``: any change to how or when a step
is counted, or to what a checkpoint holds of it, changes them."""

from __future__ import annotations

from typing import Any

import pytest

from runtime import RunState, Workflow, WorkflowBuilder
from runtime.checkpoint import InMemoryCheckpointer

from .engine_helpers import CUSTOMERS, answer_all, engine, nested_capture
from .test_engine_limits import _foreach_over_cycles


def _steps(rs: RunState) -> str:
    """One checkpoint: each frame's node and steps, in frame order, as the stored JSON gives them back."""
    frames = RunState.from_json(rs.model_dump_json()).frames
    return " ".join(f"{frame.node_id}:{frame.steps}" for _, frame in sorted(frames.items()))


def _recorder(saved: list[str]) -> dict[str, Any]:
    def record(rs: RunState, _events: Any) -> None:
        saved.append(_steps(rs))

    return {"on_superstep": record}


def _cycle() -> Workflow:
    """``size`` looks at state.x and ``inc`` adds 3 to it until it is big (>= 10): nine steps of one frame."""
    g = WorkflowBuilder(id="cycle", state_schema={"type": "object", "properties": {
        "x": {"type": "integer", "default": 0}}})
    size = g.use("size", id="size", input=[{"target": "x", "path": "state.x"}])
    inc = g.use("add", id="inc", input=[{"target": "a", "path": "state.x"}, {"target": "b", "value": 3}],
                output=[{"source": ".", "target": "x"}])
    g.chain(size, "small", inc, "ok", size)
    return g.build()


def test_a_route_cycle_counts_each_node_step_of_its_frame() -> None:
    saved: list[str] = []
    assert engine(**_recorder(saved)).run(_cycle()).status == "completed"
    assert saved == [*(f"{'inc' if n % 2 else 'size'}:{n}" for n in range(9)), ""]  # then the frame is pruned


NESTED = ["customers:0",
          "customers:1 orders:0 orders:0",
          "customers:1 orders:1 orders:1 seen:0 seen:0 seen:0",
          "customers:1 after:1 after:1",
          ""]


def test_nested_foreach_frames_count_their_own_steps() -> None:
    saved: list[str] = []
    workflow = nested_capture(inner_concurrency=2, outer_concurrency=2, after_inner=True)
    assert engine(**_recorder(saved)).run(workflow, {"customers": CUSTOMERS}).status == "completed"
    assert saved == NESTED


def test_an_item_that_cycles_counts_every_turn_up_to_the_limit() -> None:
    saved: list[str] = []
    # Item 10 is big at once; item 3 never grows (b echoes it back to a), so its frame hits the limit of 6.
    result = engine(max_steps=6, **_recorder(saved)).run(_foreach_over_cycles(), {"xs": [10, 3, 12]})
    assert result.status == "failed" and result.error is not None and result.error.details["steps"] == 6
    assert saved == ["each:0", "each:1 a:0", "each:1 a:0", "each:1 b:1", "each:1 a:2", "each:1 b:3", "each:1 a:4",
                     "each:1 b:5", "each:1 a:6", "each:1 a:6"]  # the last: the failure, saved at the same superstep


def test_steps_go_on_across_interrupts_answered_through_the_json_state() -> None:
    saved: list[str] = []
    workflow = nested_capture(interrupt=True)
    eng = engine(**_recorder(saved))
    assert answer_all(eng, eng.run(workflow, {"customers": CUSTOMERS}), workflow).status == "completed"
    asked = ["customers:1 orders:1 seen:0", "customers:1 orders:1 ask:1", "customers:1 orders:1 ask:2",
             "customers:1 orders:1 confirm:2"]
    assert saved == ["customers:0", "customers:1 orders:0", *asked, *asked, "customers:1 orders:0", *asked, ""]


@pytest.mark.parametrize("crash_after", [1, 2, 3])
def test_a_run_carried_on_from_its_checkpoint_counts_as_the_uninterrupted_run(crash_after: int) -> None:
    workflow = nested_capture(inner_concurrency=2, outer_concurrency=2, after_inner=True)
    saved: list[str] = []
    checkpointer = InMemoryCheckpointer()
    record = _recorder(saved)["on_superstep"]

    def crash(rs: RunState, events: Any) -> None:
        record(rs, events)
        if rs.step == crash_after:
            raise KeyboardInterrupt  # the process dies right after the checkpoint of superstep crash_after

    with pytest.raises(KeyboardInterrupt):
        engine(checkpointer=checkpointer, on_superstep=crash).run(workflow, {"customers": CUSTOMERS}, run_id="run-1")
    carried = engine(**_recorder(saved)).continue_run(checkpointer.load("run-1"), workflow=workflow)
    assert carried.status == "completed"
    assert saved == NESTED

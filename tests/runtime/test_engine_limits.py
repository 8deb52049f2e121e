"""The step limit: a route cycle that never ends fails the run instead of holding a worker forever, while a big
foreach (far more supersteps than the limit) passes: the limit counts the steps of each frame, and a foreach's
items are frames of their own."""

from __future__ import annotations

import asyncio

import pytest

from runtime import WorkflowBuilder
from runtime.checkpoint import InMemoryCheckpointer
from runtime.errors import EngineOptionsError, StepLimitError

from .engine_helpers import engine


def _endless_cycle():
    g = WorkflowBuilder(id="spin", input_schema={"type": "object", "properties": {"x": {"type": "integer"}}})
    # "big" has no route, so the run could end there and the analyzer accepts the cycle; x=1 is never big.
    a = g.use("size", id="a", input=[{"target": "x", "path": "input.x"}])
    b = g.use("echo", id="b", input=[{"target": "value", "path": "input.x"}])
    g.chain(a, "small", b, "ok", a)
    return g.build()


def test_an_endless_cycle_fails_at_the_step_limit_and_keeps_state_and_trace() -> None:
    checkpointer = InMemoryCheckpointer()
    result = engine(max_steps=25, checkpointer=checkpointer).run(_endless_cycle(), {"x": 1})
    assert result.status == "failed"
    assert isinstance(result.error, StepLimitError)
    assert result.error.code == "run.step_limit"
    message = result.error.message
    assert "took 25 steps without finishing (the limit is 25 steps per frame" in message
    assert "route cycle through 'b'" in message or "route cycle through 'a'" in message
    assert result.error.details["node_id"] in ("a", "b") and result.error.details["foreach"] == []
    assert result.run_state.step == 25
    assert result.trace[-1].kind == "run_failed"
    saved = checkpointer.load(result.run_state.run_id)
    assert saved.status == "failed" and saved.error["code"] == "run.step_limit"
    # The paused position survives, so an operator can inspect where the cycle was.
    assert [frame.node_id for frame in saved.frames.values()] in (["a"], ["b"])


def test_the_async_driver_honours_the_same_limit() -> None:
    result = asyncio.run(engine(max_steps=7).arun(_endless_cycle(), {"x": 1}))
    assert result.status == "failed" and result.error is not None and result.error.code == "run.step_limit"
    assert result.run_state.step == 7


def test_a_run_that_finishes_within_the_limit_is_unaffected() -> None:
    g = WorkflowBuilder(id="short", input_schema={"type": "object", "properties": {"x": {"type": "integer"}}})
    g.use("double", id="d", input=[{"target": "x", "path": "input.x"}])
    result = engine(max_steps=1).run(g.build(), {"x": 2})
    assert result.status == "completed" and result.error is None


def test_no_limit_by_default_and_nonsense_limits_are_refused() -> None:
    assert engine().options.max_steps is None
    with pytest.raises(EngineOptionsError, match="max_steps must be a positive whole number"):
        engine(max_steps=0)


def _foreach_over_cycles():
    """A foreach (one item at a time) whose body cycles a -> b -> a until the item is big (>= 10)."""
    g = WorkflowBuilder(id="loops", input_schema={"type": "object", "properties": {
        "xs": {"type": "array", "items": {"type": "integer"}}}})
    each = g.foreach("each", "input.xs", max_concurrency=1, results="out")
    a = g.use("size", id="a", input=[{"target": "x", "path": each.item}])
    b = g.use("echo", id="b", input=[{"target": "value", "path": each.item}])
    g.chain(each, "loop", a, "big", each)
    g.chain(a, "small", b, "ok", a)
    return g.build()


def test_a_foreach_with_far_more_supersteps_than_the_limit_completes() -> None:
    # 300 items one at a time: about 300 supersteps, each item frame takes one step, the root frame two.
    result = engine(max_steps=3).run(_foreach_over_cycles(), {"xs": [10 + i for i in range(300)]})
    assert result.status == "completed", result.error
    assert result.run_state.step > 100 * 3
    assert len(result.state["out"]) == 300


def test_a_cycle_inside_one_item_is_stopped_and_named_by_its_item_path() -> None:
    # Items 0..4 are big and finish at once; item 5 (x = 1) spins a -> b -> a forever.
    xs = [10, 11, 12, 13, 14, 1, 15]
    result = engine(max_steps=40).run(_foreach_over_cycles(), {"xs": xs})
    assert result.status == "failed" and isinstance(result.error, StepLimitError)
    details = result.error.details
    assert details["foreach"] == [{"node_id": "each", "index": 5}] and details["steps"] == 40
    assert details["node_id"] in ("a", "b") and details["max_steps"] == 40
    assert "in item 5 of foreach 'each'" in result.error.message
    # It stopped after 40 turns of that item's frame, not after 40 supersteps of the run.
    assert result.run_state.step > 40
    assert result.trace[-1].kind == "run_failed" and result.trace[-1].index == 5

"""The superstep limit: a route cycle that never ends fails the run instead of holding a worker forever."""

from __future__ import annotations

import asyncio

import pytest

from runtime import InMemoryCheckpointer, StepLimitError, WorkflowBuilder

from .engine_helpers import engine


def _endless_cycle():
    g = WorkflowBuilder(id="spin", input_schema={"type": "object", "properties": {"x": {"type": "integer"}}})
    # "big" has no route, so the run could end there and the analyzer accepts the cycle; x=1 is never big.
    a = g.use("size", id="a", input=[{"target": "x", "path": "input.x"}])
    b = g.use("echo", id="b", input=[{"target": "value", "path": "input.x"}])
    g.set_route(a, "small", b)
    g.set_route(b, "ok", a)
    return g.build()


def test_an_endless_cycle_fails_at_the_step_limit_and_keeps_state_and_trace() -> None:
    checkpointer = InMemoryCheckpointer()
    result = engine(max_steps=25, checkpointer=checkpointer).run(_endless_cycle(), {"x": 1})
    assert result.status == "failed"
    assert isinstance(result.error, StepLimitError)
    assert result.error.code == "run.step_limit"
    assert "stopped after 25 supersteps" in result.error.message and "route cycle" in result.error.message
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
    assert engine().max_steps is None
    with pytest.raises(ValueError, match="max_steps must be a positive number"):
        engine(max_steps=0)

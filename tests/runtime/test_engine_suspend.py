"""Suspended frames: a retry's backoff or a ``wait`` step checkpoints a wake-up time instead of sleeping.

``EngineOptions(sleep_in_process=False)`` returns ``waiting`` with ``wake_at``; ``continue_run`` before that time
changes nothing, after it the frame runs again (its next attempt) or completes (a wait). The tests drive a
fake clock, so nothing here sleeps or depends on timing, except where the real clock is the point.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from runtime import Engine, RunResult, RunState, WorkflowBuilder
from runtime._registry import TIMER_ATTRIBUTE
from runtime.analysis import retry_delay_diagnostics
from runtime.engine import EngineOptions
from runtime.errors import CorruptRunStateError, EngineOptionsError, WorkflowValidationError
from runtime.state import RuntimeContext, parse_run_state
from runtime.tasks import TaskRegistry, builtin_registry


class Clock:
    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def flaky_registry(calls: list[tuple[int, int]], *, is_async: bool = False) -> TaskRegistry:
    """``flaky(fail, key)`` fails its first ``fail`` attempts; ``calls`` records (key, attempt) per call."""
    reg = TaskRegistry()
    if is_async:
        @reg.task(name="flaky")
        async def aflaky(fail: int, ctx: RuntimeContext, key: int = 0) -> int:
            calls.append((key, ctx.attempt))
            await asyncio.sleep(0)
            if ctx.attempt <= fail:
                raise RuntimeError(f"attempt {ctx.attempt} failed")
            return ctx.attempt
    else:
        @reg.task
        def flaky(fail: int, ctx: RuntimeContext, key: int = 0) -> int:
            calls.append((key, ctx.attempt))
            if ctx.attempt <= fail:
                raise RuntimeError(f"attempt {ctx.attempt} failed")
            return ctx.attempt

    def pause(seconds: float) -> float:
        calls.append((-1, 0))
        return seconds

    setattr(pause, TIMER_ATTRIBUTE, "seconds")
    reg.register(pause, name="pause")
    return reg


def retry_workflow(fail: int, *, attempts: int = 3, backoff: float = 10.0) -> Any:
    g = WorkflowBuilder("retrying", input_schema={"type": "object", "properties": {}},
                        state_schema={"type": "object", "properties": {"attempt": {"type": "integer"}}})
    g.use("flaky", id="f", input=[{"target": "fail", "value": fail}],
          retry={"max_attempts": attempts, "backoff_seconds": backoff, "backoff_multiplier": 2},
          output=[{"source": ".", "target": "attempt"}])
    g.output("attempt", "state.attempt")
    return g.build()


def kinds(result: RunResult) -> list[str]:
    return [event.kind for event in result.trace]


def test_backoff_suspends_and_wakes_only_once_its_time_has_come() -> None:
    calls: list[tuple[int, int]] = []
    clock = Clock()
    engine = Engine(flaky_registry(calls), options=EngineOptions(sleep_in_process=False, clock=clock))
    doc = retry_workflow(fail=2)

    first = engine.run(doc, {})
    assert first.status == "waiting"
    assert first.wake_at == 1_010.0  # backoff_seconds before attempt 2
    assert first.to_dict()["wake_at"] == 1_010.0
    assert calls == [(0, 1)]
    (wakeup,) = first.run_state.wakeups.values()
    assert (wakeup.reason, wakeup.attempt, wakeup.at) == ("retry", 2, 1_010.0)
    assert first.run_state.frames[wakeup.frame_id].status == "suspended"
    assert kinds(first)[-3:] == ["node_retrying", "node_waiting", "run_waiting"]

    # Through its JSON form, as a checkpoint would carry it.
    saved = first.run_state.to_json()
    clock.now = 1_009.0
    early = engine.continue_run(parse_run_state(saved), workflow=doc)
    assert early.status == "waiting" and early.wake_at == 1_010.0
    assert calls == [(0, 1)]  # nothing ran before the wake-up time
    assert early.trace == ()

    clock.now = 1_010.0
    second = engine.continue_run(parse_run_state(early.run_state.to_json()), workflow=doc)
    assert calls == [(0, 1), (0, 2)]
    assert second.status == "waiting"
    assert second.wake_at == 1_030.0  # the backoff doubles before attempt 3

    clock.now = 1_031.0
    done = engine.continue_run(parse_run_state(second.run_state.to_json()), workflow=doc)
    assert done.status == "completed", done.error
    assert done.output == {"attempt": 3}
    assert calls == [(0, 1), (0, 2), (0, 3)]
    assert done.run_state.wakeups == {}
    assert done.wake_at is None and "wake_at" not in done.to_dict()


def test_a_suspended_node_that_keeps_failing_fails_with_every_attempt_counted() -> None:
    calls: list[tuple[int, int]] = []
    clock = Clock()
    engine = Engine(flaky_registry(calls), options=EngineOptions(sleep_in_process=False, clock=clock))
    doc = retry_workflow(fail=5, attempts=2)
    result = engine.run(doc, {})
    assert result.status == "waiting"
    clock.now += 10
    result = engine.continue_run(result.run_state, workflow=doc)
    assert result.status == "failed"
    assert result.error is not None and result.error.details["attempts"] == 2
    assert calls == [(0, 1), (0, 2)]


@pytest.mark.parametrize("is_async", [False, True])
def test_async_driver_suspends_the_same_way(is_async: bool) -> None:
    calls: list[tuple[int, int]] = []
    clock = Clock()
    engine = Engine(flaky_registry(calls, is_async=is_async), EngineOptions(sleep_in_process=False, clock=clock))
    doc = retry_workflow(fail=1)

    async def scenario() -> list[RunResult]:
        first = await engine.arun(doc, {})
        clock.now += 10
        return [first, await engine.acontinue_run(first.run_state, workflow=doc)]

    first, done = asyncio.run(scenario())
    assert (first.status, first.wake_at) == ("waiting", 1_010.0)
    assert done.status == "completed" and done.output == {"attempt": 2}
    assert calls == [(0, 1), (0, 2)]


def test_zero_backoff_retries_at_once_without_suspending() -> None:
    calls: list[tuple[int, int]] = []
    engine = Engine(flaky_registry(calls), options=EngineOptions(sleep_in_process=False, clock=Clock()))
    result = engine.run(retry_workflow(fail=2, backoff=0.0), {})
    assert result.status == "completed" and result.output == {"attempt": 3}
    assert "node_waiting" not in kinds(result)


def test_other_frames_go_on_while_one_sleeps() -> None:
    """A foreach of two items at once: item 0 backs off, item 1 completes meanwhile; the run then waits."""
    calls: list[tuple[int, int]] = []
    clock = Clock()
    engine = Engine(flaky_registry(calls), options=EngineOptions(sleep_in_process=False, clock=clock))
    g = WorkflowBuilder("items", input_schema={"type": "object", "properties": {
        "fails": {"type": "array", "items": {"type": "integer"}}}},
        state_schema={"type": "object", "properties": {"done": {"type": "array", "default": []}}})
    each = g.foreach("each", "input.fails", max_concurrency=2)
    f = g.use("flaky", id="f", input=[{"target": "fail", "path": each.item}, {"target": "key", "path": each.index}],
              retry={"max_attempts": 2, "backoff_seconds": 5},
              output=[{"source": ".", "target": "done", "mode": "append"}])
    g.chain(each, "loop", f, "ok", each)
    g.output("done", "state.done")
    doc = g.build()

    first = engine.run(doc, {"fails": [1, 0]})
    assert first.status == "waiting"
    assert sorted(calls) == [(0, 1), (1, 1)]  # the two items run concurrently
    assert first.state["done"] == [1]  # item 1 finished while item 0 sleeps
    clock.now += 5
    done = engine.continue_run(first.run_state, workflow=doc)
    assert done.status == "completed"
    assert done.output == {"done": [1, 2]}
    assert calls[2:] == [(0, 2)]


def wait_workflow(seconds: float, task: str = "pause") -> Any:
    g = WorkflowBuilder("waiting", input_schema={"type": "object", "properties": {}},
                        state_schema={"type": "object", "properties": {"waited": {"type": "number"}}})
    g.use(task, id="w", input=[{"target": "seconds", "value": seconds}], output=[{"source": ".", "target": "waited"}])
    g.output("waited", "state.waited")
    return g.build()


def test_a_wait_step_never_runs_the_task_when_the_engine_suspends() -> None:
    calls: list[tuple[int, int]] = []
    clock = Clock()
    engine = Engine(flaky_registry(calls), options=EngineOptions(sleep_in_process=False, clock=clock))
    doc = wait_workflow(250)
    first = engine.run(doc, {})
    assert (first.status, first.wake_at) == ("waiting", 1_250.0)
    (wakeup,) = first.run_state.wakeups.values()
    assert (wakeup.reason, wakeup.result) == ("wait", 250)
    clock.now = 1_249.0
    assert engine.continue_run(first.run_state, workflow=doc).status == "waiting"
    clock.now = 1_250.0
    done = engine.continue_run(first.run_state, workflow=doc)
    assert done.status == "completed" and done.output == {"waited": 250}
    assert calls == []  # the timer task itself was never called


def test_a_zero_wait_completes_at_once() -> None:
    calls: list[tuple[int, int]] = []
    result = Engine(flaky_registry(calls), EngineOptions(
        sleep_in_process=False, clock=Clock())).run(wait_workflow(0), {})
    assert result.status == "completed" and result.output == {"waited": 0}
    assert calls == []


def test_builtin_wait_suspends_on_the_real_clock() -> None:
    engine = Engine(builtin_registry(), options=EngineOptions(sleep_in_process=False))
    doc = wait_workflow(0.05, task="wait")
    result = engine.run(doc, {})
    assert result.status == "waiting" and result.wake_at is not None
    while result.status == "waiting":
        assert result.wake_at is not None
        time.sleep(max(0.0, result.wake_at - time.time()))
        result = engine.continue_run(result.run_state, workflow=doc)
    assert result.status == "completed" and result.output == {"waited": 0.05}


def test_the_default_engine_sleeps_through_a_waiting_state() -> None:
    """A state suspended by one engine, continued by a default one: it sleeps until the wake-up in-process."""
    calls: list[tuple[int, int]] = []
    doc = retry_workflow(fail=1, backoff=0.05)
    waiting = Engine(flaky_registry(calls), options=EngineOptions(sleep_in_process=False)).run(doc, {})
    assert waiting.status == "waiting"
    done = Engine(flaky_registry(calls)).continue_run(waiting.run_state, workflow=doc)
    assert done.status == "completed" and done.output == {"attempt": 2}
    assert calls == [(0, 1), (0, 2)]


def test_a_cancel_reaches_a_run_sleeping_in_process() -> None:
    calls: list[tuple[int, int]] = []
    doc = retry_workflow(fail=1, backoff=3_600)
    waiting = Engine(flaky_registry(calls), options=EngineOptions(sleep_in_process=False)).run(doc, {})
    cancelled = Engine(flaky_registry(calls), options=EngineOptions(should_cancel=lambda run_id: True)).continue_run(
        waiting.run_state, workflow=doc)
    assert cancelled.status == "cancelled"
    assert calls == [(0, 1)]


def test_total_retry_delay_over_the_cap_is_refused_before_anything_runs() -> None:
    calls: list[tuple[int, int]] = []
    doc = retry_workflow(fail=0, attempts=4, backoff=10.0)  # 10 + 20 + 40 = 70 s in all
    engine = Engine(flaky_registry(calls), options=EngineOptions(sleep_in_process=False, max_retry_delay=60))
    with pytest.raises(WorkflowValidationError) as caught:
        engine.run(doc, {})
    (diagnostic,) = caught.value.diagnostics
    assert (diagnostic.code, diagnostic.node_id, diagnostic.field) == ("retry.delay_too_long", "f", "retry")
    assert "70 s" in diagnostic.message and "60 s" in diagnostic.message
    assert calls == []
    assert retry_delay_diagnostics(doc, 70) == []
    assert Engine(flaky_registry(calls), options=EngineOptions(max_retry_delay=70)).run(doc, {}).status == "completed"
    with pytest.raises(EngineOptionsError, match="max_retry_delay"):
        Engine(options=EngineOptions(max_retry_delay=-1))


def test_wakeups_must_match_suspended_frames() -> None:
    calls: list[tuple[int, int]] = []
    waiting = Engine(flaky_registry(calls), EngineOptions(
        sleep_in_process=False, clock=Clock())).run(retry_workflow(fail=1), {})
    data = waiting.run_state.model_dump(mode="json")
    RunState.from_json(data)  # as written, it loads

    no_wakeup = {**data, "wakeups": {}}
    with pytest.raises(CorruptRunStateError, match="suspended"):
        RunState.from_json(no_wakeup)

    (frame_id,) = data["wakeups"]
    awake = {**data, "frames": {**data["frames"], frame_id: {**data["frames"][frame_id], "status": "ready"}}}
    with pytest.raises(CorruptRunStateError, match="wakeup"):
        RunState.from_json(awake)


def test_runs_that_never_sleep_keep_their_checkpoint_form() -> None:
    calls: list[tuple[int, int]] = []
    result = Engine(flaky_registry(calls), EngineOptions(sleep_in_process=False)).run(retry_workflow(fail=0), {})
    assert "wakeups" not in result.run_state.model_dump(mode="json")

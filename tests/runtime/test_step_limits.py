"""Step limits in the engine's own process: which timeout applies, async steps stopped at their deadline, sync
steps failed once they return late, oversized results, and all of them through retry policies and error routes."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from runtime import Engine, WorkflowBuilder, WorkflowError
from runtime._steps import StepCall, step_timeout
from runtime.engine import EngineOptions
from runtime.errors import EngineOptionsError, StepResultTooLargeError, StepTimeoutError
from runtime.state import RuntimeContext, SequentialIds
from runtime.tasks import TaskRegistry

finished: list[str] = []


def limits_registry() -> TaskRegistry:
    reg = TaskRegistry()

    @reg.task
    async def nap(seconds: float, tag: str = "") -> str:
        await asyncio.sleep(seconds)
        finished.append(tag)
        return tag

    @reg.task
    async def nap_first_attempt(seconds: float, ctx: RuntimeContext) -> int:
        """Sleeps past any small limit on its first attempt only."""
        if ctx.attempt == 1:
            await asyncio.sleep(seconds)
        return ctx.attempt

    @reg.task
    def block(seconds: float) -> str:
        time.sleep(seconds)
        return "slept"

    @reg.task
    def text(size: int) -> str:
        return "x" * size

    @reg.task
    async def raises_timeout() -> int:
        raise TimeoutError("the task's own timeout")

    @reg.task(timeout_seconds=7)
    def slow_by_nature() -> int:
        return 1

    return reg


def engine(**options: Any) -> Engine:
    return Engine(registry=limits_registry(), options=EngineOptions(ids=SequentialIds(), **options))


def one_step(task: str, inputs: dict[str, Any], *, error_route: bool = False, retry: dict[str, Any] | None = None,
             timeout: float | None = None, workflow_timeout: float | None = None, in_foreach: bool = False
             ) -> Any:
    graph = WorkflowBuilder("limits", state_schema={"type": "object", "properties": {
        "result": {}}}, step_timeout_seconds=workflow_timeout,
        input_schema={"type": "object", "properties": {"items": {"type": "array"}}})
    node = graph.use(task, id="step", input=[{"target": key, "value": value} for key, value in inputs.items()],
                     output=[{"source": ".", "target": "result"}], retry=retry, timeout_seconds=timeout)
    loop = None
    if in_foreach:
        loop = graph.foreach("each", "input.items")
        graph.chain(loop, "loop", node, "ok", loop)
        graph.set_start(loop)
    if error_route:
        # The failed node's output bindings receive its error payload ({"error": {...}}) on the error route.
        caught = graph.use("text", id="caught", input=[{"target": "size", "value": 0}])
        graph.set_route(node, "error", caught)
        if loop is not None:
            graph.set_route(caught, "ok", loop)
    graph.output("result", "state.result")
    return graph.build()


def test_the_most_specific_timeout_wins_and_the_cap_bounds_it() -> None:
    reg = limits_registry()
    plain, natured = reg.get("nap"), reg.get("slow_by_nature")

    def limit(spec: Any, node: float | None, workflow: float | None, cap: float | None) -> float | None:
        doc = WorkflowBuilder("w", step_timeout_seconds=workflow)
        task_node = doc.use(spec.name, id="n", timeout_seconds=node,
                            input=[{"target": "seconds", "value": 0}] if spec is plain else None)
        return step_timeout(task_node, spec, doc.build(), cap)

    assert limit(plain, None, None, None) is None
    assert limit(plain, None, None, 60) == 60
    assert limit(plain, None, 30, 60) == 30                    # workflow default
    assert limit(natured, None, 30, 60) == 7                   # the task's default beats the workflow's
    assert limit(natured, 90, 30, 60) == 60                    # the node's own setting, capped by the server
    assert limit(natured, 2, 30, 60) == 2
    assert limit(plain, 120, None, None) == 120


def test_an_async_step_is_stopped_at_its_deadline_with_a_structured_error() -> None:
    finished.clear()
    result = engine().run(one_step("nap", {"seconds": 30, "tag": "late"}, timeout=0.2), {})
    assert result.status == "failed"
    cause = result.error.details["cause"]  # type: ignore[union-attr]
    assert cause["code"] == "step.timeout" and cause["type"] == "StepTimeoutError"
    assert cause["node_id"] == "step" and cause["frame_id"] == result.error.details["frame_id"]  # type: ignore[union-attr]
    assert cause["limit_seconds"] == 0.2 and cause["task"] == "nap"
    assert finished == []  # cancelled, not awaited to its end


def test_the_engine_cap_applies_when_the_document_sets_nothing() -> None:
    result = engine(step_timeout=0.2).run(one_step("nap", {"seconds": 30}), {})
    assert result.error is not None and result.error.details["cause"]["code"] == "step.timeout"
    assert asyncio.run(engine(step_timeout=0.2).arun(one_step("nap", {"seconds": 30}), {})).error is not None


def test_a_task_raising_its_own_timeout_error_is_not_a_step_timeout() -> None:
    result = engine().run(one_step("raises_timeout", {}, timeout=30), {})
    assert result.error is not None and result.error.details["cause"]["type"] == "TimeoutError"


def test_a_sync_step_cannot_be_stopped_in_process_but_fails_once_it_returns_late() -> None:
    result = engine().run(one_step("block", {"seconds": 0.3}, timeout=0.05), {})
    assert result.status == "failed"
    assert result.error.details["cause"]["code"] == "step.timeout"  # type: ignore[union-attr]
    assert result.state == {}  # its late result is discarded


def test_a_timeout_is_retried_by_the_node_retry_policy() -> None:
    result = engine().run(one_step("nap_first_attempt", {"seconds": 30}, timeout=0.2,
                                   retry={"max_attempts": 2}), {})
    assert result.status == "completed", result.error
    assert result.output["result"] == 2
    [retry] = [event for event in result.trace if event.kind == "node_retrying"]
    assert "StepTimeoutError" in str(retry.summary)


def test_limit_failures_take_the_error_route_naming_node_frame_and_item() -> None:
    eng = Engine(registry=limits_registry(), options=EngineOptions(ids=SequentialIds()))
    timed_out = eng.run(one_step("nap", {"seconds": 30}, timeout=0.1, error_route=True, in_foreach=True),
                        {"items": ["a", "b"]})
    assert timed_out.status == "completed", timed_out.error
    error = timed_out.state["result"]["error"]
    assert error["code"] == "step.timeout" and error["node_id"] == "step" and error["index"] == 1
    assert error["frame_id"].startswith("frame")

    eng = Engine(registry=limits_registry(), options=EngineOptions(ids=SequentialIds(), max_result_bytes=100))
    too_big = eng.run(one_step("text", {"size": 200}, error_route=True), {})
    assert too_big.status == "completed"
    error = too_big.state["result"]["error"]
    assert error["code"] == "step.result_too_large" and error["node_id"] == "step"


def test_an_oversized_result_fails_the_step_with_its_size_and_a_result_within_the_limit_passes() -> None:
    eng = engine(max_result_bytes=100)
    result = eng.run(one_step("text", {"size": 200}, retry={"max_attempts": 2}), {})
    assert result.status == "failed"
    cause = result.error.details["cause"]  # type: ignore[union-attr]
    assert cause["code"] == "step.result_too_large"
    assert cause["size_bytes"] == 202 and cause["limit_bytes"] == 100  # JSON: the string and its quotes
    assert result.error.details["attempts"] == 2  # type: ignore[union-attr]
    assert eng.run(one_step("text", {"size": 98}), {}).output["result"] == "x" * 98


def test_step_errors_are_workflow_errors_with_stable_codes() -> None:
    assert issubclass(StepTimeoutError, WorkflowError) and StepTimeoutError.code == "step.timeout"
    assert StepResultTooLargeError.code == "step.result_too_large"
    with pytest.raises(EngineOptionsError, match="step_timeout must be a positive"):
        engine(step_timeout=0)
    with pytest.raises(EngineOptionsError, match="max_result_bytes must be a positive"):
        engine(max_result_bytes=0)


def test_a_step_call_runs_here_and_checks_its_result_size() -> None:
    reg = limits_registry()
    context = RuntimeContext(node_id="n", frame_id="frame_1")
    assert StepCall.of("text", {"size": 3}, context, timeout=None, max_result_bytes=10).run_here(reg) == (
        "ok", b'"xxx"')
    with pytest.raises(StepResultTooLargeError, match="11 bytes as JSON; the limit is 10 bytes"):
        StepCall.of("text", {"size": 9}, context, timeout=None, max_result_bytes=10).run_here(reg)

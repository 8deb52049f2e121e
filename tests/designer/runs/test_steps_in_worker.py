"""Small pure built-in steps run in the worker itself (``designer.runs.steps.runs_in_worker``), under the same
limits as a step process: the result size, the timeout; larger inputs and every other task still go to a
step process."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from designer.runs.steps import IN_WORKER_TASKS, StepProcessPool, runs_in_worker
from designer.workflows import catalog
from runtime.engine import StepCall
from runtime.errors import StepResultTooLargeError, StepTimeoutError, TaskError
from runtime.state import RuntimeContext

LIMIT = 1_000


@pytest.fixture(scope="module")
def pool() -> Iterator[StepProcessPool]:
    step_pool = StepProcessPool(processes=1, task_modules=catalog.task_modules(), max_memory_mb=64,
                                in_worker_max_input_bytes=LIMIT)
    yield step_pool
    step_pool.close()


def call(task: str, payload: Any, *, timeout: float | None = 30, max_result_bytes: int | None = 10_000) -> StepCall:
    return StepCall.of(task, payload, RuntimeContext(node_id="node", frame_id="frame_7"), timeout=timeout,
                       max_result_bytes=max_result_bytes)


def never() -> bool:
    return False


def started_processes(pool: StepProcessPool) -> int:
    return len(pool._idle)


def test_small_pure_builtins_run_without_a_step_process(pool: StepProcessPool) -> None:
    assert pool.run_step(call("math", {"op": "add", "a": 2, "b": 3}), never) == ("ok", 5)
    assert pool.run_step(call("compare", {"left": 2, "op": "lt", "right": 3}), never) == ("true", True)
    assert pool.run_step(call("length", {"value": [1, 2, 3]}), never) == ("ok", 3)
    assert pool.run_step(call("collect", {"items": [1, None, 1], "unique": True, "drop_nulls": True}),
                         never) == ("ok", [1])
    with pytest.raises(TaskError, match="division by zero"):
        pool.run_step(call("math", {"op": "div", "a": 1, "b": 0}), never)
    assert started_processes(pool) == 0


def test_the_result_is_a_copy_not_the_input(pool: StepProcessPool) -> None:
    value = {"list": [1, 2]}
    label, result = pool.run_step(call("set_value", {"value": value}), never)
    assert (label, result) == ("ok", value) and result is not value and result["list"] is not value["list"]


def test_the_result_size_limit_holds_in_the_worker(pool: StepProcessPool) -> None:
    with pytest.raises(StepResultTooLargeError) as caught:
        pool.run_step(call("set_value", {"value": "x" * 200}, max_result_bytes=100), never)
    assert caught.value.code == "step.result_too_large" and caught.value.details["size_bytes"] == 202


def test_a_step_later_than_its_timeout_fails_with_step_timeout(pool: StepProcessPool) -> None:
    with pytest.raises(StepTimeoutError) as caught:
        pool.run_step(call("math", {"op": "sum", "values": list(range(100))}, timeout=1e-9), never)
    assert caught.value.code == "step.timeout" and caught.value.details["node_id"] == "node"


def test_a_larger_input_and_other_tasks_go_to_a_step_process(pool: StepProcessPool) -> None:
    big = call("math", {"op": "sum", "values": list(range(400))})
    assert not runs_in_worker(big, LIMIT) and runs_in_worker(big, 10 * LIMIT)
    assert not runs_in_worker(call("math", {"op": "add", "a": 1, "b": 2}), 0)  # 0: the setting turns it off
    transform = call("transform", {"expression": "a", "data": {"a": 1}})
    assert "transform" not in IN_WORKER_TASKS and not runs_in_worker(transform, 10 * LIMIT)
    # The engine asks the same question to run such steps in its own thread (``runtime.StepExecutor``).
    assert pool.runs_inline("math", {"op": "add", "a": 1, "b": 2}) and not pool.runs_inline("math", big.payload)
    assert not pool.runs_inline("transform", transform.payload)
    assert pool.run_step(big, never) == ("ok", sum(range(400)))
    assert started_processes(pool) == 1
    assert pool.run_step(transform, never) == ("ok", 1)

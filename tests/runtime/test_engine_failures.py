"""Retries with backoff, the error route, and failures that leave a complete RunState and trace."""

from __future__ import annotations

from typing import Any

import pytest

from runtime import Engine, RunState, WorkflowBuilder
from runtime.checkpoint import InMemoryCheckpointer
from runtime.engine import EngineOptions
from runtime.errors import NodeFailedError
from runtime.paths import input_path, state_path
from runtime.state import SequentialIds
from runtime.tasks import TaskRegistry
from tests.runtime.engine_helpers import ANY_LIST, ITEMS


def flaky_registry(failures: int, *, is_async: bool = False) -> tuple[TaskRegistry, list[int]]:
    """A task that raises ``failures`` times, then returns its attempt number (seen via RuntimeContext)."""
    from runtime.state import RuntimeContext

    calls: list[int] = []
    reg = TaskRegistry()
    if is_async:
        @reg.task(name="flaky")
        async def flaky_async(ctx: RuntimeContext):  # type: ignore[no-untyped-def]
            calls.append(ctx.attempt)
            if len(calls) <= failures:
                raise ConnectionError(f"try {len(calls)} failed")
            return ctx.attempt
    else:
        @reg.task(name="flaky")
        def flaky_sync(ctx: RuntimeContext):  # type: ignore[no-untyped-def]
            calls.append(ctx.attempt)
            if len(calls) <= failures:
                raise ConnectionError(f"try {len(calls)} failed")
            return ctx.attempt

    @reg.task
    def bad_result() -> int:
        return "not a number"  # type: ignore[return-value]

    @reg.task
    def echo(value: Any = None) -> Any:
        return value

    return reg, calls


def flaky_workflow(*, attempts: int, error_route: bool = False, task: str = "flaky") -> Any:
    g = WorkflowBuilder("flaky", state_schema={"type": "object", "properties": {
        "attempt": {"type": "integer"}, "problem": {}, "after": {}}})
    outputs = [{"source": ".", "target": "attempt"}]
    if error_route:
        outputs.append({"source": "error", "target": "problem"})
    f = g.use(task, id="f", retry={"max_attempts": attempts, "backoff_seconds": 0.001}, output=outputs)
    if error_route:
        handler = g.use("echo", id="handler", input=[{"target": "value", "path": state_path("problem", "type")}],
                        output=[{"source": ".", "target": "after"}])
        g.set_route(f, "error", handler)
    g.output("attempt", state_path("attempt"))
    return g.build()


@pytest.mark.parametrize("is_async", [False, True])
def test_retry_until_success_records_each_failed_attempt(is_async: bool) -> None:
    reg, calls = flaky_registry(2, is_async=is_async)
    result = Engine(registry=reg, options=EngineOptions(ids=SequentialIds())).run(flaky_workflow(attempts=3), {})
    assert result.status == "completed", result.error
    assert calls == [1, 2, 3]
    assert result.state["attempt"] == 3
    retries = [e for e in result.trace if e.kind == "node_retrying"]
    assert [(e.attempt, e.summary) for e in retries] == [
        (1, "ConnectionError: try 1 failed"), (2, "ConnectionError: try 2 failed")]
    (completed,) = [e for e in result.trace if e.kind == "node_completed"]
    assert completed.attempt == 3


def test_exhausted_retries_take_the_error_route_with_the_error_payload() -> None:
    reg, calls = flaky_registry(5)
    result = Engine(reg, EngineOptions(ids=SequentialIds())).run(flaky_workflow(attempts=2, error_route=True), {})
    assert result.status == "completed", result.error
    assert calls == [1, 2]
    problem = result.state["problem"]
    assert problem["type"] == "ConnectionError"
    assert problem["message"] == "try 2 failed"
    assert problem["node_id"] == "f" and problem["attempts"] == 2
    assert problem["frame_id"] == "frame_0000000000001" and problem["scope_id"] == "root"
    # The error payload is the node's result on the error route: a whole-result binding receives it too.
    assert result.state["attempt"] == {"error": problem}
    assert result.state["after"] == "ConnectionError"
    failed = [e for e in result.trace if e.kind == "node_failed"]
    assert [(e.node_id, e.label, e.attempt) for e in failed] == [("f", "error", 2)]


def test_failure_without_error_route_fails_the_run_naming_node_frame_and_cause() -> None:
    reg, _ = flaky_registry(5)
    cp = InMemoryCheckpointer()
    result = Engine(reg, EngineOptions(ids=SequentialIds(), checkpointer=cp)).run(flaky_workflow(attempts=2), {})
    assert result.status == "failed"
    error = result.error
    assert isinstance(error, NodeFailedError) and error.code == "node.failed"
    assert error.details["node_id"] == "f"
    assert error.details["frame_id"] == "frame_0000000000001"
    assert error.details["index"] is None
    assert error.details["attempts"] == 2
    assert error.details["cause"] == {"type": "ConnectionError", "message": "try 2 failed"}
    assert "'f'" in error.message and "ConnectionError" in error.message and "2 attempts" in error.message
    assert isinstance(error.__cause__, ConnectionError)
    # the run state is complete: the failed frame is still there, and so is the trace
    rs = cp.load(result.run_id)
    assert rs.status == "failed" and rs.error == error.to_dict()
    assert rs.frames["frame_0000000000001"].status == "failed"
    assert [e.kind for e in result.trace][-2:] == ["node_failed", "run_failed"]
    assert [e.kind for e in cp.load_events(result.run_id)] == [e.kind for e in result.trace]


def test_invalid_task_result_fails_without_retrying() -> None:
    reg, _ = flaky_registry(0)
    result = Engine(registry=reg).run(flaky_workflow(attempts=3, task="bad_result"), {})
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.details["cause"]["code"] == "task.result_invalid"
    assert result.error.details["attempts"] == 1
    assert not [e for e in result.trace if e.kind == "node_retrying"]


def test_input_validation_failure_takes_the_error_route() -> None:
    reg = TaskRegistry()

    @reg.task
    def needs_int(x: int):  # type: ignore[no-untyped-def]
        return x

    @reg.task
    def echo(value: Any = None) -> Any:
        return value

    g = WorkflowBuilder("bad_input", input_schema={"type": "object", "properties": {"x": {}}},
                        state_schema={"type": "object", "properties": {"error": {}}})
    n = g.use("needs_int", id="n", input=[{"target": "x", "path": input_path("x")}],
              output=[{"source": "error", "target": "error"}])
    h = g.use("echo", id="h")
    g.set_route(n, "error", h)
    result = Engine(registry=reg).run(g.build(), {"x": "nope"})
    assert result.status == "completed"
    assert result.state["error"]["code"] == "input.invalid"
    assert "'x'" in result.state["error"]["message"]


def failing_item_workflow(concurrency: int) -> Any:
    reg = TaskRegistry()

    @reg.task
    def check(x: int) -> int:
        if x < 0:
            raise ValueError(f"negative: {x}")
        return x

    g = WorkflowBuilder("items", input_schema={"type": "object", "properties": {"xs": ITEMS}},
                        state_schema={"type": "object", "properties": {"ok": ANY_LIST}})
    each = g.foreach("each", input_path("xs"), max_concurrency=concurrency)
    c = g.use("check", id="c", input=[{"target": "x", "path": each.item}],
              output=[{"source": ".", "target": "ok", "mode": "append"}])
    g.chain(each, "loop", c, "ok", each)
    return reg, g.build()


def test_failing_item_names_its_index_and_other_commits_of_the_superstep_stand() -> None:
    reg, workflow = failing_item_workflow(3)
    result = Engine(registry=reg, options=EngineOptions(ids=SequentialIds())).run(workflow, {"xs": [1, -2, 3]})
    assert result.status == "failed"
    details = result.error.details  # type: ignore[union-attr]
    assert details["node_id"] == "c" and details["index"] == 1
    assert details["activation_id"].startswith("act_")
    assert details["cause"]["message"] == "negative: -2"
    assert "item 1" in result.error.message  # type: ignore[union-attr]
    # items 0 and 2 ran in the same superstep; their writes were committed in order
    assert result.state["ok"] == [1, 3]
    rs = result.run_state
    failed = rs.frames[details["frame_id"]]
    assert failed.status == "failed" and failed.metadata["foreach"]["index"] == 1
    assert rs.activations[details["activation_id"]].completed == 2


def test_failed_run_state_round_trips_through_json() -> None:
    reg, workflow = failing_item_workflow(1)
    result = Engine(registry=reg).run(workflow, {"xs": [-1]})
    again = RunState.from_json(result.run_state.model_dump_json())
    assert again == result.run_state
    assert Engine(registry=reg).continue_run(again, workflow=workflow).status == "failed"

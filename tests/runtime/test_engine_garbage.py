"""An engine call leaves no reference cycle behind: what it made is freed when the caller drops the result.

Objects in a cycle wait for CPython's cyclic collector, whose collections walk every young object; a cycle of
the run loop, its scheduler and its RunState at every call made those collections a tenth of a one-node run's
time (issue 33). These tests keep the collector's help unneeded for every kind of call, and for every way a step
fails (a caught exception holds its traceback, whose frames hold the step that keeps the exception: a cycle per
failed step until the engine let the traceback go).
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pydantic_core import from_json

from runtime import Engine, RunResult, Workflow, WorkflowBuilder
from runtime.checkpoint import InMemoryCheckpointer
from runtime.engine import StepCall
from runtime.paths import input_path, state_path
from runtime.tasks import TaskRegistry
from tests.runtime.engine_helpers import XS_INPUT, asking, engine, registry, single_foreach


@pytest.fixture
def saved_garbage() -> Iterator[list[Any]]:
    """``gc.garbage`` while every object the collector frees is kept there instead, to be looked at."""
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield gc.garbage
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def cyclic_objects(garbage: list[Any], call: Callable[[], Any], *, modules: str) -> list[str]:
    """The objects of ``modules`` (a package name's start) that only the cyclic collector freed after ``call()``,
    by type name.

    What is in a cycle already (the test's own setup: registering tasks builds pydantic models and their JSON
    schemas, whose objects form cycles) is freed for real first. Clearing ``garbage`` under ``DEBUG_SAVEALL`` does
    not free it: its cycles are still cycles, found again by every later collection, and they would be counted
    as the call's."""
    gc.set_debug(0)
    garbage.clear()
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    call()
    gc.collect()
    return sorted({f"{type(o).__module__}.{type(o).__qualname__}" for o in garbage
                   if type(o).__module__.startswith(modules)})


def cyclic_runtime_objects(garbage: list[Any], call: Callable[[], Any]) -> list[str]:
    """The runtime's objects that only the cyclic collector freed after ``call()``, by type name."""
    return [name.rsplit(".", 1)[-1] for name in cyclic_objects(garbage, call, modules="runtime")]


def one_step() -> Workflow:
    g = WorkflowBuilder("one", input_schema={"type": "object", "properties": {"x": {"type": "integer"}}})
    g.use("double", id="d", input=[{"target": "x", "path": input_path("x")}], output=[{"target": "y"}])
    g.output("y", state_path("y"))
    return g.build()


def child() -> Workflow:
    g = WorkflowBuilder("child", input_schema={"type": "object", "properties": {"x": {"type": "integer"}}})
    g.use("double", id="d", input=[{"target": "x", "path": input_path("x")}], output=[{"target": "y"}])
    g.output("y", state_path("y"))
    return g.build()


def calls_child_per_item() -> Workflow:
    g = WorkflowBuilder("caller", input_schema=XS_INPUT)
    each = g.foreach("each", input_path("xs"), results="ys")
    call = g.subgraph("child", id="call", input=[{"target": "x", "path": each.item}])
    g.chain(each, "loop", call, "ok", each)
    g.output("ys", state_path("ys"))
    return g.build()


@pytest.mark.parametrize("checkpointed", [False, True], ids=["no checkpointer", "in-memory checkpointer"])
@pytest.mark.parametrize("case", ["one step", "foreach", "subgraph per item", "interrupt and resume", "async run"])
def test_an_engine_call_leaves_nothing_for_the_cyclic_collector(saved_garbage: list[Any], case: str,
                                                                 checkpointed: bool) -> None:
    eng = engine(workflows={"child": child()}, checkpointer=InMemoryCheckpointer() if checkpointed else None)
    workflow = {"one step": one_step, "foreach": single_foreach, "subgraph per item": calls_child_per_item,
                "interrupt and resume": asking, "async run": one_step}[case]()

    def call() -> None:
        if case == "one step":
            assert eng.run(workflow, {"x": 2}).output == {"y": 4}
        elif case == "foreach":
            assert len(eng.run(workflow, {"orders": [1, 2, 3]}).output["seen"]) == 3
        elif case == "subgraph per item":
            assert eng.run(workflow, {"xs": [1, 2]}).output == {"ys": [{"y": 2}, {"y": 4}]}
        elif case == "interrupt and resume":
            paused = eng.run(workflow, {"xs": [5]})
            done = eng.resume(paused.run_state, paused.interrupts[0].interrupt_id, {"a": 1}, workflow=workflow)
            assert done.output == {"answers": [{"a": 1}]}
        else:
            assert asyncio.run(eng.arun(workflow, {"x": 3})).output == {"y": 6}

    call()  # the first call makes what the engine keeps (its compiled plans, its thread pool)
    assert cyclic_runtime_objects(saved_garbage, call) == []


def failing(kind: str) -> tuple[Workflow, dict[str, Any]]:
    """A workflow whose one step fails as ``kind`` says, and its input."""
    g = WorkflowBuilder("fails", input_schema={"type": "object", "properties": {"x": {}}},
                        state_schema={"type": "object", "properties": {"y": {}}})
    task, bound, retry = {
        "raises": ("boom", [], None),
        "retried then raises": ("boom", [], {"max_attempts": 2, "backoff_seconds": 0.0}),
        "invalid input": ("double", [{"target": "x", "path": input_path("x")}], None),
        "invalid result": ("not_an_int", [], None),
    }[kind]
    g.use(task, id="n", input=bound, output=[{"target": "y"}], **({"retry": retry} if retry else {}))
    g.output("y", state_path("y"))
    return g.build(), {"x": "not a number" if kind == "invalid input" else 1}


@pytest.mark.parametrize("kind", ["raises", "retried then raises", "invalid input", "invalid result"])
def test_a_failed_call_builds_no_json_schema_or_type_adapter(saved_garbage: list[Any], kind: str) -> None:
    """A step's failure is described from what registration built once (the task's input schema, its result
    adapter), never from a schema or a ``TypeAdapter`` made for it: their pydantic objects form cycles, so one
    made per failure would be left here."""
    tasks = registry()

    @tasks.task
    def not_an_int() -> int:
        return "seven"  # type: ignore[return-value]

    eng = engine(registry=tasks, checkpointer=InMemoryCheckpointer())
    workflow, given = failing(kind)

    def call() -> None:
        result = eng.run(workflow, given)
        assert result.status == "failed" and result.error is not None and result.error.code == "node.failed"

    call()
    assert cyclic_objects(saved_garbage, call, modules="pydantic") == []


class _InlineSteps:
    """A step executor that runs each step in the calling thread (``StepCall.run_here``), as a step process runs
    it on the other side: a failed step reaches the engine as ``run_step``'s exception."""

    def __init__(self, tasks: TaskRegistry) -> None:
        self.tasks = tasks

    def run_step(self, call: StepCall, cancelled: Callable[[], bool]) -> tuple[str, Any]:
        label, data = call.run_here(self.tasks)
        return label, from_json(data)


def failing_calls(kind: str) -> tuple[Engine, Callable[[], RunResult], str]:
    """An engine, one call of it in which steps fail as ``kind`` says, and the status that call ends with."""
    tasks = registry()

    @tasks.task
    def odd_fails(x: int) -> int:
        if x % 2:
            raise ValueError(f"item {x} is odd")
        return x

    @tasks.task
    async def odd_fails_async(x: int) -> int:
        if x % 2:
            raise ValueError(f"item {x} is odd")
        return x

    options: dict[str, Any] = {}
    if kind == "step executor":
        options["step_executor"] = _InlineSteps(tasks)
    elif kind == "step timeout":
        options["step_timeout"] = 1e-9  # every sync step is over its limit once it returns
    elif kind == "retry suspends":
        options["sleep_in_process"] = False
    eng = engine(registry=tasks, checkpointer=InMemoryCheckpointer(), **options)
    xs = {"xs": list(range(6))}
    if kind in ("one step raises", "one async step raises", "async run"):
        g = WorkflowBuilder("one", input_schema=XS_INPUT)
        g.use("odd_fails_async" if kind == "one async step raises" else "odd_fails", id="n",
              input=[{"target": "x", "value": 1}])
        workflow = g.build()
        if kind == "async run":
            return eng, lambda: asyncio.run(eng.arun(workflow, xs)), "failed"
        return eng, lambda: eng.run(workflow, xs), "failed"
    if kind == "binding error":  # the step succeeds; writing its result fails the run
        g = WorkflowBuilder("binding", input_schema=XS_INPUT,
                            state_schema={"type": "object", "properties": {"ys": {}}})
        g.use("echo", id="n", input=[{"target": "value", "value": 1}],
              output=[{"source": ".", "target": "ys", "mode": "extend"}])
        workflow = g.build()
        return eng, lambda: eng.run(workflow, xs), "failed"
    # A foreach whose odd items fail: tolerated, or each taken by the body's error route.
    g = WorkflowBuilder("items", input_schema=XS_INPUT)
    each = g.foreach("each", input_path("xs"), results="out", max_concurrency=3,
                     tolerated_failure_count=None if kind == "error route" else 6)
    retry = {"max_attempts": 2, "backoff_seconds": 0.0 if kind == "retried" else 60.0}
    body = g.use("odd_fails_async" if kind == "async items" else "odd_fails", id="body",
                 input=[{"target": "x", "path": each.item}],
                 **({"retry": retry} if kind in ("retried", "retry suspends") else {}))
    g.chain(each, "loop", body, "ok", each)
    if kind == "error route":
        handled = g.use("echo", id="handled", input=[{"target": "value", "value": None}])
        g.set_route(body, "error", handled)
        g.set_route(handled, "ok", each)
    g.output("out", state_path("out"))
    workflow = g.build()
    return eng, lambda: eng.run(workflow, xs), "waiting" if kind == "retry suspends" else "completed"


@pytest.mark.parametrize("kind", ["one step raises", "one async step raises", "async run", "binding error",
                                  "tolerated items", "async items", "error route", "retried", "retry suspends",
                                  "step executor", "step timeout"])
def test_failed_steps_leave_nothing_for_the_cyclic_collector(saved_garbage: list[Any], kind: str) -> None:
    """A step that raises leaves no reference cycle: its exception is kept (the failed run's cause, or described
    on the error route, in the tolerated item's record and in the trace) without its traceback, whose frames held
    the engine's record of the step, which holds the exception. With a cycle per failure, a foreach of 100k items
    whose failures its tolerance or an error route takes left the cyclic collector 100k cycles to find, each
    keeping its step's payload alive until then. The collector is off during the calls: whatever it finds
    afterwards, the calls left."""
    eng, call, status = failing_calls(kind)

    def calls() -> None:
        for _ in range(2):
            result = call()
            assert result.status == status, result.error
            if status == "failed":
                assert result.error is not None
                cause = result.error.__cause__
                assert type(cause).__name__ in str(result.error) and str(cause) in str(result.error)
                # An async step run by a sync call raised in no other exception's handling (the event loop is
                # made when none runs): nothing unrelated is chained to it.
                assert cause.__context__ is None

    calls()  # the first call makes what the engine keeps (its compiled plans, its thread pool)
    gc.disable()
    try:
        left = cyclic_objects(saved_garbage, calls, modules="")
    finally:
        gc.enable()
    assert left == []

"""Same input and same task results give the same state and the same trace order, whatever the timing."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from typing import Any

from runtime import Engine, WorkflowBuilder
from runtime.engine import EngineOptions
from runtime.paths import input_path, state_path
from runtime.state import SequentialIds
from runtime.tasks import TaskRegistry
from tests.runtime.engine_helpers import ANY_LIST

GROUPS = {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}


def jitter_registry() -> TaskRegistry:
    reg = TaskRegistry()

    @reg.task
    async def async_jitter(x: Any) -> Any:
        await asyncio.sleep(random.random() * 0.01)
        return x

    @reg.task
    def sync_jitter(x: Any) -> Any:
        time.sleep(random.random() * 0.005)
        return x

    @reg.task
    def child_step(x: int) -> int:
        time.sleep(random.random() * 0.002)
        return x * 10

    return reg


def child() -> Any:
    g = WorkflowBuilder("child", input_schema={"type": "object", "properties": {"x": {"type": "integer"}}},
                        state_schema={"type": "object", "properties": {"y": {"type": "integer"}}})
    g.use("child_step", id="step", input=[{"target": "x", "path": input_path("x")}], output=[{"target": "y"}])
    g.output("y", state_path("y"))
    return g.build()


def busy_workflow() -> Any:
    """groups (2 at a time) -> items (3 at a time) -> async jitter -> sync jitter -> subgraph -> back."""
    g = WorkflowBuilder("busy", input_schema={"type": "object", "properties": {"groups": GROUPS}},
                        state_schema={"type": "object", "properties": {"log": ANY_LIST, "totals": ANY_LIST}})
    groups = g.foreach("groups", input_path("groups"), as_="group", max_concurrency=2)
    items = g.foreach("items", groups.item, as_="item", max_concurrency=3)
    a = g.use("async_jitter", id="a", input=[{"target": "x", "path": items.item}],
              output=[{"source": ".", "target": "log", "mode": "append"}])
    s = g.use("sync_jitter", id="s", input=[{"target": "x", "path": items.index}],
              output=[{"source": ".", "target": "log", "mode": "append"}])
    call = g.subgraph("child", id="call", input=[{"target": "x", "path": items.item}],
                      output=[{"source": "y", "target": "totals", "mode": "append"}])
    after = g.use("async_jitter", id="after", input=[{"target": "x", "path": groups.index}],
                  output=[{"source": ".", "target": "log", "mode": "append"}])
    g.chain(groups, "loop", items, "loop", a, "ok", s, "ok", call, "ok", items, "done", after, "ok", groups)
    g.output("log", state_path("log"))
    g.output("totals", state_path("totals"))
    return g.build()


INPUT = {"groups": [[1, 2, 3, 4], [5], [], [6, 7]]}


def _run(*, use_async: bool = False, max_workers: int | None = None) -> Any:
    eng = Engine(registry=jitter_registry(), options=EngineOptions(workflows={"child": child()}, ids=SequentialIds(),
                                                                   max_workers=max_workers))
    if use_async:
        return asyncio.run(eng.arun(busy_workflow(), INPUT))
    return eng.run(busy_workflow(), INPUT)


def test_random_task_timings_give_identical_state_and_trace_order() -> None:
    runs = [_run() for _ in range(4)]
    first = runs[0]
    assert first.status == "completed", first.error
    # items advance in lock step: 1, 2, 3 (group 0) and 5 (group 1) finish their subgraph in one superstep
    assert first.output["totals"] == [10, 20, 30, 50, 40, 60, 70]
    for other in runs[1:]:
        assert other.run_state.model_dump(mode="json") == first.run_state.model_dump(mode="json")
        assert [e.identity() for e in other.trace] == [e.identity() for e in first.trace]


def test_sync_and_async_drivers_and_pool_sizes_agree() -> None:
    baseline = _run()
    for other in (_run(use_async=True), _run(max_workers=1), _run(use_async=True, max_workers=2)):
        assert other.run_state.model_dump(mode="json") == baseline.run_state.model_dump(mode="json")
        assert [e.identity() for e in other.trace] == [e.identity() for e in baseline.trace]


def test_commit_order_is_frame_order_not_completion_order() -> None:
    reg = TaskRegistry()
    gate = threading.Event()

    @reg.task
    async def slow_first(x: int) -> int:
        if x == 0:
            await asyncio.sleep(0.05)  # finishes last, yet commits first
            gate.set()
        return x

    g = WorkflowBuilder("order", input_schema={"type": "object", "properties": {"xs": {"type": "array"}}},
                        state_schema={"type": "object", "properties": {"log": ANY_LIST}})
    each = g.foreach("each", input_path("xs"), max_concurrency=5)
    t = g.use("slow_first", id="t", input=[{"target": "x", "path": each.item}],
              output=[{"source": ".", "target": "log", "mode": "append"}])
    g.chain(each, "loop", t, "ok", each)
    result = Engine(registry=reg).run(g.build(), {"xs": [0, 1, 2, 3, 4]})
    assert gate.is_set()
    assert result.state["log"] == [0, 1, 2, 3, 4]
    completed = [e.index for e in result.trace if e.kind == "node_completed"]
    assert completed == [0, 1, 2, 3, 4]

"""Execution of a superstep: async tasks concurrently, sync tasks in the pool, and both drivers."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

from runtime import Engine, RunState, WorkflowBuilder
from runtime.checkpoint import AsyncCheckpointer, InMemoryCheckpointer
from runtime.engine import EngineOptions
from runtime.paths import input_path, state_path
from runtime.state import SequentialIds, TraceEvent
from runtime.tasks import TaskRegistry
from tests.runtime.engine_helpers import ANY_LIST, ITEMS


def fan_out(task: str, concurrency: int) -> Any:
    g = WorkflowBuilder("fan", input_schema={"type": "object", "properties": {"xs": ITEMS}},
                        state_schema={"type": "object", "properties": {"out": ANY_LIST}})
    each = g.foreach("each", input_path("xs"), max_concurrency=concurrency)
    t = g.use(task, id="t", input=[{"target": "x", "path": each.item}],
              output=[{"source": ".", "target": "out", "mode": "append"}])
    g.chain(each, "loop", t, "ok", each)
    g.output("out", state_path("out"))
    return g.build()


def rendezvous_registry(parties: int) -> tuple[TaskRegistry, list[str]]:
    """Tasks that only finish when ``parties`` of them are in flight at once (else they time out)."""
    reg = TaskRegistry()
    threads: list[str] = []
    barrier = threading.Barrier(parties, timeout=10)
    arrived: list[int] = []
    released = asyncio.Event()

    @reg.task
    def sync_meet(x: int) -> int:
        threads.append(threading.current_thread().name)
        barrier.wait()
        return x

    @reg.task
    async def async_meet(x: int) -> int:
        arrived.append(x)
        if len(arrived) == parties:
            released.set()
        await asyncio.wait_for(released.wait(), timeout=10)
        return x

    return reg, threads


def test_sync_tasks_of_one_superstep_run_in_parallel_threads() -> None:
    reg, threads = rendezvous_registry(3)
    result = Engine(reg, EngineOptions(ids=SequentialIds())).run(fan_out("sync_meet", 3), {"xs": [1, 2, 3]})
    assert result.status == "completed", result.error
    assert result.output == {"out": [1, 2, 3]}
    assert len(set(threads)) == 3


def test_async_tasks_of_one_superstep_run_concurrently_from_sync_run() -> None:
    reg, _ = rendezvous_registry(4)
    result = Engine(registry=reg).run(fan_out("async_meet", 4), {"xs": [4, 3, 2, 1]})
    assert result.status == "completed", result.error
    assert result.output == {"out": [4, 3, 2, 1]}  # commit order is item order, whatever finished first


def test_async_tasks_run_concurrently_under_arun() -> None:
    reg, _ = rendezvous_registry(3)
    result = asyncio.run(Engine(registry=reg).arun(fan_out("async_meet", 3), {"xs": [1, 2, 3]}))
    assert result.status == "completed", result.error


def test_sync_tasks_under_arun_use_the_pool() -> None:
    reg, threads = rendezvous_registry(2)
    result = asyncio.run(Engine(registry=reg).arun(fan_out("sync_meet", 2), {"xs": [1, 2]}))
    assert result.status == "completed", result.error
    assert all(name.startswith("trellis-task") for name in threads)


def test_a_lone_sync_task_runs_in_the_calling_thread() -> None:
    reg = TaskRegistry()
    where: list[str] = []

    @reg.task
    def here(x: int) -> int:
        where.append(threading.current_thread().name)
        return x

    Engine(registry=reg).run(fan_out("here", 1), {"xs": [1, 2]})
    assert set(where) == {threading.current_thread().name}


def test_sync_run_called_inside_a_running_event_loop_still_runs_async_tasks() -> None:
    reg, _ = rendezvous_registry(2)

    async def inside() -> Any:
        return Engine(registry=reg).run(fan_out("async_meet", 2), {"xs": [1, 2]})

    assert asyncio.run(inside()).status == "completed"


def test_mixed_sync_and_async_tasks_in_one_superstep() -> None:
    reg = TaskRegistry()

    @reg.task
    def plain(x: int) -> int:
        return x + 100

    @reg.task
    async def waits(x: int) -> int:
        await asyncio.sleep(0)
        return x + 200

    @reg.task(labels=("sync", "async"))
    def pick(x: int) -> Any:
        from runtime.tasks import Route

        return Route("sync" if x % 2 else "async", x)

    g = WorkflowBuilder("mixed", input_schema={"type": "object", "properties": {"xs": ITEMS}},
                        state_schema={"type": "object", "properties": {"out": ANY_LIST}})
    each = g.foreach("each", input_path("xs"), max_concurrency=4)
    p = g.use("pick", id="p", input=[{"target": "x", "path": each.item}])
    s = g.use("plain", id="s", input=[{"target": "x", "path": each.item}],
              output=[{"source": ".", "target": "out", "mode": "append"}])
    a = g.use("waits", id="a", input=[{"target": "x", "path": each.item}],
              output=[{"source": ".", "target": "out", "mode": "append"}])
    g.chain(each, "loop", p, "sync", s, "ok", each)
    g.chain(p, "async", a, "ok", each)
    g.output("out", state_path("out"))
    workflow = g.build()
    sync_result = Engine(registry=reg, options=EngineOptions(ids=SequentialIds())).run(workflow, {"xs": [1, 2, 3, 4]})
    async_result = asyncio.run(Engine(reg, EngineOptions(ids=SequentialIds())).arun(workflow, {"xs": [1, 2, 3, 4]}))
    assert sync_result.output == async_result.output == {"out": [101, 202, 103, 204]}
    assert [e.identity() for e in sync_result.trace] == [e.identity() for e in async_result.trace]


def test_engine_close_shuts_the_pool_down_and_can_be_reused() -> None:
    reg, _ = rendezvous_registry(2)
    with Engine(registry=reg) as eng:
        assert eng.run(fan_out("sync_meet", 2), {"xs": [1, 2]}).status == "completed"
    reg2, _ = rendezvous_registry(2)
    eng.registry = reg2
    eng._compiled.clear()
    assert eng.run(fan_out("sync_meet", 2), {"xs": [1, 2]}).status == "completed"


class AwaitedCheckpointer(InMemoryCheckpointer):
    """An ``AsyncCheckpointer``: ``asave`` stores through the in-memory store, noting which method saved."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def save(self, run_state: RunState, events: Sequence[TraceEvent] = ()) -> None:
        self.calls.append("save")
        super().save(run_state, events)

    async def asave(self, run_state: RunState, events: Sequence[TraceEvent] = ()) -> None:
        await asyncio.sleep(0)
        self.calls.append("asave")
        InMemoryCheckpointer.save(self, run_state, events)


def test_async_calls_await_an_async_checkpointers_asave_and_sync_calls_save() -> None:
    reg, _ = rendezvous_registry(1)
    cp = AwaitedCheckpointer()
    assert isinstance(cp, AsyncCheckpointer) and not isinstance(InMemoryCheckpointer(), AsyncCheckpointer)
    result = asyncio.run(Engine(reg, EngineOptions(checkpointer=cp)).arun(fan_out("async_meet", 1), {"xs": [1, 2]}))
    assert result.status == "completed", result.error
    assert cp.calls and set(cp.calls) == {"asave"}
    assert cp.load(result.run_id).status == "completed"
    cp.calls.clear()
    assert Engine(reg, EngineOptions(checkpointer=cp)).run(fan_out("sync_meet", 1), {"xs": [3]}).status == "completed"
    assert cp.calls and set(cp.calls) == {"save"}

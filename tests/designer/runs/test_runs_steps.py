"""The designer's step processes (``designer.runs.steps``): real child processes that run task steps, killed on
timeout and cancel, held to a memory limit and a result size, with failures that go through the engine's retry
policies and error routes like any other task failure."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from designer.runs.steps import StepProcessPool
from designer.workflows import catalog
from runtime import Engine, WorkflowBuilder
from runtime.engine import EngineOptions, StepCall
from runtime.errors import StepCancelledError, StepMemoryError, StepResultTooLargeError, StepTimeoutError, TaskError
from runtime.state import RuntimeContext

STEP_TASKS = "tests.designer.step_tasks"
BOMB = " | ".join(["[@,@][]"] * 25) + " | length(@)"


@pytest.fixture(scope="module")
def pool() -> Iterator[StepProcessPool]:
    from django.conf import settings

    modules = [*catalog.task_modules(), STEP_TASKS] if settings.configured else [STEP_TASKS]
    step_pool = StepProcessPool(processes=2, task_modules=modules, max_memory_mb=64)
    yield step_pool
    step_pool.close()


def call(task: str, payload: dict[str, Any], *, timeout: float | None = 30, max_result_bytes: int | None = 10_000,
         index: int | None = None) -> StepCall:
    context = RuntimeContext(node_id="node", frame_id="frame_7")
    if index is not None:
        from runtime.state import ForeachContext

        context.foreach = {"each": ForeachContext("each", "act_1", "frame_6", "root", "lin_1", index, "item")}
    return StepCall.of(task, payload, context, timeout=timeout, max_result_bytes=max_result_bytes)


def never() -> bool:
    return False


def alive(pid: int) -> bool:
    """Running (a zombie is not: an orphan may wait a while to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except FileNotFoundError:
        return False


def test_a_step_runs_in_a_reused_child_process(pool: StepProcessPool) -> None:
    first = pool.run_step(call("whoami", {}), never)[1]
    second = pool.run_step(call("whoami", {}), never)[1]
    assert first != os.getpid() and first == second  # one process served both: per-step cost is a pipe round trip
    assert pool.run_step(call("math", {"op": "add", "a": 2, "b": 3}), never) == ("ok", 5)
    with pytest.raises(TaskError, match="division by zero"):
        pool.run_step(call("math", {"op": "div", "a": 1, "b": 0}), never)
    assert pool.run_step(call("whoami", {}), never)[1] == first  # a task's own failure keeps its process


def test_the_jmespath_bomb_is_killed_at_its_timeout(pool: StepProcessPool) -> None:
    pid = pool.run_step(call("whoami", {}), never)[1]
    with pytest.raises(StepTimeoutError) as caught:
        pool.run_step(call("transform", {"expression": BOMB, "data": [1]}, timeout=1, index=3), never)
    assert caught.value.to_dict() | {"message": ""} == {
        "code": "step.timeout", "message": "", "task": "transform", "limit_seconds": 1, "node_id": "node",
        "frame_id": "frame_7", "index": 3, "attempt": 1}
    assert "item 3" in caught.value.message
    # The pool hands out its most recently used process, so the bomb ran in ``pid``: now gone, and replaced.
    assert not alive(pid)
    assert pool.run_step(call("whoami", {}), never)[1] != pid


def test_a_memory_bomb_fails_with_step_memory_and_its_process_is_replaced(pool: StepProcessPool) -> None:
    pid = pool.run_step(call("whoami", {}), never)[1]
    with pytest.raises(StepMemoryError) as caught:
        pool.run_step(call("hog", {"megabytes": 1024}), never)
    assert caught.value.code == "step.memory" and caught.value.details["limit_mb"] == 64
    assert not alive(pid)
    assert pool.run_step(call("hog", {"megabytes": 8}), never) == ("ok", 8 * 1024 * 1024)


#: Doubles its (shared) list 24 times, then writes it out as JSON: 2**24 copies of "xxxxxxxxxx", far over 64 MB.
MEMORY_BOMB = " | ".join(["[@,@]"] * 24) + " | to_string(@)"


@pytest.mark.parametrize("task, payload", [
    ("transform", {"expression": MEMORY_BOMB, "data": "xxxxxxxxxx"}),  # the builtin lets the limit through
    ("hog_quietly", {"megabytes": 1024}),  # a task that catches MemoryError and raises its own error
    ("hog_silently", {"megabytes": 1024}),  # a task that catches MemoryError and returns normally
])
def test_a_step_over_its_memory_is_step_memory_whatever_the_task_does_with_the_error(
        pool: StepProcessPool, task: str, payload: dict[str, Any]) -> None:
    with pytest.raises(StepMemoryError) as caught:
        pool.run_step(call(task, payload, index=4), never)
    error = caught.value
    assert (error.code, error.details["limit_mb"], error.details["node_id"], error.details["index"]) == (
        "step.memory", 64, "node", 4)
    assert "at node 'node'" in error.message and "item 4" in error.message and "64 MB" in error.message
    assert pool.run_step(call("whoami", {}), never)[0] == "ok"  # a fresh process serves the next step


def test_an_oversized_result_fails_with_its_size(pool: StepProcessPool) -> None:
    with pytest.raises(StepResultTooLargeError) as caught:
        pool.run_step(call("big", {"size": 20_000}, max_result_bytes=10_000), never)
    assert caught.value.details["size_bytes"] == 20_002 and caught.value.details["limit_bytes"] == 10_000
    assert pool.run_step(call("big", {"size": 9_998}, max_result_bytes=10_000), never) == ("ok", "x" * 9_998)


def test_cancel_kills_a_blocked_step(pool: StepProcessPool) -> None:
    pid = pool.run_step(call("whoami", {}), never)[1]
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    with pytest.raises(StepCancelledError):
        pool.run_step(call("snooze", {"seconds": 300}, timeout=None), cancel.is_set)
    assert not alive(pid)


def limited_document(task: str, payload: dict[str, Any], *, retry: int = 1, error_route: bool = False,
                     timeout: float | None = None) -> Any:
    graph = WorkflowBuilder("limited", state_schema={"type": "object", "properties": {"out": {}}})
    node = graph.use(task, id="step", input=[{"target": k, "value": v} for k, v in payload.items()],
                     output=[{"source": ".", "target": "out"}], retry={"max_attempts": retry},
                     timeout_seconds=timeout)
    if error_route:
        after = graph.use("set_value", id="after", input=[{"target": "value", "value": "handled"}])
        graph.set_route(node, "error", after)
    graph.output("out", "state.out")
    return graph.build()


def engine(pool: StepProcessPool, **options: Any) -> Engine:
    return Engine(catalog.build_registry([*catalog.task_modules(), STEP_TASKS]), EngineOptions(step_executor=pool,
                                                                                               **options))


@pytest.mark.django_db
def test_limit_failures_in_step_processes_go_through_retry_and_error_routes(pool: StepProcessPool) -> None:
    # Retry: the first attempt exhausts memory, the second (in a fresh process) succeeds.
    retried = engine(pool).run(limited_document("hog_first_attempt", {"megabytes": 1024}, retry=2), {})
    assert retried.status == "completed", retried.error
    assert retried.output == {"out": 2}
    [retrying] = [e for e in retried.trace if e.kind == "node_retrying"]
    assert "StepMemoryError" in str(retrying.summary)

    # Error route: the timeout (node setting below the engine cap) becomes the node's error payload.
    routed = engine(pool, step_timeout=30).run(
        limited_document("transform", {"expression": BOMB, "data": [1]}, timeout=1, error_route=True), {})
    assert routed.status == "completed", routed.error
    error = routed.state["out"]["error"]
    assert error["code"] == "step.timeout" and error["node_id"] == "step" and error["attempts"] == 1

    too_big = engine(pool, max_result_bytes=1000).run(
        limited_document("big", {"size": 5000}, retry=2, error_route=True), {})
    error = too_big.state["out"]["error"]
    assert error["code"] == "step.result_too_large" and error["attempts"] == 2

    # No error route: the run fails, its error naming the node and the step's cause.
    failed = engine(pool).run(limited_document("hog", {"megabytes": 1024}), {})
    assert failed.status == "failed" and failed.error is not None
    assert failed.error.details["node_id"] == "step" and failed.error.details["cause"]["code"] == "step.memory"


ORPHAN_SCRIPT = """
import os, sys, threading
import django
django.setup()
from designer.workflows import catalog
from designer.runs.steps import StepProcessPool
from runtime.engine import StepCall
from runtime.state import RuntimeContext

pool = StepProcessPool(processes=1, task_modules=[*catalog.task_modules(), "tests.designer.step_tasks"],
                       max_memory_mb=None)
context = RuntimeContext(node_id="n", frame_id="f")
pid = pool.run_step(StepCall.of("whoami", {}, context), lambda: False)[1]
threading.Thread(target=pool.run_step, args=(StepCall.of("snooze", {"seconds": 300}, context), lambda: False),
                 daemon=True).start()
print(pid, flush=True)
threading.Event().wait()
"""


def test_a_running_step_dies_with_its_worker_even_when_the_worker_is_killed() -> None:
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    worker = subprocess.Popen([sys.executable, "-c", ORPHAN_SCRIPT], cwd=root, env=env, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert worker.stdout is not None
        step_pid = int(worker.stdout.readline())
        assert alive(step_pid)
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait()
    deadline = time.monotonic() + 30  # only guards against a hang: the step would otherwise sleep 300 s
    while alive(step_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(step_pid)


def test_a_cancel_while_a_step_runs_kills_it_and_cancels_the_run_without_committing_the_superstep(
        pool: StepProcessPool) -> None:
    from runtime.checkpoint import InMemoryCheckpointer

    graph = WorkflowBuilder("napping", state_schema={"type": "object", "properties": {"first": {}, "slept": {}}})
    first = graph.use("math", id="first", input=[{"target": "op", "value": "add"}, {"target": "a", "value": 1},
                                                 {"target": "b", "value": 1}],
                      output=[{"source": ".", "target": "first"}])
    nap = graph.use("snooze", id="nap", input=[{"target": "seconds", "value": 300}],
                    output=[{"source": ".", "target": "slept"}])
    graph.set_route(first, "ok", nap)
    checkpointer = InMemoryCheckpointer()
    cancel = threading.Event()
    timers: list[threading.Timer] = []

    def after_superstep(state: Any, events: Any) -> None:
        # Cancel half a second after "first" is committed, not after the run began: on a loaded machine the first
        # step alone can take longer than that, and the cancel would then land before "nap" ever started.
        if not timers and any((e.kind, e.node_id) == ("node_completed", "first") for e in events):
            timers.append(threading.Timer(0.5, cancel.set))
            timers[0].start()

    eng = engine(pool, checkpointer=checkpointer, should_cancel=lambda run_id: cancel.is_set(),
                 on_superstep=after_superstep)
    result = eng.run(graph.build(), {})

    assert result.status == "cancelled"
    assert result.state == {"first": 2}
    assert result.trace[-1].kind == "run_cancelled"
    assert [(e.kind, e.node_id) for e in result.trace if e.node_id == "nap"] == [("node_started", "nap")]
    saved = checkpointer.load(result.run_id)
    # The interrupted superstep's frame is queued again, as before the step: the saved state stays consistent.
    assert saved.status == "cancelled" and [saved.frames[f].node_id for f in saved.ready] == ["nap"]
    assert eng.continue_run(saved).status == "cancelled"


@pytest.mark.django_db
def test_a_payload_holding_the_whole_context_reaches_the_step_process(pool: StepProcessPool) -> None:
    graph = WorkflowBuilder("whole-context", input_schema={"type": "object", "properties": {"xs": {"type": "array"}}},
                            state_schema={"type": "object", "properties": {"seen": {"type": "array", "default": []}}})
    loop = graph.foreach("each", "input.xs")
    node = graph.use("set_value", id="look", input=[{"target": "value", "path": "context"}],
                     output=[{"source": "loop_item", "target": "seen", "mode": "append"}])
    graph.chain(loop, "loop", node, "ok", loop)
    result = engine(pool).run(graph.build(), {"xs": ["a", "b"]})
    assert result.status == "completed", result.error
    assert result.state["seen"] == ["a", "b"]


def test_a_pool_whose_zygote_was_killed_starts_a_new_one() -> None:
    import signal

    own = StepProcessPool(processes=1, task_modules=[STEP_TASKS], max_memory_mb=None)
    try:
        before = own.run_step(call("whoami", {}), never)[1]
        zygote_pid = own._zygote.process.pid
        assert zygote_pid is not None
        os.kill(zygote_pid, signal.SIGKILL)
        own._zygote.process.join()
        deadline = time.monotonic() + 30  # its step processes die with it (PR_SET_PDEATHSIG), soon after
        while alive(before) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not alive(before)
        after = own.run_step(call("whoami", {}), never)[1]
        assert after != before
        assert own._zygote.process.pid != zygote_pid
    finally:
        own.close()


def test_step_processes_hold_none_of_the_descriptors_their_worker_had_open(tmp_path: Any) -> None:
    import socket

    # Open in the "worker" before its pool forks the zygote, so the zygote inherits them.
    worker_file = open(tmp_path / "worker-only.log", "w")  # noqa: SIM115
    listener = socket.create_server(("127.0.0.1", 0))
    listener_target = f"socket:[{os.fstat(listener.fileno()).st_ino}]"
    step_pool = StepProcessPool(processes=1, task_modules=[STEP_TASKS], max_memory_mb=None)
    try:
        step_pid = step_pool.run_step(call("whoami", {}), never)[1]
        zygote_pid = step_pool._zygote.process.pid
        assert zygote_pid is not None
        for pid in (zygote_pid, step_pid):
            targets = {int(fd): os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
            assert str(tmp_path / "worker-only.log") not in targets.values()
            assert listener_target not in targets.values()
        # The step process holds its stdio, its one socket to the worker, and /dev/null in place of the rest.
        held = [target for fd, target in targets.items() if fd > 2]
        assert [target for target in held if target != "/dev/null" and not target.startswith("socket:")] == []
        assert len([target for target in held if target.startswith("socket:")]) == 1
        assert step_pool.run_step(call("whoami", {}), never)[1] == step_pid  # and it still works
    finally:
        step_pool.close()
        worker_file.close()
        listener.close()

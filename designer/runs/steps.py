"""Task steps run in child processes the worker can kill: the runtime's ``StepExecutor`` for the designer.

Why processes: a task step is code run on data from a document (a JMESPath
expression, a template), and Python cannot stop a thread. A step that runs
past its time limit, or is cancelled, must really end so the worker can go on
with the next run; only killing a process guarantees that. And only a process
can be held to a memory limit (``RLIMIT_AS``).

Why a pool: forking per step would cost milliseconds per step. Instead a
process serves one step after another (per-step cost: pickling the call and
the result through a pipe), one process per concurrency slot, started on first
use. A process that was killed (timeout, cancel) or hit its memory limit is
thrown away and replaced on next use. Processes are forked from a zygote
forked once from the worker (``step_process``), so a replacement is a fork of
a warm single-threaded process, not a new interpreter.

Limits (settings, documented in the README):

* ``TRELLIS_STEP_TIMEOUT_SECONDS``: the engine's cap on every step's
  start-to-close timeout (``runtime.engine.EngineOptions(step_timeout=)``). On expiry the
  process is killed and the step fails with ``step.timeout``.
* ``TRELLIS_STEP_MAX_MEMORY_MB``: address space a step may add to its idle
  process; past it allocation fails and the step fails with ``step.memory``.
* ``TRELLIS_STEP_MAX_RESULT_BYTES``: size of a result as JSON
  (``step.result_too_large``); checked in the child, and the worker never reads
  a reply much longer than that.
* ``TRELLIS_STEP_PROCESSES``: step processes (and so concurrent steps) per worker.

Steps that need no process (``IN_WORKER_TASKS``, ``TRELLIS_STEP_IN_WORKER_MAX_INPUT_BYTES``): a few built-ins
do work linear in their input and nothing else (arithmetic, a comparison, a length, a copy, tidying a list),
and a round trip through a step process costs 10-50 times what they do (a collected foreach of ``math`` steps
spent most of its time per item in the pipe). With an input of at most that many bytes as JSON they run in the
worker, under the same limits: their memory and time are a small multiple of that bounded input (microseconds,
kilobytes), so neither limit can be reached, and should a step still be late it fails with ``step.timeout`` as
it would have in a process; the result is checked against ``TRELLIS_STEP_MAX_RESULT_BYTES`` and handed back as
a copy (parsed from its JSON), as a process's would be. Every other task, and these with a larger input, runs
in a step process: ``transform`` and ``template`` are left out because what they cost depends on the
expression or template as well as on the input.
"""

from __future__ import annotations

import atexit
import logging
import multiprocessing
import os
import pickle
import signal
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from multiprocessing import reduction
from multiprocessing.connection import Connection
from typing import Any

from pydantic_core import PydanticSerializationError, from_json, to_json

from designer.conf import trellis
from designer.core.periodic import PeriodicThread
from designer.models import Run
from designer.runs.step_process import REPLY_OVERHEAD_BYTES, zygote
from designer.workflows import catalog
from runtime.engine import StepCall
from runtime.errors import StepCancelledError, TaskError
from runtime.tasks import builtin_registry

logger = logging.getLogger("designer.runs")

#: How often a waiting step looks at the cancel flag and its deadline.
POLL_SECONDS = 0.05
#: How often a running run's cancel flag is read from the database while a step runs.
CANCEL_POLL_SECONDS = 1.0


#: The built-ins a worker runs itself when their input is small (see the module's docstring). Their names cannot be
#: taken by another task: the catalogue refuses a task module that registers one of them again.
IN_WORKER_TASKS = frozenset({"math", "compare", "length", "set_value", "collect"})
_BUILTINS = builtin_registry()


def payload_fits(task: str, payload: Any, max_input_bytes: int) -> bool:
    """Whether ``task`` is one of ``IN_WORKER_TASKS`` and ``payload`` at most ``max_input_bytes`` as JSON."""
    if not max_input_bytes or task not in IN_WORKER_TASKS:
        return False
    try:
        return len(to_json(payload)) <= max_input_bytes
    except (PydanticSerializationError, TypeError, ValueError):  # not plain JSON: the process path copes with it
        return False


def runs_in_worker(call: StepCall, max_input_bytes: int) -> bool:
    """Whether the pool runs ``call`` in the worker rather than in a step process."""
    return payload_fits(call.task, call.payload, max_input_bytes)


def run_in_worker(call: StepCall, memory_mb: int | None) -> tuple[str, Any]:
    """Run a ``runs_in_worker`` step in this thread, held to its limits as a step process would hold it."""
    started = time.monotonic()
    try:
        label, data = call.run_here(_BUILTINS)
    except MemoryError:
        raise call.out_of_memory(memory_mb) from None
    if call.timeout is not None and time.monotonic() - started > call.timeout:
        raise call.timed_out()
    return label, from_json(data)


class _Zygote:
    """The process that forks step processes (``step_process.zygote``), and the worker's line to it."""

    def __init__(self, task_modules: Sequence[str], memory_mb: int | None) -> None:
        self.conn, far_end = multiprocessing.Pipe(duplex=True)
        self.process = multiprocessing.get_context("fork").Process(
            target=zygote, args=(far_end, self.conn.fileno(), list(task_modules), memory_mb),
            name="trellis-step-zygote", daemon=True)
        with warnings.catch_warnings():
            # Python warns about forking a threaded process. The zygote only reads its pipe and forks, so no
            # lock another thread held at the fork is ever taken; run_worker creates it before its threads.
            warnings.simplefilter("ignore", DeprecationWarning)
            self.process.start()
        far_end.close()
        self._lock = threading.Lock()

    def fork(self) -> tuple[int, Connection]:
        with self._lock:
            self.conn.send_bytes(b"fork")
            pid = self.conn.recv()
            return pid, Connection(reduction.recv_handle(self.conn))

    def close(self) -> None:
        self.conn.close()
        self.process.join(5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


class _StepProcess:
    """One step process and the worker's end of its pipe."""

    def __init__(self, zygote_process: _Zygote) -> None:
        self.pid, self.conn = zygote_process.fork()
        self.usable = True

    def is_alive(self) -> bool:
        """Running, and not a zombie: a step process whose zygote died is reaped by whoever adopts it, if at
        all (PID 1 of a container may never do it)."""
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as stat:
                state = stat.read().rsplit(b")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError, IndexError):
            return False
        except OSError:  # no /proc: ask the kernel whether the pid exists
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return False
            return True
        return state not in (b"Z", b"X")

    def kill(self) -> None:
        """End the process for good; returns once it is gone (its zygote reaps it)."""
        self.usable = False
        self.conn.close()
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 5
        while self.is_alive() and time.monotonic() < deadline:
            time.sleep(0.001)

    def run(self, call: StepCall, cancelled: Callable[[], bool], memory_mb: int | None) -> tuple[str, Any]:
        conn = self.conn
        try:
            message = pickle.dumps(call)
        except (TypeError, pickle.PicklingError):
            message = pickle.dumps(call.portable())
        conn.send_bytes(message)
        deadline = time.monotonic() + call.timeout if call.timeout is not None else None
        while not conn.poll(POLL_SECONDS if deadline is None
                            else max(0.0, min(POLL_SECONDS, deadline - time.monotonic()))):
            if cancelled():
                self.kill()
                raise StepCancelledError(f"the run was cancelled while node {call.context.node_id!r} ran",
                                         node_id=call.context.node_id, frame_id=call.context.frame_id)
            if deadline is not None and time.monotonic() >= deadline:
                self.kill()
                raise call.timed_out()
        limit = call.max_result_bytes + REPLY_OVERHEAD_BYTES if call.max_result_bytes is not None else None
        try:
            reply = pickle.loads(conn.recv_bytes(limit))
        except (EOFError, OSError) as exc:
            # The pipe is unusable now either way. multiprocessing says "bad message length" for a reply longer
            # than the limit (the child checks its result's size itself, so only a huge exception gets here).
            self.kill()
            if type(exc) is OSError and "message length" in str(exc):
                raise call.too_large(None) from None
            raise TaskError(f"node {call.context.node_id!r}: the step's process ended without an answer",
                            node_id=call.context.node_id) from None
        kind = reply[0]
        if kind == "ok":
            return reply[1], from_json(reply[2])
        if kind == "memory":
            self.kill()  # a process that ran out of memory is not trusted with the next step
            raise call.out_of_memory(memory_mb)
        raise pickle.loads(reply[1])


class StepProcessPool:
    """A ``runtime.StepExecutor``: each step in one of ``processes`` reusable child processes."""

    def __init__(self, *, processes: int, task_modules: Sequence[str], max_memory_mb: int | None,
                 in_worker_max_input_bytes: int = 0) -> None:
        self.processes = processes
        self.task_modules = tuple(task_modules)
        self.max_memory_mb = max_memory_mb
        #: ``IN_WORKER_TASKS`` steps with an input up to this size (JSON bytes) run in the worker; 0: none does.
        self.in_worker_max_input_bytes = in_worker_max_input_bytes
        self._zygote = _Zygote(self.task_modules, max_memory_mb)
        #: Processes a run that already holds one leaves free for other runs (``run_worker`` with several slots
        #: sets 1): a step of another team's run then starts at once instead of after a long step ends.
        self.reserve = 0
        self._free = processes
        self._held: Counter[str] = Counter()
        self._turn = threading.Condition()
        self._idle: list[_StepProcess] = []
        self._lock = threading.Lock()
        self._closed = False

    def _take(self) -> _StepProcess:
        with self._lock:
            while self._idle:
                child = self._idle.pop()
                if child.is_alive():
                    return child
                child.kill()
            try:
                return _StepProcess(self._zygote)
            except (EOFError, OSError):
                # The zygote died (killed by the OOM killer, say): start another one rather than fail every step.
                logger.warning("the step processes' zygote is gone; starting a new one")
                self._zygote.close()
                self._zygote = _Zygote(self.task_modules, self.max_memory_mb)
                return _StepProcess(self._zygote)

    def _give_back(self, child: _StepProcess) -> None:
        with self._lock:
            if child.usable and not self._closed and child.is_alive():
                self._idle.append(child)
                return
        child.kill()

    def _may_take(self, run_id: str) -> bool:
        return self._free > (self.reserve if self._held[run_id] else 0)

    def runs_inline(self, task: str, payload: Any) -> bool:
        """The engine's question (``runtime.StepExecutor``): whether ``run_step`` runs this step in the calling
        thread, so that the engine runs such steps one after another instead of handing each to a thread."""
        return payload_fits(task, payload, self.in_worker_max_input_bytes)

    def run_step(self, call: StepCall, cancelled: Callable[[], bool]) -> tuple[str, Any]:
        if runs_in_worker(call, self.in_worker_max_input_bytes):
            return run_in_worker(call, self.max_memory_mb)
        run_id = call.context.run_id
        with self._turn:  # waiting for a free process does not count against the step's timeout
            self._turn.wait_for(lambda: self._may_take(run_id))
            self._free -= 1
            self._held[run_id] += 1
        try:
            child = self._take()
            try:
                return child.run(call, cancelled, self.max_memory_mb)
            finally:
                self._give_back(child)
        finally:
            with self._turn:
                self._free += 1
                self._held[run_id] -= 1
                if not self._held[run_id]:
                    del self._held[run_id]
                self._turn.notify_all()

    def warm_up(self) -> None:
        """Start every process now rather than on first use."""
        started = [self._take() for _ in range(self.processes)]
        for child in started:
            self._give_back(child)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for child in idle:
            child.kill()
        self._zygote.close()


def engine_options() -> dict[str, Any]:
    """The ``runtime.Engine`` options that put a worker's steps in the shared pool, under the step limits."""
    return {"step_executor": shared_pool(), "max_workers": trellis.STEP_PROCESSES,
            "step_timeout": trellis.STEP_TIMEOUT_SECONDS, "max_result_bytes": trellis.STEP_MAX_RESULT_BYTES}


_shared: StepProcessPool | None = None
_shared_lock = threading.Lock()


def shared_pool() -> StepProcessPool:
    """The worker's pool, kept across runs; rebuilt when its settings (or the task modules) change."""
    global _shared
    wanted = (trellis.STEP_PROCESSES, tuple(catalog.task_modules()), trellis.STEP_MAX_MEMORY_MB)
    with _shared_lock:
        pool = _shared
        if pool is None or (pool.processes, pool.task_modules, pool.max_memory_mb) != wanted:
            if pool is not None:
                pool.close()
            pool = _shared = StepProcessPool(processes=wanted[0], task_modules=wanted[1], max_memory_mb=wanted[2])
        pool.in_worker_max_input_bytes = trellis.STEP_IN_WORKER_MAX_INPUT_BYTES
    return pool


@atexit.register
def _close_shared() -> None:
    if _shared is not None:
        _shared.close()


class CancelWatch(PeriodicThread):
    """Reads a running run's cancel flag every ``CANCEL_POLL_SECONDS`` while it executes and calls ``on_cancel``
    once it is set, so a cancel reaches a step that is still running (checkpoints only read it between steps).
    A read that fails (a locked database) does not end the watch; the next checkpoint still reads the flag."""

    failure = "run %s: reading the cancel flag failed; retrying"

    def __init__(self, run_id: int, on_cancel: Callable[[], None], interval: float = CANCEL_POLL_SECONDS) -> None:
        super().__init__(f"cancel-watch-{run_id}")
        self.run_id = run_id
        self.on_cancel = on_cancel
        self.interval = interval

    def tick(self) -> bool:
        if Run.objects.filter(pk=self.run_id, cancel_requested=True).exists():
            self.on_cancel()
            return True
        return False

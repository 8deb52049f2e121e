"""The child side of the step process pool (``designer.runs.steps``).

A *zygote* process is forked from the worker once, when the pool is created
(in ``run_worker``, before the worker starts any thread). It builds the task
registry and then only forks: each step process is a fork of the zygote, so
starting or replacing one costs a fork of a warm, single-threaded process,
not a new interpreter and Django set-up, and no step process is forked from
a process with other threads running. The zygote lets go of every descriptor it
inherits from the worker (its database sockets, log files, listening sockets) before
it loads any task (``release_inherited_fds``), so no step can reach them. The zygote
reaps its children itself (``SIGCHLD`` ignored); the pool kills them by pid.

Step messages are pickled bytes. In: a ``runtime.StepCall``. Out: ``("ok",
label, json_bytes)``, ``("memory",)`` or ``("error", pickled_exception)``.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import pickle
import resource
import signal
import sys
from collections.abc import Collection, Sequence
from multiprocessing import reduction
from multiprocessing.connection import Connection
from typing import Any

from runtime.errors import TaskError

_PR_SET_PDEATHSIG = 1

#: Room for the reply's framing beyond the result's JSON (label, pickle overhead).
REPLY_OVERHEAD_BYTES = 64 * 1024


def _registry(task_modules: Sequence[str]) -> Any:
    from designer.workflows.catalog import build_registry

    return build_registry(task_modules)


def _address_space_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def limit_memory(max_memory_mb: int | None) -> None:
    """Cap the address space at what the process holds now plus ``max_memory_mb``: the limit is the room a
    step has, whatever the idle interpreter and its libraries take."""
    if max_memory_mb is None:
        return
    limit = _address_space_bytes() + max_memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _open_fds() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:  # no /proc: every number up to the limit (fstat below skips the unused ones)
        return list(range(min(resource.getrlimit(resource.RLIMIT_NOFILE)[0], 65_536)))


def release_inherited_fds(keep: Collection[int]) -> None:
    """Let go of every open descriptor but stdin/stdout/stderr and ``keep``.

    Each is pointed at /dev/null rather than closed: Python objects copied from the worker still hold the
    numbers (a database connection, say), and one of them closing or writing to its descriptor later must not
    hit a pipe that reused the number; /dev/null absorbs it. The worker's sockets and files themselves are no
    longer held by this process, so a step cannot reach them and they close when the worker closes them."""
    _release([fd for fd in _open_fds() if fd > 2 and fd not in keep])


def _release(fds: Collection[int]) -> None:
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        for fd in fds:
            if fd == devnull:
                continue
            try:
                os.fstat(fd)  # the directory listing's own descriptor, closed by now, is skipped
            except OSError:
                continue
            os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def _die_with_parent() -> None:
    """Ask Linux to kill this step process when the zygote ends (which it does when the worker ends, even by
    SIGKILL): a step still running then would otherwise run on, unlimited in time, with nobody to answer."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: such a step ends when it next reads its closed pipe
        pass


def _portable(exc: BaseException) -> bytes:
    """The exception pickled, or when it does not survive a round trip, a ``TaskError`` that says what it was."""
    try:
        data = pickle.dumps(exc)
        pickle.loads(data)
        return data
    except Exception:  # noqa: BLE001 - any exception type may fail to pickle in its own way
        return pickle.dumps(TaskError(f"{type(exc).__name__}: {exc}", type=type(exc).__name__))


def out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while handling a ``MemoryError`` (or from one): Python keeps the error being
    handled as ``__context__`` even under ``raise ... from None``, so a task cannot hide it that way."""
    seen: set[int] = set()
    stack: list[BaseException | None] = [exc]
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        if isinstance(current, MemoryError):
            return True
        seen.add(id(current))
        stack += [current.__cause__, current.__context__]
    return False


#: Set when a MemoryError is raised anywhere in the step process during the current call. A task that catches the
#: error and returns normally leaves no trace of it in its result, yet it hit the step's limit: the flag makes the
#: limit's code (step.memory) win. A one-slot list, so the hook sets it without allocating.
_MEMORY_HIT = [False]
#: One of the tool ids ``sys.monitoring`` reserves for tools other than debuggers, profilers and coverage.
_MONITORING_TOOL = 4


def _on_raise(code: Any, offset: int, exception: BaseException) -> None:
    if isinstance(exception, MemoryError):
        _MEMORY_HIT[0] = True


def watch_memory_errors() -> bool:
    """Have every raised MemoryError noted in ``_MEMORY_HIT`` (``sys.monitoring``'s RAISE event, Python 3.12+:
    it sees an exception where it is raised, before any ``except`` can swallow it, and costs nothing until one is
    raised). Returns whether the watch is on."""
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is None:
        return False
    if monitoring.get_tool(_MONITORING_TOOL) is None:
        monitoring.use_tool_id(_MONITORING_TOOL, "trellis-step-memory")
        monitoring.register_callback(_MONITORING_TOOL, monitoring.events.RAISE, _on_raise)
    monitoring.set_events(_MONITORING_TOOL, monitoring.events.RAISE)
    return True


def serve(conn: Connection, registry: Any) -> None:
    """Answer step calls until the pool closes the connection (or kills this process)."""
    watch_memory_errors()
    while True:
        try:
            message = conn.recv_bytes()
        except (EOFError, OSError):
            return
        reply: tuple[Any, ...]
        _MEMORY_HIT[0] = False
        try:
            call = pickle.loads(message)
            label, data = call.run_here(registry)
            # A task that caught its MemoryError and returned still went over the step's memory.
            reply = ("memory",) if _MEMORY_HIT[0] else ("ok", label, data)
        except MemoryError:
            # Leaving the except block drops the traceback and with it whatever filled the memory.
            reply = ("memory",)
        except Exception as exc:  # noqa: BLE001 - every task failure goes back to the engine
            # A task that caught the MemoryError and raised its own error still hit the step's limit: the
            # limit's code (step.memory) wins over whatever the task made of it.
            reply = ("memory",) if out_of_memory(exc) or _MEMORY_HIT[0] else ("error", _portable(exc))
        try:
            conn.send_bytes(pickle.dumps(reply))
        except MemoryError:
            conn.send_bytes(pickle.dumps(("memory",)))


def zygote(control: Connection, worker_end: int, task_modules: Sequence[str], max_memory_mb: int | None) -> None:
    """Fork one step process per request on ``control``; answer with its pid, then its end of a new pipe.

    ``worker_end`` is the worker's end of ``control``, inherited by the fork: closed, so that the worker
    closing its end (or dying) is seen here as the end of input."""
    os.close(worker_end)
    # multiprocessing's pipe to the worker that tells it this process has ended: kept, so join() still works.
    parent = multiprocessing.parent_process()
    sentinel = parent.sentinel if parent is not None else None
    release_inherited_fds({control.fileno(), *([sentinel] if sentinel is not None else [])})
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # step processes are reaped without waiting for them
    registry = _registry(task_modules)
    while True:
        try:
            control.recv_bytes()
        except (EOFError, OSError):  # the worker is gone
            return
        parent_end, child_end = multiprocessing.Pipe(duplex=True)
        pid = os.fork()
        if pid == 0:  # the step process
            code = 0
            try:
                control.close()
                parent_end.close()
                if sentinel is not None:  # the zygote's, not this process's: the worker waits on the zygote
                    _release([sentinel])
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                _die_with_parent()
                limit_memory(max_memory_mb)
                serve(child_end, registry)
            except BaseException:  # noqa: BLE001 - a step process must never return into the zygote's loop
                code = 1
            finally:
                os._exit(code)
        child_end.close()
        control.send(pid)
        reduction.send_handle(control, parent_end.fileno(), os.getppid())
        parent_end.close()

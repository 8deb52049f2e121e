"""The child side of the step process pool (``designer.runs.steps``): one long-lived process that runs task
steps one at a time, as the pool sends them.

Kept free of Django imports at module level: the pool's forkserver preloads
``designer.runs.step_preload`` (which sets Django up once), and each child is a
fork of that server, so starting a child costs a fork, not an interpreter.

Messages are pickled bytes. In: a ``runtime.StepCall``. Out: ``("ok", label,
json_bytes)``, ``("memory",)`` or ``("error", pickled_exception)``.
"""

from __future__ import annotations

import os
import pickle
import resource
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any

#: Room for the reply's framing beyond the result's JSON (label, pickle overhead).
REPLY_OVERHEAD_BYTES = 64 * 1024


def _registry(task_modules: Sequence[str]) -> Any:
    import django
    from django.apps import apps

    if not apps.ready:  # the forkserver's preload normally did this already
        django.setup()
    from designer.catalog import build_registry

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


def _portable(exc: BaseException) -> bytes:
    """The exception pickled, or when it does not survive a round trip, a ``TaskError`` that says what it was."""
    try:
        data = pickle.dumps(exc)
        pickle.loads(data)
        return data
    except Exception:  # noqa: BLE001 - any exception type may fail to pickle in its own way
        from runtime import TaskError

        return pickle.dumps(TaskError(f"{type(exc).__name__}: {exc}", type=type(exc).__name__))


def serve(conn: Connection, task_modules: Sequence[str], max_memory_mb: int | None) -> None:
    """Answer step calls until the pool closes the connection (or kills this process)."""
    registry = _registry(task_modules)
    limit_memory(max_memory_mb)
    while True:
        try:
            message = conn.recv_bytes()
        except (EOFError, OSError):
            return
        reply: tuple[Any, ...]
        try:
            call = pickle.loads(message)
            label, data = call.run_here(registry)
            reply = ("ok", label, data)
        except MemoryError:
            # Leaving the except block drops the traceback and with it whatever filled the memory.
            reply = ("memory",)
        except Exception as exc:  # noqa: BLE001 - every task failure goes back to the engine
            reply = ("error", _portable(exc))
        try:
            conn.send_bytes(pickle.dumps(reply))
        except MemoryError:
            conn.send_bytes(pickle.dumps(("memory",)))

"""Tasks that misbehave on purpose, for the step-limit tests (``TRELLIS_TASK_MODULES``)."""

from __future__ import annotations

import os
import time

from runtime.state import RuntimeContext
from runtime.tasks import TaskRegistry

registry = TaskRegistry()


@registry.task
def hog(megabytes: int) -> int:
    """Hold ``megabytes`` of memory at once (a memory bomb when it is more than a step may use)."""
    block = bytearray(megabytes * 1024 * 1024)
    return len(block)


@registry.task
def hog_quietly(megabytes: int) -> int:
    """A memory bomb that catches the MemoryError and fails in words of its own, as a careless task might."""
    try:
        return len(bytearray(megabytes * 1024 * 1024))
    except MemoryError:
        raise RuntimeError("could not make the buffer") from None


@registry.task
def hog_silently(megabytes: int) -> int:
    """A memory bomb that catches the MemoryError and returns as if nothing happened, hiding it in its result."""
    try:
        return len(bytearray(megabytes * 1024 * 1024))
    except MemoryError:
        return 0


@registry.task
def big(size: int) -> str:
    return "x" * size


@registry.task
def snooze(seconds: float) -> float:
    """A sync step that blocks: only killing its process ends it early."""
    time.sleep(seconds)
    return seconds


@registry.task
def whoami() -> int:
    return os.getpid()


@registry.task
def hog_first_attempt(megabytes: int, ctx: RuntimeContext) -> int:
    if ctx.attempt == 1:
        return len(bytearray(megabytes * 1024 * 1024))
    return ctx.attempt


@registry.task
def flaky(fail: int, ctx: RuntimeContext) -> int:
    """Fails its first ``fail`` attempts; returns the attempt that succeeded."""
    if ctx.attempt <= fail:
        raise RuntimeError(f"attempt {ctx.attempt} failed on purpose")
    return ctx.attempt


@registry.task
def flaky_once(key: str, folder: str) -> str:
    """Count each call in ``folder/<key>.calls``; a key starting with ``bad`` fails on its first call only,
    like a flaky service (files, because every attempt may run in another worker process)."""
    calls = os.path.join(folder, f"{key}.calls")
    with open(calls, "a", encoding="utf-8") as handle:
        handle.write("call\n")
    with open(calls, encoding="utf-8") as handle:
        count = len(handle.readlines())
    if key.startswith("bad") and count == 1:
        raise ConnectionError(f"{key}: service unavailable")
    return key.upper()


@registry.task
def snooze_logged(seconds: float, folder: str) -> float:
    """``snooze``, then note when it ended (a line of epoch seconds in ``folder``/ends): when the step really
    ended, which the run's events (written when the engine takes the result) only follow."""
    time.sleep(seconds)
    with open(os.path.join(folder, "ends"), "a") as log:
        log.write(f"{time.time()}\n")
    return seconds

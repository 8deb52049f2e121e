"""Tasks for the distributed foreach tests (``TRELLIS_TASK_MODULES``): each execution is tallied in a file, so a
test can count how often each item ran across worker processes, crashes included."""

from __future__ import annotations

import os
import time
from typing import Any

from runtime.state import RuntimeContext
from runtime.tasks import TaskRegistry

registry = TaskRegistry()


@registry.task
def tally(x: int, ctx: RuntimeContext, pause: float = 0.0) -> dict[str, Any]:
    """Note ``<index>`` in ``$TRELLIS_TEST_TALLY``, wait ``pause`` seconds, return ``2 * x`` with what it saw;
    a negative ``x`` fails."""
    entry = ctx.foreach["each"]
    path = os.environ.get("TRELLIS_TEST_TALLY")
    if path:
        with open(path, "a", encoding="utf-8") as tally_file:
            tally_file.write(f"{entry.index}\n")
    time.sleep(pause)
    if x < 0:
        raise ValueError(f"cannot take {x}")
    return {"doubled": 2 * x, "index": entry.index, "item": entry.item, "activation_id": entry.activation_id,
            "alias": ctx.to_mapping().get("number")}


@registry.task
def backing_off(x: int, ctx: RuntimeContext) -> int:
    """Note ``<index>:<attempt>`` in ``$TRELLIS_TEST_TALLY.flaky``; an odd ``x`` fails its first attempt."""
    entry = ctx.foreach["each"]
    path = os.environ.get("TRELLIS_TEST_TALLY")
    if path:
        with open(f"{path}.flaky", "a", encoding="utf-8") as tally_file:
            tally_file.write(f"{entry.index}:{ctx.attempt}\n")
    if x % 2 and ctx.attempt < 2:
        raise RuntimeError(f"item {entry.index}: attempt {ctx.attempt} fails")
    return 10 * x


@registry.task
def flaky(x: int, ctx: RuntimeContext) -> int:
    """``2 * |x|``; a negative ``x`` fails the first time its index runs (tallied like ``tally``), like a flaky
    service, and succeeds when run again."""
    index = ctx.foreach["each"].index
    path = os.environ["TRELLIS_TEST_TALLY"]
    seen = 0
    if os.path.exists(path):
        with open(path, encoding="utf-8") as tally_file:
            seen = tally_file.read().split().count(str(index))
    with open(path, "a", encoding="utf-8") as tally_file:
        tally_file.write(f"{index}\n")
    if x < 0 and not seen:
        raise ConnectionError(f"{x}: service unavailable")
    return 2 * abs(x)


@registry.task
def summarize_results(values: list[Any]) -> dict[str, Any]:
    """What a node after the foreach saw of its result list."""
    return {"sum": sum(v for v in values if v is not None), "missing": sum(v is None for v in values)}


def _wait_for_file(path: str, what: str) -> None:
    deadline = time.monotonic() + 120
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: the test never created {path}")
        time.sleep(0.02)


@registry.task
def gated(x: int, ctx: RuntimeContext, pause: float = 0.0) -> int:
    """``2 * x``, tallied like ``tally``; an item of odd index waits until ``$TRELLIS_TEST_TALLY.open`` exists,
    so a test decides when the second item of each batch of two goes on. ``pause`` is not used."""
    index = ctx.foreach["each"].index
    path = os.environ["TRELLIS_TEST_TALLY"]
    with open(path, "a", encoding="utf-8") as tally_file:
        tally_file.write(f"{index}\n")
    if index % 2:
        _wait_for_file(f"{path}.open", f"item {index}")
    return 2 * x


@registry.task
def fails_once(shaky: bool, ctx: RuntimeContext) -> bool:
    """When ``shaky``: fails its first attempt (the node's retry then backs off), and its second waits until
    ``$TRELLIS_TEST_TALLY.wake`` exists, so a test decides when it ends. Otherwise returns at once."""
    if shaky and ctx.attempt < 2:
        raise ConnectionError("shaky: first attempt fails")
    if shaky:
        _wait_for_file(os.environ["TRELLIS_TEST_TALLY"] + ".wake", "the retry")
    return shaky

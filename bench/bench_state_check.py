"""What checking a loaded RunState costs (runtime._integrity), beside parsing the same checkpoint; and what the
cheap read the designer uses to pick an engine call and to count progress (``runtime.run_summary``) costs beside
the full parse it replaces.

Every checkpoint the engine or the designer loads goes through ``check_run_state``; it must stay linear in the
live structure (frames) and must not walk a foreach's item snapshot. Real checkpoints: a foreach paused at an
interrupt in each running item. Timings are medians of a few repetitions, printed, never asserted; the second
table gives CPU time (process_time) beside wall time, since the machine is shared.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from runtime import Engine, RunState, WorkflowBuilder
from runtime._integrity import check_run_state
from runtime.engine import EngineOptions
from runtime.inspect import activation_progress, run_summary
from runtime.state import SequentialIds
from runtime.tasks import TaskRegistry

CASES = ((10, 1), (100_000, 1), (100_000, 100), (100_000, 1_000))


def _paused(items: int, concurrency: int) -> str:
    graph = WorkflowBuilder("paused", input_schema={"type": "object", "properties": {
        "orders": {"type": "array", "items": {"type": "integer"}}}})
    orders = graph.foreach("orders", "input.orders", as_="order", max_concurrency=concurrency)
    ask = graph.interrupt("ask", input=[{"target": "order", "path": orders.item}], resume_schema={"type": "object"})
    graph.set_route(orders, "loop", ask)
    graph.set_route(ask, "ok", orders)
    result = Engine(TaskRegistry(), EngineOptions(
        ids=SequentialIds())).run(graph.build(), {"orders": list(range(items))})
    assert result.status == "interrupted"
    return result.run_state.model_dump_json()


def _median(run: object, repeat: int = 5) -> float:
    return _timed(run, repeat)[0]  # type: ignore[arg-type]


def _timed(run: Callable[[], Any], repeat: int = 5) -> tuple[float, float]:
    """Median wall and median CPU seconds of ``run()``."""
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        run()
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - wall)
    return statistics.median(walls), statistics.median(cpus)


def _table(title: str, headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    print()
    print(title)
    print("  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))


def _summary_rows(text: str, items: int, frames: int) -> list[list[str]]:
    """The executor's read (a loaded checkpoint dict) and the checkpointer's (the engine's RunState object)."""
    data, state = json.loads(text), RunState.from_json(text)
    rows = []
    for what, full, cheap in (
        ("checkpoint dict", lambda: RunState.from_json(data), lambda: run_summary(data, foreach_limit=0)),
        ("RunState object", lambda: activation_progress(state)[:50], lambda: run_summary(state, foreach_limit=50)),
    ):
        (full_wall, full_cpu), (cheap_wall, cheap_cpu) = _timed(full), _timed(cheap, 50)
        rows.append([f"{items:,}", f"{frames:,}", what, f"{full_wall * 1e3:,.2f}", f"{full_cpu * 1e3:,.2f}",
                     f"{cheap_wall * 1e6:,.1f}", f"{cheap_cpu * 1e6:,.1f}", f"{full_cpu / max(cheap_cpu, 1e-9):,.0f}x"])
    return rows


def main() -> int:
    headers = ["items", "running frames", "parse + format (ms)", "structural check (ms)", "check per frame (us)",
               "check / parse"]
    rows = []
    summary_rows = []
    for items, concurrency in CASES:
        text = _paused(items, concurrency)
        state = RunState.from_json(text)
        parse = _median(lambda text=text: RunState.model_validate_json(text))
        check = _median(lambda state=state: check_run_state(state))
        frames = len(state.frames)
        rows.append([f"{items:,}", f"{frames - 1:,}", f"{parse * 1e3:,.2f}", f"{check * 1e3:,.3f}",
                     f"{check / frames * 1e6:,.2f}", f"{check / parse:.1%}"])
        summary_rows += _summary_rows(text, items, frames - 1)
    _table("RunState.from_json: format validation (pydantic) and the structural check, per loaded checkpoint",
           headers, rows)
    _table("run_summary (status, distributed activations, first 50 progress rows) vs the full read it replaces "
           "(from_json of the dict; activation_progress of the object)",
           ["items", "running frames", "input", "full wall (ms)", "full CPU (ms)", "summary wall (us)",
            "summary CPU (us)", "CPU full / summary"], summary_rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

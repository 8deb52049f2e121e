"""What checking a loaded RunState costs (runtime._integrity), beside parsing the same checkpoint.

Every checkpoint the engine or the designer loads goes through ``check_run_state``; it must stay linear in the
live structure (frames) and must not walk a foreach's item snapshot. Real checkpoints: a foreach paused at an
interrupt in each running item. Timings are medians of a few repetitions, printed, never asserted.
"""

from __future__ import annotations

import statistics
import time

from runtime import Engine, RunState, SequentialIds, TaskRegistry, WorkflowBuilder
from runtime._integrity import check_run_state

CASES = ((10, 1), (100_000, 1), (100_000, 100), (100_000, 1_000))


def _paused(items: int, concurrency: int) -> str:
    graph = WorkflowBuilder("paused", input_schema={"type": "object", "properties": {
        "orders": {"type": "array", "items": {"type": "integer"}}}})
    orders = graph.foreach("orders", "input.orders", as_="order", max_concurrency=concurrency)
    ask = graph.interrupt("ask", input=[{"target": "order", "path": orders.item}], resume_schema={"type": "object"})
    graph.set_route(orders, "loop", ask)
    graph.set_route(ask, "ok", orders)
    result = Engine(registry=TaskRegistry(), ids=SequentialIds()).run(graph.build(), {"orders": list(range(items))})
    assert result.status == "interrupted"
    return result.run_state.model_dump_json()


def _median(run: object, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    headers = ["items", "running frames", "parse + format (ms)", "structural check (ms)", "check per frame (us)",
               "check / parse"]
    rows = []
    for items, concurrency in CASES:
        text = _paused(items, concurrency)
        state = RunState.from_json(text)
        parse = _median(lambda text=text: RunState.model_validate_json(text))
        check = _median(lambda state=state: check_run_state(state))
        frames = len(state.frames)
        rows.append([f"{items:,}", f"{frames - 1:,}", f"{parse * 1e3:,.2f}", f"{check * 1e3:,.3f}",
                     f"{check / frames * 1e6:,.2f}", f"{check / parse:.1%}"])
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    print()
    print("RunState.from_json: format validation (pydantic) and the structural check, per loaded checkpoint")
    print("  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

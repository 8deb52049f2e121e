"""What the run page's graph costs to compute (issue 25): the node states and loop counts of one scope, read
from the run's trace, for a nested run of growing size (customers x orders, each order a subgraph call).

The graph's states are read from the trace (``designer.runs.overlay.overlay``: ``progress_rows``, which follows
each failure up the lineages, and ``subgraph_calls``), so their cost grows with the trace, unlike the live
feed's poll, which reads a few columns of the run row. The canvas asks for them once per poll at most, one
request at a time, and backs off after a slow answer. Events are made by a real engine run and stored as the
checkpointer stores them (``event_row``), without a database.

    python -m bench run_graph
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
django.setup()

from bench.bench_engine import table  # noqa: E402  (Django must be set up before the designer's modules load)
from designer.runs.checkpointer import event_row  # noqa: E402
from designer.runs.display import progress_rows  # noqa: E402
from designer.runs.overlay import call_states, subgraph_calls  # noqa: E402
from designer.workflows import catalog  # noqa: E402
from runtime import Engine  # noqa: E402
from runtime.engine import EngineOptions, MappingResolver  # noqa: E402
from tests.designer.nested_failure import check_order, checked_orders  # noqa: E402

SIZES = [int(size) for size in os.environ.get("TRELLIS_BENCH_RUN_GRAPH_CUSTOMERS", "10,100,400").split(",")]
REPEATS = 5


def customers(count: int) -> list[dict[str, Any]]:
    return [{"id": f"C-{n}", "name": f"Customer {n}", "tier": "gold", "credit": 1} for n in range(count)]


def main() -> int:
    engine = Engine(catalog.registry(), EngineOptions(workflows=MappingResolver({"check-order": check_order()}),
                                                      keep_trace=None))
    rows: list[list[str]] = []
    base: float | None = None
    for size in SIZES:
        result = engine.run(checked_orders(concurrency=1), {"customers": customers(size)})
        events = [event_row(1, event) for event in result.trace]
        took = []
        for _ in range(REPEATS):
            began = time.perf_counter()
            progress_rows(result.run_state, events, finished=True)
            call_states(events, subgraph_calls(events), "completed")
            took.append(time.perf_counter() - began)
        ms = statistics.median(took) * 1000
        base = base or ms / len(events)
        per_event = ms / len(events)
        rows.append([str(size), str(len(events)), f"{ms:.1f}", f"{per_event * 1000:.2f}", f"{per_event / base:.2f}x"])
    table("run graph states from the trace (median of 5)",
          ["customers", "events", "ms", "us/event", "per event vs smallest"], rows,
          "Linear in the trace when the per-event cost stays about flat as the run grows.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

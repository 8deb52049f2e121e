"""Distributed foreach: one foreach over ``ITEMS`` items on 1, 2 and 4 ``run_worker`` processes.

The foreach sets ``batch_size`` (``BATCH``) and ``max_batches_in_flight`` (``IN_FLIGHT``) and the server
distributes it (``TRELLIS_FOREACH_DISTRIBUTE_ABOVE=0``), so its items run as ``ForeachBatch`` tasks on every
worker, each a math step, and are joined into the node's ``results`` list. The "one run" row is the same
foreach without ``batch_size`` (inside its run, one worker), for comparison. Measured from enqueueing the run
to its completion: wall time, items/s, and the CPU of the worker processes (their step processes included) per
item. SQLite always; PostgreSQL too with ``BENCH_DISTRIBUTED_POSTGRES=1`` (server binaries on PATH). On a
machine with fewer free cores than workers, extra workers cannot add throughput: read the CPU column too.
Nothing is asserted.

    python -m bench distributed
    BENCH_DISTRIBUTED_ITEMS=10000 BENCH_DISTRIBUTED_WORKERS=1,2 python -m bench distributed
"""

from __future__ import annotations

import os
from functools import partial
from typing import Any

from bench import _workloads as w
from bench.bench_engine import table

WORKER_COUNTS = tuple(int(n) for n in os.environ.get("BENCH_DISTRIBUTED_WORKERS", "1,2,4").split(","))
ITEMS = int(os.environ.get("BENCH_DISTRIBUTED_ITEMS", "100000"))
BATCH = int(os.environ.get("BENCH_DISTRIBUTED_BATCH", "2000"))
IN_FLIGHT = int(os.environ.get("BENCH_DISTRIBUTED_IN_FLIGHT", "8"))
#: Items of one batch (or of the one run) that run at once: the node's max_concurrency.
CONCURRENCY = int(os.environ.get("BENCH_DISTRIBUTED_CONCURRENCY", "4"))
#: The "one run" row (the same foreach inside its run); by default only for small counts, it is the slow one.
LOCAL = os.environ.get("BENCH_DISTRIBUTED_LOCAL", "1" if ITEMS <= 10_000 else "0") == "1"


def _leg() -> None:
    user, team = w.setup_leg()
    from django.db import connection

    from designer.models import Run
    from designer.runs import services as run_services
    from designer.workflows import services as workflow_services

    batched = workflow_services.create_workflow(actor=user, team=team, name="Batched", document=w.items_foreach(
        "Batched", CONCURRENCY, batch_size=BATCH, max_batches_in_flight=IN_FLIGHT))
    local = workflow_services.create_workflow(actor=user, team=team, name="Local",
                                              document=w.items_foreach("Local", CONCURRENCY))
    env = w.leg_env(TRELLIS_FOREACH_DISTRIBUTE_ABOVE="0", TRELLIS_RUN_MAX_STEPS=str(10 * ITEMS + 100))
    items = list(range(ITEMS))
    legs = [("one run", 1, local)] if LOCAL else []
    legs += [("batches", count, batched) for count in WORKER_COUNTS]

    def start(workflow: Any) -> list[int]:
        return [run_services.start_run(actor=user, workflow=workflow, input={"items": items}).pk]

    rows = []
    for mode, count, workflow in legs:
        with w.workers(count, env) as started:
            measured = started.measure(partial(start, workflow))
        output = Run.objects.get(pk=measured.pks[0]).output
        rows.append({"vendor": connection.vendor, "mode": mode, "workers": count, "wall": measured.wall,
                     "worker_cpu": measured.worker_cpu, "ok": output == {"out": [i + 1 for i in items]}})
    w.print_rows(rows)


def main() -> int:
    env = w.leg_env()
    rows: list[dict[str, Any]] = w.run_sqlite_leg("bench.bench_distributed", env)
    if os.environ.get("BENCH_DISTRIBUTED_POSTGRES") == "1":
        rows += w.run_postgres_leg("bench.bench_distributed", env)
    base: dict[str, float] = {}
    cells = []
    for row in rows:
        rate = ITEMS / row["wall"]
        if row["mode"] == "batches" and row["workers"] == 1:
            base[row["vendor"]] = rate
        speed = f"{rate / base[row['vendor']]:.2f}x" if row["mode"] == "batches" and row["vendor"] in base else "-"
        cells.append([row["vendor"], row["mode"], str(row["workers"]), f"{row['wall']:.1f}", f"{rate:.0f}", speed,
                      f"{row['worker_cpu']:.1f}", f"{1000 * row['worker_cpu'] / ITEMS:.3f}",
                      f"{row['worker_cpu'] / row['wall'] / os.cpu_count():.0%}" if os.cpu_count() else "-",
                      "yes" if row["ok"] else "NO"])
    table(f"One foreach over {ITEMS:,} items (math step each, {CONCURRENCY} at once); batches of {BATCH}, "
          f"{IN_FLIGHT} in flight; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end",
          ["database", "mode", "workers", "wall s", "items/s", "speed-up", "CPU s", "CPU ms/item",
           "CPU share of machine", "output ok"], cells,
          "CPU = the workers with their step processes, from enqueueing the run to its end (the database server is "
          "not counted)")
    return 0


if __name__ == "__main__":
    w.leg_or_main(_leg, main)

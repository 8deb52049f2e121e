"""Worker throughput on SQLite and PostgreSQL: how many real ``run_worker`` processes to run, and where the CPU goes.

For 1, 2 and 4 worker processes on one database it measures

* small runs: ``RUNS`` two-step runs (math -> math) enqueued at once, until all completed (runs/s);
* a foreach: ``FOREACH_RUNS`` runs of a foreach over ``ITEMS`` items, each item a math step (items/s);

and the CPU time per small run split into the worker processes with their step processes (task code, engine,
ORM, driver) and the database server (PostgreSQL's backends; on SQLite the database works inside the worker,
so it is part of the worker figure). Wall rates depend on the machine's other load; the CPU split is the sizing
figure: a run costs W ms of worker CPU and D ms of database CPU, so a database host with C cores serves at most
about C / D runs per ms, whatever the number of workers.

SQLite runs always; PostgreSQL runs when its server binaries are on PATH (a private cluster via
``.ci/postgres.sh``, run as root in CI or by any user locally). Nothing is asserted.

    python -m bench workers
"""

from __future__ import annotations

import os
from typing import Any

from bench import _workloads as w
from bench.bench_engine import table

WORKER_COUNTS = (1, 2, 4)
RUNS = int(os.environ.get("BENCH_WORKER_RUNS", "80"))
FOREACH_RUNS = int(os.environ.get("BENCH_WORKER_FOREACH_RUNS", "4"))
ITEMS = int(os.environ.get("BENCH_WORKER_ITEMS", "200"))


# --- one database (runs in a child process: Django is configured from DATABASE_URL at import) ---------------


def _small() -> dict[str, Any]:
    from runtime import WorkflowBuilder

    small = WorkflowBuilder("bench-small", "Small", input_schema={"type": "object",
                                                                  "properties": {"x": {"type": "integer"}}})
    first = small.use("math", id="first", input=[{"target": "op", "value": "add"}, {"target": "a", "path": "input.x"},
                                                 {"target": "b", "value": 1}])
    second = small.use("math", id="second", input=[{"target": "op", "value": "mul"}, {"target": "a", "value": 2},
                                                   {"target": "b", "value": 2}])
    small.set_route(first, "ok", second)
    return small.build().model_dump(mode="json")


def _leg() -> None:
    """Measure every row on the database in DATABASE_URL; print them as one JSON line."""
    user, team = w.setup_leg()
    from django.db import connection

    from designer.runs import services as run_services
    from designer.workflows import services as workflow_services

    server = w.postmaster()
    small = workflow_services.create_workflow(actor=user, team=team, name="Small", document=_small())
    loop = workflow_services.create_workflow(actor=user, team=team, name="Foreach",
                                             document=w.items_foreach("Foreach", collect=False))
    env = w.leg_env()

    def start(workflow: Any, value: dict[str, Any], count: int) -> list[int]:
        return [run_services.start_run(actor=user, workflow=workflow, input=value).pk for _ in range(count)]

    rows = []
    for count in WORKER_COUNTS:
        # Worker start-up (imports, first connection) is left out of the CPU figures; enqueueing (the web side's
        # work) is in the wall time and, for its inserts, in the database's CPU.
        with w.workers(count, env, server=server) as started:
            runs = started.measure(lambda: start(small, {"x": 1}, RUNS), poll=0.02)
        with w.workers(count, env, server=server) as started:
            items = started.measure(lambda: start(loop, {"items": list(range(ITEMS))}, FOREACH_RUNS), poll=0.02)
        rows.append({"vendor": connection.vendor, "workers": count, "runs": runs.figures(), "items": items.figures()})
    w.print_rows(rows)


def main() -> int:
    env = w.leg_env(DATABASE_CONN_MAX_AGE=os.environ.get("DATABASE_CONN_MAX_AGE", "300"))
    rows: list[dict[str, Any]] = w.run_sqlite_leg("bench.bench_workers", env)
    if w.postgres_available():
        rows += w.run_postgres_leg("bench.bench_workers", env)
    else:
        print("(PostgreSQL server binaries not found: PostgreSQL rows skipped)")
    cells = []
    for row in rows:
        runs, items = row["runs"], row["items"]
        db = f"{1000 * runs['db_cpu'] / RUNS:.1f}" if row["vendor"] == "postgresql" else "in wkr"
        per_item = 1000 * (items["worker_cpu"] + items["db_cpu"]) / (FOREACH_RUNS * ITEMS)
        cells.append([row["vendor"], str(row["workers"]), f"{RUNS / runs['wall']:.1f}",
                      f"{FOREACH_RUNS * ITEMS / items['wall']:.1f}", f"{1000 * runs['worker_cpu'] / RUNS:.1f}", db,
                      f"{per_item:.2f}"])
    table(f"{RUNS} small runs (2 steps) and {FOREACH_RUNS} foreach runs x {ITEMS} items per row; CPU ms per small "
          f"run; conn_max_age={env['DATABASE_CONN_MAX_AGE']}",
          ["database", "workers", "runs/s", "items/s", "worker ms", "db ms", "per item ms"], cells)
    return 0


if __name__ == "__main__":
    w.leg_or_main(_leg, main)

"""Items per second of one collected foreach of ``math`` steps through the REAL worker, at 1k / 10k / 100k items,
beside the engine running the same document in-process (issue 33: >= 4,000 items/s on SQLite, >= 3,000 on
PostgreSQL, at ``max_concurrency`` 16, flat from 1k to 100k).

One ``run_worker`` process (with its step processes) executes one run per size: a foreach over ``input.items``
(``max_concurrency`` ``CONCURRENCY``, 16 unless set) whose body is a math step, collecting every result in the node's
``results`` list, not distributed (the node sets no ``batch_size``), under the default ``TRELLIS_RUN_MAX_STEPS``
(the step limit counts each frame's steps, so 100k items pass). Every superstep is checkpointed by the designer's
``OrmCheckpointer``: the live state, the new write-once parts and the superstep's trace events in one transaction.
The engine column runs the same document with ``runtime.Engine`` alone (built-in tasks in its own threads, no
checkpointer, the trace not kept), in the leg's process, once per size.

Measured per size: the run's wall time as the worker saw it (``finished_at - started_at``), the CPU of the worker
process tree (its step processes included) and, on PostgreSQL, of the database server; per item and the growth
from the smallest size (goal: within 1.5x from 1k to 100k); items/s = items / the run's wall time. SQLite always;
PostgreSQL through ``.ci/postgres.sh`` when its server binaries are installed (``BENCH_WORKER_ITEMS_POSTGRES=0``
skips it, ``BENCH_WORKER_ITEMS_SQLITE=0`` skips SQLite). On a loaded machine the wall time follows the load; the
CPU per item is the steadier figure, so growth is given for both. Nothing is asserted.

The default sizes are 1k and 10k items (about a minute with PostgreSQL); ``BENCH_WORKER_ITEMS_BIG=1`` adds the
100k row (a few minutes more), which shows the cost per item flat up to 100k.

    python -m bench worker_items
    BENCH_WORKER_ITEMS_BIG=1 python -m bench worker_items                  # 1k, 10k and 100k
    BENCH_WORKER_ITEM_SIZES=1000,10000 python -m bench worker_items
    BENCH_WORKER_ITEMS_CONCURRENCY=4 python -m bench worker_items   # another max_concurrency
"""

from __future__ import annotations

import os
import time
from functools import partial
from typing import Any

from bench import _headline
from bench import _workloads as w
from bench.bench_engine import table

_DEFAULT_SIZES = "1000,10000,100000" if os.environ.get("BENCH_WORKER_ITEMS_BIG") == "1" else "1000,10000"
SIZES = tuple(int(size) for size in os.environ.get("BENCH_WORKER_ITEM_SIZES", _DEFAULT_SIZES).split(","))
CONCURRENCY = int(os.environ.get("BENCH_WORKER_ITEMS_CONCURRENCY", "16"))
GROWTH_GOAL = 1.5
#: Items per second through one worker that issue 33 asks for, per database.
RATE_GOAL = {"sqlite": 4_000, "postgresql": 3_000}


def _engine_seconds(document: dict[str, Any], items: list[int]) -> float:
    """Wall seconds of the same document run by ``runtime.Engine`` alone, in this process."""
    from runtime import Engine, Workflow
    from runtime.engine import EngineOptions
    from runtime.tasks import builtin_registry

    workflow = Workflow.model_validate(document)
    with Engine(registry=builtin_registry(), options=EngineOptions(keep_trace=0)) as engine:
        engine.compile(workflow)
        began = time.perf_counter()
        result = engine.run(workflow, {"items": items})
        seconds = time.perf_counter() - began
    if result.output != {"out": [i + 1 for i in items]}:
        raise RuntimeError(f"the engine's {len(items)}-item run returned a wrong output")
    return seconds


def _leg() -> None:
    user, team = w.setup_leg()
    from django.db import connection

    from designer.models import Run
    from designer.runs import services as run_services
    from designer.workflows import services as workflow_services

    document = w.items_foreach("Items", CONCURRENCY)
    workflow = workflow_services.create_workflow(actor=user, team=team, name="Items", document=document)
    env = w.leg_env()
    env.pop("TRELLIS_RUN_MAX_STEPS", None)  # the default limit: a big foreach must pass it

    def start(items: list[int]) -> list[int]:
        return [run_services.start_run(actor=user, workflow=workflow, input={"items": items}).pk]

    rows = []
    with w.workers(1, env, server=w.postmaster(), interval=0.1) as worker:
        for size in SIZES:
            items = list(range(size))
            measured = worker.measure(partial(start, items))
            done = Run.objects.get(pk=measured.pks[0])
            if done.output != {"out": [i + 1 for i in items]}:
                raise RuntimeError(f"the {size}-item run returned a wrong output")
            assert done.started_at is not None and done.finished_at is not None
            rows.append({"vendor": connection.vendor, "items": size,
                         "wall": (done.finished_at - done.started_at).total_seconds(),
                         "worker_cpu": measured.worker_cpu, "db_cpu": measured.db_cpu,
                         "events": done.events.count(), "peak_mib": measured.worker_peak_mib,
                         "engine": _engine_seconds(document, items)})
            connection.close()
    w.print_rows(rows)


def main() -> int:
    env = w.leg_env()
    rows: list[dict[str, Any]] = []
    if os.environ.get("BENCH_WORKER_ITEMS_SQLITE", "1") != "0":
        rows += w.run_sqlite_leg("bench.bench_worker_items", env)
    if os.environ.get("BENCH_WORKER_ITEMS_POSTGRES", "1") != "0" and w.postgres_available():
        rows += w.run_postgres_leg("bench.bench_worker_items", env)
    first: dict[str, tuple[float, float]] = {}
    cells = []
    for row in rows:
        vendor, size = row["vendor"], row["items"]
        per_item = row["wall"] / size * 1e6
        cpu_per_item = (row["worker_cpu"] + row["db_cpu"]) / size * 1e6
        first.setdefault(vendor, (per_item, cpu_per_item))
        db = f"{row['db_cpu'] / size * 1e6:,.0f}" if vendor == "postgresql" else "-"
        rate, engine_rate = size / row["wall"], size / row["engine"]
        cells.append([vendor, f"{size:,}", f"{row['wall']:.2f}", f"{rate:,.0f}", f"{RATE_GOAL.get(vendor, 0):,}",
                      f"{engine_rate:,.0f}", f"{engine_rate / rate:.1f}x",
                      f"{row['worker_cpu'] / size * 1e6:,.0f}", db, f"{cpu_per_item:,.0f}",
                      f"{per_item / first[vendor][0]:.2f}x", f"{cpu_per_item / first[vendor][1]:.2f}x",
                      f"{row['events']:,}", f"{row['peak_mib']:,.0f}"])
        goal = RATE_GOAL.get(vendor, 0)
        _headline.record("worker", f"collected foreach, {size:,} items, {vendor}", trellis=f"{rate:,.0f} items/s",
                         peer=f"engine alone {engine_rate:,.0f} items/s", ratio=f"{rate / goal:.2f}x of goal",
                         goal=f">= {goal:,} items/s", met=rate >= goal)
        if size != SIZES[0]:
            growth = cpu_per_item / first[vendor][1]
            _headline.record("worker", f"CPU per item, {size:,} / {SIZES[0]:,} items, {vendor}",
                             trellis=f"{growth:.2f}x", goal=f"<= {GROWTH_GOAL}x (flat)", met=growth <= GROWTH_GOAL)
    table(f"One collected foreach (math step per item, {CONCURRENCY} at once) through one run_worker, beside the "
          f"engine alone; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}",
          ["database", "items", "wall s", "items/s", "goal items/s", "engine items/s", "engine/worker",
           "worker CPU us/item", "db CPU us/item", "CPU us/item", "growth wall", "growth CPU", "events",
           "worker peak MiB"], cells,
          f"items/s = items / the run's wall time in the worker (finished_at - started_at); engine = runtime.Engine "
          f"alone on the same document in one process (no checkpointer); CPU = worker tree + database server; "
          f"growth = per item at this size / at {SIZES[0]:,} items on the same database; goal <= {GROWTH_GOAL}x; "
          f"worker peak = the worker process's peak RSS so far (VmHWM: sizes run in order on one worker, so each "
          f"row's peak includes the smaller runs before it)")
    return 0


if __name__ == "__main__":
    w.leg_or_main(_leg, main)

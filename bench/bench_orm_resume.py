"""The designer's ``OrmCheckpointer``: resume after 10 / 1,000 / 10,000 completed steps, SQLite and PostgreSQL
(issue 33: flat in history, <= 2 ms at 10,000).

As ``bench durable``'s resume rows: a loop of N steps pauses at an interrupt; a new checkpointer loads the run
and resumes it to its end (load + resume + its saves). Here on both databases, in a child process each, with
the wall-clock time beside the CPU time (on PostgreSQL the server's work and the round trips are not in the
process's CPU time) and the queries the resume sent. The goal is judged on CPU time, as there. Median of
``TRELLIS_BENCH_ROUNDS`` (default 5) rounds.

    python -m bench orm_resume
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

from bench import _headline
from bench import _workloads as w
from bench.bench_engine import table

ROUNDS = int(os.environ.get("TRELLIS_BENCH_ROUNDS", "5"))
HISTORIES = tuple(int(n) for n in os.environ.get("TRELLIS_BENCH_HISTORIES", "10,1000,10000").split(","))
GOAL_MS = 2.0


def _resume(team: Any, stored: Any, steps: int, run_id: str) -> tuple[float, float, int]:
    """Run a loop of ``steps`` to its interrupt, then time a new checkpointer's load + resume to the end:
    (wall seconds, CPU seconds, queries)."""
    from django.db import connection

    from designer.models import Run
    from designer.runs.checkpointer import OrmCheckpointer
    from runtime import Engine
    from runtime.engine import EngineOptions

    def create_run(run_state: Any) -> Any:
        return Run.objects.create(team=team, workflow=stored, document={}, runtime_id=run_state.run_id)

    workflow = w.trellis_loop_then_pause(steps)
    tasks = w.registry()
    paused = Engine(registry=tasks, options=EngineOptions(checkpointer=OrmCheckpointer(team, create_run=create_run))
                    ).run(workflow, run_id=run_id)
    if paused.status != "interrupted":
        raise RuntimeError(f"resume bench: the loop of {steps} ended {paused.status}")
    resuming = OrmCheckpointer(team, create_run=create_run)
    engine = Engine(registry=tasks, options=EngineOptions(checkpointer=resuming))
    engine.compile(workflow)
    queries = 0

    def count(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        nonlocal queries
        queries += 1
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        wall, cpu = time.perf_counter(), time.process_time()
        loaded = resuming.load(run_id)
        (interrupt_id,) = loaded.interrupts
        done = engine.resume(loaded, interrupt_id, {}, workflow=workflow)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if done.status != "completed" or done.output != {"x": steps + 1}:
        raise RuntimeError(f"resume bench: the resumed run ended {done.status} with {done.output}")
    return wall, cpu, queries


def _leg() -> None:
    w.django_leg()
    from django.db import connection

    from designer.models import Team
    from designer.models import Workflow as StoredWorkflow

    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:  # as bench durable's resume: no fsync per commit
            cursor.execute("PRAGMA synchronous=NORMAL")
    found: dict[int, list[tuple[float, float, int]]] = {}
    for round_number in range(ROUNDS):
        for steps in HISTORIES:
            team = Team.objects.create(name=f"Resume {round_number}-{steps}", slug=f"resume-{round_number}-{steps}")
            stored = StoredWorkflow.objects.create(team=team, slug="bench", name="Bench")
            found.setdefault(steps, []).append(_resume(team, stored, steps, f"run_{round_number}_{steps}"))
    w.print_rows([{"vendor": connection.vendor, "steps": steps,
                   "wall": statistics.median(t[0] for t in times), "cpu": statistics.median(t[1] for t in times),
                   "queries": max(t[2] for t in times)} for steps, times in found.items()])


def main() -> int:
    load = os.getloadavg()[0]
    rows = w.run_sqlite_leg("bench.bench_orm_resume", w.leg_env())
    if w.postgres_available():
        rows += w.run_postgres_leg("bench.bench_orm_resume", w.leg_env())
    shortest = {row["vendor"]: row["cpu"] for row in rows if row["steps"] == min(HISTORIES)}
    cells = []
    for row in rows:
        flat = row["cpu"] * 1e3 <= GOAL_MS and row["cpu"] <= 2 * shortest[row["vendor"]]
        goal = "-" if row["steps"] != max(HISTORIES) else "yes" if flat else "NO"
        cells.append([row["vendor"], f"{row['steps']:,}", f"{row['wall'] * 1e3:.2f}", f"{row['cpu'] * 1e3:.2f}",
                      str(row["queries"]), f"{row['cpu'] / shortest[row['vendor']]:.2f}x", goal])
        if row["steps"] == max(HISTORIES):
            _headline.record("durable", f"resume after {row['steps']:,} steps, ORM on {row['vendor']}",
                             trellis=f"{row['cpu'] * 1e3:.2f} ms CPU ({row['queries']} queries)",
                             goal=f"<= {GOAL_MS:g} ms, flat", met=flat)
    table(f"OrmCheckpointer resume (load + resume to the end), median of {ROUNDS}; {os.cpu_count()} CPUs, load "
          f"average {load:.1f} before, {os.getloadavg()[0]:.1f} after",
          ["database", "steps before", "wall ms", "CPU ms", "queries", f"CPU / {min(HISTORIES):,} steps",
           f"<= {GOAL_MS:g} ms and flat?"], cells,
          "goal (as bench durable's resume rows): CPU <= 2 ms at the longest history and within 2x of the shortest; "
          "wall beside it, which on PostgreSQL adds the round trips\nand the server's work; queries: statements "
          "through Django (BEGIN, COMMIT and COPY not counted;\non PostgreSQL a save is one statement and no "
          "transaction of its own since resume7, where it was BEGIN, UPDATE, INSERT, COPY and COMMIT)")
    return 0


if __name__ == "__main__":
    w.leg_or_main(_leg, main)

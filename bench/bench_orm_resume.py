"""The designer's ``OrmCheckpointer``: resume after 10 / 1,000 / 10,000 completed steps, SQLite and PostgreSQL
(issue 33: flat in history, <= 2 ms at 10,000).

As ``bench durable``'s resume rows: a loop of N steps pauses at an interrupt; a new checkpointer loads the run
and resumes it to its end (load + resume + its saves). Here on both databases, in a child process each, with
the wall-clock time beside the CPU time (on PostgreSQL the server's work and the round trips are not in the
process's CPU time) and the queries the resume sent. The goal is judged on CPU time, as there.

One paused run per size is made once and resumed ``TRELLIS_BENCH_ROUNDS`` times (default 25), put back as it was
after each (``Paused.restore``), the sizes taking turns: the median is of the same resume each time, and the
table shows its spread (quartiles, and the slowest and fastest).

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

ROUNDS = int(os.environ.get("TRELLIS_BENCH_ROUNDS", "25"))
HISTORIES = tuple(int(n) for n in os.environ.get("TRELLIS_BENCH_HISTORIES", "10,1000,10000").split(","))
GOAL_MS = 2.0


class Paused:
    """One run of a loop of ``steps`` paused at its interrupt, made once, and what puts it back after a resume.

    A resume completes the run, so each timed resume needs the paused run again. Rather than make a fresh run
    of N steps each time (which was most of the bench's time, and each round's run then differed in where its
    rows lay), the rows the resume added or changed are put back as SQL: the run's row (state, progress,
    counters), the events after the paused trace's last, the kept checkpoints after its step, and the parts it
    stored. The history it resumes after (N kept checkpoints, their events and parts) is the same rows every
    time."""

    def __init__(self, team: Any, stored: Any, steps: int) -> None:
        from designer.models import Run
        from designer.runs.checkpointer import OrmCheckpointer
        from runtime import Engine
        from runtime.engine import EngineOptions

        def create_run(run_state: Any) -> Any:
            return Run.objects.create(team=team, workflow=stored, document={}, runtime_id=run_state.run_id)

        self.team, self.steps, self.run_id = team, steps, f"run_{steps:013d}"
        self.workflow = w.trellis_loop_then_pause(steps)
        self.tasks = w.registry()
        paused = Engine(registry=self.tasks, options=EngineOptions(
            checkpointer=OrmCheckpointer(team, create_run=create_run))).run(self.workflow, run_id=self.run_id)
        if paused.status != "interrupted":
            raise RuntimeError(f"resume bench: the loop of {steps} ended {paused.status}")
        self.pk = Run.objects.get(team=team, runtime_id=self.run_id).pk
        self.row = self._sql("SELECT run_state, progress, items_done, failures FROM {run} WHERE id = %s")[0]
        self.last_seq = self._sql("SELECT MAX(seq) FROM {event} WHERE run_id = %s")[0][0]
        self.last_step = OrmCheckpointer(team).load(self.run_id).step  # as stored (the engine counts on)
        self.parts = {key for (key,) in self._sql("SELECT key FROM {part} WHERE run_id = %s")}

    def _sql(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        """Run ``sql`` (tables named ``{run}``, ``{event}``, ``{checkpoint}``, ``{part}``) with ``params`` or, when
        none are given, the run's id; the rows it returns."""
        from django.db import connection

        from designer.models import Run, RunCheckpoint, RunEvent, RunStatePart

        quote = connection.ops.quote_name
        tables = {"run": Run, "event": RunEvent, "checkpoint": RunCheckpoint, "part": RunStatePart}
        with connection.cursor() as cursor:
            cursor.execute(sql.format(**{name: quote(model._meta.db_table) for name, model in tables.items()}),
                           list(params) or [self.pk])
            return list(cursor.fetchall()) if cursor.description else []

    def restore(self) -> None:
        """Put the paused run back as it was before the last resume."""
        self._sql("UPDATE {run} SET run_state = %s, progress = %s, items_done = %s, failures = %s WHERE id = %s",
                  *self.row, self.pk)
        self._sql("DELETE FROM {event} WHERE run_id = %s AND seq > %s", self.pk, self.last_seq)
        self._sql("DELETE FROM {checkpoint} WHERE run_id = %s AND step > %s", self.pk, self.last_step)
        for (key,) in self._sql("SELECT key FROM {part} WHERE run_id = %s"):
            if key not in self.parts:
                self._sql("DELETE FROM {part} WHERE run_id = %s AND key = %s", self.pk, key)

    def resume(self) -> tuple[float, float, int]:
        """A new checkpointer's load + resume to the end, timed: (wall seconds, CPU seconds, queries)."""
        from django.db import connection

        from designer.runs.checkpointer import OrmCheckpointer
        from runtime import Engine
        from runtime.engine import EngineOptions

        resuming = OrmCheckpointer(self.team)
        engine = Engine(registry=self.tasks, options=EngineOptions(checkpointer=resuming))
        engine.compile(self.workflow)
        queries = 0

        def count(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            nonlocal queries
            queries += 1
            return execute(sql, params, many, context)

        with connection.execute_wrapper(count):
            wall, cpu = time.perf_counter(), time.process_time()
            loaded = resuming.load(self.run_id)
            (interrupt_id,) = loaded.interrupts
            step = loaded.step  # the resume works on the loaded state in place
            done = engine.resume(loaded, interrupt_id, {}, workflow=self.workflow)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if step != self.last_step or done.status != "completed" or done.output != {"x": self.steps + 1}:
            raise RuntimeError(f"resume bench: the resumed run (from step {step}) ended {done.status} with "
                               f"{done.output}")
        return wall, cpu, queries


def _leg() -> None:
    w.django_leg()
    from django.db import connection

    from designer.models import Team
    from designer.models import Workflow as StoredWorkflow

    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:  # as bench durable's resume: no fsync per commit
            cursor.execute("PRAGMA synchronous=NORMAL")
    team = Team.objects.create(name="Resume", slug="resume")
    stored = StoredWorkflow.objects.create(team=team, slug="bench", name="Bench")
    runs = [Paused(team, stored, steps) for steps in HISTORIES]
    found: dict[int, list[tuple[float, float, int]]] = {run.steps: [] for run in runs}
    for _ in range(ROUNDS):
        for run in runs:  # the sizes alternate, so a change in the machine's load touches each alike
            found[run.steps].append(run.resume())
            run.restore()
    rows = []
    for steps, times in found.items():
        cpu = sorted(t[1] for t in times)
        quartiles = statistics.quantiles(cpu, n=4)
        rows.append({"vendor": connection.vendor, "steps": steps, "wall": statistics.median(t[0] for t in times),
                     "cpu": statistics.median(cpu), "cpu_q1": quartiles[0], "cpu_q3": quartiles[2],
                     "cpu_min": cpu[0], "cpu_max": cpu[-1], "queries": sorted({t[2] for t in times})})
    w.print_rows(rows)


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
        queries = "/".join(str(number) for number in row["queries"])  # one number unless a resume differed
        cells.append([row["vendor"], f"{row['steps']:,}", f"{row['wall'] * 1e3:.2f}", f"{row['cpu'] * 1e3:.2f}",
                      f"{row['cpu_q1'] * 1e3:.2f}-{row['cpu_q3'] * 1e3:.2f}",
                      f"{row['cpu_min'] * 1e3:.2f}-{row['cpu_max'] * 1e3:.2f}", queries,
                      f"{row['cpu'] / shortest[row['vendor']]:.2f}x", goal])
        if row["steps"] == max(HISTORIES):
            _headline.record("durable", f"resume after {row['steps']:,} steps, ORM on {row['vendor']}",
                             trellis=f"{row['cpu'] * 1e3:.2f} ms CPU ({queries} queries)",
                             goal=f"<= {GOAL_MS:g} ms, flat", met=flat)
    table(f"OrmCheckpointer resume (load + resume to the end), median of {ROUNDS} resumes of one paused run a "
          f"size; {os.cpu_count()} CPUs, load average {load:.1f} before, {os.getloadavg()[0]:.1f} after",
          ["database", "steps before", "wall ms", "CPU ms", "CPU q1-q3", "CPU min-max", "queries",
           f"CPU / {min(HISTORIES):,} steps",
           f"<= {GOAL_MS:g} ms and flat?"], cells,
          "goal (as bench durable's resume rows): CPU <= 2 ms at the longest history and within 2x of the shortest; "
          "wall beside it, which on PostgreSQL adds the round trips\nand the server's work; queries: statements "
          "through Django (BEGIN, COMMIT and COPY not counted;\non PostgreSQL a save is one statement and no "
          "transaction of its own since resume7, where it was BEGIN, UPDATE, INSERT, COPY and COMMIT)")
    return 0


if __name__ == "__main__":
    w.leg_or_main(_leg, main)

"""Fair queues (issue 26): how long another team's one-step run waits while a hostile team holds the workers.

The hostile team queues foreach runs (``ITEMS`` items four at a time, each a step that blocks its process for
``STEP`` seconds) until every worker slot is busy with them and more wait behind. Then a second team starts a
one-step run, waits for it to end, and starts the next, ``SAMPLES`` times; each wait (queued to started, from
the run's own timestamps) is a sample. Measured with 1 and 4 ``run_worker`` processes (fair picks, the last
slot kept for a newcomer), beside the peer: the queue's plain ``db_worker`` (one task at a time, first come
first served; one sample, since it waits for the whole hostile backlog). SQLite, and PostgreSQL when its
server binaries are installed. Nothing is asserted.

    python -m bench fairness
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

from bench import _workloads as w
from bench.bench_engine import table

SAMPLES = int(os.environ.get("BENCH_FAIRNESS_SAMPLES", "20"))
STEP = float(os.environ.get("BENCH_FAIRNESS_STEP_SECONDS", "5"))
ITEMS = int(os.environ.get("BENCH_FAIRNESS_ITEMS", "8"))
TASKS = "tests.designer.step_tasks"
#: (command, worker processes, samples)
SETUPS = (("run_worker", 1, SAMPLES), ("run_worker", 4, SAMPLES), ("db_worker", 1, 1))


def _hostile_document() -> dict[str, Any]:
    from runtime import WorkflowBuilder

    g = WorkflowBuilder("hostile", "Hostile", input_schema={"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "number"}}}, "required": ["items"]})
    each = g.foreach("each", "input.items", max_concurrency=4)
    nap = g.use("snooze", id="nap", input=[{"target": "seconds", "path": each.item}])
    g.set_route(each, "loop", nap)
    g.set_route(nap, "ok", each)
    return g.build().model_dump(mode="json")


def _one_step_document() -> dict[str, Any]:
    from runtime import WorkflowBuilder

    g = WorkflowBuilder("one", "One step")
    g.use("whoami", id="pid", output=[{"source": ".", "target": "pid"}])
    return g.build().model_dump(mode="json")


def _p95(values: list[float]) -> float:
    return values[max(0, round(0.95 * len(values)) - 1)]


def _leg() -> None:
    user, _ = w.setup_leg()
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.db.models import Q
    from django_tasks_db.models import DBTaskResult

    from designer.access import teams as team_services
    from designer.conf import trellis
    from designer.models import Run
    from designer.runs import services as run_services
    from designer.workflows import services as workflow_services

    rival = get_user_model().objects.create_user("rival", password="x")
    env = w.leg_env(TRELLIS_TASK_MODULES=TASKS)
    rows = []
    for number, (command, count, samples) in enumerate(SETUPS):
        hostile_team = team_services.create_team(actor=rival, name=f"Hostile {number}")
        team = team_services.create_team(actor=user, name=f"Newcomer {number}")
        hostile = workflow_services.create_workflow(actor=rival, team=hostile_team, name="Hostile",
                                                    document=_hostile_document())
        one = workflow_services.create_workflow(actor=user, team=team, name="One", document=_one_step_document())
        slots = trellis.WORKER_SLOTS if command == "run_worker" else 1
        waits: list[float] = []
        ends: list[float] = []
        with w.workers(count, env, interval=0.1, command=command, kill=True):
            # Twice as many hostile runs as slots: every slot it may take is busy and more wait behind.
            hostile_runs = [run_services.start_run(actor=rival, workflow=hostile, input={"items": [STEP] * ITEMS}).pk
                            for _ in range(2 * count * slots)]
            busy = count * (slots - 1 if slots > 1 else 1)
            while Run.objects.filter(pk__in=hostile_runs, status="running").count() < busy:
                time.sleep(0.1)
            for _ in range(samples):
                run = run_services.start_run(actor=user, workflow=one)
                while not Run.objects.filter(pk=run.pk, status__in=w.TERMINAL).exists():
                    time.sleep(0.02)
                run.refresh_from_db()
                if run.status != "completed" or run.started_at is None or run.finished_at is None:
                    raise RuntimeError(f"benchmark run {run.pk} ended {run.status}: {run.error}")
                waits.append((run.started_at - run.created_at).total_seconds())
                ends.append((run.finished_at - run.created_at).total_seconds())
            still = Run.objects.filter(pk__in=hostile_runs).exclude(status__in=w.TERMINAL).count()
        # The next setup starts from an empty queue.
        Run.objects.filter(pk__in=hostile_runs).exclude(status__in=w.TERMINAL).update(status="cancelled")
        DBTaskResult.objects.filter(~Q(status__in=("SUCCESSFUL", "FAILED"))).delete()
        waits.sort()
        ends.sort()
        rows.append({"vendor": connection.vendor, "command": command, "workers": count, "slots": slots,
                     "samples": len(waits), "median": statistics.median(waits), "p95": _p95(waits),
                     "end_p95": _p95(ends), "max": waits[-1],
                     "hostile_left": still, "hostile": len(hostile_runs)})
    w.print_rows(rows)


def main() -> int:
    env = w.leg_env(TRELLIS_TASK_MODULES=TASKS)
    rows = w.run_sqlite_leg("bench.bench_fairness", env)
    if os.environ.get("BENCH_FAIRNESS_POSTGRES", "1") != "0" and w.postgres_available():
        rows += w.run_postgres_leg("bench.bench_fairness", env)
    fifo = {row["vendor"]: row["median"] for row in rows if row["command"] == "db_worker"}
    cells = [[row["vendor"], row["command"], str(row["workers"]), str(row["slots"]), str(row["samples"]),
              f"{row['median']:.2f}", f"{row['p95']:.2f}", f"{row['max']:.2f}", f"{row['end_p95']:.2f}",
              f"{fifo[row['vendor']] / max(row['median'], 1e-3):.0f}x" if row["vendor"] in fifo else "",
              f"{row['hostile_left']} of {row['hostile']}"] for row in rows]
    table(f"A one-step run of another team while a hostile team's loops ({ITEMS} items x {STEP:g} s, 4 at a time) "
          f"hold the workers; queued to started, seconds; {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f}",
          ["database", "worker", "workers", "slots each", "samples", "median s", "p95 s", "max s", "p95 to end s",
           "first come / this", "hostile runs still going"], cells,
          "run_worker picks fairly and keeps each worker's last slot for a team running nothing there; db_worker "
          "(the peer) runs one task at a time in queue order, so the newcomer waits for the hostile backlog")
    return 0


if __name__ == "__main__":
    w.leg_or_main(_leg, main)

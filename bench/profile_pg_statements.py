"""Where PostgreSQL's own time goes per one-step run (issue 33): ``bench_small_runs``'s burst on one
``run_worker``, then each statement's mean planning and execution time from ``pg_stat_statements``, the
heaviest first. Planning is about half of the hot statements' time, which is what a prepared statement saves.

    TRELLIS_PG_STATEMENTS=1 .ci/postgres.sh .venv/bin/python -m bench.profile_pg_statements

Counts the bench's own reads too (creating the runs, and its poll for their end), as the server does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import _workloads as w
from bench._table import table

RUNS = int(os.environ.get("TRELLIS_PROFILE_RUNS", "100"))
SHOWN = 20


def main() -> int:
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        print("usage: TRELLIS_PG_STATEMENTS=1 .ci/postgres.sh .venv/bin/python -m bench.profile_pg_statements",
              file=sys.stderr)
        return 2
    os.environ.update(w.leg_env())
    user, team = w.setup_leg()
    from django.db import connection

    from designer.models import Run
    from designer.runs import services as run_services
    from designer.workflows import services as workflow_services

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_extension WHERE extname = 'pg_stat_statements'")
        if not cursor.fetchone()[0]:
            print("pg_stat_statements is not loaded: run under TRELLIS_PG_STATEMENTS=1 .ci/postgres.sh",
                  file=sys.stderr)
            return 2
    workflow = workflow_services.create_workflow(actor=user, team=team, name="One", document=w.one_math_step_document())
    connection.close()
    with tempfile.NamedTemporaryFile("w+", suffix=".log") as log:
        worker = subprocess.Popen([sys.executable, "manage.py", "run_worker", "--no-startup-delay", "--no-reload"],
                                  cwd=w.REPO_ROOT, env=w.leg_env(), stdout=log, stderr=subprocess.STDOUT)
        try:
            while "Starting worker" not in Path(log.name).read_text():
                if worker.poll() is not None:
                    raise RuntimeError(Path(log.name).read_text()[-3000:])
                time.sleep(0.1)
            time.sleep(2)
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_stat_statements_reset()")
            pks = [run_services.start_run(actor=user, workflow=workflow).pk for _ in range(RUNS)]
            while Run.objects.filter(pk__in=pks, status__in=w.TERMINAL).count() < len(pks):
                time.sleep(0.02)
        finally:
            worker.terminate()
            worker.wait()
    with connection.cursor() as cursor:
        cursor.execute("SELECT calls, total_plan_time, total_exec_time, regexp_replace(query, '\\s+', ' ', 'g') "
                       "FROM pg_stat_statements WHERE query NOT LIKE '%%pg_stat_statements%%' "
                       "ORDER BY total_plan_time + total_exec_time DESC")
        found = cursor.fetchall()
    total = sum(plan + run for _, plan, run, _ in found)
    planning = sum(plan for _, plan, _, _ in found)
    cells = [[f"{calls:,}", f"{plan / calls:.3f}", f"{run / calls:.3f}", f"{(plan + run) / RUNS:.3f}",
              f"{100 * (plan + run) / total:.0f}%", query.strip()[:90]] for calls, plan, run, query in found[:SHOWN]]
    table(f"PostgreSQL plan and execution per statement, {RUNS} one-step runs on one run_worker; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}",
          ["calls", "plan ms/call", "exec ms/call", "ms/run", "share", "statement"], cells,
          f"in all {total / RUNS:.2f} ms a run, {100 * planning / total:.0f}% of it planning "
          f"({len(found)} distinct statements)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

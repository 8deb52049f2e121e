"""Worker throughput on SQLite and PostgreSQL: how many real ``run_worker`` processes to run, and where the CPU goes.

For 1, 2 and 4 worker processes on one database it measures

* small runs: ``RUNS`` two-step runs (math -> math) enqueued at once, until all completed (runs/s);
* a foreach: ``FOREACH_RUNS`` runs of a foreach over ``ITEMS`` items, each item a math step (items/s);

and the CPU time per small run split into the worker processes (task code, engine, ORM, driver) and the
database server (PostgreSQL's backends; on SQLite the database works inside the worker, so it is part of the
worker figure). Wall rates depend on the machine's other load; the CPU split is the sizing figure: a run
costs W ms of worker CPU and D ms of database CPU, so a database host with C cores serves at most about
C / D runs per ms, whatever the number of workers.

SQLite runs always; PostgreSQL runs when its server binaries are on PATH (a private cluster via
``.ci/postgres.sh``, run as root in CI or by any user locally). Nothing is asserted.

    python -m bench workers
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
WORKER_COUNTS = (1, 2, 4)
RUNS = int(os.environ.get("BENCH_WORKER_RUNS", "80"))
FOREACH_RUNS = int(os.environ.get("BENCH_WORKER_FOREACH_RUNS", "4"))
ITEMS = int(os.environ.get("BENCH_WORKER_ITEMS", "200"))
TICKS = os.sysconf("SC_CLK_TCK")


def _proc_cpu(pid: int, *, children: bool = False) -> float:
    """CPU seconds of a live process (user + system), plus its reaped children's when ``children``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / TICKS


def _postgres_cpu(postmaster: int | None) -> float:
    """CPU of the whole PostgreSQL server: the postmaster, its live children and those it has reaped."""
    if postmaster is None:
        return 0.0
    total = _proc_cpu(postmaster, children=True)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == postmaster:
            total += _proc_cpu(int(entry.name))
    return total


# --- one database (runs in a child process: Django is configured from DATABASE_URL at import) ---------------


def _documents() -> tuple[dict[str, Any], dict[str, Any]]:
    from runtime import WorkflowBuilder

    small = WorkflowBuilder("bench-small", "Small", input_schema={"type": "object",
                                                                  "properties": {"x": {"type": "integer"}}})
    first = small.use("math", id="first", input=[{"target": "op", "value": "add"}, {"target": "a", "path": "input.x"},
                                                 {"target": "b", "value": 1}])
    second = small.use("math", id="second", input=[{"target": "op", "value": "mul"}, {"target": "a", "value": 2},
                                                   {"target": "b", "value": 2}])
    small.set_route(first, "ok", second)

    loop = WorkflowBuilder("bench-foreach", "Foreach", input_schema={"type": "object",
                                                                     "properties": {"items": {"type": "array"}}})
    each = loop.foreach("each", "input.items")
    body = loop.use("math", id="body", input=[{"target": "op", "value": "add"}, {"target": "a", "path": each.item},
                                              {"target": "b", "value": 1}])
    loop.set_route(each, "loop", body)
    loop.set_route(body, "ok", each)
    return small.build().model_dump(mode="json"), loop.build().model_dump(mode="json")


def _measure(workers: int, start: Any, count: int, env: dict[str, str], postmaster: int | None) -> dict[str, float]:
    """Start ``workers`` idle workers, then enqueue ``count`` runs and time them to completion. Worker start-up
    (imports, first connection) is left out of the CPU figures; enqueueing (the web side's work) is in the wall
    time and, for its inserts, in the database's CPU."""
    from designer.models import Run

    command = [sys.executable, "manage.py", "run_worker", "--no-startup-delay", "--no-reload", "--interval", "0.2"]
    processes = [subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL) for _ in range(workers)]
    try:
        time.sleep(4)  # let them import Django and connect
        worker_before = sum(_proc_cpu(process.pid) for process in processes)
        db_before = _postgres_cpu(postmaster)
        began = time.perf_counter()
        run_ids = [start() for _ in range(count)]
        while Run.objects.filter(pk__in=run_ids, status="completed").count() < count:
            if Run.objects.filter(pk__in=run_ids, status="failed").exists():
                raise RuntimeError("a benchmark run failed")
            time.sleep(0.02)
        wall = time.perf_counter() - began
        db_cpu = _postgres_cpu(postmaster) - db_before
        worker_cpu = sum(_proc_cpu(process.pid) for process in processes) - worker_before
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait()
    return {"wall": wall, "worker_cpu": worker_cpu, "db_cpu": db_cpu}


def _leg() -> None:
    """Measure every row on the database in DATABASE_URL; print them as one JSON line."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "designer.settings")
    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    from django.contrib.auth import get_user_model

    from designer.services import runs as run_services
    from designer.services import teams as team_services
    from designer.services import workflows as workflow_services

    postmaster = None
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            backend = cursor.fetchone()[0]
        postmaster = int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])
    user = get_user_model().objects.create_user("bench", password="x")
    team = team_services.create_team(actor=user, name="Bench")
    small_doc, loop_doc = _documents()
    small = workflow_services.create_workflow(actor=user, team=team, name="Small", document=small_doc)
    loop = workflow_services.create_workflow(actor=user, team=team, name="Foreach", document=loop_doc)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    connection.close()  # the workers must not inherit a connection; ours reopens on demand

    rows = []
    for workers in WORKER_COUNTS:
        runs = _measure(workers, lambda: run_services.start_run(actor=user, workflow=small, input={"x": 1}).pk,
                        RUNS, env, postmaster)
        items = _measure(workers, lambda: run_services.start_run(
            actor=user, workflow=loop, input={"items": list(range(ITEMS))}).pk, FOREACH_RUNS, env, postmaster)
        rows.append({"vendor": connection.vendor, "workers": workers, "runs": runs, "items": items})
    print("BENCH-ROWS " + json.dumps(rows), flush=True)


def _run_leg(prefix: list[str], env: dict[str, str]) -> list[dict[str, Any]]:
    result = subprocess.run([*prefix, sys.executable, "-m", "bench.bench_workers", "--leg"], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True)
    for line in result.stdout.splitlines():
        if line.startswith("BENCH-ROWS "):
            return list(json.loads(line.removeprefix("BENCH-ROWS ")))
    raise RuntimeError(f"benchmark leg failed:\n{result.stdout}\n{result.stderr}")


def main() -> int:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "DJANGO_SETTINGS_MODULE": "designer.settings",
           "DATABASE_CONN_MAX_AGE": os.environ.get("DATABASE_CONN_MAX_AGE", "300")}
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="trellis-bench-") as tmp:
        rows += _run_leg([], {**env, "DATABASE_URL": f"sqlite:///{tmp}/bench.sqlite3"})
    if shutil.which("initdb") or list(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
        rows += _run_leg([str(REPO_ROOT / ".ci" / "postgres.sh")], env)
    else:
        print("(PostgreSQL server binaries not found: PostgreSQL rows skipped)")

    print(f"{RUNS} small runs (2 steps) and {FOREACH_RUNS} foreach runs x {ITEMS} items per row; "
          f"CPU ms per small run; conn_max_age={env['DATABASE_CONN_MAX_AGE']}")
    header = (f"{'database':<11}{'workers':>8}{'runs/s':>9}{'items/s':>9}{'worker ms':>11}{'db ms':>8}"
              f"{'per item ms':>13}")
    print(header)
    print("-" * len(header))
    for row in rows:
        runs, items = row["runs"], row["items"]
        db = f"{1000 * runs['db_cpu'] / RUNS:8.1f}" if row["vendor"] == "postgresql" else f"{'in wkr':>8}"
        per_item = 1000 * (items["worker_cpu"] + items["db_cpu"]) / (FOREACH_RUNS * ITEMS)
        print(f"{row['vendor']:<11}{row['workers']:>8}{RUNS / runs['wall']:>9.1f}"
              f"{FOREACH_RUNS * ITEMS / items['wall']:>9.1f}{1000 * runs['worker_cpu'] / RUNS:>11.1f}{db}"
              f"{per_item:>13.2f}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--leg"]:
        _leg()
    else:
        sys.exit(main())

"""Per-item cost of one foreach through the REAL worker, results collected, at 1k / 10k / 100k items.

One ``run_worker`` process (with its step processes) executes one run per size: a foreach over ``input.items``
(``max_concurrency`` ``CONCURRENCY``) whose body is a math step, collecting every result in the node's
``results`` list, not distributed (the node sets no ``batch_size``), under the default ``TRELLIS_RUN_MAX_STEPS``
(the step limit counts each frame's steps, so 100k items pass). Every superstep is checkpointed by the designer's
``OrmCheckpointer``: the live state, the new write-once parts and the superstep's trace events in one transaction.

Measured per size: the run's wall time as the worker saw it (``finished_at - started_at``), the CPU of the worker
process tree (its step processes included) and, on PostgreSQL, of the database server; per item and the growth
from the smallest size (goal: within 1.5x from 1k to 100k). SQLite always; PostgreSQL through ``.ci/postgres.sh``
when its server binaries are installed (``BENCH_WORKER_ITEMS_POSTGRES=0`` skips it, ``BENCH_WORKER_ITEMS_SQLITE=0``
skips SQLite). On a loaded machine the wall time follows the load; the CPU per item is the steadier figure, so
growth is given for both. Nothing is asserted.

    python -m bench worker_items
    BENCH_WORKER_ITEM_SIZES=1000,10000 python -m bench worker_items
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

from bench.bench_distributed import _tree_cpu
from bench.bench_workers import _postgres_cpu

REPO_ROOT = Path(__file__).resolve().parent.parent
SIZES = tuple(int(size) for size in os.environ.get("BENCH_WORKER_ITEM_SIZES", "1000,10000,100000").split(","))
CONCURRENCY = int(os.environ.get("BENCH_WORKER_ITEMS_CONCURRENCY", "4"))
GROWTH_GOAL = 1.5


def _document() -> dict[str, Any]:
    from runtime import WorkflowBuilder

    graph = WorkflowBuilder("bench-worker-items", "Worker items", input_schema={
        "type": "object", "properties": {"items": {"type": "array", "items": {"type": "integer"}}}})
    each = graph.foreach("each", "input.items", results="out", max_concurrency=CONCURRENCY)
    body = graph.use("math", id="body", input=[{"target": "op", "value": "add"}, {"target": "a", "path": each.item},
                                              {"target": "b", "value": 1}])
    graph.set_route(each, "loop", body)
    graph.set_route(body, "ok", each)
    graph.output("out", "state.out")
    return graph.build().model_dump(mode="json")


def _postmaster() -> int | None:
    """The PostgreSQL server's pid, when this leg runs against one: the parent of this connection's backend."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    return int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _leg() -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "designer.settings")
    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    from designer.models import Run
    from designer.services import runs as run_services
    from designer.services import teams as team_services
    from designer.services import workflows as workflow_services

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("bench", password="x")
    team = team_services.create_team(actor=user, name="Bench")
    workflow = workflow_services.create_workflow(actor=user, team=team, name="Items", document=_document())
    postmaster = _postmaster()
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("TRELLIS_RUN_MAX_STEPS", None)  # the default limit: a big foreach must pass it
    connection.close()
    command = [sys.executable, "manage.py", "run_worker", "--no-startup-delay", "--no-reload", "--interval", "0.1"]
    rows = []
    with tempfile.NamedTemporaryFile("w+", prefix="trellis-bench-worker-", suffix=".log") as log:
        worker = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 300
            while "Starting worker" not in Path(log.name).read_text():
                if time.monotonic() > deadline or worker.poll() is not None:
                    raise RuntimeError(f"the benchmark worker did not start:\n{Path(log.name).read_text()[-2000:]}")
                time.sleep(0.2)
            for size in SIZES:
                items = list(range(size))
                cpu_before, db_before = _tree_cpu(worker.pid), _postgres_cpu(postmaster)
                run = run_services.start_run(actor=user, workflow=workflow, input={"items": items})
                cpu = cpu_before
                while True:
                    status = Run.objects.filter(pk=run.pk).values_list("status", flat=True).get()
                    if status in ("completed", "failed", "cancelled"):
                        break
                    cpu = max(cpu, _tree_cpu(worker.pid))  # a replaced step process takes its CPU with it
                    time.sleep(0.2)
                cpu = max(cpu, _tree_cpu(worker.pid))
                done = Run.objects.get(pk=run.pk)
                if status != "completed":
                    raise RuntimeError(f"the {size}-item run ended {status}: {done.error}")
                if done.output != {"out": [i + 1 for i in items]}:
                    raise RuntimeError(f"the {size}-item run returned a wrong output")
                assert done.started_at is not None and done.finished_at is not None
                rows.append({"vendor": connection.vendor, "items": size,
                             "wall": (done.finished_at - done.started_at).total_seconds(),
                             "worker_cpu": cpu - cpu_before, "db_cpu": _postgres_cpu(postmaster) - db_before,
                             "events": done.events.count()})
                connection.close()
        finally:
            worker.terminate()
            worker.wait()
    print("BENCH-ROWS " + json.dumps(rows), flush=True)


def _run_leg(prefix: list[str], env: dict[str, str]) -> list[dict[str, Any]]:
    result = subprocess.run([*prefix, sys.executable, "-m", "bench.bench_worker_items", "--leg"], cwd=REPO_ROOT,
                            env=env, capture_output=True, text=True)
    for line in result.stdout.splitlines():
        if line.startswith("BENCH-ROWS "):
            return list(json.loads(line.removeprefix("BENCH-ROWS ")))
    raise RuntimeError(f"benchmark leg failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")


def _postgres_available() -> bool:
    return os.environ.get("BENCH_WORKER_ITEMS_POSTGRES", "1") != "0" and (
        shutil.which("initdb") is not None or any(Path("/usr/lib/postgresql").glob("*/bin/initdb")))


def main() -> int:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "DJANGO_SETTINGS_MODULE": "designer.settings"}
    rows: list[dict[str, Any]] = []
    if os.environ.get("BENCH_WORKER_ITEMS_SQLITE", "1") != "0":
        with tempfile.TemporaryDirectory(prefix="trellis-bench-") as tmp:
            rows += _run_leg([], {**env, "DATABASE_URL": f"sqlite:///{tmp}/bench.sqlite3"})
    if _postgres_available():
        rows += _run_leg([str(REPO_ROOT / ".ci" / "postgres.sh")], env)
    print(f"one foreach (math step per item, {CONCURRENCY} at once, results collected) through one run_worker; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    header = (f"{'database':<11}{'items':>9}{'wall s':>9}{'wall us/item':>14}{'worker CPU us/item':>20}"
              f"{'db CPU us/item':>16}{'growth wall':>13}{'growth CPU':>12}{'events':>9}")
    print(header)
    print("-" * len(header))
    first: dict[str, tuple[float, float]] = {}
    for row in rows:
        per_item = row["wall"] / row["items"] * 1e6
        cpu_per_item = (row["worker_cpu"] + row["db_cpu"]) / row["items"] * 1e6
        first.setdefault(row["vendor"], (per_item, cpu_per_item))
        growth, cpu_growth = per_item / first[row["vendor"]][0], cpu_per_item / first[row["vendor"]][1]
        db = f"{row['db_cpu'] / row['items'] * 1e6:,.0f}" if row["vendor"] == "postgresql" else "-"
        print(f"{row['vendor']:<11}{row['items']:>9,}{row['wall']:>9.1f}{per_item:>14,.0f}"
              f"{row['worker_cpu'] / row['items'] * 1e6:>20,.0f}{db:>16}"
              f"{growth:>12.2f}x{cpu_growth:>11.2f}x{row['events']:>9,}")
    print(f"growth = us/item at this size / at {SIZES[0]:,} items on the same database (wall; CPU = worker + "
          f"database server); goal <= {GROWTH_GOAL}x")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--leg"]:
        _leg()
    else:
        sys.exit(main())

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
    BENCH_DISTRIBUTED_ITEMS=10000 python -m bench distributed
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
WORKER_COUNTS = (1, 2, 4)
ITEMS = int(os.environ.get("BENCH_DISTRIBUTED_ITEMS", "100000"))
BATCH = int(os.environ.get("BENCH_DISTRIBUTED_BATCH", "2000"))
IN_FLIGHT = int(os.environ.get("BENCH_DISTRIBUTED_IN_FLIGHT", "8"))
#: Items of one batch (or of the one run) that run at once: the node's max_concurrency.
CONCURRENCY = int(os.environ.get("BENCH_DISTRIBUTED_CONCURRENCY", "4"))
#: The "one run" row (the same foreach inside its run); by default only for small counts, it is the slow one.
LOCAL = os.environ.get("BENCH_DISTRIBUTED_LOCAL", "1" if ITEMS <= 10_000 else "0") == "1"
TICKS = os.sysconf("SC_CLK_TCK")


def _tree_cpu(pid: int) -> float:
    """CPU seconds of a process and all its live descendants (a worker and its step processes)."""
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    fields: list[str] | None
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(entry.name)] = fields
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        fields = stats.get(current)
        if fields is not None:
            total += int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
        todo.extend(children.get(current, ()))
    return total / TICKS


def _document(batched: bool) -> dict[str, Any]:
    from runtime import WorkflowBuilder

    graph = WorkflowBuilder("bench-distributed", "Distributed", input_schema={
        "type": "object", "properties": {"items": {"type": "array", "items": {"type": "integer"}}}})
    each = graph.foreach("each", "input.items", results="out", max_concurrency=CONCURRENCY,
                         batch_size=BATCH if batched else None,
                         max_batches_in_flight=IN_FLIGHT if batched else None)
    body = graph.use("math", id="body", input=[{"target": "op", "value": "add"}, {"target": "a", "path": each.item},
                                              {"target": "b", "value": 1}])
    graph.set_route(each, "loop", body)
    graph.set_route(body, "ok", each)
    graph.output("out", "state.out")
    return graph.build().model_dump(mode="json")


def _measure(workers: int, start: Any, env: dict[str, str]) -> dict[str, float]:
    from designer.models import Run

    command = [sys.executable, "manage.py", "run_worker", "--no-startup-delay", "--no-reload", "--interval", "0.2"]
    logs = [tempfile.NamedTemporaryFile("w+", prefix="trellis-bench-worker-", suffix=".log")  # noqa: SIM115
            for _ in range(workers)]
    processes = [subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
                 for log in logs]
    try:
        # Ready once each has imported Django, forked its step processes and started polling: a worker that
        # is still starting up when the run is enqueued would count its start-up as work on the items.
        deadline = time.monotonic() + 300
        while not all("Starting worker" in Path(log.name).read_text() for log in logs):
            if time.monotonic() > deadline or any(process.poll() is not None for process in processes):
                raise RuntimeError("a benchmark worker did not start")
            time.sleep(0.2)
        before = sum(_tree_cpu(process.pid) for process in processes)
        began = time.perf_counter()
        run_id = start()
        cpu = before
        while True:
            status = Run.objects.filter(pk=run_id).values_list("status", flat=True).get()
            if status in ("completed", "failed", "cancelled"):
                break
            cpu = max(cpu, sum(_tree_cpu(process.pid) for process in processes))  # step processes may be replaced
            time.sleep(0.2)
        wall = time.perf_counter() - began
        cpu = max(cpu, sum(_tree_cpu(process.pid) for process in processes))
        if status != "completed":
            raise RuntimeError(f"the benchmark run ended {status}: {Run.objects.get(pk=run_id).error}")
        output = Run.objects.get(pk=run_id).output
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait()
        for log in logs:
            log.close()
    return {"wall": wall, "worker_cpu": cpu - before, "ok": float(output == {"out": [i + 1 for i in range(ITEMS)]})}


def _leg() -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "designer.settings")
    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    from designer.services import runs as run_services
    from designer.services import teams as team_services
    from designer.services import workflows as workflow_services

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("bench", password="x")
    team = team_services.create_team(actor=user, name="Bench")
    batched = workflow_services.create_workflow(actor=user, team=team, name="Batched", document=_document(True))
    local = workflow_services.create_workflow(actor=user, team=team, name="Local", document=_document(False))
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "TRELLIS_FOREACH_DISTRIBUTE_ABOVE": "0",
           "TRELLIS_RUN_MAX_STEPS": str(10 * ITEMS + 100)}
    connection.close()
    items = list(range(ITEMS))
    rows = []
    if LOCAL:
        row = _measure(1, lambda: run_services.start_run(actor=user, workflow=local, input={"items": items}).pk, env)
        rows.append({"vendor": connection.vendor, "mode": "one run", "workers": 1, **row})
    for workers in WORKER_COUNTS:
        row = _measure(workers, lambda: run_services.start_run(actor=user, workflow=batched,
                                                               input={"items": items}).pk, env)
        rows.append({"vendor": connection.vendor, "mode": "batches", "workers": workers, **row})
    print("BENCH-ROWS " + json.dumps(rows), flush=True)


def _run_leg(prefix: list[str], env: dict[str, str]) -> list[dict[str, Any]]:
    result = subprocess.run([*prefix, sys.executable, "-m", "bench.bench_distributed", "--leg"], cwd=REPO_ROOT,
                            env=env, capture_output=True, text=True)
    for line in result.stdout.splitlines():
        if line.startswith("BENCH-ROWS "):
            return list(json.loads(line.removeprefix("BENCH-ROWS ")))
    raise RuntimeError(f"benchmark leg failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")


def main() -> int:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "DJANGO_SETTINGS_MODULE": "designer.settings"}
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="trellis-bench-") as tmp:
        rows += _run_leg([], {**env, "DATABASE_URL": f"sqlite:///{tmp}/bench.sqlite3"})
    if os.environ.get("BENCH_DISTRIBUTED_POSTGRES") == "1":
        rows += _run_leg([str(REPO_ROOT / ".ci" / "postgres.sh")], env)
    print(f"one foreach over {ITEMS} items (math step each, {CONCURRENCY} at once); batches of {BATCH}, "
          f"{IN_FLIGHT} in flight; "
          f"{os.cpu_count()} CPUs on this machine")
    header = f"{'database':<11}{'mode':<9}{'workers':>8}{'wall s':>9}{'items/s':>10}{'speed-up':>10}" \
             f"{'CPU ms/item':>13}{'output ok':>11}"
    print(header)
    print("-" * len(header))
    base: dict[str, float] = {}
    for row in rows:
        rate = ITEMS / row["wall"]
        if row["mode"] == "batches" and row["workers"] == 1:
            base[row["vendor"]] = rate
        speed = f"{rate / base[row['vendor']]:.2f}x" if row["mode"] == "batches" and row["vendor"] in base else "-"
        print(f"{row['vendor']:<11}{row['mode']:<9}{row['workers']:>8}{row['wall']:>9.1f}{rate:>10.0f}{speed:>10}"
              f"{1000 * row['worker_cpu'] / ITEMS:>13.3f}{'yes' if row['ok'] else 'NO':>11}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--leg"]:
        _leg()
    else:
        sys.exit(main())

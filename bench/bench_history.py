"""What checkpoint history costs (issue 16): per-superstep time and bytes stored, history ``all`` vs ``none``.

One workload: a foreach over ``TRELLIS_BENCH_HISTORY_ITEMS`` items (default 2,000), 8 at a time, collecting
its results (``results=``) and appending each to a state list, so the state grows every superstep: the case
where keeping a whole state per checkpoint would cost O(n) per superstep and O(n²) in all. Measured for the
runtime's ``SqliteCheckpointer`` and ``FileCheckpointer`` (``durability="off"``: no fsync, so the figures are
the stores' own work, not the disk's latency) and the designer's ``OrmCheckpointer`` (on SQLite, in a
subprocess with its own database). Bytes stored: the stored state, parts, history and events (the SQLite
and ORM tables' value lengths; the file log's size), after the run.

    python -m bench history            # or: make bench-history
"""

from __future__ import annotations

import os
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import _workloads as w
from bench.bench_engine import table
from runtime import Engine, Workflow, WorkflowBuilder
from runtime.checkpoint import FileCheckpointer, HistoryPolicy, SqliteCheckpointer
from runtime.engine import EngineOptions
from runtime.state import SequentialIds

REPO_ROOT = Path(__file__).resolve().parents[1]
ITEMS = int(os.environ.get("TRELLIS_BENCH_HISTORY_ITEMS", "2000"))
POLICIES: dict[str, HistoryPolicy | None] = {"none": None, "all": HistoryPolicy(), "last 20": HistoryPolicy(20)}
REPEATS = int(os.environ.get("TRELLIS_BENCH_HISTORY_REPEATS", "3"))


def collecting() -> Workflow:
    g = WorkflowBuilder("bench-history", input_schema={"type": "object", "properties": {"items": {"type": "array"}}},
                        state_schema={"type": "object", "properties": {"log": {"type": "array", "default": []}}})
    each = g.foreach("each", "input.items", max_concurrency=8, results="doubled")
    body = g.use("touch", "body", input=[{"target": "x", "path": each.item}],
                 output=[{"source": ".", "target": "log", "mode": "append"}])
    g.set_route(each, "loop", body)
    g.set_route(body, "ok", each)
    g.output("count", "state.doubled")
    return g.build()


def _run(checkpointer: Any) -> tuple[float, int]:
    """(CPU seconds of this process, supersteps saved): the store's own work, whatever else loads the machine
    (SQLite and the ORM on SQLite run in this process)."""
    engine = Engine(w.registry(), EngineOptions(checkpointer=checkpointer, ids=SequentialIds(), keep_trace=0))
    workflow = collecting()
    engine.compile(workflow)
    start = time.process_time()
    result = engine.run(workflow, {"items": list(range(ITEMS))})
    wall = time.process_time() - start
    if result.status != "completed" or len(result.output["count"]) != ITEMS:
        raise RuntimeError(f"history bench: {result.status} {result.error}")
    return wall, result.run_state.step + 1


def _sqlite_bytes(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        total = 0
        for table_name, column in (("runs", "state"), ("parts", "value"), ("events", "events"),
                                   ("history", "state")):
            (size,) = db.execute(f"SELECT coalesce(sum(length({column})), 0) FROM {table_name}"  # noqa: S608
                                 ).fetchone()
            total += size
        return total
    finally:
        db.close()


def measure_runtime(store: str, policy: HistoryPolicy | None, directory: Path) -> tuple[float, int, int]:
    """(seconds, supersteps saved, bytes stored)."""
    if store == "sqlite":
        path = directory / "runs.sqlite3"
        with SqliteCheckpointer(path, durability="off", history=policy) as cp:
            wall, steps = _run(cp)
        return wall, steps, _sqlite_bytes(path)
    logs = directory / "logs"
    wall, steps = _run(FileCheckpointer(logs, durability="off", history=policy))
    return wall, steps, sum(p.stat().st_size for p in logs.iterdir())


def _orm_leg() -> None:
    w.django_leg()
    from django.db import connection

    from designer.models import Run, Team
    from designer.models import Workflow as StoredWorkflow
    from designer.runs.checkpointer import OrmCheckpointer

    rows: dict[str, list[list[float]]] = {}
    runs = [(f"{turn}-{number}", name, policy) for turn in range(REPEATS)
            for number, (name, policy) in enumerate(POLICIES.items())]
    for number, name, policy in runs:  # interleaved, so a busy spell of the machine hits every policy alike
        team = Team.objects.create(name=f"History {number}", slug=f"history-{number}")
        stored = StoredWorkflow.objects.create(team=team, slug="bench", name="Bench")

        def create_run(run_state: Any, team: Any = team, stored: Any = stored) -> Any:
            return Run.objects.create(team=team, workflow=stored, document={}, runtime_id=run_state.run_id)

        wall, steps = _run(OrmCheckpointer(team, create_run=create_run, history=policy))
        (pk,) = Run.objects.filter(team=team).values_list("pk", flat=True)
        with connection.cursor() as cursor:
            size = 0
            for sql in ("SELECT coalesce(sum(length(run_state)), 0) FROM designer_run WHERE id = %s",
                        "SELECT coalesce(sum(length(value)), 0) FROM designer_runstatepart WHERE run_id = %s",
                        "SELECT coalesce(sum(length(data)), 0) FROM designer_runevent WHERE run_id = %s",
                        "SELECT coalesce(sum(length(state)), 0) FROM designer_runcheckpoint "
                        "WHERE run_id = %s"):
                cursor.execute(sql, [pk])
                size += int(cursor.fetchone()[0])
        rows.setdefault(name, []).append([wall, steps, size])
    w.print_rows(rows)


def measure_orm() -> dict[str, list[list[float]]]:
    return dict(w.run_sqlite_leg("bench.bench_history", w.leg_env(), flag="--orm-leg"))


def main() -> int:
    repeats: dict[tuple[str, str], list[tuple[float, int, int]]] = {}
    for _ in range(REPEATS):
        for store in ("sqlite", "file"):
            for name, policy in POLICIES.items():
                with tempfile.TemporaryDirectory(prefix="trellis-bench-") as tmp:
                    repeats.setdefault((store, name), []).append(measure_runtime(store, policy, Path(tmp)))
    for name, found in measure_orm().items():
        repeats[("orm", name)] = [(wall, int(steps), int(size)) for wall, steps, size in found]
    measured = {key: (statistics.median(r[0] for r in runs), runs[0][1], runs[0][2])
                for key, runs in repeats.items()}
    rows = []
    for store in ("sqlite", "file", "orm"):
        base_wall, base_steps, base_size = measured[(store, "none")]
        for name in POLICIES:
            wall, steps, size = measured[(store, name)]
            rows.append([store, name, f"{steps:,}", f"{wall / steps * 1e6:,.0f}", f"{wall / base_wall:.2f}x",
                         f"{size:,}", f"{size / base_size:.2f}x", f"{(size - base_size) / steps:,.0f}"])
    table(f"Checkpoint history cost: a foreach over {ITEMS:,} items, 8 at a time, results collected and appended "
          "to a state list",
          ["store", "history", "supersteps", "CPU us/step", "time vs none", "bytes stored", "bytes vs none",
           "history bytes/step"], rows,
          "sqlite/file: runtime SqliteCheckpointer / FileCheckpointer with durability='off' (no fsync); orm: the "
          "designer's OrmCheckpointer on SQLite.\nCPU time of the process (engine + store; SQLite runs in it), "
          f"median of {REPEATS} interleaved runs. Bytes: stored state + parts + history + events.")
    return 0


if __name__ == "__main__":
    w.leg_or_main(_orm_leg, main, flag="--orm-leg")

"""A run that a test kills with SIGKILL: ``python -m tests.runtime.durability_child KIND DIR LIMIT SIDE``.

It counts to LIMIT one superstep at a time through a checkpointer with ``durability="batched"``
(KIND ``sqlite`` or ``file``, at most ``MAX_PENDING`` saves in flight). Each step first appends
``"<x> <saves in flight>"`` to SIDE: what it is about to compute and how far behind the disk is then,
so the test can tell which checkpoints were certainly durable when the process died.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from runtime import Engine, WorkflowBuilder
from runtime.checkpoint import FileCheckpointer, SqliteCheckpointer
from runtime.engine import EngineOptions
from runtime.state import SequentialIds
from runtime.tasks import Route, TaskRegistry

MAX_PENDING = 8
COUNTER = {"type": "object", "properties": {"x": {"type": "integer", "default": 0}}}


def workflow(limit: int) -> Any:
    g = WorkflowBuilder("count-durably", state_schema=COUNTER)
    node = g.use("tick", "tick", input=[{"target": "x", "path": "state.x"}, {"target": "limit", "value": limit}],
                 output=[{"source": ".", "target": "x"}])
    g.set_route(node, "again", node)
    g.output("x", "state.x")
    return g.build()


def checkpointer(kind: str, directory: Path) -> SqliteCheckpointer | FileCheckpointer:
    if kind == "sqlite":
        return SqliteCheckpointer(directory / "runs.sqlite3", durability="batched", max_pending=MAX_PENDING)
    return FileCheckpointer(directory / "logs", durability="batched", max_pending=MAX_PENDING)


def registry(side: Path | None, cp: SqliteCheckpointer | FileCheckpointer | None) -> TaskRegistry:
    tasks = TaskRegistry()

    @tasks.task(labels=("again", "done"))
    def tick(x: int, limit: int) -> Route:
        if side is not None and cp is not None:
            with open(side, "a", encoding="utf-8") as handle:
                handle.write(f"{x} {cp.in_flight()}\n")
            time.sleep(0.001)
        return Route("again" if x + 1 < limit else "done", x + 1)

    return tasks


def main(argv: list[str]) -> int:
    kind, directory, limit, side = argv[0], Path(argv[1]), int(argv[2]), Path(argv[3])
    cp = checkpointer(kind, directory)
    engine = Engine(registry=registry(side, cp), options=EngineOptions(checkpointer=cp, ids=SequentialIds()))
    result = engine.run(workflow(limit), None, run_id="victim")
    print(result.status, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

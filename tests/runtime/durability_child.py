"""Runs that a test kills with SIGKILL.

``python -m tests.runtime.durability_child KIND DIR LIMIT SIDE`` counts to LIMIT one superstep at a time through
a checkpointer with ``durability="batched"`` (KIND ``sqlite`` or ``file``, at most ``MAX_PENDING`` saves in
flight), or a ``FileCheckpointer`` with ``durability="sync"`` on a padded log (KIND ``file-sync``). Each step
first appends ``"<x> <saves in flight>"`` to SIDE: what it is about to compute and how far behind the disk is
then, so the test can tell which checkpoints were certainly durable when the process died.

``python -m tests.runtime.durability_child reported KIND DIR`` counts the same way with an ``on_superstep`` hook
that prints ``done <step> <x>``, and a background writer that holds each batch until the test answers: it prints
``writing`` and reads a line from stdin before it writes. The checkpointer prints ``waiting`` when the engine
waits for the disk. The test answers a ``writing`` only once the engine waits, and kills the process at the first
``done``: a hook called before its superstep is written would report a step that the kill loses.
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
PADDING = 5000
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
    if kind == "file-sync":
        # Padding a page or two at a time, so the kill may land on a save that extends it as well as on one
        # that overwrites it.
        return FileCheckpointer(directory / "logs", durability="sync", preallocate=PADDING)
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


def _say(line: str) -> None:
    """One whole line at a time: the writer thread and the engine's thread both speak."""
    sys.stdout.write(f"{line}\n")
    sys.stdout.flush()


def _held(kind: str, directory: Path) -> SqliteCheckpointer | FileCheckpointer:
    """A batched checkpointer whose writer waits for the test's word before each batch (see the docstring)."""
    base: type[SqliteCheckpointer | FileCheckpointer] = (
        SqliteCheckpointer if kind == "sqlite" else FileCheckpointer)

    class Held(base):  # type: ignore[valid-type, misc]  # one of the two stores, chosen above
        def _write(self, records: list[Any]) -> None:
            _say("writing")
            sys.stdin.readline()
            super()._write(records)

        def flush(self) -> None:
            _say("waiting")
            super().flush()

    where = directory / "runs.sqlite3" if kind == "sqlite" else directory / "logs"
    held: SqliteCheckpointer | FileCheckpointer = Held(where, durability="batched", max_pending=MAX_PENDING)
    return held


def reported(kind: str, directory: Path) -> int:
    cp = _held(kind, directory)

    def report(run_state: Any, _events: Any) -> None:
        _say(f"done {run_state.step} {run_state.root_scope.state['x']}")

    engine = Engine(registry=registry(None, None),
                    options=EngineOptions(checkpointer=cp, ids=SequentialIds(), on_superstep=report))
    engine.run(workflow(50), None, run_id="victim")
    return 0


def main(argv: list[str]) -> int:
    if argv[0] == "reported":
        return reported(argv[1], Path(argv[2]))
    kind, directory, limit, side = argv[0], Path(argv[1]), int(argv[2]), Path(argv[3])
    cp = checkpointer(kind, directory)
    engine = Engine(registry=registry(side, cp), options=EngineOptions(checkpointer=cp, ids=SequentialIds()))
    result = engine.run(workflow(limit), None, run_id="victim")
    print(result.status, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

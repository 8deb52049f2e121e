"""One side of ``bench_step_cost``: time the engine's per-step workloads with the ``runtime`` package of a given tree.

Run by ``bench/bench_step_cost.py`` as a script, never imported by it::

    python bench/_step_cost_child.py RUNTIME_ROOT THIS_ROOT RUNS WORKLOAD...

``RUNTIME_ROOT`` holds the ``runtime`` package to measure (an older commit's, unpacked); the workload
definitions (``bench._workloads``) always come from ``THIS_ROOT``, so both sides run the same documents.
Prints one JSON object: where ``runtime`` came from, and per workload the steps of one run and each run's
(CPU seconds, wall seconds).
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import time
from collections.abc import Callable
from typing import Any


def _measure(prepare: Callable[[], Any], run: Callable[[Any], Any], runs: int) -> list[tuple[float, float]]:
    """(CPU, wall) seconds of ``run(prepare())``, ``runs`` times after 3 untimed warm-up runs."""
    times = []
    for number in range(3 + runs):
        prepared = prepare()
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        run(prepared)
        if number >= 3:  # the warm-up fills caches and lets the allocator settle
            times.append((time.process_time() - cpu, time.perf_counter() - wall))
    return times


def _workload(name: str) -> tuple[int, Callable[[], Any], Callable[[Any], Any]]:
    """(node steps per run, prepare, run) of workload ``name``: ``prepare`` (not timed) makes an engine and
    compiles the document; ``run`` runs it once and checks the result."""
    from bench import _workloads as w
    from runtime import Engine
    from runtime.engine import EngineOptions
    try:  # the tree compared against may predate the grouped surface (issue 28)
        from runtime.checkpoint import InMemoryCheckpointer
    except ImportError:
        from runtime.checkpoint import InMemoryCheckpointer  # type: ignore[attr-defined,no-redef]

    size = 2_000 if name.startswith("foreach") else 200
    workflow = w.trellis_foreach() if name.startswith("foreach") else w.trellis_chain(size)
    value: Any = {"items": list(range(size))} if name.startswith("foreach") else None
    steps = size + 1 if name.startswith("foreach") else size
    observed = name.endswith("-traced")  # an in-memory checkpointer and every event kept, as a designer run has

    def engine() -> Any:
        made = Engine(w.registry(), EngineOptions(checkpointer=InMemoryCheckpointer() if observed else None,
                                                  keep_trace=None if observed else 0))
        made.compile(workflow)
        return made

    def check(result: Any) -> None:
        if result.status != "completed" or (not name.startswith("foreach") and result.output != {"x": size}):
            raise RuntimeError(f"{name}: {result.status} {result.output!r} {result.error}")

    if name.startswith("chain-async"):
        loop = asyncio.new_event_loop()

        def arun(made: Any) -> None:
            check(loop.run_until_complete(made.arun(workflow, value)))

        return steps, engine, arun

    def run(made: Any) -> None:
        check(made.run(workflow, value))

    return steps, engine, run


def main(argv: list[str]) -> int:
    runtime_root, this_root, runs, names = argv[0], argv[1], int(argv[2]), argv[3:]
    sys.path[:1] = [runtime_root, this_root]  # instead of this script's own folder
    import runtime

    found: dict[str, Any] = {"runtime": runtime.__file__, "workloads": {}}
    for name in names:
        steps, prepare, run = _workload(name)
        found["workloads"][name] = {"steps": steps, "times": _measure(prepare, run, runs)}
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

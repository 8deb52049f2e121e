"""Engine cost per node step: this tree against an older commit, side by side in one run.

Issue 17 asks that the engine's per-step cost stays at (or below) what it was at commit 4416637. Both
sides run in child processes that take turns (base, this tree, then this tree, base, ...), so a load
change on the shared machine hits both alike; each child imports its own tree's ``runtime`` package and
this tree's workloads (``bench._workloads``), so both run the same documents. The base commit's
``runtime/`` is unpacked with ``git archive`` into a temporary folder.

Workloads (one run = one engine call; the engine is made and the document compiled before timing):

- ``chain``: 200 task nodes in a row, no checkpointer, ``keep_trace=0`` (the issue's figure);
- ``chain-async``: the same through ``Engine.arun`` (the async driver);
- ``chain-traced``: the same with an ``InMemoryCheckpointer`` and every trace event kept, so every event
  is built and stored, as in a designer run;
- ``foreach``: a foreach over 2,000 items, no checkpointer, ``keep_trace=0``.

Prints, per workload and side, the min and the median of CPU microseconds per step (``process_time``,
all threads) and of wall microseconds per step, and this tree / base. Timings are printed, never
asserted.

    make bench-step-cost                      # or: python -m bench step_cost
    TRELLIS_BENCH_BASE=<commit> TRELLIS_BENCH_ROUNDS=10 TRELLIS_BENCH_RUNS=3 make bench-step-cost
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.bench_engine import table

HERE = Path(__file__).resolve().parents[1]
CHILD = HERE / "bench" / "_step_cost_child.py"
WORKLOADS = ("chain", "chain-async", "chain-traced", "foreach")
BASE = os.environ.get("TRELLIS_BENCH_BASE", "4416637")
ROUNDS = int(os.environ.get("TRELLIS_BENCH_ROUNDS", "10"))
RUNS = int(os.environ.get("TRELLIS_BENCH_RUNS", "3"))  # timed runs of each workload per child process


def unpack(commit: str, into: Path) -> Path:
    """The ``runtime`` package of ``commit``, unpacked under ``into``; a clear error when the clone lacks it."""
    archive = subprocess.run(["git", "-C", str(HERE), "archive", "--format=tar", commit, "runtime"],
                             capture_output=True, check=False)
    if archive.returncode != 0:
        raise SystemExit(f"cannot read runtime/ at {commit!r} ({archive.stderr.decode().strip()}); "
                         "fetch the full history (git fetch --unshallow) or set TRELLIS_BENCH_BASE")
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def child(root: Path, names: tuple[str, ...], script: Path = CHILD) -> dict[str, Any]:
    """What ``script`` (run as ``script RUNTIME_ROOT THIS_ROOT RUNS WORKLOAD...``) measured with ``root``'s runtime."""
    out = subprocess.run([sys.executable, str(script), str(root), str(HERE), str(RUNS), *names],
                         capture_output=True, text=True, check=False, cwd=root)
    if out.returncode != 0:
        raise SystemExit(f"the child measuring {root} failed:\n{out.stderr}")
    found: dict[str, Any] = json.loads(out.stdout)
    if not found["runtime"].startswith(str(root)):
        raise SystemExit(f"the child meant for {root} imported {found['runtime']}")
    return found


Times = dict[tuple[str, str], list[tuple[float, float]]]


def alternate(sides: dict[str, Path], names: tuple[str, ...], *, script: Path = CHILD) -> tuple[dict[str, int], Times]:
    """Each workload's steps per run, and (CPU, wall) seconds per (workload, side), the sides' child processes
    taking turns for ``ROUNDS`` rounds so that a change of load hits both alike."""
    times: Times = {}
    steps: dict[str, int] = {}
    for number in range(ROUNDS):
        order = list(sides) if number % 2 == 0 else list(reversed(sides))
        for side in order:
            for name, found in child(sides[side], names, script)["workloads"].items():
                steps[name] = found["steps"]
                times.setdefault((name, side), []).extend(tuple(pair) for pair in found["times"])
        print(f"  round {number + 1} of {ROUNDS} done", flush=True)
    return steps, times


def side_by_side(names: tuple[str, ...], sides: dict[str, Path], steps: dict[str, int], times: Times,
                 unit: float) -> list[list[str]]:
    """Table rows: per workload and side the min and median CPU and wall time per step (seconds x ``unit``), then
    the last side / the first."""
    rows = []
    for name in names:
        figures = {}
        for side in sides:
            cpu = [c / steps[name] * unit for c, _ in times[(name, side)]]
            wall = [w / steps[name] * unit for _, w in times[(name, side)]]
            figures[side] = (min(cpu), statistics.median(cpu), min(wall), statistics.median(wall))
            rows.append([name, side, f"{len(cpu)}", *(f"{figure:,.1f}" for figure in figures[side])])
        base, this = figures[next(iter(sides))], figures[list(sides)[-1]]
        rows.append([name, "this / base", "", *(f"{t / b:.2f}x" for t, b in zip(this, base, strict=True))])
    return rows


@contextmanager
def base_and_this_tree(base: str, what: str = "") -> Iterator[tuple[Path, dict[str, Path]]]:
    """A temporary folder and the two sides' roots: ``base``'s runtime unpacked in the folder, and this tree.
    Prints the load at the start (and ``what``); the folder is removed afterwards."""
    print(f"load average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores; "
          f"{ROUNDS} rounds x {RUNS} runs per side and workload{what}")
    folder = Path(tempfile.mkdtemp(prefix="trellis-bench-"))
    try:
        yield folder, {f"base {base}": unpack(base, folder), "this tree": HERE}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def finished(name: str, started: float) -> None:
    print(f"\n{name} took {time.perf_counter() - started:,.0f} s; load average at end: "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")


def main() -> int:
    started = time.perf_counter()
    with base_and_this_tree(BASE) as (_, sides):
        steps, times = alternate(sides, WORKLOADS)
    table(f"Engine microseconds per node step, this tree vs {BASE} (alternating child processes)",
          ["workload", "side", "runs", "cpu min", "cpu median", "wall min", "wall median"],
          side_by_side(WORKLOADS, sides, steps, times, 1e6),
          note="cpu = process_time (all threads) / steps; wall = perf_counter / steps; this / base below 1.00x is "
          "faster")
    finished("bench_step_cost", started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

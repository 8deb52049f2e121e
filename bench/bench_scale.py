"""Foreach at scale (issue 14): per-item cost and peak memory up to 1M items, and the durable checkpointer.

1. Per-item cost of a foreach that collects its results (``results=``), at
   1k / 10k / 100k / 1M items, in memory: no checkpointer and
   ``InMemoryCheckpointer``, the trace not retained (``keep_trace=0``), plus
   the same with an ``append`` output binding instead of ``results``, and
   with the whole trace kept (the old default). Goal: per-item cost grows
   less than 1.3x from 1k to 1M.
2. Peak memory (max RSS of a fresh process) at 100k and 1M items, and what
   the run added per item over the process's size before it started.
3. The durable checkpointers (``SqliteCheckpointer`` and ``FileCheckpointer``)
   against LangGraph's ``SqliteSaver`` on a linear chain, a back-edge loop and
   a fan-out, in the two pairs of modes with the same guarantee: Trellis
   ``durability="sync"`` vs LangGraph ``durability="sync"``, and Trellis
   ``"batched"`` (group commit) vs LangGraph's default ``"async"``. Goal: at
   least 2x faster on each. Wall-clock time: the fsyncs are the cost.

Every size of (1) and (2) runs in a fresh process, so one measurement's heap
does not slow the next. Timings are printed, never asserted.

    python -m bench scale                       # everything (1M: 3 variants, about 2 minutes CPU each)
    TRELLIS_BENCH_MAX_ITEMS=100000 python -m bench scale   # stop at 100k items
    TRELLIS_BENCH_VARIANTS=results,append-nocp python -m bench scale   # only those variants of (1) and (2)
    TRELLIS_BENCH_SCALE=durable python -m bench scale      # only section 3 (per_item, durable, no_fsync)
"""

from __future__ import annotations

import gc
import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from bench import _workloads as w
from bench.bench_engine import Timing, table, timed
from runtime import Engine, Workflow, WorkflowBuilder
from runtime.checkpoint import FileCheckpointer, HistoryPolicy, InMemoryCheckpointer, SqliteCheckpointer
from runtime.engine import EngineOptions

SIZES = (1_000, 10_000, 100_000, 1_000_000)
MEMORY_SIZES = (100_000, 1_000_000)
GROWTH_GOAL = 1.3
DURABLE_GOAL = 2.0
REPO = Path(__file__).resolve().parents[1]

#: keep_trace of a variant that passes none: the engine's default bound (issue 31: the defaults must be safe).
DEFAULTS = "default"
#: variant -> (description, collect with results= (else append), checkpointer, keep_trace, largest size measured)
VARIANTS: dict[str, tuple[str, bool, str | None, int | str | None, int]] = {
    # Engine(registry=...) and nothing else: what a user's first program does. Beside "results" (tuned: no trace
    # kept), it shows what the default trace bound costs in time and memory up to 1M items.
    "defaults": ("results=, Engine defaults", True, None, DEFAULTS, SIZES[-1]),
    "results": ("results=, no checkpointer", True, None, 0, SIZES[-1]),
    "append-nocp": ("append binding, no checkpointer", False, None, 0, SIZES[-1]),
    # InMemoryCheckpointer keeps every trace event (its load_events), about 2 KB per item: 2 GB at 1M items
    # measures the store's design, not the engine, so these two stop at 100k.
    "results-cp": ("results=, InMemoryCheckpointer", True, "memory", 0, 100_000),
    "append": ("append binding, InMemoryCheckpointer", False, "memory", 0, 100_000),
    # Measured for its memory only (events and parts go to disk): 100k and 1M.
    "results-sqlite": ("results=, SqliteCheckpointer(durability='off')", True, "sqlite", 0, SIZES[-1]),
    # The same keeping every checkpoint (HistoryPolicy()): one history row per superstep, which must not grow
    # with the items collected so far (it did while each row listed its part keys).
    "results-sqlite-all": ("results=, SqliteCheckpointer(durability='off', history all)", True, "sqlite-all", 0,
                           100_000),
    # The point (the GC walking a retained trace) is made at 100k.
    "results-trace": ("results=, whole trace kept", True, None, None, 100_000),
}
#: Sizes below this run REPEATS times in fresh processes and report the median CPU time: a run of a few
#: hundred milliseconds on a shared machine is noisy, and the growth figures divide by the 1k one.
REPEAT_BELOW = 100_000
REPEATS = 3


def collecting(*, results: bool) -> Workflow:
    # Typed items: a flat item schema is checked as schema work, so a million integers pass the validator's budget.
    g = WorkflowBuilder("bench-collect", input_schema={"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "integer"}}}})
    each = g.foreach("each", "input.items", results="out" if results else None)
    output = [] if results else [{"source": ".", "target": "out", "mode": "append"}]
    body = g.use("touch", "body", input=[{"target": "x", "path": each.item}], output=output)
    g.set_route(each, "loop", body)
    g.set_route(body, "ok", each)
    return g.build()


# ---------------------------------------------------------------------------
# One measurement in a fresh process


def measure_once(variant: str, size: int) -> dict[str, Any]:
    """Run one foreach of ``size`` items; CPU and wall time, peak RSS before and after (KiB), and for SQLite the
    size of the database file and its WAL after the run."""
    _label, results, store, keep, _largest = VARIANTS[variant]
    workflow = collecting(results=results)
    checkpointer: Any = None
    directory: tempfile.TemporaryDirectory[str] | None = None
    if store == "memory":
        checkpointer = InMemoryCheckpointer()
    elif store in ("sqlite", "sqlite-all"):
        directory = tempfile.TemporaryDirectory(prefix="trellis-bench-")  # removed when the process ends
        checkpointer = SqliteCheckpointer(Path(directory.name) / "runs.sqlite3", durability="off",
                                          history=HistoryPolicy() if store == "sqlite-all" else None)
    options: dict[str, Any] = {} if keep == DEFAULTS else {"keep_trace": keep}
    engine = Engine(registry=w.registry(), options=EngineOptions(checkpointer=checkpointer, **options))
    engine.compile(workflow)
    items = list(range(size))
    gc.collect()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    wall, cpu = time.perf_counter(), time.process_time()
    result = engine.run(workflow, {"items": items})
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = result.state.get("out")
    if result.status != "completed" or not isinstance(out, list) or len(out) != size or out[-1] != 2 * (size - 1):
        raise RuntimeError(f"{variant} at {size}: wrong result ({result.status}, {len(out or [])} results)")
    stored = None if directory is None else sum(p.stat().st_size for p in Path(directory.name).iterdir())
    return {"cpu": cpu, "wall": wall, "before_kib": before, "peak_kib": peak, "trace": len(result.trace),
            "file_bytes": stored}


def measure(variant: str, size: int) -> dict[str, Any]:
    """``measure_once`` in a fresh process (its peak RSS is the run's alone); small sizes REPEATS times, the run
    with the median CPU time kept."""
    runs = []
    for _ in range(REPEATS if size < REPEAT_BELOW else 1):
        done = subprocess.run([sys.executable, "-m", "bench.bench_scale", "--one", variant, str(size)], cwd=REPO,
                              capture_output=True, text=True, timeout=int(os.environ.get("TRELLIS_BENCH_TIMEOUT",
                                                                                         "7200")))
        if done.returncode != 0:
            raise RuntimeError(f"{variant} at {size} failed: {done.stderr[-2000:]}")
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    measured: dict[str, Any] = sorted(runs, key=lambda run: run["cpu"])[len(runs) // 2]
    return measured


def max_items() -> int:
    return int(os.environ.get("TRELLIS_BENCH_MAX_ITEMS", str(SIZES[-1])))


def section_per_item() -> dict[tuple[str, int], dict[str, Any]]:
    sizes = [size for size in SIZES if size <= max_items()]
    measured: dict[tuple[str, int], dict[str, Any]] = {}
    rows = []
    wanted = os.environ.get("TRELLIS_BENCH_VARIANTS")
    for variant, (label, *_rest, largest) in VARIANTS.items():
        if wanted and variant not in wanted.split(","):
            continue
        for size in sizes:
            if size > largest or (variant == "results-sqlite" and size not in MEMORY_SIZES):
                continue
            measured[(variant, size)] = found = measure(variant, size)
            stored = "" if found.get("file_bytes") is None else f", file {found['file_bytes'] / 2**20:,.1f} MiB"
            print(f"  measured {label} at {size:,} items: {found['cpu']:.2f} s CPU, {found['wall']:.2f} s wall, "
                  f"peak {found['peak_kib'] / 1024:,.0f} MiB{stored}", flush=True)
        first = measured.get((variant, sizes[0]))
        if first is None:
            continue
        for size in sizes:
            if (variant, size) not in measured:
                continue
            found = measured[(variant, size)]
            per_item = found["cpu"] / size * 1e6
            growth = per_item / (first["cpu"] / sizes[0] * 1e6)
            rows.append([label, f"{size:,}", f"{per_item:,.1f}", f"{found['wall'] / size * 1e6:,.1f}",
                         f"{growth:.2f}x", "yes" if growth <= GROWTH_GOAL else "NO"])
    table("1. Foreach collecting results: microseconds per item (fresh process per size)",
          ["variant", "items", "CPU us/item", "wall us/item", f"growth vs {sizes[0]:,}", "goal met?"], rows,
          f"growth = CPU us/item at this size / at {sizes[0]:,}; goal: <= {GROWTH_GOAL:g}x. Each figure is one "
          f"fresh process; below {REPEAT_BELOW:,} items the median of {REPEATS}.")
    return measured


def section_memory(measured: dict[tuple[str, int], dict[str, Any]]) -> None:
    rows = []
    for variant in ("defaults", "results", "append-nocp", "results-cp", "append", "results-sqlite"):
        label = VARIANTS[variant][0]
        for size in MEMORY_SIZES:
            found = measured.get((variant, size))
            if found is None:
                continue
            peak, before = found["peak_kib"] / 1024, found["before_kib"] / 1024
            added = max(0.0, found["peak_kib"] - found["before_kib"]) * 1024 / size
            rows.append([label, f"{size:,}", f"{peak:,.0f}", f"{before:,.0f}", f"{added:,.0f}"])
    if rows:
        table("2. Peak memory (max RSS of the measuring process)",
              ["variant", "items", "peak MiB", "MiB before the run", "bytes/item added"], rows,
              "before the run = interpreter, imports and the input list; added = what the run needed on top: "
              "the item snapshot and the result list (8 bytes per reference each, plus the result ints) and live "
              "frames; RunResult.trace is not retained (keep_trace=0) except in the defaults row, which holds the "
              "engine's default bound of the last 1,000 events. InMemoryCheckpointer keeps every trace "
              "event in memory by design (its load_events), about 2 KB per item; SqliteCheckpointer keeps them "
              "on disk.")


# ---------------------------------------------------------------------------
# Durable checkpointers


def trellis_durable(workflow: Workflow, inputs: list[Any], directory: Path, *, durable: bool = True,
                    store: str = "sqlite", durability: str | None = None,
                    batches: list[tuple[int, int]] | None = None) -> tuple[Timing, Any]:
    """Trellis with ``SqliteCheckpointer`` (``store="sqlite"``) or ``FileCheckpointer`` (``"file"``) in the given
    durability mode; ``batches`` collects (commits, saves) of each run's background writer (``"batched"``)."""
    numbers = itertools.count(1)
    mode: Any = durability or ("sync" if durable else "off")

    def checkpointer() -> Any:
        if store == "sqlite":
            return SqliteCheckpointer(directory / f"trellis{next(numbers)}.sqlite3", durability=mode)
        return FileCheckpointer(directory / f"log{next(numbers)}", durability=mode)

    def close(used: Any) -> None:
        writer = used._writer
        if writer is not None and batches is not None:
            used.flush()
            batches.append((writer.batches, writer.records))
        used.close()

    prepare, run = w.trellis_runs(workflow, inputs, checkpointer, who=f"trellis {store}", close=close)
    return timed(run, prepare)


def langgraph_durable(graph: Any, inputs: list[Any], recursion_limit: int, directory: Path, durability: str,
                      *, fsync: bool = True) -> tuple[Timing, Any]:
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    counter = [0]

    def prepare() -> Any:
        counter[0] += 1
        saver = SqliteSaver(sqlite3.connect(directory / f"langgraph{counter[0]}.sqlite3", check_same_thread=False))
        saver.setup()
        if not fsync:  # what Trellis's durable=False does: safe against a killed process, not a power cut
            saver.conn.execute("PRAGMA synchronous=NORMAL")
        return graph.compile(checkpointer=saver)

    def run(app: Any) -> Any:
        result = None
        for number, value in enumerate(inputs):
            config = {"recursion_limit": recursion_limit, "configurable": {"thread_id": f"t{number}"}}
            result = app.invoke(value, config, durability=durability)
        return result

    return timed(run, prepare)


def fanout(concurrency: int) -> Workflow:
    g = WorkflowBuilder("bench-fanout", input_schema={"type": "object", "properties": {"items": {"type": "array"}}})
    each = g.foreach("each", "input.items", max_concurrency=concurrency)
    body = g.use("touch", "body", input=[{"target": "x", "path": each.item}])
    g.set_route(each, "loop", body)
    g.set_route(body, "ok", each)
    return g.build()


def durable_cases() -> list[tuple[str, int, Workflow, list[Any], Any, list[Any], int]]:
    items = list(range(1_000))
    return [
        ("linear: chain 100 nodes x 10 calls", 1_000, w.trellis_chain(100), [None] * 10, w.langgraph_chain(100),
         [{"x": 0}] * 10, 110),
        ("loop: 1,000 back-edge steps", 1_000, w.trellis_loop(1_000), [None], w.langgraph_loop(1_000),
         [{"x": 0}], 1_010),
        ("fan-out: 1,000 items all at once", 1_001, fanout(1_000), [{"items": items}], w.langgraph_foreach(),
         [{"items": items}], 10),
        ("(fan-out, Trellis one item per superstep)", 1_001, fanout(1), [{"items": items}],
         w.langgraph_foreach(), [{"items": items}], 10),
    ]


def _per_commit(batches: list[tuple[int, int]]) -> str:
    commits = sum(b for b, _ in batches)
    return f"{sum(r for _, r in batches) / commits:,.1f}" if commits else "-"


def _median_timing(timings: list[Timing]) -> Timing:
    return Timing(statistics.median(t.cpu for t in timings), statistics.median(t.wall for t in timings))


def section_durable() -> None:
    cases = durable_cases()
    rows = []
    # The six sides of a row take turns, ROUNDS times, so a change in the machine's load (its fsyncs are shared
    # with everyone's) falls on all of them; each figure is the median over the rounds.
    rounds = int(os.environ.get("TRELLIS_BENCH_ROUNDS", "3"))
    with tempfile.TemporaryDirectory(prefix="trellis-bench-") as tmp:
        directory = Path(tmp)
        for label, steps, workflow, inputs, graph, lg_inputs, limit in cases:
            sql_batches: list[tuple[int, int]] = []
            log_batches: list[tuple[int, int]] = []
            trellis = partial(trellis_durable, workflow, inputs, directory)
            langgraph = partial(langgraph_durable, graph, lg_inputs, limit, directory)
            sides: dict[str, Callable[[], tuple[Timing, Any]]] = {
                "sql_sync": partial(trellis, store="sqlite", durability="sync"),
                "log_sync": partial(trellis, store="file", durability="sync"),
                "sql_batched": partial(trellis, store="sqlite", durability="batched", batches=sql_batches),
                "log_batched": partial(trellis, store="file", durability="batched", batches=log_batches),
                "lg_sync": partial(langgraph, "sync"),
                "lg_async": partial(langgraph, "async"),
            }
            measured: dict[str, list[Timing]] = {name: [] for name in sides}
            for _ in range(rounds):
                for name, side in sides.items():
                    measured[name].append(side()[0])
            sql_sync, log_sync, sql_batched, log_batched, lg_sync, lg_async = (
                _median_timing(measured[name]) for name in sides)
            best_sync = min(sql_sync.wall, log_sync.wall)
            best_batched = min(sql_batched.wall, log_batched.wall)
            informational = label.startswith("(")
            goal = "-" if informational else ("yes" if lg_async.wall / best_batched >= DURABLE_GOAL else "NO")

            def per_step(t: Timing, steps: int = steps) -> str:
                return f"{t.wall / steps * 1e6:,.0f}"

            rows.append([label, f"{steps:,}", per_step(sql_sync), per_step(log_sync), per_step(lg_sync),
                         f"{lg_sync.wall / best_sync:,.1f}x", per_step(sql_batched), per_step(log_batched),
                         per_step(lg_async), f"{lg_async.wall / best_batched:,.1f}x",
                         f"{lg_sync.wall / best_batched:,.1f}x", goal,
                         f"{_per_commit(sql_batches)} / {_per_commit(log_batches)}"])
            print(f"  measured {label}", flush=True)
    table("3. Durable checkpointers, wall-clock us per step: Trellis SQLite / file log vs LangGraph SqliteSaver",
          ["workload", "steps", "sync sqlite", "sync log", "LG sync", "sync ratio", "batched sqlite",
           "batched log", "LG async", "batched vs LG async", "batched vs LG sync", "goal met?",
           "saves per commit (sqlite / log)"], rows,
          f"Median of {rounds} rounds in which the six sides take turns; ratio = LangGraph / the faster Trellis store\n"
          "of the pair. Same guarantee per pair:\n"
          "  sync:    Trellis durability='sync' (one commit + fsync per superstep, before the next starts) vs\n"
          "           LangGraph durability='sync' (its checkpoint put awaited after each step; task writes in the\n"
          "           background): both durable before the next step starts.\n"
          "  batched: Trellis durability='batched' (a background writer commits the queued supersteps with one\n"
          "           fsync; at most max_pending=64 in flight; synchronous when the run stops) vs LangGraph's\n"
          "           default durability='async' (each checkpoint put in the background while the next step runs,\n"
          "           awaited at the end): both durable when the call returns, a crash replays the steps in flight.\n"
          "  LangGraph SqliteSaver (langgraph-checkpoint-sqlite): WAL, synchronous left at SQLite's default FULL,\n"
          "  two commits (fdatasync) per step: put_writes and put. Trellis: WAL + synchronous=FULL / fdatasync.\n"
          f"  goal: batched vs LangGraph's default (async) >= {DURABLE_GOAL:g}x. The row in parentheses runs the\n"
          "  fan-out as 1,000 supersteps (one item each) where LangGraph's Send needs one: informational. Both\n"
          "  sides then fsync about 1,020 times, but LangGraph's are task writes synced by a background thread\n"
          "  while the superstep's other tasks run, and Trellis's max_concurrency=1 makes each item a superstep\n"
          "  that is on disk before the next item starts (a stronger promise), so every fsync is on its critical\n"
          "  path. Like for like (one superstep of 1,000 items) is the fan-out row above.")


def section_no_fsync() -> None:
    rows = []
    with tempfile.TemporaryDirectory(prefix="trellis-bench-") as tmp:
        directory = Path(tmp)
        for label, steps, workflow, inputs, graph, lg_inputs, limit in durable_cases():
            trellis, _ = trellis_durable(workflow, inputs, directory, durable=False)
            langgraph, _ = langgraph_durable(graph, lg_inputs, limit, directory, "sync", fsync=False)
            ratio = langgraph.wall / trellis.wall
            goal = ("yes" if ratio >= DURABLE_GOAL else "NO") if not label.startswith("(") else "-"
            rows.append([label, f"{steps:,}", f"{trellis.wall / steps * 1e6:,.1f}",
                         f"{langgraph.wall / steps * 1e6:,.1f}", f"{ratio:,.1f}x", goal,
                         f"{langgraph.cpu / trellis.cpu:,.1f}x"])
            print(f"  measured {label} without fsync", flush=True)
    table("4. The same without an fsync per commit (SQLite synchronous=NORMAL on both: a killed process loses "
          "nothing, a power cut may lose the last supersteps)",
          ["workload", "steps", "trellis us/step", "langgraph sync us/step", "ratio", "goal met?", "CPU ratio"],
          rows, "Trellis SqliteCheckpointer(durable=False) vs LangGraph SqliteSaver on a synchronous=NORMAL "
                "connection, durability='sync'")


def main() -> int:
    # TRELLIS_BENCH_SCALE=durable,no_fsync runs only those sections (per_item includes memory).
    wanted = set(os.environ.get("TRELLIS_BENCH_SCALE", "per_item,durable,no_fsync").split(","))
    if "per_item" in wanted:
        measured = section_per_item()
        section_memory(measured)
    if "durable" in wanted:
        section_durable()
    if "no_fsync" in wanted:
        section_no_fsync()
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--one":
        print(json.dumps(measure_once(sys.argv[2], int(sys.argv[3]))))
        sys.exit(0)
    sys.exit(main())

"""What a failed item costs: a collected foreach whose odd items raise (its tolerance takes them), beside the same
foreach whose items all succeed, run by ``runtime.Engine`` with its ``SqliteCheckpointer`` (a checkpoint per
superstep, ``durable=False``: no fsync to wait for), at a few sizes.

Measured per run: the process's CPU per item, its growth from the smallest size (flat is <= 1.5x), and the objects
the cyclic garbage collector freed during the run per failed item. The collector's figure is how many objects a
failed step left in reference cycles (before engine19 about 27: the step's exception, its traceback's frames, the
step's record and its payload); the CPU growth shows what a failed item costs at scale (a tolerated failure is
recorded in the foreach activation's ``failed`` list: before failed19 every checkpoint wrote it again, 134 to
1,929 us/item from 1k to 20k items; since, its full chunks are write-once parts, 103 to 89). Nothing is asserted;
the machine's cores and load are printed beside the figures.

    python -m bench failed_items
    BENCH_FAILED_ITEMS_SIZES=1000,4000,16000 python -m bench failed_items
"""

from __future__ import annotations

import gc
import os
import tempfile
import time
from typing import Any

from bench._table import table
from runtime import Engine, Workflow, WorkflowBuilder
from runtime.checkpoint import SqliteCheckpointer
from runtime.engine import EngineOptions
from runtime.tasks import TaskRegistry

SIZES = tuple(int(size) for size in os.environ.get("BENCH_FAILED_ITEMS_SIZES", "1000,4000").split(","))
CONCURRENCY = 16


def _registry() -> TaskRegistry:
    tasks = TaskRegistry()

    @tasks.task
    def odd_fails(x: int) -> int:
        if x % 2:
            raise ValueError(f"item {x} is odd")
        return x

    @tasks.task
    def succeeds(x: int) -> int:
        return x

    return tasks


def _document(task: str, items: int) -> Workflow:
    graph = WorkflowBuilder("bench-failed-items", input_schema={"type": "object", "properties": {
        "xs": {"type": "array", "items": {"type": "integer"}}}})
    each = graph.foreach("each", "input.xs", results="out", max_concurrency=CONCURRENCY,
                         tolerated_failure_count=items)
    body = graph.use(task, id="body", input=[{"target": "x", "path": each.item}])
    graph.chain(each, "loop", body, "ok", each)
    graph.output("out", "state.out")
    return graph.build()


def _collected() -> int:
    return sum(generation["collected"] for generation in gc.get_stats())


def _measure(tasks: TaskRegistry, task: str, items: int) -> dict[str, Any]:
    """One run of ``items`` items in a fresh checkpoint database: CPU seconds and objects the collector freed."""
    workflow = _document(task, items)
    with tempfile.TemporaryDirectory(prefix="trellis-bench-") as tmp, \
            SqliteCheckpointer(f"{tmp}/runs.sqlite3", durable=False) as checkpointer, \
            Engine(registry=tasks, options=EngineOptions(checkpointer=checkpointer, keep_trace=0)) as engine:
        engine.compile(workflow)
        gc.collect()
        collected, cpu = _collected(), time.process_time()
        result = engine.run(workflow, {"xs": list(range(items))})
        seconds = time.process_time() - cpu
        status, output = result.status, result.output
        del result
        gc.collect()
        freed = _collected() - collected
    expected = [None if task == "odd_fails" and i % 2 else i for i in range(items)]
    if status != "completed" or output != {"out": expected}:
        raise RuntimeError(f"the {items}-item {task} run ended {status} with a wrong output")
    return {"cpu": seconds, "freed": freed}


def main() -> int:
    tasks = _registry()
    _measure(tasks, "odd_fails", 50)  # imports and the first compile out of the way
    cells = []
    first: dict[str, float] = {}
    for task, label in (("succeeds", "all succeed"), ("odd_fails", "odd items fail")):
        for items in SIZES:
            row = _measure(tasks, task, items)
            per_item = row["cpu"] / items * 1e6
            first.setdefault(task, per_item)
            failed = items // 2 if task == "odd_fails" else 0
            cells.append([label, f"{items:,}", f"{failed:,}", f"{per_item:,.0f}", f"{per_item / first[task]:.2f}x",
                          f"{row['freed'] / failed:.1f}" if failed else f"{row['freed']:,} in all"])
    table(f"A collected foreach ({CONCURRENCY} at once) whose odd items fail (tolerated), beside one whose items "
          f"all succeed; runtime.Engine + SqliteCheckpointer(durable=False); {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f}",
          ["items", "size", "failed", "CPU us/item", "growth", "objects the GC freed / failed item"], cells,
          f"growth = CPU per item at this size / at {SIZES[0]:,} items, same items (flat: <= 1.5x); GC freed = "
          "objects the cyclic collector freed during the run and right after it, the result dropped")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

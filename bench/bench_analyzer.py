"""Analyzer speed: full analysis and one node's path options on generated workflows.

The generated workflow nests foreach nodes ``depth`` deep (each iterating a
list field of its parent's item) and spreads typed task nodes over every
level; each task binds one field of the innermost item, one of the outermost
item and one of input, and appends its result to state. Goals: roughly linear
growth (about 10x from 1,000 to 10,000 nodes), a 1,000-node analysis well
under 100 ms, path options for one node under 5 ms.

Each timed series starts after ``gc.collect()``: building a 10,000-node
document leaves hundreds of thousands of young objects, and the full
collection they are due would otherwise land inside whichever analysis runs
next. What the analyzer itself costs the collector is shown separately:
``gc/run`` is the number of collections (generation 0/1/2) one analysis
triggers. ``cpu`` is process time, less disturbed than wall time on a busy
machine; growth ratios use wall time.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from runtime import Workflow, analyze
from runtime.tasks import TaskRegistry

DEPTH = 10
SIZES = (100, 1_000, 10_000)


class Score(BaseModel):
    total: float
    label: str
    tags: list[str] = []


def registry() -> TaskRegistry:
    tasks = TaskRegistry()

    @tasks.task
    def score(name: str, value: int, weight: float = 1.0) -> Score:
        return Score(total=value * weight, label=name)

    return tasks


def item_schema(level: int, depth: int) -> dict[str, Any]:
    props: dict[str, Any] = {"name": {"type": "string", "title": f"Name {level}"},
                             "value": {"type": "integer"},
                             "meta": {"type": "object", "properties": {"owner": {"type": "string"},
                                                                       "region": {"type": "string"}}}}
    if level < depth:
        props["children"] = {"type": "array", "items": item_schema(level + 1, depth)}
    return {"type": "object", "properties": props, "required": list(props)}


def generate(nodes: int, depth: int = DEPTH) -> tuple[Workflow, str]:
    """A valid workflow of about ``nodes`` nodes; returns it and the id of an innermost task."""
    per_level = max(1, (nodes - depth - 1) // (depth + 1))
    doc_nodes: list[dict[str, Any]] = []
    routes: list[dict[str, str]] = []
    innermost = ""
    for level in range(depth + 1):
        chain = [f"t{level}_{i}" for i in range(per_level)]
        for task_id in chain:
            if level == 0:
                inputs = [{"target": "name", "path": "input.title"}, {"target": "value", "path": "input.count"}]
            else:
                inputs = [{"target": "name", "path": f"context.foreach.f{level}.item.name"},
                          {"target": "value", "path": "context.foreach.f1.item.value"},
                          {"target": "weight", "path": f"context.foreach.f{level}.index"}]
            doc_nodes.append({"kind": "task", "id": task_id, "task": "score", "input": inputs,
                              "output": [{"source": "total", "target": f"totals{level}", "mode": "append"}]})
        routes += [{"source": a, "label": "ok", "target": b} for a, b in zip(chain, chain[1:], strict=False)]
        if level > 0:
            routes.append({"source": f"f{level}", "label": "loop", "target": chain[0]})
        if level < depth:
            over = "input.roots" if level == 0 else f"context.foreach.f{level}.item.children"
            doc_nodes.append({"kind": "foreach", "id": f"f{level + 1}", "over": over, "as": f"level{level + 1}"})
            routes.append({"source": chain[-1], "label": "ok", "target": f"f{level + 1}"})
            routes.append({"source": f"f{level + 1}", "label": "done",
                           "target": f"f{level}" if level > 0 else "end"})
        else:
            routes.append({"source": chain[-1], "label": "ok", "target": f"f{level}"})
            innermost = chain[-1]
    doc_nodes.append({"kind": "task", "id": "end", "task": "score",
                      "input": [{"target": "name", "path": "input.title"}, {"target": "value", "value": 1}]})
    doc_nodes.insert(0, doc_nodes.pop(next(i for i, n in enumerate(doc_nodes) if n["id"] == "t0_0")))
    workflow = Workflow.model_validate({
        "id": f"bench-{nodes}", "nodes": doc_nodes, "routes": routes,
        "input_schema": {"type": "object", "properties": {
            "title": {"type": "string"}, "count": {"type": "integer"},
            "roots": {"type": "array", "items": item_schema(1, depth)}}, "required": ["title", "count", "roots"]},
    })
    return workflow, innermost


def _ms(fn: Callable[[], object], repeat: int) -> float:
    gc.collect()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _analyze_series(workflow: Workflow, tasks: TaskRegistry, repeat: int) -> tuple[float, float, list[float]]:
    """Median wall and CPU ms of ``analyze``, and the collections per run (gen 0, 1, 2)."""
    runs = [0, 0, 0]

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            runs[info["generation"]] += 1

    gc.collect()
    wall, cpu = [], []
    gc.callbacks.append(count)
    try:
        for _ in range(repeat):
            start, start_cpu = time.perf_counter(), time.process_time()
            analyze(workflow, registry=tasks)
            wall.append((time.perf_counter() - start) * 1000)
            cpu.append((time.process_time() - start_cpu) * 1000)
    finally:
        gc.callbacks.remove(count)
    return statistics.median(wall), statistics.median(cpu), [n / repeat for n in runs]


def measure(nodes: int, tasks: TaskRegistry) -> dict[str, Any]:
    workflow, node = generate(nodes)
    repeat = 7 if nodes <= 1_000 else 5
    analysis = analyze(workflow, registry=tasks)
    assert analysis.ok, analysis.errors[:3]
    assert len(analysis.control_region(node)) == DEPTH
    analyze_ms, cpu_ms, collections = _analyze_series(workflow, tasks, repeat)
    # first call on a fresh analysis builds the region's options; later calls hit the cache
    fresh = [analyze(workflow, registry=tasks) for _ in range(repeat)]
    first_ms = statistics.median(_ms(lambda a=a: a.path_options(node), 1) for a in fresh)  # type: ignore[misc]
    cached_ms = _ms(lambda: analysis.path_options(node), repeat)
    want = {"type": "string"}
    want_first_ms = statistics.median(_ms(lambda a=a: a.path_options(node, want), 1) for a in fresh)  # type: ignore[misc]
    return {"nodes": len(workflow.nodes), "analyze": analyze_ms, "cpu": cpu_ms, "gc": collections,
            "first": first_ms, "cached": cached_ms, "want": want_first_ms,
            "options": len(analysis.path_options(node))}


def main() -> int:
    tasks = registry()
    rows = [measure(size, tasks) for size in SIZES]
    print(f"foreach nesting {DEPTH} deep; path options for one innermost task; medians in ms")
    header = (f"{'nodes':>7} {'analyze':>9} {'growth':>7} {'cpu':>8} {'growth':>7} {'us/node':>8} {'gc/run':>14} "
              f"{'options':>8} {'opts 1st':>9} {'opts cached':>12} {'opts want':>10}")
    print(header)
    print("-" * len(header))
    previous: dict[str, Any] | None = None
    for row in rows:
        growth = f"{row['analyze'] / previous['analyze']:.1f}x" if previous else "-"
        cpu_growth = f"{row['cpu'] / previous['cpu']:.1f}x" if previous else "-"
        collections = "/".join(f"{n:.1f}" if n % 1 else f"{n:.0f}" for n in row["gc"])
        print(f"{row['nodes']:>7} {row['analyze']:>9.1f} {growth:>7} {row['cpu']:>8.1f} {cpu_growth:>7} "
              f"{row['analyze'] * 1000 / row['nodes']:>8.1f} {collections:>14} {row['options']:>8} "
              f"{row['first']:>9.2f} {row['cached']:>12.3f} {row['want']:>10.2f}")
        previous = row
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What an analysis keeps alive for the cyclic GC does not grow with the document.

Timing thresholds do not belong in tests (``python -m bench bench_analyzer``
shows the numbers); the cause of the old super-linear growth does: every
node left a few GC-tracked objects behind (label sets, fact records, one
write record per output binding, stack lists), so large documents fed full
collections that traverse the whole heap. Counting tracked objects is
deterministic.
"""

from __future__ import annotations

import gc
from typing import Any

from bench.bench_analyzer import generate, registry
from runtime import analyze

TASKS = registry()


def retained(nodes: int) -> tuple[Any, int]:
    """An analysis and the GC-tracked objects it keeps alive (least of three: other threads may allocate)."""
    workflow, _ = generate(nodes)
    analysis = analyze(workflow, registry=TASKS)  # warms caches that outlive one analysis (pydantic, imports)
    counts = []
    for _ in range(3):
        del analysis
        gc.collect()
        before = len(gc.get_objects())
        analysis = analyze(workflow, registry=TASKS)
        gc.collect()
        counts.append(len(gc.get_objects()) - before)
    return analysis, min(counts)


def test_tracked_objects_kept_by_an_analysis_do_not_grow_with_nodes() -> None:
    small, kept_small = retained(200)
    large, kept_large = retained(2_000)
    assert small.ok and large.ok
    # 10x the nodes: the few hundred tracked objects (schemas, caches, per-region data) stay about the same;
    # one tracked object per node would add 1,800 here
    assert kept_large - kept_small < 200, (kept_small, kept_large)


def test_nodes_share_label_sets_and_stacks() -> None:
    workflow, innermost = generate(500)
    analysis = analyze(workflow, registry=TASKS)
    tasks = [node.id for node in workflow.nodes if node.kind == "task"]
    assert len({id(analysis._facts(node_id).labels) for node_id in tasks}) == 1
    region = analysis.control_region(innermost)
    same_region = [n for n in tasks if analysis.control_region(n) == region]
    assert len(same_region) > 10
    assert len({id(analysis.control_region(n)) for n in same_region}) == 1

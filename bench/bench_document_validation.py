"""What validating a large workflow document costs: this tree against an older commit, side by side in one run.

Issue 17 made a document's JSON values (schemas, metadata, literals) read-only containers, built when the
document is validated. This measures what that adds: both sides run in child processes taking turns (base,
this tree, then this tree, base, ...), each importing its own tree's ``runtime``, on the same document text
(built here). The base commit's ``runtime/`` is unpacked with ``git archive`` (``bench_step_cost.unpack``).

The document is as large as the designer allows (``TRELLIS_MAX_DOCUMENT_NODES``, 2,000 nodes): task nodes
with three input bindings each (a path, a scalar literal, a nested object literal), interrupt nodes with a
resume schema, branch cases, an input and a state schema of 200 properties each, and the editor's canvas
positions of every node in ``metadata``. Workloads (each timed run validates or dumps the document once):

- ``validate-python``: ``Workflow.model_validate`` of the parsed JSON data (what the designer does);
- ``validate-json``: ``Workflow.model_validate_json`` of the text;
- ``dump-json``: ``model_dump_json`` of the validated document (what is stored and served).

Prints the min and median of CPU and wall milliseconds per document for each side, and this tree / base.
Timings are printed, never asserted.

    python -m bench document_validation
    TRELLIS_BENCH_BASE=<commit> TRELLIS_BENCH_ROUNDS=6 TRELLIS_BENCH_RUNS=5 python -m bench document_validation
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from bench.bench_engine import table
from bench.bench_step_cost import HERE, alternate, base_and_this_tree, finished, side_by_side

CHILD = HERE / "bench" / "_document_child.py"

#: The commit before the read-only JSON values (main when this work began).
BASE = os.environ.get("TRELLIS_BENCH_BASE", "afda6e7")
NODES = 2_000
WORKLOADS = ("validate-python", "validate-json", "dump-json")


def large_document(nodes: int = NODES) -> dict[str, Any]:
    """A document of ``nodes`` nodes (every 10th an interrupt, every 10th a branch, the rest tasks) in a chain."""
    properties = {f"p{i}": {"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": "string", "minLength": 1}, "tags": {"type": "array", "items": {"type": "string"}}}},
        "default": []} for i in range(200)}
    schema = {"type": "object", "properties": properties, "required": [f"p{i}" for i in range(0, 200, 7)]}
    made: list[dict[str, Any]] = []
    for index in range(nodes):
        node_id = f"n{index}"
        if index % 10 == 3:
            made.append({"kind": "interrupt", "id": node_id, "prompt": "approve?", "resume_schema": {
                "type": "object", "properties": {"approved": {"type": "boolean"}, "note": {"type": "string"}},
                "required": ["approved"]}})
        elif index % 10 == 7:
            made.append({"kind": "branch", "id": node_id, "path": "state.p1", "cases": [
                {"label": "ok", "op": "in", "value": [[], ["a", "b"], {"name": "x"}]}]})
        else:
            made.append({"kind": "task", "id": node_id, "task": "score", "input": [
                {"target": "name", "path": "input.p0"}, {"target": "weight", "value": index},
                {"target": "options", "value": {"mode": "fast", "limits": [1, 2, 3], "labels": {"a": "b", "c": None}}},
            ], "output": [{"source": ".", "target": f"p{index % 200}"}]})
    routes = [{"source": f"n{i}", "label": "ok", "target": f"n{i + 1}"} for i in range(nodes - 1)]
    positions = {f"n{i}": {"x": 40 * (i % 30), "y": 120 * (i // 30)} for i in range(nodes)}
    return {"id": "large", "name": "Large", "input_schema": schema, "state_schema": schema, "nodes": made,
            "routes": routes, "metadata": {"positions": positions, "sample_input": {"p0": []}}}


def main() -> int:
    started = time.perf_counter()
    text = json.dumps(large_document())
    with base_and_this_tree(BASE, f"; a document of {NODES:,} nodes") as (folder, sides):
        document = folder / "document.json"
        document.write_text(text)
        os.environ["TRELLIS_BENCH_DOCUMENT"] = str(document)  # read by the children
        steps, times = alternate(sides, WORKLOADS, script=CHILD)
    table(f"Milliseconds per {NODES:,}-node document ({len(text) / 1e6:.1f} MB of JSON), this tree vs {BASE}",
          ["workload", "side", "runs", "cpu min", "cpu median", "wall min", "wall median"],
          side_by_side(WORKLOADS, sides, steps, times, 1e3),
          note="cpu = process_time; wall = perf_counter; this / base below 1.00x is faster")
    finished("bench_document_validation", started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

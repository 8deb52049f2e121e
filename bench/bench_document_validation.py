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
    TRELLIS_BENCH_BASE=<commit> TRELLIS_BENCH_ROUNDS=6 python -m bench document_validation
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
from pathlib import Path
from typing import Any

from bench.bench_engine import table
from bench.bench_step_cost import HERE, unpack

CHILD = HERE / "bench" / "_document_child.py"

#: The commit before the read-only JSON values (main when this work began).
BASE = os.environ.get("TRELLIS_BENCH_BASE", "afda6e7")
ROUNDS = int(os.environ.get("TRELLIS_BENCH_ROUNDS", "6"))
RUNS = int(os.environ.get("TRELLIS_BENCH_RUNS", "5"))
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


def _measure(root: Path, document: Path) -> dict[str, Any]:
    out = subprocess.run([sys.executable, str(CHILD), str(root), str(document), str(RUNS), *WORKLOADS],
                         capture_output=True, text=True, check=False, cwd=root)
    if out.returncode != 0:
        raise SystemExit(f"the child measuring {root} failed:\n{out.stderr}")
    found: dict[str, Any] = json.loads(out.stdout)
    if not found["runtime"].startswith(str(root)):
        raise SystemExit(f"the child meant for {root} imported {found['runtime']}")
    return found


def main() -> int:
    started = time.perf_counter()
    print(f"load average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores; "
          f"{ROUNDS} rounds x {RUNS} runs per side and workload; a document of {NODES:,} nodes")
    folder = Path(tempfile.mkdtemp(prefix="trellis-document-validation-"))
    try:
        document = folder / "document.json"
        text = json.dumps(large_document())
        document.write_text(text)
        sides = {f"base {BASE}": unpack(BASE, folder), "this tree": HERE}
        times: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for number in range(ROUNDS):
            for side in list(sides) if number % 2 == 0 else list(reversed(sides)):
                for name, pairs in _measure(sides[side], document)["times"].items():
                    times.setdefault((name, side), []).extend(tuple(pair) for pair in pairs)
            print(f"  round {number + 1} of {ROUNDS} done", flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    rows = []
    for name in WORKLOADS:
        figures = {}
        for side in sides:
            cpu = [c * 1e3 for c, _ in times[(name, side)]]
            wall = [w * 1e3 for _, w in times[(name, side)]]
            figures[side] = (min(cpu), statistics.median(cpu), min(wall), statistics.median(wall))
            rows.append([name, side, f"{len(cpu)}", *(f"{figure:,.2f}" for figure in figures[side])])
        base, this = figures[f"base {BASE}"], figures["this tree"]
        rows.append([name, "this / base", "", *(f"{t / b:.2f}x" for t, b in zip(this, base, strict=True))])
    table(f"Milliseconds per {NODES:,}-node document ({len(text) / 1e6:.1f} MB of JSON), this tree vs {BASE}",
          ["workload", "side", "runs", "cpu min", "cpu median", "wall min", "wall median"], rows,
          note="cpu = process_time; wall = perf_counter; this / base below 1.00x is faster")
    print(f"\nbench_document_validation took {time.perf_counter() - started:,.0f} s; load average at end: "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

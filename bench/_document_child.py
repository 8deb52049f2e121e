"""One side of ``bench_document_validation``: time validating and dumping a document with a given tree's runtime.

Run by ``bench/bench_document_validation.py`` as a script, never imported by it::

    TRELLIS_BENCH_DOCUMENT=doc.json python bench/_document_child.py RUNTIME_ROOT THIS_ROOT RUNS WORKLOAD...

(the arguments of ``bench_step_cost.child``). Prints one JSON object: where ``runtime`` came from, and per
workload its steps (one document) and each run's (CPU seconds, wall seconds).
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def main(argv: list[str]) -> int:
    runtime_root, runs, names = argv[0], int(argv[2]), argv[3:]
    text = Path(os.environ["TRELLIS_BENCH_DOCUMENT"]).read_text()
    sys.path[:1] = [runtime_root]  # instead of this script's own folder
    import runtime

    data = json.loads(text)
    doc = runtime.Workflow.model_validate(data)
    calls: dict[str, Callable[[], Any]] = {
        "validate-python": lambda: runtime.Workflow.model_validate(data),
        "validate-json": lambda: runtime.Workflow.model_validate_json(text),
        "dump-json": doc.model_dump_json,
    }
    found: dict[str, Any] = {"runtime": runtime.__file__, "workloads": {}}
    for name in names:
        times = []
        for number in range(3 + runs):  # 3 untimed warm-ups
            gc.collect()
            wall, cpu = time.perf_counter(), time.process_time()
            calls[name]()
            if number >= 3:
                times.append((time.process_time() - cpu, time.perf_counter() - wall))
        found["workloads"][name] = {"steps": 1, "times": times}
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

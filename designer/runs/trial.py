"""Trying one task node on sample data, in a worker, under the same step limits as a run.

The trial is a one-node workflow: the node as drafted, its input bindings replaced by the sample's
values (literals), its result written to ``state.result``. ``runtime.Engine`` runs it with the
worker's step process pool (``steps.engine_options``): the same process isolation, time, memory and
result-size limits, retries and timeout rules as the node gets in a real run. Nothing is saved: no
run row, no checkpoint (an in-memory one is dropped with the engine).
"""

from __future__ import annotations

import time
from typing import Any

from designer.runs import steps
from designer.workflows import catalog
from runtime import Engine, WorkflowError
from runtime.engine import EngineOptions

#: Supersteps a trial may take: one node, plus its retries.
TRIAL_MAX_STEPS = 50


def run_trial(document: dict[str, Any]) -> dict[str, Any]:
    """``{"status", "label", "result", "error", "seconds"}`` for the trial document's one node."""
    started = time.monotonic()
    engine = Engine(catalog.registry(), EngineOptions(max_steps=TRIAL_MAX_STEPS, **steps.engine_options()))
    try:
        with engine:
            outcome = engine.run(document, {})
    except WorkflowError as exc:
        return {"status": "failed", "label": None, "result": None, "error": exc.to_dict(),
                "seconds": round(time.monotonic() - started, 3)}
    label = next((event.label for event in reversed(outcome.trace) if event.kind == "node_completed"), None)
    return {
        "status": outcome.status, "label": label,
        "result": (outcome.output or {}).get("result") if outcome.status == "completed" else None,
        "error": outcome.error.to_dict() if outcome.error is not None else None,
        "seconds": round(time.monotonic() - started, 3),
    }

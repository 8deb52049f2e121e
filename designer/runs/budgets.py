"""A run's budgets as a whole (issue 26): what is left of them when a worker drives it, and what it used.

The budgets are the workflow's own ``run_timeout_seconds`` and ``run_step_seconds`` under the server's caps
(``TRELLIS_RUN_MAX_SECONDS``, ``TRELLIS_RUN_MAX_STEP_SECONDS``). Wall time counts from the start of the run
attempt (``Run.budget_started_at``, set by the first claim and cleared by a redrive), so waits count too;
step-seconds are kept in ``Run.step_seconds_used``, added to by each drive and each foreach batch when it ends
(a worker that dies mid-drive loses only what that drive had not yet added). The engine enforces them
(``runtime.RunBudget``): a spent budget fails the step with ``run.timeout`` or ``run.budget``.
"""

from __future__ import annotations

from typing import Any

from django.db.models import F

from designer.conf import trellis
from designer.models import Run
from runtime import Engine
from runtime.engine import RunBudget


def _under(own: Any, cap: float | None) -> float | None:
    chosen = float(own) if isinstance(own, int | float) and not isinstance(own, bool) and own > 0 else None
    if cap is None:
        return chosen
    return cap if chosen is None else min(chosen, cap)


def budget_for(run: Run) -> RunBudget | None:
    """What is left of ``run``'s budgets now; None when it has none."""
    document = run.document if isinstance(run.document, dict) else {}
    wall = _under(document.get("run_timeout_seconds"), trellis.RUN_MAX_SECONDS)
    steps = _under(document.get("run_step_seconds"), trellis.RUN_MAX_STEP_SECONDS)
    if wall is None and steps is None:
        return None
    started = run.budget_started_at or run.started_at
    deadline = started.timestamp() + wall if wall is not None and started is not None else None
    return RunBudget(deadline=deadline, wall_seconds=wall, total_step_seconds=steps,
                     step_seconds=steps - run.step_seconds_used if steps is not None else None)


def use_of(engine: Engine | None) -> float:
    """The step-seconds ``engine``'s calls used (0 without a budget)."""
    meter = engine.budget_meter if engine is not None else None
    return meter.used if meter is not None and meter.used else 0.0


def use_fields(engine: Engine | None) -> dict[str, Any]:
    """``Run`` fields that add what ``engine`` used to the run's count, for an UPDATE the caller makes anyway."""
    used = use_of(engine)
    return {"step_seconds_used": F("step_seconds_used") + used} if used else {}


def record_use(run_id: int, engine: Engine | None) -> None:
    """Add the step-seconds ``engine``'s calls used to the run's count."""
    fields = use_fields(engine)
    if fields:
        Run.objects.filter(pk=run_id).update(**fields)

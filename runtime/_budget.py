"""A run's budgets as a whole: a wall-time deadline and a number of step-seconds, across every step it runs.

The host gives what is left of each when it drives the run (``EngineOptions(budget=...)``): it knows when the run
started and how many step-seconds earlier drives used, which live outside the engine's one call. The loop
then starts no step once either is spent, and gives each step at most what is left as its timeout, so a step
still running when the budget runs out is stopped; both fail that step with ``run.timeout`` or ``run.budget``
through its node's ``error`` route, without a retry.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from runtime._context import RuntimeContext
from runtime._errors import RunBudgetExceededError, RunTimeoutError, TaskError
from runtime._steps import step_label, where_of

TIMEOUT = "run.timeout"
BUDGET = "run.budget"


@dataclass(frozen=True, slots=True)
class RunBudget:
    """What is left of a run's budgets for one engine call: ``deadline`` (seconds since the epoch, by the
    engine's clock; None: no wall-time budget) and ``step_seconds`` (None: no step-seconds budget).
    ``wall_seconds`` and ``total_step_seconds`` are the whole budgets, for the messages."""

    deadline: float | None = None
    step_seconds: float | None = None
    wall_seconds: float | None = None
    total_step_seconds: float | None = None


@dataclass(slots=True)
class BudgetMeter:
    """The step-seconds one engine call has used, against its ``RunBudget`` (steps run on several threads)."""

    budget: RunBudget
    used: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, seconds: float) -> None:
        with self._lock:
            self.used += seconds

    def limit(self, now: float) -> tuple[float, str] | None:
        """The tighter of the budgets left (seconds, which one), or None when there is none."""
        left: list[tuple[float, str]] = []
        if self.budget.deadline is not None:
            left.append((self.budget.deadline - now, TIMEOUT))
        if self.budget.step_seconds is not None:
            with self._lock:
                left.append((self.budget.step_seconds - self.used, BUDGET))
        return min(left) if left else None

    def error(self, which: str, task: str, context: RuntimeContext, *, ran: float = 0.0) -> TaskError:
        """The failure of the step that ``which`` budget stopped after ``ran`` seconds (or did not let start)."""
        where = where_of(context)
        if which == TIMEOUT:
            total = self.budget.wall_seconds
            return RunTimeoutError(
                f"{step_label(task, context)} was stopped: the run ran past its {total or 0:g} s wall-time budget; "
                "raise the workflow's run_timeout_seconds if runs of it need longer", task=task,
                budget_seconds=total, **where)
        total = self.budget.total_step_seconds
        with self._lock:
            used = self.used + ran
        return RunBudgetExceededError(
            f"{step_label(task, context)} was stopped: the run's steps used up its budget of {total or 0:g} "
            "step-seconds; raise the workflow's run_step_seconds if runs of it need more", task=task,
            budget_seconds=total, used_seconds=round(used, 3), **where)

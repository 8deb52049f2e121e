"""A run's budgets as a whole (issue 26): a wall-time deadline and a number of step-seconds across all its steps.
No step starts once either is spent; a running step is stopped when what is left runs out; both fail the step
with ``run.timeout`` / ``run.budget`` through its node's error route, never retried."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from runtime import Engine, WorkflowBuilder
from runtime.builtins import register_builtins
from runtime.engine import EngineOptions, RunBudget
from runtime.state import SequentialIds
from tests.runtime.test_step_limits import finished, limits_registry, one_step


def engine(budget: RunBudget, **options: Any) -> Engine:
    return Engine(registry=limits_registry(), options=EngineOptions(ids=SequentialIds(), budget=budget, **options))


def test_a_spent_step_seconds_budget_lets_no_further_step_start() -> None:
    finished.clear()
    eng = engine(RunBudget(step_seconds=0.25, total_step_seconds=0.25), max_workers=1)
    result = eng.run(one_step("nap", {"seconds": 0.1, "tag": "item"}, in_foreach=True), {"items": list(range(10))})
    assert result.status == "failed"
    cause = result.error.details["cause"]  # type: ignore[union-attr]
    assert cause["code"] == "run.budget" and cause["node_id"] == "step" and cause["budget_seconds"] == 0.25
    assert "budget of 0.25 step-seconds" in cause["message"] and "run_step_seconds" in cause["message"]
    # At most two naps fit in a quarter second of step time (fewer on a loaded machine); the third was stopped
    # part way and the seven others never started.
    assert len(finished) <= 2
    assert eng.budget_meter is not None and eng.budget_meter.used >= 0.25


def test_a_running_step_is_stopped_when_the_budget_runs_out_and_not_retried() -> None:
    finished.clear()
    result = engine(RunBudget(step_seconds=0.2, total_step_seconds=5)).run(
        one_step("nap", {"seconds": 30, "tag": "late"}, timeout=10, retry={"max_attempts": 3}), {})
    cause = result.error.details["cause"]  # type: ignore[union-attr]
    assert cause["code"] == "run.budget" and cause["attempt"] == 1 and cause["used_seconds"] >= 0.2
    assert finished == []
    assert not [event for event in result.trace if event.kind == "node_retrying"]


def test_a_passed_deadline_fails_the_next_step_before_it_starts() -> None:
    finished.clear()
    result = engine(RunBudget(deadline=time.time() - 1, wall_seconds=60)).run(
        one_step("nap", {"seconds": 0, "tag": "never"}), {})
    cause = result.error.details["cause"]  # type: ignore[union-attr]
    assert cause["code"] == "run.timeout" and cause["budget_seconds"] == 60
    assert "wall-time budget" in cause["message"] and finished == []


def test_a_deadline_stops_a_running_step_in_the_async_engine_too() -> None:
    result = asyncio.run(engine(RunBudget(deadline=time.time() + 0.2, wall_seconds=0.2)).arun(
        one_step("nap", {"seconds": 30}), {}))
    assert result.error is not None and result.error.details["cause"]["code"] == "run.timeout"


def test_budget_failures_take_the_error_route_where_data_steps_still_run() -> None:
    """The error route's ``set_value`` (a data built-in) runs though the budget is spent; a task step there
    (``text``, like any task that does work) is held to the budget too."""
    registry = limits_registry()
    register_builtins(registry)
    graph = WorkflowBuilder("budgeted", state_schema={"type": "object", "properties": {
        "error": {}, "note": {}, "after": {}}})
    nap = graph.use("nap", id="nap", input=[{"target": "seconds", "value": 30}],
                    output=[{"source": "error", "target": "error"}])
    note = graph.use("set_value", id="note", input=[{"target": "value", "path": "state.error.code"}],
                     output=[{"source": ".", "target": "note"}])
    graph.set_route(nap, "error", note)
    graph.output("note", "state.note")
    result = Engine(registry=registry, options=EngineOptions(ids=SequentialIds(),
                    budget=RunBudget(step_seconds=0.1, total_step_seconds=0.1))).run(graph.build(), {})
    assert result.status == "completed", result.error
    assert result.output == {"note": "run.budget"}


def test_a_step_whose_own_timeout_is_shorter_keeps_its_own_code() -> None:
    result = engine(RunBudget(step_seconds=60, total_step_seconds=60)).run(
        one_step("nap", {"seconds": 30}, timeout=0.1), {})
    assert result.error is not None and result.error.details["cause"]["code"] == "step.timeout"

"""A run's budgets as a whole (issue 26), with the real worker: a workflow's ``run_step_seconds`` and the server's
wall-time cap fail a run with ``run.budget`` / ``run.timeout`` (through an error route when the node has one),
the step-seconds of every drive add up on the run, and a redrive starts a new attempt with whole budgets."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from designer.access import teams as team_services
from designer.models import Run
from designer.runs import history as run_history
from designer.runs import services as run_services
from designer.workflows import services as workflow_services
from runtime import WorkflowBuilder
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.django_db(transaction=True)
TASKS = "tests.designer.step_tasks"


def naps(*, run_step_seconds: float | None = None, error_route: bool = False) -> dict[str, Any]:
    """A foreach over ``input.items`` (seconds), one ``snooze`` step per item, one at a time."""
    g = WorkflowBuilder("naps", "Naps", run_step_seconds=run_step_seconds, input_schema={
        "type": "object", "properties": {"items": {"type": "array", "items": {"type": "number"}}},
        "required": ["items"]}, state_schema={"type": "object", "properties": {"error": {}, "note": {}}})
    each = g.foreach("each", "input.items")
    nap = g.use("snooze", id="nap", input=[{"target": "seconds", "path": each.item}],
                output=[{"source": "error", "target": "error"}] if error_route else None)
    g.chain(each, "loop", nap, "ok", each)
    if error_route:
        note = g.use("set_value", id="note", input=[{"target": "value", "path": "state.error.code"}],
                     output=[{"source": ".", "target": "note"}])
        g.chain(nap, "error", note, "ok", each)
        g.output("note", "state.note")
    return g.build().model_dump(mode="json")


def work(worker_env: dict[str, str], **settings: str) -> None:
    result = subprocess.run(
        [sys.executable, "manage.py", "run_worker", "--batch", "--no-startup-delay", "--no-reload"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
        env={**worker_env, "TRELLIS_TASK_MODULES": TASKS, **settings})
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture
def owner(make_user: Any, settings: Any) -> Any:
    settings.TRELLIS_TASK_MODULES = [TASKS]
    user = make_user("olga")
    team_services.create_team(actor=user, name="Budgets")
    return user


def start(owner: Any, document: dict[str, Any], items: list[float]) -> Run:
    workflow = workflow_services.create_workflow(actor=owner, team=owner.memberships.get().team, name="Naps",
                                                 document=document)
    return run_services.start_run(actor=owner, workflow=workflow, input={"items": items})


def test_a_workflows_step_seconds_budget_fails_the_run_with_run_budget(owner: Any, worker_env: dict[str, str],
                                                                       admin_client: Any) -> None:
    run = start(owner, naps(run_step_seconds=1), [0.4] * 6)
    work(worker_env)
    run.refresh_from_db()
    assert run.status == "failed"
    cause = run.error["cause"]
    assert cause["code"] == "run.budget" and cause["node_id"] == "nap" and cause["budget_seconds"] == 1
    assert "run_step_seconds" in cause["message"]
    assert run.step_seconds_used >= 1  # what the drive used, kept on the run
    # At most two naps fit (fewer on a loaded machine), the next cut short; the other items never started.
    assert run.events.filter(kind="node_completed", node_id="nap").count() <= 2
    page = admin_client.get(f"/admin/designer/run/{run.pk}/change/").content.decode()
    assert f"{run.step_seconds_used:.1f} step-seconds used of 1 step-seconds" in page

    run_history.redrive_run(actor=owner, run=run)
    run.refresh_from_db()
    assert (run.step_seconds_used, run.budget_started_at) == (0.0, None)  # a new attempt, whole budgets


def test_the_servers_wall_time_cap_fails_a_run_through_its_error_route(owner: Any, worker_env: dict[str, str]
                                                                       ) -> None:
    run = start(owner, naps(error_route=True), [30])
    work(worker_env, TRELLIS_RUN_MAX_SECONDS="1")
    run.refresh_from_db()
    assert run.status == "completed", run.error
    assert run.output == {"note": "run.timeout"}
    # Stopped at the deadline, long before the 30 s nap would have ended (no tighter bound: CI machines are noisy).
    assert run.budget_started_at is not None and 0 < run.step_seconds_used < 30

"""Fixtures for the designer tests: one team with a member of every role, a stranger
in another team, API clients logged in as each, and a small valid workflow."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from rest_framework.test import APIClient

from designer.access import teams as team_services
from designer.models import Membership
from designer.workflows import services as workflow_services
from runtime import WorkflowBuilder
from tests.designer.runs_support import stop_process
from tests.server_support import free_port, listening

ROLES = ("owner", "editor", "viewer", "stranger")


@dataclass
class Cast:
    team: Any
    other_team: Any
    users: dict[str, Any]

    def __getattr__(self, name: str) -> Any:
        try:
            return self.users[name]
        except KeyError:
            raise AttributeError(name) from None

    def workflow(self, name: str, document: dict[str, Any]) -> Any:
        """A new workflow of ``document`` in the team, created by its owner."""
        return workflow_services.create_workflow(actor=self.owner, team=self.team, name=name, document=document)

    def their_workflow(self, name: str, document: dict[str, Any]) -> Any:
        """A new workflow of ``document`` in the other team, created by the stranger who owns it."""
        return workflow_services.create_workflow(actor=self.stranger, team=self.other_team, name=name,
                                                 document=document)


@pytest.fixture
def cast(make_user: Any) -> Cast:
    owner = make_user("olivia", email="olivia@example.com")
    editor = make_user("eddie", email="eddie@example.com")
    viewer = make_user("vera", email="vera@example.com")
    stranger = make_user("stan", email="stan@example.com")
    team = team_services.create_team(actor=owner, name="Acme")
    Membership.objects.create(team=team, user=editor, role="editor")
    Membership.objects.create(team=team, user=viewer, role="viewer")
    other_team = team_services.create_team(actor=stranger, name="Other")
    return Cast(team=team, other_team=other_team,
                users={"owner": owner, "editor": editor, "viewer": viewer, "stranger": stranger})


@pytest.fixture
def api() -> Any:
    """``api(user)``: a DRF client logged in as ``user`` (None: anonymous)."""

    def make(user: Any = None) -> APIClient:
        client = APIClient()
        if user is not None:
            client.force_authenticate(user=None)
            client.force_login(user)
        return client

    return make


def simple_document(workflow_id: str = "simple") -> dict[str, Any]:
    """A valid two-node document using the designer's demo tasks."""
    graph = WorkflowBuilder(
        workflow_id, "Simple",
        input_schema={"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]},
        state_schema={"type": "object", "properties": {"decision": {"type": "object"}}},
    )
    assess = graph.use("assess_request", id="assess", input=[{"target": "amount", "path": "input.amount"}])
    record = graph.use("record_decision", id="record", input=[{"target": "approved", "value": True}],
                       output=[{"source": ".", "target": "decision"}])
    graph.set_route(assess, "auto", record)
    graph.set_route(assess, "review", record)
    graph.output("decision", "state.decision")
    return graph.build().model_dump(mode="json")


@pytest.fixture
def document() -> dict[str, Any]:
    return simple_document()


@pytest.fixture
def workflow(cast: Cast, document: dict[str, Any]) -> Any:
    return cast.workflow("Simple flow", document)


@pytest.fixture
def env(worker_env: dict[str, str], settings: Any) -> dict[str, str]:
    """Environment for a real worker subprocess on this test's database (tests/designer/runs_support.py).

    The worker and this process both know the test tasks (``tests/designer/step_tasks.py``), so a test may
    start runs of documents that use them."""
    from tests.designer.runs_support import STEP_TASKS, worker_environment

    settings.TRELLIS_TASK_MODULES = [STEP_TASKS]
    return worker_environment(worker_env)


@pytest.fixture
def enqueued() -> Any:
    """Every task result enqueued during the test, in order, as ``django.tasks``' public ``task_enqueued``
    signal reports them (``[r for r in enqueued if r.task.name == "execute_run"]``)."""
    from django.tasks.signals import task_enqueued

    seen: list[Any] = []

    def record(sender: Any, task_result: Any, **kwargs: Any) -> None:
        seen.append(task_result)

    task_enqueued.connect(record, weak=False)
    yield seen
    task_enqueued.disconnect(record)


@pytest.fixture
def served(worker_env: dict[str, str]) -> Iterator[str]:
    """``manage.py serve`` (the server ``make run`` starts) on a free port of 127.0.0.1, on this test's database;
    its base URL once it accepts connections."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "manage.py", "serve", f"127.0.0.1:{port}"],
                               cwd=Path(__file__).resolve().parents[2], env=worker_env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    try:
        if not listening(port, process):
            output = process.stdout.read() if process.stdout else ""
            pytest.fail(f"manage.py serve did not start:\n{output[-3000:]}")
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process(process)


@pytest.fixture
def write_lock_holder() -> Iterator[sqlite3.Connection]:
    """Another connection to the SQLite database file, the way another process would hold it (autocommit, no
    waiting): it takes the write lock when the test says."""
    other = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None, timeout=0,
                            check_same_thread=False)
    yield other
    if other.in_transaction:
        other.execute("ROLLBACK")
    other.close()

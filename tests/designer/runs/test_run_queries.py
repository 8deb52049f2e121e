"""What a run page or run API request costs in statements, pinned: the caller's access is read once a request (with
the run by ``get_run``, or in one statement of its own), the admin's run page reads the trace once whatever its
length, and the events filter reads each (kind, node) once rather than every event.

The counts include the session and the user (2 statements a page request). Before: the run page 15 statements
(12 now), its live part 10 (7), a workflow's runs 11 (9), the graph 6 (5), a checkpoint 7 (5), the admin's run page
79 for a run of 16 events (12); every action read the caller's access in 2 statements (or 4: the view's and the
service's), then 1, now none of its own (with the run); each action's run reads are pinned too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test import Client, RequestFactory
from django.urls import reverse
from rest_framework.test import APIClient

from designer.access import grants as grant_services
from designer.access import tokens as token_services
from designer.access.api_auth import BearerTokenAuthentication
from designer.core.errors import ObjectNotFound
from designer.models import Membership, Run, RunCheckpoint, RunEvent
from designer.runs import services as run_services
from designer.runs.admin import ADMIN_EVENTS
from designer.runs.executor import execute
from designer.runs.selectors import get_live_run, get_run, run_access, runs_for
from designer.workflows import services as workflow_services
from runtime import WorkflowBuilder
from tests.designer.clients import client_for, htmx
from tests.designer.runs_support import greeting_document
from tests.designer.statements import access_reads, captured

pytestmark = pytest.mark.django_db

@pytest.fixture
def workflow(cast: Any) -> Any:
    return workflow_services.create_workflow(actor=cast.owner, team=cast.team, name="Greetings",
                                             document=greeting_document())


def _interrupted(cast: Any, workflow: Any, names: list[str] | None = None, status: str = "interrupted") -> Run:
    """A real run: a foreach whose items wait at interrupts, executed in-process and checkpointed."""
    run = run_services.start_run(actor=cast.owner, workflow=workflow, input={"names": names or ["Ada", "Grace"]})
    assert execute(run.pk) == "interrupted"
    Run.objects.filter(pk=run.pk).update(status=status)
    return Run.objects.get(pk=run.pk)


def _step(run: Run) -> int:
    step = RunCheckpoint.objects.filter(run=run).values_list("step", flat=True).first()
    assert step is not None
    return step


#: Statements of each read: (name, how to send it) -> statements. The API reads the session and user too.
READS: dict[str, tuple[Callable[[Run], tuple[str, str, dict[str, str]]], int]] = {
    "api run": (lambda run: ("api", f"/api/runs/{run.pk}/", {}), 6),
    "api runs": (lambda run: ("api", "/api/runs/", {}), 5),
    "api events": (lambda run: ("api", f"/api/runs/{run.pk}/events/", {}), 5),
    "run page": (lambda run: ("page", reverse("run-detail", args=[run.pk]), {}), 12),
    "run page, live part": (lambda run: ("page", reverse("run-detail", args=[run.pk]), htmx("run-live")), 7),
    "all runs": (lambda run: ("page", reverse("run-list"), {}), 8),
    "a workflow's runs": (lambda run: ("page", reverse("workflow-runs", args=[run.workflow_id]), {}), 9),
    "run graph": (lambda run: ("page", reverse("run-graph", args=[run.pk]), {}), 5),
    "a checkpoint": (lambda run: ("page", reverse("run-checkpoint", args=[run.pk, _step(run)]), {}), 5),
    "run panel": (lambda run: ("page", reverse("run-panel", args=[run.workflow_id]), {}), 7),
    "admin run page": (lambda run: ("admin", reverse("admin:designer_run_change", args=[run.pk]), {}), 12),
    "admin runs": (lambda run: ("admin", reverse("admin:designer_run_changelist"), {}), 10),
}


@pytest.mark.parametrize("name", sorted(READS))
def test_each_read_of_a_run_costs_its_pinned_statements(name: str, cast: Any, workflow: Any,
                                                        make_user: Any) -> None:
    run = _interrupted(cast, workflow)
    clients: dict[str, Client | APIClient] = {
        "page": client_for(cast.owner), "admin": client_for(make_user("root", is_staff=True, is_superuser=True))}
    clients["api"] = APIClient()
    clients["api"].force_login(cast.owner)
    make, expected = READS[name]
    kind, url, headers = make(run)
    response, statements = captured(lambda: clients[kind].get(url, **headers))
    assert response.status_code == 200, (name, response.status_code)
    assert len(statements) == expected, (name, [sql[:110] for sql in statements])
    assert access_reads(statements) <= 1, name


def test_a_live_poll_reads_the_run_and_who_may_see_it_in_one_statement(cast: Any, workflow: Any) -> None:
    run = _interrupted(cast, workflow, status="running")
    client = client_for(cast.owner)
    response, statements = captured(lambda: client.get(reverse("run-live", args=[run.pk])))
    assert response.status_code == 200
    # Session, user, the run with the caller's access, its events since, the last stored seq.
    assert len(statements) == 5 and access_reads(statements) == 0, [sql[:110] for sql in statements]
    assert client_for(cast.stranger).get(reverse("run-live", args=[run.pk])).status_code == 404


#: Each action, sent to a fresh run (by the page and by the API).
ACTIONS: dict[str, Callable[[Run], tuple[str, str, dict[str, Any]]]] = {
    "api cancel": lambda run: ("api", f"/api/runs/{run.pk}/cancel/", {}),
    "api resume": lambda run: ("api", f"/api/runs/{run.pk}/resume/",
                               {"interrupt_id": run.interrupts[0]["id"], "value": {"answer": "hi"}}),
    "api redrive": lambda run: ("api", f"/api/runs/{run.pk}/redrive/", {}),
    "api rerun": lambda run: ("api", f"/api/runs/{run.pk}/rerun/", {}),
    "api fork": lambda run: ("api", f"/api/runs/{run.pk}/fork/", {"step": _step(run)}),
    "api delete": lambda run: ("api-delete", f"/api/runs/{run.pk}/", {}),
    "page cancel": lambda run: ("page", reverse("run-cancel", args=[run.pk]), {}),
    "page resume": lambda run: ("page", reverse("run-resume", args=[run.pk]),
                                {"interrupt_id": run.interrupts[0]["id"], "field.answer": "hi"}),
    "page redrive": lambda run: ("page", reverse("run-redrive", args=[run.pk]), {}),
    "page rerun": lambda run: ("page", reverse("run-rerun", args=[run.pk]), {"input": "", "version": "same"}),
    "page fork": lambda run: ("page", reverse("run-fork", args=[run.pk, _step(run)]), {"state": ""}),
    "page delete": lambda run: ("page", reverse("run-delete", args=[run.pk]), {}),
    "page start": lambda run: ("page", reverse("run-start", args=[run.workflow_id]),
                               {"version": "draft", "_mode": "json", "_json": '{"names": ["Ada"]}'}),
    "api start": lambda run: ("api", f"/api/workflows/{run.workflow_id}/runs/",
                              {"version": "draft", "input": {"names": ["Ada"]}}),
}

#: A statement that reads rows of the run table (not of its events, checkpoints...).
RUN_READ = re.compile(r'^SELECT .*? FROM "designer_run"(?: |$)')

#: What each action costs: (statements on SQLite, on PostgreSQL, reads of a run's row). An action on a run reads
#: it once, with the caller's access (``get_run``), or once locked (``lock_run``) where it changes the run, and
#: hands ``queue.enqueue_run`` whose task it is; delete's other two are its check that no worker holds the run and
#: the ORM's cascade. Before, the same on both databases
#: (statements, run reads), each with one statement more of the caller's access: cancel API 14, 2 and page 10, 2;
#: resume API 21, 4 and page 17, 4; redrive API 22, 4 and page 16, 4; re-run API 29, 3 and page 26, 3; fork API
#: 31, 3 and page 30, 3; delete 21, 3 both.
ACTION_COSTS: dict[str, tuple[int, int, int]] = {
    "api cancel": (9, 9, 1),
    "api resume": (15, 15, 1),
    "api redrive": (16, 16, 1),
    "api rerun": (24, 24, 1),
    "api fork": (26, 26, 1),
    "api delete": (20, 20, 3),
    "page cancel": (6, 6, 1),
    "page resume": (13, 13, 1),
    "page redrive": (12, 12, 1),
    "page rerun": (23, 23, 1),
    "page fork": (27, 27, 1),
    "page delete": (20, 20, 3),
    "page start": (13, 13, 0),
    "api start": (14, 14, 0),
}


def _failed(cast: Any) -> Run:
    """A real failed run (a division by zero), redrivable."""
    graph = WorkflowBuilder("dividing", state_schema={"type": "object", "properties": {"out": {}}})
    graph.use("math", id="divide", input=[{"target": "op", "value": "div"}, {"target": "a", "value": 1},
                                          {"target": "b", "value": 0}], output=[{"source": ".", "target": "out"}])
    workflow = workflow_services.create_workflow(actor=cast.owner, team=cast.team, name="Dividing",
                                                 document=graph.build().model_dump(mode="json"))
    run = run_services.start_run(actor=cast.owner, workflow=workflow, input={})
    assert execute(run.pk) == "failed"
    return Run.objects.get(pk=run.pk)


@pytest.mark.parametrize("name", sorted(ACTIONS))
def test_each_action_costs_its_pinned_statements(name: str, cast: Any, workflow: Any) -> None:
    """The run read once (locked where the action changes it) and the caller's access with it: no statement of
    its own but for starting a run (no run to read it with)."""
    run = _failed(cast) if "redrive" in name else _interrupted(cast, workflow)
    page, api = client_for(cast.owner), APIClient()
    api.force_login(cast.owner)
    kind, url, data = ACTIONS[name](run)
    if kind == "api":
        response, statements = captured(lambda: api.post(url, data, format="json"))
    elif kind == "api-delete":
        response, statements = captured(lambda: api.delete(url))
    else:
        response, statements = captured(lambda: page.post(url, data))
    assert response.status_code < 400, (name, response.status_code)
    on_sqlite, on_postgresql, run_reads = ACTION_COSTS[name]
    expected = on_postgresql if connection.vendor == "postgresql" else on_sqlite
    found = (len(statements), sum(1 for sql in statements if RUN_READ.match(sql)), access_reads(statements))
    assert found == (expected, run_reads, int("start" in name)), (name, [sql[:100] for sql in statements])


@pytest.mark.parametrize("name", sorted(name for name in ACTIONS if "start" not in name))
def test_each_action_refuses_as_before_and_changes_nothing(name: str, cast: Any, workflow: Any) -> None:
    """The one read (locked or not) keeps the refusals: another team's run is a 404, a viewer's try a 403, and a
    team the workflow is shared with as viewer gets the 403 too; the run is left as it was."""
    run = _failed(cast) if "redrive" in name else _interrupted(cast, workflow)
    grant_services.grant_workflow(actor=cast.owner, workflow=run.workflow, team=cast.other_team.pk, role="viewer")
    before = Run.objects.values().get(pk=run.pk)
    kind, url, data = ACTIONS[name](run)
    for user, expected in ((cast.viewer, 403), (cast.stranger, 403)):
        if kind == "page":
            response = client_for(user).post(url, data)
        else:
            api = APIClient()
            api.force_login(user)
            response = api.delete(url) if kind == "api-delete" else api.post(url, data, format="json")
        assert response.status_code == expected, (name, user, response.status_code)
        if kind != "page":
            assert response.json()["code"] == "permission.denied", (name, user, response.json())
    assert Run.objects.values().get(pk=run.pk) == before and Run.objects.count() == 1
    # A run of another team's workflow, not shared: not found, whoever asks from this team.
    theirs = run_services.start_run(actor=cast.stranger, workflow=cast.their_workflow(
        "Theirs", greeting_document("theirs")), input={"names": ["Bo"]})
    url = url.replace(f"/{run.pk}/", f"/{theirs.pk}/", 1)
    if kind == "page":
        response = client_for(cast.owner).post(url, data)
    else:
        api = APIClient()
        api.force_login(cast.owner)
        response = api.delete(url) if kind == "api-delete" else api.post(url, data, format="json")
    assert response.status_code == 404, (name, url, response.status_code)
    if kind != "page":
        assert response.json()["code"] == "not_found", (name, response.json())
    assert Run.objects.get(pk=theirs.pk).status == "queued"


def test_the_admin_run_page_reads_the_trace_once_however_long(cast: Any, workflow: Any, make_user: Any) -> None:
    admin = client_for(make_user("root", is_staff=True, is_superuser=True))
    short = _interrupted(cast, workflow, names=["Ada"])
    long = _interrupted(cast, workflow, names=[f"person {n}" for n in range(12)])
    assert RunEvent.objects.filter(run=long).count() > RunEvent.objects.filter(run=short).count()
    # The admin's first page in a process reads the content types into their cache; a test run alone counts it.
    assert admin.get(reverse("admin:designer_run_change", args=[short.pk])).status_code == 200
    counts = []
    for run in (short, long):
        url = reverse("admin:designer_run_change", args=[run.pk])
        response, statements = captured(lambda: admin.get(url))  # noqa: B023 (called at once)
        assert response.status_code == 200
        counts.append((len(statements), sum(1 for sql in statements if 'FROM "designer_runevent"' in sql
                                            and sql.endswith(f"LIMIT {ADMIN_EVENTS}"))))
    assert counts[0] == counts[1] and counts[0][1] == 1, counts


def test_the_events_filter_reads_each_kind_and_node_once(cast: Any, workflow: Any) -> None:
    run = _interrupted(cast, workflow, names=[f"person {n}" for n in range(6)])
    client = client_for(cast.owner)
    response, statements = captured(lambda: client.get(reverse("run-events", args=[run.pk]), **htmx("run-events")))
    assert response.status_code == 200
    [distinct] = [sql for sql in statements if sql.startswith("SELECT DISTINCT")]
    with connection.cursor() as cursor:
        cursor.execute(distinct)
        rows = cursor.fetchall()
    pairs = set(RunEvent.objects.filter(run=run).values_list("kind", "node_id"))
    assert len(rows) == len(pairs) < RunEvent.objects.filter(run=run).count()


def _token_user(secret: str) -> Any:
    request = RequestFactory().get("/api/runs/", HTTP_AUTHORIZATION=f"Bearer {secret}")
    authenticated = BearerTokenAuthentication().authenticate(request)  # type: ignore[arg-type]
    assert authenticated is not None
    return authenticated[0]


def test_get_run_sees_exactly_the_runs_runs_for_lists(cast: Any, workflow: Any, make_user: Any) -> None:
    """``get_run`` scopes in SQL of its own (with the caller's access); ``runs_for`` (lists) through ``for_user``:
    the same runs for members of each role, a stranger, a team a workflow is shared with, tokens limited to a
    team or read-only, someone removed from the team, and a revoked grant."""
    ours = run_services.start_run(actor=cast.owner, workflow=workflow, input={"names": ["Ada"]})
    theirs_workflow = cast.their_workflow("Theirs", greeting_document("theirs"))
    theirs = run_services.start_run(actor=cast.stranger, workflow=theirs_workflow, input={"names": ["Bo"]})
    shared_workflow = cast.their_workflow("Shared", greeting_document("shared"))
    shared = run_services.start_run(actor=cast.stranger, workflow=shared_workflow, input={"names": ["Cy"]})
    grant = grant_services.grant_workflow(actor=cast.stranger, workflow=shared_workflow, team=cast.team.pk,
                                          role="viewer")
    both = make_user("bea")
    Membership.objects.create(user=both, team=cast.other_team, role="viewer")
    Membership.objects.create(user=both, team=cast.team, role="editor")

    def check(user: Any) -> set[int]:
        visible = set()
        for run in (ours, theirs, shared):
            try:
                found = get_run(user=user, run_id=run.pk)
            except ObjectNotFound:
                continue
            visible.add(found.pk)
            access = run_access(user, found)
            assert access is not None and access.role is not None
        assert visible == set(runs_for(user=user).values_list("pk", flat=True)), user
        for pk in {ours.pk, theirs.pk, shared.pk} - visible:
            with pytest.raises(ObjectNotFound):
                get_live_run(user=user, run_id=pk)
        return visible

    for role in ("owner", "editor", "viewer"):
        assert check(cast.users[role]) == {ours.pk, shared.pk}, role
    assert check(cast.stranger) == {theirs.pk, shared.pk}
    assert check(both) == {ours.pk, theirs.pk, shared.pk}
    limited = _token_user(token_services.create_token(actor=both, name="one", team=cast.other_team.pk).secret)
    assert check(limited) == {theirs.pk, shared.pk}
    read_only = _token_user(token_services.create_token(actor=cast.editor, name="ro", read_only=True).secret)
    assert check(read_only) == {ours.pk, shared.pk}
    read_only_access = run_access(read_only, get_run(user=read_only, run_id=ours.pk))
    assert read_only_access is not None and read_only_access.role == "viewer"
    assert check(make_user("nobody")) == set()
    grant_services.revoke_grant(actor=cast.stranger, workflow=shared_workflow, grant_id=grant.pk)
    Membership.objects.filter(user=cast.viewer, team=cast.team).delete()
    assert check(cast.viewer) == set()
    assert check(cast.editor) == {ours.pk}
    # Another team's run is a 404 on the page and in the API, whoever asks.
    assert client_for(cast.editor).get(reverse("run-detail", args=[theirs.pk])).status_code == 404
    api = APIClient()
    api.force_login(cast.editor)
    assert api.get(f"/api/runs/{theirs.pk}/").status_code == 404

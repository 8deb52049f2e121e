"""Sharing a workflow with another team: every workflow endpoint against every grant role, listed on both sides,
revocable, and subgraph references across teams only through a grant (checked when a run starts, then pinned).

Acme (owner olivia) owns the workflow; stan owns the team Other, which gets the grant. stan is an owner there, so
only the grant decides what he may do with Acme's workflow.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from designer.access import grants as grant_services
from designer.models import Run, WorkflowGrant
from designer.runs.services import start_run
from designer.workflows import services as workflow_services
from runtime import WorkflowBuilder
from runtime.errors import WorkflowValidationError

pytestmark = pytest.mark.django_db

RANK = {"none": 0, "viewer": 1, "runner": 2, "editor": 3}
OWN_TEAM_ONLY = "own team only"


@dataclass(frozen=True)
class Call:
    name: str
    method: str
    needs: str  # the least grant role that succeeds, or OWN_TEAM_ONLY
    success: int
    args: Callable[[Any], tuple[Any, ...]] = lambda w: (w.workflow.pk,)
    body: Callable[[Any], Any] = lambda w: None
    query: Callable[[Any], dict[str, Any]] = lambda w: {}


CALLS = [
    Call("workflow-detail", "get", "viewer", 200),
    Call("workflow-detail", "patch", "editor", 200, body=lambda w: {"name": "Renamed"}),
    Call("workflow-detail", "delete", OWN_TEAM_ONLY, 204),
    Call("workflow-duplicate", "post", OWN_TEAM_ONLY, 201, body=lambda w: {"team": w.other.pk}),
    Call("workflow-export", "get", "viewer", 200),
    Call("workflow-document", "get", "viewer", 200),
    Call("workflow-document", "put", "editor", 200,
         body=lambda w: {"revision": w.workflow.revision, "document": w.workflow.document}),
    Call("workflow-validate", "get", "viewer", 200),
    Call("workflow-validate", "post", "viewer", 200, body=lambda w: {}),
    Call("workflow-analysis", "get", "viewer", 200, query=lambda w: {"node": "assess"}),
    Call("workflow-publish", "post", "editor", 201, body=lambda w: {}),
    Call("workflow-versions", "get", "viewer", 200),
    Call("workflow-version", "get", "viewer", 200, args=lambda w: (w.workflow.pk, 1)),
    Call("workflow-grants", "get", OWN_TEAM_ONLY, 200),
    Call("workflow-grants", "post", OWN_TEAM_ONLY, 201, body=lambda w: {"team": w.other.slug, "role": "editor"}),
    Call("workflow-grant", "delete", OWN_TEAM_ONLY, 204, args=lambda w: (w.workflow.pk, w.grant_id or 1)),
    Call("workflow-runs", "post", "runner", 201, body=lambda w: {"input": {"amount": 5}, "version": "draft"}),
    Call("run-detail", "get", "viewer", 200, args=lambda w: (w.run.pk,)),
    Call("run-events", "get", "viewer", 200, args=lambda w: (w.run.pk,)),
    Call("run-cancel", "post", "runner", 200, args=lambda w: (w.run.pk,), body=lambda w: {}),
]


@dataclass
class Shared:
    workflow: Any
    other: Any
    run: Any
    grant_id: int | None


def share(cast: Any, workflow: Any, role: str) -> Shared:
    workflow_services.publish_workflow(actor=cast.owner, workflow=workflow)
    workflow.refresh_from_db()
    run = start_run(actor=cast.owner, workflow=workflow, input={"amount": 1})
    grant_id = None
    if role != "none":
        grant_id = grant_services.grant_workflow(actor=cast.owner, workflow=workflow, team=cast.other_team.slug,
                                                 role=role).pk
    return Shared(workflow=workflow, other=cast.other_team, run=run, grant_id=grant_id)


def expected(call: Call, role: str) -> tuple[int, str | None]:
    if role == "none":
        return 404, "not_found"
    if call.needs == OWN_TEAM_ONLY or RANK[role] < RANK[call.needs]:
        return 403, "permission.denied"
    return call.success, None


@pytest.mark.parametrize("role", ["none", "viewer", "runner", "editor"])
@pytest.mark.parametrize("call", CALLS, ids=lambda c: f"{c.method.upper()} {c.name}")
def test_grant_matrix(call: Call, role: str, cast: Any, workflow: Any, api: Any) -> None:
    shared = share(cast, workflow, role)
    client = api(cast.stranger)
    path = reverse(f"api:{call.name}", args=call.args(shared))
    body = call.body(shared)
    if call.method == "get":
        response = client.get(path, call.query(shared))
    else:
        response = getattr(client, call.method)(path, body, **({"format": "json"} if body is not None else {}))
    status, code = expected(call, role)
    assert response.status_code == status, response.content[:400]
    if code is not None:
        assert response.json()["code"] == code


@pytest.mark.parametrize("role", ["none", "viewer", "runner", "editor"])
def test_lists_show_a_shared_workflow_and_its_runs_to_the_other_team(role: str, cast: Any, workflow: Any,
                                                                     api: Any) -> None:
    shared = share(cast, workflow, role)
    client = api(cast.stranger)
    workflows = [w["id"] for w in client.get(reverse("api:workflow-list")).json()]
    runs = [r["id"] for r in client.get(reverse("api:run-list")).json()["results"]]
    assert (workflow.pk in workflows, shared.run.pk in runs) == ((role != "none"),) * 2
    listed = client.get(reverse("api:team-shared", args=[cast.other_team.pk])).json()
    assert [(g["workflow"], g["role"], g["subgraph_ref"]) for g in listed] == (
        [] if role == "none" else [(workflow.pk, role, f"acme/{workflow.slug}")])


def test_a_grant_is_listed_on_both_sides_and_revocable(cast: Any, workflow: Any, api: Any) -> None:
    share(cast, workflow, "runner")
    owner = Client()
    owner.force_login(cast.owner)
    page = owner.get(reverse("workflow-sharing", args=[workflow.pk])).content.decode()
    assert 'data-grant="other"' in page and "Stop sharing" in page
    other = Client()
    other.force_login(cast.stranger)
    team_page = other.get(reverse("team-detail", args=[cast.other_team.pk])).content.decode()
    assert f'data-shared="{workflow.slug}"' in team_page
    assert other.get(reverse("editor", args=[workflow.pk])).status_code == 200

    grant = WorkflowGrant.objects.get()
    assert owner.post(reverse("workflow-grant-revoke", args=[workflow.pk, grant.pk])).status_code == 302
    assert not WorkflowGrant.objects.exists()
    assert api(cast.stranger).get(reverse("api:workflow-detail", args=[workflow.pk])).status_code == 404
    assert other.get(reverse("editor", args=[workflow.pk])).status_code == 404


def test_sharing_from_the_page_needs_an_owner_and_names_a_team(cast: Any, workflow: Any) -> None:
    editor = Client()
    editor.force_login(cast.editor)
    assert editor.post(reverse("workflow-grant", args=[workflow.pk]),
                       {"team": "other", "role": "viewer"}).status_code == 403
    owner = Client()
    owner.force_login(cast.owner)
    missing = owner.post(reverse("workflow-grant", args=[workflow.pk]), {"team": "no-such-team", "role": "viewer"})
    assert missing.status_code == 400 and "No team" in missing.content.decode()
    done = owner.post(reverse("workflow-grant", args=[workflow.pk]), {"team": "other", "role": "runner"})
    assert done.status_code == 302
    assert WorkflowGrant.objects.get().role == "runner"


def child_document(slug: str) -> dict[str, Any]:
    graph = WorkflowBuilder(slug, "Stamp")
    graph.use("set_value", id="set", input=[{"target": "value", "value": "from acme"}],
              output=[{"source": ".", "target": "stamp"}])
    graph.output("stamp", "state.stamp")
    return graph.build().model_dump(mode="json")


def parent_document(ref: str) -> dict[str, Any]:
    graph = WorkflowBuilder("parent", "Parent")
    graph.subgraph(ref, id="child", output=[{"source": "stamp", "target": "stamp"}])
    graph.output("stamp", "state.stamp")
    return graph.build().model_dump(mode="json")


@pytest.mark.parametrize("role", ["none", "viewer", "runner", "editor"])
def test_a_subgraph_of_another_team_resolves_only_through_a_runner_grant(role: str, cast: Any) -> None:
    child = workflow_services.create_workflow(actor=cast.owner, team=cast.team, name="Stamp",
                                              document=child_document("stamp"))
    workflow_services.publish_workflow(actor=cast.owner, workflow=child)
    if role != "none":
        grant_services.grant_workflow(actor=cast.owner, workflow=child, team=cast.other_team.slug, role=role)
    parent = workflow_services.create_workflow(actor=cast.stranger, team=cast.other_team, name="Parent",
                                               document=parent_document("acme/stamp"))
    if role in ("runner", "editor"):
        run = start_run(actor=cast.stranger, workflow=parent, input={})
        assert run.subgraph_versions == {"acme/stamp": 1}  # checked and pinned when the run starts
    else:
        with pytest.raises(WorkflowValidationError) as refused:
            start_run(actor=cast.stranger, workflow=parent, input={})
        assert "shared with this team to run" in str(refused.value.to_dict())
        assert not Run.objects.filter(workflow=parent).exists()


def test_a_same_slug_in_the_callers_own_team_is_not_the_other_teams_workflow(cast: Any) -> None:
    """``acme/stamp`` never falls back to the caller's own ``stamp``: without the grant it does not resolve."""
    mine = workflow_services.create_workflow(actor=cast.stranger, team=cast.other_team, name="Stamp",
                                             document=child_document("stamp"))
    workflow_services.publish_workflow(actor=cast.stranger, workflow=mine)
    parent = workflow_services.create_workflow(actor=cast.stranger, team=cast.other_team, name="Parent",
                                               document=parent_document("acme/stamp"))
    with pytest.raises(WorkflowValidationError):
        start_run(actor=cast.stranger, workflow=parent, input={})

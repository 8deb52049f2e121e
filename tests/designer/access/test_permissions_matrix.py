"""Every designer endpoint against every kind of caller.

Viewers read; editors also edit, publish and run; owners also manage
members; a stranger (member of another team only) gets 404, never 403, for
anything of this team, and lists never show it; anonymous callers get 401
``auth.required``. A guard test makes sure a new endpoint cannot be added
to the teams' or workflows' API (designer/access/api.py, designer/workflows/api.py) without a row here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.urls import URLPattern, reverse

from designer import urls as root_urls
from designer.access import api as access_api
from designer.access import grants as grant_services
from designer.access import invitations as invitation_services
from designer.access import teams as team_services
from designer.models import Membership
from designer.workflows import api as workflow_api
from designer.workflows import services as workflow_services

pytestmark = pytest.mark.django_db

RANK = {"viewer": 1, "editor": 2, "owner": 3}


@dataclass(frozen=True)
class Endpoint:
    name: str  # URL name in the api namespace
    method: str
    minimum: str | None  # role needed; None: any signed-in user (not team-scoped)
    success: int
    args: Callable[[Any], tuple[Any, ...]] = lambda world: ()
    body: Callable[[Any], Any] = lambda world: None
    query: Callable[[Any], dict[str, Any]] = lambda world: {}
    #: for lists: a check that the team's data is (not) in the response
    shows_team: Callable[[Any, Any], bool] | None = None
    #: overrides the role rule, for endpoints not decided by a team role (an invitation's invitee)
    expected: Callable[[str], tuple[int, str | None]] | None = None


def _wf(world: Any) -> tuple[Any, ...]:
    return (world.workflow.pk,)


def _team(world: Any) -> tuple[Any, ...]:
    return (world.team.pk,)


def _member(world: Any) -> tuple[Any, ...]:
    return (world.team.pk, world.mia.pk)


def _invitation(world: Any) -> tuple[Any, ...]:
    return (world.team.pk, world.invitation.pk)


def _invitee_only(caller: str) -> tuple[int, str | None]:
    """The invitation is addressed to newbie, who is none of the callers: everyone else is told it is not there."""
    return (401, "auth.required") if caller == "anonymous" else (404, "not_found")


ENDPOINTS = [
    Endpoint("root", "get", None, 200),  # the collections listing: nothing of any team in it
    Endpoint("team-list", "get", None, 200,
             shows_team=lambda world, body: any(t["id"] == world.team.pk for t in body)),
    Endpoint("team-list", "post", None, 201, body=lambda w: {"name": "Fresh team"}),
    Endpoint("team-detail", "get", "viewer", 200, args=_team),
    Endpoint("team-members", "get", "viewer", 200, args=_team),
    Endpoint("team-invitations", "get", "owner", 200, args=_team),
    Endpoint("team-invitations", "post", "owner", 201, args=_team,
             body=lambda w: {"user": "newbie2", "role": "viewer"}),
    Endpoint("team-invitation", "delete", "owner", 204, args=_invitation),
    Endpoint("team-shared", "get", "viewer", 200, args=_team),
    Endpoint("workflow-grants", "get", "viewer", 200, args=_wf),
    Endpoint("workflow-grants", "post", "owner", 201, args=_wf, body=lambda w: {"team": "third", "role": "runner"}),
    Endpoint("workflow-grant", "delete", "owner", 204, args=lambda w: (w.workflow.pk, w.grant.pk)),
    Endpoint("invitation-list", "get", None, 200),
    Endpoint("invitation-accept", "post", None, 200, args=lambda w: (w.invitation.pk,), body=lambda w: {},
             expected=_invitee_only),
    Endpoint("invitation-decline", "post", None, 200, args=lambda w: (w.invitation.pk,), body=lambda w: {},
             expected=_invitee_only),
    Endpoint("team-member", "patch", "owner", 200, args=_member, body=lambda w: {"role": "editor"}),
    Endpoint("team-member", "delete", "owner", 204, args=_member),
    Endpoint("workflow-list", "get", None, 200,
             shows_team=lambda world, body: any(w["id"] == world.workflow.pk for w in body)),
    Endpoint("workflow-list", "post", "editor", 201, body=lambda w: {"team": w.team.pk, "name": "New"}),
    Endpoint("workflow-import", "post", "editor", 201,
             body=lambda w: {"team": w.team.pk, "document": w.workflow.document}),
    Endpoint("workflow-detail", "get", "viewer", 200, args=_wf),
    Endpoint("workflow-detail", "patch", "editor", 200, args=_wf, body=lambda w: {"name": "Renamed"}),
    Endpoint("workflow-detail", "delete", "editor", 204, args=_wf),
    Endpoint("workflow-duplicate", "post", "editor", 201, args=_wf, body=lambda w: {}),
    Endpoint("workflow-export", "get", "viewer", 200, args=_wf),
    Endpoint("workflow-document", "get", "viewer", 200, args=_wf),
    Endpoint("workflow-document", "put", "editor", 200, args=_wf,
             body=lambda w: {"revision": w.workflow.revision, "document": w.workflow.document}),
    Endpoint("workflow-validate", "get", "viewer", 200, args=_wf),
    Endpoint("workflow-validate", "post", "viewer", 200, args=_wf, body=lambda w: {}),
    Endpoint("workflow-analysis", "get", "viewer", 200, args=_wf, query=lambda w: {"node": "assess"}),
    Endpoint("workflow-publish", "post", "editor", 201, args=_wf, body=lambda w: {}),
    Endpoint("workflow-versions", "get", "viewer", 200, args=_wf),
    Endpoint("workflow-version", "get", "viewer", 200, args=lambda w: (w.workflow.pk, 1)),
    Endpoint("task-list", "get", None, 200),
]

CALLERS = ("owner", "editor", "viewer", "stranger", "anonymous")


@dataclass
class World:
    team: Any
    workflow: Any
    mia: Any
    invitation: Any
    grant: Any
    users: dict[str, Any]


@pytest.fixture
def world(cast: Any, workflow: Any, make_user: Any) -> World:
    mia = make_user("mia", email="mia@example.com")
    make_user("newbie", email="newbie@example.com")
    Membership.objects.create(team=cast.team, user=mia, role="viewer")
    invitation = invitation_services.invite(actor=cast.owner, team=cast.team, user="newbie", role="viewer",
                                            site_url="http://testserver/").invitation
    workflow_services.publish_workflow(actor=cast.owner, workflow=workflow)
    workflow.refresh_from_db()
    team_services.create_team(actor=mia, name="Third")
    grant = grant_services.grant_workflow(actor=cast.owner, workflow=workflow, team="third", role="viewer")
    return World(team=cast.team, workflow=workflow, mia=mia, invitation=invitation, grant=grant, users=cast.users)


def _expected(endpoint: Endpoint, caller: str) -> tuple[int, str | None]:
    if endpoint.expected is not None:
        return endpoint.expected(caller)
    if caller == "anonymous":
        return 401, "auth.required"
    if endpoint.minimum is None:
        return endpoint.success, None
    if caller == "stranger":
        return 404, "not_found"
    if RANK[caller] >= RANK[endpoint.minimum]:
        return endpoint.success, None
    return 403, "permission.denied"


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: f"{e.method.upper()} {e.name}")
def test_permission_matrix(endpoint: Endpoint, caller: str, world: World, api: Any) -> None:
    client = api(world.users.get(caller))
    path = reverse(f"api:{endpoint.name}", args=endpoint.args(world))
    body = endpoint.body(world)
    kwargs: dict[str, Any] = {"format": "json"} if body is not None else {}
    if endpoint.method == "get":
        response = client.get(path, endpoint.query(world))
    else:
        response = getattr(client, endpoint.method)(path, body, **kwargs)

    status, code = _expected(endpoint, caller)
    assert response.status_code == status, response.content[:500]
    if code is not None:
        assert response.json()["code"] == code
    if endpoint.shows_team is not None and status == 200:
        assert endpoint.shows_team(world, response.json()) is (caller != "stranger")


def test_stranger_404_is_indistinguishable_from_a_missing_object(world: World, api: Any) -> None:
    client = api(world.users["stranger"])
    foreign = client.get(reverse("api:workflow-detail", args=[world.workflow.pk]))
    missing = client.get(reverse("api:workflow-detail", args=[world.workflow.pk + 1000]))
    assert (foreign.status_code, foreign.json()["code"]) == (missing.status_code, missing.json()["code"]) == (
        404, "not_found")


def test_every_designer_endpoint_is_in_the_matrix() -> None:
    """The guard: a new route in the teams' or workflows' API needs a matrix row (the runs API has its own tests)."""
    patterns = [*root_urls.api_urlpatterns, *access_api.urlpatterns, *workflow_api.urlpatterns]
    declared = {p.name for p in patterns if isinstance(p, URLPattern)} - {"unknown"}  # the JSON 404
    covered = {e.name for e in ENDPOINTS}
    assert declared == covered

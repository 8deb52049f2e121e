"""``start_run``'s permission check is one statement (``permissions.workflow_access``), or none when the view that
calls it passes the access it read in the same request; the rules stay: scoped to the caller's teams and grants,
narrowed by the API token, a viewer cannot start runs, and a member removed from a team (or a revoked grant) loses
access at the next check."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from designer.access import grants as grant_services
from designer.access import permissions
from designer.access import tokens as token_services
from designer.access.api_auth import BearerTokenAuthentication
from designer.core.errors import ActionForbidden, ObjectNotFound
from designer.models import Membership, Run
from designer.runs import services as run_services
from designer.workflows import services as workflow_services
from tests.designer.clients import client_for
from tests.designer.conftest import simple_document
from tests.designer.statements import access_reads

pytestmark = pytest.mark.django_db

@pytest.fixture
def workflow(cast: Any) -> Any:
    return workflow_services.create_workflow(actor=cast.owner, team=cast.team, name="Simple",
                                             document=simple_document())


def test_start_run_checks_access_with_one_statement(cast: Any, workflow: Any) -> None:
    """Two ORM queries before (membership, then grants): 0.9 ms of CPU of a ~3.4 ms start_run."""
    with CaptureQueriesContext(connection) as context:
        run_services.start_run(actor=cast.editor, workflow=workflow, input={"amount": 1})
    assert access_reads(context) == 1, [q["sql"][:120] for q in context.captured_queries]


def test_start_run_reads_nothing_more_with_the_access_its_caller_read(cast: Any, workflow: Any) -> None:
    access = permissions.require_workflow_access(cast.editor, workflow, "runner")
    with CaptureQueriesContext(connection) as context:
        run = run_services.start_run(actor=cast.editor, workflow=workflow, input={"amount": 1}, access=access)
    assert access_reads(context) == 0 and Run.objects.filter(pk=run.pk).exists()


def test_an_access_proves_nothing_for_another_user_workflow_token_or_a_lower_role(cast: Any, workflow: Any) -> None:
    """Passing someone else's access (or a viewer's) does not let a viewer or a stranger start a run: the service
    reads the actor's own access then."""
    owner_access = permissions.require_workflow_access(cast.owner, workflow, "runner")
    with pytest.raises(ActionForbidden):
        run_services.start_run(actor=cast.viewer, workflow=workflow, input={"amount": 1}, access=owner_access)
    with pytest.raises(ObjectNotFound):
        run_services.start_run(actor=cast.stranger, workflow=workflow, input={"amount": 1}, access=owner_access)
    other = workflow_services.create_workflow(actor=cast.owner, team=cast.team, name="Other",
                                              document=simple_document("other"))
    assert not owner_access.proves(cast.owner, other, "runner")
    viewer_access = permissions.workflow_access(cast.viewer, workflow)
    assert viewer_access is not None and viewer_access.role == "viewer"
    assert not viewer_access.proves(cast.viewer, workflow, "runner")
    with pytest.raises(ActionForbidden):
        run_services.start_run(actor=cast.viewer, workflow=workflow, input={"amount": 1}, access=viewer_access)
    # The same user through a read-only token is another caller: the access read without it proves nothing.
    secret = token_services.create_token(actor=cast.owner, name="ro", read_only=True).secret
    token_user = _token_user(secret)
    assert not owner_access.proves(token_user, workflow, "runner")
    with pytest.raises(ActionForbidden):
        run_services.start_run(actor=token_user, workflow=workflow, input={"amount": 1}, access=owner_access)
    assert Run.objects.count() == 0


def _token_user(secret: str) -> Any:
    """The user as the API's bearer authentication hands it to a view (carrying its token)."""
    request = RequestFactory().get("/api/runs/", HTTP_AUTHORIZATION=f"Bearer {secret}")
    authenticated = BearerTokenAuthentication().authenticate(request)  # type: ignore[arg-type]
    assert authenticated is not None
    return authenticated[0]


def test_a_viewer_cannot_start_a_run_and_a_stranger_finds_nothing(cast: Any, workflow: Any) -> None:
    with pytest.raises(ActionForbidden) as refused:
        run_services.start_run(actor=cast.viewer, workflow=workflow, input={"amount": 1})
    assert refused.value.details == {"role": "viewer", "required": "runner"}
    with pytest.raises(ObjectNotFound):
        run_services.start_run(actor=cast.stranger, workflow=workflow, input={"amount": 1})
    page = client_for(cast.viewer).post(reverse("run-start", args=[workflow.pk]),
                                        {"version": "draft", "_mode": "fields", "field.amount": "1"})
    assert page.status_code == 403
    assert client_for(cast.stranger).post(reverse("run-start", args=[workflow.pk]),
                                          {"version": "draft", "_mode": "fields", "field.amount": "1"}
                                          ).status_code == 404
    assert Run.objects.count() == 0


def test_a_member_removed_from_the_team_loses_access_at_once(cast: Any, workflow: Any) -> None:
    run_services.start_run(actor=cast.editor, workflow=workflow, input={"amount": 1})
    access = permissions.workflow_access(cast.editor, workflow)
    Membership.objects.filter(user=cast.editor, team=cast.team).delete()
    with pytest.raises(ObjectNotFound):
        run_services.start_run(actor=cast.editor, workflow=workflow, input={"amount": 1})
    assert permissions.workflow_access(cast.editor, workflow) != access
    # The same user object, demoted rather than removed: refused too, with no stale role kept anywhere.
    Membership.objects.create(user=cast.editor, team=cast.team, role="viewer")
    with pytest.raises(ActionForbidden):
        run_services.start_run(actor=cast.editor, workflow=workflow, input={"amount": 1})
    assert Run.objects.count() == 1


def test_a_grant_gives_its_role_and_revoking_it_ends_the_access_at_once(cast: Any, workflow: Any) -> None:
    grant = grant_services.grant_workflow(actor=cast.owner, workflow=workflow, team=cast.other_team.pk,
                                          role="runner")
    access = permissions.workflow_access(cast.stranger, workflow)
    assert access is not None and (access.team_role, access.grant_role) == (None, "runner")
    run_services.start_run(actor=cast.stranger, workflow=workflow, input={"amount": 1})
    grant_services.revoke_grant(actor=cast.owner, workflow=workflow, grant_id=grant.pk)
    with pytest.raises(ObjectNotFound):
        run_services.start_run(actor=cast.stranger, workflow=workflow, input={"amount": 1})
    grant_services.grant_workflow(actor=cast.owner, workflow=workflow, team=cast.other_team.pk, role="viewer")
    with pytest.raises(ActionForbidden):
        run_services.start_run(actor=cast.stranger, workflow=workflow, input={"amount": 1})


def test_the_one_statement_keeps_the_tokens_limits(cast: Any, workflow: Any) -> None:
    """A token limited to another team sees neither the team role nor a grant to a team outside it; a read-only
    token reads (viewer) whatever the role."""
    grant_services.grant_workflow(actor=cast.owner, workflow=workflow, team=cast.other_team.pk, role="editor")
    Membership.objects.create(user=cast.owner, team=cast.other_team, role="viewer")
    assert permissions.workflow_role(cast.owner, workflow) == "owner"
    limited = _token_user(token_services.create_token(actor=cast.owner, name="other", team=cast.other_team.pk).secret)
    access = permissions.workflow_access(limited, workflow)
    assert access is not None and (access.team_role, access.grant_role) == (None, "editor")
    own = _token_user(token_services.create_token(actor=cast.owner, name="own", team=cast.team.pk).secret)
    access = permissions.workflow_access(own, workflow)
    assert access is not None and (access.team_role, access.grant_role) == ("owner", None)
    read_only = _token_user(token_services.create_token(actor=cast.owner, name="ro", read_only=True).secret)
    access = permissions.workflow_access(read_only, workflow)
    assert access is not None and (access.team_role, access.grant_role) == ("viewer", "viewer")
    with pytest.raises(ActionForbidden):
        run_services.start_run(actor=read_only, workflow=workflow, input={"amount": 1})


def test_deleting_runs_is_for_the_workflows_own_team_in_one_statement(cast: Any, workflow: Any) -> None:
    run = run_services.start_run(actor=cast.owner, workflow=workflow, input={"amount": 1})
    grant_services.grant_workflow(actor=cast.owner, workflow=workflow, team=cast.other_team.pk, role="editor")
    with pytest.raises(ActionForbidden) as refused:
        run_services.delete_run(actor=cast.stranger, run=run)
    assert "only members of its own team" in refused.value.message
    with pytest.raises(ActionForbidden):
        run_services.delete_run(actor=cast.viewer, run=run)
    with CaptureQueriesContext(connection) as context:
        run_services.delete_run(actor=cast.editor, run=run)
    assert access_reads(context) == 1 and not Run.objects.filter(pk=run.pk).exists()

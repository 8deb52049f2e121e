from __future__ import annotations

import copy

import pytest

from designer.access import invitations as invitation_services
from designer.access import teams as team_services
from designer.core.errors import (
    ActionForbidden,
    BadRequest,
    DocumentInvalid,
    DocumentTooLarge,
    ObjectNotFound,
    RevisionConflict,
    TeamRuleViolation,
)
from designer.models import Membership, Workflow, WorkflowVersion
from designer.workflows import services as workflow_services
from runtime.errors import WorkflowValidationError

pytestmark = pytest.mark.django_db


# --- teams -------------------------------------------------------------------


def test_create_team_makes_the_creator_owner_with_a_unique_slug(cast):
    first = team_services.create_team(actor=cast.viewer, name="Acme")
    assert first.slug == "acme-2"
    assert Membership.objects.get(team=first, user=cast.viewer).role == "owner"


def test_create_team_needs_a_name(cast):
    with pytest.raises(BadRequest):
        team_services.create_team(actor=cast.owner, name="   ")


def test_members_join_only_by_accepting_an_invitation(cast, make_user):
    zoe = make_user("zoe", email="Zoe@Example.com")
    sent = invitation_services.invite(actor=cast.owner, team=cast.team, user="zoe@example.com", role="editor",
                                      site_url="http://testserver/")
    assert not Membership.objects.filter(team=cast.team, user=zoe).exists()
    membership = invitation_services.accept_invitation(actor=zoe, invitation=sent.invitation)
    assert (membership.user, membership.role) == (zoe, "editor")


def test_invite_refuses_members_and_bad_roles(cast):
    with pytest.raises(BadRequest, match="already a member"):
        invitation_services.invite(actor=cast.owner, team=cast.team, user="vera", role="viewer", site_url="")
    with pytest.raises(BadRequest, match="role"):
        invitation_services.invite(actor=cast.owner, team=cast.team, user="stan", role="admin", site_url="")


def test_only_owners_manage_members_and_strangers_learn_nothing(cast):
    with pytest.raises(ActionForbidden):
        invitation_services.invite(actor=cast.editor, team=cast.team, user="stan", role="viewer", site_url="")
    with pytest.raises(ActionForbidden):
        team_services.change_member_role(actor=cast.viewer, team=cast.team, user_id=cast.editor.pk, role="viewer")
    with pytest.raises(ObjectNotFound):
        team_services.remove_member(actor=cast.stranger, team=cast.team, user_id=cast.viewer.pk)


def test_last_owner_can_neither_be_demoted_nor_leave(cast):
    with pytest.raises(TeamRuleViolation):
        team_services.change_member_role(actor=cast.owner, team=cast.team, user_id=cast.owner.pk, role="editor")
    with pytest.raises(TeamRuleViolation):
        team_services.remove_member(actor=cast.owner, team=cast.team, user_id=cast.owner.pk)
    team_services.change_member_role(actor=cast.owner, team=cast.team, user_id=cast.editor.pk, role="owner")
    team_services.remove_member(actor=cast.owner, team=cast.team, user_id=cast.owner.pk)
    assert not Membership.objects.filter(team=cast.team, user=cast.owner).exists()


def test_any_member_may_leave(cast):
    team_services.remove_member(actor=cast.viewer, team=cast.team, user_id=cast.viewer.pk)
    assert not Membership.objects.filter(team=cast.team, user=cast.viewer).exists()


# --- workflows ---------------------------------------------------------------


def test_create_workflow_defaults_to_an_empty_document_named_by_slug(cast):
    workflow = workflow_services.create_workflow(actor=cast.editor, team=cast.team, name="Order intake")
    assert workflow.slug == "order-intake" and workflow.revision == 1
    assert workflow.document["id"] == "order-intake" and workflow.document["nodes"] == []
    again = workflow_services.create_workflow(actor=cast.editor, team=cast.team.pk, name="Order intake")
    assert again.slug == "order-intake-2"


def test_viewers_and_strangers_cannot_create(cast):
    with pytest.raises(ActionForbidden):
        workflow_services.create_workflow(actor=cast.viewer, team=cast.team, name="x")
    with pytest.raises(ObjectNotFound):
        workflow_services.create_workflow(actor=cast.stranger, team=cast.team, name="x")


def test_save_document_increments_revision_and_reports_diagnostics(cast, workflow, document):
    broken = copy.deepcopy(document)
    broken["routes"] = [r for r in broken["routes"] if r["label"] != "review"]
    broken["nodes"].append({"kind": "task", "id": "orphan", "task": "sum_totals"})
    saved = workflow_services.save_document(actor=cast.editor, workflow=workflow, revision=1, document=broken)
    assert saved.workflow.revision == 2
    codes = {d.code for d in saved.diagnostics}
    assert "node.unreachable" in codes  # stored even though it has errors
    assert Workflow.objects.get(pk=workflow.pk).document["nodes"][-1]["id"] == "orphan"


def test_save_document_with_a_stale_revision_changes_nothing(cast, workflow, document):
    workflow_services.save_document(actor=cast.editor, workflow=workflow, revision=1, document=document)
    stale = copy.deepcopy(document)
    stale["description"] = "lost update"
    with pytest.raises(RevisionConflict) as raised:
        workflow_services.save_document(actor=cast.owner, workflow=workflow, revision=1, document=stale)
    assert raised.value.details["current_revision"] == 2
    stored = Workflow.objects.get(pk=workflow.pk)
    assert stored.revision == 2 and stored.document["description"] != "lost update"


def test_save_document_refuses_malformed_json_and_keeps_the_previous_revision(cast, workflow, document):
    bad = copy.deepcopy(document)
    bad["nodes"][0]["kind"] = "teleport"
    with pytest.raises(DocumentInvalid) as raised:
        workflow_services.save_document(actor=cast.editor, workflow=workflow, revision=1, document=bad)
    assert raised.value.details["errors"] and all({"loc", "msg"} <= set(e) for e in raised.value.details["errors"])
    stored = Workflow.objects.get(pk=workflow.pk)
    assert stored.revision == 1 and stored.document == workflow.document


def test_save_document_forces_the_id_to_the_slug(cast, workflow, document):
    other = dict(document, id="something-else")
    saved = workflow_services.save_document(actor=cast.editor, workflow=workflow, revision=1, document=other)
    assert saved.workflow.document["id"] == workflow.slug


def test_save_document_refuses_too_many_nodes(cast, workflow, settings):
    settings.TRELLIS_MAX_DOCUMENT_NODES = 3
    nodes = [{"kind": "task", "id": f"n{i}", "task": "sum_totals"} for i in range(4)]
    with pytest.raises(DocumentTooLarge):
        workflow_services.save_document(actor=cast.editor, workflow=workflow, revision=1,
                                        document={"id": "x", "nodes": nodes})


def test_save_document_requires_an_integer_revision(cast, workflow, document):
    with pytest.raises(BadRequest):
        workflow_services.save_document(actor=cast.editor, workflow=workflow, revision="1", document=document)


def test_publish_numbers_versions_and_freezes_the_document(cast, workflow, document):
    first = workflow_services.publish_workflow(actor=cast.editor, workflow=workflow)
    changed = dict(document, description="second")
    workflow_services.save_document(actor=cast.editor, workflow=workflow, revision=1, document=changed)
    second = workflow_services.publish_workflow(actor=cast.editor, workflow=workflow)
    assert (first.number, second.number) == (1, 2)
    assert WorkflowVersion.objects.get(pk=first.pk).document["description"] != "second"
    assert second.document["description"] == "second" and second.published_by == cast.editor


def test_publish_refuses_a_document_with_errors(cast):
    workflow = workflow_services.create_workflow(actor=cast.editor, team=cast.team, name="Empty")
    with pytest.raises(WorkflowValidationError) as raised:
        workflow_services.publish_workflow(actor=cast.editor, workflow=workflow)
    assert raised.value.diagnostics
    assert not WorkflowVersion.objects.filter(workflow=workflow).exists()


def test_viewer_cannot_publish(cast, workflow):
    with pytest.raises(ActionForbidden):
        workflow_services.publish_workflow(actor=cast.viewer, workflow=workflow)


def test_duplicate_into_another_team_needs_owner_here_and_editor_there(cast, workflow):
    Membership.objects.create(team=cast.other_team, user=cast.owner, role="viewer")
    with pytest.raises(ActionForbidden, match="target team|editor"):
        workflow_services.duplicate_workflow(actor=cast.owner, workflow=workflow, team=cast.other_team)
    # An editor of the source team may not take the workflow out, even into a team they own.
    Membership.objects.create(team=cast.other_team, user=cast.editor, role="owner")
    with pytest.raises(ActionForbidden, match="only its owners"):
        workflow_services.duplicate_workflow(actor=cast.editor, workflow=workflow, team=cast.other_team)
    Membership.objects.filter(team=cast.other_team, user=cast.owner).update(role="editor")
    duplicate = workflow_services.duplicate_workflow(actor=cast.owner, workflow=workflow, team=cast.other_team,
                                                     name="Mine now")
    assert duplicate.team == cast.other_team and duplicate.name == "Mine now"
    assert duplicate.document["id"] == duplicate.slug and duplicate.document["nodes"] == workflow.document["nodes"]


def test_duplicate_in_the_same_team_needs_editor(cast, workflow):
    with pytest.raises(ActionForbidden, match="needs editor"):
        workflow_services.duplicate_workflow(actor=cast.viewer, workflow=workflow)
    duplicate = workflow_services.duplicate_workflow(actor=cast.editor, workflow=workflow)
    assert duplicate.team == cast.team and duplicate.name == "Copy of Simple flow"
    assert duplicate.revision == 1 and duplicate.pk != workflow.pk


def test_import_takes_the_slug_from_the_document_id(cast, document):
    imported = workflow_services.import_workflow(actor=cast.editor, team=cast.team, document=document)
    assert imported.slug == "simple" and imported.name == "Simple"
    twice = workflow_services.import_workflow(actor=cast.editor, team=cast.team, document=document, name="Again")
    assert twice.slug == "simple-2" and twice.document["id"] == "simple-2"


def test_import_refuses_malformed_documents(cast):
    with pytest.raises(DocumentInvalid):
        workflow_services.import_workflow(actor=cast.editor, team=cast.team, document=["not", "an", "object"])
    assert not Workflow.objects.filter(team=cast.team).exists()


def test_update_keeps_the_slug(cast, workflow):
    updated = workflow_services.update_workflow(actor=cast.editor, workflow=workflow, name="Renamed",
                                                description="new")
    assert (updated.name, updated.slug, updated.description) == ("Renamed", "simple-flow", "new")
    with pytest.raises(ActionForbidden):
        workflow_services.update_workflow(actor=cast.viewer, workflow=workflow, name="No")


def test_delete_needs_editor(cast, workflow):
    with pytest.raises(ActionForbidden):
        workflow_services.delete_workflow(actor=cast.viewer, workflow=workflow)
    workflow_services.delete_workflow(actor=cast.editor, workflow=workflow)
    assert not Workflow.objects.filter(pk=workflow.pk).exists()

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from designer.models import Membership, Run, RunEvent, RunInput, Team, Workflow, WorkflowVersion
from designer.workflows import services as workflow_services

pytestmark = pytest.mark.django_db


def _run(workflow, **fields):
    return Run.objects.create(team=workflow.team, workflow=workflow, document=workflow.document, **fields)


def test_for_user_returns_only_rows_of_the_users_teams(cast, workflow):
    foreign = workflow_services.create_workflow(actor=cast.stranger, team=cast.other_team, name="Theirs")
    version = workflow_services.publish_workflow(actor=cast.owner, workflow=workflow)
    run = _run(workflow)
    RunEvent.objects.create(run=run, seq=1, kind="run_started", at=timezone.now())

    for role in ("owner", "editor", "viewer"):
        user = cast.users[role]
        assert list(Team.objects.for_user(user)) == [cast.team]
        assert list(Workflow.objects.for_user(user)) == [workflow]
        assert list(WorkflowVersion.objects.for_user(user)) == [version]
        assert list(Run.objects.for_user(user)) == [run]
        assert RunEvent.objects.for_user(user).count() == 1
    assert list(Workflow.objects.for_user(cast.stranger)) == [foreign]
    assert not Run.objects.for_user(cast.stranger).exists()
    assert not RunEvent.objects.for_user(cast.stranger).exists()


def test_for_user_gives_nothing_to_anonymous_and_none(cast, workflow):
    from django.contrib.auth.models import AnonymousUser

    assert not Workflow.objects.for_user(AnonymousUser()).exists()
    assert not Team.objects.for_user(None).exists()


def test_for_user_does_not_duplicate_rows_for_users_in_several_teams(cast, workflow):
    workflow_services.create_workflow(actor=cast.stranger, team=cast.other_team, name="Theirs")
    Membership.objects.create(team=cast.other_team, user=cast.owner, role="viewer")
    Membership.objects.create(team=cast.other_team, user=cast.editor, role="viewer")
    visible = list(Workflow.objects.for_user(cast.owner))
    assert len(visible) == len(set(visible)) == 2
    assert Team.objects.for_user(cast.owner).count() == 2


def test_team_role_annotation(cast):
    roles = {team.name: team.role for team in Team.objects.for_user(cast.editor).with_role(cast.editor)}
    assert roles == {"Acme": "editor"}


def test_membership_is_unique_per_user_and_team(cast):
    with pytest.raises(IntegrityError), transaction.atomic():
        Membership.objects.create(team=cast.team, user=cast.editor, role="viewer")


def test_membership_role_is_constrained_in_the_database(cast, make_user):
    with pytest.raises(IntegrityError), transaction.atomic():
        Membership.objects.create(team=cast.team, user=make_user("zed"), role="admin")


def test_workflow_slug_is_unique_per_team_only(cast):
    Workflow.objects.create(team=cast.team, slug="same", name="A")
    Workflow.objects.create(team=cast.other_team, slug="same", name="B")
    with pytest.raises(IntegrityError), transaction.atomic():
        Workflow.objects.create(team=cast.team, slug="same", name="C")


def test_published_version_cannot_be_saved_again(cast, workflow):
    version = workflow_services.publish_workflow(actor=cast.owner, workflow=workflow)
    version.document = {"changed": True}
    with pytest.raises(ValueError, match="immutable"):
        version.save()
    assert WorkflowVersion.objects.get(pk=version.pk).document == workflow.document


def test_version_number_is_unique_per_workflow(cast, workflow):
    workflow_services.publish_workflow(actor=cast.owner, workflow=workflow)
    with pytest.raises(IntegrityError), transaction.atomic():
        WorkflowVersion.objects.create(workflow=workflow, number=1, document={})


def test_run_event_seq_is_unique_per_run(cast, workflow):
    run = _run(workflow)
    RunEvent.objects.create(run=run, seq=1, kind="run_started", at=timezone.now())
    with pytest.raises(IntegrityError), transaction.atomic():
        RunEvent.objects.create(run=run, seq=1, kind="node_started", at=timezone.now())


def test_run_status_is_constrained_and_defaults_to_queued(cast, workflow):
    run = _run(workflow)
    assert run.status == Run.Status.QUEUED and not run.is_finished and run.workflow_version is None
    with pytest.raises(IntegrityError), transaction.atomic():
        _run(workflow, status="exploded")


def test_run_duration(cast, workflow):
    start = timezone.now()
    run = _run(workflow, started_at=start, finished_at=start + timedelta(milliseconds=1500), status="completed")
    assert run.duration_ms == 1500 and run.is_finished
    assert _run(workflow).duration_ms is None


def test_deleting_a_workflow_removes_its_versions_runs_and_events(cast, workflow):
    version = workflow_services.publish_workflow(actor=cast.owner, workflow=workflow)
    run = _run(workflow, workflow_version=version)
    RunEvent.objects.create(run=run, seq=1, kind="run_started", at=timezone.now())
    workflow.delete()
    assert not WorkflowVersion.objects.exists() and not Run.objects.exists() and not RunEvent.objects.exists()


def test_a_version_with_runs_cannot_be_deleted_on_its_own(cast, workflow):
    version = workflow_services.publish_workflow(actor=cast.owner, workflow=workflow)
    _run(workflow, workflow_version=version)
    from django.db.models import RestrictedError

    with pytest.raises(RestrictedError):
        version.delete()


def test_a_runs_input_lives_in_its_own_row_and_reads_back_through_the_run(workflow):
    # Kept out of the run's row, which every checkpoint rewrites (designer/models.py, Run.input).
    run = _run(workflow, input={"items": [1, 2, 3]})
    assert RunInput.objects.get(run=run).value == {"items": [1, 2, 3]}
    assert Run.objects.get(pk=run.pk).input == {"items": [1, 2, 3]}
    assert "input" not in [field.name for field in Run._meta.concrete_fields]

    run.input = {"items": [4]}
    run.save()
    assert Run.objects.get(pk=run.pk).input == {"items": [4]}
    assert RunInput.objects.filter(run=run).count() == 1

    # A run made without an input reads an empty object, as the column's default did.
    bare = _run(workflow)
    assert Run.objects.get(pk=bare.pk).input == {}

    run.delete()
    assert not RunInput.objects.filter(run_id=run.pk).exists()


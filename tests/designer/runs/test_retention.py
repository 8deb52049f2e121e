"""Retention by policy: finished runs past their team's (or the server's) age or count limit are deleted with
their traces and checkpoint history by the sweep's periodic prune; live runs and their task rows are never
touched; old finished task rows go; the team admin shows the policy and what will go.

Runs here are real (started through the service and executed by a real ``run_worker``); only their finish
times are moved into the past, which is what a policy counts.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from designer.models import RecoveryChain, Run, RunCheckpoint, RunEvent
from designer.runs import chain, retention
from designer.runs import services as run_services
from tests.designer.runs_support import counting_document, run_batch

pytestmark = pytest.mark.django_db(transaction=True)


def finished_runs(cast: Any, env: dict[str, str], count: int, *, team_workflow: Any = None) -> list[Run]:
    """``count`` runs of a small workflow, executed by a real worker to completion."""
    workflow = team_workflow or cast.workflow("Counting", counting_document(pause=False))
    runs = [run_services.start_run(actor=cast.owner, workflow=workflow, input={"x": 2}) for _ in range(count)]
    run_batch(env)
    done = list(Run.objects.filter(pk__in=[run.pk for run in runs]).order_by("pk"))
    assert {run.status for run in done} == {"completed"}
    return done


def age(run: Run, days: float) -> None:
    Run.objects.filter(pk=run.pk).update(finished_at=timezone.now() - timedelta(days=days))


def test_the_server_default_deletes_old_finished_runs_with_their_trace_and_history(cast: Any, env: dict[str, str],
                                                                                settings: Any) -> None:
    settings.TRELLIS_RETENTION_DAYS = 30
    old, recent = finished_runs(cast, env, 2)
    age(old, 31)
    age(recent, 29)
    assert RunEvent.objects.filter(run=old).exists() and RunCheckpoint.objects.filter(run=old).exists()
    live = run_services.start_run(actor=cast.owner, workflow=old.workflow, input={"x": 2})  # queued: live
    Run.objects.filter(pk=live.pk).update(created_at=timezone.now() - timedelta(days=400))

    assert list(retention.expired_runs(cast.team)) == [Run.objects.get(pk=old.pk)]
    pruned = retention.prune()
    assert pruned.runs == 1
    assert not Run.objects.filter(pk=old.pk).exists()
    assert not RunEvent.objects.filter(run_id=old.pk).exists()
    assert not RunCheckpoint.objects.filter(run_id=old.pk).exists()
    assert Run.objects.filter(pk__in=[recent.pk, live.pk]).count() == 2


def test_a_team_policy_keeps_its_newest_runs_and_other_teams_follow_the_server(cast: Any, env: dict[str, str],
                                                                              settings: Any) -> None:
    settings.TRELLIS_RETENTION_DAYS = 0  # the server keeps everything however old
    runs = finished_runs(cast, env, 4)
    for days, run in zip((4, 3, 2, 1), runs, strict=True):
        age(run, days)
    cast.team.retention_runs = 2
    cast.team.save()
    assert retention.policy_for(cast.team).describe() == "delete beyond the newest 2 finished runs"
    assert retention.policy_for(cast.other_team).describe() == "keep every finished run"
    retention.prune()
    assert list(Run.objects.filter(team=cast.team).order_by("pk").values_list("pk", flat=True)) == [
        runs[2].pk, runs[3].pk]


def test_old_finished_task_rows_go_but_a_live_runs_row_stays(cast: Any, env: dict[str, str], settings: Any) -> None:
    settings.TRELLIS_RETENTION_DAYS = 0
    settings.TRELLIS_RETENTION_TASK_DAYS = 1
    (done,) = finished_runs(cast, env, 1)
    DBTaskResult.objects.filter(pk=done.task_result_id).update(finished_at=timezone.now() - timedelta(days=2))
    # A run whose worker died holds its RUNNING... here: a live run pointing at an old finished row is kept too.
    live = run_services.start_run(actor=cast.owner, workflow=done.workflow, input={"x": 1})
    Run.objects.filter(pk=live.pk).update(task_result_id=done.task_result_id)
    assert retention.prune().task_rows == 0
    Run.objects.filter(pk=live.pk).update(status="cancelled", finished_at=timezone.now())
    assert retention.prune().task_rows == 1
    assert not DBTaskResult.objects.filter(pk=done.task_result_id).exists()
    assert Run.objects.filter(pk=done.pk).exists()  # the run itself is within its (unlimited) policy


def test_the_workers_sweep_prunes_once_an_interval(cast: Any, env: dict[str, str], settings: Any) -> None:
    env = {**env, "TRELLIS_RETENTION_DAYS": "30"}
    old, kept = finished_runs(cast, env, 2)
    age(old, 60)
    age(kept, 1)
    chain.ensure_chain()
    RecoveryChain.objects.filter(pk=chain.CHAIN).update(due_at=timezone.now() - timedelta(minutes=1),
                                                        pruned_at=None)
    run_batch(env)
    assert not Run.objects.filter(pk=old.pk).exists() and Run.objects.filter(pk=kept.pk).exists()
    pruned_at = RecoveryChain.objects.get(pk=chain.CHAIN).pruned_at
    assert pruned_at is not None
    # Not due again within the interval: another call claims nothing.
    assert retention.prune_if_due() is None


def test_the_team_admin_shows_the_policy_and_what_will_go(cast: Any, env: dict[str, str], settings: Any,
                                                          make_user: Any) -> None:
    from django.test import Client
    from django.urls import reverse

    settings.TRELLIS_RETENTION_DAYS = 30
    runs = finished_runs(cast, env, 3)
    for run in runs[:2]:
        age(run, 40)
    admin = make_user("root", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(admin)
    page = client.get(reverse("admin:designer_team_change", args=[cast.team.pk])).content.decode()
    assert "delete finished runs older than 30 days (server default)" in page
    assert "2 finished runs (finished" in page and "at the next prune" in page
    listing = client.get(reverse("admin:designer_team_changelist")).content.decode()
    assert "runs the next prune deletes" in listing.lower()

"""The admin's run history: filters, the read-only trace inline, pretty JSON, and the cancel action."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from designer.models import Run, RunEvent
from designer.runs.services import start_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client: Any, make_user: Any) -> Any:
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    return client


def test_run_list_filters_and_search(admin_client: Any, cast: Any, workflow: Any) -> None:
    queued = start_run(actor=cast.editor, workflow=workflow, input={"amount": 5})
    done = start_run(actor=cast.editor, workflow=workflow, input={"amount": 6})
    Run.objects.filter(pk=done.pk).update(status="completed")
    url = reverse("admin:designer_run_changelist")

    page = admin_client.get(url)
    assert page.status_code == 200
    assert page.context["cl"].result_count == 2
    assert admin_client.get(url, {"status__exact": "completed"}).context["cl"].result_count == 1
    assert admin_client.get(url, {"team__id__exact": cast.other_team.pk}).context["cl"].result_count == 0
    assert admin_client.get(url, {"q": "eddie"}).context["cl"].result_count == 2
    assert admin_client.get(url, {"q": str(queued.pk)}).context["cl"].result_count == 1


def test_run_page_shows_trace_inline_and_json_read_only(admin_client: Any, cast: Any, workflow: Any) -> None:
    run = start_run(actor=cast.editor, workflow=workflow, input={"amount": 5})
    RunEvent.objects.create(run=run, seq=0, kind="run_started", at=timezone.now(), data={"step": 0})

    page = admin_client.get(reverse("admin:designer_run_change", args=[run.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "run_started" in html
    assert "&quot;amount&quot;: 5" in html  # input as indented JSON
    assert 'name="status"' not in html  # nothing editable
    assert admin_client.get(reverse("admin:designer_run_add")).status_code == 403


def test_run_page_shows_the_first_events_only_and_links_the_whole_trace(admin_client: Any, cast: Any,
                                                                        workflow: Any) -> None:
    from designer.runs.admin import ADMIN_EVENTS

    run = start_run(actor=cast.editor, workflow=workflow, input={"amount": 5})
    now = timezone.now()
    RunEvent.objects.bulk_create(RunEvent(run=run, seq=seq, kind="node_started", node_id=f"n{seq}", at=now, data={})
                                 for seq in range(ADMIN_EVENTS + 150))
    page = admin_client.get(reverse("admin:designer_run_change", args=[run.pk]))
    html = page.content.decode()
    assert page.status_code == 200
    assert f">n{ADMIN_EVENTS - 1}<" in html and f">n{ADMIN_EVENTS}<" not in html  # the first ones, in order
    assert f"{ADMIN_EVENTS + 150} events stored (the first {ADMIN_EVENTS} below)" in html
    assert f'href="{reverse("run-detail", args=[run.pk])}"' in html


def test_cancel_action(admin_client: Any, cast: Any, workflow: Any) -> None:
    queued = start_run(actor=cast.editor, workflow=workflow, input={"amount": 5})
    running = start_run(actor=cast.editor, workflow=workflow, input={"amount": 6})
    Run.objects.filter(pk=running.pk).update(status="running", lease_owner="w",
                                             lease_expires_at=timezone.now() + timedelta(minutes=1))

    response = admin_client.post(reverse("admin:designer_run_changelist"),
                                 {"action": "cancel_runs", "_selected_action": [queued.pk, running.pk]},
                                 follow=True)
    assert response.status_code == 200
    assert Run.objects.get(pk=queued.pk).status == "cancelled"
    flagged = Run.objects.get(pk=running.pk)
    assert flagged.status == "running" and flagged.cancel_requested  # its worker stops at the next superstep


def test_run_titles_name_the_workflow_and_help_texts_match_the_row(admin_client: Any, cast: Any,
                                                                     workflow: Any) -> None:
    run = start_run(actor=cast.editor, workflow=workflow, input={"amount": 5})
    html = admin_client.get(reverse("admin:designer_run_change", args=[run.pk])).content.decode()
    assert f"Run {run.pk} of Simple flow (queued)" in html
    assert f"of {workflow.pk} (" not in html  # not the workflow's id
    # The row holds the draft run: the help text explains the empty version instead of saying "null".
    assert "empty when the run used the draft captured in its document" in html
    assert "null: the run used the draft" not in html
    listing = admin_client.get(reverse("admin:designer_run_changelist"), {"q": str(run.pk)}).content.decode()
    assert "Simple flow" in listing


def test_run_page_links_its_queue_task_while_the_queue_has_it(admin_client: Any, cast: Any, workflow: Any) -> None:
    from django_tasks_db.models import DBTaskResult

    run = Run.objects.get(pk=start_run(actor=cast.editor, workflow=workflow, input={"amount": 5}).pk)
    assert run.task_result_id
    task_url = reverse("admin:django_tasks_database_dbtaskresult_change", args=[run.task_result_id])
    html = admin_client.get(reverse("admin:designer_run_change", args=[run.pk])).content.decode()
    assert f'<a href="{task_url}">{run.task_result_id}</a>' in html
    assert admin_client.get(task_url).status_code == 200

    DBTaskResult.objects.filter(pk=run.task_result_id).delete()  # pruned from the queue
    html = admin_client.get(reverse("admin:designer_run_change", args=[run.pk])).content.decode()
    assert f"{run.task_result_id} (no longer in the queue)" in html and task_url not in html


def test_the_recovery_chain_is_shown_read_only(admin_client: Any) -> None:
    from designer.models import RecoveryChain
    from designer.runs import chain

    token = chain.ensure_chain()
    assert token is not None
    chain = RecoveryChain.objects.get()
    listing = admin_client.get(reverse("admin:designer_recoverychain_changelist")).content.decode()
    assert token in listing
    assert reverse("admin:django_tasks_database_dbtaskresult_change", args=[chain.task_result_id]) in listing

    url = reverse("admin:designer_recoverychain_change", args=[chain.pk])
    page = admin_client.get(url)
    assert page.status_code == 200 and token in page.content.decode()
    assert 'name="token"' not in page.content.decode() and 'name="_save"' not in page.content.decode()
    assert admin_client.post(url, {"token": "forged", "due_at": ""}).status_code == 403
    assert admin_client.get(reverse("admin:designer_recoverychain_add")).status_code == 403
    assert admin_client.post(reverse("admin:designer_recoverychain_delete", args=[chain.pk]),
                             {"post": "yes"}).status_code == 403
    assert RecoveryChain.objects.get().token == token

"""Webhooks and schedules: refused calls start nothing, accepted ones answer 202 with the run; each schedule
tick fires once, with duplicates of its task and two real worker processes racing for them."""

from __future__ import annotations

import json
import re
import subprocess
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from designer.models import Run, Schedule, TriggerFire, Webhook
from designer.triggers import services as triggers
from designer.workflows import services as workflow_services
from tests.designer.runs_support import REPO_ROOT, WORKER

pytestmark = pytest.mark.django_db


@pytest.fixture
def published(cast: Any, workflow: Any) -> Any:
    workflow_services.publish_workflow(actor=cast.editor, workflow=workflow, note="first")
    return workflow


def _hook(cast: Any, workflow: Any, **kwargs: Any) -> tuple[Webhook, str]:
    created = triggers.create_webhook(actor=cast.editor, workflow=workflow, name="shop", **kwargs)
    return created.webhook, created.secret


def _call(client: Any, secret: str, body: Any) -> Any:
    data = body if isinstance(body, str) else json.dumps(body)
    return client.post(reverse("webhook-call", args=[secret]), data=data, content_type="application/json")


# --- webhooks -----------------------------------------------------------------------------------


def test_a_webhook_starts_a_run_of_its_version_and_answers_202(client: Any, cast: Any, published: Any) -> None:
    webhook, secret = _hook(cast, published, version=1)
    assert Webhook.objects.get().token_hash != secret and secret not in Webhook.objects.get().token_hash
    response = _call(client, secret, {"amount": 12})
    assert response.status_code == 202, response.json()
    run = Run.objects.get(pk=response.json()["run_id"])
    assert (run.input, run.workflow_version.number, run.status) == ({"amount": 12}, 1, "queued")
    assert response.json()["url"].endswith(reverse("run-detail", args=[run.pk]))
    assert list(webhook.fires.values_list("run_id", flat=True)) == [run.pk]


@pytest.mark.parametrize("secret", ["whk_not-a-real-secret", "nothing", "whk_" + "x" * 43])
def test_a_bad_token_is_refused_and_starts_nothing(client: Any, cast: Any, published: Any, secret: str) -> None:
    _hook(cast, published)
    response = _call(client, secret, {"amount": 12})
    assert response.status_code == 404 and response.json()["code"] == "not_found"
    assert Run.objects.count() == 0 and TriggerFire.objects.count() == 0


@pytest.mark.parametrize("body", [{"amount": "twelve"}, {}, [1, 2], "{not json"])
def test_a_bad_body_is_refused_with_400_and_starts_nothing(client: Any, cast: Any, published: Any, body: Any) -> None:
    _, secret = _hook(cast, published)
    response = _call(client, secret, body)
    assert response.status_code == 400, response.content
    assert response.json()["message"]
    assert Run.objects.count() == 0 and TriggerFire.objects.count() == 0


def test_a_revoked_webhook_is_refused(client: Any, cast: Any, published: Any) -> None:
    webhook, secret = _hook(cast, published)
    triggers.revoke_webhook(actor=cast.owner, webhook=webhook)
    assert _call(client, secret, {"amount": 1}).status_code == 404
    assert Run.objects.count() == 0


def test_calls_beyond_the_rate_limit_get_429_with_retry_after(client: Any, cast: Any, published: Any) -> None:
    _, secret = _hook(cast, published, rate_limit=2)
    other, other_secret = triggers.create_webhook(actor=cast.editor, workflow=published, name="b", rate_limit=2), None
    assert [_call(client, secret, {"amount": 1}).status_code for _ in range(2)] == [202, 202]
    refused = _call(client, secret, {"amount": 1})
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    assert Run.objects.count() == 2
    # the limit is per webhook: another one of the same workflow still accepts calls
    assert _call(client, other.secret, {"amount": 1}).status_code == 202
    del other_secret


def test_a_webhook_needs_a_published_version(cast: Any, workflow: Any) -> None:
    from designer.core.errors import NotPublished

    with pytest.raises(NotPublished, match="publish the workflow first"):
        _hook(cast, workflow)


# --- pages and roles ----------------------------------------------------------------------------


def test_viewers_see_triggers_but_cannot_manage_them(client: Any, cast: Any, published: Any) -> None:
    webhook, _ = _hook(cast, published)
    schedule = triggers.create_schedule(actor=cast.editor, workflow=published, name="nightly", cron="0 3 * * *",
                                        timezone_name="Europe/Berlin", input={"amount": 5})
    client.force_login(cast.viewer)
    page = client.get(reverse("workflow-page", args=[published.pk]))
    assert page.status_code == 200
    text = page.content.decode()
    assert 'data-webhook="shop"' in text and 'data-schedule="nightly"' in text and "first" in text
    assert "Create webhook" not in text and "Restore into draft" not in text and "Revoke" not in text
    url = lambda name, *args: reverse(name, args=[published.pk, *args])  # noqa: E731
    refused = [
        client.post(url("webhook-create"), {"name": "mine"}),
        client.post(url("webhook-revoke", webhook.pk)),
        client.post(url("schedule-create"), {"name": "x", "cron": "* * * * *"}),
        client.post(url("schedule-update", schedule.pk), {"action": "delete"}),
        client.post(url("version-restore", 1), {"revision": published.revision}),
    ]
    assert [r.status_code for r in refused] == [403] * 5
    assert Webhook.objects.count() == 1 and Webhook.objects.get().revoked_at is None
    assert Schedule.objects.count() == 1
    client.force_login(cast.stranger)
    assert client.get(reverse("workflow-page", args=[published.pk])).status_code == 404
    assert client.post(url("webhook-revoke", webhook.pk)).status_code == 404


def test_an_editor_creates_a_webhook_and_sees_its_url_once(client: Any, cast: Any, published: Any) -> None:
    client.force_login(cast.editor)
    response = client.post(reverse("webhook-create", args=[published.pk]), {"name": "crm", "version": "1"})
    assert response.status_code == 200
    url = response.context["new_webhook_url"]
    secret = url.rstrip("/").rsplit("/", 1)[-1]
    assert "data-webhook-url" in response.content.decode() and secret in response.content.decode()
    assert secret not in client.get(reverse("workflow-page", args=[published.pk])).content.decode()
    assert _call(client, secret, {"amount": 3}).status_code == 202
    page = client.get(reverse("workflow-page", args=[published.pk])).content.decode()
    assert f'href="{reverse("run-detail", args=[Run.objects.get().pk])}"' in page  # its last runs are listed


def test_a_schedule_form_explains_a_bad_cron_or_zone(client: Any, cast: Any, published: Any) -> None:
    client.force_login(cast.owner)
    url = reverse("schedule-create", args=[published.pk])
    bad_cron = client.post(url, {"name": "n", "cron": "61 * * * *", "timezone": "UTC", "input": '{"amount": 1}'})
    assert bad_cron.status_code == 400 and "is not a cron expression" in bad_cron.context["schedule_error"]
    bad_zone = client.post(url, {"name": "n", "cron": "0 * * * *", "timezone": "Mars/Olympus", "input": "{}"})
    assert "is not a time zone" in bad_zone.context["schedule_error"]
    bad_input = client.post(url, {"name": "n", "cron": "0 * * * *", "timezone": "UTC", "input": '{"amount": "x"}'})
    assert bad_input.status_code == 400
    assert Schedule.objects.count() == 0
    ok = client.post(url, {"name": "n", "cron": "30 2 * * *", "timezone": "Europe/Berlin", "input": '{"amount": 1}',
                           "missed": "skip"})
    assert ok.status_code == 302
    page = client.get(reverse("workflow-page", args=[published.pk])).content.decode()
    ticks = page.split('class="next-ticks">', 1)[1].split("</td>", 1)[0]
    assert ticks.count("02:30 CE") == 3  # the next three fire times, in the schedule's zone


def test_a_schedule_form_reports_every_fields_problem_at_once_and_keeps_what_was_typed(
        client: Any, cast: Any, published: Any) -> None:
    client.force_login(cast.owner)
    refused = client.post(reverse("schedule-create", args=[published.pk]),
                          {"name": "<i>n</i>", "cron": "61 * * * *", "timezone": "Mars/Olympus",
                           "input": '{"amount": ', "missed": "skip"})
    assert refused.status_code == 400 and Schedule.objects.count() == 0
    page = refused.content.decode()
    listed = page.split('id="schedule-problems">', 1)[1].split("</ul>", 1)[0]
    problems = dict(re.findall(r"<li><strong>([\w ]+)</strong>: ([^<]+)</li>", listed))
    # Each problem is named by its field's label in the form.
    assert set(problems) == {"Cron", "Time zone", "Input"}
    assert "is not a cron expression" in problems["Cron"] and "use an IANA name" in problems["Time zone"]
    assert "the input is not valid JSON" in problems["Input"] and "line 1" in problems["Input"]
    assert 'value="&lt;i&gt;n&lt;/i&gt;"' in _field(page, "schedule-name")
    assert 'value="61 * * * *"' in _field(page, "schedule-cron")
    assert '{&quot;amount&quot;: </textarea>' in page
    # The service reports every problem too, each naming its field; one problem keeps its own error.
    with pytest.raises(triggers.ProblemsFound) as caught:
        triggers.create_schedule(actor=cast.editor, workflow=published, name="x" * 101, cron="0 9 31 2 *",
                                 input={"amount": "x"})
    assert [e["field"] for e in caught.value.details["errors"]] == ["name", "cron", "input"]
    with pytest.raises(triggers.CronNeverFires):
        triggers.create_schedule(actor=cast.editor, workflow=published, name="n", cron="0 9 31 2 *",
                                 input={"amount": 1})


def test_the_schedule_form_offers_the_tz_databases_zones_and_keeps_the_typed_one(client: Any, cast: Any,
                                                                               published: Any) -> None:
    client.force_login(cast.owner)
    page = client.get(reverse("workflow-page", args=[published.pk])).content.decode()
    field = page.split('id="schedule-tz"', 1)[1].split(">", 1)[0]
    assert 'list="schedule-tz-names"' in field and 'value="UTC"' in field
    names = re.findall(r'<option value="([^"]+)"></option>',
                       page.split('<datalist id="schedule-tz-names">', 1)[1].split("</datalist>", 1)[0])
    assert names == triggers.timezones() and {"UTC", "Europe/Berlin", "America/Argentina/Buenos_Aires"} <= set(names)
    refused = client.post(reverse("schedule-create", args=[published.pk]),
                          {"name": "n", "cron": "61 * * * *", "timezone": "Asia/Tokyo", "input": "{}"})
    assert 'value="Asia/Tokyo"' in refused.content.decode().split('id="schedule-tz"', 1)[1].split(">", 1)[0]
    client.force_login(cast.viewer)
    assert "schedule-tz-names" not in client.get(reverse("workflow-page", args=[published.pk])).content.decode()


def _field(page: str, element_id: str) -> str:
    """The opening tag of the page's element ``element_id`` (a select with its options)."""
    before, rest = page.split(f'id="{element_id}"', 1)
    return rest.split("</select>" if before.endswith("<select ") else ">", 1)[0]


def test_a_refused_webhook_keeps_what_was_typed_in_its_own_form_only(client: Any, cast: Any, published: Any) -> None:
    client.force_login(cast.owner)
    refused = client.post(reverse("webhook-create", args=[published.pk]),
                          {"name": "<b>crm</b>" + "x" * 200, "version": "1", "mode": "signed", "rate_limit": "7"})
    assert refused.status_code == 400 and "at most 100 characters" in refused.context["webhook_error"]
    page = refused.content.decode()
    assert 'value="&lt;b&gt;crm&lt;/b&gt;' in _field(page, "webhook-name")
    assert 'value="7"' in _field(page, "webhook-limit")
    assert '<option value="1" selected>' in _field(page, "webhook-version")
    assert '<option value="signed" selected>' in _field(page, "webhook-mode")
    # The schedule form, whose fields have the same names, is left as it was.
    assert "value=\"\"" in _field(page, "schedule-name") and "crm" not in page.split('id="schedules"', 1)[1]
    assert " selected" not in _field(page, "schedule-version")
    assert Webhook.objects.count() == 0


def test_a_refused_schedule_keeps_its_version_and_missed_ticks_choice(client: Any, cast: Any, published: Any) -> None:
    client.force_login(cast.owner)
    refused = client.post(reverse("schedule-create", args=[published.pk]),
                          {"name": "nightly", "cron": "61 * * * *", "timezone": "UTC", "input": "{}", "version": "1",
                           "missed": "skip"})
    page = refused.content.decode()
    assert refused.status_code == 400 and 'value="nightly"' in _field(page, "schedule-name")
    assert '<option value="1" selected>' in _field(page, "schedule-version")
    assert '<option value="skip" selected>' in _field(page, "schedule-missed")
    assert 'value=""' in _field(page, "webhook-name") and " selected" not in _field(page, "webhook-version")


# --- schedule ticks -----------------------------------------------------------------------------


def _schedule(cast: Any, workflow: Any, **kwargs: Any) -> Schedule:
    return triggers.create_schedule(actor=cast.editor, workflow=workflow, name="every minute", cron="* * * * *",
                                    input={"amount": 5}, **kwargs)


def _set_tick(schedule: Schedule, tick: datetime) -> None:
    """Make ``tick`` the schedule's pending tick (as if its task were queued for it) and drop the queued one."""
    Schedule.objects.filter(pk=schedule.pk).update(next_fire_at=tick)
    DBTaskResult.objects.filter(task_path="designer.tasks.fire_schedule").delete()


def _minute(offset: int) -> datetime:
    return timezone.now().replace(second=0, microsecond=0) + timedelta(minutes=offset)


def test_creating_a_schedule_queues_its_first_tick_due_then(cast: Any, published: Any) -> None:
    schedule = triggers.create_schedule(actor=cast.editor, workflow=published, name="n", cron="0 9 * * 1-5",
                                        timezone_name="America/New_York", input={"amount": 1})
    task = DBTaskResult.objects.get(task_path="designer.tasks.fire_schedule")
    assert task.run_after == schedule.next_fire_at
    assert schedule.next_fire_at.astimezone(triggers.ZoneInfo("America/New_York")).hour == 9


def test_a_tick_fires_once_and_queues_the_next(cast: Any, published: Any) -> None:
    schedule = _schedule(cast, published)
    tick = _minute(0)
    _set_tick(schedule, tick)
    assert triggers.fire_tick(schedule.pk, tick.isoformat()) == "fired"
    assert triggers.fire_tick(schedule.pk, tick.isoformat()) == "stale"  # a duplicate of the task
    fire = TriggerFire.objects.get()
    assert (fire.tick, fire.run.input, fire.outcome) == (tick, {"amount": 5}, "started")
    schedule.refresh_from_db()
    assert schedule.next_fire_at == tick + timedelta(minutes=1)
    assert DBTaskResult.objects.filter(task_path="designer.tasks.fire_schedule",
                                       run_after=tick + timedelta(minutes=1)).count() == 1


@pytest.mark.parametrize(("policy", "runs", "outcome"), [("skip", 0, "skipped"), ("latest", 1, "caught-up"),
                                                         ("all", 1, "caught-up")])
def test_missed_ticks_follow_the_policy(cast: Any, published: Any, policy: str, runs: int, outcome: str) -> None:
    schedule = _schedule(cast, published, missed=policy)
    tick = _minute(-5)  # five minutes late: the workers were down
    _set_tick(schedule, tick)
    assert triggers.fire_tick(schedule.pk, tick.isoformat()) == outcome
    assert Run.objects.count() == runs
    schedule.refresh_from_db()
    if policy == "all":
        assert schedule.next_fire_at == tick + timedelta(minutes=1)  # the next missed tick, due at once
    else:
        assert schedule.next_fire_at > timezone.now()
    if policy == "latest":
        assert TriggerFire.objects.get().tick == _minute(0) or TriggerFire.objects.get().tick == _minute(-1)


def test_a_paused_schedule_does_not_fire(cast: Any, published: Any) -> None:
    schedule = _schedule(cast, published)
    tick = schedule.next_fire_at
    triggers.set_schedule_enabled(actor=cast.owner, schedule=schedule, enabled=False)
    assert triggers.fire_tick(schedule.pk, tick.isoformat()) == "stale"
    assert Run.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_each_tick_fires_exactly_once_with_two_workers(cast: Any, published: Any, env: dict[str, str]) -> None:
    """Four ticks overdue under the "all" policy, the first tick's task queued three times (as a lost-task
    recovery on several machines would), and two real worker processes taking tasks at the same time."""
    schedule = _schedule(cast, published, missed="all")
    first = _minute(-3)
    _set_tick(schedule, first)
    schedule.refresh_from_db()
    for _ in range(3):
        triggers.enqueue_tick(schedule, first)
    workers = [subprocess.Popen([*WORKER, "--batch", "--interval", "0.05"], cwd=REPO_ROOT, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    outputs = [worker.communicate(timeout=180)[0] for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0], outputs
    ticks = list(TriggerFire.objects.filter(schedule=schedule).order_by("tick").values_list("tick", flat=True))
    expected = [first + timedelta(minutes=n) for n in range(4) if first + timedelta(minutes=n) <= timezone.now()]
    assert ticks[:len(expected)] == expected and len(ticks) == len(set(ticks))
    assert Run.objects.count() == len(ticks)
    results = list(DBTaskResult.objects.filter(task_path="designer.tasks.fire_schedule")
                   .exclude(status="READY").values_list("return_value", flat=True))
    assert results.count("stale") >= 2  # the duplicates reached a worker and did nothing
    # the batch workers also ran the runs the ticks started
    assert set(Run.objects.values_list("status", flat=True)) == {"completed"}


def test_a_lost_tick_task_is_queued_again_and_then_fires_once(cast: Any, published: Any) -> None:
    schedule = _schedule(cast, published, missed="latest")
    tick = _minute(-10)
    _set_tick(schedule, tick)  # its task is gone
    assert triggers.requeue_lost_ticks() == [schedule.pk]
    task = DBTaskResult.objects.get(task_path="designer.tasks.fire_schedule")
    assert task.run_after == tick and task.args_kwargs["args"] == [schedule.pk, tick.isoformat()]
    assert triggers.fire_tick(schedule.pk, tick.isoformat()) == "caught-up"
    assert triggers.requeue_lost_ticks() == []
    assert Run.objects.count() == 1


# --- API ----------------------------------------------------------------------------------------


def test_triggers_of_an_unpublished_workflow_are_a_409_conflict_not_a_bad_request(api: Any, cast: Any,
                                                                                   workflow: Any) -> None:
    # The request fits the API schema; the workflow's state refuses it, and publishing resolves it.
    editor = api(cast.editor)
    hook = editor.post(reverse("api:workflow-webhooks", args=[workflow.pk]), {"name": "crm"}, format="json")
    schedule = editor.post(reverse("api:workflow-schedules", args=[workflow.pk]),
                           {"name": "n", "cron": "0 9 * * *", "timezone": "UTC", "input": {"amount": 1}},
                           format="json")
    for refused in (hook, schedule):
        assert (refused.status_code, refused.json()["code"], refused.json()["field"]) == (
            409, "workflow.not_published", "version"), refused.json()
        assert "publish the workflow first" in refused.json()["message"]
    assert not Webhook.objects.exists() and not Schedule.objects.exists()


def test_the_api_lists_triggers_to_viewers_and_lets_only_editors_manage_them(api: Any, client: Any, cast: Any,
                                                                           published: Any) -> None:
    hooks = reverse("api:workflow-webhooks", args=[published.pk])
    schedules = reverse("api:workflow-schedules", args=[published.pk])
    editor = api(cast.editor)
    created = editor.post(hooks, {"name": "crm", "version": 1, "rate_limit": 5}, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["version"] == 1 and created.json()["url"].startswith("http")
    secret = created.json()["url"].rstrip("/").rsplit("/", 1)[-1]
    assert _call(client, secret, {"amount": 2}).status_code == 202
    made = editor.post(schedules, {"name": "hourly", "cron": "0 * * * *", "timezone": "Asia/Tokyo",
                                   "input": {"amount": 1}, "missed": "skip"}, format="json")
    assert made.status_code == 201, made.json()
    assert len(made.json()["upcoming"]) == 3 and made.json()["upcoming"][0].endswith("+09:00")

    viewer = api(cast.viewer)
    listed = viewer.get(hooks).json()
    assert [(h["name"], h["prefix"], len(h["recent_runs"])) for h in listed] == [("crm", secret[:12], 1)]
    assert "url" not in listed[0] and secret not in json.dumps(listed)
    assert viewer.get(schedules).json()[0]["name"] == "hourly"
    schedule_url = reverse("api:workflow-schedule", args=[published.pk, made.json()["id"]])
    revoke_url = reverse("api:workflow-webhook-revoke", args=[published.pk, created.json()["id"]])
    refused = [
        viewer.post(hooks, {"name": "mine"}, format="json"),
        viewer.post(schedules, {"name": "x", "cron": "* * * * *"}, format="json"),
        viewer.post(revoke_url),
        viewer.patch(schedule_url, {"enabled": False}, format="json"),
        viewer.delete(schedule_url),
    ]
    assert [r.status_code for r in refused] == [403] * 5
    assert api(cast.stranger).get(hooks).status_code == 404

    assert editor.patch(schedule_url, {"enabled": False}, format="json").json()["enabled"] is False
    assert editor.post(revoke_url).json()["revoked_at"] is not None
    assert _call(client, secret, {"amount": 2}).status_code == 404
    assert editor.delete(schedule_url).status_code == 204
    bad = editor.post(schedules, {"name": "x", "cron": "0 * * *"}, format="json")
    assert bad.status_code == 400 and "five" in bad.json()["message"]

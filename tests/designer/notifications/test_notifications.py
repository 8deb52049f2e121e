"""Notifications (issue 26) with the real worker, a real SMTP listener and a real webhook listener: a failed run
emails the chosen members and posts a signed webhook; a webhook that fails is retried with backoff; a run that
waits for a person emails a link that answers it once, for that person only; "Send a test"; the delivery log."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from typing import Any

import pytest
from django.db.models import Max

from designer.access import teams as team_services
from designer.core.schema_form import FIELD_PREFIX
from designer.models import AnswerLink, Delivery, Membership, Run
from designer.notifications import services as notification_services
from designer.runs import services as run_services
from designer.triggers import signature
from designer.workflows import services as workflow_services
from runtime import WorkflowBuilder
from tests.conftest import REPO_ROOT
from tests.designer.notifications.listeners import smtp_sink, webhook_listener
from tests.designer.runs_support import stop_worker, wait_for

pytestmark = pytest.mark.django_db(transaction=True)
FIELD = FIELD_PREFIX + "note"


def dividing() -> dict[str, Any]:
    g = WorkflowBuilder("divide", "Divide", input_schema={"type": "object", "properties": {"b": {"type": "number"}}})
    g.use("math", id="divide", input=[{"target": "op", "value": "div"}, {"target": "a", "value": 1},
                                      {"target": "b", "path": "input.b"}], output=[{"source": ".", "target": "q"}])
    g.output("q", "state.q")
    return g.build().model_dump(mode="json")


def asking() -> dict[str, Any]:
    g = WorkflowBuilder("ask", "Approve", state_schema={"type": "object", "properties": {"note": {}}})
    g.interrupt("approve", prompt="Approve the laptops?", resume_schema={
        "type": "object", "properties": {"note": {"type": "string", "minLength": 2}}, "required": ["note"]},
        output=[{"source": "note", "target": "note"}])
    g.output("note", "state.note")
    return g.build().model_dump(mode="json")


@pytest.fixture
def cast(make_user: Any) -> Any:
    owner = make_user("olive", email="olive@example.com")
    bob = make_user("bob", email="bob@example.com")
    carol = make_user("carol", email="carol@example.com")
    team = team_services.create_team(actor=owner, name="Ops")
    for member in (bob, carol):
        Membership.objects.create(team=team, user=member, role="editor")
    return type("Cast", (), {"owner": owner, "bob": bob, "carol": carol, "team": team})


def env_for(worker_env: dict[str, str], smtp_port: int, **extra: str) -> dict[str, str]:
    return {**worker_env, "DJANGO_EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "EMAIL_HOST": "127.0.0.1", "EMAIL_PORT": str(smtp_port), "TRELLIS_HTTP_ALLOWED_HOSTS": "127.0.0.1",
            "TRELLIS_SITE_URL": "https://trellis.example.com", **extra}


def work(env: dict[str, str]) -> None:
    done = subprocess.run([sys.executable, "manage.py", "run_worker", "--batch", "--no-startup-delay", "--no-reload"],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_failed_run_emails_the_chosen_members_and_posts_a_signed_webhook(cast: Any, worker_env: dict[str, str]
                                                                          ) -> None:
    workflow = workflow_services.create_workflow(actor=cast.owner, team=cast.team, name="Divide", document=dividing())
    with smtp_sink() as (port, inbox), webhook_listener() as (url, calls):
        _, secret = notification_services.save_rule(
            actor=cast.owner, team=cast.team, on_failure=True, on_interrupt=True, on_completion=False,
            members=[cast.bob.pk], webhook_url=url)
        assert secret is not None and secret.startswith("whsec_")
        failed = run_services.start_run(actor=cast.owner, workflow=workflow, input={"b": 0})
        fine = run_services.start_run(actor=cast.owner, workflow=workflow, input={"b": 2})  # completion: not asked
        work(env_for(worker_env, port))
        failed.refresh_from_db()
        assert failed.status == "failed" and Run.objects.get(pk=fine.pk).status == "completed"
        [message] = inbox.messages
        assert message["To"] == "bob@example.com"
        assert message["Subject"] == f"Trellis: run #{failed.pk} of Divide failed"
        text = message.get_content()
        assert f"https://trellis.example.com/runs/{failed.pk}/" in text and "What failed: " in text
        assert "divide" in text  # the node that failed is named
        [call] = calls.received
        headers, body = call["headers"], call["body"]
        stamp = int(re.match(r"t=(\d+),", headers["Trellis-Signature"]).group(1))  # type: ignore[union-attr]
        assert headers["Trellis-Signature"] == signature.sign(secret, stamp, body)
        sent = json.loads(body)
        assert sent["event"] == "failed" and sent["run"]["id"] == failed.pk and sent["run"]["status"] == "failed"
        assert sent["run"]["workflow"]["name"] == "Divide" and "input" not in sent["run"]
    log = {d.channel: d for d in Delivery.objects.filter(run=failed)}
    assert {c: (d.status, d.attempts) for c, d in log.items()} == {"email": ("sent", 1), "webhook": ("sent", 1)}
    assert log["webhook"].response_code == 204 and not Delivery.objects.filter(run=fine).exists()


def test_a_webhook_that_fails_is_tried_again_later_until_it_takes_the_message(cast: Any, worker_env: dict[str, str]
                                                                             ) -> None:
    workflow = workflow_services.create_workflow(actor=cast.owner, team=cast.team, name="Divide", document=dividing())
    with smtp_sink() as (port, _), webhook_listener(answers=[500, 503, 200]) as (url, calls):
        notification_services.save_rule(actor=cast.owner, team=cast.team, workflow=workflow, on_failure=True,
                                        on_interrupt=False, on_completion=False, members=[], webhook_url=url)
        run = run_services.start_run(actor=cast.owner, workflow=workflow, input={"b": 0})
        worker = subprocess.Popen(
            [sys.executable, "manage.py", "run_worker", "--interval", "0.1", "--no-startup-delay", "--no-reload"],
            cwd=REPO_ROOT, env=env_for(worker_env, port, TRELLIS_NOTIFY_RETRY_SECONDS="0.2"),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            delivery = wait_for(lambda: Delivery.objects.filter(run=run, status="sent").first(), timeout=60,
                                message="the webhook to take the message", worker=worker)
        finally:
            stop_worker(worker)
    assert delivery.attempts == 3 and delivery.response_code == 200 and len(calls.received) == 3
    # Each retry waited longer than the one before (0.2 s, then 0.4 s): the calls' own timestamps say so.
    stamps = [int(re.match(r"t=(\d+),", c["headers"]["Trellis-Signature"]).group(1)) for c in calls.received]  # type: ignore[union-attr]
    assert stamps == sorted(stamps)


def test_a_webhook_that_never_answers_well_fails_after_the_last_attempt(cast: Any, worker_env: dict[str, str]
                                                                       ) -> None:
    workflow = workflow_services.create_workflow(actor=cast.owner, team=cast.team, name="Divide", document=dividing())
    with smtp_sink() as (port, _), webhook_listener(answers=[500]) as (url, calls):
        notification_services.save_rule(actor=cast.owner, team=cast.team, on_failure=True, on_interrupt=False,
                                        on_completion=False, members=[], webhook_url=url)
        run = run_services.start_run(actor=cast.owner, workflow=workflow, input={"b": 0})
        env = env_for(worker_env, port, TRELLIS_NOTIFY_RETRY_SECONDS="0.05", TRELLIS_NOTIFY_MAX_ATTEMPTS="2")
        work(env)
        time.sleep(0.2)
        work(env)
    delivery = Delivery.objects.get(run=run)
    assert (delivery.status, delivery.attempts, delivery.response_code) == ("failed", 2, 500)
    assert delivery.error == "the webhook answered 500" and len(calls.received) == 2


def test_a_private_webhook_address_is_refused_under_http_requests_rules(cast: Any, worker_env: dict[str, str]
                                                                        ) -> None:
    workflow = workflow_services.create_workflow(actor=cast.owner, team=cast.team, name="Divide", document=dividing())
    with smtp_sink() as (port, _), webhook_listener() as (url, calls):
        notification_services.save_rule(actor=cast.owner, team=cast.team, on_failure=True, on_interrupt=False,
                                        on_completion=False, members=[], webhook_url=url)
        run = run_services.start_run(actor=cast.owner, workflow=workflow, input={"b": 0})
        env = env_for(worker_env, port, TRELLIS_NOTIFY_MAX_ATTEMPTS="1")
        del env["TRELLIS_HTTP_ALLOWED_HOSTS"]
        work(env)
    delivery = Delivery.objects.get(run=run)
    assert delivery.status == "failed" and "127.0.0.1" in delivery.error and not calls.received


def answer_link_of(message: Any) -> str:
    found = re.search(r"https://trellis\.example\.com(/answer/[^\s]+/)", message.get_content())
    assert found is not None, message.get_content()
    return found.group(1)


def test_a_question_is_answered_once_from_the_emailed_link_by_its_recipient_only(
        cast: Any, worker_env: dict[str, str], client: Any) -> None:
    workflow = workflow_services.create_workflow(actor=cast.owner, team=cast.team, name="Approve", document=asking())
    with smtp_sink() as (port, inbox):
        notification_services.save_rule(actor=cast.owner, team=cast.team, on_failure=True, on_interrupt=True,
                                        on_completion=False, members=[cast.bob.pk, cast.carol.pk], webhook_url="")
        run = run_services.start_run(actor=cast.owner, workflow=workflow)
        env = env_for(worker_env, port)
        work(env)
        run.refresh_from_db()
        assert run.status == "interrupted"
        links = {message["To"]: answer_link_of(message) for message in inbox.messages}
        assert set(links) == {"bob@example.com", "carol@example.com"}
        assert all("Approve the laptops?" in m.get_content() for m in inbox.messages)
        bobs, carols = links["bob@example.com"], links["carol@example.com"]

        assert client.get(bobs).status_code == 302  # signed out: to the login page first
        client.force_login(cast.carol)
        refused = client.get(bobs)
        assert refused.status_code == 403 and "this link was sent to bob" in refused.content.decode().lower()
        tampered = client.get(carols[:-3] + "xx/")
        assert tampered.status_code == 400 and "not valid" in tampered.content.decode()
        AnswerLink.objects.filter(recipient=cast.carol).update(expires_at=run.created_at)
        assert "expired" in client.get(carols).content.decode()

        client.force_login(cast.bob)
        page = client.get(bobs)
        assert page.status_code == 200
        assert "Approve the laptops?" in page.content.decode() and f'name="{FIELD}"' in page.content.decode()
        bad = client.post(bobs, {FIELD: ""})  # the schema's own refusal, in place; the link stays usable
        assert bad.status_code == 400 and Run.objects.get(pk=run.pk).status == "interrupted"
        answered = client.post(bobs, {FIELD: "yes, go"})
        assert answered.status_code == 200 and "your answer was sent" in answered.content.decode()
        again = client.post(bobs, {FIELD: "again"})
        assert again.status_code == 410 and "already used" in again.content.decode()
        link = AnswerLink.objects.get(recipient=cast.bob)
        assert link.used_by == cast.bob and link.used_at is not None
        run.refresh_from_db()
        assert run.answers[-1]["by"] == "bob"
        work(env)
    run.refresh_from_db()
    assert run.status == "completed" and run.output == {"note": "yes, go"}


def test_send_a_test_from_the_page_and_read_the_log(cast: Any, worker_env: dict[str, str], client: Any) -> None:
    with smtp_sink() as (port, inbox), webhook_listener() as (url, calls):
        client.force_login(cast.owner)
        saved = client.post(f"/teams/{cast.team.pk}/notifications/save/", {
            "on_failure": "on", "members": [str(cast.bob.pk)], "webhook_url": url})
        assert saved.status_code == 200 and "whsec_" in saved.content.decode()  # the secret, shown this once
        rule = notification_services.rule_for(team_id=cast.team.pk, workflow_id=0)
        assert rule is not None and list(rule.members.all()) == [cast.bob]
        assert client.post(f"/teams/{cast.team.pk}/notifications/{rule.pk}/test/").status_code == 200
        work(env_for(worker_env, port))
        [message] = inbox.messages
        assert message["Subject"] == "Trellis: a test notification" and json.loads(calls.received[0]["body"])[
            "event"] == "test"
    page = client.get(f"/teams/{cast.team.pk}/notifications/").content.decode()
    assert page.count('class="badge delivery-sent"') == 2 and "whsec_" not in page
    # Outsiders see nothing; a viewer sees the rules but no forms.
    viewer = type(cast.owner).objects.create_user("vic", password="x")
    Membership.objects.create(team=cast.team, user=viewer, role="viewer")
    client.force_login(viewer)
    seen = client.get(f"/teams/{cast.team.pk}/notifications/").content.decode()
    assert "Send a test" not in seen and "1 member(s), a webhook" in seen
    assert client.post(f"/teams/{cast.team.pk}/notifications/{rule.pk}/test/").status_code == 403
    stranger = type(cast.owner).objects.create_user("sam", password="x")
    client.force_login(stranger)
    assert client.get(f"/teams/{cast.team.pk}/notifications/").status_code == 404
    assert Delivery.objects.aggregate(Max("attempts"))["attempts__max"] == 1

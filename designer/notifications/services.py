"""Writes of the notifications domain: rules, what a run's end queues, delivering, test sends, answer links.

Keyword-only; writes are transactional. ``run_reached`` runs inside the transaction that stores a run's status
(``designer.runs.executor``) and only adds rows: deliveries and their tasks, which commit with the status or not
at all; a worker sends them, never the one that ran the step.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import time
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core import signing
from django.core.mail import EmailMessage
from django.db import connection, transaction
from django.urls import reverse
from django.utils import timezone

from designer.access.permissions import require_role
from designer.conf import trellis
from designer.core import rows
from designer.core.errors import ActionForbidden, AnswerLinkClosed, BadRequest, ObjectNotFound
from designer.core.prepared import prepared_cursor
from designer.core.untrusted import MAX_ID
from designer.models import Run, Team, Workflow
from designer.notifications.models import AnswerLink, Delivery, NotificationRule
from designer.runs import queue
from designer.runs import services as run_services
from designer.triggers import signature
from designer.workflows import catalog

#: Run statuses that notify, and the rule's switch for each.
EVENTS = {"failed": "on_failure", "interrupted": "on_interrupt", "completed": "on_completion"}
ANSWER_SALT = "trellis.answer-link.v1"
SIGNATURE_HEADER = signature.HEADER
WEBHOOK_TIMEOUT_SECONDS = 10.0


# --- rules ---------------------------------------------------------------------------------------------------------

def _members(team: Team, ids: object) -> list[Any]:
    wanted = {int(value) for value in ids or [] if str(value).isdigit() and int(value) <= MAX_ID} \
        if isinstance(ids, list | tuple) else set()
    found = list(get_user_model().objects.filter(pk__in=wanted, memberships__team=team, is_active=True))
    if len(found) != len(wanted):
        raise BadRequest("every person told must be a member of the team", field="members")
    return found


def _webhook_url(value: object) -> str:
    url = value.strip() if isinstance(value, str) else ""
    if url and (not url.startswith(("https://", "http://")) or len(url) > 2000 or any(c.isspace() for c in url)):
        raise BadRequest("a webhook address is an http:// or https:// URL (at most 2,000 characters, no spaces)",
                         field="webhook_url")
    return url


@transaction.atomic
def save_rule(*, actor: Any, team: Team, workflow: Workflow | None = None, on_failure: bool, on_interrupt: bool,
              on_completion: bool, members: object, webhook_url: object) -> tuple[NotificationRule, str | None]:
    """Save the team's default rule (``workflow`` None) or a workflow's own; owners and editors. Returns the rule
    and, when its webhook address is new, the webhook's signing secret (shown once, never stored)."""
    require_role(actor, team, "editor", what="this team")
    if workflow is not None and workflow.team_id != team.pk:
        raise ObjectNotFound("no such workflow in this team")
    url = _webhook_url(webhook_url)
    rule = NotificationRule.objects.select_for_update().filter(team=team, workflow=workflow).first() \
        or NotificationRule(team=team, workflow=workflow)
    new_secret = None
    if url and (url != rule.webhook_url or not rule.webhook_salt):
        rule.webhook_salt = signature.new_salt()
        new_secret = signature.signing_secret(rule.webhook_salt)
    rule.webhook_url = url
    if not url:
        rule.webhook_salt = ""
    rule.on_failure, rule.on_interrupt, rule.on_completion = bool(on_failure), bool(on_interrupt), bool(on_completion)
    rule.save()
    rule.members.set(_members(team, members))
    return rule, new_secret


@transaction.atomic
def delete_rule(*, actor: Any, rule: NotificationRule) -> None:
    require_role(actor, rule.team_id, "editor", what="this team")
    rule.delete()


def rule_for(*, team_id: int, workflow_id: int) -> NotificationRule | None:
    """The rule a run of ``workflow_id`` follows: the workflow's own, else the team's default. Read by SQL: every
    run's end asks, and compiling the ORM's query cost more than running it (issue 33)."""
    table = connection.ops.quote_name(NotificationRule._meta.db_table)
    found = rows.reader(NotificationRule, connection.alias)
    with prepared_cursor(connection) as cursor:
        cursor.execute(f"SELECT {found.columns} FROM {table} WHERE team_id = %s AND (workflow_id = %s OR "
                       "workflow_id IS NULL)", [team_id, workflow_id])
        # Not ``raw``, which matched columns to fields at every run's end; most teams have no rule to build.
        rules = [found.instance(row) for row in cursor.fetchall()]
    return next((r for r in rules if r.workflow_id == workflow_id), None) or next(
        (r for r in rules if r.workflow_id is None), None)


# --- what a run's end queues ----------------------------------------------------------------------------------------

def _queue(deliveries: list[Delivery]) -> None:
    for delivery in deliveries:
        queue.enqueue_delivery(delivery.pk)


def _deliveries(rule: NotificationRule, *, event: str, run: Run | None, interrupt_id: str = "") -> list[Delivery]:
    rows = [Delivery(team_id=rule.team_id, rule=rule, run=run, event=event, channel=Delivery.Channel.EMAIL,
                     destination=member.email, recipient=member, interrupt_id=interrupt_id)
            for member in rule.members.filter(is_active=True, memberships__team_id=rule.team_id).exclude(email="")]
    if rule.webhook_url:
        rows.append(Delivery(team_id=rule.team_id, rule=rule, run=run, event=event,
                             channel=Delivery.Channel.WEBHOOK, destination=rule.webhook_url,
                             interrupt_id=interrupt_id))
    created = Delivery.objects.bulk_create(rows)
    # In the caller's transaction (the queue's rows are in this database): a delivery and its task commit together.
    _queue(created)
    return created


def run_reached(*, run_id: int, status: str, team_id: int | None = None,
                workflow_id: int | None = None) -> list[Delivery]:
    """Queue what the rule of ``run_id``'s workflow asks for now that the run is ``status``. Call inside the
    transaction that stores the status: nothing is sent unless it commits. ``team_id`` and ``workflow_id``: the
    run's, when the caller has them (the worker does): a run whose workflow has no rule then costs one read."""
    switch = EVENTS.get(status)
    if switch is None:
        return []
    if team_id is None or workflow_id is None:
        owner = Run.objects.filter(pk=run_id).values_list("team_id", "workflow_id").first()
        if owner is None:
            return []
        team_id, workflow_id = owner
    rule = rule_for(team_id=team_id, workflow_id=workflow_id)
    if rule is None or not getattr(rule, switch):
        return []
    run = Run.objects.filter(pk=run_id).only("pk", "team_id", "workflow_id", "interrupts").first()
    if run is None:
        return []
    asked = [r for r in run.interrupts or [] if isinstance(r, dict) and r.get("id")]
    return _deliveries(rule, event=status, run=run,
                       interrupt_id=str(asked[0]["id"]) if status == "interrupted" and asked else "")


@transaction.atomic
def send_test(*, actor: Any, rule: NotificationRule) -> list[Delivery]:
    """Queue a test message to every destination of ``rule``; the delivery log shows how each went."""
    require_role(actor, rule.team_id, "editor", what="this team")
    created = _deliveries(rule, event="test", run=None)
    if not created:
        raise BadRequest("this rule tells nobody: choose people or a webhook address first", field="members")
    return created


# --- delivering ----------------------------------------------------------------------------------------------------

def _site(path: str) -> str:
    return trellis.SITE_URL.rstrip("/") + path


def _subject(delivery: Delivery) -> str:
    run = delivery.run
    if run is None:
        return "Trellis: a test notification"
    what = {"failed": "failed", "interrupted": "is waiting for an answer", "completed": "completed"}[delivery.event]
    return f"Trellis: run #{run.pk} of {run.workflow.name} {what}"


def _error_line(run: Run) -> str:
    error: dict[str, Any] = run.error if isinstance(run.error, dict) else {}
    cause: dict[str, Any] = error["cause"] if isinstance(error.get("cause"), dict) else {}
    code = cause.get("code") or error.get("code") or ""
    message = error.get("message") or ""
    return f"{code}: {message}" if code else message


def _payload(delivery: Delivery) -> dict[str, Any]:
    """What a webhook receives: the run's identity, status and error, never its input, output or state."""
    run = delivery.run
    body: dict[str, Any] = {"event": delivery.event, "delivery": delivery.pk, "team": delivery.team.name}
    if run is not None:
        error = run.error if isinstance(run.error, dict) else None
        body["run"] = {
            "id": run.pk, "status": run.status, "url": _site(reverse("run-detail", args=[run.pk])),
            "workflow": {"id": run.workflow_id, "name": run.workflow.name},
            "error": {key: error.get(key) for key in ("code", "message", "node_id")} if error is not None else None,
            "interrupts": [{"id": r.get("id"), "node_id": r.get("node_id"), "prompt": r.get("prompt", "")}
                           for r in run.interrupts or [] if isinstance(r, dict)],
        }
    return body


def _email_body(delivery: Delivery) -> str:
    run = delivery.run
    if run is None:
        return (f"This is a test of the notifications of team {delivery.team.name} on Trellis. It reached you, "
                "so runs that fail or wait for an answer will too.\n")
    page = _site(reverse("run-detail", args=[run.pk]))
    lines = [f"{_subject(delivery).removeprefix('Trellis: ')}.", "", f"The run: {page}"]
    if delivery.event == "failed":
        lines += ["", f"What failed: {_error_line(run)}"]
    if delivery.event == "interrupted" and delivery.interrupt_id and delivery.recipient is not None:
        asked = next((r for r in run.interrupts or [] if isinstance(r, dict) and r.get("id") == delivery.interrupt_id),
                     {})
        link = answer_link(run=run, interrupt_id=delivery.interrupt_id, recipient=delivery.recipient)
        lines += ["", f"The question: {asked.get('prompt') or asked.get('node_id') or delivery.interrupt_id}",
                  f"Answer it here (this link is for you alone, works once, until "
                  f"{timezone.now() + timedelta(hours=trellis.ANSWER_LINK_HOURS):%Y-%m-%d %H:%M} UTC): {link}"]
    return "\n".join(lines) + "\n"


class DeliveryFailed(Exception):
    """A destination did not take the message (a webhook's non-2xx answer, a refused address)."""


def _post(delivery: Delivery) -> int:
    assert delivery.rule is not None
    body = json.dumps(_payload(delivery), separators=(",", ":")).encode()
    stamp = int(time.time())
    headers = {"Content-Type": "application/json", "Trellis-Event": delivery.event,
               "Trellis-Delivery": str(delivery.pk),
               SIGNATURE_HEADER: signature.sign(signature.signing_secret(delivery.rule.webhook_salt), stamp, body)}
    # http_request's own function: the same address rules (no private hosts unless an administrator allows them).
    send = catalog.registry().get("http_request").fn
    try:
        answer = asyncio.run(send(url=delivery.destination, method="POST", headers=headers, body=body.decode(),
                                  timeout=WEBHOOK_TIMEOUT_SECONDS, max_bytes=10_000))
    except Exception as exc:
        raise DeliveryFailed(str(exc) or type(exc).__name__) from None
    if not 200 <= answer["status"] < 300:
        delivery.response_code = answer["status"]
        raise DeliveryFailed(f"the webhook answered {answer['status']}")
    return int(answer["status"])


def deliver(delivery_id: int) -> str:
    """One attempt at a delivery; a failed one is tried again later, each wait twice the one before, until
    ``TRELLIS_NOTIFY_MAX_ATTEMPTS``. Returns the delivery's status."""
    delivery = (Delivery.objects.select_related("run", "run__workflow", "rule", "team", "recipient")
                .filter(pk=delivery_id).first())
    if delivery is None or delivery.status in (Delivery.Status.SENT, Delivery.Status.FAILED):
        return delivery.status if delivery is not None else "gone"
    delivery.attempts += 1
    try:
        if delivery.channel == Delivery.Channel.EMAIL:
            EmailMessage(_subject(delivery), _email_body(delivery), None, [delivery.destination]).send()
        else:
            delivery.response_code = _post(delivery)
    except Exception as exc:  # any failure of a destination is the delivery's, logged on it, never the worker's
        delivery.error = (str(exc) or type(exc).__name__)[:2000]
        if delivery.attempts >= trellis.NOTIFY_MAX_ATTEMPTS:
            delivery.status = Delivery.Status.FAILED
        else:
            delivery.status = Delivery.Status.RETRYING
            wait = trellis.NOTIFY_RETRY_SECONDS * 2 ** (delivery.attempts - 1)
            with transaction.atomic():
                delivery.save()
                _queue_later(delivery.pk, wait)
            return delivery.status
    else:
        delivery.status, delivery.error, delivery.sent_at = Delivery.Status.SENT, "", timezone.now()
    delivery.save()
    return delivery.status


def _queue_later(delivery_id: int, seconds: float) -> None:
    queue.enqueue_delivery(delivery_id, run_after=timezone.now() + timedelta(seconds=seconds))


# --- answer links --------------------------------------------------------------------------------------------------

def _hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def answer_link(*, run: Run, interrupt_id: str, recipient: Any) -> str:
    """A new link that lets ``recipient`` answer ``interrupt_id`` of ``run`` once, until it expires."""
    key = secrets.token_urlsafe(32)
    AnswerLink.objects.create(run=run, interrupt_id=interrupt_id, recipient=recipient, key_hash=_hash(key),
                              expires_at=timezone.now() + timedelta(hours=trellis.ANSWER_LINK_HOURS))
    return _site(reverse("answer-link", args=[signing.dumps({"k": key}, salt=ANSWER_SALT)]))


def open_link(*, token: str, actor: Any) -> AnswerLink:
    """The answer link ``token`` names, if ``actor`` may use it now; else a clear refusal."""
    try:
        key = signing.loads(token, salt=ANSWER_SALT)["k"]
    except (signing.BadSignature, KeyError, TypeError):
        raise BadRequest("this answer link is not valid: it was changed or cut short; open it from the "
                         "email again") from None
    link = AnswerLink.objects.select_related("run", "run__workflow", "recipient", "used_by").filter(
        key_hash=_hash(str(key))).first()
    if link is None:
        raise ObjectNotFound("this answer link no longer exists (its run was deleted)")
    if link.recipient_id != actor.pk:
        raise ActionForbidden(f"this link was sent to {link.recipient.get_username()}: only they can answer with "
                              "it (sign in as them, or answer on the run's page if you may)")
    if link.used_at is not None:
        by = link.used_by.get_username() if link.used_by else "someone"
        raise AnswerLinkClosed(f"this link was already used: {by} answered at {link.used_at:%Y-%m-%d %H:%M} UTC")
    if link.expires_at <= timezone.now():
        raise AnswerLinkClosed(f"this link expired at {link.expires_at:%Y-%m-%d %H:%M} UTC; answer on the run's "
                               "page instead")
    open_ids = {str(r.get("id")) for r in link.run.interrupts or [] if isinstance(r, dict)}
    if link.run.status != Run.Status.INTERRUPTED or link.interrupt_id not in open_ids:
        raise AnswerLinkClosed("this question is no longer open: it was answered another way or the run moved on")
    return link


@transaction.atomic
def answer_by_link(*, link: AnswerLink, actor: Any, value: object, label: object = None) -> Run:
    """Answer the link's interrupt as ``actor`` (recorded in the run's answers) and use the link up, together:
    a refused answer leaves the link usable, and a second press finds it used."""
    if not AnswerLink.objects.filter(pk=link.pk, used_at__isnull=True).update(used_at=timezone.now(), used_by=actor):
        raise AnswerLinkClosed("this link was already used")
    return run_services.resume_run(actor=actor, run=link.run, interrupt_id=link.interrupt_id, value=value,
                                   label=label)

"""Webhooks and schedules: setting them up (editors and owners), and what happens when they fire.

A webhook's secret is random, shown once and stored hashed. A call with a JSON body that the input
schema accepts records a run (``services.runs.begin_run``) and is answered 202 with its id; anything
else is refused with nothing started. Calls are counted per webhook in a one-minute window.

A schedule fires through the task queue, never an in-memory timer: the queue holds one
``fire_schedule(schedule, tick)`` task per schedule, due at ``Schedule.next_fire_at``. The task that
moves ``next_fire_at`` on from its tick (a compare-and-set UPDATE) is the one that fires the tick, and
it enqueues the next tick in the same transaction; a duplicate of the task, run by another worker at
the same moment or later, changes no row and does nothing. ``TriggerFire``'s unique (schedule, tick)
makes the database refuse a second fire of a tick even so.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final
from zoneinfo import ZoneInfo, available_timezones

from cronsim import CronSim
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from designer.access.models import hash_secret
from designer.access.permissions import require_workflow_role
from designer.conf import trellis
from designer.core.errors import (
    BadRequest,
    CronNeverFires,
    DesignerError,
    NotPublished,
    ObjectNotFound,
    ProblemsFound,
    RateLimited,
    UnknownTimeZone,
)
from designer.core.text import short_text
from designer.core.untrusted import JSONInputError, form_json, loads_json, parse_id
from designer.models import Run, Schedule, TriggerFire, Webhook, WebhookSignatureUse, Workflow, WorkflowVersion
from designer.runs.dispatch import enqueue, task_named
from designer.runs.services import begin_run
from designer.triggers import cron, signature
from runtime import WorkflowError
from runtime.inspect import check_run_input

logger = logging.getLogger("designer.triggers")

PREFIX: Final[str] = "whk_"
#: Calls per minute a webhook accepts unless set otherwise, and the most it may be set to.
DEFAULT_RATE_LIMIT: Final[int] = 60
MAX_RATE_LIMIT: Final[int] = 10_000
RATE_WINDOW: Final[timedelta] = timedelta(minutes=1)
#: How many missed ticks the ``all`` policy catches up at most; older ones are skipped.
MAX_CATCH_UP: Final[int] = 100


def grace() -> timedelta:
    """How late a tick may fire and still count as on time (a busy queue); later, the missed policy decides."""
    return timedelta(seconds=trellis.SCHEDULE_GRACE_SECONDS)


# --- shared checks ---------------------------------------------------------------------------


def _name(name: object) -> str:
    return short_text(name, field="name", max_length=100,
                      missing="give the trigger a name, e.g. who calls it or what it is for",
                      too_long="a trigger name has at most 100 characters and no NUL")


def _version(workflow: Workflow, version: object) -> WorkflowVersion | None:
    """A version of ``workflow`` by number; None/"" means the latest published at each fire."""
    if not workflow.versions.exists():
        raise NotPublished("publish the workflow first: triggers run published versions", field="version")
    if version in (None, "", "latest"):
        return None
    number = parse_id(version)
    found = workflow.versions.filter(number=number).first() if number is not None else None
    if found is None:
        raise ObjectNotFound(f"workflow {workflow.slug!r} has no version {version!r}", field="version")
    return found


def _version_number(workflow: Workflow, version: WorkflowVersion | None) -> int:
    if version is not None:
        return version.number
    latest = workflow.versions.aggregate(latest=Max("number"))["latest"]
    if latest is None:
        raise NotPublished("the workflow has no published version to run; publish it first", field="version")
    return int(latest)


def _document_of(workflow: Workflow, version: WorkflowVersion | None) -> Any:
    number = _version_number(workflow, version)
    return workflow.versions.get(number=number).document


# --- webhooks ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NewWebhook:
    webhook: Webhook
    secret: str  # the URL's secret: shown once, never stored
    signing_secret: str | None = None  # signed mode: shown once, never stored (derived again to verify)


def _rate_limit(value: object) -> int:
    if value in (None, ""):
        return DEFAULT_RATE_LIMIT
    number = parse_id(value)
    if number is None or not 1 <= number <= MAX_RATE_LIMIT:
        raise BadRequest(f"the rate limit is a whole number of calls per minute, 1 to {MAX_RATE_LIMIT}",
                         field="rate_limit")
    return number


def _mode(value: object) -> str:
    if value in (None, ""):
        return str(Webhook.Mode.URL)
    if value not in Webhook.Mode.values:
        raise BadRequest(f"a webhook's mode is 'url' (the secret URL is enough) or 'signed' (calls carry a "
                         f"{signature.HEADER} header); got {value!r}", field="mode")
    return str(value)


@transaction.atomic
def create_webhook(*, actor: Any, workflow: Workflow, name: object, version: object = None,
                   rate_limit: object = None, mode: object = None) -> NewWebhook:
    """A webhook for ``version`` (a number; None: the latest published when called). Editors and owners.
    ``mode`` ``signed`` also gives it a signing secret that every call must sign with."""
    require_workflow_role(actor, workflow, "editor")
    secret = PREFIX + secrets.token_urlsafe(32)
    checked_mode = _mode(mode)
    salt = signature.new_salt() if checked_mode == Webhook.Mode.SIGNED else ""
    webhook = Webhook.objects.create(
        workflow=workflow, version=_version(workflow, version), name=_name(name), token_hash=hash_secret(secret),
        prefix=secret[:12], rate_limit=_rate_limit(rate_limit), mode=checked_mode, signing_salt=salt,
        created_by=actor,
    )
    return NewWebhook(webhook=webhook, secret=secret,
                      signing_secret=signature.signing_secret(salt) if salt else None)


@transaction.atomic
def revoke_webhook(*, actor: Any, webhook: Webhook) -> Webhook:
    """Revoke a webhook: its URL stops working at once (404). Editors and owners."""
    require_workflow_role(actor, webhook.workflow, "editor")
    if webhook.revoked_at is None:
        webhook.revoked_at = timezone.now()
        webhook.save(update_fields=["revoked_at"])
    return webhook


def _body(raw: bytes) -> dict[str, Any]:
    try:
        body = loads_json(raw.decode("utf-8")) if raw else {}
    except (UnicodeDecodeError, json.JSONDecodeError, JSONInputError) as exc:
        raise BadRequest(f"the body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise BadRequest(f"the body is the run's input, a JSON object; got {type(body).__name__}")
    return body


def _refuse_replay(webhook: Webhook, call: signature.SignedCall, *, now: float) -> None:
    """Remember an accepted signed call until its timestamp leaves the window; the same call again is refused.
    Runs in ``call_webhook``'s transaction (a call refused later, e.g. for its body, is not remembered), under
    the webhook's row lock; the unique key still refuses a twin committed by another worker meanwhile."""
    webhook.signature_uses.filter(expires_at__lt=datetime.fromtimestamp(now, tz=UTC)).delete()
    try:
        with transaction.atomic():
            WebhookSignatureUse.objects.create(webhook=webhook, replay_key=call.replay_key,
                                               expires_at=datetime.fromtimestamp(call.expires, tz=UTC))
    except IntegrityError:
        raise signature.replayed() from None


def call_webhook(*, secret: str, body: bytes, signature_header: str | None = None,
                 now: float | None = None) -> Run:
    """Start a run from a webhook call whose raw body is ``body``. ``ObjectNotFound`` for an unknown or revoked
    secret, ``signature.SignatureRefused`` (and subclasses) for a signed webhook's call whose
    signature is missing, wrong, outside the replay window or already used, ``RateLimited`` past the webhook's limit,
    ``BadRequest`` / ``runtime.InputValidationError`` for a body the input schema refuses; in every refused
    case nothing is recorded. ``now`` (Unix seconds) is the clock the signature's timestamp is checked against."""
    if not isinstance(secret, str) or not secret.startswith(PREFIX) or len(secret) > 200:
        raise ObjectNotFound("no such webhook (the URL is wrong, or the webhook was revoked)")
    with transaction.atomic():
        webhook = (Webhook.objects.select_for_update().select_related("workflow")
                   .filter(token_hash=hash_secret(secret), revoked_at__isnull=True).first())
        if webhook is None:
            raise ObjectNotFound("no such webhook (the URL is wrong, or the webhook was revoked)")
        if webhook.mode == Webhook.Mode.SIGNED:
            # Before the rate limit: unsigned calls must not use up the signed callers' budget.
            clock = time.time() if now is None else now
            call = signature.verify(salt=webhook.signing_salt, header=signature_header, body=body, now=clock)
            _refuse_replay(webhook, call, now=clock)
        at = timezone.now()
        # The row lock above serialises the calls of one webhook, so counting then inserting cannot overshoot.
        recent = webhook.fires.filter(at__gt=at - RATE_WINDOW).order_by("at").values_list("at", flat=True)
        if len(recent) >= webhook.rate_limit:
            wait = max(1, int((recent[0] + RATE_WINDOW - at).total_seconds()) + 1)
            raise RateLimited(f"webhook {webhook.name!r} accepts {webhook.rate_limit} calls per minute; "
                              f"try again in {wait} s", retry_after=wait)
        run = begin_run(workflow=webhook.workflow, input=_body(body),
                        version=_version_number(webhook.workflow, webhook.version))
        TriggerFire.objects.create(workflow=webhook.workflow, webhook=webhook, run=run)
        return run


# --- schedules --------------------------------------------------------------------------------


#: The shape of an IANA time zone name (``UTC``, ``Europe/Berlin``, ``America/Argentina/Buenos_Aires``,
#: ``Etc/GMT+5``): the API schema's pattern for a schedule's time zone.
TIME_ZONE_PATTERN: Final[str] = r"^[A-Za-z][A-Za-z0-9_+-]*(?:/[A-Za-z0-9_+-]+){0,2}$"
_TIME_ZONE_RE: Final = re.compile(TIME_ZONE_PATTERN)


def time_zone_shaped(name: str) -> bool:
    return len(name) <= 64 and _TIME_ZONE_RE.fullmatch(name) is not None


def _zone(name: object) -> ZoneInfo:
    if not isinstance(name, str) or not name.strip():
        raise BadRequest("name a time zone, e.g. UTC or Europe/Berlin", field="timezone")
    name = name.strip()
    if not time_zone_shaped(name):
        raise BadRequest(f"{name[:80]!r} is not a time zone name; use an IANA name like Europe/Berlin or UTC",
                         field="timezone")
    # Only the names the tz database lists, even where ZoneInfo could read some other file.
    if name not in _time_zones():
        raise UnknownTimeZone(f"{name!r} is not a time zone the tz database knows; use an IANA name like UTC",
                              field="timezone")
    return ZoneInfo(name)


def _cron(expression: object, zone: ZoneInfo) -> str:
    """The expression, whitespace normalised; it must fit ``designer.triggers.cron.CRON_PATTERN`` (400 otherwise, the
    pattern the API schema publishes) and be able to fire (422 ``cron.never_fires`` otherwise)."""
    if not isinstance(expression, str) or not expression.strip():
        raise BadRequest("a schedule needs a cron expression, e.g. '0 9 * * 1-5' (09:00 on weekdays)", field="cron")
    if not cron.fits_grammar(expression):
        raise BadRequest(cron.grammar_problem(" ".join(expression.split())), field="cron")
    expression = " ".join(expression.split())
    problem = cron.impossibility(expression, timezone.now().astimezone(zone))
    if problem is not None:
        raise CronNeverFires(problem, field="cron")
    return expression


def ticks_after(schedule: Schedule, after: datetime, count: int = 1) -> list[datetime]:
    """The next ``count`` ticks strictly after ``after``, in the schedule's time zone (daylight saving
    handled by cronsim: a time that does not exist that day fires at the next one that does)."""
    it = CronSim(schedule.cron, after.astimezone(ZoneInfo(schedule.timezone)))
    ticks: list[datetime] = []
    for tick in it:
        ticks.append(tick)
        if len(ticks) >= count:
            break
    return ticks


def _missed(value: object) -> str:
    if value in (None, ""):
        return "latest"
    if value not in Schedule.Missed.values:
        raise BadRequest(f"missed is one of {', '.join(Schedule.Missed.values)}", field="missed")
    return str(value)


def _fire_task() -> Any:
    return task_named("fire_schedule")


def enqueue_tick(schedule: Schedule, tick: datetime) -> None:
    """Hand ``tick`` to the queue, due at that time. Inside the transaction that set ``next_fire_at``:
    with the database backend the task row commits (or rolls back) with it."""
    enqueue(_fire_task(), schedule.pk, tick.isoformat(), run_after=tick)


class _Problems:
    """Every field's problem of one request, collected before any is reported: one is raised as itself,
    several as one ``ProblemsFound`` listing each with its field."""

    _UNSET: Final = object()

    def __init__(self) -> None:
        self.found: list[DesignerError | WorkflowError] = []

    def check(self, field: str, check: Any, *args: Any) -> Any:
        """``check(*args)``, or ``_UNSET`` after recording its error (naming ``field`` when it names none)."""
        try:
            return check(*args)
        except (DesignerError, WorkflowError) as exc:
            exc.details.setdefault("field", field)
            self.found.append(exc)
            return self._UNSET

    def ok(self, *values: Any) -> bool:
        return all(value is not self._UNSET for value in values)

    def raise_any(self) -> None:
        if len(self.found) == 1:
            raise self.found[0]
        if self.found:
            raise ProblemsFound(self.found)


def _schedule_input(value: object, text: str | None) -> dict[str, Any]:
    run_input = form_json(text, field="input", what="the input", empty={}) if text is not None else value
    if run_input in (None, ""):
        return {}
    if not isinstance(run_input, dict):
        raise BadRequest("a schedule's input is a JSON object, e.g. {\"amount\": 1}", field="input")
    return run_input


@transaction.atomic
def create_schedule(*, actor: Any, workflow: Workflow, name: object, cron: object, timezone_name: object = "UTC",
                    input: object = None, input_text: str | None = None, version: object = None,
                    missed: object = None) -> Schedule:
    """A schedule running ``version`` (None: the latest published at each tick) with ``input`` (or
    ``input_text``, the input as JSON text typed in a form). The input is checked against that version's input
    schema now, so a schedule never fires only to be refused. Every field is checked before any problem is
    reported: one problem raises its own error, several one ``ProblemsFound`` naming each field."""
    require_workflow_role(actor, workflow, "editor")
    problems = _Problems()
    checked_name = problems.check("name", _name, name)
    zone = problems.check("timezone", _zone, timezone_name)
    # A bad zone still lets the expression be checked, against UTC.
    expression = problems.check("cron", _cron, cron, zone if problems.ok(zone) else ZoneInfo("UTC"))
    chosen = problems.check("version", _version, workflow, version)
    checked_missed = problems.check("missed", _missed, missed)
    run_input = problems.check("input", _schedule_input, input, input_text)
    if problems.ok(chosen, run_input):
        problems.check("input", check_run_input, _document_of(workflow, chosen), run_input)
    problems.raise_any()
    schedule = Schedule(workflow=workflow, version=chosen, name=checked_name, cron=expression, timezone=zone.key,
                        input=run_input, missed=checked_missed, created_by=actor)
    schedule.next_fire_at = ticks_after(schedule, timezone.now())[0]
    schedule.save()
    enqueue_tick(schedule, schedule.next_fire_at)
    return schedule


@transaction.atomic
def set_schedule_enabled(*, actor: Any, schedule: Schedule, enabled: bool) -> Schedule:
    """Pause or resume a schedule. Resuming starts from the next tick after now: paused ticks are not missed."""
    require_workflow_role(actor, schedule.workflow, "editor")
    locked = Schedule.objects.select_for_update().get(pk=schedule.pk)
    if enabled and not locked.enabled:
        locked.enabled = True
        locked.next_fire_at = ticks_after(locked, timezone.now())[0]
        locked.save(update_fields=["enabled", "next_fire_at"])
        enqueue_tick(locked, locked.next_fire_at)
    elif not enabled and locked.enabled:
        # The queued task finds next_fire_at empty and does nothing.
        locked.enabled = False
        locked.next_fire_at = None
        locked.save(update_fields=["enabled", "next_fire_at"])
    return locked


@transaction.atomic
def delete_schedule(*, actor: Any, schedule: Schedule) -> None:
    require_workflow_role(actor, schedule.workflow, "editor")
    Schedule.objects.filter(pk=schedule.pk).delete()


def _start(schedule: Schedule, tick: datetime) -> TriggerFire:
    """One fire of ``tick``: a run, or a fire recording why none started (its input no longer fits, say)."""
    try:
        with transaction.atomic():
            run = begin_run(workflow=schedule.workflow, input=schedule.input,
                            version=_version_number(schedule.workflow, schedule.version))
            return TriggerFire.objects.create(workflow=schedule.workflow, schedule=schedule, tick=tick, run=run)
    except (DesignerError, WorkflowError) as exc:
        message = getattr(exc, "message", str(exc))
        logger.warning("schedule %s: the tick %s started no run: %s", schedule.pk, tick, message)
        return TriggerFire.objects.create(workflow=schedule.workflow, schedule=schedule, tick=tick,
                                          outcome=TriggerFire.Outcome.FAILED, detail=str(message)[:500])


def fire_tick(schedule_id: int, tick_text: str) -> str:
    """The body of the ``fire_schedule`` task: fire ``tick`` of one schedule, once, and queue the next tick.

    Returns what happened: ``fired``, ``caught-up`` (a missed tick fired), ``skipped``, or ``stale`` (a
    duplicate task, or the schedule changed, was paused or deleted since the task was queued)."""
    tick = datetime.fromisoformat(tick_text)
    now = timezone.now()
    schedule = Schedule.objects.select_related("workflow").filter(pk=schedule_id).first()
    if schedule is None or not schedule.enabled or schedule.next_fire_at != tick:
        return "stale"
    late = now - tick > grace()
    if not late:
        fire, upcoming = [tick], ticks_after(schedule, tick)[0]
    elif schedule.missed == Schedule.Missed.ALL:
        # One missed tick per task, the next one queued due at once: catching up goes through the queue too.
        behind = ticks_after(schedule, tick, MAX_CATCH_UP + 1)
        fire, upcoming = [tick], behind[0]
        if len(behind) > MAX_CATCH_UP and behind[-1] < now:
            upcoming = ticks_after(schedule, now)[0]  # too far behind: the rest are skipped
    else:
        missed = [tick]
        upcoming = ticks_after(schedule, tick)[0]
        while upcoming <= now and len(missed) <= MAX_CATCH_UP:
            missed.append(upcoming)
            upcoming = ticks_after(schedule, upcoming)[0]
        if upcoming <= now:
            upcoming = ticks_after(schedule, now)[0]
        fire = [missed[-1]] if schedule.missed == Schedule.Missed.LATEST else []
    with transaction.atomic():
        # The claim: only the task that moves next_fire_at on from this tick goes on.
        claimed = Schedule.objects.filter(pk=schedule_id, enabled=True, next_fire_at=tick).update(
            next_fire_at=upcoming)
        if not claimed:
            return "stale"
        schedule.next_fire_at = upcoming
        try:
            with transaction.atomic():
                skipped = [t for t in ([tick] if not fire else []) if late]
                for missed_tick in skipped:
                    TriggerFire.objects.create(workflow=schedule.workflow, schedule=schedule, tick=missed_tick,
                                               outcome=TriggerFire.Outcome.SKIPPED,
                                               detail=f"missed by {int((now - missed_tick).total_seconds())} s")
                for fire_at in fire:
                    _start(schedule, fire_at)
        except IntegrityError:
            # A fire of this tick exists already: the database refused the second one. Nothing else to do.
            logger.warning("schedule %s: tick %s was fired already", schedule_id, tick)
        enqueue_tick(schedule, upcoming)
    if not fire:
        return "skipped"
    return "caught-up" if late else "fired"


def requeue_lost_ticks() -> list[int]:
    """Queue the tick of every enabled schedule whose tick is overdue by more than the grace: its task was lost
    (a queue emptied by hand, a backend without transactions). A duplicate is harmless: the claim in
    ``fire_tick`` lets one task fire a tick."""
    overdue = Schedule.objects.filter(enabled=True, next_fire_at__lt=timezone.now() - 2 * grace())
    requeued = []
    for schedule in overdue:
        with transaction.atomic():
            if schedule.next_fire_at is not None:
                enqueue_tick(schedule, schedule.next_fire_at)
                requeued.append(schedule.pk)
    return requeued


@functools.cache
def _time_zones() -> frozenset[str]:
    return frozenset(available_timezones())


def timezones() -> list[str]:
    """The time zone names a schedule may use (the API schema's enum, the page's suggestions)."""
    return sorted(_time_zones())

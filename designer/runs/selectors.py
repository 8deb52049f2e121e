from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Q, QuerySet

from designer.core.errors import BadRequest, ObjectNotFound
from designer.core.untrusted import MAX_ID, parse_id
from designer.models import Run, RunEvent

#: Most events one page of ``events_after`` returns.
MAX_EVENTS_PAGE = 1000


def runs_for(*, user: Any) -> QuerySet[Run]:
    """The caller's runs, newest first; the list filters (pages and API) are ``designer.runs.filters.RunFilter``."""
    return Run.objects.for_user(user).select_related("workflow", "workflow_version", "created_by")


def run_people(*, user: Any, runs: QuerySet[Run], team_ids: list[int]) -> QuerySet[Any]:
    """Who may appear as a run's starter here: the members of ``team_ids`` that are the caller's own teams, and
    whoever started one of ``runs`` (a former member, someone of another team running a shared workflow)."""
    people = get_user_model().objects
    own_teams = user.memberships.filter(team_id__in=team_ids).values("team_id")
    return (people.filter(Q(pk__in=runs.exclude(created_by=None).values("created_by"))
                          | Q(memberships__team_id__in=own_teams))
            .distinct().order_by(get_user_model().USERNAME_FIELD))


def get_run(*, user: Any, run_id: object) -> Run:
    try:
        return runs_for(user=user).get(pk=parse_id(run_id))
    except Run.DoesNotExist:
        raise ObjectNotFound("this run does not exist or is not shared with you", run=run_id) from None


#: What a poll of the live run page reads of the run row: small columns only (not its input, document or state).
LIVE_FIELDS = ("id", "team_id", "workflow_id", "status", "progress", "items_done", "failures", "created_at",
               "started_at", "finished_at", "cancel_requested")


def get_live_run(*, user: Any, run_id: object) -> Run:
    """The run for a live poll, scoped like ``get_run``, with only ``LIVE_FIELDS`` loaded."""
    try:
        return Run.objects.for_user(user).only(*LIVE_FIELDS).get(pk=parse_id(run_id))
    except Run.DoesNotExist:
        raise ObjectNotFound("this run does not exist or is not shared with you", run=run_id) from None


def events_since(*, run: Run, since: int, limit: int) -> tuple[list[RunEvent], int]:
    """The newest ``limit`` events with ``seq >= since``, oldest first, and how many newer than ``since`` were
    passed over to keep it at ``limit`` (one indexed range read, however long the trace)."""
    rows = list(RunEvent.objects.filter(run_id=run.pk, seq__gte=since).order_by("-seq")
                .only("id", "run_id", "seq", "kind", "node_id", "frame_id", "index", "data", "duration_ms")[:limit])
    rows.reverse()
    skipped = rows[0].seq - since if rows else 0
    return rows, skipped


def _int(value: object, field: str) -> int:
    try:
        number = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        raise BadRequest(f"{field} must be an integer", field=field) from None
    if abs(number) > MAX_ID:  # the database cannot compare with it (SQLite raises OverflowError)
        raise BadRequest(f"{field} must be an integer between -{MAX_ID} and {MAX_ID}", field=field)
    return number


def events_after(run: Run, *, after: object = None, limit: object = None, default_limit: int = 200
                 ) -> tuple[list[RunEvent], int]:
    """Events of ``run`` with ``seq`` > ``after``, oldest first, at most ``limit``; and the cursor to pass as
    ``after`` next time (the last seq returned, or ``after`` itself when nothing new came)."""
    cursor = -1 if after in (None, "") else _int(after, "after")
    size = default_limit if limit in (None, "") else _int(limit, "limit")
    size = max(1, min(size, MAX_EVENTS_PAGE))
    events = list(RunEvent.objects.filter(run=run, seq__gt=cursor).order_by("seq")[:size])
    return events, (events[-1].seq if events else max(cursor, -1))

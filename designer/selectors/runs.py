from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from designer.errors import BadRequest, NotFound
from designer.models import Run, RunEvent

#: Most events one page of ``events_after`` returns.
MAX_EVENTS_PAGE = 1000


def runs_for(*, user: Any) -> QuerySet[Run]:
    """The caller's runs, newest first. The runs API adds its own filters on top."""
    return Run.objects.for_user(user).select_related("workflow", "workflow_version", "created_by")


def get_run(*, user: Any, run_id: object) -> Run:
    try:
        return runs_for(user=user).get(pk=int(run_id))  # type: ignore[call-overload]
    except (Run.DoesNotExist, TypeError, ValueError):
        raise NotFound("this run does not exist or is not shared with you", run=run_id) from None


def _int(value: object, field: str) -> int:
    try:
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        raise BadRequest(f"{field} must be an integer", field=field) from None


def filter_runs(
    *,
    user: Any,
    workflow: object = None,
    team: object = None,
    status: object = None,
    version: object = None,
    created_by: object = None,
) -> QuerySet[Run]:
    """The caller's runs narrowed by the list filters. Empty strings mean "no filter".

    ``status`` may list several statuses separated by commas; ``version`` is a number or ``draft``;
    ``created_by`` is a user id or a username.
    """
    runs = runs_for(user=user)
    if workflow not in (None, ""):
        runs = runs.filter(workflow_id=_int(workflow, "workflow"))
    if team not in (None, ""):
        runs = runs.filter(team_id=_int(team, "team"))
    if status not in (None, ""):
        wanted = [part.strip() for part in str(status).split(",") if part.strip()]
        unknown = sorted(set(wanted) - set(Run.Status.values))
        if unknown:
            raise BadRequest(
                f"unknown run status {', '.join(unknown)}; one of {', '.join(Run.Status.values)}", field="status"
            )
        runs = runs.filter(status__in=wanted)
    if version not in (None, ""):
        if str(version) in ("draft", "null"):
            runs = runs.filter(workflow_version__isnull=True)
        else:
            runs = runs.filter(workflow_version__number=_int(version, "version"))
    if created_by not in (None, ""):
        text = str(created_by)
        runs = runs.filter(created_by_id=int(text)) if text.isdigit() else runs.filter(created_by__username=text)
    return runs


def events_after(run: Run, *, after: object = None, limit: object = None, default_limit: int = 200
                 ) -> tuple[list[RunEvent], int]:
    """Events of ``run`` with ``seq`` > ``after``, oldest first, at most ``limit``; and the cursor to pass as
    ``after`` next time (the last seq returned, or ``after`` itself when nothing new came)."""
    cursor = -1 if after in (None, "") else _int(after, "after")
    size = default_limit if limit in (None, "") else _int(limit, "limit")
    size = max(1, min(size, MAX_EVENTS_PAGE))
    events = list(RunEvent.objects.filter(run=run, seq__gt=cursor).order_by("seq")[:size])
    return events, (events[-1].seq if events else max(cursor, -1))

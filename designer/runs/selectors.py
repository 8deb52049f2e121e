from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Q, QuerySet
from django.db.transaction import TransactionManagementError

from designer.access.permissions import WorkflowAccess, row_access, with_caller_access, workflow_access
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


#: Where ``get_run`` keeps the caller's access it read with the run, on that run object (``run_access``).
_ACCESS = "_trellis_caller_access"


def _visible(runs: QuerySet[Run], user: Any, run_id: object) -> Run:
    """The run ``run_id`` if the caller may see it (as ``runs_for`` scopes: a run of one of their teams, or of a
    workflow shared with one), read in one statement with their access to it, kept for ``run_access``."""
    try:
        run = with_caller_access(runs, user).get(pk=parse_id(run_id))
    except Run.DoesNotExist:
        run = None
    access = row_access(user, run) if run is not None else None
    if run is None or access is None:
        raise ObjectNotFound("this run does not exist or is not shared with you", run=run_id)
    run.__dict__[_ACCESS] = access
    return run


def get_run(*, user: Any, run_id: object) -> Run:
    """One of the caller's runs, with its workflow, version and starter."""
    return _visible(Run.objects.select_related("workflow", "workflow_version", "created_by"), user, run_id)


#: Where ``lock_run`` marks a run it read under its row lock (``is_locked``).
_LOCKED = "_trellis_locked"


def lock_run(*, user: Any, run_id: object) -> Run:
    """``get_run`` that also locks the run's row until the caller's transaction ends: an action's one read of the
    run, with the caller's access to it (``run_access``), what it checks and changes as the row now is (no worker
    can write it meanwhile). Only the run's own row is locked (not its workflow's, version's or starter's)."""
    if not connection.in_atomic_block:
        raise TransactionManagementError("lock_run locks the run until the transaction ends: call it inside one")
    run = _visible(Run.objects.select_related("workflow", "workflow_version", "created_by")
                   .select_for_update(of=("self",)), user, run_id)
    run.__dict__[_LOCKED] = True
    return run


def is_locked(run: Run) -> bool:
    """Whether ``run`` was read by ``lock_run`` (in the transaction the caller is in: that is the caller's word)."""
    return bool(run.__dict__.get(_LOCKED)) and connection.in_atomic_block


def run_access(user: Any, run: Run) -> WorkflowAccess | None:
    """The caller's access to the run's workflow (its role, whether in its own team): as ``get_run`` read it with
    the run, or read now for a run loaded otherwise (after an action reloads it, say)."""
    access = run.__dict__.get(_ACCESS)
    if isinstance(access, WorkflowAccess) and access.is_for(user) and access.team_id == run.workflow.team_id:
        return access
    return workflow_access(user, run.workflow)


#: What a poll of the live run page reads of the run row: small columns only (not its input, document or state).
LIVE_FIELDS = ("id", "team_id", "workflow_id", "status", "progress", "items_done", "failures", "created_at",
               "started_at", "finished_at", "cancel_requested")


def get_live_run(*, user: Any, run_id: object) -> Run:
    """The run for a live poll, scoped like ``get_run``, with only ``LIVE_FIELDS`` loaded."""
    return _visible(Run.objects.only(*LIVE_FIELDS), user, run_id)


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

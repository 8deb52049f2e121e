"""Which queued task a ``run_worker`` slot takes next: fair across teams, round robin across a team's workflows.

The queue's own order is first come, first served: one team that queues a thousand foreach batches makes
every other team wait behind them. ``run_worker`` instead picks in two steps:

1. The team. Stride scheduling (a weighted round robin without rounds): each team has a pass, ``served``;
   a pick adds ``1 / queue_weight`` to the picked team's pass and the team with the smallest pass among those
   with work queued goes next, so a team of weight 2 gets two picks for every one of a team of weight 1.
   A team that had nothing queued for a while does not come back with a tiny pass and take every pick: no
   pass counts as lower than the ``floor``, the pass the last picked team had when it was picked.
2. The workflow inside that team: the one picked least recently, then the queue's own order.

Limits hold across all workers: a team (``Team.max_running``, else ``TRELLIS_TEAM_MAX_RUNNING``) and each of
its workflows (``Team.workflow_max_running``, else ``TRELLIS_WORKFLOW_MAX_RUNNING``) have at most that many
tasks running. And a worker with more than one slot gives its last free slot only to a team that runs
nothing else on it, so a newcomer never waits for a long step of another team to end.

``choose`` is the decision, pure; ``claim_next`` reads the queue, calls it and claims the task in one
transaction (exclusive on SQLite; on PostgreSQL a limited team's share row is locked while its running tasks
are counted, so two workers cannot both take its last allowed slot; two workers picking for one unlimited team
at once may count one pick instead of two, which only nudges the order).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Count
from django.tasks import TaskResultStatus
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django_tasks_db.models import DBTaskResult, get_date_max
from django_tasks_db.utils import exclusive_transaction

from designer.conf import trellis
from designer.core import rows
from designer.core.prepared import prepared_cursor
from designer.models import FairShare, QueuedTask, Team

#: ``FairShare`` row that holds the floor (no team has id 0).
FLOOR_ROW = (0, 0)
#: The oldest moment: a workflow never picked goes before every workflow that was.
NEVER = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Queued:
    """The queued work of one workflow: its team, and where its first ready task stands in the queue's order."""

    team_id: int
    workflow_id: int
    position: int


@dataclass(frozen=True, slots=True)
class Policy:
    """A team's weight and limits (0: no limit)."""

    weight: int = 1
    max_running: int = 0
    workflow_max_running: int = 0


@dataclass(frozen=True, slots=True)
class Load:
    """What is running and what each team and workflow has had."""

    team_running: Mapping[int, int]
    workflow_running: Mapping[int, int]
    served: Mapping[int, float]
    floor: float
    last_picked: Mapping[int, datetime]
    #: Tasks this worker runs per team, and its free slots (of ``slots``).
    worker_teams: Mapping[int, int]
    free_slots: int
    slots: int


def _allowed(queued: Queued, policy: Policy, load: Load) -> bool:
    if policy.max_running and load.team_running.get(queued.team_id, 0) >= policy.max_running:
        return False
    if policy.workflow_max_running and load.workflow_running.get(queued.workflow_id, 0) >= policy.workflow_max_running:
        return False
    # The worker's last free slot is kept for a team that runs nothing else here.
    return not (load.slots > 1 and load.free_slots <= 1 and load.worker_teams.get(queued.team_id, 0) > 0)


def choose(queued: Sequence[Queued], policies: Mapping[int, Policy], load: Load) -> Queued | None:
    """The workflow whose first ready task goes next, or None when every one is held back by a limit."""
    allowed = [entry for entry in queued if _allowed(entry, policies.get(entry.team_id, Policy()), load)]
    if not allowed:
        return None

    def team_key(entry: Queued) -> tuple[float, int]:
        first = min(other.position for other in allowed if other.team_id == entry.team_id)
        return max(load.served.get(entry.team_id, 0.0), load.floor), first

    team = min(allowed, key=team_key).team_id
    return min((entry for entry in allowed if entry.team_id == team),
               key=lambda entry: (load.last_picked.get(entry.workflow_id, NEVER), entry.position))


def advance(served: float, floor: float, weight: int) -> tuple[float, float]:
    """A pick's new (pass of the picked team, floor): the pass moves on by ``1 / weight`` from where it starts."""
    start = max(served, floor)
    return start + 1 / weight, start


def limits_of(team: Mapping[str, int | None]) -> Policy:
    """A team's policy: its own limits, else the server's."""
    own_team, own_workflow = team["max_running"], team["workflow_max_running"]
    return Policy(weight=max(team["queue_weight"] or 1, 1),
                  max_running=trellis.TEAM_MAX_RUNNING if own_team is None else own_team,
                  workflow_max_running=trellis.WORKFLOW_MAX_RUNNING if own_workflow is None else own_workflow)


@dataclass(frozen=True, slots=True)
class ReadyTasks:
    """The queued tasks one worker may take: ready now, of its backend, in its queues (``queue_names`` None: every
    queue) and not in ``excluded``; what django-tasks-db's worker filters ``DBTaskResult.objects.ready()`` by."""

    backend_name: str = "default"
    queue_names: tuple[str, ...] | None = None
    excluded: tuple[str, ...] = ()
    using: str = "default"


#: The share rows a pick writes: the team's, the floor's, the workflow's.
SHARE_ROWS = 3
_SHARE_UPSERT = ("ON CONFLICT (team_id, workflow_id) DO UPDATE SET served = EXCLUDED.served, "
                 "last_picked = EXCLUDED.last_picked")


@dataclass(frozen=True, slots=True)
class _Statements:
    """A worker's queue reads as SQL, built once (``_statements``): the ORM built the groups query and the lock
    at every pick, about 2 ms of a one-step run's CPU (issue 33). Each takes ``_Statements.params`` first."""

    groups: str
    #: Claims (``_take``) of the first ownerless task, and of a given team's and workflow's first task.
    ownerless: str
    owned: str
    #: PostgreSQL: ``owned`` and the pick's share rows (``_store``) in one statement, the rows written only when
    #: the task was taken (a ``WITH`` clause; ``SHARE_ROWS`` rows of ``(team, workflow, served, last_picked)``).
    owned_storing: str | None
    #: Up to the list of the teams a worker runs, which ``held_back`` closes.
    others: str
    #: The fixed part of the filter's parameters, after the two clock values (``date max``, now).
    fixed: tuple[object, ...]


@functools.lru_cache(maxsize=32)
def _statements(ready: ReadyTasks, vendor: str) -> _Statements:
    connection = connections[ready.using]
    quote = connection.ops.quote_name
    tasks, owners = quote(DBTaskResult._meta.db_table), quote(QueuedTask._meta.db_table)
    # ``DBTaskResult.objects.ready()``: READY, and due (``run_after`` is the far future's marker or has come).
    where = "t.status = %s AND (t.run_after = %s OR t.run_after <= %s) AND t.backend_name = %s"
    fixed: list[object] = [ready.backend_name]
    if ready.queue_names is not None:
        where += f" AND t.queue_name IN ({', '.join(['%s'] * len(ready.queue_names))})"
        fixed += ready.queue_names
    if ready.excluded:
        where += f" AND NOT (t.queue_name IN ({', '.join(['%s'] * len(ready.excluded))}))"
        fixed += ready.excluded
    source = f"{tasks} t LEFT OUTER JOIN {owners} q ON q.task_id = t.id"
    # The queue's own order (``DBTaskResult.Meta.ordering``). Only the task row is locked (``OF t``): PostgreSQL
    # cannot lock the nullable side of the outer join. SQLite has no row locks: its transaction is exclusive.
    order = "ORDER BY t.priority DESC, t.run_after ASC, t.enqueued_at ASC LIMIT 1"
    lock = " FOR UPDATE OF t SKIP LOCKED" if vendor == "postgresql" else ""
    # ``DBTaskResult.claim``'s writes: running, since now, this worker added to the task's workers. The claim is
    # the UPDATE of the first task, which returns the row: one statement where a read and a write were two.
    added = "worker_ids || to_jsonb(%s::text)" if vendor == "postgresql" else "json_insert(worker_ids, '$[#]', %s)"
    take = f"UPDATE {tasks} SET status = %s, started_at = %s, worker_ids = {added} WHERE id = ("
    returning = f"RETURNING {rows.reader(DBTaskResult, ready.using).columns}"
    team_table = quote(Team._meta.db_table)
    share_table = quote(FairShare._meta.db_table)
    owned = (f"{take}SELECT t.id FROM {source} WHERE {where} AND q.team_id = %s AND q.workflow_id = %s "
             f"{order}{lock}) {returning}")
    return _Statements(
        # What is queued, per team and workflow (kind 0: the first ready task's priority and enqueue time), and
        # in the same statement what the pick weighs it by (kind 1): the queued teams' policies and share rows,
        # and the floor row. One round trip where two were (issue 33); ``_read_queue`` takes it apart.
        groups=f"WITH g AS (SELECT q.team_id, q.workflow_id, MAX(t.priority) AS priority, MIN(t.enqueued_at) "
               f"AS since FROM {source} WHERE {where} GROUP BY q.team_id, q.workflow_id) "
               "SELECT 0, team_id, workflow_id, priority, since, NULL, NULL, NULL FROM g "
               "UNION ALL SELECT 1, e.id, s.workflow_id, e.queue_weight, s.last_picked, e.max_running, "
               f"e.workflow_max_running, s.served FROM {team_table} e LEFT JOIN {share_table} s ON s.team_id = e.id "
               "WHERE e.id IN (SELECT team_id FROM g) "
               f"UNION ALL SELECT 1, 0, workflow_id, NULL, last_picked, NULL, NULL, served FROM {share_table} "
               f"WHERE team_id = {FLOOR_ROW[0]:d} AND workflow_id = {FLOOR_ROW[1]:d}",
        ownerless=f"{take}SELECT t.id FROM {source} WHERE {where} AND q.task_id IS NULL {order}{lock}) {returning}",
        owned=owned,
        owned_storing=None if vendor != "postgresql" else (
            f"WITH task AS ({owned}), moved AS (INSERT INTO {share_table} (team_id, workflow_id, served, "
            f"last_picked) SELECT * FROM (VALUES {', '.join(['(%s, %s, %s, %s)'] * SHARE_ROWS)}) AS v "
            f"WHERE EXISTS (SELECT 1 FROM task) {_SHARE_UPSERT}) SELECT * FROM task"),
        # Ownerless tasks (a sweep, a schedule tick) are not of any team this worker runs.
        others=f"SELECT 1 FROM {source} WHERE {where} AND (q.team_id IS NULL OR NOT (q.team_id IN (",
        fixed=tuple(fixed))


def _params(ready: ReadyTasks, statements: _Statements, connection: BaseDatabaseWrapper) -> list[object]:
    adapt = connection.ops.adapt_datetimefield_value
    return [str(TaskResultStatus.READY), adapt(get_date_max()), adapt(timezone.now()), *statements.fixed]


def _take(ready: ReadyTasks, sql: str, params: list[object], worker_id: str,
          connection: BaseDatabaseWrapper) -> DBTaskResult | None:
    """Claim the first task ``sql`` (``_Statements.ownerless`` or ``owned``) finds, as ``DBTaskResult.claim``
    does, and return it as claimed; None when there is none (or, on PostgreSQL, another worker holds it)."""
    claim = [str(TaskResultStatus.RUNNING), connection.ops.adapt_datetimefield_value(timezone.now()), worker_id]
    with prepared_cursor(connection) as cursor:
        cursor.execute(sql, [*claim, *params])
        row = cursor.fetchone()
    # Not ``raw``: matching columns to fields at every claim cost more than the statement (``designer.core.rows``).
    return None if row is None else rows.reader(DBTaskResult, ready.using).instance(row)


@dataclass(frozen=True, slots=True)
class Claimed:
    """A task this worker now runs, and whose it is (``team_id`` None: a recovery sweep, a schedule tick)."""

    task: DBTaskResult
    team_id: int | None
    #: What ``claim_next``'s ``prepare`` returned for the task, in the claim's transaction.
    prepared: object = None


def _running() -> tuple[dict[int, int], dict[int, int]]:
    """Tasks running now, per team and per workflow, in one query."""
    teams: Counter[int] = Counter()
    workflows: Counter[int] = Counter()
    for team, workflow, count in (DBTaskResult.objects.running().filter(fair_key__isnull=False)
                                  .values_list("fair_key__team_id", "fair_key__workflow_id")
                                  .annotate(n=Count("pk")).order_by()):
        teams[team] += count
        workflows[workflow] += count
    return dict(teams), dict(workflows)


def _moment(value: datetime | str | None) -> datetime | None:
    """A ``last_picked`` as a raw cursor returns it: aware (PostgreSQL), or naive UTC, as a datetime or text
    (SQLite, by the column's declared type)."""
    if value is None:
        return None
    parsed = value if isinstance(value, datetime) else parse_datetime(value)
    if parsed is None:
        raise ValueError(f"FairShare.last_picked: not a datetime: {value!r}")
    return parsed if timezone.is_aware(parsed) else parsed.replace(tzinfo=UTC)


def _read_queue(rows: Sequence[tuple[Any, ...]]) -> tuple[list[tuple[Any, ...]], dict[int, Policy],
                                                          dict[tuple[int, int], FairShare]]:
    """``_Statements.groups``' rows taken apart: the queued groups (team, workflow, priority, since; team None:
    ownerless tasks), the queued teams' policies, and their share rows with the floor row."""
    groups: list[tuple[Any, ...]] = []
    policies: dict[int, Policy] = {}
    shares: dict[tuple[int, int], FairShare] = {}
    for kind, team, workflow, number, moment, max_running, workflow_max_running, served in rows:
        if not kind:
            groups.append((team, workflow, number, moment))
            continue
        if team:
            policies[team] = limits_of({"queue_weight": number, "max_running": max_running,
                                        "workflow_max_running": workflow_max_running})
        if workflow is not None:
            shares[(team, workflow)] = FairShare(team_id=team, workflow_id=workflow, served=served,
                                                 last_picked=_moment(moment))
    return groups, policies, shares


def _share_params(rows: Sequence[FairShare], connection: BaseDatabaseWrapper) -> list[object]:
    params: list[object] = []
    for row in rows:
        params += [row.team_id, row.workflow_id, row.served,
                   connection.ops.adapt_datetimefield_value(row.last_picked)]
    return params


def _store(rows: Sequence[FairShare], *, using: str) -> None:
    """Write the share rows of one pick in one statement, creating those that do not exist yet (an upsert on
    ``(team, workflow)``: two workers creating a row at once leave one). Each row carries both fields, the one
    it does not move as it was read, so a pick costs one write rather than one per row (issue 33). Written as
    SQL (the same upsert ``bulk_create(update_conflicts=True)`` makes, without building it each pick)."""
    connection = connections[using]
    table = connection.ops.quote_name(FairShare._meta.db_table)
    values = ", ".join(["(%s, %s, %s, %s)"] * len(rows))
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {table} (team_id, workflow_id, served, last_picked) VALUES {values} "
                       f"{_SHARE_UPSERT}", _share_params(rows, connection))


def held_back(ready: ReadyTasks, *, worker_teams: Mapping[int, int], free_slots: int, slots: int) -> bool:
    """Whether every one of the ready ``tasks`` is of a team this worker runs while only its last slot is free,
    so ``claim_next`` would pick none. One read, no lock: a free slot woken by each new run while its worker
    runs that team's work otherwise took the queue's write lock (exclusive on SQLite) and made every read of
    ``claim_next`` for nothing, competing with the very enqueues and runs it waited for (issue 33)."""
    if slots <= 1 or free_slots > 1:
        return False
    here = sorted(team for team, count in worker_teams.items() if count > 0)
    if not here:
        return False
    connection = connections[ready.using]
    statements = _statements(ready, connection.vendor)
    # Ownerless tasks (a sweep, a schedule tick) and other teams' are not held back.
    sql = f"{statements.others}{', '.join(['%s'] * len(here))}))) LIMIT 1"
    with prepared_cursor(connection) as cursor:
        cursor.execute(sql, [*_params(ready, statements, connection), *here])
        return cursor.fetchone() is None


def claim_next(ready: ReadyTasks, *, worker_id: str, worker_teams: Counter[int], free_slots: int,
               slots: int, prepare: Callable[[DBTaskResult], object] | None = None) -> Claimed | None:
    """Claim the next of the ``ready`` tasks fairly; None: none may go. ``prepare(task)`` runs in the claim's
    transaction once the task is taken (``run_worker`` takes a run's lease there); the ``Claimed`` holds what it
    returned, which commits with the claim or not at all."""
    connection = connections[ready.using]
    statements = _statements(ready, connection.vendor)
    with exclusive_transaction(ready.using):
        params = _params(ready, statements, connection)
        with prepared_cursor(connection) as cursor:
            cursor.execute(statements.groups, params)
            groups, policies, shares = _read_queue(cursor.fetchall())
        if not groups:
            return None
        if any(team is None for team, *_ in groups):
            ownerless = _take(ready, statements.ownerless, params, worker_id, connection)
            if ownerless is not None:
                return Claimed(ownerless, None, prepare(ownerless) if prepare is not None else None)
        # The oldest of a group first (``since``: a datetime, or on SQLite its text, which sorts the same).
        groups = sorted((row for row in groups if row[0] is not None), key=lambda row: (-row[2], row[3]))
        if not groups:
            return None
        queued = [Queued(team, workflow, position) for position, (team, workflow, *_) in enumerate(groups)]
        floor_row = shares.get(FLOOR_ROW)
        # Only a limit reads the running counts: without one (the default) the pick needs none of them.
        limited = any(policy.max_running or policy.workflow_max_running for policy in policies.values())
        team_running, workflow_running = _running() if limited else ({}, {})
        load = Load(
            team_running=team_running, workflow_running=workflow_running,
            served={team: row.served for (team, workflow), row in shares.items() if not workflow},
            floor=floor_row.served if floor_row else 0.0,
            last_picked={workflow: row.last_picked or NEVER for (team, workflow), row in shares.items() if workflow},
            worker_teams=worker_teams, free_slots=free_slots, slots=slots)
        picked = choose(queued, policies, load)
        if picked is None:
            return None
        policy = policies[picked.team_id]
        if policy.max_running:
            # Held until commit: another worker deciding for this team waits, then counts this claim too.
            list(FairShare.objects.select_for_update().filter(team_id=picked.team_id, workflow_id=0))
            if _running()[0].get(picked.team_id, 0) >= policy.max_running:
                return None  # another worker took the team's last slot since it was counted
        share = shares.get((picked.team_id, 0))
        served, floor = advance(share.served if share else 0.0, load.floor, policy.weight)
        now = timezone.now()
        floor_picked = floor_row.last_picked if floor_row else None
        workflow_row = shares.get((picked.team_id, picked.workflow_id))
        moved = [FairShare(team_id=picked.team_id, workflow_id=0, served=served, last_picked=now),
                 FairShare(team_id=FLOOR_ROW[0], workflow_id=FLOOR_ROW[1], served=floor, last_picked=floor_picked),
                 FairShare(team_id=picked.team_id, workflow_id=picked.workflow_id,
                           served=workflow_row.served if workflow_row else 0.0, last_picked=now)]
        owned = [*params, picked.team_id, picked.workflow_id]
        if statements.owned_storing is not None:
            # The task and the shares it moves in one round trip (issue 33); nothing moves when none was taken.
            task = _take(ready, statements.owned_storing, [*owned, *_share_params(moved, connection)], worker_id,
                         connection)
        else:
            task = _take(ready, statements.owned, owned, worker_id, connection)
            if task is not None:
                _store(moved, using=ready.using)
        if task is None:
            return None  # taken by another worker meanwhile; the slot asks again
        return Claimed(task, picked.team_id, prepare(task) if prepare is not None else None)


def record_owner(task_id: str, *, team_id: int, workflow_id: int) -> None:
    """Mark a task just enqueued (in this transaction) as work of ``team_id``'s ``workflow_id``. As SQL: every
    run's creation writes one, inside the write lock the worker waits for on SQLite (issue 33)."""
    connection = connections[QueuedTask.objects.db]
    task = QueuedTask._meta.get_field("task").get_db_prep_save(task_id, connection)
    with prepared_cursor(connection) as cursor:
        cursor.execute(f"INSERT INTO {connection.ops.quote_name(QueuedTask._meta.db_table)} "
                       "(task_id, team_id, workflow_id) VALUES (%s, %s, %s)", [task, team_id, workflow_id])

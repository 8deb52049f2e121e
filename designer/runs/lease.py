"""Run leases: who may execute a run right now.

Every transition is a single conditional ``UPDATE`` (``filter(...).update(...)``)
whose row count says whether it happened, so the database, not the Python
process, arbitrates between concurrent workers.

Leases are judged by the database's clock (``lease_now()``): on PostgreSQL every
expiry is written and compared as ``now() + interval`` in SQL, so app servers
whose clocks drift apart still agree on who holds a run. (SQLite lives on one
machine, whose clock every process shares.)

No claim or recovery ever waits on a row lock: a worker frozen inside its
checkpoint transaction (a paused VM, a lost network) keeps the run's row locked
until PostgreSQL ends its session (``idle_in_transaction_session_timeout``,
settings.py). Claims and recovery lock with ``SKIP LOCKED`` and a short
``lock_timeout``, so meanwhile they pass that run by and carry on with the rest.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import DateTimeField, ExpressionWrapper, F, Q
from django.db.models.functions import Now
from django.utils import timezone

from designer.conf import trellis
from designer.core import rows
from designer.core.periodic import PeriodicThread
from designer.core.prepared import prepared_cursor
from designer.models import Run, RunEvent, RunInput, Team, Workflow

#: Statuses in which a run wants a worker.
RUNNABLE = (Run.Status.QUEUED, Run.Status.RUNNING)
#: ... now, or (a waiting run) at its ``wake_at``: what recovery watches.
WANTS_WORKER = (*RUNNABLE, Run.Status.WAITING)

logger = logging.getLogger("designer.runs")


class LeaseLost(Exception):
    """This worker no longer holds the run's lease (it expired and another worker took it, or the run was
    finished elsewhere). The holder must stop without writing anything more."""


def lease_seconds() -> float:
    """Lease length (``TRELLIS_RUN_LEASE_SECONDS``)."""
    return trellis.RUN_LEASE_SECONDS


def new_owner_id() -> str:
    """Unique per execution attempt, readable in the admin (host, pid)."""
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


#: How long a claim or a recovery step waits for a row lock before passing the run by (PostgreSQL).
LOCK_TIMEOUT_MS = 2000


def lease_now() -> Any:
    """"Now" for leases: the database's clock where several machines share the database (PostgreSQL's
    ``now()`` in the statement itself), the process clock on SQLite (one machine)."""
    if connection.vendor == "postgresql":
        return Now()
    return timezone.now()


#: ``expiry_in`` in raw SQL on PostgreSQL (its one parameter: the seconds): the database's clock, as the ORM's
#: ``Now()`` reads it, so every writer of a lease compares and stamps on one clock.
DATABASE_EXPIRY_SQL = "(STATEMENT_TIMESTAMP() + make_interval(secs => %s))"


def expiry_in(seconds: float) -> Any:
    """``lease_now()`` plus ``seconds``, for an UPDATE's value."""
    now = lease_now()
    if isinstance(now, Now):
        return ExpressionWrapper(now + timedelta(seconds=seconds), output_field=DateTimeField())
    return now + timedelta(seconds=seconds)


def _expiry() -> Any:
    return expiry_in(lease_seconds())


def lease_is_free() -> Q:
    """Rows nobody holds: never claimed, released, or expired (the holder died or stalled)."""
    return Q(lease_owner="") | Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=lease_now())


def bounded_lock_wait() -> None:
    """Inside a transaction: let any row lock wait end after ``LOCK_TIMEOUT_MS`` (PostgreSQL) rather than wait
    for a holder that may never come back. ``SET LOCAL`` ends with the transaction."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL lock_timeout = {int(LOCK_TIMEOUT_MS)}")


#: How far before its ``wake_at`` a waiting run may be claimed: the task's ``run_after`` is judged by the
#: worker's clock and the claim by the database's, which may be a little behind. A run claimed before its
#: time just waits again (the engine wakes nothing early) and is enqueued for the same time.
CLOCK_SLACK_SECONDS = 5.0


def claimable() -> Q:
    """Runs a worker may take: runnable ones, and waiting ones whose wake-up time has come (give or take the
    clock slack between the worker that picked the task and the database)."""
    return Q(status__in=RUNNABLE) | Q(status=Run.Status.WAITING, wake_at__lte=expiry_in(CLOCK_SLACK_SECONDS))


def claim(run_id: int, owner: str) -> Run | None:
    """Take the lease of a runnable run (or a waiting one whose time has come); the claimed row, or None when
    it is held, finished, interrupted, waiting for later, or its row is locked by a transaction that has not
    ended (a frozen worker: recovery gets to it once it is released)."""
    with transaction.atomic():
        return take(run_id, owner)


def take(run_id: int, owner: str) -> Run | None:
    """``claim`` in the caller's transaction, as one statement: the lease's conditional UPDATE returns the claimed
    row with its input, where its trace ends (``Run.trace_next``), and the team's slug and the workflow's name the
    worker labels it with (the rest of both is read if ever asked for). ``run_worker`` takes a run's lease in the
    transaction that takes its task from the queue (``executor.claim_ahead``): a transaction fewer per run.

    Written as SQL: the ORM's claim compiled its expressions at every run (a tenth of a one-step run's worker
    time), and the read that followed was a statement of its own (issue 33). On PostgreSQL the row is locked
    by a subquery that skips a row locked by a transaction that has not ended (a frozen worker), rather than
    queue behind it; SQLite has no row locks (the transaction holds the database), so its condition alone
    decides. "Now" is ``lease_now()``'s: the database's clock on PostgreSQL, this process's on SQLite."""
    sql, params = _take_sql(run_id, owner)
    with prepared_cursor(connection) as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    # Not ``Run.objects.raw``: matching its thirty-odd columns to fields at every claim cost ~10x the statement.
    runs = rows.reader(Run, connection.alias)
    run = runs.instance(row)
    team_slug, workflow_name, stored, last = row[len(runs.attnames):]
    run.trace_next = 0 if last is None else last + 1
    run.input_read(None if stored is None else
                   RunInput._meta.get_field("value").from_db_value(stored, None, connection))
    # Only the named fields are loaded; any other is deferred, so reading it queries rather than being wrong.
    team = Team.from_db(connection.alias, ["id", "slug"], [run.team_id, team_slug])
    workflow = Workflow.from_db(connection.alias, ["id", "name"], [run.workflow_id, workflow_name])
    Run._meta.get_field("team").set_cached_value(run, team)
    Run._meta.get_field("workflow").set_cached_value(run, workflow)
    return run


def _take_sql(run_id: int, owner: str) -> tuple[str, list[Any]]:
    """The claim's UPDATE: ``claimable()`` and ``lease_is_free()`` as its condition, the lease, the running status
    and the first start as its values, and the claimed row (``take``) as what it returns."""
    quote = connection.ops.quote_name
    table = quote(Run._meta.db_table)
    params: list[Any] = []
    if connection.vendor == "postgresql":
        def now(plus: float = 0.0) -> str:
            if not plus:
                return "STATEMENT_TIMESTAMP()"
            params.append(plus)
            return DATABASE_EXPIRY_SQL
    else:
        moment = timezone.now()

        def now(plus: float = 0.0) -> str:
            params.append(connection.ops.adapt_datetimefield_value(moment + timedelta(seconds=plus)))
            return "%s"

    # Placeholders are filled in the order they appear, so each part adds its values as it is written.
    params.append(owner)
    sets = f"lease_owner = %s, lease_expires_at = {now(lease_seconds())}, status = %s"
    params.append(str(Run.Status.RUNNING))
    sets += (f", wake_at = NULL, attempts = attempts + 1, started_at = COALESCE(started_at, {now()}), "
             f"budget_started_at = COALESCE(budget_started_at, {now()})")
    params.extend([run_id, str(Run.Status.QUEUED), str(Run.Status.RUNNING), str(Run.Status.WAITING)])
    where = f"id = %s AND (status IN (%s, %s) OR (status = %s AND wake_at <= {now(CLOCK_SLACK_SECONDS)}))"
    where += f" AND (lease_owner = '' OR lease_expires_at IS NULL OR lease_expires_at < {now()})"
    if connection.vendor == "postgresql":
        where += f" AND id = (SELECT l.id FROM {table} l WHERE l.id = %s FOR UPDATE SKIP LOCKED)"
        params.append(run_id)
    columns = rows.reader(Run, connection.alias).columns
    returning = (f"{columns}, (SELECT t.slug FROM {quote(Team._meta.db_table)} t WHERE t.id = {table}.team_id) "
                 f"AS {quote('claimed_team_slug')}, (SELECT w.name FROM {quote(Workflow._meta.db_table)} w "
                 f"WHERE w.id = {table}.workflow_id) AS {quote('claimed_workflow_name')}, (SELECT i.value FROM "
                 f"{quote(RunInput._meta.db_table)} i WHERE i.run_id = {table}.id) AS {quote('claimed_input')}, "
                 f"(SELECT MAX(e.seq) FROM {quote(RunEvent._meta.db_table)} e WHERE e.run_id = {table}.id) "
                 f"AS {quote('claimed_last_seq')}")
    return f"UPDATE {table} SET {sets} WHERE {where} RETURNING {returning}", params


def renew(run_id: int, owner: str) -> None:
    """Extend the lease; ``LeaseLost`` when this owner no longer holds it. Call inside the checkpoint's
    transaction so a worker that lost its lease commits nothing."""
    if not Run.objects.filter(pk=run_id, lease_owner=owner).update(lease_expires_at=_expiry()):
        raise LeaseLost(f"run {run_id}: lease no longer held by {owner}")


def release(run_id: int, owner: str, *, added: dict[str, float] | None = None, **fields: Any) -> bool:
    """Write the final ``fields`` (and add ``added`` to the counters it names) and drop the lease in one UPDATE;
    False when the lease was lost meanwhile. Written as SQL (values as each field stores them): the ORM's UPDATE
    was compiled at every run's end (issue 33). A value that is an expression goes through the ORM."""
    if any(hasattr(value, "resolve_expression") for value in fields.values()):
        counters = {name: F(name) + amount for name, amount in (added or {}).items()}
        return bool(Run.objects.filter(pk=run_id, lease_owner=owner).update(
            lease_owner="", lease_expires_at=None, **fields, **counters))
    quote = connection.ops.quote_name
    sets = ["lease_owner = %s", "lease_expires_at = NULL"]
    values: list[Any] = [""]
    for name, value in fields.items():
        field = Run._meta.get_field(name)
        sets.append(f"{quote(field.column)} = %s")
        values.append(field.get_db_prep_save(value, connection))
    for name, amount in (added or {}).items():
        column = quote(Run._meta.get_field(name).column)
        sets.append(f"{column} = {column} + %s")
        values.append(amount)
    with prepared_cursor(connection) as cursor:
        cursor.execute(f"UPDATE {quote(Run._meta.db_table)} SET {', '.join(sets)} WHERE id = %s AND lease_owner = %s",
                       [*values, run_id, owner])
        return bool(cursor.rowcount == 1)


class Heartbeat(PeriodicThread):
    """Renews a lease from a daemon thread while one superstep runs longer than a lease.

    Dies with the process, which is the point: a killed worker stops renewing and its lease expires.
    A renewal that finds the lease gone just stops; the next checkpoint then fails with ``LeaseLost``.
    """

    failure = "run %s: lease heartbeat failed; retrying"

    def __init__(self, run_id: int, owner: str, interval: float | None = None,
                 renewer: Callable[[int, str], None] | None = None) -> None:
        super().__init__(f"lease-heartbeat-{run_id}")
        self.run_id = run_id
        self.owner = owner
        self.renewer = renewer or renew  # another leased row (a foreach batch) renews its own way
        self.interval = interval if interval is not None else max(lease_seconds() / 3, 0.05)

    def tick(self) -> bool:
        try:
            self.renewer(self.run_id, self.owner)
        except LeaseLost:
            return True
        return False

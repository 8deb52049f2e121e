"""Retention: finished runs, their traces, checkpoint history and batches, and finished task rows are deleted
by policy, so a busy deployment does not keep everything forever.

A team's policy is its own ``retention_days`` / ``retention_runs`` (set by an admin), else the server's
``TRELLIS_RETENTION_DAYS`` / ``TRELLIS_RETENTION_RUNS``. A run is *expired* when it is finished (completed,
failed or cancelled) and either finished longer ago than the days, or is not among the team's newest ``runs``
finished runs. Deleting a run deletes its events, checkpoints, state parts and batches with it (their foreign
keys cascade). A live run (queued, running, waiting, interrupted) is never touched, nor its task row.

The recovery sweep calls ``prune_if_due`` at every link; at most once every ``TRELLIS_RETENTION_INTERVAL_SECONDS``
one sweep claims the prune (a conditional UPDATE of the chain's row) and deletes at most ``PRUNE_LIMIT`` runs;
what is left goes at the next prune. The team admin shows each team's policy and what the next prune deletes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from designer.conf import trellis
from designer.models import RecoveryChain, Run, Team

logger = logging.getLogger("designer.runs")

FINISHED = (Run.Status.COMPLETED, Run.Status.FAILED, Run.Status.CANCELLED)
#: Runs one prune deletes at most (each with its trace and history): a bounded transaction per prune.
PRUNE_LIMIT = 1000
#: Task rows one prune deletes at most.
TASK_LIMIT = 5000


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    days: int  # 0: no age limit
    runs: int  # 0: no count limit
    own: bool  # the team set it (else the server's defaults)

    def describe(self) -> str:
        parts = [f"finished runs older than {self.days} days" if self.days else "",
                 f"beyond the newest {self.runs} finished runs" if self.runs else ""]
        said = " and ".join(part for part in parts if part)
        return f"delete {said}" if said else "keep every finished run"


def policy_for(team: Team) -> RetentionPolicy:
    own = team.retention_days is not None or team.retention_runs is not None
    days = team.retention_days if team.retention_days is not None else trellis.RETENTION_DAYS
    runs = team.retention_runs if team.retention_runs is not None else trellis.RETENTION_RUNS
    return RetentionPolicy(days=days, runs=runs, own=own)


def expired_runs(team: Team, *, now: datetime | None = None) -> QuerySet[Run]:
    """The team's finished runs its policy says to delete (oldest first)."""
    policy = policy_for(team)
    finished = Run.objects.filter(team=team, status__in=FINISHED, finished_at__isnull=False)
    expired = Q(pk__in=[])
    if policy.days:
        expired |= Q(finished_at__lt=(now or timezone.now()) - timedelta(days=policy.days))
    if policy.runs:
        newest = finished.order_by("-finished_at", "-pk").values_list("pk", flat=True)[:policy.runs]
        expired |= ~Q(pk__in=list(newest))
    return finished.filter(expired).order_by("finished_at", "pk")


def expired_task_rows(*, now: datetime | None = None) -> QuerySet[DBTaskResult]:
    """Finished task rows older than ``TRELLIS_RETENTION_TASK_DAYS``, except the row of any live run."""
    cutoff = (now or timezone.now()) - timedelta(days=trellis.RETENTION_TASK_DAYS)
    live = Run.objects.exclude(status__in=FINISHED).exclude(task_result_id="").values_list("task_result_id",
                                                                                          flat=True)
    return DBTaskResult.objects.finished().filter(finished_at__lt=cutoff).exclude(pk__in=list(live)).order_by()


@dataclass(frozen=True, slots=True)
class Pruned:
    runs: int
    task_rows: int


def prune(*, now: datetime | None = None) -> Pruned:
    """Delete up to ``PRUNE_LIMIT`` expired runs (with everything that cascades) and ``TASK_LIMIT`` task rows."""
    left = PRUNE_LIMIT
    deleted_runs = 0
    for team in Team.objects.order_by("pk"):
        if left <= 0:
            break
        with transaction.atomic():
            # Re-checked inside the delete: a run redriven since it was read is live again and is kept.
            pks = list(expired_runs(team, now=now).values_list("pk", flat=True)[:left])
            if pks:
                rows, per_model = Run.objects.filter(pk__in=pks, status__in=FINISHED).delete()
                runs = per_model.get(Run._meta.label, 0)
                deleted_runs += runs
                left -= len(pks)
                logger.info("retention: deleted %d finished runs of team %s (%s), %d rows with their traces and "
                            "history", runs, team.pk, policy_for(team).describe(), rows)
    task_pks = list(expired_task_rows(now=now).values_list("pk", flat=True)[:TASK_LIMIT])
    # Counted by the queue's own rows: the delete also takes each task's QueuedTask with it.
    task_rows = (DBTaskResult.objects.filter(pk__in=task_pks).delete()[1].get(DBTaskResult._meta.label, 0)
                 if task_pks else 0)
    return Pruned(runs=deleted_runs, task_rows=task_rows)


def prune_if_due(*, now: datetime | None = None) -> Pruned | None:
    """Prune when the last prune is older than ``TRELLIS_RETENTION_INTERVAL_SECONDS``; None when not due or
    another sweep claimed it."""
    at = now or timezone.now()
    due = Q(pruned_at__isnull=True) | Q(pruned_at__lte=at - timedelta(seconds=trellis.RETENTION_INTERVAL_SECONDS))
    # The recovery chain's one row (designer.runs.chain.CHAIN), which every sweep already reads.
    if not RecoveryChain.objects.filter(due, pk=1).update(pruned_at=at):
        return None
    return prune(now=at)

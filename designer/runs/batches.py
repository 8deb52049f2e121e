"""Distributed foreach in the designer: batches as rows, each its own ``django.tasks`` task on any worker.

The runtime decides what a batch is (``runtime._batches``); this module
stores and schedules them:

* A run whose engine call ends ``waiting`` has distributed foreach
  activations. ``plan_batches`` (in the transaction that releases the run's
  lease) creates one ``ForeachBatch`` row per batch and enqueues the first
  ``batches_in_flight`` of each activation. The run holds no worker meanwhile.
* ``execute_batch`` claims a batch's lease (a conditional UPDATE, as runs do),
  loads the run's checkpoint, and runs the items of the batch that have no
  ``ForeachBatchItem`` yet with ``Engine.run_batch``. Items that ended are
  committed every ``TRELLIS_BATCH_COMMIT_SECONDS`` in a transaction that renews
  the batch's lease and writes only while this worker holds it. A worker
  killed mid-batch stops renewing; once the lease has expired, recovery
  (``requeue_stale_batches``) enqueues the batch again and the next worker runs
  only the items not committed, so no committed item runs twice.
* An item that fails and backs off before its next attempt (or waits in a
  ``wait`` step) does not hold the worker: once every running item of the
  batch sleeps, ``Engine.run_batch`` ends ``waiting`` and the batch stores its
  own state (``ForeachBatch.state``; the items' snapshot and the scope input
  stay in the run's ``RunStatePart`` rows, shared) and is enqueued again with
  ``run_after`` its ``wake_at``, like a waiting run. The next worker continues
  it from that state (``Engine.continue_batch``): the retry attempts go on
  where they were. A worker that dies in a continued batch restarts its
  uncommitted items from the start, as for any batch.
* When a batch is done, the next pending batch of its activation is enqueued
  in the same transaction; when none of the run's batches is left, the run is
  enqueued again (``wake``), and ``Execution.drive`` joins every activation
  from the committed items (``Engine.join_foreach``) and carries on.

A batch whose workers keep dying (``TRELLIS_RUN_MAX_ATTEMPTS``) is given up:
its uncommitted items fail with ``batch.attempts_exhausted``, counted against
the foreach's failure tolerance like any failed item.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

import pydantic_core
from django.db import transaction
from django.db.models import Count, F, Q, Sum
from django.utils import timezone

from designer.conf import trellis
from designer.models import ForeachBatch, ForeachBatchItem, Run, RunStatePart
from designer.monitoring import metrics, tracing
from designer.runs import budgets, queue, steps, waiting
from designer.runs.checkpointer import append_events, run_state_of
from designer.runs.lease import (
    Heartbeat,
    LeaseLost,
    bounded_lock_wait,
    expiry_in,
    lease_is_free,
    lease_now,
    lease_seconds,
    new_owner_id,
)
from designer.runs.pinning import PinnedResolver
from designer.secrets.services import TeamSecrets
from designer.workflows import catalog
from designer.workflows.resolvers import TeamVersionResolver
from runtime import Engine, RunState
from runtime.document import ForeachNode
from runtime.engine import BatchResult, DistributedForeach, EngineOptions, ItemOutcome
from runtime.state import TraceEvent, parse_run_state

logger = logging.getLogger("designer.runs")

LIVE = (ForeachBatch.Status.QUEUED, ForeachBatch.Status.RUNNING)


def distribute(node: ForeachNode, items: int) -> bool:
    """The engine's ``distribute`` policy: above the server's threshold (the node must set a batch size)."""
    return items > trellis.FOREACH_DISTRIBUTE_ABOVE


def plan_batches(run_id: int, waiting: Iterable[DistributedForeach]) -> int:
    """Create the batch rows of each waiting activation that has none yet and enqueue the first ones. Call in
    the transaction that leaves the run ``waiting``. Returns how many batches are still to finish."""
    for activation in waiting:
        planned = ForeachBatch.objects.filter(run_id=run_id, activation_id=activation.activation_id)
        if planned.exists():
            # Planned by an earlier attempt of this run. Batches re-opened by a redrive (``reopen_items``) are
            # pending with none of the activation's running: start them as the first plan would.
            if not planned.filter(status__in=LIVE).exists():
                for pk in planned.filter(status=ForeachBatch.Status.PENDING).order_by("number").values_list(
                        "pk", flat=True)[:activation.in_flight]:
                    queue.enqueue_batch(pk)
            continue
        rows = ForeachBatch.objects.bulk_create([
            ForeachBatch(run_id=run_id, activation_id=activation.activation_id, node_id=activation.node_id,
                         number=number, start=start, stop=stop)
            for number, (start, stop) in enumerate(activation.batches())
        ])
        for row in rows[:activation.in_flight]:
            queue.enqueue_batch(row.pk)
    return unfinished(run_id)


def reopen_items(run_id: int, activation_id: str, indices: Iterable[int]) -> int:
    """Forget the committed outcomes of ``indices`` (a redrive runs those items again) and put the batches that
    held them back to pending, so ``execute_batch`` runs just those items of them. Call in the transaction that
    saves the re-opened checkpoint; ``plan_batches`` enqueues the batches. Returns how many items were reopened."""
    doomed = ForeachBatchItem.objects.filter(run_id=run_id, activation_id=activation_id, index__in=list(indices))
    per_batch: dict[int, int] = {}
    for batch_id in doomed.values_list("batch_id", flat=True):
        per_batch[batch_id] = per_batch.get(batch_id, 0) + 1
    doomed.delete()
    for batch_id, count in per_batch.items():
        ForeachBatch.objects.filter(pk=batch_id).update(
            status=ForeachBatch.Status.PENDING, committed=F("committed") - count, attempts=0, lease_owner="",
            lease_expires_at=None, finished_at=None)
    return sum(per_batch.values())


def unfinished(run_id: int) -> int:
    return ForeachBatch.objects.filter(run_id=run_id).exclude(
        status__in=(ForeachBatch.Status.DONE, ForeachBatch.Status.CANCELLED)).count()


def outcomes(run_id: int, activation_ids: Iterable[str]) -> dict[str, list[ItemOutcome]]:
    """Every committed item of each activation, for ``Engine.join_foreach``."""
    joined: dict[str, list[ItemOutcome]] = {}
    for activation_id in activation_ids:
        rows = (ForeachBatchItem.objects.filter(run_id=run_id, activation_id=activation_id).order_by("index")
                .values_list("index", "result", "error"))
        joined[activation_id] = [ItemOutcome(index, result, error) for index, result, error in rows.iterator()]
    return joined


def batch_progress(run_id: int) -> dict[str, tuple[int, int]]:
    """Per distributed activation of the run: (committed items, batches running now), for the run page.

    One aggregate over the run's batch rows, summing the counter each commit keeps (``ForeachBatch.committed``):
    the same query however many items have been committed."""
    rows = (ForeachBatch.objects.filter(run_id=run_id).order_by().values("activation_id")
            .annotate(done=Sum("committed"), running=Count("pk", filter=Q(status=ForeachBatch.Status.RUNNING)))
            .values_list("activation_id", "done", "running"))
    return {activation_id: (done or 0, running) for activation_id, done, running in rows}


def wake(run_id: int) -> bool:
    """Enqueue a waiting run whose batches are all over; True when it did. Safe to call from every batch; call in
    the transaction that closed the batch."""
    # The run's row first: batches closing at the same moment on several workers take turns here, so the last one
    # counts every other's close as committed. Without it each (under PostgreSQL's READ COMMITTED) counted the
    # others as unfinished and none woke the run.
    owner = Run.objects.select_for_update().filter(pk=run_id).values_list("team_id", "workflow_id").first()
    if unfinished(run_id):
        return False
    woken = Run.objects.filter(pk=run_id, status=Run.Status.WAITING).update(status=Run.Status.QUEUED)
    if woken:
        queue.enqueue_run(run_id, owner=owner)
    return bool(woken)


# ---------------------------------------------------------------------------
# Executing one batch


def claim(batch_id: int, owner: str) -> ForeachBatch | None:
    with transaction.atomic():
        bounded_lock_wait()
        free = (ForeachBatch.objects.select_for_update(skip_locked=True).filter(pk=batch_id, status__in=LIVE)
                .filter(lease_is_free()).values_list("pk", flat=True))
        if not free:
            return None
        ForeachBatch.objects.filter(pk=batch_id).update(
            lease_owner=owner, lease_expires_at=expiry_in(lease_seconds()), status=ForeachBatch.Status.RUNNING,
            attempts=F("attempts") + 1)
    return ForeachBatch.objects.select_related("run").get(pk=batch_id)


def renew(batch_id: int, owner: str, committed: int = 0) -> None:
    """Extend the batch's lease (and count ``committed`` more items on it) while ``owner`` holds it."""
    fields: dict[str, Any] = {"lease_expires_at": expiry_in(lease_seconds())}
    if committed:
        fields["committed"] = F("committed") + committed
    if not ForeachBatch.objects.filter(pk=batch_id, lease_owner=owner).update(**fields):
        raise LeaseLost(f"foreach batch {batch_id}: lease no longer held by {owner}")


class Committer:
    """Takes the items a batch hands over and commits them at most every ``commit_seconds``, renewing the lease
    in the same transaction (a worker that lost it commits nothing)."""

    def __init__(self, batch: ForeachBatch, owner: str) -> None:
        self.batch = batch
        self.owner = owner
        self.buffer: list[ItemOutcome] = []
        self.last = time.monotonic()
        self.committed = 0
        self.observer = metrics.StepObserver(batch.run.document)
        self.trace: tracing.RunTrace | None = None

    def add(self, ended: tuple[ItemOutcome, ...]) -> None:
        self.buffer.extend(ended)
        if time.monotonic() - self.last >= trellis.BATCH_COMMIT_SECONDS:
            self.flush()

    def flush(self) -> None:
        batch, rows = self.batch, self.buffer
        with transaction.atomic():
            renew(batch.pk, self.owner, committed=len(rows))
            if rows:
                ForeachBatchItem.objects.bulk_create([
                    ForeachBatchItem(run_id=batch.run_id, batch=batch, activation_id=batch.activation_id,
                                     index=outcome.index, error=outcome.error,
                                     result=None if outcome.error is not None
                                     else pydantic_core.to_jsonable_python(outcome.result))
                    for outcome in rows])
                # The run page's counters (Run.items_done/failures), in the transaction that commits the items.
                # That update also locks the run's row, under which the items' trace events join the run's
                # trace (numbered after whatever the run or another batch committed last).
                failed = sum(1 for outcome in rows if outcome.error is not None)
                Run.objects.filter(pk=batch.run_id).update(items_done=F("items_done") + len(rows) - failed,
                                                           failures=F("failures") + failed)
                append_events(batch.run_id, [event for outcome in rows for event in outcome.events])
        # The worker's metrics (designer/monitoring/metrics.py), once the items are committed.
        failed = sum(1 for outcome in rows if outcome.error is not None)
        self.observer.batch_items(done=len(rows) - failed, failed=failed,
                                  events=(event for outcome in rows for event in outcome.events))
        if self.trace is not None:  # the items' step spans (designer/monitoring/tracing.py)
            self.trace.on_superstep(None, [event for outcome in rows for event in outcome.events])
        self.committed += len(rows)
        self.buffer = []
        self.last = time.monotonic()


class CancelCheck:
    """The engine's ``should_cancel`` for a batch: reads the run's cancel flag at most once a second (the engine
    asks at every superstep, and one query per item would cost more than most items do)."""

    INTERVAL = 1.0

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        self.checked = float("-inf")
        self.cancelled = False

    def __call__(self, _runtime_id: str) -> bool:
        now = time.monotonic()
        if not self.cancelled and now - self.checked >= self.INTERVAL:
            self.checked = now
            self.cancelled = Run.objects.filter(pk=self.run_id, cancel_requested=True).exists()
        return self.cancelled


def _finish(batch: ForeachBatch, owner: str, status: str = "done") -> None:
    """Close the batch, enqueue the next pending one of its activation, wake the run when none is left."""
    with transaction.atomic():
        if not ForeachBatch.objects.filter(pk=batch.pk, lease_owner=owner).update(
                status=status, lease_owner="", lease_expires_at=None, finished_at=timezone.now()):
            raise LeaseLost(f"foreach batch {batch.pk}: lease lost before it was closed")
        following = (ForeachBatch.objects.filter(run_id=batch.run_id, activation_id=batch.activation_id,
                                                 status=ForeachBatch.Status.PENDING)
                     .order_by("number").values_list("pk", flat=True).first())
        if following is not None:
            queue.enqueue_batch(following)
        wake(batch.run_id)


def _fail_uncommitted(batch: ForeachBatch, error: dict[str, Any]) -> None:
    done = set(ForeachBatchItem.objects.filter(batch=batch).values_list("index", flat=True))
    failed = ForeachBatchItem.objects.bulk_create([
        ForeachBatchItem(run_id=batch.run_id, batch=batch, activation_id=batch.activation_id, index=index,
                         error={**error, "index": index})
        for index in range(batch.start, batch.stop) if index not in done])
    ForeachBatch.objects.filter(pk=batch.pk).update(committed=F("committed") + len(failed))
    Run.objects.filter(pk=batch.run_id).update(failures=F("failures") + len(failed))


def _stored_state(batch: ForeachBatch) -> tuple[dict[str, Any], list[tuple[int, TraceEvent]]] | None:
    """The state a waiting batch stored, its parts put back (the run's shared ones and its own), and the trace
    events of its items that had not ended (``BatchResult.held``); or None."""
    saved = batch.state
    if not isinstance(saved, dict) or not isinstance(saved.get("data"), dict):
        return None
    data, own = saved["data"], saved.get("parts") or {}
    wanted = [key for key in RunState.parts_left_out(data) if key not in own]
    shared = dict(RunStatePart.objects.filter(run_id=batch.run_id, key__in=wanted).values_list("key", "value"))
    held = [(index, TraceEvent.from_dict(event)) for index, event in saved.get("held") or ()]
    return RunState.join_parts_data(data, {**shared, **own}), held


def _wait(batch: ForeachBatch, owner: str, result: BatchResult, committer: Committer) -> str:
    """Store a batch whose running items all sleep, drop its lease and enqueue it for their wake-up time."""
    assert result.state is not None and result.wake_at is not None
    data, parts = result.state.split_parts()
    shared = set(RunStatePart.objects.filter(run_id=batch.run_id, key__in=list(parts)).values_list("key", flat=True))
    own = {key: value for key, value in parts.items() if key not in shared}
    when = waiting.as_datetime(result.wake_at)
    with transaction.atomic():
        committer.flush()  # the items that ended, with the lease still held
        if not ForeachBatch.objects.filter(pk=batch.pk, lease_owner=owner).update(
                state=pydantic_core.to_jsonable_python({
                    "data": data, "parts": own,
                    # The events of the items still running go on with them to the worker that continues them.
                    "held": [(index, event.to_dict()) for index, event in result.held]}), wake_at=when):
            raise LeaseLost(f"foreach batch {batch.pk}: lease lost before it could wait")
        queue.enqueue_batch(batch.pk, run_after=when)
    return "waiting"


def execute_batch(batch_id: int) -> str:
    """Run one batch if no other worker holds it; ``done``, ``waiting`` (every running item sleeps until a time:
    the batch is queued for then), ``cancelled``, ``skipped`` or ``lease-lost``."""

    owner = new_owner_id()
    batch = claim(batch_id, owner)
    if batch is None:
        return "skipped"
    run = batch.run
    try:
        # Not only while the run waits: it wakes for its own frames (a backoff, a wait step) while its batches
        # run, and a batch claimed meanwhile must go on, not be dropped.
        if run.is_finished or run.cancel_requested:
            _finish(batch, owner, "cancelled")
            return "cancelled"
        if batch.attempts > trellis.RUN_MAX_ATTEMPTS:
            logger.error("foreach batch %s of run %s: giving up after %d attempts", batch.pk, run.pk,
                         batch.attempts - 1)
            with transaction.atomic():
                _fail_uncommitted(batch, {
                    "type": "WorkerLost", "code": "batch.attempts_exhausted", "node_id": batch.node_id,
                    "message": f"{batch.attempts - 1} workers stopped while running batch {batch.number} of "
                               f"foreach {batch.node_id!r}; its uncommitted items are given up"})
            _finish(batch, owner)
            return "done"
        saved = _stored_state(batch)
        if batch.state is not None:
            # Continued once: a worker that dies from here on restarts the uncommitted items from the start
            # (the stored state may hold items this worker goes on to commit).
            ForeachBatch.objects.filter(pk=batch.pk, lease_owner=owner).update(state=None, wake_at=None)
        committed = set(ForeachBatchItem.objects.filter(batch=batch).values_list("index", flat=True))
        left = [index for index in range(batch.start, batch.stop) if index not in committed]
        committer = Committer(batch, owner)
        with tracing.batch_span(run, node_id=batch.node_id, number=batch.number) as committer.trace, \
                Heartbeat(batch.pk, owner, renewer=renew):
            if left:
                engine = Engine(catalog.registry(), EngineOptions(
                    workflows=PinnedResolver(TeamVersionResolver(run.team_id), run.subgraph_versions),
                    should_cancel=CancelCheck(run.pk),
                    max_steps=trellis.RUN_MAX_STEPS, keep_trace=0,
                    # A backoff or a wait step of its items frees the worker (the batch waits, as a run does).
                    sleep_in_process=False, max_retry_delay=waiting.max_retry_delay(),
                    secrets=TeamSecrets(team_id=run.team_id, run_id=run.pk),
                    budget=budgets.budget_for(run),
                    **steps.engine_options()))
                try:
                    with engine:
                        if saved is not None:
                            # The batch's own stored state: its format is validated, as before.
                            result = engine.continue_batch(RunState.model_validate(saved[0]), batch.activation_id,
                                                           workflow=run.document, on_items=committer.add,
                                                           held=saved[1])
                        else:
                            result = engine.run_batch(parse_run_state(run_state_of(run) or {}), batch.activation_id,
                                                      left, workflow=run.document, on_items=committer.add)
                finally:
                    budgets.record_use(run.pk, engine)  # the batch's steps count against the run's budget
                if result.status == "waiting":
                    return _wait(batch, owner, result, committer)
                committer.flush()
                if result.status == "cancelled":
                    _finish(batch, owner, "cancelled")
                    return "cancelled"
                if result.status == "failed":
                    error = result.error.to_dict() if result.error is not None else {}
                    with transaction.atomic():
                        _fail_uncommitted(batch, {"type": "BatchFailed", "node_id": batch.node_id, **error})
        _finish(batch, owner)
        return "done"
    except LeaseLost as exc:
        logger.warning("%s; another worker owns the batch now", exc)
        return "lease-lost"


# ---------------------------------------------------------------------------
# Recovery


def requeue_stale_batches() -> list[int]:
    """Enqueue again every live batch whose lease (or queue deadline) has expired: its worker died, or the queue
    lost it. One conditional UPDATE per batch decides which of several recovering workers does it."""
    stale = list(ForeachBatch.objects.filter(status__in=LIVE).filter(
        Q(lease_expires_at__lt=lease_now()) | Q(lease_expires_at__isnull=True)).values_list("pk", "lease_expires_at"))
    requeued: list[int] = []
    for batch_id, expired_at in stale:
        with transaction.atomic():
            rows = ForeachBatch.objects.filter(pk=batch_id, status__in=LIVE)
            rows = rows.filter(lease_expires_at__isnull=True) if expired_at is None else \
                rows.filter(lease_expires_at=expired_at)
            if not rows.update(lease_owner="", lease_expires_at=timezone.now() + timedelta(seconds=1)):
                continue
            queue.enqueue_batch(batch_id)
        requeued.append(batch_id)
    if requeued:
        logger.warning("re-enqueued %d foreach batch(es) whose worker stopped: %s", len(requeued), requeued)
    return requeued


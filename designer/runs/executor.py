"""Executing one run in a worker: claim the lease, drive ``runtime.Engine``, store the outcome.

Where a run starts depends only on its row, so a worker that picks up a run
after another one died does the right thing without being told:

* no checkpoint yet        -> ``engine.run`` (the first save happens before any task runs);
* a pending ``resume_request`` -> ``engine.resume`` on the interrupted checkpoint; the first save of the
  resumed run clears the request in the same transaction, so it is applied exactly once;
* no checkpoint and a ``fork_request`` -> ``engine.fork`` from the parent run's kept checkpoint; its first
  save clears the request;
* ``redrive_requested`` on a failed checkpoint -> ``engine.redrive`` (only the failed steps run again); its
  first save clears the flag in the same transaction;
* ``redrive_requested`` on a completed checkpoint (a distributed foreach tolerated failed items) ->
  ``engine.redrive_foreach`` from the kept checkpoint that waited for that foreach's batches: its first save
  clears the flag and, in the same transaction, forgets the failed items' outcomes and puts their batches back
  to pending (``batches.reopen_items``), so only those items run again and the join that follows, with the
  completed items' kept outcomes, feeds every node after the foreach again;
* otherwise                -> ``engine.continue_run``, which re-runs the superstep whose commit was lost.

Every save goes through ``OrmCheckpointer`` with this worker as lease owner:
it renews the lease, and a worker whose lease was taken over stops with
``LeaseLost`` having written nothing. Cancellation is the engine's
``should_cancel`` hook, fed by the flag each save reads back and, while a step
runs, by ``steps.CancelWatch``. Task steps run in the worker's pool of step
processes (``designer.runs.steps``), which enforces the step limits.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from designer.conf import trellis
from designer.models import Run, RunCheckpoint, RunValue
from designer.monitoring import metrics, tracing
from designer.runs import batches, budgets, plans, signals, steps, task_backend, waiting
from designer.runs.checkpointer import OrmCheckpointer, checkpoint_state_of, run_state_of
from designer.runs.dispatch import task_named
from designer.runs.history_selectors import TolerantRedrive, tolerated_failures
from designer.runs.lease import Heartbeat, LeaseLost, claim, new_owner_id, release, take
from designer.runs.pinning import PinnedResolver
from designer.secrets.services import TeamSecrets
from designer.workflows import catalog
from designer.workflows.resolvers import TeamVersionResolver
from runtime import Engine, RunResult, RunState, WorkflowError
from runtime.engine import EngineOptions, distributed_foreach
from runtime.errors import CheckpointNotFoundError, RedriveError
from runtime.inspect import run_summary
from runtime.state import Interrupt, TraceEvent, parse_run_state

logger = logging.getLogger("designer.runs")

#: Engine outcomes; each is also the name of the Run status it ends in.
OUTCOMES = frozenset({"completed", "failed", "interrupted", "cancelled", "waiting"})


def interrupt_records(interrupts: Iterable[Interrupt]) -> list[dict[str, Any]]:
    """Open interrupts as ``Run.interrupts`` stores them: the runtime's record plus ``id`` for the pages."""
    return [{"id": record.interrupt_id, **record.to_dict()} for record in interrupts]


def _error(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, WorkflowError):
        return exc.to_dict()
    return {"code": "worker.error", "message": f"the worker failed: {type(exc).__name__}: {exc}"}


class Execution:
    """One attempt at one run by this worker process."""

    def __init__(self, run: Run, owner: str) -> None:
        self.run = run
        self.owner = owner
        self.resume = run.resume_request if isinstance(run.resume_request, dict) else None
        self.redrive = bool(run.redrive_requested)
        #: A completed run's redrive of tolerated foreach items, until its first save has re-opened them.
        self.reopen: TolerantRedrive | None = None
        self.fork = run.fork_request if isinstance(run.fork_request, dict) else None
        # The last checkpoint commits with the outcome (``finish``): one transaction ends the run.
        self.checkpointer = OrmCheckpointer(run.team_id, owner=owner, extra_fields=self._extra_fields,
                                            hold_final=True)
        self.checkpointer.cancel_requested = run.cancel_requested
        if run.runtime_id is not None:
            self.checkpointer.remember(run.runtime_id, run.pk, trace_next=run.trace_next,
                                       unsaved=run.run_state is None)
        #: Whether output values may be kept from an earlier end, to be replaced at this one. Values are written
        #: only in the transaction that ends the run (``finish``) with its last checkpoint and ``Run.output``, and
        #: only ``OrmCheckpointer.delete`` takes a checkpoint away (leaving the output): so a run with neither
        #: never ended with an output, and its values are added without a DELETE (every run's first drive). Not
        #: the checkpoint alone: a run queued again after its checkpoint was deleted starts from nothing, yet
        #: ended once. Not the output alone: a redrive that fails ends with an empty output, yet the
        #: values of the end before it are there (and go).
        self.outputs_kept = run.run_state is not None or run.output is not None
        #: The document the drive runs (``plans.document``), once it started.
        self.document: Any = run.document
        #: The engine of the drive, once it started (its budget meter holds the step-seconds it used).
        self.engine: Engine | None = None
        #: Whether the release that stored the outcome also added the step-seconds used (one UPDATE fewer).
        self.use_recorded = False
        #: The engine's ``on_superstep`` hooks: the worker's metrics, the execution's trace when tracing is on.
        self.observers: list[Callable[[RunState, list[TraceEvent]], object]] = [
            metrics.StepObserver(run.document).on_superstep]

    def _on_superstep(self, run_state: RunState, events: list[TraceEvent]) -> None:
        for observer in self.observers:
            observer(run_state, events)

    def _extra_fields(self, run_state: RunState) -> dict[str, Any]:
        if self.fork is not None:
            self.fork = None
            return {"fork_request": None}
        if self.redrive:
            # The redrive's first save holds its effect (failed frames ready again): drop the request with it.
            self.redrive = False
            if self.reopen is not None:
                batches.reopen_items(self.run.pk, self.reopen.activation_id, self.reopen.indices)
                self.reopen = None
            return {"redrive_requested": False, "status": Run.Status.RUNNING, "error": None, "finished_at": None}
        if self.resume is None:
            return {}
        # The first save after engine.resume records the answer's effect: drop the request with it.
        self.resume = None
        return {"resume_request": None, "status": Run.Status.RUNNING,
                "interrupts": interrupt_records(run_state.interrupts.values()), "error": None}

    def _should_cancel(self, run_id: str) -> bool:
        return self.checkpointer.cancel_requested

    def _cancel_seen(self) -> None:
        self.checkpointer.cancel_requested = True

    def drive(self) -> RunResult:
        run = self.run
        registry, retry_cap = catalog.registry(), waiting.max_retry_delay()
        # The same document object for every run of the same document, and one compile cache (plans.py).
        document = self.document = plans.document(run.team_id, run.document, run.subgraph_versions)
        engine = Engine(registry, EngineOptions(
            workflows=PinnedResolver(TeamVersionResolver(run.team_id), run.subgraph_versions),
            checkpointer=self.checkpointer,
            should_cancel=self._should_cancel,
            max_steps=trellis.RUN_MAX_STEPS,
            keep_trace=0,  # the checkpointer stores every event; holding them too would grow with the run
            distribute=batches.distribute,
            # A backoff or a wait step suspends the run (designer.runs.waiting): no worker sleeps for it.
            sleep_in_process=False,
            max_retry_delay=retry_cap,
            compiled=plans.compiled(registry, retry_cap),
            secrets=TeamSecrets(team_id=run.team_id, run_id=run.pk),
            budget=budgets.budget_for(run),
            on_superstep=self._on_superstep,  # step durations, foreach items, step spans
            **steps.engine_options(),
        ))
        self.engine = engine
        with engine, steps.CancelWatch(run.pk, self._cancel_seen):
            checkpoint = run_state_of(run)
            if checkpoint is None and self.fork is not None:
                return self._start_fork(engine)
            if checkpoint is None:
                return engine.run(document, run.input, run_id=run.runtime_id or Run.runtime_id_for(run.pk))
            # Only what picks the engine call is read from the JSON; the call gets the state parsed and checked.
            summary = run_summary(checkpoint, foreach_limit=0)
            state = parse_run_state(checkpoint)
            if self.redrive and summary.status == "failed":
                return engine.redrive(state, workflow=document)
            if self.redrive and summary.status == "completed":
                return self._redrive_foreach(engine, state)
            if self.resume is not None:
                return engine.resume(state, self.resume["interrupt_id"], self.resume.get("value"),
                                     self.resume.get("label"), workflow=document)
            distributed = list(summary.distributed)
            if summary.status == "waiting" and distributed and not batches.unfinished(run.pk):
                # Every batch of its distributed foreach nodes is over: join them and carry on.
                return engine.join_foreach(state, batches.outcomes(run.pk, distributed),
                                           workflow=document)
            # A run waiting for a wake-up time continues here too: the engine wakes the frames that are due.
            return engine.continue_run(state, workflow=document)

    def _redrive_foreach(self, engine: Engine, checkpoint: RunState) -> RunResult:
        """A completed run's redrive: the tolerated failed items of its first distributed foreach that had any."""
        run = self.run
        plan = tolerated_failures(run)
        row = None if plan is None else RunCheckpoint.objects.filter(run=run, step=plan.step).first()
        if plan is None or row is None:
            raise RedriveError(f"run {run.pk} has no tolerated failed foreach items whose checkpoint is kept to "
                               "run again", run_id=run.runtime_id)
        self.reopen = plan
        kept = parse_run_state(checkpoint_state_of(row))
        return engine.redrive_foreach(kept, checkpoint, activation_id=plan.activation_id, indices=plan.indices,
                                      workflow=self.document)

    def _start_fork(self, engine: Engine) -> RunResult:
        """The first drive of a forked run: from its parent's kept checkpoint, with the checked edits."""
        run, request = self.run, self.fork
        assert request is not None
        row = RunCheckpoint.objects.filter(run_id=run.parent_id, step=request.get("step")).first()
        if row is None:
            raise CheckpointNotFoundError(f"run {run.parent_id} no longer keeps its checkpoint after superstep "
                                          f"{request.get('step')} to fork from", step=request.get("step"))
        origin = parse_run_state(checkpoint_state_of(row))
        return engine.fork(origin, run_id=run.runtime_id or Run.runtime_id_for(run.pk),
                           state=request.get("state"), answer=request.get("answer"), workflow=self.document)

    def finish(self, result: RunResult) -> str:
        status: str = result.status
        if status not in OUTCOMES:
            raise AssertionError(f"unexpected engine outcome {status!r}")
        finished = status not in ("interrupted", "waiting")
        fields: dict[str, Any] = {
            "status": status,
            "output": result.output,
            "error": result.error.to_dict() if result.error is not None else None,
            "interrupts": interrupt_records(result.interrupts),
            "finished_at": timezone.now() if finished else None,
        }
        if not finished:
            # A pause is a normal stop: the attempt limit counts workers lost within one stretch of running.
            fields["attempts"] = 0
        if status == "waiting":
            # Its distributed foreach batches go to the queue with the release, in one transaction: the run holds
            # no worker until the last batch wakes it (batches.wake), or (suspended frames) until its wake_at.
            with transaction.atomic():
                left = batches.plan_batches(self.run.pk, distributed_foreach(result.run_state))
                if result.wake_at is not None:
                    del fields["status"]
                    return waiting.suspend(self.run.pk, self.owner, result.wake_at, **fields)
                if not release(self.run.pk, self.owner, **fields):
                    raise LeaseLost(f"run {self.run.pk}: lease lost before its batches were planned")
                if not left:
                    batches.wake(self.run.pk)
            return status
        # One commit: the engine's last checkpoint (held open by the checkpointer), the outcome and the lease's
        # release, the output's values, what ``run_reached`` writes, and the task's success. A worker that dies
        # before it leaves the run at its previous checkpoint, leased, for recovery to drive again.
        with self.checkpointer.final(), transaction.atomic():
            used = budgets.use_of(self.engine)
            if not release(self.run.pk, self.owner, added={"step_seconds_used": used} if used else None, **fields):
                raise LeaseLost(f"run {self.run.pk}: lease lost before the outcome was stored")
            self.use_recorded = True
            if result.output is not None:
                keep = RunValue.objects.record if self.outputs_kept else RunValue.objects.add
                keep(run_id=self.run.pk, side="output", value=result.output)
            elif self.outputs_kept:
                # The values mirror ``Run.output``, which this end empties: a search must not find the run by
                # an output an earlier end had.
                RunValue.objects.forget(run_id=self.run.pk, side="output")
            signals.run_reached.send(sender=Run, run_id=self.run.pk, status=status, team_id=self.run.team_id,
                                     workflow_id=self.run.workflow_id)
            task_backend.succeed(status)  # what ``execute_run`` returns
        return status

    def fail(self, exc: BaseException) -> str:
        """Store a failure that happened outside the engine's own handling (nothing ran, or the worker broke).

        A refused resume answer is not a failed run: the run stays interrupted with the error shown."""
        if self.resume is not None and isinstance(exc, WorkflowError) and exc.code == "resume.invalid":
            release(self.run.pk, self.owner, status="interrupted", resume_request=None, error=_error(exc))
            return "interrupted"
        with transaction.atomic():
            if release(self.run.pk, self.owner, status="failed", error=_error(exc), resume_request=None,
                       finished_at=timezone.now()):
                signals.run_reached.send(sender=Run, run_id=self.run.pk, status="failed")
        return "failed"


@dataclass(frozen=True, slots=True)
class Ahead:
    """A run's lease taken in the transaction that took its ``execute_run`` task from the queue: the owner, and
    the claimed row (None: the run was not claimable, so the task has nothing to do)."""

    run_id: int
    owner: str
    run: Run | None


#: The lease ``execute`` is handed on this thread (``ahead``), for the run it is about to execute.
_ahead = threading.local()


def claim_ahead(task: Any) -> Ahead | None:
    """For ``run_worker``'s claim of a queued task (a django-tasks-db row), inside its transaction: when the task
    executes a run, take the run's lease there too (``lease.take``), so the claim and the lease are one
    transaction, not two in a row (issue 33: on SQLite each takes the database's one write lock that the API
    creating runs wants as well). None for any other task."""
    if task.task_path != task_named("execute_run").module_path:
        return None
    args = (task.args_kwargs or {}).get("args") or []
    if len(args) != 1 or not isinstance(args[0], int) or isinstance(args[0], bool):
        return None  # not a call ``execute_run`` accepts: the task fails as it would have
    owner = new_owner_id()
    return Ahead(args[0], owner, take(args[0], owner))


@contextlib.contextmanager
def ahead(taken: object) -> Iterator[None]:
    """While the block runs the task ``taken`` was prepared for (``claim_ahead``), on this thread."""
    _ahead.value = taken if isinstance(taken, Ahead) else None
    try:
        yield
    finally:
        _ahead.value = None


def _taken(run_id: int) -> Ahead | None:
    """The lease taken ahead on this thread if it is ``run_id``'s."""
    taken: Ahead | None = getattr(_ahead, "value", None)
    return taken if taken is not None and taken.run_id == run_id else None


def taken_ahead(run_id: int) -> bool:
    """Whether ``run_worker`` took ``run_id``'s lease with its task, for the ``execute`` about to run on this
    thread."""
    return _taken(run_id) is not None


def _claimed(run_id: int) -> tuple[str, Run | None]:
    """The lease ``execute`` runs under: the one taken ahead for this run, else one claimed now."""
    taken = _taken(run_id)
    _ahead.value = None  # used once: a task that executes a run twice claims it the second time
    if taken is not None:
        return taken.owner, taken.run
    owner = new_owner_id()
    return owner, claim(run_id, owner)


def execute(run_id: int) -> str:
    """Run ``run_id`` if no other worker holds it; the status it ended in, ``skipped`` or ``lease-lost``."""
    owner, run = _claimed(run_id)
    if run is None:
        return "skipped"
    execution = Execution(run, owner)
    # A run that kills every worker that touches it (a task that exhausts memory, say) must not be
    # recovered forever.
    if run.attempts > trellis.RUN_MAX_ATTEMPTS:
        logger.error("run %s: giving up after %d attempts", run_id, run.attempts - 1)
        with transaction.atomic():
            if release(run.pk, owner, status="failed", finished_at=timezone.now(),
                       error={"code": "run.attempts_exhausted",
                              "message": f"{run.attempts - 1} workers stopped while executing this run; giving up"}):
                signals.run_reached.send(sender=Run, run_id=run.pk, status="failed")
        return "failed"
    if run.runtime_id is None:
        Run.objects.filter(pk=run.pk).update(runtime_id=Run.runtime_id_for(run.pk))
        run.runtime_id = Run.runtime_id_for(run.pk)
    team = metrics.team_label(run.team_id, slug=run.team.slug)  # the claim read the team already
    metrics.EXECUTIONS_STARTED.labels(team).inc()
    outcome = "failed"
    with tracing.run_span(run, team=team) as run_trace:
        if run_trace is not None:
            execution.observers.append(run_trace.on_superstep)
        try:
            # The outcome is stored before the heartbeat stops: the final checkpoint's transaction is open until
            # then, and a renewal under way waits for it (the run's row lock, SQLite's write lock).
            with Heartbeat(run.pk, owner):
                result = execution.drive()
                outcome = execution.finish(result)
        except LeaseLost as exc:
            execution.checkpointer.settle()
            logger.warning("%s; another worker owns the run now", exc)
            outcome = "lease-lost"
        except Exception as exc:
            execution.checkpointer.settle()  # a final checkpoint commits, as it did before its outcome failed
            if not isinstance(exc, WorkflowError):
                logger.exception("run %s: unexpected error in the worker", run_id)
            outcome = execution.fail(exc)
        finally:
            if not execution.use_recorded:
                budgets.record_use(run.pk, execution.engine)
            metrics.EXECUTIONS_FINISHED.labels(team, outcome).inc()
            tracing.finish(run_trace, outcome)
    return outcome

"""Redrive a failed run, re-run a run, fork a new run from a past checkpoint.

Like the other run services, each is one transaction that records the intent
on a run row and enqueues ``execute_run``; the worker does the rest
(``designer.runs.executor``): ``engine.redrive`` for a row with
``redrive_requested``, ``engine.fork`` for a new row with a ``fork_request``.
Every rule (what can be redriven, what a fork may edit and how the edits are
checked) is the runtime's (``runtime.check_redrive``, ``runtime.check_fork``);
a refusal here is the same refusal the worker would meet, given before
anything is queued.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from designer.core.errors import BadRequest, DesignerError, ObjectNotFound, ResumeInvalid, RunConflict
from designer.models import Run, RunCheckpoint, WorkflowVersion
from designer.runs import queue
from designer.runs.checkpointer import checkpoint_state_of
from designer.runs.checkpoints import checkpoint_of
from designer.runs.history_selectors import tolerated_failures
from designer.runs.pinning import pin_subgraph_versions
from designer.runs.selectors import is_locked, lock_run
from designer.runs.services import runner_on
from designer.workflows.analysis import analyze_document, dump_document, parse_document
from designer.workflows.resolvers import TeamVersionResolver
from runtime import RunState
from runtime.errors import ResumeError
from runtime.inspect import ForkEdits, check_fork, check_redrive, check_run_input

RERUN_VERSIONS = ("same", "current")


@transaction.atomic
def redrive_run(*, actor: Any, run: Run | int) -> Run:
    """``redrive_locked`` of the run (or its id), read once, locked, with the caller's access (``lock_run``)."""
    return redrive_locked(actor=actor, run=lock_run(user=actor, run_id=run if isinstance(run, int) else run.pk))


def redrive_locked(*, actor: Any, run: Run) -> Run:
    """Queue a failed run to run again from its last checkpoint: only its failed steps and items run again,
    under the same document and pinned subgraph versions; the trace goes on with a new attempt.

    A completed run whose distributed foreach tolerated failed items can be redriven too: it re-opens as its
    next attempt from the kept checkpoint that waited for that foreach's batches (the first such foreach), only
    the failed items run again, the completed ones keep their results, and every node after the foreach runs
    again with the new result list (``Engine.redrive_foreach``).

    ``run``: as the caller read it with ``lock_run`` in the transaction it is in; it is answered as written (the
    queue's own columns, its deadline and the task's id, are not read back)."""
    assert is_locked(run), "a redrive checks and changes the run as lock_run read it, in its transaction"
    runner_on(actor, run)
    locked = run
    checkpoint = checkpoint_of(locked)  # a damaged checkpoint is refused (runstate.corrupt) before anything else
    redrivable = (Run.Status.FAILED, Run.Status.COMPLETED)
    if locked.status not in redrivable or locked.redrive_requested:
        raise RunConflict(f"run {run.pk} is {locked.status}; only a failed run (or a completed one whose "
                          "foreach tolerated failed items) can be redriven", status=locked.status)
    if checkpoint is None:
        raise RunConflict(f"run {run.pk} failed before its first checkpoint: nothing ran that could run again; "
                          "re-run it instead", status=locked.status)
    if locked.status == Run.Status.COMPLETED:
        plan = tolerated_failures(locked)
        if plan is None:
            raise RunConflict(f"run {run.pk} completed and no foreach item of it failed: nothing to run again; "
                              "re-run it instead", status=locked.status)
        if not plan.kept:
            raise RunConflict(f"run {run.pk} no longer keeps its checkpoint after superstep {plan.step}, where "
                              f"foreach {plan.node_id!r} waited for its batches (TRELLIS_CHECKPOINT_HISTORY sets "
                              "how many are kept); re-run it instead", status=locked.status, step=plan.step)
    else:
        check_redrive(checkpoint.state)  # RedriveError (409) when nothing in it failed that can run again
    locked.redrive_requested = True
    locked.status = Run.Status.QUEUED
    locked.error = None
    locked.finished_at = None
    locked.attempts = 0  # counts workers lost within one stretch of running, as after a resume
    # A new run attempt has its budgets whole again (designer/runs/budgets.py).
    locked.budget_started_at = None
    locked.step_seconds_used = 0.0
    locked.save(update_fields=["redrive_requested", "status", "error", "finished_at", "attempts",
                               "budget_started_at", "step_seconds_used"])
    queue.enqueue_run(locked.pk, owner=(locked.team_id, locked.workflow_id))
    locked.lease_owner = ""  # as enqueue_run left it
    return locked


def stored_run(run: Run) -> tuple[dict[str, Any], dict[str, int]]:
    """The document and pinned subgraph versions ``run`` ran with, checked: ``RunConflict`` (409) naming the
    field when what is stored no longer reads (a document the runtime refuses today, pins that are not
    ``{workflow id: version}``), so a re-run or fork of it is refused instead of failing in the worker."""
    pins = run.subgraph_versions if run.subgraph_versions is not None else {}
    if not isinstance(pins, dict) or not all(
            isinstance(key, str) and isinstance(value, int) and not isinstance(value, bool)
            for key, value in pins.items()):
        raise RunConflict(f"run {run.pk}'s stored subgraph_versions is not a map of workflow id to version "
                          f"number (got {type(pins).__name__}); re-run it with version=current instead",
                          field="subgraph_versions")
    try:
        parse_document(run.document)
    except DesignerError as exc:
        raise RunConflict(f"run {run.pk}'s stored document no longer validates ({exc.message}); re-run it "
                          "with version=current instead", field="document") from None
    return run.document, dict(pins)


def _new_run(*, actor: Any, origin: Run, document: dict[str, Any], version: WorkflowVersion | None,
             pins: dict[str, Any], input: dict[str, Any], **fields: Any) -> Run:
    run = Run.objects.create(
        team_id=origin.team_id, workflow=origin.workflow, workflow_version=version, document=document,
        input=input, subgraph_versions=pins, status=Run.Status.QUEUED, parent=origin,
        created_by=actor if getattr(actor, "is_authenticated", False) else None, **fields,
    )
    run.runtime_id = Run.runtime_id_for(run.pk)
    run.save(update_fields=["runtime_id"])
    queue.enqueue_run(run.pk, owner=(run.team_id, run.workflow_id))
    # Not read back: the new run is what was written (its workflow, version and starter already at hand), but for
    # the queue's own columns (its deadline, the task's id).
    run.lease_owner = ""
    return run


@transaction.atomic
def rerun(*, actor: Any, run: Run, input: object = None, version: object = "same") -> Run:
    """A new run with ``run``'s input (or ``input``, edited) and either the ``same`` document and pinned
    subgraph versions, or the ``current`` one: the latest published version for a run of a version, the
    workflow's draft as it is now for a run of the draft. The new run links to ``run`` as its parent."""
    runner_on(actor, run)
    if version not in RERUN_VERSIONS:
        raise BadRequest(f"version is one of {', '.join(RERUN_VERSIONS)}, got {version!r}", field="version")
    run_input = run.input if input is None else input
    if not isinstance(run_input, dict):
        raise BadRequest(f"a run's input is a JSON object, got {type(run_input).__name__}", field="input")
    workflow = run.workflow
    chosen = run.workflow_version
    if version == "same":
        document, pins = stored_run(run)
    else:
        if run.workflow_version_id is not None:
            chosen = WorkflowVersion.objects.filter(workflow=workflow).order_by("-number").first()
            assert chosen is not None  # the run's own version is one
            document = chosen.document
        else:
            parsed = parse_document(workflow.document)
            analyze_document(parsed, team=workflow.team_id).raise_for_errors()
            document = dump_document(parsed)
        pins = pin_subgraph_versions(parse_document(document), TeamVersionResolver(workflow.team_id))
    check_run_input(document, run_input)  # InputValidationError: 400 with per-field errors
    return _new_run(actor=actor, origin=run, document=document, version=chosen, pins=pins, input=run_input)


def kept_checkpoint(run: Run, step: object) -> RunCheckpoint:
    """The kept checkpoint of ``run`` after superstep ``step``; ``ObjectNotFound`` naming the steps that are kept."""
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise BadRequest("step is the number of a superstep of the run (0 or more)", field="step")
    row = RunCheckpoint.objects.filter(run=run, step=step).first()
    if row is None:
        kept = list(RunCheckpoint.objects.filter(run=run).values_list("step", flat=True))
        shown = f"{kept[0]}..{kept[-1]}" if kept else "none"
        raise ObjectNotFound(f"run {run.pk} keeps no checkpoint after superstep {step} (kept: {shown}; "
                             "TRELLIS_CHECKPOINT_HISTORY sets how many are kept)", step=step, field="step")
    return row


def checked_fork(run: Run, row: RunCheckpoint, *, state: object, answer: object) -> ForkEdits:
    if state is not None and not isinstance(state, dict):
        raise BadRequest(f"state is the run's whole state as a JSON object, got {type(state).__name__}",
                         field="state")
    if answer is not None and not isinstance(answer, dict):
        raise BadRequest("answer is {interrupt_id, value, label?}", field="answer")
    origin = RunState.from_json(checkpoint_state_of(row))
    try:
        return check_fork(run.document, origin, state=state, answer=answer)
    except ResumeError as exc:
        raise ResumeInvalid(exc.message, interrupt_id=exc.details.get("interrupt_id"),
                            errors=exc.details.get("errors"), field="answer") from None


@transaction.atomic
def fork_run(*, actor: Any, run: Run, step: object, state: object = None, answer: object = None) -> Run:
    """A new run that goes on from ``run``'s kept checkpoint after superstep ``step``, with its root ``state``
    replaced (checked against the state schema) and/or an interrupt open there answered (checked against its
    resume schema). Same document and pinned versions; the new run links to ``run`` and the superstep."""
    runner_on(actor, run)
    row = kept_checkpoint(run, step)
    document, pins = stored_run(run)
    edits = checked_fork(run, row, state=state, answer=answer)
    request = {"step": row.step, "state": edits.state, "answer": edits.answer}
    return _new_run(actor=actor, origin=run, document=document, version=run.workflow_version,
                    pins=pins, input=run.input, forked_from_step=row.step,
                    fork_request=request)

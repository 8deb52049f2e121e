"""Starting, answering and cancelling runs.

Each service is one transaction that records the caller's intent on the run
row and, when a worker is needed, enqueues ``execute_run`` in the same
transaction (with the database task backend the task row commits together
with the run, so a crash can never leave one without the other). The worker
does everything else; see ``designer.runs``.
"""

from __future__ import annotations

from typing import Any, Final

from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from designer.access.permissions import (
    WorkflowAccess,
    require_access,
    require_own_team_access,
    require_workflow_role,
)
from designer.core.errors import BadRequest, NotPublished, ObjectNotFound, ResumeInvalid, RunConflict
from designer.models import Run, Workflow
from designer.runs import queue
from designer.runs.checkpoints import checkpoint_of
from designer.runs.lease import lease_is_free
from designer.runs.pinning import pin_subgraph_versions
from designer.runs.selectors import is_locked, lock_run, run_access
from designer.workflows.analysis import analyze_document, dump_document, parse_document
from designer.workflows.resolvers import TeamVersionResolver
from designer.workflows.selectors import get_version, versions_of
from runtime.errors import ResumeError
from runtime.inspect import check_resume, check_run_input


def _check_input(data: object) -> dict[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise BadRequest(f"a run's input is a JSON object, got {type(data).__name__}", field="input")
    return data


#: ``version`` of a run of the workflow's current draft: asked for by name, since a run that names no version
#: runs the latest published one (as webhooks and schedules do).
DRAFT: Final = "draft"
#: ``version`` of a run of the workflow's newest published version.
LATEST: Final = "latest"


def _check_version(workflow: Workflow, version: object) -> int | None:
    """The published version number ``version`` asks for, or None for the draft."""
    if version == DRAFT:
        return None
    if version == LATEST:
        latest = versions_of(workflow).aggregate(latest=Max("number"))["latest"]
        if latest is None:
            raise NotPublished(f"workflow {workflow.name!r} has no published version to run: publish it, or ask "
                               f"for the draft with version \"draft\"", field="version")
        return int(latest)
    if isinstance(version, bool) or not isinstance(version, int):
        raise BadRequest(f"version is a published version number or \"draft\" (the current draft), got "
                         f"{version!r}", field="version")
    return version


def start_run(*, actor: Any, workflow: Workflow, input: object = None, version: object = DRAFT,
              access: WorkflowAccess | None = None) -> Run:
    """Record a run of ``workflow`` (a published ``version`` number, ``LATEST`` or ``DRAFT``) and enqueue it.
    A draft must be free of errors; its document is snapshotted, so editing it later does not change what
    runs. Code names what it runs; the HTTP API's default, when a request names nothing, is ``LATEST``.
    ``access``: what the calling view read of the actor's access in this request; when it shows ``runner`` or
    above on this workflow for this actor, it is not read again."""
    if access is None or not access.proves(actor, workflow, "runner"):
        require_workflow_role(actor, workflow, "runner")
    return begin_run(workflow=workflow, input=input, version=version,
                     created_by=actor if getattr(actor, "is_authenticated", False) else None)


def begin_run(*, workflow: Workflow, input: object, version: object, created_by: Any = None) -> Run:
    """``start_run`` without the permission check, for starters that were authorised when they were set up
    (a webhook's secret, a schedule): records the run and enqueues it, or raises with nothing recorded.

    Everything that only reads and checks (the version, the draft's analysis, the input, the subgraph pins)
    happens before the transaction that writes: on SQLite that transaction holds the database's one write lock
    from its start, and a caller starting runs back to back held it nearly all the time, so the worker that
    was to run them waited (issue 33). What is read here is what a transaction on PostgreSQL (read committed)
    would see of it too: another writer's commit in between may show or not."""
    run_input = _check_input(input)
    number = _check_version(workflow, version)
    workflow_version = None
    if number is None:
        document = parse_document(workflow.document)
        # Refuse now, with every diagnostic, rather than fail later in the worker.
        analyze_document(document, team=workflow.team_id).raise_for_errors()
        snapshot = dump_document(document)
    else:
        workflow_version = get_version(workflow=workflow, number=number)
        snapshot = workflow_version.document
        document = parse_document(snapshot)
    # The engine checks again; checking here turns a bad input into a 400 with per-field errors. Both read the
    # document parsed once (validating it is most of a creation's CPU after the analysis: issue 33).
    check_run_input(document, run_input)
    pins = pin_subgraph_versions(document, TeamVersionResolver(workflow.team_id))
    run = Run(team_id=workflow.team_id, workflow=workflow, workflow_version=workflow_version, document=snapshot,
              subgraph_versions=pins, created_by=created_by)
    with transaction.atomic():
        queue.enqueue_new_run(run, run_input)
    return run


def _open_interrupt_ids(run: Run) -> set[str]:
    ids: set[str] = set()
    for record in run.interrupts or []:
        if isinstance(record, dict) and isinstance(record.get("id"), str):
            ids.add(record["id"])
    return ids


def runner_on(actor: Any, run: Run) -> None:
    """The runner role (as starting a run needs) on ``run``'s workflow, from the access ``get_run`` or ``lock_run``
    read with the run (read now only for a run loaded otherwise): ``ObjectNotFound`` without any access,
    ``ActionForbidden`` below runner."""
    access = run_access(actor, run)
    if access is None:
        raise ObjectNotFound("this run does not exist or is not shared with you", run=run.pk)
    require_access(access, "runner", what="this run")


def _runner_may_act(actor: Any, run: Run) -> None:
    assert is_locked(run), "an action checks and changes the run as lock_run read it, in its transaction"
    runner_on(actor, run)


def _run_id(run: Run | int) -> int:
    return run if isinstance(run, int) else run.pk


@transaction.atomic
def resume_run(*, actor: Any, run: Run | int, interrupt_id: object, value: object = None,
               label: object = None) -> Run:
    """Answer one open interrupt of an interrupted run; a worker applies the answer and continues.

    The answer is stored on the row (``resume_request``) before the task is enqueued, so a worker that dies
    before its next checkpoint leaves it for the one that recovers the run. ``run``: the run or its id; it is
    read once, locked, with the caller's access (``lock_run``).
    """
    return resume_locked(actor=actor, run=lock_run(user=actor, run_id=_run_id(run)), interrupt_id=interrupt_id,
                         value=value, label=label)


def resume_locked(*, actor: Any, run: Run, interrupt_id: object, value: object = None, label: object = None) -> Run:
    """``resume_run`` of a run the caller read with ``lock_run`` in the transaction it is in (a view that looked
    at the run before answering, so the run is read once). Nothing is written when it refuses. The run it
    answers is ``run`` as written; the queue's own columns (its deadline, the task's id) are not read back."""
    _runner_may_act(actor, run)
    if not isinstance(interrupt_id, str) or not interrupt_id:
        raise BadRequest("interrupt_id names one of the run's open interrupts", field="interrupt_id")
    if label is not None and (not isinstance(label, str) or not label):
        raise BadRequest("label is a non-empty string or null", field="label")
    # A damaged checkpoint is refused before anything else (CorruptRunStateError, runstate.corrupt): its
    # interrupts column cannot be trusted to describe a state that cannot be read.
    checkpoint = checkpoint_of(run)
    # A waiting run may have open questions too (another frame of it sleeps until a time).
    if run.status not in (Run.Status.INTERRUPTED, Run.Status.WAITING) or run.resume_request:
        raise RunConflict(
            f"run {run.pk} is {run.status}; only a run waiting for an answer can be resumed",
            status=run.status,
        )
    if interrupt_id not in _open_interrupt_ids(run):
        raise RunConflict(
            f"run {run.pk} has no open interrupt {interrupt_id!r}",
            interrupt_id=interrupt_id,
            open_interrupts=sorted(_open_interrupt_ids(run)),
        )
    try:
        if checkpoint is None:
            raise ResumeError(f"run {run.pk} has no checkpoint to resume", interrupt_id=interrupt_id)
        chosen, checked = check_resume(checkpoint.state, interrupt_id, value, label)
    except ResumeError as exc:
        raise ResumeInvalid(exc.message, interrupt_id=interrupt_id, errors=exc.details.get("errors")) from None
    asked = next((r for r in run.interrupts or [] if isinstance(r, dict) and r.get("id") == interrupt_id), {})
    run.resume_request = {"interrupt_id": interrupt_id, "value": checked, "label": chosen}
    run.answers = [*(run.answers or []), {
        "interrupt_id": interrupt_id, "node_id": asked.get("node_id", ""), "prompt": asked.get("prompt", ""),
        "label": chosen, "value": checked, "by": actor.get_username(), "at": timezone.now().isoformat(),
    }]
    run.status = Run.Status.QUEUED
    run.save(update_fields=["resume_request", "answers", "status"])
    queue.enqueue_run(run.pk, owner=(run.team_id, run.workflow_id))
    run.lease_owner = ""  # as enqueue_run left it: no worker holds the run until one takes the task
    return run


@transaction.atomic
def cancel_run(*, actor: Any, run: Run | int) -> Run:
    """Cancel a run. A run no worker holds (queued, waiting, interrupted, or orphaned by a dead worker) is cancelled
    at once; a running one is flagged and its worker stops at the next superstep. ``run``: the run or its id;
    it is read once, locked, with the caller's access (``lock_run``), and answered as written."""
    locked = lock_run(user=actor, run_id=_run_id(run))
    _runner_may_act(actor, locked)
    return _cancel(locked)


def _cancel(run: Run) -> Run:
    """Cancel ``run``, locked by the caller: a conditional UPDATE, since whether a worker holds the lease is the
    database clock's word (``lease_is_free``); no row changes meanwhile, so ``run`` is given what was written."""
    now = timezone.now()
    stopped = (
        Run.objects.filter(pk=run.pk, status__in=(Run.Status.QUEUED, Run.Status.RUNNING, Run.Status.INTERRUPTED,
                                                  Run.Status.WAITING))
        .filter(lease_is_free() | Q(status__in=(Run.Status.INTERRUPTED, Run.Status.WAITING)))
        .update(
            status=Run.Status.CANCELLED,
            cancel_requested=True,
            resume_request=None,
            finished_at=now,
            lease_owner="",
            lease_expires_at=None,
        )
    )
    if stopped:
        run.status, run.cancel_requested, run.resume_request = Run.Status.CANCELLED, True, None
        run.finished_at, run.lease_owner, run.lease_expires_at = now, "", None
        return run
    if run.status != Run.Status.RUNNING:
        raise RunConflict(f"run {run.pk} has already finished ({run.status})", status=run.status)
    Run.objects.filter(pk=run.pk).update(cancel_requested=True)
    run.cancel_requested = True
    return run


@transaction.atomic
def cancel(*, run_id: int) -> Run:
    """``cancel_run`` without the permission check, for the admin action and internal callers."""
    return _cancel(Run.objects.select_related("workflow", "workflow_version", "created_by")
                   .select_for_update(of=("self",)).get(pk=run_id))


@transaction.atomic
def delete_run(*, actor: Any, run: Run) -> None:
    """Delete a run with its trace and checkpoint, whatever its checkpoint holds (a damaged one included).

    A run a live worker holds is refused: cancel it first, so the worker is not left writing into nothing.
    """
    # Run history belongs to the workflow's own team: a team it is shared with may run it, not erase its runs.
    # The caller's access as ``get_run`` read it with the run (read now for a run loaded otherwise).
    require_own_team_access(run_access(actor, run), "editor", action="delete its runs")
    held = Run.objects.select_for_update().filter(pk=run.pk, status=Run.Status.RUNNING).exclude(lease_is_free())
    if held.exists():
        raise RunConflict(f"run {run.pk} is running in a worker; cancel it, then delete it", status=run.status)
    Run.objects.filter(pk=run.pk).delete()

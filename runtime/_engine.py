"""The Engine: the one object callers use to run, resume and continue workflows."""

from __future__ import annotations

import copy
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

from runtime._algo import fork_state, forkable, mint, reopen_foreach
from runtime._analysis import analyze
from runtime._batches import BatchResult, ItemOutcome, ItemTraces, batch_state
from runtime._budget import BudgetMeter
from runtime._compile_cache import CompileCache
from runtime._compiled import CompiledWorkflow, compile_workflow
from runtime._diagnostics import Diagnostic
from runtime._document import ForeachNode, TaskNode, Workflow, WorkflowRef, fully_frozen
from runtime._errors import (
    CorruptRunStateError,
    EngineOptionsError,
    NodeFailedError,
    ResumeError,
    WorkflowError,
    WorkflowValidationError,
)
from runtime._ids import RandomIds
from runtime._inspect import check_fork
from runtime._loop import LoopConfig, RunLoop
from runtime._options import EngineOptions
from runtime._parts import adopt as adopt_lists
from runtime._registry import TaskRegistry, default_registry
from runtime._resolver import as_resolver
from runtime._secrets import MappingSecrets, SecretResolver
from runtime._state import (
    ROOT_SCOPE_ID,
    SCOPE_FIELDS,
    Interrupt,
    RunState,
    RuntimeScope,
    given_run_state,
    new_run_state,
    run_state_to_change,
    trusted_full,
)
from runtime._trace import TraceEvent, summarize
from runtime._twins import layout_twin

RunStatus = Literal["completed", "interrupted", "waiting", "failed", "cancelled"]

_CACHE_LIMIT = 256


def retry_delay_diagnostics(workflow: Workflow, limit: float) -> list[Diagnostic]:
    """A ``retry.delay_too_long`` error for each task node of ``workflow`` whose retry policy waits longer than
    ``limit`` seconds in total (the backoffs before all of its attempts, as ``RetryPolicy.total_delay``)."""
    found: list[Diagnostic] = []
    for node in workflow.nodes:
        if not isinstance(node, TaskNode) or node.retry is None:
            continue
        total = node.retry.total_delay()
        if total > limit:
            found.append(Diagnostic(
                "retry.delay_too_long", "error", node.id, "retry",
                f"node {node.id!r}: its retry policy waits {total:g} s in total between its "
                f"{node.retry.max_attempts} attempts; the limit is {limit:g} s",
                hint="lower max_attempts, backoff_seconds, backoff_multiplier or max_backoff_seconds",
                data={"total_seconds": total, "limit_seconds": limit}))
    return found


def step_timeout_diagnostics(workflow: Workflow, cap: float) -> list[Diagnostic]:
    """A ``step.timeout_capped`` warning for each timeout ``workflow`` sets above ``cap`` seconds, the engine's
    ``step_timeout`` cap (a node's ``timeout_seconds``, the document's ``step_timeout_seconds``): the engine
    stops such a step at the cap, so the value typed would never be what happens."""
    found: list[Diagnostic] = []
    hint = f"set it to {cap:g} s or less, or ask the operator to raise the server's cap"
    if workflow.step_timeout_seconds is not None and workflow.step_timeout_seconds > cap:
        found.append(Diagnostic(
            "step.timeout_capped", "warning", None, "step_timeout_seconds",
            f"the workflow's step timeout is {workflow.step_timeout_seconds:g} s, but this server stops every "
            f"step after {cap:g} s", hint=hint,
            data={"timeout_seconds": workflow.step_timeout_seconds, "cap_seconds": cap}))
    for node in workflow.nodes:
        if isinstance(node, TaskNode) and node.timeout_seconds is not None and node.timeout_seconds > cap:
            found.append(Diagnostic(
                "step.timeout_capped", "warning", node.id, "timeout_seconds",
                f"node {node.id!r}: its timeout is {node.timeout_seconds:g} s, but this server stops every step "
                f"after {cap:g} s", hint=hint,
                data={"timeout_seconds": node.timeout_seconds, "cap_seconds": cap}))
    return found


@dataclass(frozen=True, slots=True)
class RunResult:
    """What one engine call ended with.

    ``trace`` holds the events of this call only: the last ``keep_trace`` of
    them (``DEFAULT_KEEP_TRACE``, 1,000, unless the engine says otherwise).
    ``trace_omitted`` counts the events of this call left out of ``trace``,
    and ``trace_kept_by`` names where every event went when the engine has
    somewhere to send them (``"checkpointer"``, ``"trace_sink"``,
    ``"on_superstep"``); empty, the omitted events are gone. ``run_state`` is the engine's state object after the call:
    pass it to ``resume``, which never modifies it (a stored one: ``runtime.state.parse_run_state`` first).

    ``waiting`` (only from an engine with ``sleep_in_process=False``): frames
    are suspended until ``wake_at`` (Unix time, the earliest of them) for a
    retry's backoff or a ``wait`` step, and nothing else can run now. Call
    ``continue_run`` with ``run_state`` at or after ``wake_at``; before it,
    the call changes nothing.

    ``error`` (a run a step failed): a ``NodeFailedError`` naming the node, whose ``__cause__`` is what it raised,
    with its type, message and causes but no traceback (its frames held the engine's record of the step: a
    reference cycle per failed step; log the traceback inside the task if it is needed).
    """

    status: RunStatus
    output: Any
    state: dict[str, Any]
    run_state: RunState
    trace: tuple[TraceEvent, ...]
    interrupts: tuple[Interrupt, ...]
    error: WorkflowError | None
    wake_at: float | None = None
    trace_omitted: int = 0
    trace_kept_by: tuple[str, ...] = ()

    @property
    def run_id(self) -> str:
        return self.run_state.run_id

    def to_dict(self, *, trace: bool = False) -> dict[str, Any]:
        """JSON-compatible form, used by the command line and APIs."""
        data: dict[str, Any] = {
            "run_id": self.run_id,
            "status": self.status,
            "output": self.output,
            "state": self.state,
            "interrupts": [i.to_dict() for i in self.interrupts],
            "error": self.error.to_dict() if self.error is not None else None,
        }
        if self.wake_at is not None:
            data["wake_at"] = self.wake_at
        if trace:
            data["trace"] = [event.to_dict() for event in self.trace]
        return data


_RUN_RESULT_TWIN = layout_twin(RunResult)


class Engine:
    """Runs workflow documents with tasks from ``registry`` (None: the default registry), as ``options`` say.

    ``options`` (``EngineOptions``, a frozen value; None: every default) holds everything else: how subgraphs
    are found, where checkpoints go, the hooks, the step limits and how waiting is done; its docstring
    describes each field. ``Engine.options`` is the value given, so a host can derive a variant with
    ``dataclasses.replace``.

    What the engine can stop in its own process: an **async** task is
    cancelled at its deadline (``asyncio.timeout``) and fails with
    ``step.timeout`` at once, if it awaits (a coroutine that blocks the event
    loop without awaiting cannot be interrupted). A **sync** task runs in a
    thread, and Python cannot stop a thread from outside: it runs to its end,
    then fails with ``step.timeout`` if it took longer than its limit, its
    result discarded. Memory cannot be limited in-process at all, and
    cancellation is seen between supersteps. To really end runaway steps, give
    the engine a ``step_executor`` (``StepExecutor``): every task step then
    runs through it (sync and async alike), and the executor enforces the
    timeout, memory and cancellation, e.g. by killing a child process; the
    engine polls ``should_cancel`` while it waits so a cancel ends a running
    step, and a step stopped by cancellation cancels the run without
    committing its superstep.

    Every method that continues a run takes its ``RunState``; turning stored JSON into one is the caller's
    step (``runtime.state.parse_run_state``), which checks it and fails closed (``runstate.corrupt``).
    """

    def __init__(self, registry: TaskRegistry | None = None, options: EngineOptions | None = None) -> None:
        if options is None:
            options = EngineOptions()
        elif not isinstance(options, EngineOptions):
            raise EngineOptionsError(f"Engine's options must be an EngineOptions, not {type(options).__name__} "
                                     f"(the keywords moved into runtime.engine.EngineOptions)",
                                     field="options", value=options)
        self.options = options
        self.registry = registry if registry is not None else default_registry
        self.resolver = as_resolver(options.workflows)
        self.checkpointer = options.checkpointer
        self.ids = options.ids if options.ids is not None else RandomIds()
        self.max_workers = options.max_workers or min(32, (os.cpu_count() or 1) + 4)
        self.max_retry_delay = options.max_retry_delay
        self.clock = options.clock if options.clock is not None else time.time
        secrets = options.secrets
        # A binding may name a secret; its value is revealed to that step only (runtime._secrets).
        self.secrets: SecretResolver | None = MappingSecrets(secrets) if isinstance(secrets, Mapping) else secrets
        # What is left of the run's budgets; the meter counts the step-seconds this engine's calls use.
        self.budget_meter = BudgetMeter(options.budget) if options.budget is not None else None
        self._compiled = options.compiled if options.compiled is not None else CompileCache(_CACHE_LIMIT)
        self._loop_config: LoopConfig | None = None
        self._known: dict[str, Workflow] = {}
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    # -- lifecycle ------------------------------------------------------------------

    def _get_pool(self) -> ThreadPoolExecutor:
        if self._pool is None:
            with self._lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(max_workers=self.max_workers, thread_name_prefix="trellis-task")
        return self._pool

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- documents --------------------------------------------------------------------

    def compile(self, workflow: Workflow) -> CompiledWorkflow:
        """Validate ``workflow`` with the analyzer (once per document object) and prepare it to run.

        The plan is cached by the document's identity, which is sound because documents are frozen down to the
        JSON values in them (a changed document is a new object); one that is not (``model_construct``) is
        compiled again at every call. The cache is ``EngineOptions.compiled`` when given (shared with other
        engines), else the engine's own. Raises ``WorkflowValidationError`` listing every problem.
        """
        hit = self._compiled.get(workflow)
        if hit is not None:
            return hit
        analyze(workflow, registry=self.registry, workflows=self.resolver).raise_for_errors()
        if self.max_retry_delay is not None:
            too_long = retry_delay_diagnostics(workflow, self.max_retry_delay)
            if too_long:
                raise WorkflowValidationError(
                    f"workflow {workflow.id!r} is invalid: " + "; ".join(d.message for d in too_long),
                    diagnostics=too_long)
        plan = compile_workflow(workflow, self.registry)
        if not fully_frozen(workflow):  # built with model_construct: it could change under a cached plan
            return plan
        self._compiled.put(workflow, plan)
        return plan

    def _config(self) -> LoopConfig:
        """The loops' configuration, made once: every run loop of this engine reads it and none changes it (a
        batch changes a copy of its own), and making it was a tenth of a one-node run's cost."""
        made = self._loop_config
        if made is not None:
            return made
        o = self.options
        made = self._loop_config = LoopConfig(
            ids=self.ids, resolver=self.resolver, compile=self.compile, pool=self._get_pool,
            checkpointer=self.checkpointer, on_superstep=o.on_superstep, should_cancel=o.should_cancel,
            max_depth=o.max_depth, max_steps=o.max_steps, keep_trace=o.keep_trace,
            trace_sink=o.trace_sink, step_timeout=o.step_timeout,
            max_result_bytes=o.max_result_bytes, step_executor=o.step_executor, distribute=o.distribute,
            sleep_in_process=o.sleep_in_process, clock=self.clock, secrets=self.secrets,
            budget=self.budget_meter,
        )
        return made

    @staticmethod
    def _document(workflow: Workflow | Mapping[str, Any]) -> Workflow:
        return workflow if isinstance(workflow, Workflow) else Workflow.model_validate(workflow)

    def _remember(self, workflow: Workflow) -> None:
        if self._known.get(workflow.id) is workflow:  # run again: nothing to change, no lock to take
            return
        with self._lock:
            if len(self._known) >= _CACHE_LIMIT and workflow.id not in self._known:
                self._known.pop(next(iter(self._known)))
            self._known[workflow.id] = workflow

    def _root_workflow(self, run_state: RunState, workflow: Workflow | Mapping[str, Any] | None) -> Workflow:
        if workflow is not None:
            return self._document(workflow)
        known = self._known.get(run_state.workflow.id)
        if known is not None:
            return known
        return self.resolver.resolve(run_state.workflow)

    # -- starting ----------------------------------------------------------------------

    def _start(self, workflow: Workflow | Mapping[str, Any], input: Any, run_id: str | None) -> RunLoop:
        # The calls of a run of a document run before are taken inline here (its cached plan, the document already
        # remembered, the loops' config already made): this is the fixed cost of every run.
        document = workflow if isinstance(workflow, Workflow) else self._document(workflow)
        plan = self._compiled.get(document) or self.compile(document)
        checked = plan.check_input(input)
        if self._known.get(document.id) is not document:
            self._remember(document)
        ref = plan.ref or WorkflowRef(id=document.id)
        rs = new_run_state(run_id or self.ids.run_id(), ref)
        loop = RunLoop(self._loop_config or self._config(), rs, plan)
        sched = loop.scheduler
        frame_id = mint(rs, self.ids, "frame")
        # Every value here is the engine's own (the input was just checked): see runtime._state.trusted.
        rs.scopes[ROOT_SCOPE_ID] = trusted_full(RuntimeScope, {
            "scope_id": ROOT_SCOPE_ID, "workflow": ref, "parent_scope_id": None, "caller_frame_id": None,
            "root_frame_id": frame_id, "depth": 0, "input": checked, "state": plan.initial_state(),
        }, SCOPE_FIELDS)
        frame = sched.new_frame(None, ROOT_SCOPE_ID, plan.start or "", "root", None, frame_id)
        loop.recorder.emit("run_started", frame, summary={"workflow": document.id, "input": summarize(checked)})
        if plan.start is None:
            sched.finish_scope(rs.scopes[ROOT_SCOPE_ID], frame)
        else:
            rs.ready.append(frame_id)  # Scheduler.enqueue: the new frame is ready already
        return loop

    def _reopen(self, run_state: RunState, workflow: Workflow | Mapping[str, Any] | None, where: str) -> RunLoop:
        rs = run_state_to_change(run_state, where)
        rs.check()  # a caller's object may have been changed since it was parsed: it is as much from outside
        adopt_lists(rs)
        plan = self.compile(self._root_workflow(rs, workflow))
        return RunLoop(self._config(), rs, plan)

    @staticmethod
    def _check_resumable(loop: RunLoop) -> None:
        # A waiting run may have open interrupts too (another frame sleeps until a time).
        if loop.rs.status not in ("interrupted", "waiting"):
            raise ResumeError(f"run {loop.rs.run_id!r} is {loop.rs.status}, not interrupted; nothing to resume",
                              run_id=loop.rs.run_id, status=loop.rs.status)

    # -- results -----------------------------------------------------------------------

    def _settle_and_drive(self, loop: RunLoop) -> RunResult:
        """Checkpoint what was just applied to ``loop`` (a start, resume, redrive, fork), run it until it stops,
        and say how it ended."""
        loop.checkpoint(loop.settle())
        loop.drive()
        return self._result(loop)

    async def _asettle_and_drive(self, loop: RunLoop) -> RunResult:
        """``_settle_and_drive`` with the checkpointer's and the tasks' async paths."""
        await loop.acheckpoint(loop.settle())
        await loop.adrive()
        return self._result(loop)

    @staticmethod
    def _result(loop: RunLoop) -> RunResult:
        rs = loop.rs
        error: WorkflowError | None = None
        if rs.status == "failed":
            failure = loop.scheduler.failure
            if failure is not None:
                error = failure.to_error()
            elif loop.stop_error is not None:
                error = loop.stop_error
            elif rs.error is not None:
                details = {k: v for k, v in rs.error.items() if k not in ("code", "message")}
                error = NodeFailedError(str(rs.error.get("message", "the run failed")), **details)
        scope = rs.scopes.get(ROOT_SCOPE_ID)
        status = rs.status
        # RunResult(...) by its layout twin (runtime._twins): once per call, a third of the constructor's cost.
        # tests/runtime/test_engine.py pins the result to the constructor, field by field.
        result: Any = _RUN_RESULT_TWIN()
        result.status = status
        result.output = rs.output if status == "completed" else None
        result.state = scope.state if scope is not None else {}
        result.run_state = rs
        result.trace = tuple(loop.recorder.kept())
        result.interrupts = tuple(rs.interrupts.values()) if rs.interrupts else ()
        result.error = error
        result.wake_at = rs.wake_at if status == "waiting" else None
        result.trace_omitted = loop.recorder.omitted()
        result.trace_kept_by = loop.trace_kept_by()
        result.__class__ = RunResult
        made: RunResult = result
        return made

    # -- synchronous API --------------------------------------------------------------

    def run(self, workflow: Workflow | Mapping[str, Any], input: Any = None, *, run_id: str | None = None
            ) -> RunResult:
        """Validate the workflow and its input, then run until completed, interrupted, failed or cancelled."""
        loop = self._start(workflow, input, run_id)
        return self._settle_and_drive(loop)

    def resume(self, run_state: RunState, interrupt_id: str, value: Any,
               label: str | None = None, *, workflow: Workflow | Mapping[str, Any] | None = None) -> RunResult:
        """Answer one open interrupt with ``value`` (and optionally a label) and continue.

        ``workflow`` is the root document; without it the engine uses the one
        it last ran under that id, else asks its resolver.
        """
        loop = self._reopen(run_state, workflow, "Engine.resume")
        self._check_resumable(loop)
        loop.apply_resume(interrupt_id, value, label)
        return self._settle_and_drive(loop)

    def continue_run(self, run_state: RunState, *,
                     workflow: Workflow | Mapping[str, Any] | None = None) -> RunResult:
        """Carry on a run from its last checkpoint (after a crash); a finished run is returned as it is.

        The superstep that was in flight when the process died runs again, so
        tasks see at-least-once execution.
        """
        loop = self._reopen(run_state, workflow, "Engine.continue_run")
        loop.drive()
        return self._result(loop)

    def redrive(self, run_state: RunState, *,
                workflow: Workflow | Mapping[str, Any] | None = None) -> RunResult:
        """Run a failed run again from its last checkpoint: only the steps that failed (and the foreach items
        they were part of) run again; completed items keep their results.

        The run keeps its id and counts a new ``attempt``; its trace goes on with a ``run_redriven`` event
        that opens the attempt's section. ``workflow`` is the root document the run ran (pass the pinned one);
        ``RedriveError`` when the run did not fail or nothing in it can run again.
        """
        loop = self._reopen(run_state, workflow, "Engine.redrive")
        loop.apply_redrive()
        return self._settle_and_drive(loop)

    def redrive_foreach(self, checkpoint: RunState,
                        latest: RunState, *, activation_id: str,
                        indices: Sequence[int], workflow: Workflow | Mapping[str, Any] | None = None) -> RunResult:
        """Redrive the tolerated failed items ``indices`` of a completed run's distributed foreach.

        A redrive of a completed run re-opens it as its next attempt from ``checkpoint``, the kept checkpoint
        taken while the activation ``activation_id`` waited for its batches (e.g. ``checkpointer.load_at`` of
        the step before the ``foreach_completed`` event); ``latest`` is the run's last checkpoint. The result is
        ``waiting`` again, with a ``run_redriven`` event naming the items: the host runs batches of ``indices``
        only and calls ``join_foreach`` with every item's outcome, the completed items' kept ones and the new
        ones, so the foreach's results hold the new results in index order and every node after the foreach
        runs again and sees them. ``RedriveError`` when the checkpoints do not fit (``_algo.reopen_foreach``).
        """
        before = run_state_to_change(checkpoint, "Engine.redrive_foreach")
        last = given_run_state(latest, "Engine.redrive_foreach")
        last.check()
        wanted = list(indices)
        from_step = before.step
        reopen_foreach(before, last, activation_id, wanted)
        loop = self._reopen(before, workflow, "Engine.redrive_foreach")
        loop.mark_foreach_redrive(activation_id, wanted, from_step)
        loop.checkpoint(loop.settle())
        return self._result(loop)

    def _fork(self, run_state: RunState, run_id: str | None,
              state: Mapping[str, Any] | None, answer: Mapping[str, Any] | None,
              workflow: Workflow | Mapping[str, Any] | None) -> RunLoop:
        origin = given_run_state(run_state, "Engine.fork")
        origin.check()
        forkable(origin)
        plan = self.compile(self._root_workflow(origin, workflow))
        edits = check_fork(plan.workflow, origin, state=None if state is None else dict(state), answer=answer)
        forked = fork_state(origin, run_id or self.ids.run_id(), state=edits.state)
        adopt_lists(forked)
        loop = RunLoop(self._config(), forked, plan)
        loop.mark_fork(origin.run_id, origin.step, edits.edited)
        if edits.answer is not None:
            loop.apply_resume(edits.answer["interrupt_id"], edits.answer["value"], edits.answer["label"])
        return loop

    def fork(self, run_state: RunState, *, run_id: str | None = None,
             state: Mapping[str, Any] | None = None, answer: Mapping[str, Any] | None = None,
             workflow: Workflow | Mapping[str, Any] | None = None) -> RunResult:
        """Start a new run from a past checkpoint of another (``run_state``, e.g. ``checkpointer.load_at``).

        With nothing edited, the new run does what the original did from that superstep on. ``state``
        replaces the root scope's state (checked against the state schema: ``InputValidationError`` with
        per-field ``errors``); ``answer`` (``interrupt_id``, ``value``, optional ``label``) answers an
        interrupt open at that checkpoint, checked against its resume schema (``ResumeError``). The new run's
        trace opens with a ``run_forked`` event naming the origin run and superstep. ``ForkError`` when the
        checkpoint is finished (completed, failed or cancelled) or the answer names no open interrupt.
        """
        loop = self._fork(run_state, run_id, state, answer, workflow)
        return self._settle_and_drive(loop)

    # -- asynchronous API ---------------------------------------------------------------

    async def arun(self, workflow: Workflow | Mapping[str, Any], input: Any = None, *, run_id: str | None = None
                   ) -> RunResult:
        loop = self._start(workflow, input, run_id)
        return await self._asettle_and_drive(loop)

    async def aresume(self, run_state: RunState, interrupt_id: str, value: Any,
                      label: str | None = None, *, workflow: Workflow | Mapping[str, Any] | None = None
                      ) -> RunResult:
        loop = self._reopen(run_state, workflow, "Engine.aresume")
        self._check_resumable(loop)
        loop.apply_resume(interrupt_id, value, label)
        return await self._asettle_and_drive(loop)

    async def aredrive(self, run_state: RunState, *,
                       workflow: Workflow | Mapping[str, Any] | None = None) -> RunResult:
        loop = self._reopen(run_state, workflow, "Engine.aredrive")
        loop.apply_redrive()
        return await self._asettle_and_drive(loop)

    async def afork(self, run_state: RunState, *, run_id: str | None = None,
                    state: Mapping[str, Any] | None = None, answer: Mapping[str, Any] | None = None,
                    workflow: Workflow | Mapping[str, Any] | None = None) -> RunResult:
        loop = self._fork(run_state, run_id, state, answer, workflow)
        return await self._asettle_and_drive(loop)

    async def acontinue_run(self, run_state: RunState, *,
                            workflow: Workflow | Mapping[str, Any] | None = None) -> RunResult:
        loop = self._reopen(run_state, workflow, "Engine.acontinue_run")
        await loop.adrive()
        return self._result(loop)

    # -- distributed foreach -------------------------------------------------------------

    def run_batch(self, run_state: RunState, activation_id: str,
                  indices: Sequence[int], *, workflow: Workflow | Mapping[str, Any] | None = None,
                  on_items: Callable[[tuple[ItemOutcome, ...]], Any] | None = None) -> BatchResult:
        """Run the items ``indices`` of the distributed activation ``activation_id`` of a waiting run.

        ``on_items(outcomes)`` receives the items that ended in each superstep, after it (an exception from it
        stops the batch there: a host that lost its lease raises). The run state is not changed; every item
        failure is an outcome, never a failed batch.
        """
        # Lists grow in place: keep the caller's object as it was.
        source = run_state_to_change(run_state, "Engine.run_batch")
        source.check()
        activation = source.activations.get(activation_id)
        if activation is None or not activation.distributed:
            raise CorruptRunStateError(f"run {source.run_id!r} has no distributed foreach activation "
                                       f"{activation_id!r}", activation_id=activation_id)
        plan = self.compile(self._root_workflow(source, workflow))
        scope = source.scopes.get(activation.scope_id)
        if scope is None:
            raise CorruptRunStateError(f"distributed activation {activation_id!r} is in scope "
                                       f"{activation.scope_id!r}, which does not exist", activation_id=activation_id)
        # A foreach inside a subgraph call belongs to that subgraph's document (pinned by the resolver).
        here = plan if scope.scope_id == ROOT_SCOPE_ID else self.compile(self.resolver.resolve(scope.workflow))
        node = here.nodes.get(activation.node_id)
        if not isinstance(node, ForeachNode):
            raise CorruptRunStateError(f"activation {activation_id!r} belongs to {activation.node_id!r}, which is "
                                       f"no foreach of workflow {here.id!r}", activation_id=activation_id)
        state = batch_state(source, activation_id, indices, node.max_concurrency)
        adopt_lists(state)
        return self._drive_batch(state, activation_id, plan, on_items, fresh=True)

    def continue_batch(self, batch_state: RunState, activation_id: str, *,
                       workflow: Workflow | Mapping[str, Any] | None = None,
                       on_items: Callable[[tuple[ItemOutcome, ...]], Any] | None = None,
                       held: Iterable[tuple[int, TraceEvent]] = ()) -> BatchResult:
        """Continue a batch that ended ``waiting`` (``BatchResult.state``) once its wake-up time has come: the
        suspended items run on from where they slept (their retry attempt, a wait's result), then the items it
        had not started. Before the time it ends ``waiting`` again at once, having run nothing. ``held``: the
        waiting batch's ``BatchResult.held``, so those items' outcomes carry their whole trace."""
        state = run_state_to_change(batch_state, "Engine.continue_batch")
        activation = state.activations.get(activation_id)
        if state.status != "waiting" or activation is None or activation.only is None:
            raise CorruptRunStateError(f"run {state.run_id!r}: no waiting batch of foreach activation "
                                       f"{activation_id!r} to continue", activation_id=activation_id)
        adopt_lists(state)
        plan = self.compile(self._root_workflow(state, workflow))
        return self._drive_batch(state, activation_id, plan, on_items, fresh=False, held=held)

    def _drive_batch(self, state: RunState, activation_id: str, plan: CompiledWorkflow,
                     on_items: Callable[[tuple[ItemOutcome, ...]], Any] | None, *, fresh: bool,
                     held: Iterable[tuple[int, TraceEvent]] = ()) -> BatchResult:
        activation = state.activations[activation_id]
        wanted = activation.only or []
        done: list[ItemOutcome] = []
        pending: list[ItemOutcome] = []
        traces = ItemTraces(activation_id, held)

        def flush(_rs: RunState, _events: list[TraceEvent]) -> None:
            if pending:
                # After the superstep: every event of the items that ended in it has been made.
                batch = tuple(ItemOutcome(outcome.index, outcome.result, outcome.error, traces.take(outcome.index))
                              for outcome in pending)
                pending.clear()
                done.extend(batch)
                if on_items is not None:
                    on_items(batch)

        config = copy.copy(self._config())
        config.checkpointer, config.on_superstep, config.keep_trace, config.trace_sink = None, flush, 0, traces
        config.distribute = None  # a batch runs its items itself, nested foreach nodes included
        # With sleep_in_process=False a batch whose running items all sleep ends "waiting" (BatchResult.state),
        # so its worker is free meanwhile; otherwise its backoffs sleep in it.
        loop = RunLoop(config, state, plan)
        traces.state = loop.rs
        loop.scheduler.on_batch_item = lambda index, result, failed: pending.append(
            ItemOutcome(index, result, None if failed is None else failed["error"]))
        if not fresh:
            loop.drive()
        elif wanted:
            loop.scheduler.admit(state.activations[activation_id])
            loop.drive()
        else:
            state.status = "completed"
        flush(state, [])
        if state.status == "waiting" and state.wakeups:
            return BatchResult("waiting", tuple(done), state=state, wake_at=state.wake_at, held=traces.left())
        if state.status == "interrupted":
            # The analyzer refuses interrupts in a batched body; one reached anyway (inside a subgraph) has nobody
            # to answer it: its item fails.
            left = state.activations.get(activation_id)
            unfinished = [] if left is None else [
                state.frames[frame_id].metadata["foreach"]["index"] for frame_id in left.running
                if frame_id in state.frames] + list((left.only or [])[left.next_index:])
            stuck = tuple(ItemOutcome(index, None, {
                "type": "BatchInterruptError", "code": "foreach.batch_interrupt", "node_id": activation.node_id,
                "index": index, "message": f"item {index} reached an interrupt inside a distributed batch of "
                                           f"foreach {activation.node_id!r}; a batch cannot pause for an answer",
            }) for index in sorted(unfinished))
            pending.extend(stuck)
            flush(state, [])
            return BatchResult("completed", tuple(done))
        if state.status == "cancelled":
            return BatchResult("cancelled", tuple(done))
        if state.status != "completed":
            error = loop.stop_error or NodeFailedError(str((state.error or {}).get("message", "the batch failed")))
            return BatchResult("failed", tuple(done), error)
        return BatchResult("completed", tuple(done))

    def join_foreach(self, run_state: RunState,
                     outcomes: Mapping[str, Iterable[ItemOutcome]], *,
                     workflow: Workflow | Mapping[str, Any] | None = None) -> RunResult:
        """Meet the barriers of a waiting run's distributed activations (``{activation_id: every item's
        outcome}``) and continue the run."""
        loop = self._reopen(run_state, workflow, "Engine.join_foreach")
        rs = loop.rs
        if rs.status != "waiting":
            raise ResumeError(f"run {rs.run_id!r} is {rs.status}, not waiting for distributed batches",
                              run_id=rs.run_id, status=rs.status)
        rs.step += 1
        rs.status = "running"
        for activation_id, items in outcomes.items():
            loop.scheduler.join_distributed(activation_id, items)
        return self._settle_and_drive(loop)

"""The run loop: supersteps of prepare, execute, commit, checkpoint.

A superstep takes every ready frame in queue order. *Prepare*
(``runtime._algo.prepare_step``) reads the scope for each of them before
anything is written, so every frame of a superstep sees the same state.
*Execute* calls the tasks: sync tasks in a bounded thread pool, async ones
concurrently on an event loop, and a lone sync task directly, since a thread
hop would cost more than most tasks do. *Commit* applies the outcomes in
queue order through the ``Scheduler``; new frames join the queue in that
order (item frames by index), so the resulting state and trace order do not
depend on timing. Then the checkpointer receives the state and the
superstep's events.

The sync and async drivers share one superstep sequence (``RunLoop._steps``,
a generator of the effects that differ: execute, checkpoint, sleep); each
driver only performs those effects its own way.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from runtime._algo import (
    PrepareRules,
    Recorder,
    Scheduler,
    Work,
    prepare_step,
    reset_failed,
    wake_time,
)
from runtime._budget import BudgetMeter
from runtime._checkpoint import AsyncCheckpointer, Checkpointer
from runtime._compiled import CompiledWorkflow
from runtime._context import RuntimeContext
from runtime._document import (
    BranchNode,
    ForeachNode,
    InterruptNode,
    RetryPolicy,
    SubgraphNode,
    TaskNode,
    Workflow,
    WorkflowRef,
)
from runtime._errors import (
    CorruptRunStateError,
    ResumeError,
    StepCancelledError,
    StepLimitError,
    StepResultTooLargeError,
    StepTimeoutError,
    TaskResultError,
    WorkflowError,
    drop_tracebacks,
)
from runtime._group_commit import GroupCommitStore
from runtime._ids import IdFactory
from runtime._inspect import check_resume_value
from runtime._registry import Route, TaskSpec
from runtime._resolver import WorkflowResolver
from runtime._secrets import SecretResolver
from runtime._state import ROOT_SCOPE_ID, RunState, RuntimeScope, Wakeup, frame_of
from runtime._steps import StepCall, StepExecutor, check_result_size, timeout_error
from runtime._trace import KEPT_AS_IS, TraceEvent, summarize
from runtime.builtins import DATA_TASKS


@dataclass(slots=True)
class LoopConfig:
    """What a run loop needs from its engine."""

    ids: IdFactory
    resolver: WorkflowResolver
    compile: Callable[[Workflow], CompiledWorkflow]
    pool: Callable[[], ThreadPoolExecutor]
    checkpointer: Checkpointer | None = None
    on_superstep: Callable[[RunState, list[TraceEvent]], Any] | None = None
    should_cancel: Callable[[str], bool] | None = None
    max_depth: int = 32
    max_steps: int | None = None
    keep_trace: int | None = None
    trace_sink: Callable[[TraceEvent], Any] | None = None
    step_timeout: float | None = None
    max_result_bytes: int | None = None
    step_executor: StepExecutor | None = None
    #: Whether a foreach with a batch size (in any scope) runs as distributed batches (node, number of items).
    distribute: Callable[[ForeachNode, int], bool] | None = None
    #: False: a retry's backoff or a ``wait`` step suspends its frame (``RunState.wakeups``) and a run with
    #: nothing else to do stops as ``waiting``; True: the engine sleeps in its own process instead.
    sleep_in_process: bool = True
    clock: Callable[[], float] = time.time
    #: Gives the value of a secret a binding names, for the one step that uses it.
    secrets: SecretResolver | None = None
    #: What is left of the run's budgets (wall time, step-seconds), and what this engine's steps used.
    budget: BudgetMeter | None = None
    #: What prepare needs of the fields above, made by the first loop and shared by the engine's later ones (none
    #: of those fields changes once the engine made its config; a batch's copy changes others).
    rules: PrepareRules | None = None


#: The longest an in-process wait for a wake-up sleeps before looking at the cancel hook again.
_SLEEP_SLICE = 0.5


# ---------------------------------------------------------------------------
# Execute: one task step's attempts


def _suspends(work: Work, attempt: int, delay: float) -> bool:
    """Before attempt ``attempt`` (after ``delay`` seconds of backoff): True when the frame suspends rather
    than sleeping here, which it does for any real backoff when the engine does not sleep in-process."""
    if work.clock is None or delay <= 0:
        return False
    work.wake = (work.clock() + delay, "retry", attempt, None)
    return True


_ONLY_ATTEMPT = ((1, 1, 0.0),)


def _attempts(work: Work, sleep: Callable[[float], None] | None) -> Iterable[tuple[int, int, float]]:
    """The attempts the node's retry policy allows from ``work.first_attempt`` on: (attempt, last attempt,
    seconds of backoff still to wait before it). ``sleep`` waits the backoff here (the delay yielded is
    then 0); without it the caller waits. Ends early once the frame suspends for a backoff instead; the
    caller stops iterating when an attempt settles the step."""
    policy = getattr(work.node, "retry", None)
    ctx = work.context
    assert ctx is not None
    if policy is None and work.first_attempt == 1:  # one attempt, the common case: no generator to run
        ctx.attempt = work.attempts = 1
        return _ONLY_ATTEMPT
    return _retried_attempts(work, ctx, policy, sleep)


def _retried_attempts(work: Work, ctx: RuntimeContext, policy: RetryPolicy | None,
                      sleep: Callable[[float], None] | None) -> Iterator[tuple[int, int, float]]:
    last = policy.max_attempts if policy is not None else 1
    for attempt in range(work.first_attempt, last + 1):
        delay = 0.0
        if attempt > work.first_attempt:
            delay = policy.delay_before(attempt)  # type: ignore[union-attr]
            if _suspends(work, attempt, delay):
                return
            if sleep is not None:
                sleep(delay)
                delay = 0.0
        ctx.attempt = attempt
        work.attempts = attempt
        yield attempt, last, delay


_PLAIN = frozenset({dict, list, str, int, float, bool, type(None), Route})  # never awaitable; skips an ABC check


def _failed_attempt(work: Work, attempt: int, attempts: int, exc: Exception) -> bool:
    """Record an attempt that raised; True when the retry policy allows another one. A step stopped by the run's
    budget (its timeout was what was left of it) fails with the budget's code and is not tried again."""
    if work.budget_limit is not None and isinstance(exc, StepTimeoutError):
        meter, which = work.budget_limit
        spec, ctx = work.spec, work.context
        assert spec is not None and ctx is not None
        work.error = meter.error(which, spec.name, ctx, ran=work.timeout or 0.0)
        return False
    work.error = exc
    if attempt < attempts:
        work.retries += ((attempt, f"{type(exc).__name__}: {exc}"),)
        return True
    return False


def _settle(work: Work, attempt: int, attempts: int, raw: Any, error: Exception | None) -> bool:
    """Take one attempt's outcome (what the task returned, or what it raised); True when the retry policy
    allows another attempt. A returned value is checked against the task's result type (a mismatch fails
    the node without a retry) and size (a result over the limit may be retried)."""
    if error is not None:
        return _failed_attempt(work, attempt, attempts, error)
    spec, ctx = work.spec, work.context
    assert spec is not None and ctx is not None
    work.error = None
    try:
        work.label, work.result = spec.finish(raw, ctx)
    except WorkflowError as exc:
        work.error = exc
        return False
    if work.max_result_bytes is not None:
        try:
            check_result_size(spec.name, ctx, work.result, work.max_result_bytes)
        except StepResultTooLargeError as exc:
            return _failed_attempt(work, attempt, attempts, exc)
    return False


def _task(work: Work) -> tuple[TaskSpec, RuntimeContext, Callable[[], Any]]:
    spec, ctx, call = work.spec, work.context, work.call
    assert spec is not None and ctx is not None and call is not None
    return spec, ctx, call


def _call_sync(work: Work) -> tuple[Any, Exception | None]:
    """One attempt of a sync task: (what it returned, None) or (None, what it raised)."""
    call = work.call
    assert call is not None
    try:
        begun = time.perf_counter()
        raw = call()
        if type(raw) not in _PLAIN and inspect.isawaitable(raw):  # a sync callable that hands back a coroutine
            raw = asyncio.run(_await(raw))
        # A thread cannot be stopped from outside: an over-long sync step is only caught once it returns.
        if work.timeout is not None and time.perf_counter() - begun > work.timeout:
            spec, ctx, _ = _task(work)
            raise timeout_error(spec.name, ctx, work.timeout)
    except Exception as exc:
        return None, exc
    return raw, None


def _run_sync_task(work: Work) -> None:
    started = time.perf_counter()
    if work.first_attempt == 1 and getattr(work.node, "retry", None) is None:
        # One attempt, the common case: what _attempts, _call_sync and _settle do for it, without their calls.
        spec, ctx, call = work.spec, work.context, work.call
        assert spec is not None and ctx is not None and call is not None
        ctx.attempt = work.attempts = 1
        try:
            raw = call()
            if type(raw) not in _PLAIN and inspect.isawaitable(raw):  # a sync callable that hands back a coroutine
                raw = asyncio.run(_await(raw))
            if work.timeout is not None and time.perf_counter() - started > work.timeout:
                raise timeout_error(spec.name, ctx, work.timeout)
        except Exception as exc:
            _failed_attempt(work, 1, 1, exc)
        else:
            if work.max_result_bytes is None:  # _settle's work for a returned value when no size limit applies
                work.error = None
                try:
                    work.label, work.result = spec.finish(raw, ctx)
                except WorkflowError as exc:
                    work.error = exc
            else:
                _settle(work, 1, 1, raw, None)
        work.duration = time.perf_counter() - started
        return
    for attempt, last, _ in _attempts(work, time.sleep):
        raw, error = _call_sync(work)
        if not _settle(work, attempt, last, raw, error):
            break
    work.duration = time.perf_counter() - started


async def _await(awaitable: Any) -> Any:
    return await awaitable


async def _call_async(work: Work) -> tuple[Any, Exception | None]:
    """One attempt of an async task, within its step timeout: (what it returned, None) or (None, what it
    raised)."""
    spec, ctx, call = _task(work)
    try:
        if work.timeout is None:
            return await call(), None
        return await _within(call, work.timeout, spec.name, ctx), None
    except Exception as exc:
        return None, exc


async def _run_async_task(work: Work) -> None:
    started = time.perf_counter()
    for attempt, last, delay in _attempts(work, None):
        if delay:
            await asyncio.sleep(delay)
        if not _settle(work, attempt, last, *await _call_async(work)):
            break
    work.duration = time.perf_counter() - started


async def _within(call: Callable[[], Any], limit: float, task: str, ctx: RuntimeContext) -> Any:
    """Await the task with a deadline; only the deadline's own expiry is a step timeout (a task may raise
    ``TimeoutError`` itself)."""
    scope = asyncio.timeout(limit)
    try:
        async with scope:
            return await call()
    except TimeoutError:
        if scope.expired():
            raise timeout_error(task, ctx, limit) from None
        raise


def _run_executed_task(work: Work, executor: StepExecutor, cancelled: Callable[[], bool]) -> None:
    """A task step through a ``StepExecutor``: each attempt is one ``run_step`` call."""
    spec, ctx = work.spec, work.context
    assert spec is not None and ctx is not None
    started = time.perf_counter()
    for attempt, last, _ in _attempts(work, time.sleep):
        call = StepCall.of(spec.name, work.payload if work.revealed is None else work.revealed_payload, ctx,
                           timeout=work.timeout,
                           max_result_bytes=work.max_result_bytes)
        try:
            work.label, work.result = executor.run_step(call, cancelled)
        except (StepCancelledError, TaskResultError) as exc:  # neither is worth another attempt
            work.error = exc
            break
        except Exception as exc:
            if _failed_attempt(work, attempt, last, exc):
                continue
            break
        work.error = None
        break
    work.duration = time.perf_counter() - started


def _fan_out(pool: ThreadPoolExecutor, run: Callable[[Work], None], tasks: list[Work]) -> None:
    """``run`` each task, the first in this thread and the others on the pool; returns once all are done."""
    futures = [pool.submit(run, w) for w in tasks[1:]]
    run(tasks[0])
    for future in futures:
        future.result()


# ---------------------------------------------------------------------------
# The effects the sync and async drivers perform differently


#: An effect is a (kind, argument) pair: execute the superstep's ``Work``, checkpoint its events, or sleep so many
#: seconds. A pair costs less to build at every superstep than an instance of a frozen dataclass, and the kind
#: still tells mypy what the argument is.
_Effect = (tuple[Literal["execute"], list[Work]] | tuple[Literal["checkpoint"], list[TraceEvent]]
           | tuple[Literal["sleep"], float])


class _Plans:
    """The compiled workflow each scope of one run loop runs: the root's, and each subgraph's as its call resolved it.

    Apart from the loop so that nothing the loop holds points back at it: its scheduler and prepare rules call
    these methods, and bound methods of the loop itself made a reference cycle of every call's loop, scheduler,
    recorder and RunState, which only the cyclic GC could free (two dozen objects a call, and its collections
    were a tenth of a one-node run's time).
    """

    __slots__ = ("root", "compile", "resolver", "by_ref")

    def __init__(self, root: CompiledWorkflow, compile: Callable[[Workflow], CompiledWorkflow],
                 resolver: WorkflowResolver) -> None:
        self.root = root
        self.compile = compile
        self.resolver = resolver
        self.by_ref: dict[tuple[str, int | None], CompiledWorkflow] = {}

    def plan_for(self, scope: RuntimeScope) -> CompiledWorkflow:
        if scope.scope_id == ROOT_SCOPE_ID:
            return self.root
        key = (scope.workflow.id, scope.workflow.version)
        plan = self.by_ref.get(key)
        if plan is None:
            plan = self.by_ref[key] = self.compile(self.resolver.resolve(scope.workflow))
        return plan

    def subgraph_plan(self, ref: WorkflowRef) -> CompiledWorkflow:
        # Resolved again on every call (a reference without a version follows the latest document); the
        # child scope it opens then runs that plan.
        child = self.by_ref[(ref.id, ref.version)] = self.compile(self.resolver.resolve(ref))
        return child


class RunLoop:
    """Drives one engine call (run, resume or continue) over one RunState."""

    def __init__(self, config: LoopConfig, run_state: RunState, root_plan: CompiledWorkflow) -> None:
        self.config = config
        self.rs = run_state
        self.root_plan = root_plan
        self.recorder = Recorder(run_state, clock=config.clock, keep=config.keep_trace, sink=config.trace_sink,
                                 saved=config.checkpointer is not None or config.on_superstep is not None)
        plans = _Plans(root_plan, config.compile, config.resolver)
        self.plan_for = plans.plan_for
        self.scheduler = sched = Scheduler(run_state, config.ids, self.recorder, plans.plan_for, config.distribute)
        sched.root_plan = root_plan  # what plan_for gives the root scope, without the call
        sched.subgraph_plan = plans.subgraph_plan
        self._event_loop: asyncio.AbstractEventLoop | None = None
        self.stop_error: StepLimitError | None = None
        self._woken: dict[str, Wakeup] = {}
        rules = config.rules
        if rules is None:
            rules = config.rules = PrepareRules(
                max_depth=config.max_depth, step_timeout=config.step_timeout,
                max_result_bytes=config.max_result_bytes,
                suspend_clock=None if config.sleep_in_process else config.clock, secrets=config.secrets)
        self._rules = rules

    # -- workflows per scope ------------------------------------------------------

    def trace_kept_by(self) -> tuple[str, ...]:
        """Where every event of the call went, besides the bounded ``RunResult.trace``."""
        config = self.config
        if config.checkpointer is None and config.trace_sink is None and config.on_superstep is None:
            return ()  # nowhere, the common case of a call in memory: without the generator below
        return tuple(name for name, there in (("checkpointer", config.checkpointer), ("trace_sink", config.trace_sink),
                                              ("on_superstep", config.on_superstep)) if there is not None)

    # -- prepare ------------------------------------------------------------------

    def wake(self) -> bool:
        """Queue the suspended frames whose time has come; True when the run has anything to do now."""
        rs = self.rs
        if rs.wakeups:
            due = self.scheduler.wake_due(self.config.clock())
            if due:
                self._woken.update(due)
                if rs.status == "waiting":
                    rs.status = "running"
        return rs.status == "running"

    def prepare(self) -> list[Work]:
        if self.rs.wakeups:
            self.wake()
        return prepare_step(self.rs, self.scheduler, self.plan_for, self._woken, self._rules)

    # -- execute ------------------------------------------------------------------

    def execute(self, works: list[Work]) -> None:
        """Run the tasks of a superstep from synchronous code."""
        meter = self.config.budget
        if meter is not None:
            self._within_budget(works, meter)
            try:
                self._execute(works)
            finally:
                meter.add(sum(work.duration or 0.0 for work in works))
            return
        self._execute(works)

    def _within_budget(self, works: list[Work], meter: BudgetMeter) -> None:
        """Fail the steps the run's budgets no longer allow to start; give the others at most what is left."""
        left = meter.limit(self.config.clock())
        if left is None:
            return
        seconds, which = left
        for work in works:
            if not work.runnable or work.spec is None or work.spec.fn in DATA_TASKS:
                continue
            if seconds <= 0:
                spec, ctx = work.spec, work.context
                assert spec is not None and ctx is not None
                work.error = meter.error(which, spec.name, ctx)
            elif work.timeout is None or seconds < work.timeout:
                work.timeout, work.budget_limit = seconds, (meter, which)

    def _execute(self, works: list[Work]) -> None:
        executor = self.config.step_executor
        if executor is not None:
            self._execute_elsewhere(works, executor)
            return
        if len(works) == 1:  # the common superstep: one frame
            work = works[0]
            if work.call is None or work.error is not None:  # not work.runnable
                return
            if not work.spec.is_async:  # type: ignore[union-attr]
                _run_sync_task(work)
                return
        tasks = [w for w in works if w.runnable]
        if not tasks:
            return
        if all(not w.spec.is_async for w in tasks):  # type: ignore[union-attr]
            if len(tasks) == 1:
                _run_sync_task(tasks[0])
            else:
                _fan_out(self.config.pool(), _run_sync_task, tasks)
            return
        self._run_coroutine(self._gather(tasks))

    async def aexecute(self, works: list[Work]) -> None:
        meter = self.config.budget
        if meter is not None:
            self._within_budget(works, meter)
        try:
            await self._aexecute(works)
        finally:
            if meter is not None:
                meter.add(sum(work.duration or 0.0 for work in works))

    async def _aexecute(self, works: list[Work]) -> None:
        tasks = [w for w in works if w.runnable]
        if not tasks:
            return
        executor = self.config.step_executor
        if executor is not None:
            loop, pool, cancelled = asyncio.get_running_loop(), self.config.pool(), self._cancel_probe()
            await asyncio.gather(*(loop.run_in_executor(pool, _run_executed_task, w, executor, cancelled)
                                   for w in tasks))
            return
        await self._gather(tasks)

    def _cancel_probe(self) -> Callable[[], bool]:
        check, run_id = self.config.should_cancel, self.rs.run_id
        if check is None:
            return lambda: False
        return lambda: bool(check(run_id))

    def _execute_elsewhere(self, works: list[Work], executor: StepExecutor) -> None:
        """Every task step (sync or async) through the step executor, concurrent steps on the thread pool."""
        tasks = [w for w in works if w.runnable]
        if not tasks:
            return
        cancelled = self._cancel_probe()

        def run(work: Work) -> None:
            _run_executed_task(work, executor, cancelled)

        if len(tasks) == 1:
            run(tasks[0])
            return
        inline = getattr(executor, "runs_inline", None)
        if inline is None:
            _fan_out(self.config.pool(), run, tasks)
            return
        # Steps the executor runs at once in the calling thread gain nothing from the thread pool: each hand-off
        # to it costs more than such a step. They run here, one after another, while the others run on the pool.
        here: list[Work] = []
        elsewhere: list[Work] = []
        for work in tasks:
            payload = work.payload if work.revealed is None else work.revealed_payload
            (here if inline(work.spec.name, payload) else elsewhere).append(work)  # type: ignore[union-attr]
        if not here:
            _fan_out(self.config.pool(), run, tasks)
            return
        futures = [self.config.pool().submit(run, work) for work in elsewhere]
        for work in here:
            run(work)
        for future in futures:
            future.result()

    def cancelled_mid_step(self, works: list[Work]) -> bool:
        """True (and the run cancelled) when a step executor stopped a step because the run was cancelled.

        The superstep is not committed: its frames go back to the ready queue as they were, so the saved
        state is the one before the superstep, plus the cancellation."""
        for work in works:  # a plain loop: any() over a generator costs more at every superstep
            if isinstance(work.error, StepCancelledError):
                break
        else:
            return False
        for work in works:
            if work.error is not None:
                drop_tracebacks(work.error)
        self.rs.ready.extend(w.frame.frame_id for w in works)
        self.rs.status = "cancelled"
        self.recorder.emit("run_cancelled")
        return True

    async def _gather(self, tasks: list[Work]) -> None:
        loop = asyncio.get_running_loop()
        pool = self.config.pool()
        await asyncio.gather(*(
            _run_async_task(w) if w.spec.is_async  # type: ignore[union-attr]
            else loop.run_in_executor(pool, _run_sync_task, w)
            for w in tasks
        ))

    def _run_coroutine(self, coro: Any) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            called_in_a_loop = False
        else:
            called_in_a_loop = True
        if not called_in_a_loop:
            # Outside the except block above: a task's exception raised in it would carry that RuntimeError as
            # its context, an unrelated "no running event loop" in every printed traceback of the failure.
            if self._event_loop is None:
                self._event_loop = asyncio.new_event_loop()
            self._event_loop.run_until_complete(coro)
            return
        # Called synchronously from inside a running event loop: that loop cannot be
        # re-entered, so the async tasks get a loop of their own on a helper thread.
        failure: list[BaseException] = []

        def host() -> None:
            try:
                asyncio.run(coro)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the calling thread
                failure.append(exc)

        thread = threading.Thread(target=host, name="trellis-async-tasks")
        thread.start()
        thread.join()
        if failure:
            raise failure[0]

    def close(self) -> None:
        if self._event_loop is not None:
            self._event_loop.close()
            self._event_loop = None

    # -- commit -------------------------------------------------------------------

    def commit(self, works: list[Work]) -> None:
        rs, sched, emit, recording = self.rs, self.scheduler, self.recorder.emit, self.recorder.recording
        for work in works:
            frame = work.frame
            if rs.frames.get(frame.frame_id) is not frame:
                if work.error is not None:
                    drop_tracebacks(work.error)
                continue  # dropped by an earlier commit of this superstep (its child scope failed)
            if work.revealed:  # the step saw secrets: none of them goes into state, the trace or an error
                work.scrub()
            node = work.node
            for attempt, message in work.retries:
                emit("node_retrying", frame, attempt=attempt, summary=message)
            if work.wake is not None:
                at, reason, attempt, result = work.wake
                sched.suspend(frame, node, at=at, reason=reason, attempt=attempt, result=result)
                if work.error is not None:  # the attempt that failed before this backoff
                    drop_tracebacks(work.error)
            elif work.error is not None:
                sched.fail(frame, node, work.error, attempts=work.attempts)
                # Recorded: its traceback goes, whose frames hold this work (a cycle per failed step otherwise).
                drop_tracebacks(work.error)
            elif isinstance(node, TaskNode):
                result = work.result
                emit("node_completed", frame, None, None, None, work.label, work.attempts, work.duration,  # by position
                     (result if type(result) in KEPT_AS_IS else summarize(result)) if recording else None)
                if node.output:
                    sched.commit_result(frame, node, work.label or "ok", work.result)
                else:  # nothing to write: commit_result would only route
                    sched.route(frame, work.label or "ok", work.result)
            elif isinstance(node, BranchNode):
                emit("node_completed", frame, label=work.value)
                sched.route(frame, work.value)
            elif isinstance(node, ForeachNode):
                sched.enter_foreach(frame, node, work.value)
            elif isinstance(node, SubgraphNode):
                child, child_input = work.value
                sched.open_scope(frame, node, child, child_input)
            elif isinstance(node, InterruptNode):
                sched.interrupt(frame, node, work.value)

    def settle(self) -> list[TraceEvent]:
        """Decide the run status after a commit; returns the events of the step."""
        rs, sched = self.rs, self.scheduler
        if sched.failure is not None:
            # A failure found while committing (an output binding's) was caught in a frame that holds the
            # scheduler, which holds the failure: the traceback that holds that frame goes.
            drop_tracebacks(sched.failure.cause)
            error = sched.failure.to_error()
            rs.status = "failed"
            rs.error = error.to_dict()
            self.recorder.emit("run_failed", summary=summarize(rs.error))
        elif sched.completed:
            rs.__dict__["status"] = "completed"  # field storage: see _algo.prepare_step's steps counter
            self.recorder.emit("run_completed", summary=summarize(rs.output))
        elif sched.batch_done:
            rs.status = "completed"  # one batch's own state (runtime._batches): its items are all over
        elif rs.status == "running" and not rs.ready:
            distributed = [key for key, activation in rs.activations.items() if activation.distributed]
            if distributed or rs.wakeups:
                # Nothing left to run here: the run waits, holding no worker, until its batches are joined or
                # its suspended frames' time comes (answering an open interrupt meanwhile is possible too).
                rs.status = "waiting"
                summary: dict[str, Any] = {"activations": distributed}
                if rs.wakeups:
                    summary.update(wake_at=wake_time(rs.wake_at or 0.0), frames=list(rs.wakeups),
                                   interrupts=list(rs.interrupts))
                self.recorder.emit("run_waiting", summary=summary)
            elif not rs.interrupts:
                raise CorruptRunStateError("the run cannot progress: nothing is ready, suspended or interrupted",
                                           run_id=rs.run_id)
            else:
                rs.status = "interrupted"
                self.recorder.emit("run_interrupted", summary={"interrupts": list(rs.interrupts)})
        # Recorder.sync and take_step, written out (once per superstep): the counter goes back to the state, and
        # the superstep's events are handed on and retained as ``keep`` says.
        recorder = self.recorder
        rs.__dict__["trace_seq"] = recorder.seq  # field storage: see _algo.prepare_step's steps counter
        events, recorder.step = recorder.step, []
        keep = recorder.keep
        if keep != 0:  # Recorder.retain
            kept = recorder.events
            kept.extend(events)
            if len(kept) > recorder.limit and keep is not None:
                del kept[:-keep]
        return events

    def cancelled(self) -> bool:
        check = self.config.should_cancel
        if check is None or not check(self.rs.run_id):
            return False
        self.rs.status = "cancelled"
        self.recorder.emit("run_cancelled")
        return True

    def over_step_limit(self) -> bool:
        """Fail the run, keeping its state and trace, once a frame about to step has used up its steps.

        A document can route in a cycle that never ends; without a limit such a
        run would hold a worker until someone cancels it. Such a cycle is one
        frame (one line of work) stepping forever, so the limit is on the steps
        of each frame, not on the run's supersteps: a foreach's items are
        frames of their own, so a foreach of a million items takes a few steps
        per frame however long it runs, and a cycle is stopped after ``max_steps``
        turns wherever it is (in the run, inside an item, inside a subgraph).
        """
        limit = self.config.max_steps
        if limit is None:
            return False
        frames = self.rs.frames
        spinning = None
        for frame_id in self.rs.ready:
            frame = frames.get(frame_id)
            if frame is not None and frame.steps >= limit:
                spinning = frame
                break
        if spinning is None:
            return False
        where = ""
        path: list[dict[str, Any]] = []
        if "foreach" in spinning.metadata:
            entries = self.scheduler.context(spinning).foreach
            path = [{"node_id": entry.node_id, "index": entry.index} for entry in entries.values()]
            where = " in " + " > ".join(f"item {entry['index']} of foreach {entry['node_id']!r}" for entry in path)
        if spinning.scope_id != ROOT_SCOPE_ID:
            where += f" (subgraph scope {spinning.scope_id!r})"
        self.stop_error = StepLimitError(
            f"run {self.rs.run_id!r} stopped: frame {spinning.frame_id!r} at node {spinning.node_id!r}{where} took "
            f"{spinning.steps} steps without finishing (the limit is {limit} steps per frame; "
            f"{self.rs.step} supersteps in all); look for a route cycle through {spinning.node_id!r} that never "
            "reaches an end, or raise the engine's max_steps",
            run_id=self.rs.run_id, max_steps=limit, node_id=spinning.node_id, frame_id=spinning.frame_id,
            scope_id=spinning.scope_id, steps=spinning.steps, foreach=path,
        )
        self.rs.status = "failed"
        self.rs.error = self.stop_error.to_dict()
        self.recorder.emit("run_failed", spinning, summary=summarize(self.rs.error))
        return True

    # -- resume -------------------------------------------------------------------

    def apply_resume(self, interrupt_id: str, value: Any, label: str | None) -> None:
        rs = self.rs
        record = rs.interrupts.get(interrupt_id)
        if record is None:
            raise ResumeError(f"run {rs.run_id!r} has no open interrupt {interrupt_id!r}",
                              interrupt_id=interrupt_id, open=sorted(rs.interrupts))
        frame = frame_of(rs, record.frame_id)
        node = self.scheduler.node_of(frame)
        if not isinstance(node, InterruptNode) or frame.status != "interrupted":
            raise CorruptRunStateError(f"interrupt {interrupt_id!r} points at frame {frame.frame_id!r}, "
                                       f"which is not paused at an interrupt node", interrupt_id=interrupt_id)
        chosen, checked = check_resume_value(node.resume_schema, node.labels, value, label,
                                             interrupt_id=interrupt_id, node_id=node.id)
        rs.step += 1
        del rs.interrupts[interrupt_id]
        rs.status = "running"
        frame.status = "ready"
        frame.waiting_for = None
        self.recorder.emit("resumed", frame, label=chosen, summary={"interrupt_id": interrupt_id,
                                                                     "value": summarize(checked)})
        self.recorder.emit("node_completed", frame, label=chosen, summary=summarize(checked))
        self.scheduler.commit_result(frame, node, chosen, checked)

    def apply_redrive(self) -> None:
        """Reset the failed frames of a failed run (``_algo.reset_failed``) and mark where the new attempt
        begins in the trace: a ``run_redriven`` event naming what runs again."""
        rs = self.rs
        frames = reset_failed(rs)
        rs.step += 1
        again = []
        for frame in frames:
            meta = self.scheduler.item_metadata(frame)
            entry: dict[str, Any] = {"frame_id": frame.frame_id, "node_id": frame.node_id}
            if meta is not None:
                entry |= {"foreach": meta.node_id, "index": meta.index}
            again.append(entry)
        self.recorder.emit("run_redriven", summary={"attempt": rs.attempt, "frames": again})

    def mark_foreach_redrive(self, activation_id: str, indices: list[int], from_step: int) -> None:
        """The first event of a completed run's next attempt (``_algo.reopen_foreach``): which tolerated items of
        which foreach run again, and the superstep whose checkpoint the run went back to (``from_step``: what
        the trace recorded after it, up to here, is undone). The activation waits for its batches again; what
        follows its join runs again."""
        rs = self.rs
        rs.step += 1
        activation = rs.activations[activation_id]
        self.recorder.emit("run_redriven", summary={
            "attempt": rs.attempt, "frames": [], "foreach": activation.node_id, "activation_id": activation_id,
            "items": sorted(indices)[:1000], "count": len(indices), "from_step": from_step})

    def mark_fork(self, parent_run_id: str, parent_step: int, edited: list[str]) -> None:
        """The first event of a forked run: which run and superstep it came from, and what was changed."""
        self.rs.step += 1
        self.recorder.emit("run_forked", summary={"parent_run_id": parent_run_id, "parent_step": parent_step,
                                                  "edited": edited})

    # -- drivers ------------------------------------------------------------------

    def checkpoint(self, events: list[TraceEvent]) -> None:
        if self.config.checkpointer is not None:
            self.config.checkpointer.save(self.rs, events)
        if self.config.on_superstep is not None:
            if self._group_commit is not None and self._group_commit.in_flight():
                self._group_commit.flush()
            self.config.on_superstep(self.rs, events)

    @cached_property
    def _group_commit(self) -> GroupCommitStore[Any] | None:
        """The checkpointer when it commits in groups behind ``save`` (``durability="batched"``): the
        ``on_superstep`` hook is told of a superstep only once it is on disk, so a superstep reported done is
        never one a crash can lose. Without a hook nothing is told before the call returns, and a call that
        returns has waited for the disk (a run that stops saves synchronously), so the saves coalesce freely."""
        cp = self.config.checkpointer
        return cp if isinstance(cp, GroupCommitStore) and cp.durability == "batched" else None

    @cached_property
    def _async_saver(self) -> AsyncCheckpointer | None:
        # Looked at once per call, and only by the async driver: a protocol isinstance check walks every
        # method (a few microseconds, a tenth of a one-node run).
        cp = self.config.checkpointer
        return cp if isinstance(cp, AsyncCheckpointer) else None

    async def acheckpoint(self, events: list[TraceEvent]) -> None:
        if self._async_saver is not None:
            await self._async_saver.asave(self.rs, events)
        elif self.config.checkpointer is not None:
            self.config.checkpointer.save(self.rs, events)
        hook = self.config.on_superstep
        if hook is not None:
            if self._group_commit is not None and self._group_commit.in_flight():
                await asyncio.to_thread(self._group_commit.flush)
            outcome = hook(self.rs, events)
            if inspect.isawaitable(outcome):
                await outcome

    def _steps(self) -> Generator[_Effect, None, None]:
        """The supersteps of one engine call, as the effects a driver performs (execute, checkpoint, sleep).

        A superstep's checkpoint effect is left out when nothing receives it (no checkpointer, no
        ``on_superstep`` hook): both drivers' checkpoints would do nothing."""
        saves = self.config.checkpointer is not None or self.config.on_superstep is not None
        while self.rs.status == "running" or (self.rs.status == "waiting" and (yield from self._wakeup())):
            if (self.config.should_cancel is not None and self.cancelled()) or self.over_step_limit():
                yield "checkpoint", self.settle()
                return
            works = self.prepare()
            yield "execute", works
            if self.cancelled_mid_step(works):
                yield "checkpoint", self.settle()
                return
            self.commit(works)
            events = self.settle()
            if saves:
                yield "checkpoint", events

    def _wakeup(self) -> Generator[_Effect, None, bool]:
        """A waiting run: True once it has work again. The engine sleeps in-process until the earliest wake-up
        when it is configured to (looking at the cancel hook meanwhile), else it leaves the run waiting."""
        if self.wake():
            return True
        if self.config.sleep_in_process:
            while (remaining := (self.rs.wake_at or 0.0) - self.config.clock()) > 0:
                if self.cancelled():
                    yield "checkpoint", self.settle()
                    return False
                yield "sleep", min(remaining, _SLEEP_SLICE)
            return self.wake()
        return False

    def _supersteps_while_running(self) -> None:
        """``_steps``' supersteps while the run is running, each effect performed here, in order, as ``drive`` would
        perform it: the sync driver's loop, without a generator's resumption and an effect pair per step (a
        foreach item is one superstep). It returns when the run stops running; ``drive`` then goes on with
        ``_steps``, which takes a waiting run from there and ends at once for any other status."""
        rs, config = self.rs, self.config
        saves = config.checkpointer is not None or config.on_superstep is not None
        while rs.status == "running":
            if (config.should_cancel is not None and self.cancelled()) or (config.max_steps is not None
                                                                           and self.over_step_limit()):
                self.checkpoint(self.settle())
                return
            works = self.prepare() if rs.wakeups else prepare_step(rs, self.scheduler, self.plan_for, self._woken,
                                                                   self._rules)
            if config.budget is None:
                self._execute(works)  # what execute does without a budget to keep
            else:
                self.execute(works)
            if self.cancelled_mid_step(works):
                self.checkpoint(self.settle())
                return
            self.commit(works)
            events = self.settle()
            if saves:
                if config.on_superstep is None:
                    config.checkpointer.save(rs, events)  # type: ignore[union-attr]  # checkpoint(), without a hook
                else:
                    self.checkpoint(events)

    def drive(self) -> None:
        try:
            self._supersteps_while_running()
            if self.rs.status != "waiting":
                return  # _steps would end at once: it goes on only with a run that waits
            for effect in self._steps():
                if effect[0] == "execute":
                    self.execute(effect[1])
                elif effect[0] == "checkpoint":
                    self.checkpoint(effect[1])
                else:
                    time.sleep(effect[1])
        finally:
            self.close()

    async def adrive(self) -> None:
        for effect in self._steps():
            if effect[0] == "execute":
                await self.aexecute(effect[1])
            elif effect[0] == "checkpoint":
                await self.acheckpoint(effect[1])
            else:
                await asyncio.sleep(effect[1])

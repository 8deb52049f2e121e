"""``EngineOptions``: everything an ``Engine`` is told besides its task registry, as one frozen value.

One object rather than eighteen keywords so that a host can build its settings once, name them, compare them
and derive variants (``dataclasses.replace``), and so that a bad value is refused where it is written, with the
field named, before any engine exists.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from runtime._budget import RunBudget
from runtime._checkpoint import Checkpointer
from runtime._compile_cache import CompileCache
from runtime._document import ForeachNode, Workflow, WorkflowRef
from runtime._errors import EngineOptionsError
from runtime._ids import IdFactory
from runtime._resolver import WorkflowResolver
from runtime._secrets import SecretResolver
from runtime._state import RunState
from runtime._steps import StepExecutor
from runtime._trace import TraceEvent

#: Trace events an engine call keeps for ``RunResult.trace`` unless told otherwise (the command line's default too).
DEFAULT_KEEP_TRACE = 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineOptions:
    """How an ``Engine`` runs workflows. Every field has a default: ``EngineOptions()`` is a working engine.

    Collaborators:

    * ``workflows``: resolves subgraph references (a ``WorkflowResolver``, a mapping from id to document, or a
      function of a ``WorkflowRef``). None: a document that calls a subgraph is refused.
    * ``checkpointer``: receives the ``RunState`` and the superstep's new trace events after every superstep.
      None: nothing is saved (a crash loses the run).
    * ``ids``: mints run, frame and scope ids (``SequentialIds`` makes runs reproducible). None: random ids.
    * ``step_executor``: runs every task step (sync and async) somewhere that can enforce timeouts, memory and
      cancellation, e.g. a pool of child processes. None: steps run in this process (sync ones on threads).
    * ``secrets``: gives the value of a secret a binding names (a ``SecretResolver`` or a name-to-value mapping),
      revealed to that one step only. None: a document that names a secret fails at that step.
    * ``clock``: seconds since the epoch, for wake-up times, budgets and deadlines. None: ``time.time``.
    * ``compiled``: a ``CompileCache`` shared with other engines, so that a document object validated and
      compiled by one is not again by the next (a host that makes an engine per run). The host vouches that the
      engines sharing it have the same registry, subgraph answers and ``max_retry_delay``. None: the engine
      keeps its own.

    Hooks:

    * ``on_superstep(run_state, events)``: called after each superstep's save.
    * ``should_cancel(run_id)``: consulted before each superstep (and while a step executor's step runs); true
      stops the run as ``cancelled``.
    * ``trace_sink(event)``: called with every trace event as it happens, however many ``keep_trace`` keeps.
    * ``distribute(node, number_of_items)``: true runs that foreach (one with ``batch_size``) as distributed
      batches: the call ends ``waiting``, the host runs ``run_batch`` and ``join_foreach``.

    Limits:

    * ``max_workers``: threads for sync task steps (and the step executor's concurrent calls). None:
      ``min(32, cpu_count + 4)``.
    * ``max_depth``: how deep subgraph calls may nest (``subgraph.depth`` beyond it). Default 32.
    * ``max_steps``: node steps per frame (a run's root, a foreach item, a subgraph's root): a route cycle that
      never ends fails with ``run.step_limit`` naming its node; a foreach of any size passes. None: unbounded.
    * ``keep_trace``: events of a call kept in ``RunResult.trace``: the last N (default ``DEFAULT_KEEP_TRACE``,
      1,000), 0 none, None every one (about 2 KB an event). The checkpointer still gets every event.
    * ``step_timeout``: caps every task step's start-to-close timeout, in seconds (the node's, the task's or the
      document's own timeout applies when smaller). None: no cap.
    * ``max_result_bytes``: caps a step's result as compact JSON (``step.result_too_large``). None: no cap.
    * ``max_retry_delay``: caps the total backoff, in seconds, a node's retry policy may ask for; a document over
      it is refused before it runs (``retry.delay_too_long``). None: no cap.
    * ``budget``: what is left of the run's wall-time and step-seconds budgets for this engine's calls.

    Waiting:

    * ``sleep_in_process``: True (default), a retry's backoff or a ``wait`` step sleeps in this process. False:
      it suspends its frame (``RunState.wakeups``), and once nothing else can run the call returns ``waiting``
      with ``wake_at``; ``continue_run`` carries on at that time.

    A field given a value the engine cannot use raises ``EngineOptionsError`` (``engine.invalid_option``) naming
    the field, when the options are made.
    """

    workflows: WorkflowResolver | Mapping[object, Workflow] | Callable[[WorkflowRef], Workflow] | None = None
    checkpointer: Checkpointer | None = None
    ids: IdFactory | None = None
    step_executor: StepExecutor | None = None
    secrets: SecretResolver | Mapping[str, str] | None = None
    clock: Callable[[], float] | None = None
    compiled: CompileCache | None = None
    on_superstep: Callable[[RunState, list[TraceEvent]], Any] | None = None
    should_cancel: Callable[[str], bool] | None = None
    trace_sink: Callable[[TraceEvent], Any] | None = None
    distribute: Callable[[ForeachNode, int], bool] | None = None
    max_workers: int | None = None
    max_depth: int = 32
    max_steps: int | None = None
    keep_trace: int | None = DEFAULT_KEEP_TRACE
    step_timeout: float | None = None
    max_result_bytes: int | None = None
    max_retry_delay: float | None = None
    budget: RunBudget | None = None
    sleep_in_process: bool = True

    def __post_init__(self) -> None:
        _count("max_workers", self.max_workers, least=1, optional=True)
        _count("max_depth", self.max_depth, least=1, optional=False)
        _count("max_steps", self.max_steps, least=1, optional=True)
        _count("keep_trace", self.keep_trace, least=0, optional=True)
        _count("max_result_bytes", self.max_result_bytes, least=1, optional=True)
        _seconds("step_timeout", self.step_timeout, zero=False)
        _seconds("max_retry_delay", self.max_retry_delay, zero=True)
        if not isinstance(self.sleep_in_process, bool):
            _refuse("sleep_in_process", self.sleep_in_process, "True or False")
        for name in ("clock", "on_superstep", "should_cancel", "trace_sink", "distribute"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                _refuse(name, value, "a function or None")
        if self.compiled is not None and not isinstance(self.compiled, CompileCache):
            _refuse("compiled", self.compiled, "a CompileCache or None")
        if self.budget is not None and not isinstance(self.budget, RunBudget):
            _refuse("budget", self.budget, "a RunBudget or None")
        if self.secrets is not None and not isinstance(self.secrets, Mapping) \
                and not callable(getattr(self.secrets, "reveal", None)):
            _refuse("secrets", self.secrets, "a SecretResolver, a mapping of names to values, or None")


#: Every field's name, in order (the docs and the tests check each is described).
FIELDS: tuple[str, ...] = tuple(f.name for f in fields(EngineOptions))


def _refuse(name: str, value: Any, wanted: str) -> None:
    raise EngineOptionsError(f"EngineOptions.{name} must be {wanted}, not {value!r}", field=name, value=value)


def _count(name: str, value: Any, *, least: int, optional: bool) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        wanted = "a positive whole number" if least == 1 else "0 or a positive whole number"
        _refuse(name, value, wanted + (" or None" if optional else ""))


def _seconds(name: str, value: Any, *, zero: bool) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value) \
            or (value < 0 if zero else value <= 0):
        _refuse(name, value, ("0 or more" if zero else "a positive number of") + " seconds, or None")

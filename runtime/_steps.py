"""Step limits and the step-execution hook.

A *step* is one attempt of one task node. Its limits:

* **Start-to-close timeout** (``step_timeout``). The most specific setting
  wins: the node's ``timeout_seconds``, else the task's default (registered
  with ``timeout_seconds=``), else the document's ``step_timeout_seconds``.
  The engine's ``step_timeout`` is a cap over all of them: the effective
  limit is the smaller of the chosen setting and the cap, and the cap alone
  when nothing is set. Each attempt gets the whole limit again; retry
  back-off is not counted.
* **Result size** (``max_result_bytes``): the length of the result's compact
  JSON form (UTF-8 bytes).
* **Memory**: only a step executor that runs steps in a separate process can
  hold a step to a memory limit; the in-process engine cannot.

By default the engine runs steps in its own process (see ``Engine``). A
``StepExecutor`` runs them elsewhere instead, e.g. in a child process that can
be killed: the engine hands it a picklable ``StepCall`` (task name, the
node's input payload, the frame's context and the limits) and the executor
returns ``(label, json_result)`` or raises. ``StepCall.run_here`` is what the
other side runs.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic_core import to_json, to_jsonable_python

from runtime._context import RuntimeContext
from runtime._document import TaskNode, Workflow
from runtime._errors import StepMemoryError, StepResultTooLargeError, StepTimeoutError
from runtime._registry import TaskRegistry, TaskSpec


def step_timeout(node: TaskNode, spec: TaskSpec, workflow: Workflow, cap: float | None) -> float | None:
    """The start-to-close limit of one attempt of ``node``, in seconds (None: unlimited)."""
    chosen = node.timeout_seconds
    if chosen is None:
        chosen = spec.timeout_seconds
    if chosen is None:
        chosen = workflow.step_timeout_seconds
    return capped(chosen, cap)


def capped(chosen: float | None, cap: float | None) -> float | None:
    """A step's own limit (``chosen``, None: unlimited) under the engine's ``cap`` (None: no cap)."""
    if cap is None:
        return chosen
    return cap if chosen is None else min(chosen, cap)


def where_of(context: RuntimeContext) -> dict[str, Any]:
    inner = context.innermost
    return {"node_id": context.node_id, "frame_id": context.frame_id,
            "index": inner.index if inner is not None else None, "attempt": context.attempt}


def step_label(task: str, context: RuntimeContext) -> str:
    inner = context.innermost
    item = f", item {inner.index}" if inner is not None else ""
    return f"task {task!r} at node {context.node_id!r} (frame {context.frame_id}{item})"


def timeout_error(task: str, context: RuntimeContext, limit: float) -> StepTimeoutError:
    return StepTimeoutError(
        f"{step_label(task, context)} ran longer than its {limit:g} s limit and was stopped; raise the node's "
        f"timeout_seconds if it needs longer (the server's cap still applies)",
        task=task, limit_seconds=limit, **where_of(context))


def memory_error(task: str, context: RuntimeContext, limit_mb: int | None) -> StepMemoryError:
    bound = f"the {limit_mb} MB" if limit_mb is not None else "the"
    return StepMemoryError(
        f"{step_label(task, context)} ran out of {bound} memory a step may use and was stopped; give it less data "
        f"to hold at once (split the input, e.g. with a foreach)",
        task=task, limit_mb=limit_mb, **where_of(context))


def result_too_large_error(task: str, context: RuntimeContext, limit: int, size: int | None
                           ) -> StepResultTooLargeError:
    got = f"{size:,} bytes" if size is not None else "more than that"
    return StepResultTooLargeError(
        f"{step_label(task, context)} returned a result of {got} as JSON; the limit is {limit:,} bytes. Return less "
        f"(select fields, page through the data) or keep large data outside the run",
        task=task, limit_bytes=limit, size_bytes=size, **where_of(context))


def check_result_size(task: str, context: RuntimeContext, result: Any, limit: int | None) -> bytes | None:
    """The result's compact JSON when a limit applies; raises ``StepResultTooLargeError`` above it."""
    if limit is None:
        return None
    data = to_json(result)
    if len(data) > limit:
        raise result_too_large_error(task, context, limit, len(data))
    return data


@dataclass(frozen=True, slots=True)
class StepCall:
    """One attempt of one task node, as a step executor receives it (picklable)."""

    task: str
    payload: Any
    context: RuntimeContext
    timeout: float | None = None
    max_result_bytes: int | None = None

    @classmethod
    def of(cls, task: str, payload: Any, context: RuntimeContext, *, timeout: float | None = None,
           max_result_bytes: int | None = None) -> StepCall:
        # A copy: the engine keeps changing its context (attempt), and mapping proxies do not pickle.
        frozen = dataclasses.replace(context, foreach=dict(context.foreach), aliases=dict(context.aliases))
        return cls(task, payload, frozen, timeout, max_result_bytes)

    def portable(self) -> StepCall:
        """A copy whose payload is plain JSON data. A payload is JSON-like but may hold read-only views (a
        binding of the whole ``context`` reads a mapping proxy), which do not pickle."""
        return dataclasses.replace(self, payload=to_jsonable_python(self.payload, fallback=_plain))

    def timed_out(self) -> StepTimeoutError:
        return timeout_error(self.task, self.context, self.timeout or 0.0)

    def out_of_memory(self, limit_mb: int | None) -> StepMemoryError:
        return memory_error(self.task, self.context, limit_mb)

    def too_large(self, size: int | None) -> StepResultTooLargeError:
        return result_too_large_error(self.task, self.context, self.max_result_bytes or 0, size)

    def run_here(self, registry: TaskRegistry) -> tuple[str, bytes]:
        """Run the step in this process and thread: validate the payload, call the task (an async one on a
        fresh event loop), check its result; returns the label and the result's compact JSON (checked
        against ``max_result_bytes``). The timeout is the caller's to enforce."""
        spec = registry.get(self.task)
        raw = spec.bind(self.payload, self.context)()
        if inspect.isawaitable(raw):
            raw = asyncio.run(_await(raw))
        label, result = spec.finish(raw, self.context)
        data = to_json(result)
        if self.max_result_bytes is not None and len(data) > self.max_result_bytes:
            raise self.too_large(len(data))
        return label, data


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"a task payload cannot hold a {type(value).__name__}")


async def _await(awaitable: Any) -> Any:
    return await awaitable


class StepExecutor(Protocol):
    """Runs task steps somewhere the engine's process is safe from them.

    ``run_step`` blocks until the step ends and returns ``(label, json_result)``,
    or raises: the task's own exception, ``StepTimeoutError`` once
    ``call.timeout`` seconds have passed (the step must then really be stopped),
    ``StepMemoryError``, ``StepResultTooLargeError``, or ``StepCancelledError``
    soon after ``cancelled()`` turns true (poll it; it is cheap). The engine may
    call it from several threads at once, one per concurrent step.

    An executor may also have ``runs_inline(task, payload) -> bool``: True when it would run that step in the
    calling thread at once (a cheap step it need not isolate). The engine then runs such steps of a superstep
    one after another in its own thread rather than handing each to its thread pool.
    """

    def run_step(self, call: StepCall, cancelled: Callable[[], bool]) -> tuple[str, Any]: ...

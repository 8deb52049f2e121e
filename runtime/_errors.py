"""The runtime's error hierarchy.

Every error the runtime raises on purpose derives from ``WorkflowError`` and
carries a stable ``code`` that callers (the designer's API, tests, the CLI)
key on, plus structured fields so nobody has to parse a message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime._diagnostics import Diagnostic


class WorkflowError(Exception):
    """Root of every deliberate runtime error."""

    code: str = "workflow.error"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = details

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly description, used by the API and the CLI."""
        payload: dict[str, Any] = {"code": self.code, "message": self.message}
        for key, value in self.details.items():
            if value is not None:
                payload[key] = value
        return payload


def drop_tracebacks(exc: BaseException) -> None:
    """Let ``exc``, the exceptions of its cause chain and those of a group forget their tracebacks.

    A caught exception holds its traceback, whose frames hold their locals and, through ``f_back``, their callers'
    frames with theirs, up to the frame that is still running when the exception is kept. The engine keeps a
    failed step's exception in the step it runs (``Work.error``), which those frames hold: a reference cycle per
    failed step, freed only by the cyclic collector, keeping everything the step held alive until then. Clearing
    the frames' locals is not enough (a frame's ``f_back`` stays, and the callers' frames still running get
    their locals back when they finish), so the traceback goes. The exception keeps its type, message, details
    and causes: all that an error route, a tolerated item, the trace or ``NodeFailedError`` says of it."""
    seen: set[int] = set()
    chain: list[BaseException | None] = [exc]
    while chain:
        current = chain.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        current.__traceback__ = None
        chain += (current.__cause__, current.__context__)
        if isinstance(current, BaseExceptionGroup):
            chain += current.exceptions


class PathSyntaxError(WorkflowError, ValueError):
    """A path string (or a path's root or parts) is malformed.

    It is also a ``ValueError`` so pydantic reports it as a field error when a
    document carries a bad path.
    """

    code = "path.syntax"

    def __init__(self, message: str, *, text: str | None = None, position: int | None = None,
                 expected: str | None = None) -> None:
        super().__init__(message, text=text, position=position, expected=expected)
        self.text = text
        self.position = position
        self.expected = expected


class WorkflowValidationError(WorkflowError):
    """The analyzer found errors; nothing ran. ``diagnostics`` lists all of them."""

    code = "workflow.invalid"

    def __init__(self, message: str, *, diagnostics: Sequence[Diagnostic] = ()) -> None:
        super().__init__(message)
        self.diagnostics = tuple(diagnostics)

    def to_dict(self) -> dict[str, Any]:
        payload = super().to_dict()
        payload["diagnostics"] = [d.to_dict() for d in self.diagnostics]
        return payload


class CorruptRunStateError(WorkflowError):
    """A persisted RunState is malformed. The runtime fails closed rather than guess."""

    code = "runstate.corrupt"


class InputValidationError(WorkflowError):
    """A payload (run input, task input, subgraph input, resume value) does not match its schema."""

    code = "input.invalid"


class TaskRegistrationError(WorkflowError):
    """A task cannot be registered (duplicate name, unusable signature)."""

    code = "task.registration"


class UnknownTaskError(WorkflowError):
    """A node names a task that is not in the registry."""

    code = "task.unknown"


class NodeFailedError(WorkflowError):
    """A node failed for good: retries exhausted and no ``error`` route."""

    code = "node.failed"


class ResumeError(WorkflowError):
    """A resume request does not fit the run (unknown interrupt, bad value, wrong label)."""

    code = "resume.invalid"


class SubgraphResolutionError(WorkflowError):
    """A subgraph reference cannot be resolved, or nesting went past the depth limit."""

    code = "subgraph.unresolved"


class TaskResultError(InputValidationError):
    """A task returned something its declaration does not allow: an undeclared label or a result that
    does not match its return annotation. An ``InputValidationError`` subclass so one handler covers
    both sides of a task call."""

    code = "task.result_invalid"


class UnknownNodeError(WorkflowError, KeyError):
    """A node id that the workflow does not contain was asked about (e.g. of an ``Analysis``)."""

    code = "node.unknown"

    def __str__(self) -> str:
        return self.message


class UnreachableNodeError(WorkflowError):
    """A question about a node that ``start`` never reaches: it has no control region or context."""

    code = "node.unreachable"


class BindingError(WorkflowError):
    """An output binding cannot be applied (``append`` onto a non-list, ``merge`` of a non-object, …)."""

    code = "binding.invalid"


class SubgraphDepthError(SubgraphResolutionError):
    """Subgraph calls nested deeper than the engine's limit (a recursion the analyzer could not see)."""

    code = "subgraph.depth"


class CheckpointNotFoundError(WorkflowError):
    """A checkpointer holds no run with that id."""

    code = "checkpoint.not_found"


class CheckpointWriteError(WorkflowError):
    """A checkpoint written in the background (``durability="batched"``) failed; the checkpointer stops there."""

    code = "checkpoint.write_failed"


class WorkflowBuildError(WorkflowError, ValueError):
    """``WorkflowBuilder`` was asked for something that cannot become a valid document."""

    code = "workflow.build"


class TaskError(WorkflowError):
    """A task failed on purpose with a reason meant for the author (a built-in's division by zero, a
    bad JMESPath expression). Raise it from your own tasks too; the engine treats it like any failure."""

    code = "task.failed"


class RedriveError(WorkflowError):
    """A redrive request does not fit the run: it did not fail, or nothing in it failed that can run again."""

    code = "redrive.invalid"


class ForkError(WorkflowError):
    """A fork request does not fit the checkpoint: it is finished, or an edit names something it lacks."""

    code = "fork.invalid"


class StepLimitError(WorkflowError):
    """A frame (one line of work) took more steps than its engine's ``max_steps``: a route cycle that never ends.
    Details: ``node_id``, ``frame_id``, ``scope_id``, ``steps``, ``max_steps`` and ``foreach`` (the item path,
    outermost first: ``[{"node_id", "index"}]``) of the frame that was stopped."""

    code = "run.step_limit"


class StepTimeoutError(TaskError):
    """A task step ran longer than its start-to-close timeout (``runtime._steps.step_timeout`` says which one
    applies). Details: ``node_id``, ``frame_id``, ``index`` (the innermost foreach item, if any), ``task``,
    ``attempt`` and ``limit_seconds``."""

    code = "step.timeout"


class RunTimeoutError(TaskError):
    """The run as a whole ran past its wall-time budget (``runtime.RunBudget``): the step that was running when
    it ran out was stopped, or the step about to start was not. Details as ``StepTimeoutError``, with
    ``budget_seconds``. Goes through the node's ``error`` route like any failure; never retried."""

    code = "run.timeout"


class RunBudgetExceededError(TaskError):
    """The run's steps together used up its step-seconds budget (``runtime.RunBudget``). Details as
    ``RunTimeoutError``, with ``budget_seconds`` and ``used_seconds``."""

    code = "run.budget"


class StepMemoryError(TaskError):
    """A task step ran out of the memory its step process may use (``limit_mb``); the process was ended."""

    code = "step.memory"


class StepResultTooLargeError(TaskError):
    """A task step returned a result whose JSON form is larger than the engine allows (``limit_bytes``)."""

    code = "step.result_too_large"


class StepCancelledError(WorkflowError):
    """The run was cancelled while this step ran, and the step was stopped. The run loop turns it into a
    cancelled run; it never reaches a retry policy or an ``error`` route."""

    code = "step.cancelled"


class ForeachItemsFailedError(WorkflowError):
    """More items of a foreach failed than its node tolerates (``tolerated_failure_count``/``_percentage``; none
    when unset). Details: ``node_id``, ``activation_id``, ``total``, ``failed`` (the failed indices, in order)
    and ``errors`` (the first few ``{"index", "error"}`` records)."""

    code = "foreach.items_failed"


class EngineOptionsError(WorkflowError, ValueError):
    """An ``EngineOptions`` field holds a value the engine cannot use; ``field`` names it, ``value`` is its repr.

    Also a ``ValueError``: a bad setting is a bad argument, and callers that caught ``ValueError`` from the old
    keywords keep working.
    """

    code = "engine.invalid_option"

    def __init__(self, message: str, *, field: str, value: Any) -> None:
        super().__init__(message, field=field, value=repr(value))
        self.field = field
        self.value = value

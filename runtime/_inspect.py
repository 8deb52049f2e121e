"""Read-only views of a RunState and the checks the engine makes before it starts or resumes.

The designer's API and run pages use these so they never re-derive workflow
semantics: the context of a live frame comes from the same ancestry walk the
engine uses, and a resume value or run input is refused by the same checks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from runtime._compiled import check_payload, schema_validator
from runtime._context import RuntimeContext
from runtime._document import Workflow
from runtime._errors import InputValidationError, ResumeError
from runtime._state import RunState, foreach_item_metadata, frame_of, runtime_context


def _state(run_state: RunState | Mapping[str, Any] | str | bytes) -> RunState:
    """The state to read, checked like every state that comes from outside (``CorruptRunStateError``)."""
    if isinstance(run_state, RunState):
        run_state.check()
        return run_state
    return RunState.from_json(run_state)


def frame_context(run_state: RunState | Mapping[str, Any] | str | bytes, frame_id: str) -> RuntimeContext:
    """The structured context of a live frame, exactly as the engine derives it.

    Raises ``CorruptRunStateError`` for an unknown frame or malformed metadata.
    """
    rs = _state(run_state)
    scope = rs.scopes.get(frame_of(rs, frame_id).scope_id)
    return runtime_context(rs, frame_id, workflow_id=scope.workflow.id if scope is not None else "")


@dataclass(frozen=True, slots=True)
class ActivationProgress:
    activation_id: str
    node_id: str
    scope_id: str
    frame_id: str
    parent_activation_id: str | None
    parent_index: int | None
    total: int
    done: int
    running: int

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


def activation_progress(run_state: RunState | Mapping[str, Any] | str | bytes) -> list[ActivationProgress]:
    """Each live foreach activation with done/total, and the enclosing item it runs in (if any)."""
    rs = _state(run_state)
    progress = []
    for activation in rs.activations.values():
        waiting = frame_of(rs, activation.frame_id)
        meta = foreach_item_metadata(rs, waiting)
        progress.append(ActivationProgress(
            activation_id=activation.activation_id, node_id=activation.node_id, scope_id=activation.scope_id,
            frame_id=activation.frame_id, parent_activation_id=meta.activation_id if meta else None,
            parent_index=meta.index if meta else None, total=len(activation.items), done=activation.completed,
            running=len(activation.running),
        ))
    return progress


def check_run_input(workflow: Workflow | Mapping[str, Any], input: Any) -> dict[str, Any]:
    """The run input as the engine will store it (defaults filled); ``InputValidationError`` otherwise.

    ``details["errors"]`` lists ``{field, message}`` per problem.
    """
    document = workflow if isinstance(workflow, Workflow) else Workflow.model_validate(workflow)
    schema = document.input_schema
    return check_payload(schema, schema_validator(schema), input, what="workflow input", workflow_id=document.id)


def check_resume_value(schema: Mapping[str, Any], labels: Sequence[str], value: Any, label: str | None, *,
                       interrupt_id: str, node_id: str) -> tuple[str, dict[str, Any]]:
    chosen = labels[0] if label is None else label
    if chosen not in labels:
        raise ResumeError(f"interrupt {node_id!r} cannot resume with label {chosen!r}; its labels are "
                          f"{', '.join(labels)}", interrupt_id=interrupt_id, label=chosen, labels=list(labels),
                          errors=[{"field": "label", "message": f"must be one of {', '.join(labels)}"}])
    try:
        checked = check_payload(schema, schema_validator(schema), value, what=f"resume value for interrupt {node_id!r}")
    except InputValidationError as exc:
        raise ResumeError(exc.message, interrupt_id=interrupt_id, node_id=node_id,
                          errors=exc.details.get("errors")) from None
    return chosen, checked


def check_resume(run_state: RunState | Mapping[str, Any] | str | bytes, interrupt_id: str, value: Any,
                 label: str | None = None) -> tuple[str, dict[str, Any]]:
    """``(label, value)`` as ``resume`` would accept them; ``ResumeError`` (with ``details["errors"]``) if not."""
    rs = _state(run_state)
    if rs.status != "interrupted":
        raise ResumeError(f"run {rs.run_id!r} is {rs.status}, not interrupted; nothing to resume",
                          run_id=rs.run_id, status=rs.status)
    record = rs.interrupts.get(interrupt_id)
    if record is None:
        raise ResumeError(f"run {rs.run_id!r} has no open interrupt {interrupt_id!r}", interrupt_id=interrupt_id,
                          open=sorted(rs.interrupts))
    return check_resume_value(record.resume_schema, record.labels, value, label, interrupt_id=interrupt_id,
                              node_id=record.node_id)

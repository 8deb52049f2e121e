"""Read-only views of a RunState and the checks the engine makes before it starts or resumes.

The designer's API and run pages use these so they never re-derive workflow
semantics: the context of a live frame comes from the same ancestry walk the
engine uses, and a resume value or run input is refused by the same checks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from runtime._algo import forkable, reset_failed
from runtime._compiled import check_payload, schema_validator
from runtime._context import RuntimeContext
from runtime._document import Workflow
from runtime._errors import ForkError, InputValidationError, ResumeError
from runtime._state import (
    ForeachItemMetadata,
    RunState,
    foreach_item_metadata,
    frame_of,
    given_run_state,
    runtime_context,
)
from runtime._summary import ActivationProgress


def _state(run_state: RunState, where: str) -> RunState:
    """The state to read, checked like every state that comes from outside (``CorruptRunStateError``): the caller
    may have changed the object since it was parsed (``runtime.state.parse_run_state``)."""
    rs = given_run_state(run_state, where)
    rs.check()
    return rs


def frame_context(run_state: RunState, frame_id: str) -> RuntimeContext:
    """The structured context of a live frame, exactly as the engine derives it.

    Raises ``CorruptRunStateError`` for an unknown frame or malformed metadata.
    """
    rs = _state(run_state, "frame_context")
    scope = rs.scopes.get(frame_of(rs, frame_id).scope_id)
    return runtime_context(rs, frame_id, workflow_id=scope.workflow.id if scope is not None else "")


def activation_progress(run_state: RunState) -> list[ActivationProgress]:
    """Each live foreach activation with done/total, and the enclosing item it runs in (if any), from a state
    checked in full (``run_summary`` reads the same from the stored fields alone)."""
    rs = _state(run_state, "activation_progress")
    progress = []
    for activation in rs.activations.values():
        waiting = frame_of(rs, activation.frame_id)
        meta = foreach_item_metadata(rs, waiting)
        progress.append(ActivationProgress(
            activation_id=activation.activation_id, node_id=activation.node_id, scope_id=activation.scope_id,
            frame_id=activation.frame_id, parent_activation_id=meta.activation_id if meta else None,
            parent_index=meta.index if meta else None, total=len(activation.items), done=activation.completed,
            running=len(activation.running), failed=len(activation.failed),
        ))
    return progress


@dataclass(frozen=True, slots=True)
class FrameView:
    """A live frame as a page or an API shows it: where it is and, for an item frame, which foreach item it
    runs (``foreach``: checked metadata, never the raw entry)."""

    frame_id: str
    parent_frame_id: str | None
    scope_id: str
    lineage_id: str
    node_id: str
    status: str
    waiting_for: str | None
    foreach: ForeachItemMetadata | None

    def to_dict(self) -> dict[str, Any]:
        """JSON: the fields, ``foreach`` as ``{node_id, activation_id, index, item, alias}`` or null."""
        out = {name: getattr(self, name) for name in self.__slots__}
        if self.foreach is not None:
            out["foreach"] = {name: getattr(self.foreach, name) for name in self.foreach.__slots__}
        return out


def live_frames(run_state: RunState) -> list[FrameView]:
    """Every live frame of the state, in its stored order; ``CorruptRunStateError`` for a damaged state."""
    rs = _state(run_state, "live_frames")
    return [
        FrameView(frame_id=frame.frame_id, parent_frame_id=frame.parent_frame_id, scope_id=frame.scope_id,
                  lineage_id=frame.lineage_id, node_id=frame.node_id, status=frame.status,
                  waiting_for=frame.waiting_for, foreach=foreach_item_metadata(rs, frame))
        for frame in rs.frames.values()
    ]


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


def check_resume(run_state: RunState, interrupt_id: str, value: Any,
                 label: str | None = None) -> tuple[str, dict[str, Any]]:
    """``(label, value)`` as ``resume`` would accept them; ``ResumeError`` (with ``details["errors"]``) if not."""
    rs = _state(run_state, "check_resume")
    if rs.status != "interrupted":
        raise ResumeError(f"run {rs.run_id!r} is {rs.status}, not interrupted; nothing to resume",
                          run_id=rs.run_id, status=rs.status)
    record = rs.interrupts.get(interrupt_id)
    if record is None:
        raise ResumeError(f"run {rs.run_id!r} has no open interrupt {interrupt_id!r}", interrupt_id=interrupt_id,
                          open=sorted(rs.interrupts))
    return check_resume_value(record.resume_schema, record.labels, value, label, interrupt_id=interrupt_id,
                              node_id=record.node_id)


def check_redrive(run_state: RunState) -> list[dict[str, Any]]:
    """What ``Engine.redrive`` would run again: ``{frame_id, node_id}`` (plus ``foreach`` and ``index`` for an
    item) per failed frame, in queue order; ``RedriveError`` when the run cannot be redriven."""
    rs = _state(run_state, "check_redrive").model_copy(deep=True)
    again = []
    for frame in reset_failed(rs):
        entry: dict[str, Any] = {"frame_id": frame.frame_id, "node_id": frame.node_id}
        meta = foreach_item_metadata(rs, frame)
        if meta is not None:
            entry |= {"foreach": meta.node_id, "index": meta.index}
        again.append(entry)
    return again


@dataclass(frozen=True, slots=True)
class ForkEdits:
    """A fork's edits as the engine accepts them: the new root state (None: unchanged) and the answer
    (``interrupt_id``, ``value``, ``label``; None: no interrupt answered)."""

    state: dict[str, Any] | None
    answer: dict[str, Any] | None

    @property
    def edited(self) -> list[str]:
        names = ["state"] if self.state is not None else []
        if self.answer is not None:
            names.append(f"answer:{self.answer['interrupt_id']}")
        return names


def check_fork(workflow: Workflow | Mapping[str, Any], run_state: RunState, *,
               state: Any = None, answer: Mapping[str, Any] | None = None) -> ForkEdits:
    """The edits ``Engine.fork`` would apply to a new run from ``run_state`` (a past checkpoint of a run of
    ``workflow``), checked the same way: ``ForkError`` when the checkpoint is finished or the answer names no
    interrupt open there; ``InputValidationError`` (``field="state"``, per-field ``errors``) for a state that
    breaks the state schema; ``ResumeError`` (per-field ``errors``) for an answer its resume schema refuses."""
    rs = _state(run_state, "check_fork")
    forkable(rs)
    document = workflow if isinstance(workflow, Workflow) else Workflow.model_validate(workflow)
    checked_state = None
    if state is not None:
        schema = document.state_schema
        checked_state = check_payload(schema, schema_validator(schema), state, what="the forked run's state",
                                      field="state")
    checked_answer = None
    if answer is not None:
        interrupt_id = answer.get("interrupt_id")
        record = rs.interrupts.get(interrupt_id) if isinstance(interrupt_id, str) else None
        if record is None:
            raise ForkError(f"the checkpoint at superstep {rs.step} has no open interrupt {interrupt_id!r} to "
                            "answer", interrupt_id=interrupt_id, open=sorted(rs.interrupts),
                            field="answer.interrupt_id")
        label, value = check_resume_value(record.resume_schema, record.labels, answer.get("value"),
                                          answer.get("label"), interrupt_id=record.interrupt_id,
                                          node_id=record.node_id)
        checked_answer = {"interrupt_id": record.interrupt_id, "value": value, "label": label}
    return ForkEdits(checked_state, checked_answer)

"""What a run's RunState means for the run pages and the API, asked of the runtime.

The designer derives nothing itself: progress per foreach activation and a
frame's structured context come from ``runtime.activation_progress`` and
``runtime.frame_context`` reading the stored checkpoint. A finished run has
pruned its frames and activations, so it has neither; its trace keeps what
each frame saw (``node_started`` events of item frames carry the context).

Every read of a checkpoint goes through ``checkpoint_of``, which has the
runtime check it (``RunState.from_json``): a damaged checkpoint is
``CorruptRunStateError`` (``runstate.corrupt``, naming the entry and field),
which the API answers with 409 and the pages show as a damaged run; never as
"no checkpoint yet" or a state with something missing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from designer.core.errors import ObjectNotFound
from designer.models import Run, RunStatePart
from designer.runs.checkpointer import run_state_of
from runtime import RunState
from runtime.errors import CorruptRunStateError
from runtime.inspect import activation_progress, live_frames
from runtime.inspect import frame_context as runtime_frame_context


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A run's latest checkpoint: the complete RunState JSON (parts joined) and the checked RunState."""

    data: dict[str, Any]
    state: RunState


def checkpoint_of(run: Run) -> Checkpoint | None:
    """The run's latest checkpoint, checked by the runtime; None before the first one.

    ``CorruptRunStateError`` when it is damaged: not a JSON object, not the
    RunState format, a stored part missing, or a structure the engine could
    not have written (e.g. tampered foreach item metadata).
    """
    data = run_state_of(run)
    if data is None:
        return None
    return Checkpoint(data, RunState.from_json(data))


@dataclass(frozen=True, slots=True)
class Inspection:
    """The run's checked checkpoint, or why it is damaged (``error``; then ``state`` is None)."""

    state: RunState | None
    error: str = ""


def load_state(run: Run) -> Inspection:
    """``checkpoint_of`` for the pages: a damaged checkpoint is shown (its ``error``), not raised."""
    try:
        checkpoint = checkpoint_of(run)
    except CorruptRunStateError as exc:
        return Inspection(None, error=exc.message)
    return Inspection(checkpoint.state if checkpoint is not None else None)


def context_of(state: RunState | None, frame_id: str) -> dict[str, Any] | None:
    """The structured context of a live frame (``None`` when the frame is not in the state)."""
    if state is None or frame_id not in state.frames:
        return None
    return dict(runtime_frame_context(state, frame_id).to_mapping())


def damage_of(run: Run) -> str:
    """Why the run's checkpoint is damaged; empty when it is intact (or there is none yet)."""
    return load_state(run).error


def with_damage(runs: Iterable[Run]) -> list[tuple[Run, str | None]]:
    """Each run with what is wrong with its stored state (``None`` when nothing is), for a table of runs:
    ``damage_of`` for a page of runs, with the stored parts of all of them read in one query."""
    runs = list(runs)
    stated = [run for run in runs if run.run_state is not None]
    wanted: dict[int, list[str]] = {
        run.pk: RunState.parts_left_out(run.run_state) for run in stated if isinstance(run.run_state, dict)
    }
    keys = {key for found in wanted.values() for key in found}
    stored: dict[int, dict[str, Any]] = {}
    if keys:
        rows = RunStatePart.objects.filter(run_id__in=list(wanted), key__in=keys).values_list("run_id", "key",
                                                                                               "value")
        for run_id, key, value in rows:
            stored.setdefault(run_id, {})[key] = value
    damages: dict[int, str] = {}
    for run in stated:
        try:
            if not isinstance(run.run_state, dict):
                run_state_of(run)  # raises, with the designer's wording
            RunState.join_parts(run.run_state, stored.get(run.pk, {}))
        except CorruptRunStateError as exc:
            damages[run.pk] = exc.message
    return [(run, damages.get(run.pk)) for run in runs]


def root_state(checkpoint: Checkpoint | None) -> Any:
    """The root scope's state values (the workflow's ``state``) in the latest checkpoint."""
    if checkpoint is None:
        return None
    root = checkpoint.state.scopes.get("root")
    return root.state if root is not None else None


def progress(checkpoint: Checkpoint | None) -> list[dict[str, Any]]:
    """Every live foreach activation: ``{activation_id, node_id, scope_id, frame_id, parent_activation_id,
    parent_index, total, done, running}`` (``parent_*``: the enclosing item, for nested foreach)."""
    if checkpoint is None:
        return []
    return [entry.to_dict() for entry in activation_progress(checkpoint.state)]


def frames(checkpoint: Checkpoint | None) -> list[dict[str, Any]]:
    """The live frames of the latest checkpoint (their context: ``frame_context``)."""
    if checkpoint is None:
        return []
    return [frame.to_dict() for frame in live_frames(checkpoint.state)]


def frame_context(run: Run, frame_id: str) -> dict[str, Any]:
    """``{run_id, frame_id, node_id, scope_id, lineage_id, workflow_id, context}`` where ``context`` is the
    structured ``context`` root a path in that frame reads (``foreach``, ``loop_item``, ``loop_index``, aliases).
    ``ObjectNotFound`` for a frame that is not live in the latest checkpoint; ``CorruptRunStateError`` for a damaged
    checkpoint."""
    checkpoint = checkpoint_of(run)
    if checkpoint is None or frame_id not in checkpoint.state.frames:
        raise ObjectNotFound(f"run {run.pk} has no live frame {frame_id!r}; finished frames are pruned from the "
                             "run state (their context is in the trace)", frame_id=frame_id)
    context = runtime_frame_context(checkpoint.state, frame_id)
    return {
        "run_id": context.run_id,
        "workflow_id": context.workflow_id,
        "frame_id": context.frame_id,
        "node_id": context.node_id,
        "scope_id": context.scope_id,
        "lineage_id": context.lineage_id,
        "context": dict(context.to_mapping()),
    }

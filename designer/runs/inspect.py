"""What the run pages and the API show about a run's RunState, asked of the runtime.

The designer derives nothing itself: progress per foreach activation and a
frame's structured context come from ``runtime.activation_progress`` and
``runtime.frame_context`` reading the stored checkpoint. A finished run has
pruned its frames and activations, so it has neither; its trace keeps what
each frame saw (``node_started`` events of item frames carry the context).
"""

from __future__ import annotations

import logging
from typing import Any

from designer.errors import NotFound
from designer.models import Run, RunEvent
from designer.runs.checkpointer import run_state_of
from runtime import CorruptRunStateError, activation_progress
from runtime import frame_context as runtime_frame_context

logger = logging.getLogger("designer.runs")


def last_seq(run: Run) -> int | None:
    return RunEvent.objects.filter(run=run).order_by("-seq").values_list("seq", flat=True).first()


def root_state(run: Run) -> Any:
    """The root scope's state values (the workflow's ``state``) in the latest checkpoint."""
    data = run.run_state
    if not isinstance(data, dict):
        return None
    root = (data.get("scopes") or {}).get("root")
    if isinstance(root, dict) and root.get("lists"):
        # Growing lists (collected results, append targets) are stored in chunks beside the column.
        joined = run_state_of(run) or {}
        root = (joined.get("scopes") or {}).get("root")
    return root.get("state") if isinstance(root, dict) else None


def progress(run: Run) -> list[dict[str, Any]]:
    """Every live foreach activation: ``{activation_id, node_id, scope_id, frame_id, parent_activation_id,
    parent_index, total, done, running}`` (``parent_*``: the enclosing item, for nested foreach)."""
    data = run_state_of(run)
    if data is None:
        return []
    try:
        return [entry.to_dict() for entry in activation_progress(data)]
    except CorruptRunStateError:
        logger.exception("run %s: cannot read foreach progress from its checkpoint", run.pk)
        return []


def frames(run: Run) -> list[dict[str, Any]]:
    """The live frames of the latest checkpoint, as stored (their context: ``frame_context``)."""
    data = run.run_state
    if not isinstance(data, dict):
        return []
    found = data.get("frames") or {}
    return [
        {
            "frame_id": frame.get("frame_id"),
            "parent_frame_id": frame.get("parent_frame_id"),
            "scope_id": frame.get("scope_id"),
            "lineage_id": frame.get("lineage_id"),
            "node_id": frame.get("node_id"),
            "status": frame.get("status"),
            "waiting_for": frame.get("waiting_for"),
            "foreach": (frame.get("metadata") or {}).get("foreach"),
        }
        for frame in found.values()
        if isinstance(frame, dict)
    ]


def frame_context(run: Run, frame_id: str) -> dict[str, Any]:
    """``{run_id, frame_id, node_id, scope_id, lineage_id, workflow_id, context}`` where ``context`` is the
    structured ``context`` root a path in that frame reads (``foreach``, ``loop_item``, ``loop_index``, aliases).
    ``NotFound`` for a frame that is not live in the latest checkpoint."""
    data = run_state_of(run)
    if data is None or frame_id not in (data.get("frames") or {}):
        raise NotFound(f"run {run.pk} has no live frame {frame_id!r}; finished frames are pruned from the "
                       "run state (their context is in the trace)", frame_id=frame_id)
    context = runtime_frame_context(data, frame_id)
    return {
        "run_id": context.run_id,
        "workflow_id": context.workflow_id,
        "frame_id": context.frame_id,
        "node_id": context.node_id,
        "scope_id": context.scope_id,
        "lineage_id": context.lineage_id,
        "context": dict(context.to_mapping()),
    }

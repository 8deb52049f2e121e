"""Reading a run's kept checkpoints (its history, for forking) and how a run relates to others."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from designer.models import ForeachBatchItem, Run, RunCheckpoint, RunEvent
from designer.runs.checkpointer import checkpoint_state_of
from runtime import RunState
from runtime.inspect import frame_context, live_frames


def checkpoints_of(run: Run) -> list[dict[str, Any]]:
    """``{step, status, attempt, trace_seq}`` of every kept checkpoint, oldest first. ``trace_seq`` is the engine's
    counter (``RunState.trace_seq``, as in the run's ``run_state``), not a stored event number."""
    rows = RunCheckpoint.objects.filter(run=run).order_by("step")
    return [{"step": step, "status": status, "attempt": attempt, "trace_seq": trace_seq}
            for step, status, attempt, trace_seq in rows.values_list("step", "status", "attempt",
                                                                      "engine_trace_seq")]


def checkpoint_detail(row: RunCheckpoint) -> dict[str, Any]:
    """A kept checkpoint as the run page and the API show it: the root state, open interrupts, and every live
    frame with the structured context a path in it reads, exactly as the engine derives it; ``forkable``
    says whether a run can go on from it. ``CorruptRunStateError`` when the stored checkpoint is damaged."""
    state = RunState.from_json(checkpoint_state_of(row))
    frames = []
    for frame in live_frames(state):
        context = frame_context(state, frame.frame_id)
        item = frame.foreach
        frames.append({
            "frame_id": frame.frame_id, "parent_frame_id": frame.parent_frame_id, "scope_id": frame.scope_id,
            "node_id": frame.node_id, "status": frame.status,
            "foreach": {"node_id": item.node_id, "index": item.index} if item is not None else None,
            "context": dict(context.to_mapping()),
        })
    root = state.scopes.get("root")
    return {
        "step": row.step, "status": row.status, "attempt": row.attempt, "trace_seq": row.engine_trace_seq,
        "forkable": state.status in ("running", "interrupted"),
        "state": root.state if root is not None else None,
        "interrupts": [{"interrupt_id": i.interrupt_id, "node_id": i.node_id, "frame_id": i.frame_id,
                        "prompt": i.prompt, "payload": i.payload, "resume_schema": i.resume_schema,
                        "labels": i.labels} for i in state.interrupts.values()],
        "frames": frames,
    }


@dataclass(frozen=True, slots=True)
class TolerantRedrive:
    """What redriving a completed run runs again: the tolerated failed items ``indices`` of the distributed foreach
    activation that joined first with failures, from the kept checkpoint after superstep ``step`` (the last one
    that waited for its batches). ``kept`` is False when that checkpoint is no longer kept."""

    activation_id: str
    node_id: str
    step: int
    indices: tuple[int, ...]
    kept: bool


def tolerated_failures(run: Run) -> TolerantRedrive | None:
    """The redrive of a completed run whose distributed foreach tolerated failed items, None when no committed
    item of it failed. Every node after that foreach runs again, later foreach nodes included."""
    failed: dict[str, list[int]] = {}
    rows = ForeachBatchItem.objects.filter(run_id=run.pk).order_by("activation_id", "index")
    for activation_id, index, error in rows.values_list("activation_id", "index", "error").iterator():
        if error is not None:
            failed.setdefault(activation_id, []).append(index)
    if not failed:
        return None
    # A foreach redrive went back to the checkpoint after superstep ``from_step``: the joins recorded after
    # that superstep and before the redrive belong to an undone attempt (their failed items are stale).
    rewinds: list[tuple[int, int]] = []
    for seq, data in RunEvent.objects.filter(run_id=run.pk, kind="run_redriven").values_list("seq", "data"):
        back = _summary(data).get("from_step")
        if isinstance(back, int) and not isinstance(back, bool):
            rewinds.append((seq, back))
    joins = (RunEvent.objects.filter(run_id=run.pk, kind="foreach_completed", activation_id__in=list(failed))
             .order_by("seq").values_list("activation_id", "node_id", "seq", "data"))
    last: dict[str, tuple[str, int]] = {}
    for activation_id, node_id, seq, data in joins:
        step = data.get("step") if isinstance(data, dict) else None
        if not isinstance(step, int) or isinstance(step, bool):
            continue
        if any(seq < mark and step > back for mark, back in rewinds):
            last.pop(activation_id, None)
            continue
        last[activation_id] = (node_id, step)  # a redriven activation joins again: its latest join counts
    if not last:
        return None
    activation_id = min(last, key=lambda key: last[key][1])
    node_id, step = last[activation_id]
    before = step - 1
    return TolerantRedrive(activation_id, node_id, before, tuple(failed[activation_id]),
                           RunCheckpoint.objects.filter(run_id=run.pk, step=before).exists())


def _summary(data: Any) -> dict[str, Any]:
    summary = data.get("summary") if isinstance(data, dict) else None
    return summary if isinstance(summary, dict) else {}

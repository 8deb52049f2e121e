"""Live structure of a run, asked of the runtime: foreach progress and a frame's structured context.

The designer never derives these itself. ``RunState`` (the run's latest
checkpoint) goes through the runtime's own helpers, the same ones the engine
uses, so the page shows exactly what a task in that frame would see. A
finished run has pruned its frames and activations; for those the trace is
the only record, and only what the engine recorded there is shown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from designer.models import Run, RunEvent
from designer.runs.checkpoints import checkpoint_of
from designer.views.run_display import summary_of
from runtime import CorruptRunStateError, RunState, activation_progress, frame_context


@dataclass(slots=True)
class Progress:
    activation_id: str
    node_id: str
    done: int
    total: int | None
    running: int = 0
    finished: bool = False
    parent_activation_id: str | None = None
    parent_index: int | None = None
    lineage_id: str = ""
    children: list[Progress] = field(default_factory=list)
    depth: int = 0

    @property
    def percent(self) -> float:
        if not self.total:
            return 100.0 if self.finished else 0.0
        return round(100.0 * min(self.done, self.total) / self.total, 1)


@dataclass(frozen=True, slots=True)
class Inspection:
    """The run's checked checkpoint, or why it is damaged (``error``; then ``state`` is None)."""

    state: RunState | None
    error: str = ""


def load_state(run: Run) -> Inspection:
    try:
        checkpoint = checkpoint_of(run)
    except CorruptRunStateError as exc:
        return Inspection(None, error=exc.message)
    return Inspection(checkpoint.state if checkpoint is not None else None)


def context_of(state: RunState | None, frame_id: str) -> dict[str, Any] | None:
    """The structured context of a live frame (``None`` when the frame is not in the state)."""
    if state is None or frame_id not in state.frames:
        return None
    return dict(frame_context(state, frame_id).to_mapping())


def recorded_context(events: Iterable[RunEvent]) -> dict[str, Any] | None:
    """The context the engine recorded when the frame's step started, if it recorded one."""
    for event in events:
        context = summary_of(event).get("context")
        if event.kind == "node_started" and isinstance(context, dict):
            return context
    return None


def progress_rows(state: RunState | None, events: Iterable[RunEvent],
                  batches: Mapping[str, tuple[int, int]] | None = None) -> list[Progress]:
    """One row per foreach activation, children under the item of their parent activation.

    Live activations come from the runtime (``activation_progress``); ones
    that already finished are pruned from RunState and come from their trace
    events (``foreach_started`` .. ``foreach_completed`` and the completed
    items in between).
    """
    rows: dict[str, Progress] = {}
    # The trace first: it knows every activation, including finished ones.
    lineage_of_item: dict[str, tuple[str, int | None]] = {}
    for event in events:
        kind, act = event.kind, event.activation_id
        if kind == "foreach_started" and act:
            total = summary_of(event).get("total")
            parent = lineage_of_item.get(event.lineage_id)
            rows[act] = Progress(
                activation_id=act, node_id=event.node_id, done=0,
                total=total if isinstance(total, int) and not isinstance(total, bool) else None,
                parent_activation_id=parent[0] if parent else None,
                parent_index=parent[1] if parent else None,
                lineage_id=event.lineage_id,
            )
        elif kind == "item_started" and act:
            lineage_of_item[event.lineage_id] = (act, event.index)
        elif kind == "item_completed" and act in rows:
            rows[act].done += 1
        elif kind == "foreach_completed" and act in rows:
            row = rows[act]
            row.finished = True
            if row.total is None:
                row.total = row.done
    if state is not None:
        for live in activation_progress(state):
            entry = rows.get(live.activation_id)
            if entry is None:
                entry = rows[live.activation_id] = Progress(
                    activation_id=live.activation_id, node_id=live.node_id, done=0, total=None
                )
            entry.done, entry.total, entry.running = live.done, live.total, live.running
            if batches and live.activation_id in batches:
                # A distributed foreach runs its items in batches elsewhere: committed items and running batches.
                entry.done, entry.running = batches[live.activation_id]
            entry.parent_activation_id = live.parent_activation_id or entry.parent_activation_id
            entry.parent_index = live.parent_index if live.parent_index is not None else entry.parent_index
    return nest_progress(rows)


def nest_progress(rows: dict[str, Progress]) -> list[Progress]:
    """Depth-first order: an activation is followed by the activations started inside its items."""
    top: list[Progress] = []
    for row in rows.values():
        parent = rows.get(row.parent_activation_id or "")
        if parent is not None and parent is not row:
            parent.children.append(row)
        else:
            top.append(row)
    out: list[Progress] = []

    def visit(row: Progress, depth: int) -> None:
        row.depth = depth
        out.append(row)
        for child in sorted(row.children, key=lambda r: (r.parent_index or 0)):
            visit(child, depth + 1)

    for row in top:
        visit(row, 0)
    return out

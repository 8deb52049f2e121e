"""A run drawn on its workflow's graph: each node's status and counts, each loop's progress, and
what one node saw for one item (its context, the values its bindings read, its result).

Everything comes from the run's trace and its latest checkpoint through the runtime's own
helpers (``designer.runs.checkpoints``); this module only groups it by node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from designer.models import Run, RunEvent
from designer.runs.checkpoints import context_of, load_state
from designer.views.run_display import event_data, progress_rows, summary_of
from runtime import PathSyntaxError, parse_source_path


@dataclass(slots=True)
class NodeRun:
    started: int = 0
    completed: int = 0
    failed: int = 0
    running: int = 0
    waiting: int = 0

    @property
    def status(self) -> str:
        if self.waiting:
            return "waiting"
        if self.running:
            return "running"
        if self.failed:
            return "failed"
        if self.completed:
            return "done"
        return "idle"


@dataclass(slots=True)
class LoopRun:
    done: int = 0
    total: int | None = 0
    failed: int = 0
    running: int = 0
    activations: list[str] = field(default_factory=list)


_OPEN = {"node_started": "running", "interrupted": "waiting"}


def node_as_ran(run: Run, node_id: str) -> dict[str, Any] | None:
    """Node ``node_id`` of the document ``run`` ran (the draft may have changed since), or None when it has no
    such node; a stored document that no longer reads (nodes not a list of objects) has none."""
    graph = run.document if isinstance(run.document, dict) else {}
    nodes = graph.get("nodes")
    return next((n for n in nodes if isinstance(n, dict) and n.get("id") == node_id), None) \
        if isinstance(nodes, list) else None


def overlay(run: Run, events: Sequence[RunEvent]) -> dict[str, Any]:
    """``{"run", "nodes": {id: {status, started, completed, failed, running, waiting}}, "loops": {...}}``."""
    nodes: dict[str, NodeRun] = {}
    last: dict[str, tuple[str, str]] = {}  # frame id -> (node id, last kind)
    for event in events:
        if not event.node_id or not event.frame_id:
            continue
        entry = nodes.setdefault(event.node_id, NodeRun())
        if event.kind == "node_started":
            entry.started += 1
        elif event.kind == "node_completed":
            entry.completed += 1
        elif event.kind == "node_failed":
            entry.failed += 1
        if event.kind in ("node_started", "node_completed", "node_failed", "interrupted"):
            last[event.frame_id] = (event.node_id, event.kind)
    live = run.status in ("running", "queued", "interrupted", "waiting")
    for node_id, kind in last.values():
        state = _OPEN.get(kind)
        if state == "waiting" and run.status == "interrupted":
            nodes[node_id].waiting += 1
        elif state == "running" and live:
            nodes[node_id].running += 1
    inspection = load_state(run)
    loops: dict[str, LoopRun] = {}
    owner_of: dict[str, str] = {}
    for row in progress_rows(inspection.state, events):
        loop = loops.setdefault(row.node_id, LoopRun())
        loop.done += row.done
        loop.running += row.running
        loop.total = None if loop.total is None or row.total is None else loop.total + row.total
        loop.activations.append(row.activation_id)
        owner_of[row.activation_id] = row.node_id
    for event in events:
        if event.kind == "node_failed" and event.activation_id in owner_of:
            loops[owner_of[event.activation_id]].failed += 1
    for node_id, loop in loops.items():
        # A foreach's own frames end when it hands items out; its work is its items.
        entry = nodes.setdefault(node_id, NodeRun())
        entry.completed, entry.failed = loop.done, loop.failed
        entry.started = max(entry.started, loop.done)
        if loop.running and live:
            entry.running = loop.running
    return {
        "run": {"id": run.pk, "status": run.status},
        "nodes": {node_id: {"status": entry.status, "started": entry.started, "completed": entry.completed,
                            "failed": entry.failed, "running": entry.running, "waiting": entry.waiting}
                  for node_id, entry in nodes.items()},
        "loops": {node_id: {"done": loop.done, "total": loop.total, "failed": loop.failed, "running": loop.running,
                            "activations": len(loop.activations)}
                  for node_id, loop in loops.items()},
    }


@dataclass(frozen=True, slots=True)
class Visit:
    """One frame of a node: one item (or the only run) of it, newest last."""

    frame_id: str
    label: str
    seq: int


def _item_text(item: object) -> str:
    if isinstance(item, Mapping):
        for key in ("name", "title", "id", "sku"):
            value = item.get(key)
            if isinstance(value, str | int) and not isinstance(value, bool):
                return f" {str(value)[:40]!r}" if isinstance(value, str) else f" {value}"
    elif isinstance(item, str | int) and not isinstance(item, bool):
        return f" {item!r}"[:42]
    return ""


def item_label(context: Mapping[str, Any] | None) -> str:
    """``customers[0] 'Ada' › orders[1] 'A-1'``: which item of which loop a frame worked on."""
    loops = (context or {}).get("foreach")
    if not isinstance(loops, Mapping) or not loops:
        return "the only run"
    parts = []
    for loop_id, entry in loops.items():
        if isinstance(entry, Mapping):
            parts.append(f"{loop_id}[{entry.get('index')}]{_item_text(entry.get('item'))}")
    return " › ".join(parts) or "the only run"


def visits(events: Iterable[RunEvent], node_id: str) -> list[Visit]:
    out = []
    for event in events:
        if event.kind == "node_started" and event.node_id == node_id and event.frame_id:
            context = summary_of(event).get("context")
            out.append(Visit(event.frame_id, item_label(context if isinstance(context, Mapping) else None),
                             event.seq))
    return out


def _read(value: Any, parts: Sequence[str]) -> tuple[bool, Any]:
    for part in parts:
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return False, None
    return True, value


def bound_values(node: Mapping[str, Any], *, run_input: Any, context: Mapping[str, Any] | None,
                 state: Any) -> list[dict[str, Any]]:
    """Each input binding of ``node`` with the value it read: a literal, the run's input, the item's
    context as recorded, or the state as it is now (said so: the state may have moved on)."""
    rows = []
    for binding in node.get("input", []) or []:
        target = str(binding.get("target", ""))
        if "value" in binding:
            rows.append({"target": target, "source": "literal", "value": binding["value"], "found": True})
            continue
        text = str(binding.get("path", ""))
        try:
            path = parse_source_path(text)
        except PathSyntaxError:
            rows.append({"target": target, "source": text, "value": None, "found": False})
            continue
        roots = {"input": run_input, "context": context or {}, "state": state}
        found, value = _read(roots.get(path.root), [str(part) for part in path.parts])
        rows.append({"target": target, "source": text, "value": value, "found": found,
                     "note": "state now" if path.root == "state" else ""})
    return rows


def node_detail(run: Run, events: Sequence[RunEvent], node: Mapping[str, Any], frame_id: str | None
                ) -> dict[str, Any]:
    """What ``node`` saw and did for one item (``frame_id``; default: its latest)."""
    seen = visits(events, str(node.get("id")))
    chosen = next((v for v in seen if v.frame_id == frame_id), seen[-1] if seen else None)
    detail: dict[str, Any] = {"visits": list(reversed(seen)), "chosen": chosen, "context": None, "output": None,
                              "error": None, "label": None, "bindings": [], "status": "idle", "input": None,
                              "input_recorded": False}
    if chosen is None:
        return detail
    inspection = load_state(run)
    frame_events = [e for e in events if e.frame_id == chosen.frame_id and e.node_id == node.get("id")]
    context = context_of(inspection.state, chosen.frame_id)
    if context is None:
        started = next((e for e in frame_events if e.kind == "node_started"), None)
        recorded = summary_of(started).get("context") if started is not None else None
        context = recorded if isinstance(recorded, dict) else {}
    status = "running"
    for event in frame_events:
        if event.kind == "node_started":
            # The engine records the task's input as its bindings built it (bounded); the latest visit wins.
            recorded = summary_of(event)
            if "input" in recorded:
                detail["input"], detail["input_recorded"] = recorded["input"], True
        elif event.kind == "node_completed":
            data = event_data(event)
            detail["output"], detail["label"], status = data.get("summary"), data.get("label"), "done"
        elif event.kind == "node_failed":
            detail["error"], status = event_data(event).get("summary"), "failed"
        elif event.kind == "interrupted":
            status = "waiting"
    state = inspection.state.root_scope.state if inspection.state is not None and "root" in \
        inspection.state.scopes else None
    detail.update(context=context, status=status,
                  bindings=bound_values(node, run_input=run.input, context=context, state=state))
    return detail

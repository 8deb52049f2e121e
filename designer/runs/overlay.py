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
from designer.runs.checkpoints import Inspection, context_of, load_state
from designer.runs.display import event_data, progress_rows, summary_of
from runtime.errors import PathSyntaxError
from runtime.paths import parse_source_path

#: The root workflow's runtime scope (every subgraph call opens its own).
ROOT_SCOPE = "root"


@dataclass(slots=True)
class NodeRun:
    started: int = 0
    completed: int = 0
    failed: int = 0
    running: int = 0
    waiting: int = 0
    #: What the run's live frames at this node are doing (``frame_state``), from its latest checkpoint.
    frames: set[str] = field(default_factory=set)

    @property
    def status(self) -> str:
        """The editor overlay's coarse status (done, failed, running, waiting, idle)."""
        if self.waiting:
            return "waiting"
        if self.running:
            return "running"
        if self.failed:
            return "failed"
        if self.completed:
            return "done"
        return "idle"

    @property
    def state(self) -> str:
        """One of ``NODE_STATES``: the most pressing thing about the node, live work before its history."""
        found = set(self.frames)
        if self.failed:
            found.add("failed")
        if self.completed:
            found.add("completed")
        return next((state for state in NODE_STATES if state in found), "not reached")


#: A node's state on the run's graph, most pressing first: a node shows the first that applies.
NODE_STATES = ("interrupted", "running", "waiting", "queued", "failed", "cancelled", "completed", "not reached")


def frame_state(frame_status: str, run_status: str, *, is_loop: bool = False) -> str:
    """What a live frame at a node means for that node, given the run's status.

    A frame the run left behind when it failed or was cancelled runs no more: "cancelled" (a failed frame is
    "failed"). A ``ready`` frame is the step under way in a running run; a ``waiting`` one waits for its
    foreach's items or its subgraph call (work under way), a ``suspended`` one for a retry's backoff or a timer.
    """
    if frame_status == "failed":
        return "failed"
    if frame_status == "interrupted":
        return "interrupted" if run_status not in ("failed", "cancelled", "completed") else "cancelled"
    if run_status in ("failed", "cancelled", "completed"):
        return "cancelled"
    if frame_status == "suspended" or run_status == "waiting":
        return "waiting"
    if frame_status == "waiting":
        return "running" if is_loop or run_status in ("running", "queued") else "waiting"
    # ready
    return {"running": "running", "queued": "queued"}.get(run_status, "queued")


@dataclass(slots=True)
class LoopRun:
    done: int = 0
    total: int | None = 0
    failed: int = 0
    running: int = 0
    activations: list[str] = field(default_factory=list)


_OPEN = {"node_started": "running", "interrupted": "waiting"}
_LIVE = ("running", "queued", "interrupted", "waiting")


def node_as_ran(run: Run, node_id: str) -> dict[str, Any] | None:
    """Node ``node_id`` of the document ``run`` ran (the draft may have changed since), or None when it has no
    such node; a stored document that no longer reads (nodes not a list of objects) has none."""
    graph = run.document if isinstance(run.document, dict) else {}
    nodes = graph.get("nodes")
    return next((n for n in nodes if isinstance(n, dict) and n.get("id") == node_id), None) \
        if isinstance(nodes, list) else None


@dataclass(frozen=True, slots=True)
class Call:
    """One subgraph call: the child scope it opened, which node of which scope called it, for which item."""

    key: str  # the child scope's root frame id: how pages name the scope
    scope_id: str
    workflow: str
    caller_node: str
    caller_scope: str
    caller_frame: str
    item: str  # ``customers[0] 'Ada' › orders[1]`` or "the only run"


def subgraph_calls(events: Iterable[RunEvent]) -> list[Call]:
    """Every subgraph call in the trace, in the order they opened their scopes."""
    open_steps: dict[str, dict[str, RunEvent]] = {}  # node -> {frame: its step under way, not yet matched}
    calls: list[Call] = []
    for event in events:
        if event.kind == "node_started" and event.frame_id:
            open_steps.setdefault(event.node_id, {})[event.frame_id] = event
        elif event.kind in ("node_completed", "node_failed"):
            open_steps.get(event.node_id, {}).pop(event.frame_id, None)
        elif event.kind == "scope_opened" and event.frame_id:
            summary = summary_of(event)
            caller_node = str(summary.get("caller_node_id") or "")
            # The trace names the calling node, not its frame: calls open their scopes in the order their
            # steps started, so the caller is that node's oldest step under way not yet matched to a call.
            waiting = open_steps.get(caller_node)
            step = waiting.pop(next(iter(waiting))) if waiting else None
            context = summary_of(step).get("context") if step is not None else None
            calls.append(Call(
                key=event.frame_id, scope_id=event.scope_id, workflow=str(summary.get("workflow") or ""),
                caller_node=caller_node, caller_scope=step.scope_id if step is not None else "",
                caller_frame=step.frame_id if step is not None else "",
                item=item_label(context if isinstance(context, Mapping) else None)))
    return calls


def call_states(events: Iterable[RunEvent], calls: Sequence[Call], run_status: str) -> dict[str, str]:
    """How each subgraph call went (by its key), as its caller's step ended or not yet: ``NODE_STATES`` words."""
    by_step = {(call.caller_frame, call.caller_node): call.key for call in calls}
    ended: dict[str, str] = {}
    for event in events:
        key = by_step.get((event.frame_id, event.node_id)) if event.kind in ("node_completed", "node_failed") \
            else None
        if key is None:
            continue
        # A failure the caller's error route took ended the call as far as the caller goes: it completed.
        failed = event.kind == "node_failed" and event_data(event).get("label") != "error"
        ended[key] = "failed" if failed else "completed"
    open_state = {"interrupted": "interrupted", "waiting": "waiting", "queued": "queued", "running": "running"}.get(
        run_status, "cancelled")
    return {call.key: ended.get(call.key, open_state) for call in calls}


def overlay(run: Run, events: Sequence[RunEvent], *, scope_id: str = ROOT_SCOPE,
            inspection: Inspection | None = None) -> dict[str, Any]:
    """``{"run", "nodes": {id: {state, status, started, completed, failed, running, waiting}}, "loops": {...}}``
    for the nodes of one runtime scope of the run (the root workflow's by default). ``inspection``: the run's
    checkpoint as the caller already read it (read here otherwise)."""
    nodes: dict[str, NodeRun] = {}
    last: dict[str, tuple[str, str]] = {}  # frame id -> (node id, last kind)
    # A step's failure stands until the same step (frame and node) ends well: a redrive runs the failed step
    # again in its frame, and once that completes the node's failure is history, not its state.
    failures: dict[tuple[str, str], int] = {}
    for event in events:
        if not event.node_id or not event.frame_id or (event.scope_id or ROOT_SCOPE) != scope_id:
            continue
        entry = nodes.setdefault(event.node_id, NodeRun())
        if event.kind == "node_started":
            entry.started += 1
        elif event.kind == "node_completed":
            entry.completed += 1
            entry.failed -= failures.pop((event.frame_id, event.node_id), 0)
        elif event.kind == "node_failed":
            entry.failed += 1
            step = (event.frame_id, event.node_id)
            failures[step] = failures.get(step, 0) + 1
        if event.kind in ("node_started", "node_completed", "node_failed", "interrupted"):
            last[event.frame_id] = (event.node_id, event.kind)
    live = run.status in _LIVE
    for node_id, kind in last.values():
        state = _OPEN.get(kind)
        if state == "waiting" and run.status == "interrupted":
            nodes[node_id].waiting += 1
        elif state == "running" and live:
            nodes[node_id].running += 1
    if inspection is None:
        inspection = load_state(run)
    loops: dict[str, LoopRun] = {}
    for row in progress_rows(inspection.state, events, finished=run.status in Run.FINISHED):
        if (row.scope_id or ROOT_SCOPE) != scope_id:
            continue
        loop = loops.setdefault(row.node_id, LoopRun())
        loop.done += row.done
        loop.failed += row.failed
        loop.running += row.running
        loop.total = None if loop.total is None or row.total is None else loop.total + row.total
        loop.activations.append(row.activation_id)
    for node_id, loop in loops.items():
        # A foreach's own frames end when it hands items out; its work is its items.
        entry = nodes.setdefault(node_id, NodeRun())
        entry.completed, entry.failed = loop.done, loop.failed
        entry.started = max(entry.started, loop.done)
        entry.running = loop.running if live else 0
        if loop.running and live:
            entry.frames.add("running")
    if inspection.state is not None:
        for frame in inspection.state.frames.values():
            if frame.scope_id == scope_id and frame.node_id:
                entry = nodes.setdefault(frame.node_id, NodeRun())
                entry.frames.add(frame_state(frame.status, run.status, is_loop=frame.node_id in loops))
    elif run.status == "queued" and not events:
        document = run.document if isinstance(run.document, dict) else {}
        first = document.get("start") or next((n.get("id") for n in document.get("nodes", []) or []), None)
        if first and scope_id == ROOT_SCOPE:
            nodes.setdefault(str(first), NodeRun()).frames.add("queued")
    return {
        "run": {"id": run.pk, "status": run.status},
        "nodes": {node_id: {"state": entry.state, "status": entry.status, "started": entry.started,
                            "completed": entry.completed, "failed": entry.failed, "running": entry.running,
                            "waiting": entry.waiting}
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


def item_text(item: object) -> str:
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
            parts.append(f"{loop_id}[{entry.get('index')}]{item_text(entry.get('item'))}")
    return " › ".join(parts) or "the only run"


def visits(events: Iterable[RunEvent], node_id: str) -> list[Visit]:
    out = []
    for event in events:
        if event.kind == "node_started" and event.node_id == node_id and event.frame_id:
            context = summary_of(event).get("context")
            out.append(Visit(event.frame_id, item_label(context if isinstance(context, Mapping) else None),
                             event.seq))
    return out


def read_at(value: Any, parts: Sequence[str]) -> tuple[bool, Any]:
    """(found, value) at ``parts`` (keys, list indexes as digits) below ``value``; a missing step is not found."""
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
        found, value = read_at(roots.get(path.root), [str(part) for part in path.parts])
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

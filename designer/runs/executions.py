"""A node's executions in one run: every time it ran (one per item of each enclosing loop, and per attempt), what
it read and from where, what it returned and wrote, the route it took, its error, attempt and duration.

Read from the run's trace: ``node_started`` carries the task's input as its bindings built it (bounded) and the
item's context, ``node_completed`` the output and route label, ``node_failed`` the error, each with its attempt
and duration. The node's own bindings (from the document of the scope it ran in) say where each input field
came from, as written. The run page's node panel and ``GET /api/runs/{id}/nodes/{node}/executions/`` show it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.core.paginator import Page, Paginator
from django.http import QueryDict

from designer.core.errors import BadRequest, ObjectNotFound
from designer.models import Run, RunEvent
from designer.runs import overlay as run_overlay
from designer.runs.display import MAX_EVENTS, event_data, summary_of
from designer.runs.overlay import item_text, read_at
from designer.runs.scopes import scope_document
from runtime.errors import PathSyntaxError
from runtime.paths import parse_source_path

#: Executions one page shows.
PAGE_SIZE = 20
#: Filters of ``read``'s ``only``.
ONLY = ("", "failed", "slow")
#: Characters of a value shown before "show all".
SHORT_VALUE = 200


@dataclass(frozen=True, slots=True)
class LoopPosition:
    loop: str  # the foreach node's id, as in context.foreach.<loop>
    index: int
    item: str  # a short text naming the item (its name, id...), may be empty

    def text(self) -> str:
        return f"{self.loop} item {self.index + 1}{self.item}"


@dataclass(frozen=True, slots=True)
class InputRow:
    target: str
    source: str  # the path as written, "literal", or "template"
    value: Any
    recorded: bool  # the value is the one the step ran with (else: not recorded by the engine)


@dataclass(slots=True)
class Execution:
    frame_id: str
    seq: int
    positions: tuple[LoopPosition, ...]
    status: str = "running"  # completed, failed, running, waiting, stopped (a finished run left it under way)
    attempt: int | None = None  # the step's try within its run attempt (a retry policy's), from 1
    run_attempt: int = 1  # the run's attempt it ran in, as the run page counts them: 1, then one more per redrive
    duration_ms: int | None = None
    started_at: str = ""
    inputs: list[InputRow] = field(default_factory=list)
    output: Any = None
    writes: list[dict[str, Any]] = field(default_factory=list)
    route: str | None = None
    error: Any = None

    @property
    def where(self) -> str:
        return " › ".join(p.text() for p in self.positions) or "the only run"

    def to_dict(self) -> dict[str, Any]:
        return {
            "frame_id": self.frame_id, "where": self.where,
            "items": [{"loop": p.loop, "index": p.index} for p in self.positions],
            "status": self.status, "attempt": self.attempt, "run_attempt": self.run_attempt,
            "duration_ms": self.duration_ms,
            "started_at": self.started_at,
            "input": [{"target": r.target, "source": r.source, "value": r.value, "recorded": r.recorded}
                      for r in self.inputs],
            "output": self.output, "writes": self.writes, "route": self.route, "error": self.error,
        }


def _positions(context: object) -> tuple[LoopPosition, ...]:
    loops = context.get("foreach") if isinstance(context, Mapping) else None
    if not isinstance(loops, Mapping):
        return ()
    out = []
    for loop, entry in loops.items():
        if isinstance(entry, Mapping) and isinstance(entry.get("index"), int):
            out.append(LoopPosition(str(loop), int(entry["index"]), item_text(entry.get("item"))))
    return tuple(out)


def _inputs(node: Mapping[str, Any], recorded: Any, context: Any, run_input: Any) -> list[InputRow]:
    rows = []
    for binding in node.get("input", []) or []:
        if not isinstance(binding, Mapping):
            continue
        target = str(binding.get("target", ""))
        if "value" in binding:
            source = "literal"
        elif "template" in binding:
            source = "template"
        else:
            source = str(binding.get("path", ""))
        found, value = read_at(recorded, [part for part in target.split(".") if part]) if target else (
            recorded is not None, recorded)
        if not found and source not in ("literal", "template"):
            # Not recorded (an older run, or a value cut from the record): read again from the run's input or
            # the item's context, which do not change; state may have, so it is not guessed.
            try:
                path = parse_source_path(source)
            except PathSyntaxError:
                path = None
            if path is not None and path.root in ("input", "context"):
                root = run_input if path.root == "input" else context
                found, value = read_at(root, [str(part) for part in path.parts])
                rows.append(InputRow(target, source, value if found else None, False))
                continue
        if not found and source == "literal":
            found, value = True, binding.get("value")
        rows.append(InputRow(target, source, value if found else None, found))
    return rows


def _writes(node: Mapping[str, Any], output: Any) -> list[dict[str, Any]]:
    out = []
    for binding in node.get("output", []) or []:
        if not isinstance(binding, Mapping):
            continue
        source = str(binding.get("source", "."))
        found, value = (True, output) if source in (".", "") else read_at(output, source.split("."))
        out.append({"target": f"state.{binding.get('target', '')}", "mode": binding.get("mode") or "set",
                    "value": value if found else None})
    return out


def executions(events: Iterable[RunEvent], node: Mapping[str, Any], *, scope_id: str, run_input: Any,
               run_finished: bool = False) -> list[Execution]:
    """Every execution of ``node`` in the scope ``scope_id``, oldest first: one per (frame, attempt). A foreach
    node's own step ends when it has read its collection (``foreach_started``); a step a finished run left under way
    was stopped, not running."""
    node_id = str(node.get("id", ""))
    open_: dict[str, Execution] = {}
    done: list[Execution] = []
    run_attempt = 1  # one more at each redrive in the trace (events without the run's own are all attempt 1)
    for event in events:
        if event.kind == "run_redriven":
            run_attempt += 1
            continue
        if event.node_id != node_id or (event.scope_id or "root") != scope_id or not event.frame_id:
            continue
        data = event_data(event)
        if event.kind == "node_started":
            summary = summary_of(event)
            context = summary.get("context")
            execution = Execution(frame_id=event.frame_id, seq=event.seq, positions=_positions(context),
                                  attempt=data.get("attempt") if isinstance(data.get("attempt"), int) else None,
                                  run_attempt=run_attempt,
                                  started_at=event.at.isoformat() if event.at else "")
            execution.inputs = _inputs(node, summary.get("input"), context, run_input)
            previous = open_.pop(event.frame_id, None)
            if previous is not None:
                done.append(previous)
            open_[event.frame_id] = execution
            continue
        under_way = open_.get(event.frame_id)
        if under_way is None:
            continue
        if event.kind in ("node_completed", "node_failed"):
            open_.pop(event.frame_id)
            _finish(under_way, event, data, node)
            done.append(under_way)
        elif event.kind == "foreach_started":
            open_.pop(event.frame_id)
            under_way.status, under_way.route = "completed", None
            under_way.output = {"items": summary_of(event).get("total")}
            done.append(under_way)
        elif event.kind == "interrupted":
            under_way.status = "waiting"
    for left in open_.values():
        if run_finished and left.status == "running":
            left.status = "stopped"
    done.extend(open_.values())
    done.sort(key=lambda e: e.seq)
    return done


def _finish(execution: Execution, event: RunEvent, data: Mapping[str, Any], node: Mapping[str, Any]) -> None:
    """A step's end: its duration, attempt, and output, route and writes, or its error."""
    execution.duration_ms = event.duration_ms
    if isinstance(data.get("attempt"), int):
        execution.attempt = data["attempt"]
    if event.kind == "node_completed":
        execution.status, execution.output = "completed", data.get("summary")
        execution.route = data.get("label") if isinstance(data.get("label"), str) else None
        execution.writes = _writes(node, execution.output)
    else:
        execution.status, execution.error = "failed", data.get("summary")


@dataclass(frozen=True, slots=True)
class Picker:
    loop: str
    options: tuple[tuple[int, str], ...]  # (index, label), in index order
    chosen: int | None


def pickers(found: Sequence[Execution], chosen: Mapping[str, int]) -> list[Picker]:
    """One picker per enclosing loop (outermost first), listing the items this node ran for; each loop's options
    are those under the items chosen in the loops outside it."""
    loops: list[str] = []
    for execution in found:
        for position in execution.positions:
            if position.loop not in loops:
                loops.append(position.loop)
    out = []
    narrowed = list(found)
    for loop in loops:
        options: dict[int, str] = {}
        for execution in narrowed:
            for position in execution.positions:
                if position.loop == loop:
                    options.setdefault(position.index, f"item {position.index + 1}{position.item}")
        pick = chosen.get(loop)
        out.append(Picker(loop, tuple(sorted(options.items())), pick if pick in options else None))
        if pick in options:
            narrowed = [e for e in narrowed if any(p.loop == loop and p.index == pick for p in e.positions)]
    return out


def select(found: Sequence[Execution], *, items: Mapping[str, int], only: str = "") -> list[Execution]:
    """The executions at the chosen items, optionally only the failed ones or the slowest first."""
    out = [e for e in found if all(any(p.loop == loop and p.index == index for p in e.positions)
                                   for loop, index in items.items())]
    if only == "failed":
        out = [e for e in out if e.status == "failed"]
    elif only == "slow":
        out = sorted(out, key=lambda e: -(e.duration_ms or 0))
    return out


def as_text(value: Any) -> str:
    """A value as one line of JSON (a string as itself)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)


def short(value: Any) -> tuple[str, bool]:
    """A value as text, cut to ``SHORT_VALUE`` characters; whether it was cut (the page offers "show all")."""
    text = as_text(value)
    return (text[:SHORT_VALUE] + "…", True) if len(text) > SHORT_VALUE else (text, False)


@dataclass(frozen=True, slots=True)
class NodeExecutions:
    """What one request asked for, read: the node, the scope's title, the pickers and one page."""

    node: Mapping[str, Any]
    loop_names: dict[str, str]
    scope_key: str
    scope_title: str
    pickers: list[Picker]
    items: dict[str, int]
    only: str
    total: int
    page: Page[Execution]


def _items(query: QueryDict) -> dict[str, int]:
    chosen = {}
    for key, value in query.items():
        if key.startswith("item.") and value.strip():
            if not value.strip().isdigit():
                raise BadRequest(f"{key} is an item's position in its loop, 0 or more, not {value[:40]!r}",
                                 field=key[:60])
            chosen[key[5:]] = int(value)
    return chosen


def read(run: Run, node_id: str, query: QueryDict, *, page_size: int = PAGE_SIZE) -> NodeExecutions:
    """The node's executions the query asks for (``ObjectNotFound`` for a node or scope the run does not have)."""
    only = query.get("only", "")
    if only not in ONLY:
        raise BadRequest("only is 'failed' or 'slow' (or absent: every execution)", field="only")
    events = list(run.events.order_by("seq")[:MAX_EVENTS])
    key = query.get("scope", "").strip()
    document, scope_id, title, _crumbs = scope_document(run, run_overlay.subgraph_calls(events), key)
    nodes = {str(n.get("id")): n for n in document.get("nodes", []) or [] if isinstance(n, Mapping)}
    node = nodes.get(node_id)
    if node is None:
        raise ObjectNotFound(f"the workflow {title!r} has no node {node_id[:80]!r}", node=node_id[:80])
    found = executions(events, node, scope_id=scope_id, run_input=run.input, run_finished=run.is_finished)
    items = _items(query)
    chosen = select(found, items=items, only=only)
    paginator = Paginator(chosen, page_size)
    return NodeExecutions(
        node=node, loop_names={loop: str(nodes.get(loop, {}).get("name") or loop) for loop in nodes},
        scope_key=key, scope_title=title, pickers=pickers(found, items), items=items, only=only,
        total=len(found), page=paginator.get_page(query.get("page")))


@dataclass(frozen=True, slots=True)
class ReadableError:
    """A run's error said with names: the node's label, the workflow it is in, the call and item it ran for."""

    code: str
    headline: str  # "ratio in Check order (called by process for customers item 2 'Bob' › orders item 1) failed"
    reason: str  # the task's own message, without the ids


def _where(events: Sequence[RunEvent], frame_id: str, names: Mapping[str, str]) -> str:
    started = next((e for e in events if e.frame_id == frame_id and e.kind == "node_started"), None)
    positions = _positions(summary_of(started).get("context")) if started is not None else ()
    return " › ".join(f"{names.get(p.loop, p.loop)} item {p.index + 1}{p.item}" for p in positions)


def readable_error(run: Run, events: Sequence[RunEvent]) -> ReadableError | None:
    """The run's error with node labels, loop names and item positions in place of frame and scope ids (those
    stay in the raw error, which the page keeps in a details fold and the API returns)."""
    error = run.error if isinstance(run.error, Mapping) else None
    if error is None or not error.get("node_id"):
        return None
    node_id, frame_id = str(error.get("node_id")), str(error.get("frame_id") or "")
    calls = run_overlay.subgraph_calls(events)
    call = next((c for c in calls if c.scope_id == error.get("scope_id")), None)
    try:
        document, _scope_id, title, _crumbs = scope_document(run, calls, call.key if call else "")
        root, _, _, _ = scope_document(run, calls, "") if call else (document, "", "", [])
    except ObjectNotFound:
        document, root, title = {}, {}, ""
    names = {str(n.get("id")): str(n.get("name") or n.get("id")) for n in document.get("nodes", []) or []
             if isinstance(n, Mapping)}
    root_names = {str(n.get("id")): str(n.get("name") or n.get("id")) for n in root.get("nodes", []) or []
                  if isinstance(n, Mapping)}
    headline = names.get(node_id, node_id)
    where = _where(events, frame_id, names) if frame_id else ""
    if call is not None:
        caller_where = _where(events, call.caller_frame, root_names)
        headline += f" in {title} (called by {root_names.get(call.caller_node, call.caller_node)}"
        headline += f" for {caller_where})" if caller_where else ")"
    if where:
        headline += f" at {where}"
    cause = error.get("cause")
    reason = str(cause.get("message")) if isinstance(cause, Mapping) and cause.get("message") else \
        str(error.get("message", ""))
    return ReadableError(code=str(error.get("code") or "error"), headline=f"{headline} failed", reason=reason)

"""Shapes a run's trace into what the run page draws: a timeline of node steps per lineage.

This reads the trace's identity fields (frame, lineage, activation, index)
and positions bars by their recorded times; it decides nothing about how a
workflow runs. Live structure (progress, frame context) comes from the
latest checkpoint through the runtime's RunState helpers
(``designer.runs.checkpoints``); foreach progress rows join the two: the
trace knows every activation, the checkpoint the live ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from designer.models import RunEvent
from runtime import RunState
from runtime.inspect import activation_progress

#: More rows than this make the timeline unreadable; the events table still has everything.
MAX_ROWS = 150
#: Events read for the timeline; beyond this the page says it is cut.
MAX_EVENTS = 20000

_STEP_END = {"node_completed": "completed", "node_failed": "failed"}


@dataclass(slots=True)
class Step:
    """One node step of one frame: a bar."""

    seq: int
    node_id: str
    frame_id: str
    lineage_id: str
    scope_id: str
    start: datetime
    end: datetime | None = None
    status: str = "running"  # running | completed | failed | waiting | cancelled (stopped by the run's end)
    label: str = ""
    attempts: int = 1
    left: float = 0.0
    width: float = 0.0

    @property
    def duration_ms(self) -> int | None:
        if self.end is None:
            return None
        return int((self.end - self.start).total_seconds() * 1000)


@dataclass(slots=True)
class Span:
    """A foreach activation, drawn as a bracket across its items' time in the entering lineage."""

    activation_id: str
    node_id: str
    lineage_id: str
    start: datetime
    end: datetime | None = None
    total: int | None = None
    left: float = 0.0
    width: float = 0.0


@dataclass(slots=True)
class Row:
    lineage_id: str
    title: str
    kind: str  # root | item | subgraph | other
    parent: str | None
    order: tuple[Any, ...]
    depth: int = 0
    last: datetime | None = None
    steps: list[Step] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Timeline:
    rows: list[Row]
    total_ms: int  # the axis: active time, waits for a person or a redrive left out
    ticks: list[tuple[float, int]]  # (percent, ms)
    hidden_rows: int = 0
    truncated: bool = False
    wall_ms: int = 0  # first event to the last, waits included
    gaps: list[Gap] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.rows


@dataclass(slots=True)
class Gap:
    """A wait the axis leaves out: for a person's answer, or between a failure and its redrive."""

    start: datetime
    end: datetime
    reason: str  # "an answer", "a redrive"
    left: float = 0.0  # where it is drawn, in percent of the axis

    @property
    def waited_ms(self) -> int:
        return int((self.end - self.start).total_seconds() * 1000)


#: Events that start a wait the axis leaves out, and the events that end it.
_GAP_STARTS = {"run_interrupted": "an answer", "run_failed": "a redrive", "run_cancelled": "a redrive"}
_GAP_ENDS = ("resumed", "run_redriven")


def _gaps(events: Sequence[RunEvent]) -> list[Gap]:
    """Waits for a person or a redrive: from the run stopping to the event that set it going again."""
    gaps: list[Gap] = []
    waiting: tuple[datetime, str] | None = None
    for event in events:
        if event.kind in _GAP_STARTS and waiting is None:
            waiting = (event.at, _GAP_STARTS[event.kind])
        elif event.kind in _GAP_ENDS and waiting is not None:
            if event.at > waiting[0]:
                gaps.append(Gap(waiting[0], event.at, waiting[1]))
            waiting = None
    return gaps


def _ticks(total_ms: int, count: int = 5) -> list[tuple[float, int]]:
    return [(100.0 * i / count, round(total_ms * i / count)) for i in range(count + 1)]


@dataclass(frozen=True, slots=True)
class InFlight:
    """A frame the latest checkpoint has ready to run: its step is under way but not in the trace yet."""

    frame_id: str
    lineage_id: str
    scope_id: str
    node_id: str


#: The narrowest bar, in percent of the track (a step of a few ms is still clickable).
MIN_BAR_PERCENT = 1.5


def build_timeline(events: Iterable[RunEvent], *, now: datetime, end: datetime | None = None,
                   truncated: bool = False, in_flight: Sequence[InFlight] = ()) -> Timeline:
    """Bars from ``node_started`` to the step's end event, one row per lineage, children after their parent.

    ``now`` closes steps that are still running; ``end`` (the run's finish
    time) closes steps a finished run left open. Trace events reach the
    database with each checkpoint, so a step that is running right now is
    drawn from ``in_flight`` (the checkpoint's ready frames), starting at its
    lineage's latest event.
    """
    rows: dict[str, Row] = {}
    open_steps: dict[tuple[str, str], Step] = {}
    spans: dict[str, Span] = {}
    calls: set[int] = set()
    t0: datetime | None = None
    latest: datetime | None = None

    def row_for(event: RunEvent) -> Row:
        lineage = event.lineage_id or "—"
        row = rows.get(lineage)
        if row is None:
            kind = "root" if not rows else "other"
            row = Row(lineage, "run" if kind == "root" else event.node_id or lineage, kind, None, (len(rows),))
            rows[lineage] = row
        return row

    def place(event: RunEvent, kind: str, parent: str | None, title: str, order: tuple[Any, ...]) -> None:
        """The row of ``event``'s lineage is a ``kind`` row under ``parent`` (made now if it has no row yet)."""
        row = rows.get(event.lineage_id)
        if row is None:
            row = rows[event.lineage_id] = Row(event.lineage_id, "", kind, None, ())
        row.kind, row.parent, row.title, row.order = kind, parent, title, order

    step: Step | None
    span: Span | None
    row: Row | None
    events = list(events)
    for event in events:
        t0 = t0 or event.at
        latest = event.at if latest is None or event.at > latest else latest
        kind = event.kind
        if kind == "node_started":
            # A frame is at one node at a time: a step it left without an end event (a foreach that
            # only evaluated its collection, say) ends where the next one starts.
            # The same node started again in its frame after waiting (a wait step, a suspended frame): its first
            # stretch ends here, drawn as the wait it was.
            for key in [key for key in open_steps if key[0] == event.frame_id]:
                left = open_steps.pop(key)
                left.end, left.status = event.at, "completed" if left.status == "running" else left.status
            step = Step(event.seq, event.node_id, event.frame_id, event.lineage_id, event.scope_id, event.at)
            open_steps[(event.frame_id, event.node_id)] = step
            row_for(event).steps.append(step)
        elif kind in _STEP_END:
            step = open_steps.pop((event.frame_id, event.node_id), None)
            if step is not None:
                step.end, step.status = event.at, _STEP_END[kind]
                step.label = str(event_data(event).get("label") or "")
        elif kind == "node_retrying":
            step = open_steps.get((event.frame_id, event.node_id))
            if step is not None:
                step.attempts += 1
        elif kind == "node_waiting":
            step = open_steps.get((event.frame_id, event.node_id))
            if step is not None:
                step.status = "waiting"
        elif kind == "interrupted":
            step = open_steps.get((event.frame_id, event.node_id))
            if step is not None:
                step.status = "waiting"
        elif kind == "resumed":
            step = open_steps.get((event.frame_id, event.node_id))
            if step is not None:
                step.status = "running"
        elif kind == "foreach_started":
            # The foreach node's own step only read its collection; the span below covers its items.
            step = open_steps.pop((event.frame_id, event.node_id), None)
            if step is not None:
                step.end, step.status = event.at, "completed"
            total = _int(summary_of(event).get("total"))
            span = Span(event.activation_id, event.node_id, event.lineage_id, event.at, total=total)
            spans[event.activation_id] = span
            row_for(event).spans.append(span)
        elif kind == "foreach_completed":
            span = spans.get(event.activation_id)
            if span is not None:
                span.end = event.at
        elif kind == "item_started":
            span = spans.get(event.activation_id)
            place(event, "item", span.lineage_id if span is not None else None, f"{event.node_id} [{event.index}]",
                  (event.seq, event.index or 0))
        elif kind == "scope_opened":
            # The trace names the calling node, not its frame: the caller is the oldest open, not yet
            # matched step of that node (calls open their scopes in the order their steps started).
            caller_node = str(summary_of(event).get("caller_node_id") or "")
            caller = next((s for key, s in open_steps.items() if key[1] == caller_node and s.seq not in calls), None)
            if caller is not None:
                calls.add(caller.seq)
            workflow = summary_of(event).get("workflow") or "subgraph"
            place(event, "subgraph", caller.lineage_id if caller is not None else None,
                  f"{caller_node or 'call'} → {workflow}", (event.seq,))
        elif kind == "run_started":
            row = row_for(event)
            row.kind, row.title = "root", "run"

        if event.lineage_id in rows:
            rows[event.lineage_id].last = event.at

    if t0 is None:
        return Timeline(rows=[], total_ms=0, ticks=[])
    for flight in in_flight:
        row = rows.get(flight.lineage_id)
        if row is None or any(step.end is None for step in row.steps):
            continue
        since = max([t0, *(s.end or s.start for s in row.steps), *(s.start for s in row.spans), row.last or t0])
        row.steps.append(Step(-1, flight.node_id, flight.frame_id, flight.lineage_id, flight.scope_id, since))
    stop = end or now
    for step in open_steps.values():
        if step.end is None and end is not None:
            # The run ended (failed, cancelled) with this step under way: it was stopped, it is not running.
            step.end = end
            step.status = "cancelled" if step.status == "running" else step.status
    ends: list[datetime] = [latest or t0]
    for row in rows.values():
        ends.extend(s.end or stop for s in row.steps)
        ends.extend(s.end or stop for s in row.spans)
    finish = max(ends)
    gaps = [gap for gap in _gaps(events) if gap.end <= finish]
    wall_ms = max(1, int((finish - t0).total_seconds() * 1000))

    def active_ms(moment: datetime) -> float:
        """Milliseconds from the first event to ``moment``, the waits before it left out (a bar spanning a wait,
        the interrupted step's, is drawn across the wait's mark, not stretched by it)."""
        waited = sum(((min(moment, gap.end) - gap.start).total_seconds() for gap in gaps if moment > gap.start),
                     0.0)
        return ((moment - t0).total_seconds() - waited) * 1000

    total_ms = max(1, int(active_ms(finish)))

    def pct(moment: datetime) -> float:
        return max(0.0, min(100.0, active_ms(moment) * 100.0 / total_ms))

    for gap in gaps:
        gap.left = round(pct(gap.start), 3)

    for row in rows.values():
        bars: list[Step | Span] = [*row.steps, *row.spans]
        for item in bars:
            item.left = round(pct(item.start), 3)
            item.width = round(max(MIN_BAR_PERCENT, pct(item.end or stop) - item.left), 3)
            # The last step ends at 100 %: a short one drawn at its minimum width must still fit the track.
            item.left = round(max(0.0, min(item.left, 100.0 - item.width)), 3)
    ordered = _tree_order(rows)
    hidden = max(0, len(ordered) - MAX_ROWS)
    return Timeline(rows=ordered[:MAX_ROWS], total_ms=total_ms, ticks=_ticks(total_ms), hidden_rows=hidden,
                    truncated=truncated, wall_ms=wall_ms, gaps=gaps)


def _tree_order(rows: dict[str, Row]) -> list[Row]:
    children: dict[str | None, list[Row]] = {}
    for row in rows.values():
        parent = row.parent if row.parent in rows and row.parent != row.lineage_id else None
        row.parent = parent
        children.setdefault(parent, []).append(row)
    out: list[Row] = []
    seen: set[str] = set()

    def visit(row: Row, depth: int) -> None:
        if row.lineage_id in seen:
            return
        seen.add(row.lineage_id)
        row.depth = depth
        out.append(row)
        for child in sorted(children.get(row.lineage_id, []), key=lambda r: r.order):
            visit(child, depth + 1)

    for root in sorted(children.get(None, []), key=lambda r: r.order):
        visit(root, 0)
    return out


def event_data(event: RunEvent) -> dict[str, Any]:
    """The event's ``data`` when it is a JSON object; anything else stored there (a list, a string, null, a
    number) reads as empty rather than breaking the page."""
    data = event.data
    return data if isinstance(data, dict) else {}


def summary_of(event: RunEvent) -> dict[str, Any]:
    """The engine's bounded payload summary stored with the event (``data["summary"]``), when it is an object."""
    summary = event_data(event).get("summary")
    return summary if isinstance(summary, dict) else {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def short_id(value: str | None) -> str:
    """``frame_1234567890123`` -> ``frame_…0123``: enough to tell ids apart on screen."""
    if not value:
        return ""
    head, sep, tail = value.partition("_")
    if sep and len(tail) > 6:
        return f"{head}_…{tail[-4:]}"
    return value


def event_filters(events: Sequence[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """Distinct kinds and node ids, for the events table's filter selects."""
    kinds = sorted({kind for kind, _ in events if kind})
    nodes = sorted({node for _, node in events if node})
    return kinds, nodes


@dataclass(slots=True)
class Progress:
    activation_id: str
    node_id: str
    done: int
    total: int | None
    running: int = 0
    finished: bool = False
    #: Items that failed (a failure anywhere inside one, a subgraph it called included); not in ``done``.
    failed: int = 0
    scope_id: str = ""
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

    @property
    def failed_percent(self) -> float:
        if not self.total:
            return 0.0
        return round(100.0 * min(self.failed, self.total - min(self.done, self.total)) / self.total, 1)


def recorded_context(events: Iterable[RunEvent]) -> dict[str, Any] | None:
    """The context the engine recorded when the frame's step started, if it recorded one."""
    for event in events:
        context = summary_of(event).get("context")
        if event.kind == "node_started" and isinstance(context, dict):
            return context
    return None


def _handled(event: RunEvent) -> bool:
    """A failure the node's ``error`` route took: the item goes on along that route, it did not fail."""
    return event_data(event).get("label") == "error"


def progress_rows(state: RunState | None, events: Iterable[RunEvent],
                  batches: Mapping[str, tuple[int, int]] | None = None, *, finished: bool = False) -> list[Progress]:
    """One row per foreach activation, children under the item of their parent activation.

    Live activations come from the runtime (``activation_progress``); ones
    that already finished are pruned from RunState and come from their trace
    events (``foreach_started`` .. ``foreach_completed`` and the completed
    items in between). An item fails when a step inside it fails for good
    (inside an inner loop's item or a subgraph it called too): the trace's
    lineages lead from the failed step up to every item it ran in. Those
    items count as failed, never as running, and ``finished`` (the run is
    over) leaves nothing running.
    """
    rows: dict[str, Progress] = {}
    # The trace first: it knows every activation, including finished ones.
    lineage_of_item: dict[str, tuple[str, int | None]] = {}
    started_in: dict[str, str] = {}  # activation -> the lineage whose frame started it
    above: dict[str, str] = {}  # lineage -> the lineage it runs under (an item's foreach's, a call's caller's)
    # node -> {frame: lineage} of its steps under way not yet matched to a scope they opened, oldest first
    calls: dict[str, dict[str, str]] = {}
    failed: dict[str, set[int]] = {}

    def fail(lineage: str | None) -> None:
        for _ in range(64):  # nesting is bounded; a malformed trace must not loop forever
            if lineage is None:
                return
            item = lineage_of_item.get(lineage)
            if item is not None and item[1] is not None:
                failed.setdefault(item[0], set()).add(item[1])
            lineage = above.get(lineage)

    for event in events:
        kind, act = event.kind, event.activation_id
        if kind == "foreach_started" and act:
            total = summary_of(event).get("total")
            parent = lineage_of_item.get(event.lineage_id)
            started_in[act] = event.lineage_id
            rows[act] = Progress(
                activation_id=act, node_id=event.node_id, done=0,
                total=total if isinstance(total, int) and not isinstance(total, bool) else None,
                parent_activation_id=parent[0] if parent else None,
                parent_index=parent[1] if parent else None,
                lineage_id=event.lineage_id, scope_id=event.scope_id,
            )
        elif kind == "item_started" and act:
            lineage_of_item[event.lineage_id] = (act, event.index)
            if act in started_in:
                above[event.lineage_id] = started_in[act]
        elif kind == "item_completed" and act in rows:
            rows[act].done += 1
            failed.get(act, set()).discard(event.index if event.index is not None else -1)  # redriven: done now
        elif kind == "foreach_completed" and act in rows:
            row = rows[act]
            row.finished = True
            if row.total is None:
                row.total = row.done
        elif kind == "node_started":
            calls.setdefault(event.node_id, {})[event.frame_id] = event.lineage_id
        elif kind in ("node_completed", "node_failed"):
            calls.get(event.node_id, {}).pop(event.frame_id, None)
            if kind == "node_failed" and not _handled(event):
                fail(event.lineage_id)
        elif kind == "item_failed":
            fail(event.lineage_id)
        elif kind == "scope_opened":
            # The trace names the calling node, not its frame: calls open their scopes in the order their
            # steps started, so the caller is that node's oldest step under way not yet matched to a scope.
            waiting = calls.get(str(summary_of(event).get("caller_node_id") or ""))
            if waiting:
                above[event.lineage_id] = waiting.pop(next(iter(waiting)))
    if state is not None:
        for live in activation_progress(state):
            entry = rows.get(live.activation_id)
            if entry is None:
                entry = rows[live.activation_id] = Progress(
                    activation_id=live.activation_id, node_id=live.node_id, done=0, total=None
                )
            # The engine counts a tolerated failed item as completed: here it counts as failed only.
            entry.done = max(0, live.done - live.failed)
            entry.total, entry.running, entry.scope_id = live.total, live.running, live.scope_id
            if batches and live.activation_id in batches:
                # A distributed foreach runs its items in batches elsewhere: committed items and running batches.
                entry.done, entry.running = batches[live.activation_id]
            entry.parent_activation_id = live.parent_activation_id or entry.parent_activation_id
            entry.parent_index = live.parent_index if live.parent_index is not None else entry.parent_index
    for act, entry in rows.items():
        entry.failed = len(failed.get(act, ()))
        # A finished run's items left in its state (a redrive runs the failed ones again) run no more.
        if finished:
            entry.running = 0
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

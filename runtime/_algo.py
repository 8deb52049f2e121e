"""Scheduling step functions: how frames, scopes, activations and interrupts change.

Everything here is a state transition on a ``RunState`` and nothing else: no
task is called and nothing is written anywhere, so the loop can apply these
in a fixed order during a superstep's commit and get the same state whatever
the timing of the tasks was. Identifiers are minted from the run's own
counter (``RunState.id_seq``), trace events are numbered from
``RunState.trace_seq`` and stamped by an injected clock.

*Prepare* (``prepare_step``) lives here too: it reads the scope of every
ready frame (input bindings, branch values, foreach collections, subgraph
inputs) and turns each into a ``Work`` before anything is written, so every
frame of a superstep sees the same state. The loop (``runtime._loop``) only
executes the ``Work`` and hands it back to ``Scheduler`` to commit.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic_core import to_jsonable_python

from runtime._bindings import (
    MISSING,
    ScopeReader,
    apply_outputs,
    build_flat_payload,
    build_payload,
    project,
    set_in,
)
from runtime._compiled import CompiledWorkflow
from runtime._context import RuntimeContext, foreach_context
from runtime._document import (
    DEFAULT_BATCHES_IN_FLIGHT,
    BranchNode,
    ForeachNode,
    InterruptNode,
    Node,
    SubgraphNode,
    TaskNode,
    WorkflowRef,
)
from runtime._document_json import thaw
from runtime._errors import (
    BindingError,
    CorruptRunStateError,
    ForeachItemsFailedError,
    ForkError,
    InputValidationError,
    NodeFailedError,
    RedriveError,
    SubgraphDepthError,
    WorkflowError,
)
from runtime._ids import IdFactory
from runtime._parts import GrowList, lists_of, new_list_id
from runtime._registry import TaskSpec
from runtime._secrets import SecretResolver, conceal, reveal, scrub, scrub_error
from runtime._state import (
    FRAME_FIELDS,
    LINEAGE_FIELDS,
    ROOT_SCOPE_ID,
    SCOPE_FIELDS,
    Barrier,
    EntryCache,
    ExecutionFrame,
    ForeachActivation,
    ForeachItemMetadata,
    Interrupt,
    Lineage,
    LineageKind,
    RunState,
    RuntimeScope,
    Wakeup,
    foreach_item_metadata,
    frame_of,
    new_item_metadata,
    runtime_context,
    trusted_full,
)
from runtime._steps import capped
from runtime._trace import EVENT_TWIN, KEPT_AS_IS, TraceEvent, summarize

_NO_ROUTES: dict[str, str] = {}  # read only: the routes of a node that has none

_COLLECTIONS = {"frame": "frames", "lineage": "lineages", "act": "activations", "scope": "scopes", "int": "interrupts"}


def wake_time(at: float) -> str:
    """A wake-up time as ISO 8601 in UTC (milliseconds), as trace summaries and results show it."""
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds")


def mint(run_state: RunState, ids: IdFactory, kind: str) -> str:
    """A new id of ``kind``, unique within the run."""
    fields = run_state.__dict__  # field storage (see prepare_step's steps counter): two ids per foreach item
    taken = fields[_COLLECTIONS[kind]]
    while True:
        fields["id_seq"] += 1
        new = ids.new(kind, fields["id_seq"])
        if new not in taken:
            return new


def over_kept(keep: int) -> int:
    """How many events ``Recorder.events`` may hold before it is cut back to the last ``keep``."""
    return keep + (keep >> 2) + 16


class Recorder:
    """Numbers the trace events of one engine call and hands them on.

    The sequence counter lives here during a superstep and is written back to
    ``RunState.trace_seq`` by ``sync`` before the state is checkpointed.
    Each event goes to ``sink`` as it is made; the events of the current
    superstep are held until ``take_step`` (the checkpointer stores them with
    the state); ``clock`` (Unix seconds) stamps them; ``kept()`` gives, for ``RunResult.trace``, all of them
    (``keep=None``), the last ``keep``, or none (``keep=0``), so a long run's
    memory need not grow with its history: ``retain`` adds a superstep's events to ``events`` and cuts it back to
    the last ``keep`` once it holds a quarter more (``over_kept``; a list, not a bounded deque, whose making was a
    fiftieth of a one-node run; a cut moves ``keep`` references once per quarter of ``keep`` events, and the few
    events held past their time are few enough not to feed the cyclic GC's collections).

    ``saved`` says whether a superstep's events go anywhere (a checkpointer, an
    ``on_superstep`` hook). When they do not, none are kept and there is no
    sink, no one sees an event: ``recording`` is False, and ``emit`` only
    numbers them (the state's ``trace_seq`` moves on exactly as it would),
    so callers may skip the summaries they would have attached.
    """

    __slots__ = ("run_state", "events", "seq", "first_seq", "step", "sink", "keep", "clock", "recording", "limit")

    def __init__(self, run_state: RunState, *, clock: Callable[[], float], keep: int | None = None,
                 sink: Callable[[TraceEvent], Any] | None = None, saved: bool = True) -> None:
        self.run_state = run_state
        self.clock = clock
        self.keep = keep
        #: ``over_kept(keep)``, worked out once (every event is kept: no limit).
        self.limit = sys.maxsize if keep is None else over_kept(keep)
        self.events: list[TraceEvent] = []
        self.step: list[TraceEvent] = []
        self.sink = sink
        self.seq = self.first_seq = run_state.trace_seq
        self.recording = saved or keep != 0 or sink is not None

    def sync(self) -> None:
        self.run_state.__dict__["trace_seq"] = self.seq  # field storage: see prepare_step's steps counter

    def kept(self) -> list[TraceEvent]:
        """The events retained for ``RunResult.trace``: every one, or the last ``keep``, oldest first."""
        events, keep = self.events, self.keep
        return events[-keep:] if keep is not None and len(events) > keep else events

    def omitted(self) -> int:
        """Events numbered by this call but not in ``kept()`` (the retention bound, or nobody recording)."""
        return self.seq - self.first_seq - len(self.kept()) - len(self.step)

    def retain(self, events: list[TraceEvent]) -> None:
        """Keep a superstep's ``events`` as ``keep`` says."""
        keep = self.keep
        if keep == 0:
            return
        kept = self.events
        kept.extend(events)
        if len(kept) > self.limit and keep is not None:
            del kept[:-keep]

    def take_step(self) -> list[TraceEvent]:
        """The events since the last call (one superstep's), now retained as ``keep`` says."""
        events, self.step = self.step, []
        self.retain(events)
        return events

    def emit(self, kind: str, frame: ExecutionFrame | None = None, node_id: str | None = None,
             activation_id: str | None = None, index: int | None = None, label: str | None = None,
             attempt: int | None = None, duration: float | None = None, summary: Any = None) -> None:
        # Not keyword-only: the four events of every foreach item are emitted with positional arguments (a call
        # with keywords costs half as much again); everywhere else they are named.
        if not self.recording:
            self.seq += 1
            return
        rs = self.run_state
        if frame is not None:
            scope_id, frame_id, lineage_id = frame.scope_id, frame.frame_id, frame.lineage_id
            if node_id is None:
                node_id = frame.node_id
            if activation_id is None:
                meta = frame.metadata.get("foreach")
                if isinstance(meta, dict):
                    activation_id, index = meta.get("activation_id"), meta.get("index")
        else:
            # Run-level events belong to the run's root scope.
            scope_id, frame_id, lineage_id = ROOT_SCOPE_ID, None, None
        # The layout twin's stores written out here, not behind a factory: four events per foreach item, and a
        # call with fifteen arguments cost a fifth of the event. tests/runtime/test_trace.py pins the result to
        # the constructor, field by field.
        event: Any = EVENT_TWIN()
        event.seq = self.seq
        event.kind = kind
        event.run_id = rs.run_id
        event.step = rs.step
        event.time = self.clock()
        event.scope_id = scope_id
        event.frame_id = frame_id
        event.lineage_id = lineage_id
        event.node_id = node_id
        event.activation_id = activation_id
        event.index = index
        event.label = label
        event.attempt = attempt
        event.duration = duration
        event.summary = summary
        event.__class__ = TraceEvent
        self.seq += 1
        self.step.append(event)
        if self.sink is not None:
            self.sink(event)


# ---------------------------------------------------------------------------
# Branches


def _json_equal(left: Any, right: Any) -> bool:
    """JSON equality: ``true`` is not ``1``, and containers compare element-wise by the same rule."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(_json_equal(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        return left.keys() == right.keys() and all(_json_equal(left[k], right[k]) for k in left)
    return bool(left == right)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _case_matches(op: str, value: Any, expected: Any) -> bool:
    if op == "exists":
        return value is not MISSING and value is not None
    if value is MISSING:
        value = None
    if op == "equals":
        return _json_equal(value, expected)
    if op == "not_equals":
        return not _json_equal(value, expected)
    if op == "truthy":
        return bool(value)
    if op == "in":
        if isinstance(expected, list):
            return any(_json_equal(value, option) for option in expected)
        if isinstance(expected, Mapping):
            return isinstance(value, str) and value in expected
        if isinstance(expected, str):
            return isinstance(value, str) and value in expected
        return False
    comparable = (_is_number(value) and _is_number(expected)) or (isinstance(value, str) and isinstance(expected, str))
    if not comparable:
        return False
    if op == "gt":
        return bool(value > expected)
    if op == "gte":
        return bool(value >= expected)
    if op == "lt":
        return bool(value < expected)
    if op == "lte":
        return bool(value <= expected)
    raise WorkflowError(f"unknown branch operator {op!r}", op=op)


def choose_branch(node: BranchNode, value: Any) -> str:
    """The label of the first case that matches ``value`` (``MISSING`` when the path is absent)."""
    for case in node.cases:
        if _case_matches(case.op, value, case.value):
            return case.label
    return node.default_label


# ---------------------------------------------------------------------------
# Failures


@dataclass(slots=True)
class Failure:
    """Where a node failed for good, and why; becomes ``NodeFailedError`` or an error-route payload."""

    node_id: str
    frame_id: str
    scope_id: str
    lineage_id: str
    activation_id: str | None
    index: int | None
    attempts: int
    cause: BaseException
    via: list[str] = field(default_factory=list)

    def cause_dict(self) -> dict[str, Any]:
        cause = self.cause
        described: dict[str, Any] = {"type": type(cause).__name__, "message": str(cause)}
        if isinstance(cause, WorkflowError):
            described = cause.to_dict() | {"type": type(cause).__name__}
        if not str(described.get("message") or "").strip():
            # ``raise RuntimeError()``: every message says something, never "...failed: RuntimeError: ".
            described["message"] = f"{type(cause).__name__} was raised without a message"
        # Details may hold anything a task put in its exception; the run state must stay JSON.
        jsonable: dict[str, Any] = to_jsonable_python(described, fallback=repr)
        return jsonable

    def error_payload(self) -> dict[str, Any]:
        """The node's result on its ``error`` route."""
        cause = self.cause_dict()
        error: dict[str, Any] = {
            "type": cause["type"],
            "message": cause.get("message", ""),
            "node_id": self.node_id,
            "frame_id": self.frame_id,
            "scope_id": self.scope_id,
            "lineage_id": self.lineage_id,
            "attempts": self.attempts,
        }
        if "code" in cause:
            error["code"] = cause["code"]
        if self.index is not None:
            error["index"] = self.index
            error["activation_id"] = self.activation_id
        if self.via:
            error["via"] = list(self.via)
        return {"error": error}

    def to_error(self) -> NodeFailedError:
        where = f"node {self.node_id!r} (frame {self.frame_id}"
        if self.index is not None:
            where += f", item {self.index}"
        if self.via:
            where += ", inside subgraph " + " > ".join(repr(v) for v in self.via)
        where += ")"
        cause = self.cause_dict()
        tries = f" after {self.attempts} attempts" if self.attempts > 1 else ""
        error = NodeFailedError(
            f"{where} failed{tries}: {cause['type']}: {cause.get('message', '')}",
            node_id=self.node_id, frame_id=self.frame_id, scope_id=self.scope_id, lineage_id=self.lineage_id,
            activation_id=self.activation_id, index=self.index, attempts=self.attempts, cause=cause,
            via=list(self.via) or None,
        )
        error.__cause__ = self.cause
        return error


# ---------------------------------------------------------------------------
# The scheduler


class Scheduler:
    """Applies node outcomes to a RunState: routing, foreach barriers, scopes, interrupts, failures.

    ``plan_for(scope)`` gives the compiled workflow a scope runs. ``completed``
    turns true when the root scope finishes; ``failure`` holds the first
    failure that reached the root scope without an error route.
    """

    def __init__(self, run_state: RunState, ids: IdFactory, recorder: Recorder,
                 plan_for: Callable[[RuntimeScope], CompiledWorkflow],
                 distribute: Callable[[ForeachNode, int], bool] | None = None) -> None:
        self.rs = run_state
        self.ids = ids
        self.recorder = recorder
        self.plan_for = plan_for
        #: Asked on entering a foreach that has a batch size (in any scope): run it as distributed batches?
        self.distribute = distribute
        self.completed = False
        self.failure: Failure | None = None
        #: Inside one batch (``runtime._batches``): told of each item of the batch activation as it ends
        #: (index, result, error record or None), and set once every item of the batch has ended.
        self.on_batch_item: Callable[[int, Any, dict[str, Any] | None], None] | None = None
        self.batch_done = False
        # Item metadata checked once per live frame: a frame's metadata and its activation
        # never change while the frame lives, and a step reads it several times.
        self._metadata: dict[str, tuple[ExecutionFrame, ForeachItemMetadata]] = {}
        self._entries: EntryCache = {}  # context entries per live frame (runtime._state.foreach_entries)
        #: ``plan_for`` of the root scope, when the caller knows it (the run loop does): looked up at every step.
        self.root_plan: CompiledWorkflow | None = None
        #: Compiles the workflow a subgraph node calls (resolving its reference); ``plan_for`` then gives that plan
        #: to the scope the call opens. Set by the run loop.
        self.subgraph_plan: Callable[[WorkflowRef], CompiledWorkflow] | None = None

    # -- primitives --------------------------------------------------------------

    def scope_of(self, frame: ExecutionFrame) -> RuntimeScope:
        scope = self.rs.scopes.get(frame.scope_id)
        if scope is None:
            raise CorruptRunStateError(f"frame {frame.frame_id!r} is in scope {frame.scope_id!r}, which does not exist",
                                       frame_id=frame.frame_id, scope_id=frame.scope_id)
        return scope

    def node_of(self, frame: ExecutionFrame) -> Node:
        plan = self.plan_for(self.scope_of(frame))
        node = plan.nodes.get(frame.node_id)
        if node is None:
            raise CorruptRunStateError(
                f"frame {frame.frame_id!r} is at node {frame.node_id!r}, which workflow {plan.id!r} does not have",
                frame_id=frame.frame_id, node_id=frame.node_id, workflow_id=plan.id)
        return node

    def enqueue(self, frame: ExecutionFrame) -> None:
        # Pydantic attribute writes cost; a frame moving on from a node is already ready.
        if frame.status != "ready":
            frame.status = "ready"
        if frame.waiting_for is not None:
            frame.waiting_for = None
        self.rs.ready.append(frame.frame_id)

    def new_frame(self, parent: ExecutionFrame | None, scope_id: str, node_id: str, kind: LineageKind,
                  metadata: dict[str, Any] | None = None, frame_id: str | None = None) -> ExecutionFrame:
        # Not keyword-only: admit passes its arguments by position, once per item (see Recorder.emit).
        rs = self.rs
        # mint() twice, written out: a foreach item's frame and lineage ids (what mint does, same order).
        fields, new_id = rs.__dict__, self.ids.new
        frames, lineages = fields["frames"], fields["lineages"]
        if not frame_id:
            while True:
                fields["id_seq"] += 1
                frame_id = new_id("frame", fields["id_seq"])
                if frame_id not in frames:
                    break
        while True:
            fields["id_seq"] += 1
            lineage_id = new_id("lineage", fields["id_seq"])
            if lineage_id not in lineages:
                break
        frame = trusted_full(ExecutionFrame, {
            "frame_id": frame_id, "parent_frame_id": parent.frame_id if parent else None, "scope_id": scope_id,
            "lineage_id": lineage_id, "node_id": node_id, "status": "ready", "waiting_for": None,
            "metadata": metadata or {}, "steps": 0,
        }, FRAME_FIELDS)
        frames[frame_id] = frame
        lineages[lineage_id] = trusted_full(Lineage, {
            "lineage_id": lineage_id, "kind": kind, "scope_id": scope_id, "frame_id": frame_id,
            "parent_lineage_id": parent.lineage_id if parent else None,
        }, LINEAGE_FIELDS)
        return frame

    def remove_frame(self, frame: ExecutionFrame) -> None:
        self.rs.frames.pop(frame.frame_id, None)
        self.rs.lineages.pop(frame.lineage_id, None)
        self._metadata.pop(frame.frame_id, None)
        self._entries.pop(frame.frame_id, None)

    def item_metadata(self, frame: ExecutionFrame) -> ForeachItemMetadata | None:
        if "foreach" not in frame.metadata:
            return None
        known = self._metadata.get(frame.frame_id)
        if known is not None and known[0] is frame:
            return known[1]
        meta = foreach_item_metadata(self.rs, frame)
        if meta is not None:
            self._metadata[frame.frame_id] = (frame, meta)
        return meta

    def context(self, frame: ExecutionFrame, workflow_id: str = "") -> RuntimeContext:
        if "foreach" not in frame.metadata:
            parent_id = frame.parent_frame_id
            parent = self.rs.frames.get(parent_id) if parent_id is not None else None
            if parent_id is None or (parent is not None and parent.scope_id != frame.scope_id):
                # A scope's root frame (what runs outside any foreach): nothing to walk. Every field by position,
                # the empty mappings too: the dataclass's keywords and default factories cost twice the call.
                return RuntimeContext(self.rs.run_id, workflow_id, frame.scope_id, frame.frame_id, frame.lineage_id,
                                      frame.node_id, 1, {}, {})
        known = self._entries.get(frame.frame_id)
        if known is not None and known[0] is frame:
            # An item whose entries were cached when it was admitted (see admit): when no active foreach has an
            # alias, what runtime_context derives from them, without its walk and alias table.
            foreach = {}
            for entry, alias in known[1]:
                if alias is not None:
                    break
                foreach[entry.node_id] = entry
            else:
                if len(foreach) == len(known[1]):  # else a foreach is active twice: runtime_context refuses it
                    return RuntimeContext(self.rs.run_id, workflow_id, frame.scope_id, frame.frame_id,
                                          frame.lineage_id, frame.node_id, 1, foreach, {})
        return runtime_context(self.rs, frame.frame_id, workflow_id=workflow_id, item_metadata=self.item_metadata,
                               cache=self._entries)

    def reader(self, scope: RuntimeScope, frame: ExecutionFrame, workflow_id: str = "") -> ScopeReader:
        return ScopeReader(scope.input, scope.state, lambda: self.context(frame, workflow_id).to_mapping(),
                           self.exposer(scope))

    def exposer(self, scope: RuntimeScope) -> Callable[[tuple[str, ...]], None] | None:
        """What a reader of ``scope``'s state must tell about its reads (None while no list grows in place)."""
        lists = lists_of(self.rs, create=False)
        if lists is None or not lists.by_path:
            return None
        scope_id = scope.scope_id
        return lambda parts: lists.expose(scope_id, parts)

    # -- routing -------------------------------------------------------------------

    def commit_result(self, frame: ExecutionFrame, node: Node, label: str, result: Any) -> None:
        """Write ``result`` through the node's output bindings, then follow ``label``."""
        bindings = getattr(node, "output", None)
        if bindings:
            rs, scope = self.rs, self.scope_of(frame)
            scope_id = scope.scope_id

            def grow(state: dict[str, Any], parts: tuple[str, ...], values: list[Any]) -> dict[str, Any] | None:
                # The run's list registry is looked up (made, the first time) only by an append or extend:
                # most writes are plain sets, and a run that never grows a list never needs one.
                lists = lists_of(rs)
                assert lists is not None
                return lists.extend(scope_id, state, parts, values)

            try:
                scope.__dict__["state"] = apply_outputs(  # field storage: see prepare_step's steps counter
                    scope.state, bindings, result, node_id=node.id, grow=grow)
            except BindingError as exc:
                self.fail(frame, node, exc, attempts=1, error_route=label != "error")
                return
        self.route(frame, label, result)

    def route(self, frame: ExecutionFrame, label: str, result: Any = None) -> None:
        """Follow ``label``; ``result`` is what the node produced (an item's result when it routes back)."""
        scope = self.rs.scopes.get(frame.scope_id)
        if scope is None:
            scope = self.scope_of(frame)  # raises
        root = self.root_plan
        plan = root if scope.scope_id == ROOT_SCOPE_ID and root is not None else self.plan_for(scope)
        target = plan.routes.get(frame.node_id, _NO_ROUTES).get(label)  # plan.target, at every node step
        if target is None:
            self.end_lineage(frame)
            return
        known = self._metadata.get(frame.frame_id)  # item_metadata's cache, looked at here first
        meta = known[1] if known is not None and known[0] is frame else self.item_metadata(frame)
        if meta is not None and target == meta.node_id:
            self.complete_item(frame, meta, result)
            return
        frame.__dict__["node_id"] = target  # field storage: see prepare_step's steps counter
        self.enqueue(frame)

    def end_lineage(self, frame: ExecutionFrame) -> None:
        """A frame emitted a label with no route: its line of work is over."""
        meta = self.item_metadata(frame)
        if meta is not None:
            # The analyzer forbids this inside a body (region.no_return); if it happens anyway,
            # counting the item as done keeps the barrier from waiting forever.
            self.complete_item(frame, meta)
            return
        scope = self.scope_of(frame)
        if scope.root_frame_id != frame.frame_id:
            raise CorruptRunStateError(
                f"frame {frame.frame_id!r} ended but is neither a foreach item nor the root of scope "
                f"{scope.scope_id!r}",
                frame_id=frame.frame_id, scope_id=scope.scope_id)
        self.finish_scope(scope, frame)

    # -- scopes --------------------------------------------------------------------

    def open_scope(self, caller: ExecutionFrame, node: SubgraphNode, plan: CompiledWorkflow,
                   child_input: dict[str, Any]) -> None:
        rs = self.rs
        parent_scope = self.scope_of(caller)
        scope_id = mint(rs, self.ids, "scope")
        frame_id = mint(rs, self.ids, "frame")
        # Every value here is the engine's own (the input was checked by prepare_work): see trusted().
        rs.scopes[scope_id] = trusted_full(RuntimeScope, {
            "scope_id": scope_id, "workflow": node.workflow, "parent_scope_id": parent_scope.scope_id,
            "caller_frame_id": caller.frame_id, "root_frame_id": frame_id, "depth": parent_scope.depth + 1,
            "input": child_input, "state": plan.initial_state(),
        }, SCOPE_FIELDS)
        caller.__dict__["status"] = "waiting"  # field storage: see prepare_step's steps counter
        caller.__dict__["waiting_for"] = scope_id
        child = self.new_frame(parent=caller, scope_id=scope_id, node_id=plan.start or "", kind="subgraph",
                               frame_id=frame_id)
        self.recorder.emit("scope_opened", child, node_id=plan.start,
                           summary={"workflow": plan.id, "caller_node_id": node.id, "input": summarize(child_input)})
        if plan.start is None:
            self.finish_scope(rs.scopes[scope_id], child)
        else:
            self.enqueue(child)

    def finish_scope(self, scope: RuntimeScope, root_frame: ExecutionFrame) -> None:
        """The scope's root lineage ended: project the workflow outputs and hand them to the caller."""
        root = self.root_plan
        plan = root if scope.scope_id == ROOT_SCOPE_ID and root is not None else self.plan_for(scope)
        reader = self.reader(scope, root_frame, plan.id)
        flat = plan.flat_outputs
        output = build_flat_payload(flat, reader) if flat is not None else project(plan.outputs, reader)
        if output is MISSING:
            output = {}
        rs = self.rs
        self.remove_frame(root_frame)
        if scope.scope_id == ROOT_SCOPE_ID:
            rs.__dict__["output"] = output  # field storage: see prepare_step's steps counter
            self.completed = True
            return
        del rs.scopes[scope.scope_id]
        caller = rs.frames.get(scope.caller_frame_id or "")
        if caller is None:
            raise CorruptRunStateError(f"scope {scope.scope_id!r} has no caller frame {scope.caller_frame_id!r}",
                                       scope_id=scope.scope_id)
        self.recorder.emit("scope_closed", root_frame, summary={"workflow": plan.id, "output": summarize(output)})
        node = self.node_of(caller)
        self.recorder.emit("node_completed", caller, label="ok", summary=summarize(output))
        self.commit_result(caller, node, "ok", output)

    def discard_scope(self, scope_id: str) -> None:
        """Drop a failed child scope and everything inside it (nested scopes included)."""
        rs = self.rs
        doomed = {scope_id}
        grew = True
        while grew:
            grew = False
            for scope in rs.scopes.values():
                if scope.parent_scope_id in doomed and scope.scope_id not in doomed:
                    doomed.add(scope.scope_id)
                    grew = True
        for frame in [f for f in rs.frames.values() if f.scope_id in doomed]:
            self.remove_frame(frame)
        for key in [k for k, a in rs.activations.items() if a.scope_id in doomed]:
            del rs.activations[key]
            rs.barriers.pop(key, None)
        for key in [k for k, i in rs.interrupts.items() if i.scope_id in doomed]:
            del rs.interrupts[key]
        for key in [k for k in rs.wakeups if k not in rs.frames]:
            del rs.wakeups[key]
        rs.ready = [fid for fid in rs.ready if fid in rs.frames]
        for key in doomed:
            rs.scopes.pop(key, None)

    # -- foreach -------------------------------------------------------------------

    def enter_foreach(self, frame: ExecutionFrame, node: ForeachNode, items: list[Any]) -> None:
        rs = self.rs
        plan = self.plan_for(self.scope_of(frame))
        activation_id = mint(rs, self.ids, "act")
        self.recorder.emit("foreach_started", frame, activation_id=activation_id, summary={"total": len(items)})
        if not items or plan.target(node.id, "loop") is None:
            self.recorder.emit("foreach_completed", frame, activation_id=activation_id, label="done",
                               summary={"total": len(items), "done": 0})
            collected = None
            if node.results is not None:
                collected = self.store_results(frame, node, [], None)
            self.route(frame, "done", collected)
            return
        activation = ForeachActivation(
            activation_id=activation_id, node_id=node.id, scope_id=frame.scope_id, frame_id=frame.frame_id,
            alias=node.as_, items=items, max_concurrency=node.max_concurrency,
        )
        if node.results is not None:
            activation.results_id = activation_id
            # Written by index as items arrive; becomes the state list at ``done`` without a copy.
            activation.results = GrowList([None] * len(items), activation.results_id)
        rs.activations[activation_id] = activation
        rs.barriers[activation_id] = Barrier(activation_id=activation_id, frame_id=frame.frame_id,
                                             expected=len(items))
        frame.status = "waiting"
        frame.waiting_for = activation_id
        if node.batch_size is not None and self.distribute is not None and self.distribute(node, len(items)):
            # The items run as batches elsewhere (runtime._batches); Engine.join_foreach meets the barrier.
            activation.batch_size = node.batch_size
            activation.batches_in_flight = node.max_batches_in_flight or DEFAULT_BATCHES_IN_FLIGHT
            self.recorder.emit("foreach_distributed", frame, activation_id=activation_id, summary={
                "total": len(items), "batch_size": activation.batch_size,
                "batches": len(activation.batch_ranges()), "in_flight": activation.batches_in_flight})
            return
        self.admit(activation)

    def admit(self, activation: ForeachActivation) -> None:
        """Start items until ``max_concurrency`` are running or none are left, in index order."""
        rs = self.rs
        parent = rs.frames.get(activation.frame_id)
        if parent is None:
            raise CorruptRunStateError(f"foreach activation {activation.activation_id!r} waits in frame "
                                       f"{activation.frame_id!r}, which does not exist",
                                       activation_id=activation.activation_id)
        scope = rs.scopes.get(parent.scope_id)
        if scope is None:
            scope = self.scope_of(parent)  # raises
        root = self.root_plan
        plan = root if scope.scope_id == ROOT_SCOPE_ID and root is not None else self.plan_for(scope)
        loop_target = plan.routes.get(activation.node_id, _NO_ROUTES).get("loop")  # plan.target
        only = activation.only
        total = len(activation.items) if only is None else len(only)  # activation.total
        # The waiting frame's context entries, when a step has derived them: every item's start with them.
        entries = self._entries
        known = entries.get(parent.frame_id)
        outer = known[1] if known is not None and known[0] is parent else None
        if loop_target is None:
            return
        # The activation's fields read once (pydantic attribute reads at every item otherwise add up); next_index
        # moves, so it is read and written in field storage (see prepare_step's steps counter).
        fields = activation.__dict__
        node_id, activation_id, alias = activation.node_id, activation.activation_id, activation.alias
        scope_id, items, running, most = activation.scope_id, activation.items, activation.running, \
            activation.max_concurrency
        metadata, emit, ready = self._metadata, self.recorder.emit, rs.ready
        recording = self.recorder.recording
        while len(running) < most and fields["next_index"] < total:
            index = fields["next_index"] if only is None else only[fields["next_index"]]
            item = items[index]
            frame = self.new_frame(parent, scope_id, loop_target, "item",
                                   {"foreach": {"node_id": node_id, "activation_id": activation_id, "index": index,
                                                "item": item, "alias": alias}})
            frame_id = frame.frame_id
            # The engine just wrote this metadata itself: remember it rather than re-checking it.
            metadata[frame_id] = (frame, new_item_metadata(node_id, activation_id, index, item, alias))
            if outer is not None:  # the item's context entries: its parent's, then its own (foreach_entries)
                entries[frame_id] = (frame, (*outer, (foreach_context(
                    node_id, activation_id, frame_id, frame.scope_id, frame.lineage_id, index, item), alias)))
            fields["next_index"] += 1
            running.append(frame_id)
            emit("item_started", frame, node_id, activation_id, index, None, None, None,
                 (item if type(item) in KEPT_AS_IS else summarize(item)) if recording else None)
            ready.append(frame_id)  # enqueue: a new frame is ready and waits for nothing already

    def complete_item(self, frame: ExecutionFrame, meta: ForeachItemMetadata, result: Any = None,
                      failed: dict[str, Any] | None = None) -> None:
        """An item is over: returned to its foreach with ``result``, or failed and tolerated (``failed``)."""
        rs = self.rs
        activation = rs.activations[meta.activation_id]
        fields = activation.__dict__  # read and written in field storage: see prepare_step's steps counter
        running = fields["running"]
        barrier = rs.barriers.get(meta.activation_id)
        if barrier is None or frame.frame_id not in running:
            raise CorruptRunStateError(
                f"foreach item frame {frame.frame_id!r} is not running in activation {meta.activation_id!r}",
                frame_id=frame.frame_id, activation_id=meta.activation_id)
        running.remove(frame.frame_id)
        fields["completed"] += 1
        if fields["results_id"] is not None and failed is None:
            activation.results[meta.index] = list(result) if isinstance(result, GrowList) else result
        barrier.__dict__["arrived"] += 1
        if failed is None:
            self.recorder.emit("item_completed", frame, meta.node_id, meta.activation_id, meta.index)
        # remove_frame, written out (once per item)
        frame_id = frame.frame_id
        rs.frames.pop(frame_id, None)
        rs.lineages.pop(frame.lineage_id, None)
        self._metadata.pop(frame_id, None)
        self._entries.pop(frame_id, None)
        if activation.only is not None:  # the activation of one batch: its items go back to the host
            if self.on_batch_item is not None:
                self.on_batch_item(meta.index, None if failed is not None else result, failed)
            if activation.completed >= activation.total:
                self.batch_done = True
                return
            self.admit(activation)
            return
        if fields["completed"] >= len(fields["items"]):  # activation.total, without a batch's ``only``
            waiting = rs.frames.get(activation.frame_id)
            if waiting is None:
                raise CorruptRunStateError(f"foreach activation {activation.activation_id!r} has no waiting frame",
                                           activation_id=activation.activation_id)
            self.finish_activation(activation, waiting)
        else:
            self.admit(activation)

    def finish_activation(self, activation: ForeachActivation, waiting: ExecutionFrame) -> None:
        """Every item has arrived: fail the foreach if more failed than it tolerates, else continue on ``done``."""
        rs = self.rs
        del rs.activations[activation.activation_id]
        del rs.barriers[activation.activation_id]
        total, failed = len(activation.items), sorted(activation.failed, key=lambda entry: entry["index"])
        summary: dict[str, Any] = {"total": total, "done": activation.completed}
        if failed:
            summary["failed"] = len(failed)
        node = self.node_of(waiting)
        if failed and isinstance(node, ForeachNode) and node.too_many_failures(len(failed), total):
            self.recorder.emit("foreach_completed", waiting, activation_id=activation.activation_id,
                               summary=summary)
            indices = [entry["index"] for entry in failed]
            shown = ", ".join(map(str, indices[:20])) + (f" and {len(indices) - 20} more" if len(indices) > 20
                                                          else "")
            first = failed[0]["error"]
            tolerance = [f"{key} {getattr(node, key)}" for key in
                         ("tolerated_failure_count", "tolerated_failure_percentage") if getattr(node, key) is not None]
            error = ForeachItemsFailedError(
                f"foreach {node.id!r}: {len(failed)} of {total} items failed (item{'s' if len(failed) > 1 else ''} "
                f"{shown}), more than it tolerates ({', '.join(tolerance) or 'no failures tolerated'}); item "
                f"{failed[0]['index']}: {first.get('type', 'Error')}: {first.get('message', '')}",
                node_id=node.id, activation_id=activation.activation_id, total=total, failed=indices[:1000],
                errors=failed[:10])
            self.fail(waiting, node, error, attempts=1)
            return
        self.recorder.emit("foreach_completed", waiting, activation_id=activation.activation_id,
                           label="done", summary=summary)
        collected = None
        if activation.results_id is not None and isinstance(node, ForeachNode):
            collected = self.store_results(waiting, node, activation.results, activation.results_id)
        # A foreach's result is its result list: an outer foreach it routes back to collects it.
        self.route(waiting, "done", collected)

    def join_distributed(self, activation_id: str, outcomes: Any) -> None:
        """Meet a distributed activation's barrier with every item's outcome (``runtime._batches.ItemOutcome``)."""
        rs = self.rs
        activation = rs.activations.get(activation_id)
        if activation is None or not activation.distributed:
            raise CorruptRunStateError(f"no distributed foreach activation {activation_id!r} to join",
                                       activation_id=activation_id)
        total = len(activation.items)
        seen = bytearray(total)
        failed: list[dict[str, Any]] = []
        results = activation.results if activation.results_id is not None else None
        for outcome in outcomes:
            index = outcome.index
            if not 0 <= index < total or seen[index]:
                raise CorruptRunStateError(f"foreach activation {activation_id!r}: item outcome {index} is "
                                           f"{'repeated' if 0 <= index < total else 'out of range'}",
                                           activation_id=activation_id, index=index)
            seen[index] = 1
            if outcome.error is not None:
                failed.append({"index": index, "error": outcome.error})
            elif results is not None:
                results[index] = outcome.result
        missing = total - sum(seen)
        if missing:
            first = seen.index(0)
            raise CorruptRunStateError(f"foreach activation {activation_id!r}: {missing} of {total} item outcomes "
                                       f"are missing (the first is item {first})", activation_id=activation_id,
                                       missing=missing)
        barrier = rs.barriers[activation_id]
        activation.failed = failed
        activation.completed = barrier.arrived = total
        waiting = rs.frames.get(activation.frame_id)
        if waiting is None:
            raise CorruptRunStateError(f"foreach activation {activation_id!r} has no waiting frame",
                                       activation_id=activation_id)
        self.finish_activation(activation, waiting)

    # -- tolerated failures --------------------------------------------------------

    def tolerate(self, frame: ExecutionFrame, failure: Failure) -> bool:
        """If ``frame`` is (inside) an item of a foreach that tolerates failures (or of a batch), end that item
        as failed and return True; the nearest such foreach in the frame's scope takes it."""
        found = self.tolerating(frame)
        if found is None:
            return False
        item, meta = found
        activation = self.rs.activations[meta.activation_id]
        record = {"index": meta.index, "error": failure.error_payload()["error"]}
        activation.failed.append(record)
        self.recorder.emit("item_failed", item, node_id=meta.node_id, activation_id=meta.activation_id,
                           index=meta.index, summary=summarize(record["error"]))
        self.discard_below(item)
        self.complete_item(item, meta, None, failed=record)
        return True

    def tolerating(self, frame: ExecutionFrame) -> tuple[ExecutionFrame, ForeachItemMetadata] | None:
        """The item frame (with its metadata) that a failure of ``frame`` would end as a tolerated failed item:
        ``frame`` or its nearest same-scope ancestor that is an item of a foreach tolerating failures (or of a
        batch); None when no foreach around it in its scope tolerates one."""
        frames = self.rs.frames
        current: ExecutionFrame | None = frame
        while current is not None:
            meta = self.item_metadata(current)
            if meta is not None:
                activation = self.rs.activations.get(meta.activation_id)
                if activation is not None and (activation.only is not None or self._tolerant(activation)):
                    return current, meta
            parent = frames.get(current.parent_frame_id or "")
            if parent is None or parent.scope_id != current.scope_id:
                return None
            current = parent
        return None

    def caught_above(self, scope: RuntimeScope) -> bool:
        """Whether a failure leaving the child scope ``scope`` is caught on its way to the root scope: by a
        caller's ``error`` route, or by a foreach around a caller that tolerates failed items."""
        while scope.scope_id != ROOT_SCOPE_ID:
            caller = self.rs.frames.get(scope.caller_frame_id or "")
            if caller is None:
                raise CorruptRunStateError(f"scope {scope.scope_id!r} has no caller frame", scope_id=scope.scope_id)
            outer = self.scope_of(caller)
            if self.plan_for(outer).target(caller.node_id, "error") is not None or self.tolerating(caller):
                return True
            scope = outer
        return False

    def _tolerant(self, activation: ForeachActivation) -> bool:
        scope = self.rs.scopes.get(activation.scope_id)
        node = self.plan_for(scope).nodes.get(activation.node_id) if scope is not None else None
        return isinstance(node, ForeachNode) and node.tolerates_failures

    def discard_below(self, frame: ExecutionFrame) -> None:
        """Drop everything that runs on behalf of ``frame``: its descendant frames (child scopes included),
        the activations they wait on, their interrupts."""
        rs = self.rs
        below = {frame.frame_id}
        grew = True
        while grew:
            grew = False
            for other in rs.frames.values():
                if other.frame_id not in below and other.parent_frame_id in below:
                    below.add(other.frame_id)
                    grew = True
        if len(below) == 1:
            return
        for scope in [s for s in rs.scopes.values() if s.caller_frame_id in below]:
            if scope.scope_id in rs.scopes:
                self.discard_scope(scope.scope_id)
        for key in [k for k, a in rs.activations.items() if a.frame_id in below]:
            del rs.activations[key]
            rs.barriers.pop(key, None)
        for key in [k for k, i in rs.interrupts.items() if i.frame_id in below]:
            del rs.interrupts[key]
        for frame_id in below - {frame.frame_id}:
            doomed = rs.frames.get(frame_id)
            if doomed is not None:
                self.remove_frame(doomed)
        rs.ready = [fid for fid in rs.ready if fid in rs.frames]

    def store_results(self, frame: ExecutionFrame, node: ForeachNode, results: list[Any],
                      list_id: str | None) -> list[Any]:
        """Write a finished foreach's results into its ``results`` state field, as a list the engine may grow.

        Returns the list (an outer foreach that collects it takes a copy: this one may grow in state).
        """
        assert node.results is not None
        scope = self.scope_of(frame)
        parts = node.results.parts
        if not isinstance(results, GrowList):
            results = GrowList(results, list_id or new_list_id())
        scope.state = set_in(scope.state, parts, results)
        lists = lists_of(self.rs)
        assert lists is not None
        lists.adopt(scope.scope_id, parts, results)
        return results

    # -- interrupts -----------------------------------------------------------------

    def interrupt(self, frame: ExecutionFrame, node: InterruptNode, payload: Any) -> Interrupt:
        rs = self.rs
        interrupt_id = mint(rs, self.ids, "int")
        record = Interrupt(
            interrupt_id=interrupt_id, frame_id=frame.frame_id, scope_id=frame.scope_id,
            lineage_id=frame.lineage_id, node_id=node.id, prompt=node.prompt,
            payload=None if payload is MISSING else to_jsonable_python(payload), resume_schema=thaw(node.resume_schema),
            labels=list(node.labels), step=rs.step,
        )
        rs.interrupts[interrupt_id] = record
        frame.status = "interrupted"
        frame.waiting_for = interrupt_id
        self.recorder.emit("interrupted", frame, summary={"interrupt_id": interrupt_id,
                                                          "payload": summarize(record.payload)})
        return record

    # -- suspension ------------------------------------------------------------------

    def suspend(self, frame: ExecutionFrame, node: Node, *, at: float, reason: str, attempt: int = 1,
                result: Any = None) -> Wakeup:
        """Put ``frame`` to sleep until ``at`` (Unix time): a retry's backoff or a ``wait`` step.

        The frame leaves the ready queue; ``wake_due`` brings it back once ``at`` has passed.
        """
        wakeup = Wakeup(frame_id=frame.frame_id, at=at, reason=reason, attempt=attempt,  # type: ignore[arg-type]
                        result=result)
        self.rs.wakeups[frame.frame_id] = wakeup
        frame.status = "suspended"
        frame.waiting_for = None
        self.recorder.emit("node_waiting", frame, node_id=node.id, attempt=attempt if reason == "retry" else None,
                           summary={"reason": reason, "wake_at": wake_time(at)})
        return wakeup

    def wake_due(self, now: float) -> dict[str, Wakeup]:
        """Queue every suspended frame whose time has come (``at <= now``), in the order they went to sleep;
        returns their wake-ups (the loop needs them to know what each frame does now)."""
        rs = self.rs
        due = {fid: w for fid, w in rs.wakeups.items() if w.at <= now}
        for frame_id in due:
            del rs.wakeups[frame_id]
            self.enqueue(frame_of(rs, frame_id))
        return due

    # -- failures ------------------------------------------------------------------

    def fail(self, frame: ExecutionFrame, node: Node, cause: BaseException, *, attempts: int,
             error_route: bool = True, via: list[str] | None = None) -> None:
        """A node failed for good: take its ``error`` route, else fail its scope (and so its caller)."""
        if isinstance(cause, CorruptRunStateError):
            raise cause
        meta = self.item_metadata(frame)
        failure = Failure(
            node_id=node.id, frame_id=frame.frame_id, scope_id=frame.scope_id, lineage_id=frame.lineage_id,
            activation_id=meta.activation_id if meta else None, index=meta.index if meta else None,
            attempts=attempts, cause=cause, via=list(via or []),
        )
        plan = self.plan_for(self.scope_of(frame))
        if error_route and plan.target(node.id, "error") is not None:
            payload = failure.error_payload()
            self.recorder.emit("node_failed", frame, label="error", attempt=attempts,
                               summary=summarize(payload["error"]))
            self.commit_result(frame, node, "error", payload)
            return
        self.recorder.emit("node_failed", frame, attempt=attempts, summary=summarize(failure.cause_dict()))
        if self.tolerate(frame, failure):
            return
        scope = self.scope_of(frame)
        if scope.scope_id == ROOT_SCOPE_ID or not self.caught_above(scope):
            # The run fails. Nothing is discarded, not even the subgraph scopes it fails out of: their callers
            # stay waiting on them with every step that completed inside, so a redrive (``reset_failed``) runs
            # this frame again and nothing else.
            if scope.scope_id != ROOT_SCOPE_ID:
                self.fail_through_callers(scope, failure)
            frame.status = "failed"
            if self.failure is None:
                self.failure = failure
            return
        caller = self.rs.frames.get(scope.caller_frame_id or "")
        if caller is None:
            raise CorruptRunStateError(f"scope {scope.scope_id!r} has no caller frame", scope_id=scope.scope_id)
        self.recorder.emit("scope_closed", frame, summary={"failed": True})
        self.discard_scope(scope.scope_id)
        caller_node = self.node_of(caller)
        inner = failure.to_error()
        # The run error keeps naming the innermost node; callers on the way are listed in ``via``.
        self.fail_caller(caller, caller_node, inner, failure)

    def fail_through_callers(self, scope: RuntimeScope, failure: Failure) -> None:
        """A failure that nothing catches leaves ``scope`` for the root: each caller on the way records it
        (``node_failed``, and ``via`` names it) but keeps waiting on its child scope, which stays as it is."""
        while scope.scope_id != ROOT_SCOPE_ID:
            caller = frame_of(self.rs, scope.caller_frame_id or "")
            self.recorder.emit("node_failed", caller, summary=summarize(failure.cause_dict()))
            failure.via.insert(0, caller.node_id)
            scope = self.scope_of(caller)

    def fail_caller(self, caller: ExecutionFrame, node: Node, inner: NodeFailedError, failure: Failure) -> None:
        plan = self.plan_for(self.scope_of(caller))
        if plan.target(node.id, "error") is not None:
            self.fail(caller, node, inner, attempts=1)
            return
        self.recorder.emit("node_failed", caller, summary=summarize(failure.cause_dict()))
        failure.via.insert(0, node.id)
        if self.tolerate(caller, failure):
            return
        scope = self.scope_of(caller)
        if scope.scope_id == ROOT_SCOPE_ID:
            caller.status = "failed"
            if self.failure is None:
                self.failure = failure
            return
        next_caller = self.rs.frames.get(scope.caller_frame_id or "")
        if next_caller is None:
            raise CorruptRunStateError(f"scope {scope.scope_id!r} has no caller frame", scope_id=scope.scope_id)
        self.recorder.emit("scope_closed", caller, summary={"failed": True})
        self.discard_scope(scope.scope_id)
        self.fail_caller(next_caller, self.node_of(next_caller), inner, failure)


# ---------------------------------------------------------------------------
# Redrive and fork: a stopped RunState made runnable again


def reset_failed(run_state: RunState) -> list[ExecutionFrame]:
    """Make a failed run runnable again; returns the frames that will run again, in queue order.

    Only what failed runs again: each frame that failed for good goes back to
    ``ready`` at the node it failed at. A frame that failed inside a subgraph
    call (at any depth) is one of them: a failure nothing catches keeps the
    child scopes it left, their callers waiting on them, so the call's
    completed steps and items keep their results and only the failed inner
    steps run again. They are queued ahead of the frames
    that were waiting their turn when the run stopped, in frame order. Every
    other frame, every foreach activation with the results its completed
    items delivered, and the state stay exactly as the failed checkpoint has
    them. The error is cleared and ``attempt`` counts one more.
    """
    if run_state.status != "failed":
        raise RedriveError(f"run {run_state.run_id!r} is {run_state.status}; only a failed run can be redriven",
                           run_id=run_state.run_id, status=run_state.status)
    failed = [frame for frame in run_state.frames.values() if frame.status == "failed"]
    if not failed:
        code = (run_state.error or {}).get("code")
        raise RedriveError(
            f"run {run_state.run_id!r} has no failed step to run again (it stopped with {code or 'an error'}); "
            "start a new run instead", run_id=run_state.run_id, error_code=code)
    for frame in failed:
        frame.status = "ready"
        frame.waiting_for = None
    run_state.ready[:0] = [frame.frame_id for frame in failed]
    run_state.status = "running"
    run_state.error = None
    run_state.output = None
    run_state.attempt += 1
    return failed


def reopen_foreach(checkpoint: RunState, latest: RunState, activation_id: str, indices: list[int]) -> None:
    """Make ``checkpoint`` the next attempt of a completed run whose distributed foreach ``activation_id``
    tolerated failed items, so that those items (``indices``) run again.

    ``checkpoint`` is the run's kept checkpoint from while the activation waited for its batches (the last one
    before the join); ``latest`` is the run's last checkpoint (completed). The run goes back to that point:
    the activation waits again (the host runs batches of ``indices`` only and joins them with the outcomes of
    the items that completed), and everything after the join runs again with the new results. Its step, id
    and trace counters go on from ``latest``, so nothing the first attempt recorded is numbered twice;
    ``attempt`` counts one more. ``RedriveError`` when the two do not fit.
    """
    run_id = latest.run_id
    if checkpoint.run_id != run_id:
        raise RedriveError(f"the checkpoint is of run {checkpoint.run_id!r}, not {run_id!r}", run_id=run_id)
    if latest.status != "completed":
        raise RedriveError(f"run {run_id!r} is {latest.status}; only a completed run's tolerated foreach items "
                           "can be redriven this way", run_id=run_id, status=latest.status)
    activation = checkpoint.activations.get(activation_id)
    if checkpoint.status != "waiting" or activation is None or not activation.distributed:
        raise RedriveError(f"the checkpoint after superstep {checkpoint.step} of run {run_id!r} does not wait for "
                           f"the batches of distributed foreach activation {activation_id!r}",
                           run_id=run_id, step=checkpoint.step, activation_id=activation_id)
    if checkpoint.step >= latest.step:
        raise RedriveError(f"the checkpoint after superstep {checkpoint.step} is not earlier than the run's last "
                           f"({latest.step})", run_id=run_id, step=checkpoint.step)
    total = len(activation.items)
    if not indices or len(set(indices)) != len(indices) or not all(0 <= i < total for i in indices):
        raise RedriveError(f"items to redrive must be distinct indices in 0..{total - 1} of foreach "
                           f"{activation.node_id!r}, got {indices[:20]!r}", run_id=run_id,
                           activation_id=activation_id)
    checkpoint.step = latest.step
    checkpoint.id_seq = max(checkpoint.id_seq, latest.id_seq)
    checkpoint.trace_seq = latest.trace_seq
    checkpoint.attempt = latest.attempt + 1
    checkpoint.status = "running"
    checkpoint.output = None
    checkpoint.error = None


def forkable(run_state: RunState) -> None:
    """``ForkError`` unless a run can go on from ``run_state`` (a checkpoint taken while it ran or waited)."""
    if run_state.status not in ("running", "interrupted"):
        raise ForkError(
            f"the checkpoint at superstep {run_state.step} of run {run_state.run_id!r} is {run_state.status}: "
            "nothing is left to run from it; pick an earlier superstep",
            run_id=run_state.run_id, step=run_state.step, status=run_state.status)


def fork_state(run_state: RunState, run_id: str, *, state: dict[str, Any] | None = None) -> RunState:
    """A new run's state: ``run_state`` (a past checkpoint) under ``run_id``, its root state replaced by
    ``state`` when given (already checked against the schema). The origin itself is not changed."""
    forkable(run_state)
    data = run_state.model_dump(mode="json")
    data["run_id"] = run_id
    data["attempt"] = 1
    if state is not None:
        data["scopes"][ROOT_SCOPE_ID]["state"] = state
    return RunState.from_json(data)


# ---------------------------------------------------------------------------
# Prepare: what each ready frame of a superstep will do, read before anything is written


@dataclass(slots=True, eq=False)
class Work:
    """One ready frame in one superstep: what prepare decided and what execute produced."""

    frame: ExecutionFrame
    node: Node
    scope: RuntimeScope
    plan: CompiledWorkflow
    spec: TaskSpec | None = None
    call: Callable[[], Any] | None = None
    context: RuntimeContext | None = None
    value: Any = None
    label: str | None = None
    result: Any = None
    error: BaseException | None = None
    attempts: int = 1
    retries: tuple[tuple[int, str], ...] = ()  # a tuple: no list to make for every step, and retries are rare
    duration: float | None = None
    payload: Any = None  # a task's input payload as its bindings built it (what a step executor receives)
    timeout: float | None = None  # a task step's start-to-close limit (runtime._steps.step_timeout)
    max_result_bytes: int | None = None
    woken: Wakeup | None = None  # the wake-up that brought this frame back (its retry attempt, a wait's result)
    first_attempt: int = 1
    #: Set to suspend instead of sleeping before the next attempt (the clock); None: sleep in this thread.
    clock: Callable[[], float] | None = None
    #: The frame suspends: (wake-up time, reason, next attempt, result when it wakes).
    wake: tuple[float, str, int, Any] | None = None
    #: The secrets the step's payload revealed (value -> name), to scrub from what it returns; None: none.
    revealed: dict[str, str] | None = None
    #: The payload with the secrets' values, for a step executor (``payload`` keeps ``secret <name>``).
    revealed_payload: Any = None
    #: Set when ``timeout`` is what is left of a run budget (the meter, which budget): its expiry fails the
    #: step with that budget's code.
    budget_limit: tuple[Any, str] | None = None

    def scrub(self) -> None:
        """Take every revealed secret out of the step's result, error and retry messages."""
        revealed = self.revealed or {}
        self.result = scrub(self.result, revealed)
        if self.error is not None:
            scrub_error(self.error, revealed)
        self.retries = tuple((attempt, scrub(message, revealed)) for attempt, message in self.retries)

    @property
    def runnable(self) -> bool:
        """A task step to call: prepared without an error and not settled already (a wait that is over)."""
        return self.call is not None and self.error is None


@dataclass(frozen=True, slots=True)
class PrepareRules:
    """What prepare needs from the engine: the same for every call of one engine, which makes it once."""

    max_depth: int
    step_timeout: float | None
    max_result_bytes: int | None
    #: The clock a frame suspends by (a backoff, a ``wait``); None when the engine sleeps in-process instead.
    suspend_clock: Callable[[], float] | None
    #: Gives the value of a secret a binding names (None: the engine has no secrets).
    secrets: SecretResolver | None = None


def _context_summary(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """The context mapping with each item bounded like any payload, identities kept whole."""
    foreach = mapping["foreach"]
    if len(foreach) == 1 and len(mapping) == 3 and "loop_item" in mapping and "loop_index" in mapping:
        # One loop and no alias: the context of every item of a flat foreach, built per item step, so without
        # the general case's closure and identity table. The item is summarized once and shared with
        # ``loop_item`` when they are the same object, exactly as the general case does.
        [(key, entry)] = foreach.items()
        raw = entry["item"]
        item = raw if type(raw) in KEPT_AS_IS else summarize(raw)
        loop_item = mapping["loop_item"]
        return {"foreach": {key: {**entry, "item": item}},
                "loop_item": item if loop_item is raw or type(loop_item) in KEPT_AS_IS else summarize(loop_item),
                "loop_index": mapping["loop_index"]}
    # ``loop_item`` and each alias are the same objects as items of ``foreach``: each is summarized once
    # (by identity: every one of them lives as long as ``mapping``).
    done: dict[int, Any] = {}

    def bounded(value: Any) -> Any:
        if type(value) in KEPT_AS_IS:
            return value
        found = done.get(id(value), done)
        if found is done:
            found = done[id(value)] = summarize(value)
        return found

    summary = {"foreach": {key: {**entry, "item": bounded(entry["item"])} for key, entry in foreach.items()}}
    for key, value in mapping.items():
        if key != "foreach":
            summary[key] = bounded(value)
    return summary


def context_summary(context: RuntimeContext) -> dict[str, Any]:
    """``_context_summary(context.to_mapping())`` without the mapping in between when the frame is an item of one
    flat foreach without an alias (the context of every item step of such a foreach): the entry's fields are
    written once, straight into the summary."""
    foreach = context.foreach
    if len(foreach) != 1 or context.aliases:
        return _context_summary(context.to_mapping())
    [(key, entry)] = foreach.items()
    raw = entry.item
    item = raw if type(raw) in KEPT_AS_IS else summarize(raw)
    return {"foreach": {key: {"node_id": entry.node_id, "activation_id": entry.activation_id,
                              "frame_id": entry.frame_id, "scope_id": entry.scope_id,
                              "lineage_id": entry.lineage_id, "index": entry.index, "item": item}},
            "loop_item": item, "loop_index": entry.index}


def prepare_step(run_state: RunState, scheduler: Scheduler, plan_for: Callable[[RuntimeScope], CompiledWorkflow],
                 woken: dict[str, Wakeup], rules: PrepareRules) -> list[Work]:
    """Start a superstep: take every ready frame in queue order and read what it needs.

    A frame whose reads fail carries the error in its ``Work`` (committed as that node's failure); a
    ``node_started`` event is emitted for each. ``woken`` (the wake-ups that queued frames again) is
    consumed for the frames it names.
    """
    rs = run_state
    rs.__dict__["step"] += 1  # field storage, as the steps counter below
    ready = rs.ready.copy()
    rs.ready.clear()  # in place: a model attribute write costs more than the copy
    works: list[Work] = []
    emit, recording = scheduler.recorder.emit, scheduler.recorder.recording
    frames, scopes, root_plan = rs.frames, rs.scopes, scheduler.root_plan
    for frame_id in ready:
        frame = frames.get(frame_id)
        if frame is None:
            frame = frame_of(rs, frame_id)  # raises: the queue names a frame the state lacks
        if frame.status != "ready":
            raise CorruptRunStateError(f"frame {frame_id!r} is queued but its status is {frame.status!r}",
                                       frame_id=frame_id)
        scope = scopes.get(frame.scope_id)
        if scope is None:
            scope = scheduler.scope_of(frame)  # raises: the frame's scope does not exist
        plan = root_plan if scope.scope_id == ROOT_SCOPE_ID and root_plan is not None else plan_for(scope)
        node = plan.nodes.get(frame.node_id)
        if node is None:
            node = scheduler.node_of(frame)  # raises: the frame is at a node its workflow lacks
        # What EngineOptions(max_steps=) bounds: the steps of each line of work. Written to the model's field storage
        # (as the hot writes of every node step are: the superstep, the scope's state, the frame's node, the
        # trace counter): pydantic's __setattr__ (a handler lookup, then the same dict write and a fields-set
        # update nothing reads for state models) costs a third of a microsecond a write; every model holds
        # these fields (trusted() and parsing both set them), and none is validated on assignment.
        frame.__dict__["steps"] += 1
        work = Work(frame, node, scope, plan)
        if woken:
            work.woken = woken.pop(frame_id, None)
        work.clock = rules.suspend_clock
        summary: dict[str, Any] | None = None
        if "foreach" in frame.metadata:
            # Finished frames are pruned from RunState; the event keeps their context for inspection.
            work.context = context = scheduler.context(frame, plan.workflow.id)  # plan.id
            if recording:
                summary = {"context": context_summary(context)}
        try:
            prepare_work(work, scheduler, rules)
        except CorruptRunStateError:
            raise
        except WorkflowError as exc:
            work.error = exc
        if work.call is not None and recording:
            # What the task is called with, as its bindings built it (bounded like every trace payload).
            if summary is None:
                summary = {"input": summarize(work.payload)}
            else:  # this step's own dict: adding to it is the copy the spread made, without the copy
                summary["input"] = summarize(work.payload)
        emit("node_started", frame, None, None, None, None, None, None, summary)  # summary=, by position
        works.append(work)
    return works


def _reader(work: Work, scheduler: Scheduler, context: RuntimeContext | None = None) -> ScopeReader:
    context = context or work.context
    if context is not None:
        return ScopeReader(work.scope.input, work.scope.state, None, scheduler.exposer(work.scope), runtime=context)
    return scheduler.reader(work.scope, work.frame, work.plan.id)


def prepare_work(work: Work, scheduler: Scheduler, rules: PrepareRules) -> None:
    """Read what ``work``'s node needs from its scope: a task's payload and call, a branch's label, a
    foreach's items, a subgraph's plan and checked input, an interrupt's payload. Raises ``WorkflowError``
    when a read or a check fails."""
    node = work.node
    if isinstance(node, TaskNode):
        task = work.plan.tasks[node.id]
        spec = task.spec
        woken = work.woken
        if woken is not None and woken.reason == "wait":  # the wait is over: that was the whole step
            work.spec, work.label, work.result = spec, spec.default_label, woken.result
            return
        ctx = work.context or scheduler.context(work.frame, work.plan.id)
        scope = work.scope
        reader = ScopeReader(scope.input, scope.state, None, scheduler.exposer(scope), ctx)  # _reader's
        payload = (build_flat_payload(task.flat, reader) if task.flat is not None
                   else build_payload(task.inputs, reader, ordered=True))
        work.spec, work.context, work.payload = spec, ctx, payload
        if woken is not None:
            work.first_attempt = max(1, min(woken.attempt, node.retry.max_attempts if node.retry else 1))
            work.attempts = work.first_attempt
        if task.timer is not None and work.clock is not None:
            _prepare_timer(work, spec, ctx, task.timer)
            return
        work.timeout = task.timeout if rules.step_timeout is None else capped(task.timeout, rules.step_timeout)
        work.max_result_bytes = rules.max_result_bytes
        if task.secrets:
            work.revealed_payload, work.revealed = reveal(payload, rules.secrets, node_id=node.id)
            work.call = spec.bind(work.revealed_payload, ctx)
            return
        work.call = spec.bind(payload, ctx)
    elif isinstance(node, BranchNode):
        work.value = choose_branch(node, _reader(work, scheduler).read(node.path))
    elif isinstance(node, ForeachNode):
        items = _reader(work, scheduler).read(node.over)
        if not isinstance(items, list):
            shown = "nothing" if items is MISSING else f"a {type(items).__name__}"
            raise InputValidationError(
                f"foreach {node.id!r}: {node.over} must be a list, got {shown}", node_id=node.id,
                path=str(node.over))
        work.value = items  # state is copy-on-write, so this reference is a stable snapshot
    elif isinstance(node, SubgraphNode):
        depth = work.scope.depth + 1
        if depth > rules.max_depth:
            raise SubgraphDepthError(
                f"subgraph {node.id!r}: calls nest deeper than {rules.max_depth} scopes "
                f"(is workflow {node.workflow.id!r} calling itself?)",
                node_id=node.id, workflow=node.workflow.id, depth=depth, limit=rules.max_depth)
        assert scheduler.subgraph_plan is not None, "a run loop's scheduler knows how to compile a subgraph"
        child = scheduler.subgraph_plan(node.workflow)
        # Secrets reach tasks only: what a subgraph or a person is given shows their names, never their values.
        payload = conceal(build_payload(node.input, _reader(work, scheduler)))
        work.value = (child, child.check_input(payload, what=f"input of subgraph {node.id!r}", node_id=node.id))
    elif isinstance(node, InterruptNode):
        work.value = conceal(build_payload(node.input, _reader(work, scheduler))) if node.input else None


def _prepare_timer(work: Work, spec: TaskSpec, ctx: RuntimeContext, field_name: str) -> None:
    """A task that only waits (the ``wait`` built-in) never runs as a step when the engine suspends: its
    frame sleeps until the time is up and then completes with the task's result (the seconds waited)."""
    attr = next((a for param, a, _ in spec._fields if param == field_name), field_name)
    seconds = getattr(spec.validate_input(work.payload, ctx), attr)
    label, result = spec.finish(seconds, ctx)
    if seconds > 0:
        assert work.clock is not None
        work.wake = (work.clock() + seconds, "wait", 1, result)
    else:
        work.label, work.result = label, result

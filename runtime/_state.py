"""RunState: everything needed to resume a run, and nothing that only describes its past.

The pydantic models here are both the engine's working state and, through
``model_dump_json``, the checkpoint format. They hold live structure only:
a frame, lineage, activation or child scope is deleted as soon as it is done,
so the size of a RunState follows what is active, never how long the run has
been going.

Foreach item frames keep their typed metadata at
``frames[frame_id].metadata["foreach"]``. The structured runtime context is
derived on demand from frame ancestry within one scope
(``foreach_entries``/``runtime_context``); every read of that metadata goes
through ``foreach_item_metadata``, which raises ``CorruptRunStateError`` on
anything malformed, because corrupt state is not a missing value.

A checkpoint is the JSON data plus write-once parts (``split_parts``,
``checkpoint_delta``): item snapshots, scope inputs and the full chunks of
growing lists (``runtime._parts``), so a save costs what changed.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runtime import _parts
from runtime._bindings import set_in
from runtime._context import RESERVED_CONTEXT_FIELDS, ForeachContext, RuntimeContext, foreach_context
from runtime._document import VersionOne, WorkflowRef
from runtime._errors import CorruptRunStateError
from runtime._integrity import check_run_state
from runtime._parts import CHUNK, CheckpointDelta, PartLedger, chunk_key
from runtime._twins import layout_twin

RUN_STATE_VERSION: Literal[1] = 1
ROOT_SCOPE_ID = "root"

RunStatus = Literal["running", "waiting", "interrupted", "completed", "failed", "cancelled"]
FrameStatus = Literal["ready", "waiting", "suspended", "interrupted", "failed"]
LineageKind = Literal["root", "item", "subgraph"]


class _StateModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RuntimeScope(_StateModel):
    """The ``input``/``state``/``context`` boundary of one workflow invocation."""

    scope_id: str
    workflow: WorkflowRef
    parent_scope_id: str | None = None
    caller_frame_id: str | None = None
    root_frame_id: str
    depth: int = 0
    input: dict[str, Any] = Field(default_factory=dict)
    state: dict[str, Any] = Field(default_factory=dict)


class ExecutionFrame(_StateModel):
    """One position of control: the node a line of work is at, in which scope and lineage.

    ``waiting_for`` names the foreach activation or child scope a ``waiting``
    frame is blocked on. A ``suspended`` frame sleeps until its entry in
    ``RunState.wakeups``.
    """

    frame_id: str
    parent_frame_id: str | None = None
    scope_id: str
    lineage_id: str
    node_id: str
    status: FrameStatus = "ready"
    waiting_for: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    #: Node steps this line of work has taken (``EngineOptions(max_steps=)`` bounds it: a route cycle that never
    #: ends is one frame stepping forever, while a foreach's items are frames of their own, each short).
    steps: int = Field(default=0, ge=0)


class Lineage(_StateModel):
    """One line of work's identity. Frozen: nothing changes a lineage once made (a new line gets a new one), which
    lets a snapshot share the model itself instead of copying it (``RunState.snapshot``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    lineage_id: str
    kind: LineageKind
    scope_id: str
    frame_id: str
    parent_lineage_id: str | None = None


class ForeachActivation(_StateModel):
    """One entry into a foreach node: the snapshot of ``over`` and how far the items have got."""

    activation_id: str
    node_id: str
    scope_id: str
    frame_id: str
    alias: str | None = None
    items: list[Any] = Field(default_factory=list)
    max_concurrency: int = 1
    next_index: int = 0
    running: list[str] = Field(default_factory=list)
    completed: int = 0
    #: Set when the foreach collects its items' results (``ForeachNode.results``): the id of the result list.
    results_id: str | None = None
    #: The items' results by index (``None`` until an item arrives); written once per index.
    results: list[Any] = Field(default_factory=list)
    #: Items that failed and were tolerated (``ForeachNode.tolerated_failure_*``, or every failure inside a
    #: batch): ``{"index": i, "error": {...}}`` in the order they failed. Left out of the JSON form when empty.
    #: Only ever appended to while the activation waits for items (the engine and snapshots rely on it): a
    #: checkpoint stores its full chunks once (``failed_parts``, see ``RunState.split_parts``).
    failed: list[dict[str, Any]] = Field(default_factory=list, exclude_if=lambda value: not value)
    #: Set when the items run as distributed batches elsewhere (``runtime._batches``): items per batch. Such an
    #: activation starts no item frames here; its barrier is met by ``Engine.join_foreach``.
    batch_size: int | None = Field(default=None, exclude_if=lambda value: value is None)
    #: How many of those batches may run at once.
    batches_in_flight: int | None = Field(default=None, exclude_if=lambda value: value is None)
    #: Inside one batch: the indices this activation runs, in order (``next_index`` counts into it).
    only: list[int] | None = Field(default=None, exclude_if=lambda value: value is None)

    @property
    def total(self) -> int:
        """How many items this activation waits for."""
        return len(self.items) if self.only is None else len(self.only)

    @property
    def distributed(self) -> bool:
        return self.batch_size is not None

    def batch_ranges(self) -> list[tuple[int, int]]:
        """``[start, stop)`` index ranges of the batches of a distributed activation, in order."""
        size = self.batch_size or len(self.items) or 1
        return [(start, min(start + size, len(self.items))) for start in range(0, len(self.items), size)]


class Barrier(_StateModel):
    """The entering frame of an activation waits here until every item has arrived."""

    activation_id: str
    frame_id: str
    expected: int
    arrived: int = 0


class Interrupt(_StateModel):
    """An open request for a value: the frame stays at its interrupt node until resumed."""

    interrupt_id: str
    frame_id: str
    scope_id: str
    lineage_id: str
    node_id: str
    prompt: str = ""
    payload: Any = None
    resume_schema: dict[str, Any] = Field(default_factory=dict)
    labels: list[str] = Field(default_factory=lambda: ["ok"])
    step: int = 0

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class Wakeup(_StateModel):
    """A frame suspended until a time: a retry's backoff or a ``wait`` step.

    Nothing holds a worker meanwhile: the run is ``waiting`` (when no other
    frame is ready) and whoever continues it after ``at`` wakes the frame; a
    continuation before ``at`` leaves it asleep.
    """

    frame_id: str
    #: When the frame may run again, Unix time in seconds.
    at: float
    #: ``retry``: the node runs again as attempt ``attempt``; ``wait``: the node completes with ``result``.
    reason: Literal["retry", "wait"]
    attempt: int = Field(default=1, ge=1)
    result: Any = None


class RunState(_StateModel):
    version: VersionOne = RUN_STATE_VERSION
    run_id: str
    workflow: WorkflowRef
    status: RunStatus = "running"
    step: int = 0
    #: How many identifiers this run has minted; deterministic id factories derive ids from it.
    id_seq: int = 0
    #: The sequence number of the next trace event.
    trace_seq: int = 0
    #: 1 for the first attempt; each redrive (``Engine.redrive``) starts the next one.
    attempt: int = 1
    scopes: dict[str, RuntimeScope] = Field(default_factory=dict)
    frames: dict[str, ExecutionFrame] = Field(default_factory=dict)
    lineages: dict[str, Lineage] = Field(default_factory=dict)
    ready: list[str] = Field(default_factory=list)
    barriers: dict[str, Barrier] = Field(default_factory=dict)
    activations: dict[str, ForeachActivation] = Field(default_factory=dict)
    interrupts: dict[str, Interrupt] = Field(default_factory=dict)
    #: Suspended frames by frame id. Left out of the JSON form when empty, so checkpoints of runs that never
    #: sleep keep their exact form.
    wakeups: dict[str, Wakeup] = Field(default_factory=dict, exclude_if=lambda value: not value)
    output: Any = None
    error: dict[str, Any] | None = None

    @property
    def root_scope(self) -> RuntimeScope:
        try:
            return self.scopes[ROOT_SCOPE_ID]
        except KeyError:
            raise CorruptRunStateError("run state has no root scope", run_id=self.run_id) from None

    @property
    def wake_at(self) -> float | None:
        """The earliest wake-up of a suspended frame (Unix time), None when no frame sleeps."""
        return min((w.at for w in self.wakeups.values()), default=None)

    def to_json(self) -> str:
        return self.model_dump_json()

    @classmethod
    def from_json(cls, data: str | bytes | Mapping[str, Any]) -> RunState:
        """Load a checkpoint; anything that does not validate is ``CorruptRunStateError``.

        Beyond the format, the structure must be one the engine could have
        written (``runtime._integrity.check_run_state``): every way into the
        engine or the inspection helpers from outside goes through here.
        """
        try:
            if isinstance(data, str | bytes):
                loaded = cls.model_validate_json(data)
            else:
                loaded = cls.model_validate(data)
        except ValidationError as exc:
            problems = [
                {"location": ".".join(str(p) for p in err["loc"]), "message": err["msg"]}
                for err in exc.errors(include_url=False)[:20]
            ]
            raise CorruptRunStateError(
                "run state does not match the RunState format: "
                + "; ".join(f"{p['location']}: {p['message']}" for p in problems[:5]),
                problems=problems,
            ) from None
        loaded.check()
        return loaded

    def check(self) -> None:
        """``CorruptRunStateError`` (naming the entry and field) unless this is a state the engine could write."""
        check_run_state(self)

    def copy_for_resume(self) -> RunState:
        """An independent copy, so resuming never alters the caller's object."""
        return self.model_copy(deep=True)

    def split_parts(self, keep: Callable[[str, Any], bool] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
        """The checkpoint in two parts: this state as JSON data without its write-once parts, and those parts.

        The write-once parts are a foreach activation's item snapshot
        (``PART_KINDS``), a scope's validated input, and the full chunks of
        growing lists (state lists written by ``append``/``extend``, a
        foreach's collected results and its tolerated failures once a chunk
        of them has failed; see ``runtime._parts``). Each is taken
        once and never changes while its entry lives, and entry and list ids
        are minted fresh per run. So a checkpointer can store a part once,
        when its key first appears, and drop it when the key is gone, instead
        of writing a 100,000-item list at every superstep. ``parts`` maps
        ``part_key(kind, entry id)`` (e.g. ``"items:act_3"``,
        ``"input:root"``, ``"list:L2:0"``) to the live value: serialize it,
        never mutate it. ``keep(key, value)`` true leaves that part inline in
        the data instead (a growing list is asked once, as ``"list:<id>"``
        with the whole list). ``RunState.join_parts`` puts the two back
        together; ``checkpoint_delta`` gives only what changed since a save.
        """
        data, parts, _singles, _lists = _split(self, keep, None)
        return data, parts

    def checkpoint_delta(self, ledger: PartLedger) -> CheckpointDelta:
        """``split_parts`` relative to what ``ledger`` says is stored: only the new parts and the gone keys.

        Its cost follows the live structure and what changed, never the
        length of the lists. Call ``ledger.apply(delta)`` once the save is
        committed.
        """
        data, new, singles, lists = _split(self, None, ledger)
        gone = _parts.gone_keys(ledger, singles, lists)
        return CheckpointDelta(data, new, gone, singles, lists, ledger.fresh)

    @staticmethod
    def parts_left_out(data: Mapping[str, Any]) -> list[str]:
        """The keys of the parts that ``data`` (``split_parts``' JSON data) leaves out: what to fetch to join it."""
        return [key for key, _entries, _entry_id in _left_out(data)] + [key for key, _ in _chunks_left_out(data)]

    @staticmethod
    def join_parts_data(data: str | bytes | Mapping[str, Any], parts: Mapping[str, Any]) -> dict[str, Any]:
        """``split_parts``' data with ``parts`` put back, as JSON data (not validated; ``join_parts`` validates).

        Parts stored inline are kept; keys of ``parts`` that no entry needs
        are ignored. An entry whose part is in neither place is corrupt
        (``CorruptRunStateError`` with details ``part`` and the entry's id),
        never an empty default.
        """
        try:
            raw = json.loads(data) if isinstance(data, str | bytes) else data
        except ValueError as exc:
            raise CorruptRunStateError(f"run state is not JSON: {exc}") from None
        if not isinstance(raw, Mapping):
            raise CorruptRunStateError("run state is not a JSON object")
        joined = dict(raw)
        for key, entries, entry_id in _left_out(raw):
            kind, _ = parse_part_key(key)
            collection, field, id_name = PART_KINDS[kind]
            if key not in parts:
                raise CorruptRunStateError(f"the {field} of {collection} entry {entry_id!r} are missing",
                                           part=key, **{id_name: entry_id})
            if joined[collection] is entries:
                joined[collection] = dict(entries)
            joined[collection][entry_id] = {**entries[entry_id], field: parts[key]}
        return _join_lists(joined, parts)

    @classmethod
    def join_parts(cls, data: str | bytes | Mapping[str, Any], parts: Mapping[str, Any]) -> RunState:
        """A RunState from ``split_parts``' data and parts (see ``join_parts_data``)."""
        return cls.from_json(cls.join_parts_data(data, parts))

    def snapshot(self) -> RunStateSnapshot:
        """A point-in-time copy in time proportional to the live structure, not to the data it holds.

        Every container and model the engine changes in place (the maps of
        frames, scopes, activations ..., each of those models, ``ready``,
        an activation's ``running``) is copied. JSON values (scope input and
        state, a foreach's item snapshot, item metadata, payloads, output) are
        shared: nothing mutates them in place, because state writes are
        copy-on-write (``runtime._bindings``) and ``items`` is taken once when
        the foreach starts. That is what keeps an in-memory checkpoint of a
        foreach over 100,000 items as cheap per superstep as one over 10.
        Lineages are shared too: ``Lineage`` is frozen (the map of them is
        copied, its models are not).
        """
        fields = self.__dict__
        data = fields.copy()
        data["ready"] = fields["ready"].copy()
        # One statement per map rather than a loop over their names: an in-memory checkpointer snapshots every
        # superstep (a foreach item's), and the loop's lookups and empty-map branches were a fifth of the cost.
        scopes, frames, lineages, barriers = fields["scopes"], fields["frames"], fields["lineages"], fields["barriers"]
        data["scopes"] = {key: model.__dict__.copy() for key, model in scopes.items()}
        data["frames"] = {key: model.__dict__.copy() for key, model in frames.items()}
        data["lineages"] = lineages.copy()  # frozen models: shared, not copied
        data["barriers"] = {key: model.__dict__.copy() for key, model in barriers.items()}
        interrupts, wakeups = fields["interrupts"], fields["wakeups"]
        data["interrupts"] = {key: model.__dict__.copy() for key, model in interrupts.items()} if interrupts else _NONE
        data["wakeups"] = {key: model.__dict__.copy() for key, model in wakeups.items()} if wakeups else _NONE
        results: tuple[tuple[str, int, tuple[int, ...]], ...] = ()
        failed: list[tuple[str, int]] = []
        activations = {}
        collecting = False
        for key, activation in fields["activations"].items():
            copied = activation.__dict__.copy()
            copied["running"] = copied["running"].copy()
            if copied["failed"]:
                # Only ever appended to (a join replaces the list, never changes it): note its length, not a copy
                # of a list that grows with every failure.
                failed.append((key, len(copied["failed"])))
            if copied["results_id"] is not None:
                collecting = True
            activations[key] = copied
        data["activations"] = activations
        if collecting:  # a foreach without ``collect`` (the common case) has no results to note
            results = tuple((key, activation.next_index, tuple(_parts.running_indices(self, activation)))
                            for key, activation in self.activations.items() if activation.results_id is not None)
        # Growing lists change in place (runtime._parts): note how far each one was, not its contents.
        registry = _parts.lists_of(self, create=False)
        lists = tuple((scope_id, path, values, len(values)) for scope_id, path, values in registry.live(self.scopes)
                      ) if registry is not None and registry.by_path else ()
        return new_snapshot(data, lists, results, tuple(failed) if failed else ())



#: The write-once parts of a RunState, by kind: (RunState map, field of its entries, name of an entry's id).
#: Stable storage format: a part is stored under ``part_key(kind, entry id)`` = ``"<kind>:<entry id>"``.
PART_KINDS: dict[str, tuple[str, str, str]] = {
    "items": ("activations", "items", "activation_id"),
    "input": ("scopes", "input", "scope_id"),
}
_WITHOUT_PARTS: dict[str, Any] = {
    "scopes": {"__all__": {"input"}},
    "activations": {"__all__": {"items", "results"}},
}


def parse_run_state(data: str | bytes | Mapping[str, Any]) -> RunState:
    """A stored run state (its JSON text or decoded object) as a ``RunState``, checked as every state from outside
    is: ``CorruptRunStateError`` naming the location of each problem (format) or the entry and field (structure).

    This is the one step between storage and the engine: ``Engine`` and ``runtime.inspect`` take a ``RunState``
    only, so a caller parses once and hands the same object to every call that needs it.

    The state returned is made for the engine: the first ``Engine`` call given it works on it in place, where
    any other ``RunState`` is copied first so that the caller's object stays as it was (a deep copy costs about
    six times the parse, and a worker parses each stored checkpoint for exactly one call).
    """
    parsed = RunState.from_json(data)
    _HANDED_OVER[id(parsed)] = parsed
    return parsed


#: States ``parse_run_state`` made and no engine call has used yet, by identity (weakly: a dropped one leaves).
_HANDED_OVER: weakref.WeakValueDictionary[int, RunState] = weakref.WeakValueDictionary()


def run_state_to_change(value: object, where: str) -> RunState:
    """The state an engine call may change: ``value`` itself when ``parse_run_state`` made it and no call has used
    it yet (it is then used up), else a copy, so that a caller's object is never altered."""
    rs = given_run_state(value, where)
    if _HANDED_OVER.pop(id(rs), None) is rs:
        return rs
    return rs.copy_for_resume()


def given_run_state(value: object, where: str) -> RunState:
    """``value`` if it is a ``RunState``; a ``TypeError`` telling the caller to parse it first otherwise (a programming
    mistake, not bad data: stored JSON goes through ``parse_run_state``, which reports what is wrong in it)."""
    if isinstance(value, RunState):
        return value
    raise TypeError(f"{where} takes a RunState, not {type(value).__name__}: parse a stored state with "
                    "runtime.state.parse_run_state(...) first")


def part_key(kind: str, entry_id: str) -> str:
    """The storage key of one write-once part, e.g. ``"items:act_3"`` or ``"input:root"``."""
    return f"{kind}:{entry_id}"


def parse_part_key(key: str) -> tuple[str, str]:
    """``(kind, entry id)`` of a ``part_key``; ``ValueError`` for a key of no known kind."""
    kind, sep, entry_id = key.partition(":")
    if not sep or (kind not in PART_KINDS and kind != _parts.LIST_KIND):
        raise ValueError(f"{key!r} is not a RunState part key")
    return kind, entry_id


def _left_out(data: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any], str]]:
    """``(part key, the entries map, entry id)`` for every entry of ``data`` stored without its part."""
    found: list[tuple[str, Mapping[str, Any], str]] = []
    for kind, (collection, field, _id_name) in PART_KINDS.items():
        entries = data.get(collection)
        if isinstance(entries, Mapping):
            found.extend((part_key(kind, entry_id), entries, entry_id) for entry_id, entry in entries.items()
                         if isinstance(entry, Mapping) and field not in entry)
    return found


def _split(rs: RunState, keep: Callable[[str, Any], bool] | None, ledger: PartLedger | None
           ) -> tuple[dict[str, Any], dict[str, Any], set[str], dict[str, tuple[int, frozenset[int]]]]:
    """The data and parts of ``split_parts`` (every part) or of ``checkpoint_delta`` (the parts ``ledger`` lacks).

    Also returns the keys of the whole parts and, per list id, the stored
    (frontier, holes) once these parts are stored.
    """
    registry = _parts.lists_of(rs, create=False)
    grown = list(registry.live(rs.scopes)) if registry is not None and registry.by_path else []
    # Activations whose tolerated failures fill a chunk: their ``failed`` list is stored in chunks too.
    failing = [(activation_id, activation.failed) for activation_id, activation in rs.activations.items()
               if len(activation.failed) >= CHUNK]
    exclude = _WITHOUT_PARTS
    if grown:
        exclude = {**_WITHOUT_PARTS,
                   "scopes": {"__all__": {"input"}, **{scope_id: {"state"} for scope_id, _, _ in grown}}}
    if failing:
        exclude = {**exclude, "activations": {"__all__": {"items", "results"},
                                              **{activation_id: {"failed"} for activation_id, _ in failing}}}
    data = rs.model_dump(mode="json", exclude=exclude)
    parts: dict[str, Any] = {}
    for kind, (collection, field_name, _id_name) in PART_KINDS.items():
        for entry_id, model in getattr(rs, collection).items():
            parts[part_key(kind, entry_id)] = getattr(model, field_name)
    if keep is not None:
        for key in [key for key, value in parts.items() if keep(key, value)]:
            kind, entry_id = parse_part_key(key)
            collection, field_name, _id_name = PART_KINDS[kind]
            data[collection][entry_id][field_name] = pydantic_core.to_jsonable_python(parts.pop(key))
    singles = set(parts)
    if ledger is not None:
        parts = {key: value for key, value in parts.items() if key not in ledger.singles}
    lists: dict[str, tuple[int, frozenset[int]]] = {}
    empty: tuple[int, frozenset[int]] = (0, frozenset())

    def known(list_id: str) -> tuple[int, frozenset[int]]:
        return ledger.lists.get(list_id, empty) if ledger is not None else empty

    states: dict[str, Any] = {}
    for scope_id, path, values in grown:
        state = states.get(scope_id, rs.scopes[scope_id].state)
        entry = data["scopes"][scope_id]
        if keep is not None and keep(f"{_parts.LIST_KIND}:{values.list_id}", values):
            states[scope_id] = state
            continue
        full = len(values) // CHUNK
        lists[values.list_id] = _parts.list_delta(values.list_id, full, set(), values, known(values.list_id), parts)
        entry.setdefault("lists", []).append({
            "path": list(path), "id": values.list_id, "length": len(values),
            "tail": pydantic_core.to_jsonable_python(values[full * CHUNK:]),
        })
        states[scope_id] = _parts.without(state, path)
    for scope_id, state in states.items():
        data["scopes"][scope_id]["state"] = pydantic_core.to_jsonable_python(state)
    for activation_id, activation in rs.activations.items():
        list_id = activation.results_id
        entry = data["activations"][activation_id]
        if list_id is None:
            continue
        results = activation.results
        if keep is not None and keep(f"{_parts.LIST_KIND}:{list_id}", results):
            entry["results"] = pydantic_core.to_jsonable_python(results)
            continue
        running = _parts.running_indices(rs, activation)
        limit, blocked = _parts.result_chunks(activation, running)
        lists[list_id] = _parts.list_delta(list_id, limit, blocked, results, known(list_id), parts)
        waiting = set(running)
        pending = [i for chunk in sorted(blocked) for i in range(chunk * CHUNK, (chunk + 1) * CHUNK)]
        pending.extend(range(limit * CHUNK, activation.next_index))
        entry["results_parts"] = {
            "length": len(results), "full": limit, "blocked": sorted(blocked),
            "pending": [[i, pydantic_core.to_jsonable_python(results[i])] for i in pending if i not in waiting],
        }
    for activation_id, failed in failing:
        # Appended to only, so a full chunk never changes: stored once, like a state list's.
        entry = data["activations"][activation_id]
        list_id = failed_list_id(activation_id)
        if keep is not None and keep(f"{_parts.LIST_KIND}:{list_id}", failed):
            entry["failed"] = pydantic_core.to_jsonable_python(failed)
            continue
        full = len(failed) // CHUNK
        lists[list_id] = _parts.list_delta(list_id, full, set(), failed, known(list_id), parts)
        entry["failed_parts"] = {"id": list_id, "length": len(failed),
                                 "tail": pydantic_core.to_jsonable_python(failed[full * CHUNK:])}
    return data, parts, singles, lists


def failed_list_id(activation_id: str) -> str:
    """The list id of an activation's stored ``failed`` chunks. Derived from the activation id, which a run
    never mints twice, and the list is only appended to while the activation lives: a chunk key always
    names the same failures (a redrive or resume goes on from the stored list, never re-fills a chunk)."""
    return f"failed.{activation_id}"


def _chunks_left_out(data: Mapping[str, Any]) -> list[tuple[str, int]]:
    """``(chunk key, chunk number)`` of every list chunk ``data`` leaves out."""
    found: list[tuple[str, int]] = []
    scopes = data.get("scopes")
    if isinstance(scopes, Mapping):
        for entry in scopes.values():
            for listed in (entry.get("lists") or ()) if isinstance(entry, Mapping) else ():
                if isinstance(listed, Mapping) and isinstance(listed.get("length"), int):
                    found.extend((chunk_key(str(listed.get("id")), k), k) for k in range(listed["length"] // CHUNK))
    activations = data.get("activations")
    if isinstance(activations, Mapping):
        for entry in activations.values():
            described = entry.get("results_parts") if isinstance(entry, Mapping) else None
            if isinstance(described, Mapping) and isinstance(described.get("full"), int):
                blocked = set(described.get("blocked") or ())
                found.extend((chunk_key(str(entry.get("results_id")), k), k)
                             for k in range(described["full"]) if k not in blocked)
            failed = entry.get("failed_parts") if isinstance(entry, Mapping) else None
            if isinstance(failed, Mapping) and isinstance(failed.get("length"), int):
                found.extend((chunk_key(str(failed.get("id")), k), k) for k in range(failed["length"] // CHUNK))
    return found


def _chunk(parts: Mapping[str, Any], list_id: str, chunk: int, where: str, **details: Any) -> list[Any]:
    key = chunk_key(list_id, chunk)
    values = parts.get(key)
    if not isinstance(values, list) or len(values) != CHUNK:
        problem = "is missing" if values is None else "is not a full chunk"
        raise CorruptRunStateError(f"chunk {chunk} of list {list_id!r} ({where}) {problem}", part=key, **details)
    return values


def _join_lists(joined: dict[str, Any], parts: Mapping[str, Any]) -> dict[str, Any]:
    """Put growing lists back together: state lists into their scopes' state, results into their activations."""
    scopes = joined.get("scopes")
    if isinstance(scopes, Mapping) and any(isinstance(e, Mapping) and "lists" in e for e in scopes.values()):
        joined["scopes"] = scopes = dict(scopes)
        for scope_id, entry in list(scopes.items()):
            if not isinstance(entry, Mapping) or "lists" not in entry:
                continue
            entry = dict(entry)
            state = entry.get("state", {})
            for listed in entry.pop("lists") or ():
                try:
                    path, list_id, length, tail = (tuple(listed["path"]), str(listed["id"]), int(listed["length"]),
                                                   list(listed["tail"]))
                except (KeyError, TypeError, ValueError):
                    raise CorruptRunStateError(f"scope {scope_id!r}: a stored list entry is malformed",
                                               scope_id=scope_id) from None
                where = f"state {'.'.join(path)} of scope {scope_id!r}"
                values: list[Any] = []
                for chunk in range(length // CHUNK):
                    values.extend(_chunk(parts, list_id, chunk, where, scope_id=scope_id))
                values.extend(tail)
                if len(values) != length or not path:
                    raise CorruptRunStateError(f"{where}: stored list has {len(values)} elements, not {length}",
                                               scope_id=scope_id)
                # A GrowList with its stored id: the engine adopts it on reopening (``runtime._parts.adopt``),
                # so the chunks already stored stay valid and the list is not written whole at every save.
                state = set_in(state, path, _parts.GrowList(values, list_id))
            entry["state"] = state
            scopes[scope_id] = entry
    activations = joined.get("activations")
    if isinstance(activations, Mapping) and any(isinstance(e, Mapping) and ("results_parts" in e or
                                                                            "failed_parts" in e)
                                                for e in activations.values()):
        joined["activations"] = activations = dict(activations)
        for activation_id, entry in list(activations.items()):
            if isinstance(entry, Mapping) and "failed_parts" in entry:
                entry = activations[activation_id] = _join_failed(activation_id, entry, parts)
            if not isinstance(entry, Mapping) or "results_parts" not in entry:
                continue
            entry = dict(entry)
            described = entry.pop("results_parts")
            list_id = str(entry.get("results_id"))
            try:
                length, full, blocked = int(described["length"]), int(described["full"]), set(described["blocked"])
                pending = [(int(i), v) for i, v in described["pending"]]
            except (KeyError, TypeError, ValueError):
                raise CorruptRunStateError(f"foreach activation {activation_id!r}: stored results are malformed",
                                           activation_id=activation_id) from None
            results: list[Any] = [None] * length
            where = f"results of foreach activation {activation_id!r}"
            for chunk in range(full):
                if chunk not in blocked:
                    results[chunk * CHUNK:(chunk + 1) * CHUNK] = _chunk(parts, list_id, chunk, where,
                                                                         activation_id=activation_id)
            for index, value in pending:
                if not 0 <= index < length:
                    raise CorruptRunStateError(f"{where}: result index {index} is outside 0..{length - 1}",
                                               activation_id=activation_id)
                results[index] = value
            if len(results) != length:
                raise CorruptRunStateError(f"{where}: {len(results)} results for {length} items",
                                           activation_id=activation_id)
            entry["results"] = results
            activations[activation_id] = entry
    return joined


def _join_failed(activation_id: str, entry: Mapping[str, Any], parts: Mapping[str, Any]) -> dict[str, Any]:
    """An activation entry with its ``failed`` list put back from its chunks and inline tail."""
    entry = dict(entry)
    described = entry.pop("failed_parts")
    try:
        list_id, length, tail = str(described["id"]), int(described["length"]), list(described["tail"])
    except (KeyError, TypeError, ValueError):
        raise CorruptRunStateError(f"foreach activation {activation_id!r}: stored failed items are malformed",
                                   activation_id=activation_id) from None
    if "failed" in entry:
        raise CorruptRunStateError(f"foreach activation {activation_id!r}: failed items are stored both inline "
                                   "and in chunks", activation_id=activation_id)
    where = f"failed items of foreach activation {activation_id!r}"
    failed: list[Any] = []
    for chunk in range(length // CHUNK):
        failed.extend(_chunk(parts, list_id, chunk, where, activation_id=activation_id))
    failed.extend(tail)
    if len(failed) != length:
        raise CorruptRunStateError(f"{where}: {len(failed)} stored, not {length}", activation_id=activation_id)
    entry["failed"] = failed
    return entry


def trusted[M: _StateModel](cls: type[M], values: dict[str, Any]) -> M:
    """``cls(**values)`` without validation, for values the engine has just built itself.

    ``values`` must give every field (defaults are not filled in). Frames
    and lineages are created at every foreach item; validating what the
    engine itself wrote cost more than the rest of creating them. This is
    what pydantic's ``model_construct`` does, minus its per-field loop.
    """
    model = _new_object(cls)  # no state model defines __new__
    _set_dict(model, values)
    _set_fields_set(model, set(values))
    _set_extra(model, None)
    _set_private(model, None)
    return model


def trusted_full[M: _StateModel](cls: type[M], values: dict[str, Any], fields_set: set[str]) -> M:
    """``trusted(cls, values)`` for ``values`` that give every field of ``cls``, whose set of given fields is
    ``fields_set``: ``set(cls.model_fields)``, shared by every such model instead of a new set each, or a new set
    the model then owns (``new_run_state``'s, which names only what validation would record as given).

    Sharing is safe because the set already names every field: pydantic only ever adds a field's name to it (on
    assignment), which changes nothing, and copies it for a model copy. The engine makes a frame and a lineage
    this way at every foreach item.
    """
    model = _new_object(cls)
    _set_dict(model, values)
    _set_fields_set(model, fields_set)
    _set_extra(model, None)
    _set_private(model, None)
    return model


#: Every field of a frame, of a lineage, of a scope: the shared ``fields_set`` of ``trusted_full``.
FRAME_FIELDS: set[str] = set(ExecutionFrame.model_fields)
LINEAGE_FIELDS: set[str] = set(Lineage.model_fields)
SCOPE_FIELDS: set[str] = set(RuntimeScope.model_fields)


# The setters of the slots every pydantic model has (BaseModel.__slots__), looked up once: ``trusted`` makes two
# models per foreach item, and ``object.__setattr__`` finds each slot by name on every call (a third more).
_new_object = object.__new__
_set_dict, _set_fields_set, _set_extra, _set_private = (
    BaseModel.__dict__[name].__set__
    for name in ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__"))


def new_run_state(run_id: str, workflow: WorkflowRef) -> RunState:
    """``RunState(run_id=run_id, workflow=workflow)`` without validation, for a run the engine starts: both values
    are its own (a minted id, a frozen plan's reference), and validating them was a sixth of a one-node run's
    cost. Every field is given its default, as validation would (``tests/runtime/test_state.py`` compares them)."""
    # The fields set validation would record (the two given), a new set for this state: pydantic adds to it.
    return trusted_full(RunState, {
        "version": RUN_STATE_VERSION, "run_id": run_id, "workflow": workflow, "status": "running", "step": 0,
        "id_seq": 0, "trace_seq": 0, "attempt": 1, "scopes": {}, "frames": {}, "lineages": {}, "ready": [],
        "barriers": {}, "activations": {}, "interrupts": {}, "wakeups": {}, "output": None, "error": None,
    }, {"run_id", "workflow"})


@dataclass(frozen=True, slots=True, eq=False)
class RunStateSnapshot:
    """What ``RunState.snapshot`` took: plain dicts sharing the state's immutable JSON values."""

    data: Mapping[str, Any]
    #: (scope id, state path, list, length then) of every growing state list.
    lists: tuple[tuple[str, tuple[str, ...], list[Any], int], ...] = ()
    #: (activation id, next index then, running indices then) of every foreach that collects results.
    results: tuple[tuple[str, int, tuple[int, ...]], ...] = ()
    #: (activation id, length then) of every activation's list of tolerated failures that is not empty.
    failed: tuple[tuple[str, int], ...] = ()

    @property
    def run_id(self) -> str:
        run_id: str = self.data["run_id"]
        return run_id

    def to_json(self) -> bytes:
        data = self.data
        if self.lists or self.results or self.failed:
            data = dict(data)
            scopes = data["scopes"] = {key: dict(scope) for key, scope in data["scopes"].items()}
            for scope_id, path, values, length in self.lists:
                if len(values) != length:
                    scopes[scope_id]["state"] = set_in(scopes[scope_id]["state"], path, values[:length])
            activations = data["activations"] = dict(data["activations"])
            for activation_id, next_index, running in self.results:
                entry = activations[activation_id] = dict(activations[activation_id])
                results = list(entry["results"][:len(entry["items"])])  # a list that went on to grow in state
                for index in running:
                    results[index] = None
                results[next_index:] = [None] * (len(results) - next_index)
                entry["results"] = results
            for activation_id, length in self.failed:
                entry = activations[activation_id] = dict(activations[activation_id])
                entry["failed"] = entry["failed"][:length]
        return pydantic_core.to_json(data)

    def restore(self) -> RunState:
        """An independent, validated RunState (it goes through the JSON checkpoint format)."""
        return RunState.from_json(self.to_json())


# ---------------------------------------------------------------------------
# Typed metadata helpers


@dataclass(frozen=True, slots=True)
class ForeachItemMetadata:
    node_id: str
    activation_id: str
    index: int
    item: object
    alias: str | None


_ITEM_METADATA_TWIN = layout_twin(ForeachItemMetadata)


def new_item_metadata(node_id: str, activation_id: str, index: int, item: object, alias: str | None
                  ) -> ForeachItemMetadata:
    """``ForeachItemMetadata(...)`` at a third of the cost (a layout twin, see ``runtime._twins``): the engine
    makes one per foreach item it admits. tests/runtime/test_state.py pins it to the constructor."""
    built: Any = _ITEM_METADATA_TWIN()
    built.node_id = node_id
    built.activation_id = activation_id
    built.index = index
    built.item = item
    built.alias = alias
    built.__class__ = ForeachItemMetadata
    metadata: ForeachItemMetadata = built
    return metadata


_ITEM_KEYS = frozenset({"node_id", "activation_id", "index", "item", "alias"})


def _corrupt(frame_id: str, problem: str, **details: Any) -> CorruptRunStateError:
    return CorruptRunStateError(f"frame {frame_id!r}: {problem}", frame_id=frame_id, **details)


def frame_of(run_state: RunState, frame_id: str) -> ExecutionFrame:
    frame = run_state.frames.get(frame_id)
    if frame is None:
        raise CorruptRunStateError(f"frame {frame_id!r} does not exist in the run state", frame_id=frame_id)
    return frame


def foreach_item_metadata(run_state: RunState, frame: ExecutionFrame) -> ForeachItemMetadata | None:
    """The frame's foreach item metadata, ``None`` when it is not an item frame.

    Fails closed: a malformed entry, or one whose activation is missing or
    disagrees about node or scope, raises ``CorruptRunStateError``.
    """
    if "foreach" not in frame.metadata:
        return None
    raw = frame.metadata["foreach"]
    fid = frame.frame_id
    if not isinstance(raw, dict):
        raise _corrupt(fid, f"foreach metadata must be an object, got {type(raw).__name__}")
    missing = _ITEM_KEYS - raw.keys()
    if missing:
        raise _corrupt(fid, f"foreach metadata lacks {', '.join(sorted(missing))}", missing=sorted(missing))
    node_id, activation_id, index, alias = raw["node_id"], raw["activation_id"], raw["index"], raw["alias"]
    if not isinstance(node_id, str) or not node_id:
        raise _corrupt(fid, f"foreach metadata node_id must be a non-empty string, got {node_id!r}")
    if not isinstance(activation_id, str) or not activation_id:
        raise _corrupt(fid, f"foreach metadata activation_id must be a non-empty string, got {activation_id!r}")
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise _corrupt(fid, f"foreach metadata index must be a non-negative integer, got {index!r}")
    if alias is not None and (not isinstance(alias, str) or not alias):
        raise _corrupt(fid, f"foreach metadata alias must be a non-empty string or null, got {alias!r}")
    activation = run_state.activations.get(activation_id)
    if activation is None:
        raise _corrupt(fid, f"foreach activation {activation_id!r} does not exist", activation_id=activation_id)
    if activation.node_id != node_id or activation.scope_id != frame.scope_id:
        raise _corrupt(
            fid,
            f"foreach activation {activation_id!r} belongs to node {activation.node_id!r} in scope "
            f"{activation.scope_id!r}, not node {node_id!r} in scope {frame.scope_id!r}",
            activation_id=activation_id,
        )
    if index >= len(activation.items):
        raise _corrupt(fid, f"foreach item index {index} is outside activation {activation_id!r} "
                            f"({len(activation.items)} items)", activation_id=activation_id)
    return ForeachItemMetadata(node_id, activation_id, index, raw["item"], alias)


#: Entries already derived per frame id (the frame object is kept to recognise it); see ``foreach_entries``.
EntryCache = dict[str, tuple[ExecutionFrame, tuple[tuple[ForeachContext, str | None], ...]]]


def foreach_entries(run_state: RunState, frame_id: str, *,
                    item_metadata: Callable[[ExecutionFrame], ForeachItemMetadata | None] | None = None,
                    cache: EntryCache | None = None) -> list[tuple[ForeachContext, str | None]]:
    """Active foreach entries of ``frame_id``'s scope with their aliases, outermost first.

    Walks ``parent_frame_id`` while the ancestors stay in the frame's scope: a
    subgraph's root frame has its caller as scheduling parent, but that grants
    no context visibility across the scope boundary. ``item_metadata`` reads a
    frame's metadata instead of ``foreach_item_metadata`` (the engine passes
    one that remembers what it has already checked). With ``cache``, the walk
    stops at the first frame whose entries are known and records the entries
    of every frame it passed: a live frame's ancestry never changes, so an
    inner item reuses what its enclosing item already derived.
    """
    frames = run_state.frames
    frame = frame_of(run_state, frame_id)
    scope_id = frame.scope_id
    walked: list[tuple[ExecutionFrame, tuple[ForeachContext, str | None] | None]] = []
    known: tuple[tuple[ForeachContext, str | None], ...] = ()
    seen: set[str] = set()
    current: ExecutionFrame | None = frame
    while current is not None:
        if cache is not None:
            hit = cache.get(current.frame_id)
            if hit is not None and hit[0] is current:
                known = hit[1]
                break
        if current.frame_id in seen:
            raise _corrupt(frame_id, "frame ancestry contains a cycle")
        seen.add(current.frame_id)
        meta = item_metadata(current) if item_metadata is not None else foreach_item_metadata(run_state, current)
        entry = None
        if meta is not None:
            entry = (
                foreach_context(meta.node_id, meta.activation_id, current.frame_id, current.scope_id,
                                current.lineage_id, meta.index, meta.item),
                meta.alias,
            )
        walked.append((current, entry))
        parent_id = current.parent_frame_id
        if parent_id is None:
            break
        parent = frames.get(parent_id)
        if parent is None:
            raise _corrupt(current.frame_id, f"parent frame {parent_id!r} does not exist", parent_frame_id=parent_id)
        if parent.scope_id != scope_id:
            break
        current = parent
    entries = list(known)
    for walked_frame, entry in reversed(walked):
        if entry is not None:
            entries.append(entry)
        if cache is not None:
            cache[walked_frame.frame_id] = (walked_frame, tuple(entries))
    return entries


def runtime_context(run_state: RunState, frame_id: str, *, workflow_id: str = "", attempt: int = 1,
                    item_metadata: Callable[[ExecutionFrame], ForeachItemMetadata | None] | None = None,
                    cache: EntryCache | None = None) -> RuntimeContext:
    """The structured context of a frame, derived from persisted ancestry."""
    frame = frame_of(run_state, frame_id)
    entries = foreach_entries(run_state, frame_id, item_metadata=item_metadata, cache=cache)
    foreach: dict[str, ForeachContext] = {}
    for entry, _alias in entries:
        if entry.node_id in foreach:
            raise _corrupt(frame_id, f"foreach {entry.node_id!r} is active twice in one scope")
        foreach[entry.node_id] = entry
    counts: dict[str, int] = {}
    for _entry, alias in entries:
        if alias is not None:
            counts[alias] = counts.get(alias, 0) + 1
    # Only unique, unreserved aliases are exposed: an inner alias never shadows an outer one.
    aliases = {
        alias: entry.node_id
        for entry, alias in entries
        if alias is not None and counts[alias] == 1 and alias not in RESERVED_CONTEXT_FIELDS
    }
    return RuntimeContext(
        run_id=run_state.run_id,
        workflow_id=workflow_id,
        scope_id=frame.scope_id,
        frame_id=frame.frame_id,
        lineage_id=frame.lineage_id,
        node_id=frame.node_id,
        attempt=attempt,
        foreach=foreach,
        aliases=aliases,
    )


_SNAPSHOT_TWIN = layout_twin(RunStateSnapshot)
#: The empty map a snapshot holds for an empty one of the state (no interrupts, no wake-ups: nearly every
#: superstep): one shared object instead of one per snapshot. Snapshot data is never written to.
_NONE: dict[str, Any] = {}


def new_snapshot(data: Mapping[str, Any], lists: tuple[tuple[str, tuple[str, ...], list[Any], int], ...],
                 results: tuple[tuple[str, int, tuple[int, ...]], ...], failed: tuple[tuple[str, int], ...]
                 ) -> RunStateSnapshot:
    """``RunStateSnapshot(data, lists, results, failed)`` through a layout twin (``runtime._twins``): an in-memory
    checkpointer takes one per superstep. tests/runtime/test_snapshot.py pins it to the constructor."""
    built: Any = _SNAPSHOT_TWIN()
    built.data = data
    built.lists = lists
    built.results = results
    built.failed = failed
    built.__class__ = RunStateSnapshot
    snapshot: RunStateSnapshot = built
    return snapshot

"""Growing lists stored as write-once chunks: O(1) per element in memory and in every checkpoint.

Three kinds of list grow one element at a time during a run: a state list that
``append``/``extend`` output bindings write to, the result list a
foreach collects (``ForeachNode.results``), and a foreach's tolerated
failures (``ForeachActivation.failed``). Copying such a list at every
write, or serializing it at every checkpoint, makes a run over n items cost
O(n²).

In memory, a state list written by ``append``/``extend`` becomes a
``GrowList`` that the engine extends in place. That is safe because no one
else can hold it: it is registered (``StateLists``) under the one
(scope, state path) it lives at, every read of a path that reaches it marks
it ``shared`` (the next append then copies it once into a new list, with a
new id), and a snapshot records its length instead of copying it (elements
below that length never change). A foreach's result list is written by
index, each index once, as its items complete.

In a checkpoint, both are cut into chunks of ``CHUNK`` elements. A chunk that
is full never changes again (elements are appended, or written once by
index), so it is a write-once part keyed ``list:<list id>:<chunk>``, stored
once; the JSON data keeps only the bounded rest inline (a state list's
partial last chunk; a foreach's results in chunks that still have a running
item; the failures after the last full chunk). A key is never reused for other
content: a state list's id is random (it is not part of the RunState), a
foreach's results use its activation id and its failures ``failed.<activation
id>`` (a run never mints an activation id twice). ``PartLedger`` remembers per
run what a checkpointer has stored, so ``RunState.checkpoint_delta`` hands it only the
new parts and the keys that are gone: a save costs what changed, not what the
lists hold.
"""

from __future__ import annotations

import secrets
import weakref
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from runtime._bindings import MISSING, get_in, set_in

#: Elements per stored chunk. The inline rest of a list is below this per list (per running item for a foreach).
CHUNK = 128

LIST_KIND = "list"


class GrowList(list[Any]):
    """A state list the engine appends to in place; ``list_id`` names its chunks in checkpoints."""

    __slots__ = ("list_id", "shared")

    def __init__(self, values: Iterable[Any] = (), list_id: str = "") -> None:
        super().__init__(values)
        self.list_id = list_id
        self.shared = False


def new_list_id() -> str:
    """A fresh list id. Random, not counted: a copy made after a resume must not meet chunks of another list."""
    return f"L{secrets.token_hex(8)}"


def chunk_key(list_id: str, chunk: int) -> str:
    return f"{LIST_KIND}:{list_id}:{chunk}"


def chunk_group(key: str) -> str | None:
    """``list:<id>`` for a chunk key, None for any other key."""
    kind, _, rest = key.partition(":")
    if kind != LIST_KIND:
        return None
    list_id, sep, _chunk = rest.rpartition(":")
    return f"{LIST_KIND}:{list_id}" if sep else None


def without(container: Any, parts: tuple[str, ...]) -> Any:
    """A copy of ``container`` without the value at ``parts`` (containers on the way copied, the rest shared)."""
    if not isinstance(container, Mapping) or parts[0] not in container:
        return container
    copied = dict(container)
    if len(parts) == 1:
        del copied[parts[0]]
    else:
        copied[parts[0]] = without(copied[parts[0]], parts[1:])
    return copied


# ---------------------------------------------------------------------------
# The registry of growing state lists of one RunState


class StateLists:
    """The ``GrowList`` at each (scope id, state path) of one RunState, as the engine wrote them."""

    __slots__ = ("by_path", "__weakref__")

    def __init__(self) -> None:
        self.by_path: dict[tuple[str, tuple[str, ...]], GrowList] = {}

    def extend(self, scope_id: str, state: dict[str, Any], parts: tuple[str, ...],
               values: list[Any]) -> dict[str, Any] | None:
        """``state`` with ``values`` appended to the list at ``parts``; None when the value there is not a list.

        In place (same ``state`` returned) when the list there is this
        registry's and nobody has read it since; otherwise the list is copied
        once into a new ``GrowList`` with a new id.
        """
        current = get_in(state, parts)
        key = (scope_id, parts)
        known = self.by_path.get(key)
        if known is not None and known is current and not known.shared:
            known.extend(values)
            return state
        if current is MISSING or current is None:
            current = ()
        elif not isinstance(current, list):
            return None
        grown = GrowList(current, new_list_id())
        grown.extend(values)
        self.by_path[key] = grown
        written: dict[str, Any] = set_in(state, parts, grown)
        return written

    def adopt(self, scope_id: str, parts: tuple[str, ...], grown: GrowList) -> None:
        """Register a list the engine placed at ``parts`` itself (a foreach's collected results)."""
        self.by_path[(scope_id, parts)] = grown

    def expose(self, scope_id: str, parts: tuple[str, ...]) -> None:
        """A path was read: every registered list at or below it may now be held by someone else."""
        size = len(parts)
        for (owner, where), grown in self.by_path.items():
            if owner == scope_id and where[:size] == parts:
                grown.shared = True

    def live(self, scopes: Mapping[str, Any]) -> Iterator[tuple[str, tuple[str, ...], GrowList]]:
        """(scope id, path, list) of every registered list still at its place; forgets the others."""
        stale = []
        for key, grown in self.by_path.items():
            scope = scopes.get(key[0])
            if scope is not None and get_in(scope.state, key[1]) is grown:
                yield key[0], key[1], grown
            else:
                stale.append(key)
        for key in stale:
            self.by_path.pop(key, None)


def adopt(run_state: Any) -> None:
    """Register the unshared ``GrowList`` values in a reopened RunState's scopes (lists joined from a checkpoint).

    Walks each scope's state through objects only (a state list is never inside another list).
    """
    registry: StateLists | None = None
    for scope_id, scope in run_state.scopes.items():
        pending: list[tuple[tuple[str, ...], Any]] = [((), scope.state)]
        while pending:
            path, value = pending.pop()
            if isinstance(value, GrowList):
                if path and not value.shared:
                    registry = registry or lists_of(run_state)
                    assert registry is not None
                    registry.by_path[(scope_id, path)] = value
            elif isinstance(value, Mapping):
                pending.extend(((*path, str(key)), item) for key, item in value.items()
                               if isinstance(item, Mapping | GrowList))


_REGISTRIES: dict[int, StateLists] = {}
_OWNERS: dict[int, weakref.ref[Any]] = {}


def lists_of(run_state: Any, *, create: bool = True) -> StateLists | None:
    """The ``StateLists`` of a RunState object (kept beside it: a model attribute would change its equality)."""
    if not _OWNERS and not create:  # no run in this process has a list registry (nearly always): nothing to look up
        return None
    key = id(run_state)
    owner = _OWNERS.get(key)
    if owner is not None and owner() is run_state:
        return _REGISTRIES[key]
    if not create:
        return None
    registry = StateLists()

    def forget(_ref: Any, key: int = key) -> None:
        _REGISTRIES.pop(key, None)
        _OWNERS.pop(key, None)

    _OWNERS[key] = weakref.ref(run_state, forget)
    _REGISTRIES[key] = registry
    return registry


# ---------------------------------------------------------------------------
# Foreach results: which chunks are full


def running_indices(run_state: Any, activation: Any) -> list[int]:
    """The item indices of an activation's running frames (their results have not arrived)."""
    found = []
    for frame_id in activation.running:
        frame = run_state.frames.get(frame_id)
        meta = frame.metadata.get("foreach") if frame is not None else None
        index = meta.get("index") if isinstance(meta, dict) else None
        if isinstance(index, int):
            found.append(index)
    return found


def result_chunks(activation: Any, running: list[int]) -> tuple[int, set[int]]:
    """(full limit, blocked): chunks below the limit hold only arrived results unless blocked by a running item."""
    limit = activation.next_index // CHUNK
    return limit, {i // CHUNK for i in running if i // CHUNK < limit}


# ---------------------------------------------------------------------------
# What a checkpointer has stored


@dataclass(slots=True)
class PartLedger:
    """What one checkpointer has stored of one run's write-once parts.

    ``singles``: keys of whole parts (a foreach's items, a scope's input).
    ``lists``: per list id, the chunks stored as (frontier, holes): every
    chunk below the frontier except the holes (chunks that were not full yet).
    ``fresh`` until the first save: a checkpointer that starts on a run stored
    by someone else cannot know what is there (see ``CheckpointDelta.fresh``).
    """

    singles: set[str] = field(default_factory=set)
    lists: dict[str, tuple[int, frozenset[int]]] = field(default_factory=dict)
    fresh: bool = True

    def apply(self, delta: CheckpointDelta) -> None:
        """Record a delta once its save is committed (never before: a rolled-back save stored nothing)."""
        self.singles = set(delta.singles)
        self.lists = dict(delta.lists)
        self.fresh = False


@dataclass(slots=True)
class CheckpointDelta:
    """One save's worth of a RunState: JSON ``data`` without its parts, the parts to add, the keys to drop.

    ``new``: parts whose keys the ledger does not have (store them; they never
    change). ``gone``: keys of stored parts nothing refers to any more. When
    ``fresh`` (the ledger's first save), the store may also hold parts of an
    earlier process: keep only ``live_keys()``.
    """

    data: dict[str, Any]
    new: dict[str, Any]
    gone: list[str]
    singles: set[str]
    lists: dict[str, tuple[int, frozenset[int]]]
    fresh: bool

    def live_keys(self) -> set[str]:
        keys = set(self.singles)
        for list_id, (frontier, holes) in self.lists.items():
            keys.update(chunk_key(list_id, k) for k in range(frontier) if k not in holes)
        return keys


def list_delta(list_id: str, limit: int, blocked: set[int], values: list[Any], known: tuple[int, frozenset[int]],
               new: dict[str, Any]) -> tuple[int, frozenset[int]]:
    """Add to ``new`` the full chunks of a list not yet stored; the list's new (frontier, holes)."""
    frontier, holes = known
    candidates = [*sorted(holes), *range(frontier, limit)]
    left = []
    for chunk in candidates:
        if chunk in blocked:
            left.append(chunk)
        else:
            new[chunk_key(list_id, chunk)] = values[chunk * CHUNK:(chunk + 1) * CHUNK]
    return max(frontier, limit), frozenset(left)


def gone_keys(ledger: PartLedger, singles: set[str], lists: Mapping[str, Any]) -> list[str]:
    gone = [key for key in ledger.singles if key not in singles]
    for list_id, (frontier, holes) in ledger.lists.items():
        if list_id not in lists:
            gone.extend(chunk_key(list_id, k) for k in range(frontier) if k not in holes)
    return gone

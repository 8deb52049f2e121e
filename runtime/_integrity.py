"""The structural check of a RunState that comes from outside the engine (a checkpoint, a caller's JSON).

``check_run_state`` verifies the invariants the scheduler keeps while it runs,
so a loaded state is either exactly the kind of state the engine could have
written or ``CorruptRunStateError``: never something the engine would read
differently (an item frame taken for an ordinary one runs its body without
its loop entry and, routed back to its foreach, opens a second activation).

Every live frame is either the root frame of its scope or an item frame of
exactly one live foreach activation; item frames are checked against their
activation (listed among its running frames, index admitted, item equal to
the snapshot at that index, alias, scope, parent frame) and every frame
against its lineage. Ancestry is checked to end at the scope's root frame
without a cycle and without one foreach node active twice in a scope.

The check is linear in the live structure (frames, lineages, activations,
scopes, interrupts, the ready queue) times the foreach nesting depth, plus a
comparison of each running item with its snapshot; it never walks the item
snapshots themselves, so a foreach over 100,000 items loads as cheaply as
one over ten. Errors name the entry and the field at fault (``details``:
``frame_id``/``activation_id``/``scope_id``/... and ``field``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from runtime._errors import CorruptRunStateError

if TYPE_CHECKING:
    from runtime._state import ExecutionFrame, ForeachActivation, RunState, RuntimeScope

ROOT_SCOPE_ID = "root"
_ITEM_KEYS = frozenset({"node_id", "activation_id", "index", "item", "alias"})


def _bad(what: str, entry_id: str, field: str, problem: str, **details: Any) -> CorruptRunStateError:
    id_name = {"frame": "frame_id", "lineage": "lineage_id", "activation": "activation_id", "scope": "scope_id",
               "interrupt": "interrupt_id", "barrier": "activation_id", "wakeup": "frame_id",
               "run": "run_id"}.get(what, "entry")
    return CorruptRunStateError(f"{what} {entry_id!r}: {field}: {problem}", field=field, **{id_name: entry_id},
                                **details)


def same_json(left: Any, right: Any) -> bool:
    """Equal as JSON values, types included: ``true`` is not ``1`` and ``1`` is not ``1.0``."""
    if left is right:
        return True
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(same_json(value, right[key]) for key, value in left.items())
    if isinstance(left, list):
        return len(left) == len(right) and all(same_json(a, b) for a, b in zip(left, right, strict=True))
    return bool(left == right)


def check_run_state(rs: RunState) -> None:
    """Raise ``CorruptRunStateError`` unless ``rs`` is a state the engine could have written."""
    _check_keys(rs)
    _check_scopes(rs)
    running_in = _check_activations(rs)
    for frame in rs.frames.values():
        _check_frame(rs, frame, running_in)
    for lineage in rs.lineages.values():
        owner = rs.frames.get(lineage.frame_id)
        if owner is None or owner.lineage_id != lineage.lineage_id:
            raise _bad("lineage", lineage.lineage_id, "frame_id",
                       f"names frame {lineage.frame_id!r}, which is not a live frame of this lineage")
    _check_ancestry(rs)
    _check_interrupts(rs)
    _check_wakeups(rs)
    seen: set[str] = set()
    for frame_id in rs.ready:
        queued = rs.frames.get(frame_id)
        if queued is None or queued.status != "ready" or frame_id in seen:
            raise _bad("frame", frame_id, "ready", "is queued but is not a live, ready frame queued once")
        seen.add(frame_id)


def _check_keys(rs: RunState) -> None:
    for collection, id_name in (("scopes", "scope_id"), ("frames", "frame_id"), ("lineages", "lineage_id"),
                                ("activations", "activation_id"), ("barriers", "activation_id"),
                                ("interrupts", "interrupt_id"), ("wakeups", "frame_id")):
        for key, model in getattr(rs, collection).items():
            if getattr(model, id_name) != key:
                raise CorruptRunStateError(
                    f"{collection} entry {key!r} has {id_name} {getattr(model, id_name)!r}; the key and the id "
                    "must be the same", field=f"{collection}.{key}.{id_name}", **{id_name: key})


def _check_scopes(rs: RunState) -> None:
    scopes = rs.scopes
    root = scopes.get(ROOT_SCOPE_ID)
    if root is None:
        raise CorruptRunStateError("run state has no root scope", run_id=rs.run_id, field="scopes.root")
    for scope in scopes.values():
        _check_scope(rs, scope)


def _check_scope(rs: RunState, scope: RuntimeScope) -> None:
    sid = scope.scope_id
    root_frame = rs.frames.get(scope.root_frame_id)
    if root_frame is None:
        # Only a finished run has let its root scope's root frame go.
        if sid != ROOT_SCOPE_ID or rs.status != "completed":
            raise _bad("scope", sid, "root_frame_id", f"frame {scope.root_frame_id!r} does not exist")
    elif root_frame.scope_id != sid:
        raise _bad("scope", sid, "root_frame_id", f"frame {scope.root_frame_id!r} is in scope "
                                                  f"{root_frame.scope_id!r}")
    if sid == ROOT_SCOPE_ID:
        if scope.parent_scope_id is not None or scope.caller_frame_id is not None or scope.depth != 0:
            raise _bad("scope", sid, "parent_scope_id", "the root scope has no parent, caller or depth")
        return
    parent = rs.scopes.get(scope.parent_scope_id or "")
    if parent is None or parent.scope_id == sid:
        raise _bad("scope", sid, "parent_scope_id", f"scope {scope.parent_scope_id!r} does not exist")
    if scope.depth != parent.depth + 1:
        # Depth grows by one per call, which also rules out a cycle of scopes.
        raise _bad("scope", sid, "depth", f"is {scope.depth}, its parent scope's is {parent.depth}")
    _check_waiting(rs, "scope", sid, "caller_frame_id", scope.caller_frame_id, parent.scope_id,
                   "the caller frame", "this scope")


def _check_waiting(rs: RunState, what: str, owner_id: str, field: str, frame_id: str | None, scope_id: str,
                   who: str, it: str) -> None:
    """``frame_id`` (field ``field`` of ``what`` ``owner_id``) is a live frame of scope ``scope_id`` that waits for
    ``owner_id``: a subgraph scope's caller, a foreach activation's frame."""
    frame = rs.frames.get(frame_id or "")
    if frame is None or frame.scope_id != scope_id:
        raise _bad(what, owner_id, field, f"frame {frame_id!r} is not a live frame of scope {scope_id!r}")
    if frame.status != "waiting" or frame.waiting_for != owner_id:
        raise _bad(what, owner_id, field, f"{who} is {frame.status} for {frame.waiting_for!r}, not waiting for {it}")


def _check_activations(rs: RunState) -> dict[str, tuple[ForeachActivation, int]]:
    """Check each activation and its barrier; every running frame id -> (its activation, position)."""
    running_in: dict[str, tuple[ForeachActivation, int]] = {}
    for activation in rs.activations.values():
        aid = activation.activation_id
        total = len(activation.items)
        if activation.scope_id not in rs.scopes:
            raise _bad("activation", aid, "scope_id", f"scope {activation.scope_id!r} does not exist")
        _check_waiting(rs, "activation", aid, "frame_id", activation.frame_id, activation.scope_id,
                       f"frame {activation.frame_id!r}", "it")
        if activation.max_concurrency < 1:
            raise _bad("activation", aid, "max_concurrency", f"must be at least 1, is {activation.max_concurrency}")
        if activation.only is not None:
            raise _bad("activation", aid, "only", "names the items of one batch, which only a batch's own "
                                                  "in-memory state holds")
        if activation.distributed:
            _check_distributed(rs, activation)
            continue
        if len(activation.failed) > activation.completed or any(
                not isinstance(entry, Mapping) or not isinstance(entry.get("index"), int)
                or not 0 <= entry["index"] < total for entry in activation.failed):
            raise _bad("activation", aid, "failed", "lists failed items that are not done items of this activation")
        if not 0 <= activation.completed < total or not 0 < activation.next_index <= total:
            raise _bad("activation", aid, "completed",
                       f"{activation.completed} done and {activation.next_index} started of {total} items "
                       "is not a live activation")
        running = activation.running
        if activation.completed + len(running) != activation.next_index:
            raise _bad("activation", aid, "running",
                       f"{len(running)} running and {activation.completed} done, but {activation.next_index} "
                       "items were started")
        if len(running) > activation.max_concurrency or (
                activation.next_index < total and len(running) != activation.max_concurrency):
            raise _bad("activation", aid, "running", f"{len(running)} items running with max_concurrency "
                                                     f"{activation.max_concurrency} and items left to start")
        for position, frame_id in enumerate(running):
            if frame_id in running_in:
                raise _bad("activation", aid, "running", f"frame {frame_id!r} is listed as running twice")
            if frame_id not in rs.frames:
                raise _bad("activation", aid, "running", f"frame {frame_id!r} does not exist")
            running_in[frame_id] = (activation, position)
        barrier = rs.barriers.get(aid)
        if barrier is None:
            raise _bad("activation", aid, "barrier", "has no barrier")
        if barrier.frame_id != activation.frame_id or barrier.expected != total \
                or barrier.arrived != activation.completed:
            raise _bad("barrier", aid, "expected", f"waits in {barrier.frame_id!r} for {barrier.arrived}/"
                                                   f"{barrier.expected} items; the activation has "
                                                   f"{activation.completed}/{total} in {activation.frame_id!r}")
    for aid in rs.barriers:
        if aid not in rs.activations:
            raise _bad("barrier", aid, "activation_id", "belongs to no live foreach activation")
    return running_in


def _check_distributed(rs: RunState, activation: ForeachActivation) -> None:
    """A distributed activation runs no item here: nothing started, nothing done until it is joined."""
    aid = activation.activation_id
    if (activation.batch_size or 0) < 1 or (activation.batches_in_flight or 0) < 1:
        raise _bad("activation", aid, "batch_size", "a distributed activation needs a positive batch size and "
                                                    "number of batches in flight")
    if activation.next_index or activation.completed or activation.running or activation.failed \
            or not activation.items:
        raise _bad("activation", aid, "running", "a distributed activation starts no item in its own run")
    barrier = rs.barriers.get(aid)
    if barrier is None or barrier.frame_id != activation.frame_id or barrier.expected != len(activation.items) \
            or barrier.arrived:
        raise _bad("barrier", aid, "expected", "a distributed activation's barrier waits for all of its items")


def _check_frame(rs: RunState, frame: ExecutionFrame, running_in: dict[str, tuple[ForeachActivation, int]]) -> None:
    fid = frame.frame_id
    scope = rs.scopes.get(frame.scope_id)
    if scope is None:
        raise _bad("frame", fid, "scope_id", f"scope {frame.scope_id!r} does not exist")
    lineage = rs.lineages.get(frame.lineage_id)
    if lineage is None or lineage.frame_id != fid or lineage.scope_id != frame.scope_id:
        raise _bad("frame", fid, "lineage_id",
                   f"lineage {frame.lineage_id!r} is not a lineage of this frame in scope {frame.scope_id!r}")
    metadata = frame.metadata
    if scope.root_frame_id == fid:
        if metadata:
            raise _bad("frame", fid, "metadata", f"the root frame of scope {scope.scope_id!r} carries "
                                                 f"{', '.join(sorted(metadata))}")
        if fid in running_in:
            raise _bad("frame", fid, "metadata.foreach",
                       f"is running in activation {running_in[fid][0].activation_id!r} but has no item metadata")
        if scope.scope_id == ROOT_SCOPE_ID:
            kind, parent_id = "root", None
        else:
            kind, parent_id = "subgraph", scope.caller_frame_id
    else:
        activation = _check_item_metadata(rs, frame, running_in)
        kind, parent_id = "item", activation.frame_id
    if frame.parent_frame_id != parent_id:
        raise _bad("frame", fid, "parent_frame_id", f"is {frame.parent_frame_id!r}; a {kind} frame's parent is "
                                                    f"{parent_id!r}")
    if lineage.kind != kind:
        raise _bad("frame", fid, "lineage_id", f"lineage {lineage.lineage_id!r} is of kind {lineage.kind!r}, "
                                               f"not {kind!r}")
    parent_lineage = rs.frames[parent_id].lineage_id if parent_id is not None else None
    if lineage.parent_lineage_id != parent_lineage:
        raise _bad("lineage", lineage.lineage_id, "parent_lineage_id",
                   f"is {lineage.parent_lineage_id!r}, the parent frame's lineage is {parent_lineage!r}")
    if frame.status == "ready" and frame.waiting_for is not None:
        raise _bad("frame", fid, "waiting_for", "a ready frame waits for nothing")
    if frame.status == "waiting":
        target = frame.waiting_for or ""
        activation_of = rs.activations.get(target)
        child = rs.scopes.get(target)
        if not ((activation_of is not None and activation_of.frame_id == fid)
                or (child is not None and child.caller_frame_id == fid)):
            raise _bad("frame", fid, "waiting_for",
                       f"waits for {frame.waiting_for!r}, which is no foreach activation or scope it entered")
    if frame.status == "suspended" and (frame.waiting_for is not None or fid not in rs.wakeups):
        raise _bad("frame", fid, "status", "is suspended but has no wake-up (or waits for something else)")
    if frame.status == "interrupted":
        record = rs.interrupts.get(frame.waiting_for or "")
        if record is None or record.frame_id != fid:
            raise _bad("frame", fid, "waiting_for", f"is interrupted at {frame.waiting_for!r}, which is not one "
                                                    "of its open interrupts")


def _check_item_metadata(rs: RunState, frame: ExecutionFrame,
                         running_in: dict[str, tuple[ForeachActivation, int]]) -> ForeachActivation:
    """A frame that is not its scope's root must be a running item of a live activation; that activation."""
    fid = frame.frame_id
    metadata = frame.metadata
    raw = metadata.get("foreach")
    if not isinstance(raw, Mapping):
        shown = "missing" if "foreach" not in metadata else f"a {type(raw).__name__}"
        raise _bad("frame", fid, "metadata.foreach", f"is {shown}; a frame that is not the root of scope "
                                                     f"{frame.scope_id!r} must be a foreach item")
    extra = set(metadata) - {"foreach"}
    if extra:
        raise _bad("frame", fid, "metadata", f"has unknown keys {', '.join(sorted(extra))}")
    if raw.keys() != _ITEM_KEYS:
        missing, unknown = sorted(_ITEM_KEYS - raw.keys()), sorted(str(key) for key in raw.keys() - _ITEM_KEYS)
        problems = ([f"lacks {', '.join(missing)}"] if missing else []) + (
            [f"has unknown keys {', '.join(unknown)}"] if unknown else [])
        raise _bad("frame", fid, "metadata.foreach", "; ".join(problems))
    activation_id = raw["activation_id"]
    listed = running_in.get(fid)
    activation = rs.activations.get(activation_id) if isinstance(activation_id, str) else None
    if activation is None:
        raise _bad("frame", fid, "metadata.foreach.activation_id",
                   f"foreach activation {activation_id!r} does not exist")
    if listed is None or listed[0] is not activation:
        raise _bad("frame", fid, "metadata.foreach.activation_id",
                   f"the frame is not among the running frames of activation {activation_id!r}",
                   activation_id=activation_id)
    if raw["node_id"] != activation.node_id:
        raise _bad("frame", fid, "metadata.foreach.node_id",
                   f"is {raw['node_id']!r}; activation {activation_id!r} belongs to node {activation.node_id!r}")
    if frame.scope_id != activation.scope_id:
        raise _bad("frame", fid, "scope_id", f"is {frame.scope_id!r}; activation {activation_id!r} runs in scope "
                                             f"{activation.scope_id!r}")
    index = raw["index"]
    if type(index) is not int or not 0 <= index < activation.next_index:
        raise _bad("frame", fid, "metadata.foreach.index",
                   f"is {index!r}; activation {activation_id!r} has started items 0..{activation.next_index - 1}")
    position = listed[1]
    if position > 0:
        # Items are admitted in index order and appended to ``running`` as they start.
        before = rs.frames[activation.running[position - 1]].metadata.get("foreach")
        earlier = before.get("index") if isinstance(before, Mapping) else None
        if type(earlier) is not int or earlier >= index:
            raise _bad("frame", fid, "metadata.foreach.index",
                       f"is {index!r}, after item {earlier!r} in activation {activation_id!r}'s running order")
    # The latest item started is running until it completes, and a completion starts the next one; so the last
    # running item is the latest started while items are left, and always with one item at a time.
    latest_runs = activation.next_index < len(activation.items) or activation.max_concurrency == 1
    if position == len(activation.running) - 1 and latest_runs and index != activation.next_index - 1:
        raise _bad("frame", fid, "metadata.foreach.index",
                   f"is {index!r}; the latest item activation {activation_id!r} started is "
                   f"{activation.next_index - 1}")
    if not same_json(raw["item"], activation.items[index]):
        raise _bad("frame", fid, "metadata.foreach.item",
                   f"differs from item {index} of activation {activation_id!r}'s snapshot")
    if raw["alias"] != activation.alias or (raw["alias"] is not None and type(raw["alias"]) is not str):
        raise _bad("frame", fid, "metadata.foreach.alias",
                   f"is {raw['alias']!r}; activation {activation_id!r} has alias {activation.alias!r}")
    return activation


def _check_ancestry(rs: RunState) -> None:
    """Each activation's waiting frame leads up its scope to the scope's root frame, each foreach at most once.

    The per-frame checks tie an item frame's parent to its activation's
    waiting frame; here the chain of activations is followed upwards (each
    step remembered) so a cycle of item frames waiting on each other, or a
    foreach nested inside itself, is refused.
    """
    chains: dict[str, frozenset[str]] = {}  # activation id -> foreach node ids active at its waiting frame
    for start in rs.activations.values():
        path: list[ForeachActivation] = []
        on_path: set[str] = set()
        current: ForeachActivation | None = start
        known: frozenset[str] = frozenset()
        while current is not None:
            aid = current.activation_id
            if aid in chains:
                known = chains[aid]
                break
            if aid in on_path:
                raise _bad("activation", aid, "frame_id", "frame ancestry contains a cycle")
            on_path.add(aid)
            path.append(current)
            waiting = rs.frames[current.frame_id]
            raw = waiting.metadata.get("foreach")
            current = rs.activations.get(raw["activation_id"]) if isinstance(raw, Mapping) else None
        for activation in reversed(path):
            if activation.node_id in known:
                raise _bad("activation", activation.activation_id, "node_id",
                           f"foreach {activation.node_id!r} is active twice in scope {activation.scope_id!r}")
            known = known | {activation.node_id}
            chains[activation.activation_id] = known


def _check_wakeups(rs: RunState) -> None:
    for wakeup in rs.wakeups.values():
        frame = rs.frames.get(wakeup.frame_id)
        if frame is None or frame.status != "suspended":
            raise _bad("wakeup", wakeup.frame_id, "frame_id", "is not a live, suspended frame")
    if rs.status == "waiting" and not rs.wakeups and not any(a.distributed for a in rs.activations.values()):
        raise _bad("run", rs.run_id, "status", "is waiting, but no frame is suspended until a time and no foreach "
                                               "runs as distributed batches")


def _check_interrupts(rs: RunState) -> None:
    for record in rs.interrupts.values():
        frame = rs.frames.get(record.frame_id)
        if frame is None or frame.status != "interrupted" or frame.waiting_for != record.interrupt_id:
            raise _bad("interrupt", record.interrupt_id, "frame_id",
                       f"frame {record.frame_id!r} is not a live frame paused at this interrupt")
        for name in ("scope_id", "lineage_id", "node_id"):
            if getattr(record, name) != getattr(frame, name):
                raise _bad("interrupt", record.interrupt_id, name,
                           f"is {getattr(record, name)!r}, its frame's is {getattr(frame, name)!r}")

"""Reading graph paths and moving values across a node's boundary.

Values in a scope are never mutated in place: every write builds new
containers along the written path (copy-on-write). That is what lets the
engine hand the same objects to tasks, foreach snapshots and child scopes
without defensive deep copies, and keeps reads within a superstep consistent.
A task must not mutate the values it receives.

A path that does not resolve yields ``MISSING``: a binding from it leaves its
target unset (so a task's default applies or its validation names the
missing field), an output binding from it writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

from runtime._context import FOREACH_CONTEXT_FIELDS, RuntimeContext
from runtime._document import InputBinding, OutputBinding
from runtime._document_json import FrozenDict, FrozenList, thaw
from runtime._errors import BindingError
from runtime._paths import GraphSourcePath, LocalPath, StatePath, is_item_index
from runtime._secrets import SecretRef


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Final[Any] = _Missing()


_MAPPINGS = (dict, MappingProxyType)


def get_in(value: Any, parts: Sequence[str]) -> Any:
    """The value at ``parts`` below ``value``; list elements by decimal index; ``MISSING`` if absent."""
    for part in parts:
        if type(value) in _MAPPINGS or isinstance(value, Mapping):  # known types first: the ABC check is slow
            if part not in value:
                return MISSING
            value = value[part]
        elif isinstance(value, list) and part.isdigit():
            position = int(part)
            if position >= len(value):
                return MISSING
            value = value[position]
        else:
            return MISSING
    return value


def set_in(container: Any, parts: Sequence[str], value: Any) -> Any:
    """A copy of ``container`` with ``value`` at ``parts``, creating objects on the way.

    Only the containers along the path are copied; everything else is shared.
    A non-object on the way is replaced by an object, as a plain assignment would.
    """
    if not parts:
        return value
    head, rest = parts[0], parts[1:]
    base = dict(container) if type(container) in _MAPPINGS or isinstance(container, Mapping) else {}
    base[head] = set_in(base.get(head), rest, value) if rest else value
    return base


def put_in(container: Any, parts: Sequence[str], value: Any) -> Any:
    """Like ``set_in`` for a payload target: an item index segment (``tags.0``) builds a list.

    The list is padded with ``None`` up to the index; the document's structure
    check (``runtime._document.target_problems``) makes every list's indexes
    run 0, 1, ... without gaps, so padding never grows a list past the bindings.
    """
    if not parts:
        return value
    head, rest = parts[0], parts[1:]
    if is_item_index(head):
        items = list(container) if isinstance(container, list) else []
        position = int(head)
        if position >= len(items):
            items.extend([None] * (position + 1 - len(items)))
        items[position] = put_in(items[position], rest, value) if rest else value
        return items
    base = dict(container) if type(container) in _MAPPINGS or isinstance(container, Mapping) else {}
    base[head] = put_in(base.get(head), rest, value) if rest else value
    return base


def read_foreach_entry(context: RuntimeContext, parts: Sequence[str]) -> Any:
    """``get_in(context.to_mapping(), parts)`` for a path ``foreach.<id>.<field>...`` (at least three parts), read
    from the ``ForeachContext`` itself: a foreach item step reads its item once or twice, and building the mapping
    (three dicts and a proxy) cost more than the read."""
    entry = context.foreach.get(parts[1])
    field = parts[2]
    if entry is None or field not in FOREACH_CONTEXT_FIELDS:
        return MISSING
    value = entry.item if field == "item" else getattr(entry, field)
    return get_in(value, parts[3:]) if len(parts) > 3 else value


class ScopeReader:
    """Reads ``input``, ``state`` and ``context`` paths of one frame.

    The context mapping is built only when a path asks for it; most nodes
    never read context, and deriving it walks frame ancestry. Given the
    frame's ``RuntimeContext`` (``runtime``), a reader reads a foreach entry's
    fields from it (``read_foreach_entry``), and builds the mapping from it
    for any other context path (``context_fn`` is then not needed).
    """

    __slots__ = ("_input", "_state", "_context_fn", "_context", "_expose", "_runtime")

    def __init__(self, input: Any, state: Any, context_fn: Callable[[], Mapping[str, Any]] | None,
                 expose: Callable[[tuple[str, ...]], None] | None = None,
                 runtime: RuntimeContext | None = None) -> None:
        # ``runtime`` may come by position: every task step makes a reader (a keyword costs more than the call).
        self._input = input
        self._state = state
        self._context_fn = context_fn
        self._context: Mapping[str, Any] | None = None
        # Told every state path read, so a list the engine grows in place is copied before it grows again.
        self._expose = expose
        self._runtime = runtime

    def context(self) -> Mapping[str, Any]:
        if self._context is None:
            if self._runtime is not None:
                self._context = self._runtime.to_mapping()
            else:
                assert self._context_fn is not None
                self._context = self._context_fn()
        return self._context

    def read(self, path: GraphSourcePath) -> Any:
        root = path.root
        if root == "state":
            base = self._state
            if self._expose is not None:
                self._expose(path.parts)
        elif root == "input":
            base = self._input
        else:
            parts = path.parts
            if self._runtime is not None and len(parts) >= 3 and parts[0] == "foreach":
                return read_foreach_entry(self._runtime, parts)
            base = self.context()
        return get_in(base, path.parts) if path.parts else base


def payload_order(bindings: Sequence[InputBinding]) -> Sequence[InputBinding]:
    """``bindings`` in the order ``build_payload`` applies them: shallower targets first (a stable sort)."""
    return tuple(sorted(bindings, key=lambda b: len(b.target.parts))) if len(bindings) > 1 else bindings


def build_payload(bindings: Sequence[InputBinding], reader: ScopeReader, *, ordered: bool = False) -> Any:
    """The payload described by ``bindings``: shallower targets first, so a field's keys and items are
    written over a binding of the field itself (``tags`` from a path, then ``tags.0`` replaces one item).

    A field whose path does not resolve is left out, but an array item cannot
    be: it is ``None``, so each item binding keeps its position. ``ordered``: ``bindings`` come from
    ``payload_order`` already (a compiled task's, sorted once instead of at every step).
    """
    payload: Any = {}
    for binding in bindings if ordered else payload_order(bindings):
        parts = binding.target.parts
        value: Any
        if binding.secret is not None:
            value = SecretRef(binding.secret, binding.template)  # revealed only for the step (runtime._secrets)
        elif binding.path is None:
            # A literal object or array reaches the task as a new, ordinary value: the document's own is
            # read-only, and a task that changes its input must change neither the document nor the next step's.
            value = binding.value
            if type(value) is FrozenDict or type(value) is FrozenList:
                value = thaw(value)
        else:
            value = reader.read(binding.path)
        if value is MISSING:
            if not parts or not is_item_index(parts[-1]):
                continue
            value = None
        payload = put_in(payload, parts, value) if parts else value
    return payload


def flat_reads(bindings: Sequence[InputBinding]) -> tuple[tuple[str, GraphSourcePath], ...] | None:
    """``(field, path)`` of each binding, in order, when every one reads a path into a top-level field of the
    payload (no secret, no literal, no deeper or array-item target); else None. Such a payload is an object of
    those fields (``build_flat_payload``), the shape of nearly every task step's input."""
    reads = []
    for binding in bindings:
        parts = binding.target.parts
        if binding.secret is not None or binding.path is None or len(parts) != 1 or is_item_index(parts[0]):
            return None
        reads.append((parts[0], binding.path))
    return tuple(reads)


def build_flat_payload(reads: Sequence[tuple[str, GraphSourcePath]], reader: ScopeReader) -> dict[str, Any]:
    """``build_payload`` of bindings that ``flat_reads`` gave ``reads`` for: each field set in place on one new
    object, where the general case copies the payload at every binding (``put_in``). A field whose path does not
    resolve is left out, as there."""
    payload: dict[str, Any] = {}
    for name, path in reads:
        value = reader.read(path)
        if value is not MISSING:
            payload[name] = value
    return payload


def local_get(payload: Any, path: LocalPath) -> Any:
    return get_in(payload, path.parts) if path.parts else payload


#: ``grow(state, parts, values)``: ``state`` with ``values`` appended to the list at ``parts``, or None when the
#: value there is not a list (see ``runtime._parts.StateLists.extend``).
Grow = Callable[[dict[str, Any], tuple[str, ...], list[Any]], "dict[str, Any] | None"]


def apply_outputs(state: dict[str, Any], bindings: Sequence[OutputBinding], result: Any,
                  *, node_id: str, grow: Grow | None = None) -> dict[str, Any]:
    """The new state after committing ``result`` through ``bindings``.

    Without ``grow`` ``state`` is not modified. With it, ``append`` and
    ``extend`` may extend a list the engine owns in place (O(1) per element).
    """
    for binding in bindings:
        value = local_get(result, binding.source)
        if value is MISSING:
            continue
        state = write_state(state, binding.target, value, binding.mode, node_id=node_id, grow=grow)
    return state


def write_state(state: dict[str, Any], target: StatePath, value: Any, mode: str, *, node_id: str,
                grow: Grow | None = None) -> dict[str, Any]:
    if mode == "set":
        written: dict[str, Any] = set_in(state, target.parts, value)
        return written
    if mode == "extend" and not isinstance(value, list):
        raise _refused(node_id, target, mode, f"the result value is a {type(value).__name__}; extend needs a list")
    if grow is not None and mode in ("append", "extend"):
        grown = grow(state, target.parts, [value] if mode == "append" else list(value))
        if grown is None:
            current = get_in(state, target.parts)
            raise _refused(node_id, target, mode, f"the state value is a {type(current).__name__}, not a list")
        return grown
    current = get_in(state, target.parts)
    if mode in ("append", "extend"):
        added = [value] if mode == "append" else value
        if current is MISSING or current is None:
            merged: Any = list(added)
        elif isinstance(current, list):
            merged = [*current, *added]
        else:
            raise _refused(node_id, target, mode, f"the state value is a {type(current).__name__}, not a list")
    elif mode == "merge":
        if not isinstance(value, Mapping):
            raise _refused(node_id, target, mode,
                           f"the result value is a {type(value).__name__}; merge needs an object")
        if current is MISSING or current is None:
            merged = dict(value)
        elif isinstance(current, Mapping):
            merged = {**current, **value}
        else:
            raise _refused(node_id, target, mode, f"the state value is a {type(current).__name__}, not an object")
    else:
        raise _refused(node_id, target, mode, f"unknown mode {mode!r}")
    written = set_in(state, target.parts, merged)
    return written


def _refused(node_id: str, target: StatePath, mode: str, problem: str) -> BindingError:
    return BindingError(f"node {node_id!r}: output binding to {str(target)!r} ({mode}): {problem}",
                        node_id=node_id, target=str(target), mode=mode)


def project(targets: Sequence[tuple[LocalPath, GraphSourcePath]], reader: ScopeReader) -> dict[str, Any] | Any:
    """A workflow's output payload: each ``(target, path)`` read in the scope, missing ones left out."""
    payload: Any = {}
    ordered = sorted(targets, key=lambda t: len(t[0].parts)) if len(targets) > 1 else targets
    for target, path in ordered:
        value = reader.read(path)
        if value is MISSING:
            if not target.parts or not is_item_index(target.parts[-1]):
                continue
            value = None
        payload = put_in(payload, target.parts, value) if target.parts else value
    return payload

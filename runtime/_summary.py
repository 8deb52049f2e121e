"""A cheap read of a stored RunState: its status, counters and foreach progress, without the integrity check.

``RunState.from_json`` validates every entry and checks that the whole
structure is one the engine could have written, which costs time in
proportion to everything live (and to the item snapshots). A host that only
needs to choose which engine call to make, or to show how far a run has got,
reads those few facts here instead. The engine call it then makes checks the
state in full anyway.

What is read is checked, and nothing else: a field of the wrong type, a
missing frame a progress row needs, a malformed foreach item entry are
``CorruptRunStateError`` naming the field (``details["field"]``), never a
``KeyError`` or a guess. On every state the runtime writes, the answers equal
what the full parse gives (``activation_progress`` and the model's fields);
tests/runtime/test_summary.py holds the two side by side.

Input is a ``RunState`` (the engine's own object, read through the field
values pydantic keeps in its ``__dict__``) or its complete JSON form as
``RunState.to_json`` writes it (a mapping, text or bytes), with parts joined
(``RunState.join_parts_data``); JSON is read as written, so ``"3"`` is not
the step 3.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from runtime._errors import CorruptRunStateError

# The literals of runtime._state, repeated rather than imported so this module stays light (the test pins them).
RUN_STATUSES = frozenset({"running", "waiting", "interrupted", "completed", "failed", "cancelled"})
_MISSING: Any = object()


@dataclass(frozen=True, slots=True)
class ActivationProgress:
    """One live foreach activation: how many of its items are done, and which item of an enclosing foreach
    (``parent_activation_id``, ``parent_index``) it runs in, if any."""

    activation_id: str
    node_id: str
    scope_id: str
    frame_id: str
    parent_activation_id: str | None
    parent_index: int | None
    total: int
    done: int  # items over, the tolerated failed ones (``failed``) included, as the engine counts them
    running: int
    failed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(frozen=True, slots=True)
class RunSummary:
    """What ``run_summary`` read. ``foreach`` holds the first ``foreach_limit`` live activations, in stored
    order; ``activations`` counts all of them."""

    run_id: str
    status: str
    step: int
    trace_seq: int
    attempt: int
    frames: int
    activations: int
    #: Ids of the live activations whose items run as distributed batches (``ForeachActivation.distributed``).
    distributed: tuple[str, ...]
    foreach: tuple[ActivationProgress, ...]


def _corrupt(field: str, problem: str) -> CorruptRunStateError:
    return CorruptRunStateError(f"run state field {field}: {problem}" if field else f"run state: {problem}",
                                field=field)


def _at(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "array",
            dict: "object"}.get(type(value), type(value).__name__)


def _entry(value: Any, field: str) -> Mapping[str, Any]:
    # A pydantic model keeps its validated field values in __dict__: reading them there is what makes one code
    # path serve the engine's objects and stored JSON alike, without dumping either.
    if isinstance(value, BaseModel):
        return value.__dict__
    if isinstance(value, Mapping):
        return value
    raise _corrupt(field, f"must be an object, got {_kind(value)}")


def _int(entry: Mapping[str, Any], key: str, field: str, default: Any = _MISSING, *, least: int | None = None) -> Any:
    value = entry.get(key, default)
    if value is _MISSING:
        raise _corrupt(_at(field, key), "is missing")
    if value is default and default is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise _corrupt(_at(field, key), f"must be an integer, got {_kind(value)}")
    if least is not None and value < least:
        raise _corrupt(_at(field, key), f"must be at least {least}, got {value}")
    return value


def _str(entry: Mapping[str, Any], key: str, field: str) -> str:
    value = entry.get(key, _MISSING)
    if value is _MISSING:
        raise _corrupt(_at(field, key), "is missing")
    if not isinstance(value, str):
        raise _corrupt(_at(field, key), f"must be a string, got {_kind(value)}")
    return value


def _len(entry: Mapping[str, Any], key: str, field: str) -> int:
    value = entry.get(key, ())
    if not isinstance(value, list | tuple):
        raise _corrupt(_at(field, key), f"must be an array, got {_kind(value)}")
    return len(value)


def _map(entry: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = entry.get(key, {})
    if not isinstance(value, Mapping):
        raise _corrupt(key, f"must be an object, got {_kind(value)}")
    return value


def _parent(frames: Mapping[str, Any], frame_id: str, field: str) -> tuple[str | None, int | None]:
    """The foreach item the activation's entering frame runs in: ``(activation id, index)`` or ``(None, None)``."""
    if frame_id not in frames:
        raise _corrupt(_at(field, "frame_id"), f"names frame {frame_id!r}, which does not exist")
    where = f"frames.{frame_id}"
    frame = _entry(frames[frame_id], where)
    metadata = frame.get("metadata", {})
    if not isinstance(metadata, Mapping):
        raise _corrupt(f"{where}.metadata", f"must be an object, got {_kind(metadata)}")
    if "foreach" not in metadata:
        return None, None
    item = _entry(metadata["foreach"], f"{where}.metadata.foreach")
    return _str(item, "activation_id", f"{where}.metadata.foreach"), _int(item, "index", f"{where}.metadata.foreach",
                                                                         least=0)


def run_summary(run_state: Any, *, foreach_limit: int | None = None) -> RunSummary:
    """Status, counters, distributed activations and foreach progress of ``run_state`` (a ``RunState`` or its
    complete JSON form), reading only those fields: ``CorruptRunStateError`` (with ``details["field"]``) when one
    of them is malformed. ``foreach_limit`` caps the progress rows (None: every live activation)."""
    if isinstance(run_state, str | bytes):
        try:
            run_state = json.loads(run_state)
        except ValueError as exc:
            raise CorruptRunStateError(f"run state is not JSON: {exc}", field="") from None
    top = _entry(run_state, "")
    version = top.get("version", 1)
    if type(version) is not int or version != 1:
        raise _corrupt("version", f"must be the integer 1, got {version!r}")
    status = top.get("status", "running")
    if not isinstance(status, str) or status not in RUN_STATUSES:
        raise _corrupt("status", f"must be one of {', '.join(sorted(RUN_STATUSES))}, got {status!r}")
    frames = _map(top, "frames")
    activations = _map(top, "activations")
    distributed = []
    rows = []
    for number, (key, value) in enumerate(activations.items()):
        field = f"activations.{key}"
        activation = _entry(value, field)
        if _int(activation, "batch_size", field, None, least=1) is not None:
            distributed.append(key)
        if foreach_limit is not None and number >= foreach_limit:
            continue
        frame_id = _str(activation, "frame_id", field)
        parent_activation_id, parent_index = _parent(frames, frame_id, field)
        rows.append(ActivationProgress(
            activation_id=_str(activation, "activation_id", field), node_id=_str(activation, "node_id", field),
            scope_id=_str(activation, "scope_id", field), frame_id=frame_id,
            parent_activation_id=parent_activation_id, parent_index=parent_index,
            total=_len(activation, "items", field), done=_int(activation, "completed", field, 0, least=0),
            running=_len(activation, "running", field), failed=_len(activation, "failed", field)))
    return RunSummary(
        run_id=_str(top, "run_id", ""), status=status, step=_int(top, "step", "", 0),
        trace_seq=_int(top, "trace_seq", "", 0), attempt=_int(top, "attempt", "", 1), frames=len(frames),
        activations=len(activations),
        distributed=tuple(distributed), foreach=tuple(rows))



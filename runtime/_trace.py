"""Trace events: the chronological history of a run, for inspection only.

Every event carries the stable identities of where it happened (frame, scope,
lineage, node and, for foreach items, activation and index) so the designer
can correlate it with the RunState, but the engine never rebuilds anything
from the trace: resume reads RunState alone.

``seq`` numbers are allocated from ``RunState.trace_seq``, so they continue
across resumes and are identical for identical runs. ``time`` and
``duration`` are wall clock and are the only fields that differ between two
runs of the same workflow with the same task results (see ``identity``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Any

from runtime._secrets import SecretRef
from runtime._twins import layout_twin

#: Every event kind the engine emits.
EVENT_KINDS = (
    "run_started",
    "run_completed",
    "run_failed",
    "run_interrupted",
    "run_waiting",
    "run_cancelled",
    "run_waiting",
    "node_started",
    "node_completed",
    "node_retrying",
    "node_waiting",
    "node_failed",
    "foreach_started",
    "item_started",
    "item_completed",
    "item_failed",
    "foreach_distributed",
    "foreach_completed",
    "scope_opened",
    "scope_closed",
    "interrupted",
    "resumed",
    "run_redriven",
    "run_forked",
)

_SUMMARY_DEPTH = 3
_SUMMARY_ITEMS = 8
_SUMMARY_CHARS = 200


#: The types ``summarize`` returns unchanged at any depth.
KEPT_AS_IS = frozenset({int, float, bool, type(None)})


def summarize(value: Any, depth: int = _SUMMARY_DEPTH) -> Any:
    """A bounded JSON-compatible preview of ``value``: long strings, lists and objects are cut.

    Trace events must stay small however large the payloads are, since they
    are stored per superstep.
    """
    if value is None or isinstance(value, bool | int | float):
        return value
    if type(value) is dict and depth > 0 and len(value) <= _SUMMARY_ITEMS:  # the common case, without ABC checks
        # Scalars are kept as they are without a call each: a trace summarizes a few payloads per node step.
        return {str(key): item if type(item) in KEPT_AS_IS else summarize(item, depth - 1)
                for key, item in value.items()}
    if isinstance(value, str):
        return value if len(value) <= _SUMMARY_CHARS else value[:_SUMMARY_CHARS] + f"…(+{len(value) - _SUMMARY_CHARS})"
    if depth <= 0:
        if isinstance(value, Mapping):
            return f"{{…{len(value)} keys}}"
        if isinstance(value, list | tuple):
            return f"[…{len(value)} items]"
        return str(value) if type(value) is SecretRef else f"<{type(value).__name__}>"
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for count, (key, item) in enumerate(value.items()):
            if count == _SUMMARY_ITEMS:
                out["…"] = f"+{len(value) - _SUMMARY_ITEMS} keys"
                break
            out[str(key)] = summarize(item, depth - 1)
        return out
    if isinstance(value, list | tuple):
        items = [item if type(item) in KEPT_AS_IS else summarize(item, depth - 1) for item in value[:_SUMMARY_ITEMS]]
        if len(value) > _SUMMARY_ITEMS:
            items.append(f"…+{len(value) - _SUMMARY_ITEMS} items")
        return items
    return str(value) if type(value) is SecretRef else f"<{type(value).__name__}>"


@dataclass(frozen=True, slots=True, init=False)
class TraceEvent:
    seq: int
    kind: str
    run_id: str
    step: int
    time: float
    scope_id: str | None = None
    frame_id: str | None = None
    lineage_id: str | None = None
    node_id: str | None = None
    activation_id: str | None = None
    index: int | None = None
    label: str | None = None
    attempt: int | None = None
    duration: float | None = None
    summary: Any = None

    def __init__(self, seq: int, kind: str, run_id: str, step: int, time: float, scope_id: str | None = None,
                 frame_id: str | None = None, lineage_id: str | None = None, node_id: str | None = None,
                 activation_id: str | None = None, index: int | None = None, label: str | None = None,
                 attempt: int | None = None, duration: float | None = None, summary: Any = None) -> None:
        # What the frozen dataclass __init__ does, at half the cost: the engine builds a few events per node
        # step, and the generated one writes each field with object.__setattr__(self, name, value), which
        # finds the field's slot by name every time. Each slot's descriptor is looked up once (_SLOTS,
        # below) and called directly. tests/runtime/test_trace.py pins this to the fields.
        (s_seq, s_kind, s_run_id, s_step, s_time, s_scope_id, s_frame_id, s_lineage_id, s_node_id, s_activation_id,
         s_index, s_label, s_attempt, s_duration, s_summary) = _SLOTS
        s_seq(self, seq)
        s_kind(self, kind)
        s_run_id(self, run_id)
        s_step(self, step)
        s_time(self, time)
        s_scope_id(self, scope_id)
        s_frame_id(self, frame_id)
        s_lineage_id(self, lineage_id)
        s_node_id(self, node_id)
        s_activation_id(self, activation_id)
        s_index(self, index)
        s_label(self, label)
        s_attempt(self, attempt)
        s_duration(self, duration)
        s_summary(self, summary)

    def identity(self) -> tuple[Any, ...]:
        """Everything but wall-clock time: equal for equal runs whatever the timing."""
        return tuple(getattr(self, f.name) for f in fields(self) if f.name not in ("time", "duration"))

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def to_record(self) -> dict[str, Any]:
        """The shape of the designer's ``RunEvent`` row: identities as columns, the rest under ``data``."""
        data: dict[str, Any] = {"step": self.step}
        for name in ("label", "attempt", "summary"):
            value = getattr(self, name)
            if value is not None:
                data[name] = value
        return {
            "seq": self.seq,
            "kind": self.kind,
            "node_id": self.node_id,
            "frame_id": self.frame_id,
            "scope_id": self.scope_id,
            "lineage_id": self.lineage_id,
            "activation_id": self.activation_id,
            "index": self.index,
            "data": data,
            "at": datetime.fromtimestamp(self.time, tz=UTC).isoformat(),
            "duration_ms": None if self.duration is None else round(self.duration * 1000, 3),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TraceEvent:
        names = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in names})


#: Each field's slot descriptor setter, in field order (what ``TraceEvent.__init__`` writes through).
_SLOTS: tuple[Callable[[TraceEvent, Any], None], ...] = tuple(
    TraceEvent.__dict__[f.name].__set__ for f in fields(TraceEvent))


#: ``TraceEvent``'s layout twin (``runtime._twins``): the engine's recorder (``runtime._algo``) fills it and turns it
#: into a ``TraceEvent``; four events a foreach item made that way cost a third of the constructor's.
EVENT_TWIN = layout_twin(TraceEvent)

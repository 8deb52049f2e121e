"""The structured runtime context a task or binding sees.

``RuntimeContext.foreach`` holds one ``ForeachContext`` per active foreach of
the current runtime scope, keyed by the foreach node's static id, outermost
first. The convenience fields (``loop_item``, ``loop_index``, aliases) are
derived from the same entries so that Python code, bindings, the analyzer and
the trace cannot disagree. Building these from persisted frames is the
engine's job (``runtime._state``); this module only defines the shapes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from runtime._twins import layout_twin

#: Keys of the JSON context mapping that an alias may never take.
RESERVED_CONTEXT_FIELDS = frozenset({"foreach", "loop_item", "loop_index"})

#: The fields of one ``context.foreach.<id>`` entry, in display order.
FOREACH_CONTEXT_FIELDS = ("node_id", "activation_id", "frame_id", "scope_id", "lineage_id", "index", "item")


@dataclass(frozen=True, slots=True)
class ForeachContext:
    node_id: str
    activation_id: str
    frame_id: str
    scope_id: str
    lineage_id: str
    index: int
    item: object

    def to_json(self) -> dict[str, Any]:
        # Spelled out (same order as FOREACH_CONTEXT_FIELDS): built for every item step.
        return {"node_id": self.node_id, "activation_id": self.activation_id, "frame_id": self.frame_id,
                "scope_id": self.scope_id, "lineage_id": self.lineage_id, "index": self.index, "item": self.item}


_FOREACH_CONTEXT_TWIN = layout_twin(ForeachContext)


def foreach_context(node_id: str, activation_id: str, frame_id: str, scope_id: str, lineage_id: str, index: int,
                    item: object) -> ForeachContext:
    """``ForeachContext(...)`` at a third of the cost (a layout twin, see ``runtime._twins``), for the engine,
    which derives one per foreach item step. tests/runtime/test_context.py pins it to the constructor."""
    built: Any = _FOREACH_CONTEXT_TWIN()
    built.node_id = node_id
    built.activation_id = activation_id
    built.frame_id = frame_id
    built.scope_id = scope_id
    built.lineage_id = lineage_id
    built.index = index
    built.item = item
    built.__class__ = ForeachContext
    context: ForeachContext = built
    return context


@dataclass(slots=True)
class RuntimeContext:
    """What the running frame knows about where it is.

    ``aliases`` maps each active foreach's configured alias to that foreach's
    node id; aliases are only exposed when unique (the analyzer rejects
    collisions, so at run time they are).
    """

    run_id: str = ""
    workflow_id: str = ""
    scope_id: str = "root"
    frame_id: str = ""
    lineage_id: str = ""
    node_id: str = ""
    attempt: int = 1
    foreach: Mapping[str, ForeachContext] = field(default_factory=dict)
    aliases: Mapping[str, str] = field(default_factory=dict)

    @property
    def innermost(self) -> ForeachContext | None:
        if not self.foreach:
            return None
        return next(reversed(tuple(self.foreach.values())))

    @property
    def loop_item(self) -> object:
        inner = self.innermost
        return None if inner is None else inner.item

    @property
    def loop_index(self) -> int | None:
        inner = self.innermost
        return None if inner is None else inner.index

    def to_mapping(self) -> Mapping[str, Any]:
        """The JSON-compatible ``context`` root that graph paths read."""
        mapping: dict[str, Any] = {
            "foreach": {node_id: entry.to_json() for node_id, entry in self.foreach.items()}
        }
        inner = self.innermost
        if inner is not None:
            mapping["loop_item"] = inner.item
            mapping["loop_index"] = inner.index
        for alias, node_id in self.aliases.items():
            if alias not in RESERVED_CONTEXT_FIELDS and node_id in self.foreach:
                mapping[alias] = self.foreach[node_id].item
        return MappingProxyType(mapping)

"""Which labels each node can emit.

``required`` labels are ones the node may emit in normal operation: without a
route for one, the lineage ends there. ``optional`` labels are valid route
labels whose absence changes nothing structural: ``error``, which every node
kind takes when it fails (a task or child that raises, a binding or a
collection that cannot be read) *if* an error route exists; with none, the
failure fails the run instead of ending a lineage quietly.
``known`` is false for a task the analyzer cannot look up (no registry): then
any label is accepted and only "no routes at all" can be judged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runtime._document import BranchNode, ForeachNode, InterruptNode, SubgraphNode, TaskNode


@dataclass(frozen=True, slots=True)
class LabelSet:
    known: bool
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()

    def allows(self, label: str) -> bool:
        return not self.known or label in self.required or label in self.optional

    @property
    def valid(self) -> tuple[str, ...]:
        # the order route handles are drawn in: the normal flow, then "done", then "error"
        return tuple(sorted((*self.required, *self.optional), key=lambda label: (label == "error", label == "done")))


_UNKNOWN = LabelSet(False)


def labels_of(node: object, spec: Any | None) -> LabelSet:
    """``spec`` is the registry's TaskSpec for a task node, when there is one."""
    if isinstance(node, TaskNode):
        if spec is None:
            return _UNKNOWN
        return LabelSet(True, tuple(spec.labels), () if "error" in spec.labels else ("error",))
    if isinstance(node, ForeachNode):
        # A missing loop route is reported on its own; here only "done" can end a lineage.
        return LabelSet(True, ("done",), ("loop", "error"))
    if isinstance(node, SubgraphNode):
        return LabelSet(True, ("ok",), ("error",))
    if isinstance(node, BranchNode):
        cases = [case.label for case in node.cases]
        default = [node.default_label] if node.default_label not in cases else []
        return LabelSet(True, (*cases, *default), () if "error" in cases else ("error",))
    if isinstance(node, InterruptNode):
        labels = tuple(dict.fromkeys(node.labels))
        return LabelSet(True, labels, () if "error" in labels else ("error",))
    return _UNKNOWN

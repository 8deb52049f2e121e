"""Which labels each node can emit.

``required`` labels are ones the node may emit in normal operation: without a
route for one, the lineage ends there. ``optional`` labels are valid route
labels whose absence changes nothing structural (``error``: with no error
route a failure fails the run instead of ending a lineage quietly).
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
        return tuple(sorted((*self.required, *self.optional), key=lambda label: label in _LAST))


_UNKNOWN = LabelSet(False)
#: Shown after the others (the order route handles are drawn in): the exits after the normal flow.
_LAST = frozenset({"done", "error"})


def labels_of(node: object, spec: Any | None) -> LabelSet:
    """``spec`` is the registry's TaskSpec for a task node, when there is one."""
    if isinstance(node, TaskNode):
        if spec is None:
            return _UNKNOWN
        return LabelSet(True, tuple(spec.labels), ("error",))
    if isinstance(node, ForeachNode):
        # A missing loop route is reported on its own; here only "done" can end a lineage.
        return LabelSet(True, ("done",), ("loop",))
    if isinstance(node, SubgraphNode):
        return LabelSet(True, ("ok",), ("error",))
    if isinstance(node, BranchNode):
        cases = [case.label for case in node.cases]
        default = [node.default_label] if node.default_label not in cases else []
        return LabelSet(True, (*cases, *default))
    if isinstance(node, InterruptNode):
        return LabelSet(True, tuple(dict.fromkeys(node.labels)))
    return _UNKNOWN

"""Diagnostics about a foreach's distribution settings (``batch_size`` and the rest, ``runtime._batches``).

A distributed foreach runs its items as batches in other processes, each
from a copy of the run's state taken when the foreach started. So what its
body does must make sense there: it cannot pause for a person (an interrupt
inside a batch has nobody to answer it), and a state write made by an item
stays inside that item's batch (the parent run's state never sees it; the
foreach's ``results`` list is how item results come back).
"""

from __future__ import annotations

from collections.abc import Mapping

from runtime._analysis._regions import Stack
from runtime._diagnostics import Diagnostic
from runtime._document import ForeachNode, InterruptNode, Workflow


def batch_diagnostics(workflow: Workflow, nodes: Mapping[str, object], stacks: Mapping[str, Stack]
                      ) -> list[Diagnostic]:
    found: list[Diagnostic] = []
    for node in workflow.nodes:
        if not isinstance(node, ForeachNode) or nodes.get(node.id) is not node:
            continue
        if node.batch_size is None:
            if node.max_batches_in_flight is not None:
                found.append(Diagnostic(
                    "foreach.batch_settings_unused", "warning", node.id, "max_batches_in_flight",
                    f"foreach {node.id!r} sets max_batches_in_flight but no batch_size, so it never runs as "
                    f"batches and the setting has no effect",
                    "set batch_size (items per batch) to let it run distributed, or remove max_batches_in_flight"))
            continue
        body = [other for other in workflow.nodes if node.id in stacks.get(other.id, ()) and other.id != node.id]
        for inner in body:
            if isinstance(inner, InterruptNode):
                found.append(Diagnostic(
                    "foreach.batch_interrupt", "error", inner.id, None,
                    f"interrupt {inner.id!r} is inside foreach {node.id!r}, which may run its items as "
                    f"distributed batches (batch_size {node.batch_size}); a batch cannot pause for an answer",
                    f"remove batch_size from foreach {node.id!r}, or move the interrupt out of its body"))
            writes = bool(getattr(inner, "output", None)) or (isinstance(inner, ForeachNode)
                                                               and inner.results is not None)
            if writes:
                found.append(Diagnostic(
                    "foreach.batch_state_write", "warning", inner.id, "output",
                    f"node {inner.id!r} writes state inside foreach {node.id!r}, which may run its items as "
                    f"distributed batches (batch_size {node.batch_size}); a batch's state writes stay in that "
                    f"batch and the run's state does not see them",
                    f"collect item results with foreach {node.id!r}'s results list (the result of the node "
                    f"that routes back to it), or remove batch_size"))
    return found

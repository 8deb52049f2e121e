"""Pinning subgraph versions for the lifetime of a run.

A subgraph reference without a version means "the latest published version".
Resolved afresh at every worker attempt, that would let a run interrupted for
a day continue inside a child version published meanwhile, whose nodes may not
match the frames the run state holds. So the run decides once, when it
starts: every unversioned reference reachable from its document (through
children's documents too) is pinned to the version that is latest then, and
the run's resolver answers with those pins from then on.
"""

from __future__ import annotations

from designer.workflows.resolvers import TeamVersionResolver
from runtime import Workflow
from runtime.document import SubgraphNode, WorkflowRef
from runtime.errors import SubgraphResolutionError


def pin_subgraph_versions(document: Workflow, resolver: TeamVersionResolver) -> dict[str, int]:
    """``{slug: version}`` for every unversioned subgraph reference reachable from ``document``.

    References that do not resolve are left out: the engine refuses them with its own diagnostics.
    """
    pins: dict[str, int] = {}
    walked: set[int] = set()  # WorkflowVersion rows whose documents were already searched
    pending = [document]
    while pending:
        for node in pending.pop().nodes:
            if not isinstance(node, SubgraphNode):
                continue
            ref = node.workflow
            if ref.version is None and ref.id in pins:
                ref = WorkflowRef(id=ref.id, version=pins[ref.id])
            try:
                version = resolver.version_for(ref)
            except SubgraphResolutionError:
                continue
            if node.workflow.version is None:
                pins.setdefault(ref.id, version.number)
            if version.pk not in walked:
                walked.add(version.pk)
                pending.append(resolver.resolve(WorkflowRef(id=ref.id, version=version.number)))
    return pins


class PinnedResolver:
    """A ``WorkflowResolver`` that answers unversioned references with the run's pinned versions."""

    def __init__(self, resolver: TeamVersionResolver, pins: dict[str, int] | None) -> None:
        self.resolver = resolver
        self.pins = dict(pins or {})

    def resolve(self, ref: WorkflowRef) -> Workflow:
        if ref.version is None and ref.id in self.pins:
            ref = WorkflowRef(id=ref.id, version=self.pins[ref.id])
        return self.resolver.resolve(ref)

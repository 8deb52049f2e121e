"""Resolving subgraph references to workflow documents."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol, runtime_checkable

from runtime._document import Workflow, WorkflowRef
from runtime._errors import SubgraphResolutionError


@runtime_checkable
class WorkflowResolver(Protocol):
    def resolve(self, ref: WorkflowRef) -> Workflow:
        """The document for ``ref``; raises ``SubgraphResolutionError`` when there is none."""
        ...


class MappingResolver:
    """Resolves from a mapping keyed by workflow id, or by ``(id, version)`` for pinned refs."""

    def __init__(self, workflows: Mapping[object, Workflow]) -> None:
        self._workflows = dict(workflows)

    def resolve(self, ref: WorkflowRef) -> Workflow:
        if ref.version is not None and (ref.id, ref.version) in self._workflows:
            return self._workflows[(ref.id, ref.version)]
        if ref.id in self._workflows:
            return self._workflows[ref.id]
        shown = ref.id if ref.version is None else f"{ref.id} v{ref.version}"
        raise SubgraphResolutionError(f"no workflow {shown!r} is known to this resolver", workflow=ref.id,
                                      version=ref.version)


class _CallableResolver:
    def __init__(self, fn: Callable[[WorkflowRef], Workflow]) -> None:
        self._fn = fn

    def resolve(self, ref: WorkflowRef) -> Workflow:
        return self._fn(ref)


def as_resolver(
    workflows: WorkflowResolver | Mapping[object, Workflow] | Callable[[WorkflowRef], Workflow] | None,
) -> WorkflowResolver:
    """Accept what callers naturally have: nothing, a dict, a function or a resolver."""
    if workflows is None:
        return MappingResolver({})
    if isinstance(workflows, WorkflowResolver):
        return workflows
    if isinstance(workflows, Mapping):
        return MappingResolver(workflows)
    if callable(workflows):
        return _CallableResolver(workflows)
    raise TypeError(f"cannot resolve workflows from {type(workflows).__name__}")

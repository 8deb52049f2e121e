"""Resolving subgraph references to workflow documents."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from pydantic import ValidationError

from runtime._document import Workflow, WorkflowRef, coerce_workflow
from runtime._errors import SubgraphResolutionError


@runtime_checkable
class WorkflowResolver(Protocol):
    def resolve(self, ref: WorkflowRef) -> Workflow:
        """The document for ``ref``; raises ``SubgraphResolutionError`` when there is none."""
        ...


def as_workflow(found: Any, shown: str) -> Workflow:
    """``found`` as a Workflow: documents given as JSON mappings are parsed; anything else is refused."""
    return coerce_workflow(found, lambda error: _unresolvable(found, shown, error))


def _unresolvable(found: Any, shown: str, error: ValidationError | None) -> SubgraphResolutionError:
    if error is None:
        return SubgraphResolutionError(
            f"workflow {shown!r} resolved to a {type(found).__name__}, not a workflow document; give a Workflow or "
            f"its JSON mapping", workflow=shown)
    first = error.errors(include_url=False)[0]
    where = ".".join(str(part) for part in first["loc"]) or "(document)"
    return SubgraphResolutionError(
        f"workflow {shown!r} is not a valid workflow document ({error.error_count()} problem"
        f"{'s' if error.error_count() != 1 else ''}; first at {where}: {first['msg']}); fix the document "
        f"given for it", workflow=shown)


class MappingResolver:
    """Resolves from a mapping keyed by workflow id, or by ``(id, version)`` for pinned refs.

    Values are ``Workflow`` objects or their JSON mappings (parsed once, on first use); a value that
    is neither, or a mapping that is not a valid document, is a ``SubgraphResolutionError``.
    """

    def __init__(self, workflows: Mapping[object, Workflow | Mapping[str, Any]]) -> None:
        self._workflows: dict[object, Any] = dict(workflows)

    def _get(self, key: object, shown: str) -> Workflow:
        found = self._workflows[key]
        if not isinstance(found, Workflow):
            # Parsed once and kept: the analyzer and the engine cache by document object.
            found = self._workflows[key] = as_workflow(found, shown)
        return found

    def resolve(self, ref: WorkflowRef) -> Workflow:
        if ref.version is not None and (ref.id, ref.version) in self._workflows:
            return self._get((ref.id, ref.version), f"{ref.id} v{ref.version}")
        if ref.id in self._workflows:
            return self._get(ref.id, ref.id)
        shown = ref.id if ref.version is None else f"{ref.id} v{ref.version}"
        raise SubgraphResolutionError(f"no workflow {shown!r} is known to this resolver", workflow=ref.id,
                                      version=ref.version)


class _CallableResolver:
    def __init__(self, fn: Callable[[WorkflowRef], Workflow]) -> None:
        self._fn = fn

    def resolve(self, ref: WorkflowRef) -> Workflow:
        return as_workflow(self._fn(ref), ref.id if ref.version is None else f"{ref.id} v{ref.version}")


def as_resolver(
    workflows: WorkflowResolver | Mapping[object, Any] | Callable[[WorkflowRef], Any] | None,
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

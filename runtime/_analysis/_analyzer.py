"""``analyze()`` and the ``Analysis`` it returns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runtime._analysis._labels import LabelSet, labels_of
from runtime._analysis._regions import Regions, Stack, compute_regions
from runtime._context import RESERVED_CONTEXT_FIELDS
from runtime._diagnostics import Diagnostic
from runtime._document import ForeachNode, TaskNode, Workflow
from runtime._errors import UnknownNodeError, UnreachableNodeError, WorkflowValidationError


class Analysis:
    """What the analyzer knows about one workflow document.

    Built once by :func:`analyze`; the per-node questions (``context_schema``,
    ``path_options``) are answered from per-region caches, so asking them for
    every node of a large document stays cheap.
    """

    def __init__(self, workflow: Workflow, regions: Regions, diagnostics: list[Diagnostic]) -> None:
        self.workflow = workflow
        self._regions = regions
        self._order = {node.id: index for index, node in enumerate(workflow.nodes)}
        self.diagnostics: tuple[Diagnostic, ...] = tuple(
            sorted(diagnostics, key=lambda d: -1 if d.node_id is None else self._order.get(d.node_id, -1))
        )
        self.errors: tuple[Diagnostic, ...] = tuple(d for d in self.diagnostics if d.is_error)
        self.warnings: tuple[Diagnostic, ...] = tuple(d for d in self.diagnostics if not d.is_error)
        self.reachable: frozenset[str] = frozenset(regions.stacks)

    @property
    def ok(self) -> bool:
        return not self.errors

    def _check_node(self, node_id: str) -> None:
        if node_id not in self._order:
            raise UnknownNodeError(f"workflow {self.workflow.id!r} has no node {node_id!r}",
                                   workflow=self.workflow.id, node_id=node_id)
        if node_id not in self._regions.stacks:
            raise UnreachableNodeError(
                f"node {node_id!r} is not reachable from the start of workflow {self.workflow.id!r}, so it has no "
                f"control region or context; route to it from a reachable node first",
                workflow=self.workflow.id, node_id=node_id,
            )

    def control_region(self, node_id: str) -> Stack:
        """The foreach owner stack of a reachable node, outermost first."""
        self._check_node(node_id)
        return self._regions.stacks[node_id]

    def raise_for_errors(self) -> None:
        if not self.errors:
            return
        count = len(self.errors)
        listed = "; ".join(
            f"{d.code} at {d.node_id or 'workflow'}{'.' + d.field if d.field else ''}: {d.message}"
            for d in self.errors[:5]
        )
        more = f" (and {count - 5} more)" if count > 5 else ""
        raise WorkflowValidationError(
            f"workflow {self.workflow.id!r} has {count} error{'s' if count != 1 else ''}: {listed}{more}",
            diagnostics=self.errors,
        )

    def __repr__(self) -> str:
        return (f"<Analysis {self.workflow.id!r}: {len(self.reachable)}/{len(self.workflow.nodes)} reachable, "
                f"{len(self.errors)} errors, {len(self.warnings)} warnings>")


def _coerce_workflow(workflow: Workflow | Mapping[str, Any]) -> Workflow:
    if isinstance(workflow, Workflow):
        return workflow
    if isinstance(workflow, Mapping):
        from pydantic import ValidationError

        try:
            return Workflow.model_validate(workflow)
        except ValidationError as error:
            problems = [
                Diagnostic("document.invalid", "error", None, ".".join(str(p) for p in e["loc"]) or None,
                           e["msg"], "fix the document so that it matches the workflow format")
                for e in error.errors()
            ]
            raise WorkflowValidationError(
                f"the workflow document is malformed: {problems[0].message}", diagnostics=problems
            ) from None
    raise TypeError(f"analyze() needs a Workflow or its JSON mapping, got {type(workflow).__name__}")


def _structure(workflow: Workflow, nodes: Mapping[str, object], registry: Any,
               specs: dict[str, Any]) -> list[Diagnostic]:
    """Problems the pydantic model normally refuses, for documents built with ``model_construct``."""
    out: list[Diagnostic] = []
    if not workflow.nodes:
        out.append(Diagnostic("workflow.no_start", "error", None, "nodes", "the workflow has no nodes",
                              "add a first node; the first node added is the start"))
    elif workflow.start is not None and workflow.start not in nodes:
        out.append(Diagnostic("workflow.no_start", "error", None, "start",
                              f"the start node {workflow.start!r} does not exist",
                              "set start to the id of an existing node"))
    for route in workflow.routes:
        if route.source not in nodes:
            out.append(Diagnostic(
                "route.unknown_source", "error", None, "routes",
                f"route {route.source!r} --{route.label}--> {route.target!r} starts at a node that does not exist",
                "delete the route or create the node it starts from"))
        if route.target not in nodes:
            out.append(Diagnostic(
                "route.unknown_target", "error", route.source if route.source in nodes else None,
                f"routes.{route.label}",
                f"route {route.source!r} --{route.label}--> {route.target!r} points at a node that does not exist",
                "point the route at an existing node, or delete it"))
    if registry is not None:
        for node in workflow.nodes:
            if isinstance(node, TaskNode) and node.id not in specs:
                out.append(Diagnostic(
                    "task.unknown", "error", node.id, "task",
                    f"node {node.id!r} runs task {node.task!r}, which is not registered",
                    "pick a task from the registry (check the spelling) or register it with @task"))
    return out


def _route_labels(workflow: Workflow, nodes: Mapping[str, object],
                  labels: Mapping[str, LabelSet]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for route in workflow.routes:
        label_set = labels.get(route.source)
        if label_set is None or label_set.allows(route.label):
            continue
        valid = ", ".join(repr(label) for label in label_set.valid) or "none"
        out.append(Diagnostic(
            "route.unknown_label", "error", route.source, f"routes.{route.label}",
            f"node {route.source!r} cannot emit label {route.label!r}, so route --{route.label}--> "
            f"{route.target!r} never fires", f"use one of the labels it can emit: {valid}"))
    for node in workflow.nodes:
        if isinstance(node, ForeachNode) and "loop" not in _routes_of(workflow, node.id):
            out.append(Diagnostic(
                "region.no_return", "error", node.id, "routes.loop",
                f"foreach {node.id!r} has no loop route, so its items have no body to run and never return",
                f"add a route {node.id!r} --loop--> the first node of the body, and route the body back to "
                f"{node.id!r}"))
    return out


def _routes_of(workflow: Workflow, node_id: str) -> dict[str, str]:
    return {r.label: r.target for r in workflow.routes if r.source == node_id}


def _unreachable(workflow: Workflow, reached: Mapping[str, Stack]) -> list[Diagnostic]:
    return [
        Diagnostic("node.unreachable", "error", node.id, None,
                   f"node {node.id!r} is not reachable from the start node {workflow.start_node!r}",
                   "route to it from a reachable node, or delete it")
        for node in workflow.nodes
        if node.id not in reached
    ]


def _aliases(workflow: Workflow, nodes: Mapping[str, object], stacks: Mapping[str, Stack]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for node in workflow.nodes:
        if not isinstance(node, ForeachNode) or node.as_ is None:
            continue
        alias = node.as_
        if alias in RESERVED_CONTEXT_FIELDS:
            out.append(Diagnostic(
                "alias.collision", "error", node.id, "as",
                f"foreach {node.id!r} uses the alias {alias!r}, which is a reserved context field",
                f"pick another alias; {', '.join(sorted(RESERVED_CONTEXT_FIELDS))} are reserved"))
            continue
        for outer in stacks.get(node.id, ()):
            outer_node = nodes[outer]
            if isinstance(outer_node, ForeachNode) and outer_node.as_ == alias:
                out.append(Diagnostic(
                    "alias.collision", "error", node.id, "as",
                    f"foreach {node.id!r} uses the alias {alias!r}, which the enclosing foreach {outer!r} "
                    f"already uses; inside the inner body both would be active",
                    f"rename one alias, or read context.foreach.{node.id}.item explicitly"))
    return out


def _spec_of(registry: Any, node: object) -> Any | None:
    if registry is None or not isinstance(node, TaskNode):
        return None
    if node.task not in registry:
        return None
    return registry.get(node.task)


def analyze(workflow: Workflow | Mapping[str, Any], *, registry: Any | None = None,
            workflows: Any | None = None) -> Analysis:
    """Analyze ``workflow``: control regions, schemas and every problem, reported in one pass.

    ``registry`` (a ``TaskRegistry``) enables task checks; without it, task
    names, labels and schemas are not judged. ``workflows`` resolves subgraph
    references (anything ``runtime._resolver.as_resolver`` accepts).
    """
    doc = _coerce_workflow(workflow)
    nodes: dict[str, object] = {}
    for node in doc.nodes:
        nodes.setdefault(node.id, node)
    routes: dict[str, dict[str, str]] = {}
    for route in doc.routes:
        if route.source in nodes:
            routes.setdefault(route.source, {}).setdefault(route.label, route.target)
    specs = {node_id: spec for node_id, node in nodes.items() if (spec := _spec_of(registry, node)) is not None}
    labels = {node_id: labels_of(node, specs.get(node_id)) for node_id, node in nodes.items()}
    regions = compute_regions(doc, nodes, routes, labels)
    diagnostics = _structure(doc, nodes, registry, specs)
    diagnostics += _route_labels(doc, nodes, labels)
    diagnostics += _unreachable(doc, regions.stacks) if doc.nodes else []
    diagnostics += regions.diagnostics
    diagnostics += _aliases(doc, nodes, regions.stacks)
    return Analysis(doc, regions, diagnostics)

"""``analyze()`` and the ``Analysis`` it returns."""

from __future__ import annotations

import copy
import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from runtime._analysis import _schemas as S
from runtime._analysis._batches import batch_diagnostics
from runtime._analysis._checks import Checker
from runtime._analysis._concurrent import concurrent_write_diagnostics, concurrent_writes, last_item_wins
from runtime._analysis._cycles import no_exit_diagnostics
from runtime._analysis._document_schemas import schema_diagnostics
from runtime._analysis._error_payload import ERROR_PAYLOAD_SCHEMA
from runtime._analysis._infer import StateWrites, output_schema, result_schema
from runtime._analysis._labels import LabelSet, labels_of
from runtime._analysis._options import OptionIndex, PathOption
from runtime._analysis._regions import Regions, Stack, compute_regions
from runtime._analysis._schemas import Schema
from runtime._analysis._scope import Scope
from runtime._context import RESERVED_CONTEXT_FIELDS
from runtime._diagnostics import Diagnostic
from runtime._document import (
    BranchNode,
    ForeachNode,
    InterruptNode,
    OutputBinding,
    SubgraphNode,
    TaskNode,
    Workflow,
    coerce_workflow,
)
from runtime._errors import (
    PathSyntaxError,
    UnknownNodeError,
    UnreachableNodeError,
    WorkflowError,
    WorkflowValidationError,
)
from runtime._paths import parse_local_path
from runtime._resolver import WorkflowResolver, as_resolver


@dataclass(frozen=True, slots=True)
class _NodeFacts:
    node: Any
    labels: LabelSet
    input_schema: Schema | None  # the payload its input bindings fill, when known
    result_schema: Schema


@dataclass(frozen=True, slots=True)
class _FactTable:
    """Per-node facts as one dict per fact: a large document costs a few dicts, not an object per node."""

    nodes: Mapping[str, Any]
    labels: Mapping[str, LabelSet]
    payloads: dict[str, Schema | None]
    results: dict[str, Schema]


class Analysis:
    """What the analyzer knows about one workflow document.

    Built once by :func:`analyze`; the per-node questions (``context_schema``,
    ``path_options``) are answered from per-region caches, so asking them for
    every node of a large document stays cheap.
    """

    def __init__(self, workflow: Workflow, regions: Regions, diagnostics: list[Diagnostic], scope: Scope,
                 options: OptionIndex, output_schema: Schema, subgraphs: Mapping[str, Analysis],
                 facts: _FactTable) -> None:
        self.workflow = workflow
        self._regions = regions
        self._scope = scope
        self._options = options
        self._order = {node.id: index for index, node in enumerate(workflow.nodes)}
        self.diagnostics: tuple[Diagnostic, ...] = tuple(
            sorted(diagnostics, key=lambda d: -1 if d.node_id is None else self._order.get(d.node_id, -1))
        )
        self.errors: tuple[Diagnostic, ...] = tuple(d for d in self.diagnostics if d.is_error)
        self.warnings: tuple[Diagnostic, ...] = tuple(d for d in self.diagnostics if not d.is_error)
        self.reachable: frozenset[str] = frozenset(regions.stacks)
        #: JSON Schema of the payload this workflow's outputs project (a subgraph node's result).
        self.output_schema: Schema = output_schema
        self._subgraphs = dict(subgraphs)
        self._facts_table = facts

    @property
    def ok(self) -> bool:
        return not self.errors

    def extended(self, diagnostics: Sequence[Diagnostic]) -> Analysis:
        """A copy that also reports ``diagnostics`` (checks a caller adds, e.g. ``retry_delay_diagnostics``
        under a deployment's limit); the same analysis when there are none."""
        if not diagnostics:
            return self
        copied = copy.copy(self)
        merged = sorted((*self.diagnostics, *diagnostics),
                        key=lambda d: -1 if d.node_id is None else self._order.get(d.node_id, -1))
        copied.diagnostics = tuple(merged)
        copied.errors = tuple(d for d in merged if d.is_error)
        copied.warnings = tuple(d for d in merged if not d.is_error)
        return copied

    @property
    def input_schema(self) -> Schema:
        return self._scope.input_schema

    @property
    def state_schema(self) -> Schema:
        """Declared state fields plus every field output bindings write (see ``_infer``)."""
        return self._scope.state_schema

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

    def context_schema(self, node_id: str) -> Schema:
        """JSON Schema of ``context`` at a reachable node (a fresh copy: callers may keep or change it)."""
        self._check_node(node_id)
        return copy.deepcopy(self._scope.context_schema(self._regions.stacks[node_id]))

    def item_schema(self, foreach_id: str) -> Schema:
        """The item schema of a foreach node's collection."""
        node = self.workflow.node(foreach_id) if foreach_id in self._order else None
        if not isinstance(node, ForeachNode):
            raise UnknownNodeError(f"workflow {self.workflow.id!r} has no foreach {foreach_id!r}",
                                   workflow=self.workflow.id, node_id=foreach_id)
        return copy.deepcopy(self._scope.item_schema(foreach_id))

    def path_options(self, node_id: str, want: Schema | None = None) -> list[PathOption]:
        """Every readable path at a reachable node; with ``want``, only the compatible ones, best first."""
        self._check_node(node_id)
        stack = self._regions.stacks[node_id]
        if want is None:
            return list(self._options.region(stack))
        return list(self._options.wanted(stack, want))

    def labels(self, node_id: str) -> tuple[str, ...]:
        """The labels a node can emit, one per possible route (``error`` included for tasks and subgraphs).

        For a task the analyzer cannot look up (no registry, or an unknown
        name) that is ``ok``, ``error`` and whatever labels its routes use.
        """
        facts = self._facts(node_id)
        if facts.labels.known:
            return facts.labels.valid
        used = tuple(self._regions.routes.get(node_id, {}))
        return tuple(dict.fromkeys(("ok", "error", *used)))

    def field_schema(self, node_id: str, field: str) -> Schema | None:
        """The JSON Schema a node's field wants, for ``path_options(node_id, want=...)``.

        ``input.<target>`` of a task or subgraph: that field of the task's (or
        child workflow's) input schema; ``input`` alone: the whole payload;
        of an interrupt: ``{}`` (its prompt payload is free). ``over`` of a
        foreach: an array; ``path`` of a branch: ``{}``. ``{}`` also when the
        payload schema is unknown (no registry, unresolved child); None when
        the field does not exist.
        """
        facts = self._facts(node_id)
        node = facts.node
        if field == "over" and isinstance(node, ForeachNode):
            return {"type": "array"}
        if field == "path" and isinstance(node, BranchNode):
            return {}
        if field != "input" and not field.startswith("input."):
            return None
        if not isinstance(node, TaskNode | SubgraphNode | InterruptNode):
            return None
        if facts.input_schema is None:
            return {}
        if field == "input":
            return copy.deepcopy(facts.input_schema)
        try:
            target = parse_local_path(field[len("input."):])
        except PathSyntaxError:
            return None
        found, _ = S.descend(facts.input_schema, target.parts, for_target=True, indexes=True)
        return copy.deepcopy(found) if found is not None else None

    def result_schema(self, node_id: str) -> Schema:
        """The schema of a node's result payload (what its output bindings' ``source`` paths read).

        With an error route, bindings may also read the error payload: see ``error_schema``.
        """
        return copy.deepcopy(self._facts(node_id).result_schema)

    def error_schema(self, node_id: str) -> Schema | None:
        """The payload of a node's ``error`` route (``{"error": {...}}``), None when it has no error route.

        Output bindings read it as well as the result: on the error route the
        engine commits this payload through the same bindings.
        """
        self._facts(node_id)
        if "error" not in self._regions.routes.get(node_id, ()):
            return None
        return copy.deepcopy(ERROR_PAYLOAD_SCHEMA)

    def node_diagnostics(self, node_id: str) -> tuple[Diagnostic, ...]:
        """The diagnostics located at one node (any field)."""
        self._facts(node_id)
        return tuple(d for d in self.diagnostics if d.node_id == node_id)

    def _facts(self, node_id: str) -> _NodeFacts:
        table = self._facts_table
        node = table.nodes.get(node_id)
        if node is None:
            raise UnknownNodeError(f"workflow {self.workflow.id!r} has no node {node_id!r}",
                                   workflow=self.workflow.id, node_id=node_id)
        return _NodeFacts(node, table.labels[node_id], table.payloads[node_id], table.results[node_id])

    def subgraph(self, node_id: str) -> Analysis | None:
        """The analysis of the child workflow a subgraph node runs (None when it cannot be resolved)."""
        if node_id not in self._order:
            raise UnknownNodeError(f"workflow {self.workflow.id!r} has no node {node_id!r}",
                                   workflow=self.workflow.id, node_id=node_id)
        return self._subgraphs.get(node_id)

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


def _malformed(workflow: object, error: ValidationError | None) -> Exception:
    if error is None:
        return TypeError(f"analyze() needs a Workflow or its JSON mapping, got {type(workflow).__name__}")
    problems = [
        Diagnostic("document.invalid", "error", None, ".".join(str(p) for p in e["loc"]) or None,
                   e["msg"], "fix the document so that it matches the workflow format")
        for e in error.errors()
    ]
    return WorkflowValidationError(f"the workflow document is malformed: {problems[0].message}", diagnostics=problems)


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
                    _task_hint(node.task, registry)))
    return out


def _task_hint(name: str, registry: Any) -> str:
    names = registry.names() if hasattr(registry, "names") else ()
    close = difflib.get_close_matches(name, list(names), n=3)
    if close:
        return f"did you mean {' or '.join(repr(c) for c in close)}? Pick a task from the catalogue, or register it"
    return "pick a task from the catalogue (check the spelling), or register it with @registry.task"


def _route_labels(workflow: Workflow, routes: Mapping[str, Mapping[str, str]],
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
        if isinstance(node, ForeachNode) and "loop" not in routes.get(node.id, {}):
            out.append(Diagnostic(
                "region.no_return", "error", node.id, "routes.loop",
                f"foreach {node.id!r} has no loop route, so its items have no body to run and never return",
                f"add a route {node.id!r} --loop--> the first node of the body, and route the body back to "
                f"{node.id!r}"))
    return out


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


def _payload_schema(node: object, spec: Any | None, child: Workflow | None,
                    prepare: S.Prepared) -> Schema | None:
    if isinstance(node, TaskNode) and spec is not None:
        return prepare(spec.input_schema)
    if isinstance(node, SubgraphNode) and child is not None:
        return prepare(child.input_schema)
    return None


def _item_result(foreach_id: str, nodes: Mapping[str, object], routes: Mapping[str, Mapping[str, str]],
                 regions: Regions, results: Mapping[str, Schema]) -> Schema:
    """What one item of a foreach leaves as its result: the payload of a node routing back to the foreach.

    Each back-edge contributes the result of its source (the error payload on an
    ``error`` route; null from a branch, which produces no result; an inner
    foreach's ``done`` gives its own result list, or null when it collects none).
    """
    options: list[Schema] = []
    for source, by_label in routes.items():
        stack = regions.stacks.get(source)
        if not stack or stack[-1] != foreach_id:
            continue
        for label, target in by_label.items():
            if target != foreach_id:
                continue
            node = nodes.get(source)
            if label == "error":
                options.append(ERROR_PAYLOAD_SCHEMA)
            elif isinstance(node, BranchNode):
                options.append(S.NULL)
            elif isinstance(node, ForeachNode):  # an inner foreach's result is its result list, if it collects
                options.append(S.NULL if node.results is None else
                               S.array_of(_item_result(source, nodes, routes, regions, results)))
            else:
                options.append(results.get(source, S.ANY))
    return S.union(options) if options else S.ANY


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
    references (anything ``runtime._resolver.as_resolver`` accepts); child
    workflows are analyzed in their own scope, and their errors are repeated
    on the calling subgraph node.
    """
    session = _Session(registry, as_resolver(workflows))
    document = coerce_workflow(workflow, lambda error: _malformed(workflow, error))
    return session.analyze(document, (), frozenset(), frozenset())


class _Session:
    """One top-level ``analyze`` call: the registry, the resolver and the child analyses done so far."""

    def __init__(self, registry: Any | None, resolver: WorkflowResolver) -> None:
        self.registry = registry
        self.resolver = resolver
        self.children: dict[tuple[int, tuple[str, ...], frozenset[str], frozenset[str]], Analysis] = {}
        self.keep: list[Workflow] = []  # keeps resolved documents alive so their ids stay unique
        self.prepare = S.Prepared()
        self.fits = S.FitCache()
        self._label_sets: dict[LabelSet, LabelSet] = {}

    def label_set(self, labels: LabelSet) -> LabelSet:
        """One shared LabelSet per distinct value (thousands of task nodes share a handful)."""
        return self._label_sets.setdefault(labels, labels)

    def analyze(self, doc: Workflow, chain: tuple[str, ...], caller_foreach: frozenset[str],
                caller_aliases: frozenset[str]) -> Analysis:
        nodes: dict[str, Any] = {}
        for node in doc.nodes:
            nodes.setdefault(node.id, node)
        routes: dict[str, dict[str, str]] = {}
        for route in doc.routes:
            if route.source in nodes:
                routes.setdefault(route.source, {}).setdefault(route.label, route.target)
        specs = {node_id: spec for node_id, node in nodes.items()
                 if (spec := _spec_of(self.registry, node)) is not None}
        labels = {node_id: self.label_set(labels_of(node, specs.get(node_id))) for node_id, node in nodes.items()}
        regions = compute_regions(doc, nodes, routes, labels)
        diagnostics = _structure(doc, nodes, self.registry, specs)
        diagnostics += schema_diagnostics(doc)
        diagnostics += _route_labels(doc, routes, labels)
        diagnostics += _unreachable(doc, regions.stacks) if doc.nodes else []
        diagnostics += regions.diagnostics
        diagnostics += no_exit_diagnostics(doc, nodes, routes, labels, regions.stacks)
        diagnostics += _aliases(doc, nodes, regions.stacks)
        diagnostics += batch_diagnostics(doc, nodes, regions.stacks)
        overwritten = list(concurrent_writes(doc, nodes, regions.stacks))
        diagnostics += concurrent_write_diagnostics(nodes, overwritten)

        foreach_nodes = {nid: n for nid, n in nodes.items() if isinstance(n, ForeachNode)}
        inner_foreach = caller_foreach | frozenset(foreach_nodes)
        inner_aliases = caller_aliases | frozenset(n.as_ for n in foreach_nodes.values() if n.as_)
        subgraphs: dict[str, Analysis] = {}
        child_docs: dict[str, Workflow] = {}
        for node_id, node in nodes.items():
            if isinstance(node, SubgraphNode):
                found = self.child(doc, node, (*chain, doc.id), inner_foreach, inner_aliases, diagnostics)
                if found is not None:
                    child_docs[node_id], subgraphs[node_id] = found

        checker = Checker(doc, regions.stacks, self.fits)
        declared_state = self.prepare(doc.state_schema)
        writes = StateWrites(declared_state)
        facts = _FactTable(nodes, labels, {}, {})
        for node_id, node in nodes.items():
            child = subgraphs.get(node_id)
            spec = specs.get(node_id)
            result = result_schema(node, spec, child.output_schema if child else None, self.prepare)
            facts.results[node_id] = result
            facts.payloads[node_id] = _payload_schema(node, spec, child_docs.get(node_id), self.prepare)
            bindings = getattr(node, "output", None)
            if bindings:
                error = ERROR_PAYLOAD_SCHEMA if "error" in routes.get(node_id, ()) else None
                checker.writes(node_id, bindings, result, declared_state, writes, error)
        for foreach_id, foreach in foreach_nodes.items():
            if foreach.results is not None:
                collected = S.array_of(_item_result(foreach_id, nodes, routes, regions, facts.results))
                whole = OutputBinding(source=parse_local_path("."), target=foreach.results)
                checker.writes(foreach_id, [whole], collected, declared_state, writes, field="results")
        view = writes.view(declared_state)
        scope = Scope(doc.id, foreach_nodes, frozenset(nodes) - frozenset(foreach_nodes), regions.stacks,
                      self.prepare(doc.input_schema), view.schema, caller_foreach, caller_aliases)
        # built before the checks (it is lazy) so a foreach hint can name the lists its node could iterate
        options = OptionIndex(scope, {n.id: n.title for n in foreach_nodes.values()}, view.writers,
                              last_item_wins(nodes, overwritten))
        for node_id, node in nodes.items():
            stack = regions.stacks.get(node_id)
            if isinstance(node, TaskNode):
                checker.inputs(scope, node_id, stack, node.input, facts.payloads[node_id],
                               f"task {node.task!r}")
            elif isinstance(node, SubgraphNode):
                checker.inputs(scope, node_id, stack, node.input, facts.payloads[node_id],
                               f"workflow {node.workflow.id!r}")
            elif isinstance(node, InterruptNode):
                checker.inputs(scope, node_id, stack, node.input, None, f"interrupt {node_id!r}")
            elif isinstance(node, ForeachNode):
                checker.foreach(scope, node, stack, options)
            elif isinstance(node, BranchNode):
                checker.branch(scope, node, stack)
        projected = []
        for output in doc.outputs:
            schema = checker.read(scope, None, f"outputs.{output.target}", output.path, ())
            projected.append((output, schema if schema is not None else S.ANY))
        diagnostics += checker.out
        return Analysis(doc, regions, diagnostics, scope, options, output_schema(projected), subgraphs, facts)

    def child(self, doc: Workflow, node: SubgraphNode, chain: tuple[str, ...], caller_foreach: frozenset[str],
              caller_aliases: frozenset[str], diagnostics: list[Diagnostic]) -> tuple[Workflow, Analysis] | None:
        ref = node.workflow
        shown = ref.id if ref.version is None else f"{ref.id} v{ref.version}"
        if ref.id in chain:
            cycle = " -> ".join((*chain[chain.index(ref.id):], ref.id))
            diagnostics.append(Diagnostic(
                "subgraph.recursion", "error", node.id, "workflow",
                f"subgraph {node.id!r} runs workflow {shown!r}, which is already running further up: {cycle}",
                "break the cycle: a workflow may not (directly or indirectly) run itself as a subgraph"))
            return None
        try:
            child_doc = self.resolver.resolve(ref)
        except WorkflowError as error:
            diagnostics.append(Diagnostic(
                "subgraph.unknown_workflow", "error", node.id, "workflow",
                f"subgraph {node.id!r} runs workflow {shown!r}, which cannot be found: {error.message}",
                "pick a saved workflow (and an existing version), or publish the one you mean"))
            return None
        key = (id(child_doc), chain, caller_foreach, caller_aliases)
        analysis = self.children.get(key)
        if analysis is None:
            self.keep.append(child_doc)
            analysis = self.analyze(child_doc, chain, caller_foreach, caller_aliases)
            self.children[key] = analysis
        for problem in analysis.errors:
            where = f"node {problem.node_id!r}" if problem.node_id else "the workflow"
            diagnostics.append(Diagnostic(
                problem.code, "error", node.id, "workflow",
                f"in subgraph workflow {child_doc.id!r}, {where}"
                f"{' (' + problem.field + ')' if problem.field else ''}: {problem.message}", problem.hint))
        return child_doc, analysis

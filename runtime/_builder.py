"""``WorkflowBuilder``: the Python authoring surface that produces a ``Workflow`` document.

The builder adds no second model: the node it returns *is* the document's node
model, so ``graph.set_route(orders, "loop", charge)`` and
``{"target": "order", "path": orders.item}`` work with what ``foreach()`` and
``use()`` hand back. Whatever the builder accepts it turns into ordinary
protocol data; ``build()`` validates the whole document and returns a copy, so
later edits to the builder never leak into a workflow already built.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from runtime._document import (
    BranchCase,
    BranchNode,
    ForeachNode,
    InputBinding,
    InterruptNode,
    OutputBinding,
    RetryPolicy,
    SubgraphNode,
    TaskNode,
    Workflow,
    WorkflowOutput,
    WorkflowRef,
    WorkflowRoute,
)
from runtime._errors import WorkflowBuildError
from runtime._paths import GraphSourcePath, LocalPath, StatePath
from runtime._registry import TaskSpec, spec_of
from runtime._task_schema import json_schema_of

AnyNode = TaskNode | ForeachNode | SubgraphNode | BranchNode | InterruptNode
NodeRef = AnyNode | str
BindingLike = InputBinding | Mapping[str, Any]
OutputLike = OutputBinding | Mapping[str, Any]
SchemaLike = Mapping[str, Any] | type[BaseModel]

_NODE_TYPES = (TaskNode, ForeachNode, SubgraphNode, BranchNode, InterruptNode)


def schema_from(schema: SchemaLike | None, what: str) -> dict[str, Any] | None:
    """A JSON Schema dict from a dict or a pydantic model class (``$defs`` inlined)."""
    if schema is None:
        return None
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return json_schema_of(schema)
    if isinstance(schema, Mapping):
        return dict(schema)
    raise WorkflowBuildError(
        f"{what} must be a JSON Schema dict or a pydantic model class, got {type(schema).__name__}"
    )


def _make[M: BaseModel](model: type[M], where: str, /, **data: Any) -> M:
    """Validate one model, turning pydantic's error into a ``WorkflowBuildError``.

    ``where`` prefixes the message unless pydantic's messages already name the node.
    """
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        lines = []
        for error in exc.errors():
            message = error["msg"].removeprefix("Value error, ")
            loc = ".".join(str(p) for p in error["loc"])
            lines.append(f"{message} (at {loc})" if loc else message)
        prefix = "" if all(line.startswith("node ") for line in lines) else f"{where}: "
        raise WorkflowBuildError(
            prefix + "; ".join(lines),
            errors=[{"loc": list(e["loc"]), "message": e["msg"], "type": e["type"]} for e in exc.errors()],
        ) from None


def _list(items: Iterable[Any] | None, what: str) -> list[Any]:
    if items is None:
        return []
    if isinstance(items, (str, bytes, Mapping, BaseModel)):
        raise WorkflowBuildError(f"{what} must be a list of bindings, got a single {type(items).__name__}")
    return list(items)


class WorkflowBuilder:
    """Collects nodes, routes and outputs, then ``build()``s a validated ``Workflow``."""

    def __init__(
        self,
        id: str,
        name: str = "",
        *,
        description: str = "",
        input_schema: SchemaLike | None = None,
        state_schema: SchemaLike | None = None,
        metadata: Mapping[str, Any] | None = None,
        step_timeout_seconds: float | None = None,
        run_timeout_seconds: float | None = None,
        run_step_seconds: float | None = None,
    ) -> None:
        self.id = id
        # Only the limits given go into the document: an absent one is the engine's default, not None.
        self._limits = {key: value for key, value in (("step_timeout_seconds", step_timeout_seconds),
                                                       ("run_timeout_seconds", run_timeout_seconds),
                                                       ("run_step_seconds", run_step_seconds)) if value is not None}
        self.name = name
        self.description = description
        self.input_schema = schema_from(input_schema, "input_schema")
        self.state_schema = schema_from(state_schema, "state_schema")
        self.metadata: dict[str, Any] = dict(metadata or {})
        self._nodes: dict[str, AnyNode] = {}
        self._routes: dict[tuple[str, str], str] = {}
        self._outputs: list[WorkflowOutput] = []
        self._start: str | None = None

    # -- nodes --------------------------------------------------------------------------------------

    @property
    def nodes(self) -> tuple[AnyNode, ...]:
        return tuple(self._nodes.values())

    def add[M: BaseModel](self, node: M) -> M:
        """Add a node model built elsewhere; its id must be new."""
        if not isinstance(node, _NODE_TYPES):
            raise WorkflowBuildError(f"cannot add a {type(node).__name__}: expected a node model")
        if node.id in self._nodes:
            raise WorkflowBuildError(
                f"node id {node.id!r} is already used in workflow {self.id!r}; node ids must be unique",
                node_id=node.id,
            )
        self._nodes[node.id] = node
        return node

    def use(
        self,
        task: TaskSpec | str | Any,
        id: str | None = None,
        *,
        input: Sequence[BindingLike] | None = None,
        output: Sequence[OutputLike] | None = None,
        retry: RetryPolicy | Mapping[str, Any] | None = None,
        name: str | None = None,
        description: str = "",
        timeout_seconds: float | None = None,
    ) -> TaskNode:
        """A task node; ``task`` is a ``TaskSpec``, a function decorated with ``@task`` or a task name."""
        task_name = self._task_name(task)
        node_id = id if id is not None else self._unique_id(task_name)
        where = f"node {node_id!r}"
        return self.add(_make(
            TaskNode, where, id=node_id, name=name, description=description, task=task_name,
            input=self._bindings(input, where), output=self._outputs_of(output, where), retry=retry,
            timeout_seconds=timeout_seconds,
        ))

    def foreach(
        self,
        id: str,
        over: GraphSourcePath | str,
        *,
        as_: str | None = None,
        max_concurrency: int = 1,
        results: StatePath | str | None = None,
        name: str | None = None,
        description: str = "",
        batch_size: int | None = None,
        max_batches_in_flight: int | None = None,
        tolerated_failure_count: int | None = None,
        tolerated_failure_percentage: float | None = None,
    ) -> ForeachNode:
        """A foreach node; its ``.item`` and ``.index`` are the paths its body reads.

        ``results`` names a state field that receives every item's result, in index order, when it is done.
        ``batch_size`` and ``max_batches_in_flight`` let a host run the items as distributed batches; the
        ``tolerated_failure_*`` settings let that many failed items pass (see ``ForeachNode``).
        """
        return self.add(_make(
            ForeachNode, f"foreach {id!r}", id=id, over=over, as_=as_, max_concurrency=max_concurrency,
            results=results, name=name, description=description, batch_size=batch_size,
            max_batches_in_flight=max_batches_in_flight, tolerated_failure_count=tolerated_failure_count,
            tolerated_failure_percentage=tolerated_failure_percentage,
        ))

    def subgraph(
        self,
        workflow: Workflow | WorkflowRef | str,
        id: str | None = None,
        *,
        version: int | None = None,
        input: Sequence[BindingLike] | None = None,
        output: Sequence[OutputLike] | None = None,
        name: str | None = None,
        description: str = "",
    ) -> SubgraphNode:
        """A node that runs a saved child workflow in its own runtime scope."""
        ref = self._ref(workflow, version)
        node_id = id if id is not None else self._unique_id(ref.id)
        where = f"subgraph {node_id!r}"
        return self.add(_make(
            SubgraphNode, where, id=node_id, workflow=ref, name=name, description=description,
            input=self._bindings(input, where), output=self._outputs_of(output, where),
        ))

    def branch(
        self,
        id: str,
        path: GraphSourcePath | str,
        cases: Sequence[BranchCase | Mapping[str, Any]] = (),
        *,
        default_label: str = "default",
        name: str | None = None,
        description: str = "",
    ) -> BranchNode:
        """A node that routes by comparing the value at ``path`` with ``cases`` in order."""
        return self.add(_make(
            BranchNode, f"branch {id!r}", id=id, path=path, cases=_list(cases, "cases"),
            default_label=default_label, name=name, description=description,
        ))

    def interrupt(
        self,
        id: str,
        *,
        prompt: str = "",
        resume_schema: SchemaLike | None = None,
        labels: Sequence[str] = ("ok",),
        input: Sequence[BindingLike] | None = None,
        output: Sequence[OutputLike] | None = None,
        name: str | None = None,
        description: str = "",
    ) -> InterruptNode:
        """A node that pauses the run until a value matching ``resume_schema`` is supplied."""
        where = f"interrupt {id!r}"
        data: dict[str, Any] = {}
        schema = schema_from(resume_schema, "resume_schema")
        if schema is not None:
            data["resume_schema"] = schema
        if isinstance(labels, str):
            raise WorkflowBuildError(f"{where}: labels must be a list of strings, got the string {labels!r}")
        return self.add(_make(
            InterruptNode, where, id=id, prompt=prompt, labels=list(labels), name=name,
            description=description, input=self._bindings(input, where),
            output=self._outputs_of(output, where), **data,
        ))

    # -- wiring -------------------------------------------------------------------------------------

    def set_route(self, source: NodeRef, label: str, target: NodeRef) -> WorkflowRoute:
        """Route ``source``'s ``label`` to ``target``; nodes may be given as models or ids."""
        source_id, target_id = self._id_of(source), self._id_of(target)
        existing = self._routes.get((source_id, label))
        if existing is not None:
            raise WorkflowBuildError(
                f"node {source_id!r} already routes label {label!r} to {existing!r}; a label leads to one node",
                node_id=source_id, label=label,
            )
        route = _make(WorkflowRoute, f"route {source_id!r} --{label}-->", source=source_id, label=label,
                      target=target_id)
        self._routes[(source_id, label)] = target_id
        return route

    def chain(self, first: NodeRef, *hops: NodeRef) -> list[WorkflowRoute]:
        """Route a path in one call: ``chain(each, "loop", body, "ok", each)`` is ``set_route(each, "loop", body)``
        then ``set_route(body, "ok", each)``. ``hops`` alternate a label and the node it leads to; a route
        refused (a label already routed) stops the chain there, with the routes before it kept, as with
        ``set_route`` one at a time.
        """
        if not hops or len(hops) % 2:
            end = f"ends on label {hops[-1]!r} with no node after it" if hops else "needs a label and a node"
            raise WorkflowBuildError(f"chain from {self._id_of(first)!r} {end}", node_id=self._id_of(first))
        routes: list[WorkflowRoute] = []
        source = first
        for label, target in zip(hops[::2], hops[1::2], strict=True):
            if not isinstance(label, str):
                raise WorkflowBuildError(f"chain: a label must be a string, got a {type(label).__name__}",
                                         node_id=self._id_of(source))
            routes.append(self.set_route(source, label, target))
            source = target
        return routes

    def set_start(self, node: NodeRef) -> None:
        """Start at ``node`` instead of the first node added."""
        self._start = self._id_of(node)

    def output(self, target: LocalPath | str, path: GraphSourcePath | str) -> WorkflowOutput:
        """Project ``path`` into field ``target`` of the workflow's output payload."""
        projected = _make(WorkflowOutput, f"workflow output {str(target)!r}", target=target, path=path)
        self._outputs.append(projected)
        return projected

    def build(self) -> Workflow:
        """The validated document. Nodes are copied so the builder can keep changing."""
        data: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "nodes": [node.model_copy(deep=True) for node in self._nodes.values()],
            "routes": [WorkflowRoute(source=s, label=label, target=t) for (s, label), t in self._routes.items()],
            "outputs": [o.model_copy(deep=True) for o in self._outputs],
            "metadata": dict(self.metadata),
        }
        if self.input_schema is not None:
            data["input_schema"] = self.input_schema
        if self.state_schema is not None:
            data["state_schema"] = self.state_schema
        start = self._start if self._start is not None else next(iter(self._nodes), None)
        if start is not None:
            data["start"] = start
        data.update(self._limits)
        return _make(Workflow, f"workflow {self.id!r}", **data)

    # -- helpers ------------------------------------------------------------------------------------

    def _id_of(self, node: object) -> str:
        if isinstance(node, str):
            return node
        if isinstance(node, _NODE_TYPES):
            if self._nodes.get(node.id) is not node:
                raise WorkflowBuildError(
                    f"node {node.id!r} was not added to workflow {self.id!r}; pass its id or add it first",
                    node_id=node.id,
                )
            return node.id
        raise WorkflowBuildError(f"expected a node or a node id, got {type(node).__name__}")

    def _unique_id(self, base: str) -> str:
        if base not in self._nodes:
            return base
        suffix = 2
        while f"{base}_{suffix}" in self._nodes:
            suffix += 1
        return f"{base}_{suffix}"

    @staticmethod
    def _task_name(task: object) -> str:
        if isinstance(task, TaskSpec):
            return task.name
        if isinstance(task, str):
            return task
        spec = spec_of(task)
        if spec is not None:
            return spec.name
        shown = getattr(task, "__qualname__", type(task).__name__)
        raise WorkflowBuildError(
            f"{shown} is not a registered task: decorate it with @task (or registry.task), "
            f"or pass its TaskSpec or task name"
        )

    @staticmethod
    def _ref(workflow: object, version: int | None) -> WorkflowRef:
        if isinstance(workflow, Workflow):
            return WorkflowRef(id=workflow.id, version=version)
        if isinstance(workflow, WorkflowRef):
            if version is not None and workflow.version is not None and version != workflow.version:
                raise WorkflowBuildError(
                    f"subgraph reference {workflow.id!r} pins version {workflow.version} but version={version} "
                    f"was also given"
                )
            return workflow if version is None else workflow.model_copy(update={"version": version})
        if isinstance(workflow, str):
            return _make(WorkflowRef, f"subgraph workflow {workflow!r}", id=workflow, version=version)
        raise WorkflowBuildError(
            f"subgraph workflow must be a Workflow, a WorkflowRef or a workflow id, got {type(workflow).__name__}"
        )

    @staticmethod
    def _bindings(items: Sequence[BindingLike] | None, where: str) -> list[Any]:
        return _list(items, f"{where}: input")

    @staticmethod
    def _outputs_of(items: Sequence[OutputLike] | None, where: str) -> list[Any]:
        return _list(items, f"{where}: output")

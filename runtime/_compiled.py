"""A workflow prepared for execution: lookups, task specs and schema validators built once.

The engine compiles each workflow document once (cached per document object)
so that the per-step work is dictionary lookups, not scans over the document.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import referencing
import referencing.exceptions
from jsonschema import exceptions as jsonschema_exceptions
from pydantic_core import to_jsonable_python

from runtime._bindings import flat_reads, payload_order
from runtime._document import InputBinding, Node, TaskNode, Workflow, WorkflowRef
from runtime._errors import InputValidationError
from runtime._paths import GraphSourcePath, LocalPath, is_item_index
from runtime._registry import TIMER_ATTRIBUTE, TaskRegistry, TaskSpec
from runtime._schema_check import SchemaDefect, dialect_of, schema_defects
from runtime._schema_patterns import (
    PatternRefused,
    PatternTooExpensive,
    ValidationTooExpensive,
    validation_budget,
)
from runtime._steps import step_timeout

#: Schemas come from workflow documents, i.e. from users. Without an explicit registry jsonschema
#: fetches any ``$ref`` it cannot resolve locally with urllib (``http://`` into the server's own
#: network, ``file://``), so a document could make the server issue requests. An empty registry
#: leaves only references inside the schema itself (``schema_defects`` refuses any other $ref
#: before a validator is built; this registry is the second line).
_LOCAL_REFS_ONLY: referencing.Registry[Any] = referencing.Registry()


@dataclass(frozen=True, slots=True)
class AnyObject:
    """Stands in for a validator when the schema asks nothing of an object but to be one.

    The default input schema (``{"type": "object", "properties": {}}``) and schemas that only name and
    describe their properties are common; jsonschema's walk over them costs several microseconds a call,
    paid at every run start and every subgraph call, to learn nothing.
    """


ANY_OBJECT = AnyObject()

#: Keywords that describe a value without constraining it (``default`` is filled in, not checked, here).
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment", "deprecated", "readOnly",
                          "writeOnly"})


def _only_an_object(body: Mapping[str, Any]) -> bool:
    """Whether ``body`` (a schema without ``$schema``) accepts every JSON object."""
    if body.get("type") != "object" or not body.keys() <= _ANNOTATIONS | {"type", "properties"}:
        return False
    properties = body.get("properties", {})
    return isinstance(properties, Mapping) and all(
        isinstance(prop, Mapping) and prop.keys() <= _ANNOTATIONS for prop in properties.values())


@dataclass(frozen=True, slots=True)
class UnusableSchema:
    """Stands in for a validator when the schema itself is broken: every value is refused, saying why."""

    defects: tuple[SchemaDefect, ...]


def schema_validator(schema: Mapping[str, Any]) -> Any:
    """A validator for a document's ``schema``, or ``UnusableSchema`` when it cannot be used.

    Draft chosen by ``$schema`` (2020-12 by default); patterns are matched with a time limit
    (``_schema_patterns``), and only ``$ref``s inside the schema resolve.
    """
    # A default that breaks its own schema is the analyzer's error (schema.invalid); validation itself
    # is still sound (a filled-in bad default is refused like any bad value), so it does not stop a run.
    defects = tuple(defect for defect in schema_defects(schema) if defect.kind != "default")
    dialect = dialect_of(schema)
    if defects or dialect is None:
        return UnusableSchema(defects)
    # jsonschema switches to its stock class for any subschema carrying $schema (a $ref to "#"
    # reaches the root again), which would bypass the time limit: the draft is already chosen.
    body = {key: value for key, value in schema.items() if key != "$schema"}
    if _only_an_object(body):
        return ANY_OBJECT
    return dialect.timed(body, registry=_LOCAL_REFS_ONLY)


def schema_problems(validator: Any, value: Any) -> list[dict[str, Any]]:
    """Every way ``value`` violates the validator's schema, each with a location and a message."""
    if validator is ANY_OBJECT:
        return [] if isinstance(value, dict) else [{"field": "", "message": f"{value!r} is not of type 'object'"}]
    if isinstance(validator, UnusableSchema):
        return [{"field": "", "message": f"the schema is unusable: {defect.message} (at {defect.where})"}
                for defect in validator.defects[:5]]
    try:
        with validation_budget():
            errors = sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path])
    except PatternTooExpensive as exc:
        # Abandoned, not answered: a timeout inside `not`/`anyOf` must not count as "doesn't match".
        # propertyNames matches a name as a string value, so look among names when no value fits.
        field = _locate(value, exc.text, is_key=exc.is_key) or _locate(value, exc.text, is_key=not exc.is_key)
        return [{"field": field, "message": exc.message}]
    except ValidationTooExpensive as exc:
        return [{"field": "", "message": exc.message}]
    except PatternRefused as exc:
        return [{"field": "", "message": f"the schema is unusable: the pattern {exc.problem}"}]
    except jsonschema_exceptions.SchemaError as exc:  # the document's schema itself is broken
        return [{"field": "", "message": f"the schema is invalid: {exc.message}"}]
    except referencing.exceptions.Unresolvable as exc:  # schema_defects reports these first
        return [{"field": "", "message": f"the schema's $ref {getattr(exc, 'ref', '')!r} cannot be resolved: a "
                                         f"$ref may only point inside the schema itself"}]
    except RecursionError:  # schema_defects reports $ref cycles first; a very deep value can still get here
        return [{"field": "", "message": "the value is nested too deeply to validate against the schema"}]
    return [
        {"field": ".".join(str(p) for p in error.absolute_path), "message": error.message}
        for error in errors[:20]
    ]


def _locate(value: Any, text: str, *, is_key: bool) -> str:
    """The dotted location of the first string (or property name) ``text`` inside ``value``; "" if none."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(value, ())]
    while stack:
        current, path = stack.pop()
        if not is_key and current == text and isinstance(current, str):
            return ".".join(path)
        if isinstance(current, Mapping):
            if is_key and text in current:
                return ".".join((*path, text))
            stack.extend((item, (*path, str(key))) for key, item in reversed(list(current.items())))
        elif isinstance(current, list):
            stack.extend((item, (*path, str(index))) for index, item in reversed(list(enumerate(current))))
    return ""


def with_defaults(schema: Mapping[str, Any], value: dict[str, Any]) -> dict[str, Any]:
    """``value`` with the schema's top-level property defaults filled in where absent."""
    properties = schema.get("properties")
    # A document's objects are FrozenDicts, so the dict check answers first: the Mapping ABC's is slow.
    if not (isinstance(properties, dict) or isinstance(properties, Mapping)):
        return value
    filled = value
    for name, prop in properties.items():
        if name not in value and (isinstance(prop, dict) or isinstance(prop, Mapping)) and "default" in prop:
            if filled is value:
                filled = dict(value)
            default = prop["default"]
            # A copy keeps one run's writes out of the document; a scalar cannot be written to.
            filled[name] = default if type(default) in _SCALARS else copy.deepcopy(default)
    return filled


_SCALARS = frozenset({int, float, str, bool, type(None)})


def check_payload(schema: Mapping[str, Any], validator: Any, value: Any, *, what: str,
                  **details: Any) -> dict[str, Any]:
    """A JSON-compatible object payload, defaults filled, valid against ``schema``; else InputValidationError."""
    if value is None:
        value = {}
    try:
        value = to_jsonable_python(value)
    except ValueError as exc:  # nested too deeply, or not JSON data at all
        raise InputValidationError(f"{what} is not usable JSON data: {exc}",
                                   errors=[{"field": "", "message": str(exc)}], **details) from None
    if not isinstance(value, dict):
        raise InputValidationError(f"{what} must be a JSON object, got {type(value).__name__}",
                                   errors=[{"field": "", "message": "not an object"}], **details)
    value = with_defaults(schema, value)
    problems = schema_problems(validator, value)
    if problems:
        shown = "; ".join(f"{p['field'] or '(root)'}: {p['message']}" for p in problems[:5])
        raise InputValidationError(f"{what} is invalid: {shown}", errors=problems, **details)
    checked: dict[str, Any] = value
    return checked


@dataclass(frozen=True, slots=True)
class CompiledTask:
    """What every step of one task node needs that never changes, looked up once instead of at each step."""

    spec: TaskSpec
    #: The input field holding the seconds when the task only waits (``TIMER_ATTRIBUTE``), else None.
    timer: str | None
    #: The node's step timeout, else the task's, else the workflow's (``step_timeout``; the engine's cap applies
    #: on top, per run).
    timeout: float | None
    #: Whether a binding of the node names a secret (revealed for each step, runtime._secrets).
    secrets: bool = False
    #: The node's input bindings in the order the payload is built (``payload_order``).
    inputs: Sequence[InputBinding] = ()
    #: ``flat_reads(inputs)``: set when the payload is an object of top-level fields each read from a path.
    flat: tuple[tuple[str, GraphSourcePath], ...] | None = None


@dataclass(frozen=True, slots=True, eq=False)
class CompiledWorkflow:
    workflow: Workflow
    nodes: Mapping[str, Node]
    routes: Mapping[str, Mapping[str, str]]
    specs: Mapping[str, TaskSpec]
    start: str | None
    outputs: tuple[tuple[LocalPath, GraphSourcePath], ...]
    tasks: Mapping[str, CompiledTask] = field(default_factory=dict)
    #: The reference a run of this workflow (or its root scope) names it by; one per plan, as it is frozen.
    ref: WorkflowRef | None = None
    _validators: dict[str, Any] = field(default_factory=dict, repr=False)
    #: ``check_input(None)`` and ``initial_state()`` as compiling found them, when they are objects of scalars
    #: (None otherwise, and for an input no input can satisfy): a run copies one instead of filling defaults and
    #: validating again what cannot have changed (two of a one-node run's thirty microseconds, issue 33).
    _no_input: dict[str, Any] | None = field(default=None, repr=False)
    _initial_state: dict[str, Any] | None = field(default=None, repr=False)
    #: ``(field, path)`` of each output when every output is a top-level field of the result (the shape of nearly
    #: every document's outputs): the result is then built as ``build_flat_payload`` builds a task's payload.
    flat_outputs: tuple[tuple[str, GraphSourcePath], ...] | None = None

    @property
    def id(self) -> str:
        return self.workflow.id

    def validator(self, key: str, schema: Mapping[str, Any]) -> Any:
        """A cached validator; ``key`` names which schema of this document it checks."""
        found = self._validators.get(key)
        if found is None:
            found = self._validators[key] = schema_validator(schema)
        return found

    def check_input(self, value: Any, *, what: str = "workflow input", **details: Any) -> dict[str, Any]:
        if value is None and self._no_input is not None:
            return dict(self._no_input)  # a new object each run: a run's input is its own
        schema = self.workflow.input_schema
        return check_payload(schema, self.validator("input", schema), value, what=what,
                             workflow_id=self.workflow.id, **details)

    def initial_state(self) -> dict[str, Any]:
        if self._initial_state is not None:
            return dict(self._initial_state)
        return with_defaults(self.workflow.state_schema, {})

    def target(self, node_id: str, label: str) -> str | None:
        return self.routes.get(node_id, {}).get(label)


def compile_workflow(workflow: Workflow, registry: TaskRegistry) -> CompiledWorkflow:
    routes: dict[str, dict[str, str]] = {}
    for route in workflow.routes:
        routes.setdefault(route.source, {})[route.label] = route.target
    specs = {node.id: registry.get(node.task) for node in workflow.nodes if isinstance(node, TaskNode)}
    tasks = {node.id: CompiledTask(spec=specs[node.id], timer=getattr(specs[node.id].fn, TIMER_ATTRIBUTE, None),
                                   timeout=step_timeout(node, specs[node.id], workflow, None),
                                   secrets=any(binding.secret is not None for binding in node.input),
                                   inputs=payload_order(node.input), flat=flat_reads(payload_order(node.input)))
             for node in workflow.nodes if isinstance(node, TaskNode)}
    # Every run (and every call of a subgraph) checks its input: the validator is built with the plan, not by the
    # first run, which paid for it (a few hundred microseconds, an engine made for a run and compiled first paid
    # it in that run).
    validator = schema_validator(workflow.input_schema)
    try:
        no_input = _scalars_only(check_payload(workflow.input_schema, validator, None, what="workflow input"))
    except InputValidationError:  # a run without input is refused: each such run goes on finding out why
        no_input = None
    return CompiledWorkflow(
        workflow=workflow,
        nodes=workflow.node_map(),
        routes=routes,
        specs=specs,
        start=workflow.start_node,
        outputs=tuple((out.target, out.path) for out in workflow.outputs),
        tasks=tasks,
        ref=WorkflowRef(id=workflow.id),
        flat_outputs=_flat_outputs(workflow),
        _validators={"input": validator},
        _no_input=no_input,
        _initial_state=_scalars_only(with_defaults(workflow.state_schema, {})),
    )


def _flat_outputs(workflow: Workflow) -> tuple[tuple[str, GraphSourcePath], ...] | None:
    """What ``project`` reads for the workflow's outputs when each is one top-level field (not an array item), in
    its order; else None."""
    reads = []
    for out in workflow.outputs:
        parts = out.target.parts
        if len(parts) != 1 or is_item_index(parts[0]):
            return None
        reads.append((parts[0], out.path))
    return tuple(reads)


def _scalars_only(value: dict[str, Any]) -> dict[str, Any] | None:
    """``value`` when a shallow copy of it is as good as computing it again (every value a scalar, none to share)."""
    return value if all(type(item) in _SCALARS for item in value.values()) else None

"""The workflow document: protocol data that the designer stores and the engine runs.

These are pydantic models because they cross boundaries (JSON files, the
database, the API). A document must survive ``model_dump(mode="json")`` ->
JSON -> ``model_validate`` unchanged; paths serialize as their TOML strings.
Structural mistakes that make a document meaningless (duplicate node ids, a
route to nowhere, a binding with both a path and a value) are refused here;
everything that needs schemas or the task registry is the analyzer's job.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, Self, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PlainSerializer,
    SerializerFunctionWrapHandler,
    ValidationError,
    WithJsonSchema,
    model_serializer,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from runtime._document_json import FrozenDict, FrozenList, freeze
from runtime._paths import (
    GraphSourcePath,
    LocalPath,
    StatePath,
    context_path,
    format_key,
    is_item_index,
    parse_local_path,
    parse_source_path,
    parse_state_path,
)
from runtime._secrets import PLACEHOLDER, SECRET_NAME

SCHEMA_VERSION: Final = 1
#: Batches of a distributed foreach that run at once when its node does not say.
DEFAULT_BATCHES_IN_FLIGHT: Final = 4


def _coerce(kind: type, parser: Any) -> Any:
    def coerce(value: Any) -> Any:
        if isinstance(value, kind):
            return value
        if isinstance(value, str):
            return parser(value)
        raise ValueError(f"expected a {kind.__name__} or its string form, got {type(value).__name__}")

    return coerce


SourcePathField = Annotated[
    GraphSourcePath,
    BeforeValidator(_coerce(GraphSourcePath, parse_source_path)),
    PlainSerializer(str, return_type=str),
    WithJsonSchema({"type": "string", "description": "graph path: input.…, state.… or context.…"}),
]
StatePathField = Annotated[
    StatePath,
    BeforeValidator(_coerce(StatePath, parse_state_path)),
    PlainSerializer(str, return_type=str),
    WithJsonSchema({"type": "string", "description": "state field to write, e.g. orders"}),
]
LocalPathField = Annotated[
    LocalPath,
    BeforeValidator(_coerce(LocalPath, parse_local_path)),
    PlainSerializer(str, return_type=str),
    WithJsonSchema({"type": "string", "description": "field of a payload; '.' is the whole payload"}),
]

def _printable_id(value: str) -> str:
    # Node ids name trace rows and appear in messages and pages; a control character (NUL above all, which
    # PostgreSQL's text columns refuse) in one would break a run's first save instead of the document's check.
    bad = next((char for char in value if ord(char) < 32 or ord(char) == 127), None)
    if bad is not None:
        raise ValueError(f"a node id may not contain control characters; found {bad!r} in {value!r}")
    return value


NodeId = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_printable_id)]


def _not_a_bool(value: Any) -> Any:
    # A Literal[1] field compares by equality, and True == 1 in Python; JSON (and the published schema) says
    # true is not the number 1, so a boolean version is refused before the literal check sees it.
    if isinstance(value, bool):
        raise PydanticCustomError(
            "version_not_bool",
            "expected the integer 1, got the boolean {value}; write 1 (a version is a number, not true/false)",
            {"value": "true" if value else "false"},
        )
    return value


#: A format version: the integer 1 (never ``true``, which Python would compare equal to 1).
VersionOne = Annotated[Literal[1], BeforeValidator(_not_a_bool)]
JsonSchema = dict[str, Any]


#: A JSON literal stored in a document (``null`` included), its objects and arrays read-only (``_document_json``).
JsonLiteral = Annotated[Any, AfterValidator(freeze)]
if TYPE_CHECKING:
    # To a type checker a Mapping, so an assignment into a document's schema or metadata is an error there too.
    JsonObject = Mapping[str, Any]
else:
    #: A JSON object stored in a document (schemas, metadata), read-only down to its leaves. Validated as a dict
    #: (strict: a Mapping that is not a dict is refused, as before).
    JsonObject = Annotated[dict[str, Any], AfterValidator(freeze)]


_T = TypeVar("_T")


def _as_tuple(value: Sequence[Any]) -> tuple[Any, ...]:
    # A JSON array (or a list built in Python) is held as a tuple: a document's structure cannot be changed in
    # place once it is made, so a plan compiled from it (Engine.compile) can never go stale.
    return value if isinstance(value, tuple) else tuple(value)


#: A list field of a document: any sequence in (a JSON array, a list, a tuple), a tuple held, a JSON array out
#: (and in the JSON Schema).
Items = Annotated[Sequence[_T], AfterValidator(_as_tuple)]


def _empty_object_schema() -> JsonSchema:
    # Defaults are not validated, so they are made read-only here, as a given value is.
    return FrozenDict(type="object", properties=FrozenDict())


def _empty_object() -> JsonSchema:
    return FrozenDict()


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        # As the JSON Schema says: 1 is not true, "3" is not 3 (document_json_schema is what API clients check).
        strict=True,
        # Engine.compile caches a plan per document object: a document must not change once made (derive a
        # changed one with model_copy(update=...)). Its lists are tuples (``Items``) for the same reason.
        frozen=True,
    )

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """As pydantic's (``update`` is taken as given, not validated), except that what is given for one of the
        document's list fields is held as a tuple, and for a JSON field as read-only JSON, like every other."""
        if update:
            held = _held_fields(type(self))
            update = {name: held[name](value) if name in held else value for name, value in update.items()}
        return super().model_copy(update=update, deep=deep)

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Self:
        # A deep copy of a document is a document: its read-only JSON values are shared (deepcopy of one alone
        # gives an ordinary dict/list), the rest is copied as pydantic copies it.
        memo = {} if memo is None else memo
        for name in _held_fields(type(self)):
            value = self.__dict__.get(name)
            if type(value) is FrozenDict or type(value) is FrozenList:
                memo.setdefault(id(value), value)
        return super().__deepcopy__(memo)


def _held_as_tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


@functools.cache
def _held_fields(model: type[BaseModel]) -> dict[str, Any]:
    """Field name -> how ``model_copy`` holds a value given for it, for the tuple and JSON fields of ``model``."""
    held: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        for rule in info.metadata:
            if isinstance(rule, AfterValidator) and rule.func is _as_tuple:
                held[name] = _held_as_tuple
            elif isinstance(rule, AfterValidator) and rule.func is freeze:
                held[name] = freeze
    return held


class InputBinding(_Model):
    """Fills one field of a payload: from a graph path, with a literal JSON value, or with a secret.

    ``value`` may legitimately be ``null``, so "no value" is told apart by
    whether the field was given at all, not by ``None``. A ``secret`` names one
    of the secrets the run is given; ``template`` (optional) places it in a text,
    e.g. ``"Bearer {secret}"``. The secret's value reaches the task only
    (``runtime._secrets``): everywhere else it is shown as ``secret <name>``.
    """

    target: LocalPathField
    path: SourcePathField | None = None
    value: JsonLiteral = None
    secret: Annotated[str, Field(pattern=SECRET_NAME.pattern, description="the name of a secret of the "
                                                                            "workflow's team")] | None = None
    template: Annotated[str, Field(max_length=1000, description="text around the secret, with {secret} where "
                                                                "its value goes, e.g. 'Bearer {secret}'")] | None = None

    @model_validator(mode="after")
    def _exactly_one_source(self) -> InputBinding:
        has_value = "value" in self.model_fields_set
        given = [name for name, there in (("a path", self.path is not None), ("a value", has_value),
                                          ("a secret", self.secret is not None)) if there]
        if len(given) > 1:
            both = "both " if len(given) == 2 else "all of "
            raise ValueError(
                f"binding for {str(self.target)!r} has {both}{' and '.join(given)}; give exactly one"
            )
        if not given:
            raise ValueError(
                f"binding for {str(self.target)!r} has neither a path nor a value; give exactly one"
            )
        if self.template is not None and (self.secret is None or self.template.count(PLACEHOLDER) != 1):
            raise ValueError(
                f"binding for {str(self.target)!r}: a template goes with a secret and holds {PLACEHOLDER} once, "
                f"where the secret's value goes (e.g. 'Bearer {PLACEHOLDER}')"
            )
        return self

    @property
    def is_literal(self) -> bool:
        return self.path is None and self.secret is None

    @model_serializer(mode="wrap")
    def _drop_unused_source(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.secret is not None:
            data.pop("path", None)
            data.pop("value", None)
            if self.template is None:
                data.pop("template", None)
            return data
        data.pop("secret", None)
        data.pop("template", None)
        if self.path is None:
            data.pop("path", None)
        else:
            data.pop("value", None)
        return data


class OutputBinding(_Model):
    """Commits one field of a node's result into state."""

    source: LocalPathField = Field(default_factory=LocalPath)
    target: StatePathField
    mode: Literal["set", "append", "extend", "merge"] = "set"


class RetryPolicy(_Model):
    max_attempts: int = Field(default=1, ge=1, le=100)
    backoff_seconds: float = Field(default=0.0, ge=0, le=3600)
    backoff_multiplier: float = Field(default=2.0, ge=1, le=10)
    max_backoff_seconds: float = Field(default=60.0, ge=0, le=86400)

    def delay_before(self, attempt: int) -> float:
        """Seconds to wait before attempt number ``attempt`` (1-based; the first waits 0)."""
        if attempt <= 1:
            return 0.0
        return min(self.backoff_seconds * self.backoff_multiplier ** (attempt - 2), self.max_backoff_seconds)

    def total_delay(self) -> float:
        """Seconds of backoff before all attempts together: the longest a node can spend waiting to retry."""
        return sum(self.delay_before(attempt) for attempt in range(2, self.max_attempts + 1))


class _NodeBase(_Model):
    id: NodeId
    name: str | None = None
    description: str = ""

    @model_validator(mode="wrap")
    @classmethod
    def _name_the_node(cls, data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        """Prefix every error inside a node with its id, keeping pydantic's locations and types.

        A location like ``nodes.3.task.input.0`` does not tell an author which node is wrong.
        """
        try:
            return handler(data)
        except ValidationError as exc:
            node_id = data.get("id") if isinstance(data, dict) else getattr(data, "id", None)
            if not isinstance(node_id, str):
                raise
            details: list[InitErrorDetails] = []
            for error in exc.errors(include_url=False):
                message = f"node {node_id!r}: {error['msg'].removeprefix('Value error, ')}"
                context = {**(error.get("ctx") or {}), "node_id": node_id, "node_message": message}
                details.append(InitErrorDetails(
                    type=PydanticCustomError(error["type"], "{node_message}", context),
                    loc=tuple(error["loc"]),
                    input=error["input"],
                ))
            raise ValidationError.from_exception_data(exc.title, details) from None

    @property
    def title(self) -> str:
        return self.name or self.id


class TaskNode(_NodeBase):
    kind: Literal["task"] = "task"
    task: str = Field(min_length=1)
    input: Items[InputBinding] = Field(default_factory=tuple)
    output: Items[OutputBinding] = Field(default_factory=tuple)
    retry: RetryPolicy | None = None
    #: Start-to-close limit of one attempt, in seconds; see ``runtime._steps.step_timeout`` for how it
    #: combines with the task's default, the workflow's default and the engine's cap.
    #: Left out of dumps when unset, so documents that never set it keep their exact form.
    timeout_seconds: float | None = Field(default=None, gt=0, le=86_400, exclude_if=lambda value: value is None)


class ForeachNode(_NodeBase):
    """Iterates ``over``; routes ``loop`` into the body and ``done`` after the last item.

    ``item`` and ``index`` are computed paths for authoring; they are never
    stored as fields.
    """

    kind: Literal["foreach"] = "foreach"
    over: SourcePathField
    as_: str | None = Field(default=None, alias="as", min_length=1)
    max_concurrency: int = Field(default=1, ge=1, le=1000)
    #: Collect each item's result (what the node routing back to this foreach produced) into this state
    #: field, as a list in index order, written when the foreach is done.
    results: StatePathField | None = None
    # Distribution (runtime._batches): with ``batch_size`` set, a host that runs items on many workers (the
    # designer, above its threshold of items) may run this foreach's items as separate batches of that many
    # items, at most ``max_batches_in_flight`` at once, each with the same structured context as in one run.
    # All of these are left out of dumps when unset, so documents that never set them keep their exact form.
    #: Items per batch when the foreach runs distributed; None: it always runs inside its own run.
    batch_size: int | None = Field(default=None, ge=1, le=100_000, exclude_if=lambda value: value is None)
    #: How many batches may run at once (default ``DEFAULT_BATCHES_IN_FLIGHT``).
    max_batches_in_flight: int | None = Field(default=None, ge=1, le=1000, exclude_if=lambda value: value is None)
    #: Failed items the foreach tolerates (their results are null and they are listed); beyond it, it fails.
    tolerated_failure_count: int | None = Field(default=None, ge=0, exclude_if=lambda value: value is None)
    #: Share of failed items, in percent of all items, the foreach tolerates; beyond it, it fails.
    tolerated_failure_percentage: float | None = Field(default=None, ge=0, le=100,
                                                       exclude_if=lambda value: value is None)

    @property
    def tolerates_failures(self) -> bool:
        """True when a failed item does not fail the run at once but is counted against a tolerance."""
        return self.tolerated_failure_count is not None or self.tolerated_failure_percentage is not None

    def too_many_failures(self, failed: int, total: int) -> bool:
        """Whether ``failed`` of ``total`` items is beyond the tolerance (either limit exceeded, as in AWS
        Step Functions' Distributed Map; no tolerance set means none is tolerated)."""
        if not self.tolerates_failures:
            return failed > 0
        if self.tolerated_failure_count is not None and failed > self.tolerated_failure_count:
            return True
        percentage = self.tolerated_failure_percentage
        return percentage is not None and total > 0 and failed * 100 > percentage * total

    @model_serializer(mode="wrap")
    def _drop_unset_results(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.results is None:
            data.pop("results", None)  # documents without it stay exactly as they were
        return data

    @property
    def item(self) -> GraphSourcePath:
        return context_path("foreach", self.id, "item")

    @property
    def index(self) -> GraphSourcePath:
        return context_path("foreach", self.id, "index")


class WorkflowRef(_Model):
    """Which saved workflow a subgraph runs. ``version`` None means "the resolver's current"."""

    id: str = Field(min_length=1)
    version: int | None = None


class SubgraphNode(_NodeBase):
    kind: Literal["subgraph"] = "subgraph"
    workflow: WorkflowRef
    input: Items[InputBinding] = Field(default_factory=tuple)
    output: Items[OutputBinding] = Field(default_factory=tuple)


BranchOp = Literal["equals", "not_equals", "in", "exists", "truthy", "gt", "gte", "lt", "lte"]


class BranchCase(_Model):
    label: str = Field(min_length=1)
    op: BranchOp = "equals"
    value: JsonLiteral = None


class BranchNode(_NodeBase):
    """Compares the value at ``path`` with each case in order; the first match's label wins."""

    kind: Literal["branch"] = "branch"
    path: SourcePathField
    cases: Items[BranchCase] = Field(default_factory=tuple)
    default_label: str = "default"


class InterruptNode(_NodeBase):
    """Pauses for a value matching ``resume_schema``; that value is the node's result."""

    kind: Literal["interrupt"] = "interrupt"
    prompt: str = ""
    input: Items[InputBinding] = Field(default_factory=tuple)
    resume_schema: JsonObject = Field(default_factory=_empty_object_schema)
    labels: Items[str] = Field(default_factory=lambda: ("ok",), min_length=1)
    output: Items[OutputBinding] = Field(default_factory=tuple)


Node = Annotated[
    TaskNode | ForeachNode | SubgraphNode | BranchNode | InterruptNode,
    Field(discriminator="kind"),
]


class WorkflowRoute(_Model):
    """``source --label--> target``."""

    source: NodeId
    label: str = Field(min_length=1)
    target: NodeId


class WorkflowOutput(_Model):
    """One field of the workflow's output payload, projected when the scope completes."""

    target: LocalPathField
    path: SourcePathField


class Workflow(_Model):
    schema_version: VersionOne = SCHEMA_VERSION
    id: str = Field(min_length=1, max_length=200)
    name: str = ""
    description: str = ""
    input_schema: JsonObject = Field(default_factory=_empty_object_schema)
    state_schema: JsonObject = Field(default_factory=_empty_object_schema)
    start: str | None = None
    nodes: Items[Node] = Field(default_factory=tuple)
    routes: Items[WorkflowRoute] = Field(default_factory=tuple)
    outputs: Items[WorkflowOutput] = Field(default_factory=tuple)
    metadata: JsonObject = Field(default_factory=_empty_object)
    #: Start-to-close limit of each task step whose node and task set none, in seconds.
    step_timeout_seconds: float | None = Field(default=None, gt=0, le=86_400,
                                               exclude_if=lambda value: value is None)
    #: The run's budgets as a whole (``runtime.RunBudget``, applied by the host that drives it, under its own
    #: caps): wall time from the start of a run attempt, and seconds of all its steps together.
    run_timeout_seconds: float | None = Field(default=None, gt=0, le=31 * 86_400,
                                              exclude_if=lambda value: value is None)
    run_step_seconds: float | None = Field(default=None, gt=0, le=10_000_000, exclude_if=lambda value: value is None)

    @model_validator(mode="after")
    def _structure(self) -> Workflow:
        problems = structural_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def start_node(self) -> str | None:
        """The explicit start, else the first node."""
        if self.start is not None:
            return self.start
        return self.nodes[0].id if self.nodes else None

    def node(self, node_id: str) -> TaskNode | ForeachNode | SubgraphNode | BranchNode | InterruptNode:
        for node in self.nodes:
            if node.id == node_id:
                return node
        raise KeyError(node_id)

    def node_map(self) -> dict[str, TaskNode | ForeachNode | SubgraphNode | BranchNode | InterruptNode]:
        return {node.id: node for node in self.nodes}

    def routes_from(self, node_id: str) -> dict[str, str]:
        """label -> target for one source node."""
        return {route.label: route.target for route in self.routes if route.source == node_id}


def coerce_workflow(value: object, refusal: Callable[[ValidationError | None], Exception]) -> Workflow:
    """``value`` as a Workflow: one already is, a JSON mapping is parsed. Anything else, or a mapping that is not a
    valid document, raises what ``refusal`` makes of the mapping's ``ValidationError`` (None: not a mapping), so
    each caller says in its own terms what was wrong."""
    if isinstance(value, Workflow):
        return value
    if isinstance(value, Mapping):
        try:
            return Workflow.model_validate(value)
        except ValidationError as error:
            raise refusal(error) from None
    raise refusal(None)


def fully_frozen(value: Any) -> bool:
    """Whether nothing reachable from ``value`` (a document, a node...) can change in place. True for every
    document pydantic validated or ``model_copy`` derived; a document assembled with ``model_construct`` may
    hold plain lists and dicts, and then a plan compiled from it must not be cached against its identity."""
    if isinstance(value, BaseModel):
        return all(fully_frozen(item) for item in value.__dict__.values())
    if isinstance(value, tuple):
        return all(fully_frozen(item) for item in value)
    kind = type(value)
    return kind is FrozenDict or kind is FrozenList or not isinstance(value, (dict, list, set, bytearray))


def structural_problems(workflow: Workflow) -> list[str]:
    """Every structural mistake, each naming its node; empty when the document is well formed."""
    problems: list[str] = []
    seen: set[str] = set()
    for node in workflow.nodes:
        if node.id in seen:
            problems.append(f"node id {node.id!r} is used by more than one node; node ids must be unique")
        seen.add(node.id)
    if workflow.start is not None and workflow.start not in seen:
        problems.append(f"start node {workflow.start!r} does not exist")
    taken: set[tuple[str, str]] = set()
    for route in workflow.routes:
        if route.source not in seen:
            problems.append(
                f"route {route.source!r} --{route.label}--> {route.target!r}: "
                f"source node {route.source!r} does not exist"
            )
        if route.target not in seen:
            problems.append(
                f"route {route.source!r} --{route.label}--> {route.target!r}: "
                f"target node {route.target!r} does not exist"
            )
        key = (route.source, route.label)
        if key in taken:
            problems.append(
                f"node {route.source!r} has more than one route for label {route.label!r}; a label leads to one node"
            )
        taken.add(key)
    for node in workflow.nodes:
        targets = [str(b.target) for b in getattr(node, "input", [])]
        for target in sorted({t for t in targets if targets.count(t) > 1}):
            problems.append(f"node {node.id!r} binds input field {target!r} more than once")
        problems.extend(f"node {node.id!r}: {problem}"
                        for problem in target_problems([b.target for b in getattr(node, "input", [])]))
        if isinstance(node, BranchNode):
            labels = [case.label for case in node.cases]
            for label in sorted({x for x in labels if labels.count(x) > 1}):
                problems.append(f"branch {node.id!r} has more than one case labelled {label!r}")
        if isinstance(node, InterruptNode):
            for label in sorted({x for x in node.labels if node.labels.count(x) > 1}):
                problems.append(f"interrupt {node.id!r} declares label {label!r} more than once")
    outputs = [str(output.target) for output in workflow.outputs]
    for target in sorted({t for t in outputs if outputs.count(t) > 1}):
        problems.append(f"workflow output field {target!r} is projected more than once")
    problems.extend(f"workflow outputs: {problem}" for problem in target_problems([o.target for o in workflow.outputs]))
    return problems


def target_problems(targets: list[LocalPath]) -> list[str]:
    """Array items bound by index (``tags.0``, ``tags.1``) must be numbered 0, 1, ... without gaps, and a
    field is filled either by items or by keys, not both. That keeps a built list exactly as long as its
    bindings, whatever index a document names."""
    below: dict[tuple[str, ...], dict[str, None]] = {}
    for target in targets:
        parts = target.parts
        for depth in range(len(parts)):
            below.setdefault(parts[:depth], {})[parts[depth]] = None
    problems: list[str] = []
    for prefix, children in below.items():
        where = repr(format_key(prefix)) if prefix else "the payload"
        indexes = [c for c in children if is_item_index(c)]
        keys = [c for c in children if not is_item_index(c)]
        if indexes and keys:
            problems.append(
                f"{where} is filled both as an array (item {indexes[0]}) and as an object (key {keys[0]!r}); "
                f"bind its items 0, 1, ... or its keys, not both")
            continue
        # More digits than bindings can only be a gap; int() never sees a huge number.
        numbers = sorted(int(c) for c in indexes if len(c) <= 9)
        if len(numbers) < len(indexes) or numbers != list(range(len(numbers))):
            shown = ", ".join(sorted(indexes, key=lambda c: (len(c), c))[:5])
            problems.append(
                f"the items of {where} are bound at {shown}: number them 0, 1, 2, ... without gaps "
                f"(an item is an index into the array being built)")
    return problems


def document_json_schema(*, ref_template: str = "#/$defs/{model}") -> dict[str, Any]:
    """The JSON Schema of a workflow document, generated from ``Workflow`` and its node models (so it never drifts
    from what ``Workflow.model_validate`` reads); nested models are under ``$defs``, referenced with
    ``ref_template`` (e.g. ``"#/components/schemas/{model}"`` for an OpenAPI document, which then takes the
    ``$defs`` as its components).

    The schema states types, required fields, bounds and the node kinds; rules across fields (unique node ids,
    routes naming real nodes, a binding with exactly one of path and value, path syntax) are checked by
    ``Workflow.model_validate`` only.
    """
    schema: dict[str, Any] = Workflow.model_json_schema(ref_template=ref_template)
    return schema

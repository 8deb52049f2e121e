"""Registered tasks: the only Python code a workflow document can make the runtime call.

A task is a plain callable. Its signature is the contract: the registry turns
the parameter types into the JSON Schema of the input payload and the return
annotation into the JSON Schema of the result, and validates both sides of
every call against them, so the analyzer, the designer's pickers and the
engine all read one source of truth.

Signature rules (kept deliberately small):

* Every parameter is one field of the input payload; it is required when it
  has no default. Unannotated parameters accept any JSON value.
* A parameter annotated ``RuntimeContext`` is injected by the engine and is
  not part of the payload.
* The one exception: when the only non-context parameter is named
  ``payload`` and annotated with a pydantic model, that model *is* the whole
  payload. (A single model parameter with any other name stays a field, so
  ``def charge(order: Order)`` is bound with ``{"target": "order", ...}``.)
* ``*args`` and ``**kwargs`` are refused: a payload has named fields.
* The return annotation types the result payload. A task chooses its label by
  returning ``Route(label, payload)``; annotate it ``-> Route | Result`` (or
  just ``-> Route``) and the result schema is that of ``Result`` (or any).
  A plain return value takes the first declared label (``ok`` by default).
"""

from __future__ import annotations

import difflib
import functools
import inspect
import sys
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model
from pydantic_core import PydanticSerializationError, to_jsonable_python

from runtime._context import RuntimeContext
from runtime._errors import (
    InputValidationError,
    TaskRegistrationError,
    TaskResultError,
    UnknownTaskError,
)
from runtime._task_schema import (
    data_loc,
    describe,
    json_schema_of,
    loc_text,
    schema_step,
    schema_type_text,
    value_at,
)

F = TypeVar("F", bound=Callable[..., Any])

#: Attribute a decorated function carries so ``WorkflowBuilder.use(fn)`` finds its task name.
TASK_ATTRIBUTE = "__trellis_task__"
#: Attribute of a task function that does nothing but wait: the name of its input field holding the seconds.
#: An engine that suspends runs (``EngineOptions(sleep_in_process=False)``) never calls such a task: the frame sleeps
#: in ``RunState.wakeups`` and completes with the seconds once they are up.
TIMER_ATTRIBUTE = "__trellis_timer__"

_PAYLOAD_PARAMETER = "payload"
_IMPLICIT_LABELS = frozenset({"error"})


@dataclass(frozen=True, slots=True)
class Route:
    """What a task returns to choose the label it emits (and the result payload with it)."""

    label: str
    payload: object = None


# ---------------------------------------------------------------------------
# TaskSpec


@dataclass(frozen=True, slots=True, eq=False)
class TaskSpec:
    """A registered task: its name, labels, schemas and how to call it.

    Equality is identity: two registrations of one function are two tasks.
    Treat ``input_schema`` and ``result_schema`` as read-only.
    """

    name: str
    labels: tuple[str, ...]
    description: str
    input_schema: dict[str, Any]
    result_schema: dict[str, Any]
    is_async: bool
    fn: Callable[..., Any] = field(repr=False)
    #: True when one pydantic-model parameter named ``payload`` is the whole payload.
    whole_payload: bool = field(default=False, repr=False)
    #: True when the return annotation mentions ``Route``.
    may_route: bool = field(default=False, repr=False)
    _input_model: type[BaseModel] = field(default=BaseModel, repr=False)
    _fields: tuple[tuple[str, str, Any], ...] = field(default=(), repr=False)  # (param, model field, annotation)
    _context_params: tuple[str, ...] = field(default=(), repr=False)
    _result_adapter: TypeAdapter[Any] | None = field(default=None, repr=False)
    _result_type: Any = field(default=Any, repr=False)
    #: The task's default start-to-close limit per attempt, in seconds (None: no default of its own).
    timeout_seconds: float | None = None

    @property
    def default_label(self) -> str:
        return self.labels[0]

    def validate_input(self, payload: object, context: RuntimeContext | None = None) -> BaseModel:
        """The payload as the validated input model; raises ``InputValidationError``."""
        if not self.whole_payload and payload is None:
            payload = {}
        if not self.whole_payload and type(payload) is not dict and not isinstance(payload, Mapping):
            raise InputValidationError(
                f"{_where(self.name, context)}: the input payload must be an object with fields "
                f"{', '.join(repr(f[0]) for f in self._fields) or '(none)'}, got {describe(payload)}",
                task=self.name, node_id=_node_of(context), errors=[],
            )
        try:
            model: BaseModel = self._input_model.__pydantic_validator__.validate_python(payload)  # = model_validate
            return model
        except ValidationError as exc:
            errors = self._explain_errors(exc.errors(include_url=False), payload)
            raise InputValidationError(
                f"{_where(self.name, context)}: invalid input: " + "; ".join(e["text"] for e in errors),
                task=self.name, node_id=_node_of(context),
                errors=[{k: v for k, v in e.items() if k != "text"} for e in errors],
            ) from None

    def bind(self, payload: object, context: RuntimeContext) -> Callable[[], Any]:
        """Validate ``payload`` and return a zero-argument call (a coroutine factory when async)."""
        kwargs: dict[str, Any]
        if self.whole_payload:
            kwargs = {_PAYLOAD_PARAMETER: self.validate_input(payload, context)}
        else:
            # A plain object (every task step's payload as bindings build it) goes to the validator directly:
            # what validate_input does for it, less its checks for other shapes and its call (once per step).
            # A payload that does not validate goes through validate_input, which explains what is wrong.
            model: Any = None
            if type(payload) is dict:
                try:
                    model = self._input_model.__pydantic_validator__.validate_python(payload)
                except ValidationError:
                    pass
            if model is None:
                model = self.validate_input(payload, context)
            values = model.__dict__  # the model's fields (attr names f0, f1, ...), as getattr reads them
            kwargs = {param: values[attr] for param, attr, _ in self._fields}
        for param in self._context_params:
            kwargs[param] = context
        return functools.partial(self.fn, **kwargs)

    def finish(self, raw: Any, context: RuntimeContext | None = None) -> tuple[str, Any]:
        """Unwrap a ``Route``, check its label and validate the payload; returns ``(label, json_payload)``."""
        if isinstance(raw, Route):
            label, payload = raw.label, raw.payload
            if label not in self.labels:
                raise TaskResultError(
                    f"{_where(self.name, context)} returned label {label!r}, which it does not declare; "
                    f"declared labels: {', '.join(self.labels)}",
                    task=self.name, node_id=_node_of(context), label=label, labels=list(self.labels),
                )
        else:
            label, payload = self.labels[0], raw  # default_label
        if self._result_adapter is None:
            try:
                return label, to_jsonable_python(payload)
            except PydanticSerializationError as exc:
                raise TaskResultError(
                    f"{_where(self.name, context)} returned a result that is not JSON-compatible: {exc}",
                    task=self.name, node_id=_node_of(context),
                ) from None
        try:
            # The adapter's core validator and serializer directly: its wrappers only add per-step overhead.
            validated = self._result_adapter.validator.validate_python(payload)
            return label, self._result_adapter.serializer.to_python(validated, mode="json")
        except ValidationError as exc:
            expected = schema_type_text(self.result_schema)
            parts = []
            for error in exc.errors(include_url=False):
                loc = loc_text(error["loc"])
                prefix = f"field {loc!r}: " if loc else ""
                got = "" if error["type"] == "missing" else f" (got {describe(error.get('input'))})"
                parts.append(f"{prefix}{error['msg']}{got}")
            raise TaskResultError(
                f"{_where(self.name, context)} returned an invalid result (expected {expected}): " + "; ".join(parts),
                task=self.name, node_id=_node_of(context), expected=expected,
            ) from None
        except PydanticSerializationError as exc:
            raise TaskResultError(
                f"{_where(self.name, context)} returned a result that is not JSON-compatible: {exc}",
                task=self.name, node_id=_node_of(context),
            ) from None

    def _explain_errors(self, raw: list[Any], payload: object) -> list[dict[str, Any]]:
        """One explanation per problem; the failed alternatives of a union become one entry."""
        explained: list[dict[str, Any]] = []
        unions: dict[tuple[Any, ...], dict[str, Any]] = {}
        for error in raw:
            loc, tagged = data_loc(tuple(error["loc"]), payload, error["type"])
            if not tagged:
                explained.append(self._explain_input({**error, "loc": loc}))
                continue
            if loc in unions:
                continue
            field_name = loc_text(loc)
            expected = self._expected_at(loc)
            got = describe(value_at(payload, loc))
            entry = {
                "field": field_name, "expected": expected, "type": "union", "message": "matches no allowed type",
                "text": f"field {field_name!r}: {got} matches none of the allowed types (expected {expected})",
            }
            unions[loc] = entry
            explained.append(entry)
        return explained

    def _explain_input(self, error: Mapping[str, Any]) -> dict[str, Any]:
        loc = tuple(error["loc"])
        field_name = loc_text(loc)
        expected = self._expected_at(loc)
        if error["type"] == "missing":
            text = f"field {field_name!r} is required (expected {expected})"
        elif error["type"] == "extra_forbidden":
            allowed = ", ".join(sorted(self.input_schema.get("properties", {}))) or "none"
            text = f"field {field_name!r} is not an input of this task (fields: {allowed})"
        else:
            text = (f"field {field_name!r}: {error['msg']} "
                    f"(expected {expected}, got {describe(error.get('input'))})")
        return {"field": field_name, "expected": expected, "type": error["type"],
                "message": error["msg"], "text": text}

    def _expected_at(self, loc: tuple[Any, ...]) -> str:
        node: Any = self.input_schema
        for step in loc:
            node = schema_step(node, step)
            if node is None:
                return "a valid value"
        return schema_type_text(node)


def _node_of(context: RuntimeContext | None) -> str | None:
    return context.node_id or None if context is not None else None


def _where(name: str, context: RuntimeContext | None) -> str:
    node = _node_of(context)
    return f"node {node!r} (task {name!r})" if node else f"task {name!r}"


# ---------------------------------------------------------------------------
# Building a spec from a callable


def _is_context(annotation: Any) -> bool:
    if annotation is RuntimeContext:
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return len(args) == 1 and args[0] is RuntimeContext
    return False


def _is_route(annotation: Any) -> bool:
    return annotation is Route


def _split_result(annotation: Any) -> tuple[Any, bool]:
    """The result payload type, and whether the task may return a ``Route``."""
    if annotation is inspect.Parameter.empty:
        return Any, False
    if _is_route(annotation):
        return Any, True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = typing.get_args(annotation)
        rest = tuple(a for a in args if not _is_route(a))
        if len(rest) != len(args):
            if not rest:
                return Any, True
            return (rest[0] if len(rest) == 1 else typing.Union[rest]), True  # noqa: UP007
    return annotation, False


def _hint_target(fn: Callable[..., Any]) -> Any:
    """The plain function whose annotations describe ``fn`` (through wrappers, partials and ``__call__``)."""
    target: Any = inspect.unwrap(fn)
    while isinstance(target, functools.partial):
        target = inspect.unwrap(target.func)
    if not (inspect.isfunction(target) or inspect.ismethod(target) or isinstance(target, type)):
        call = inspect.getattr_static(type(target), "__call__", None)
        if call is not None:
            target = call
    return target


def _hints(fn: Callable[..., Any], name: str, localns: Mapping[str, Any] | None) -> dict[str, Any]:
    target = _hint_target(fn)
    try:
        return typing.get_type_hints(target, localns=dict(localns) if localns else None, include_extras=True)
    except Exception as exc:  # NameError for unresolvable forward refs, TypeError for odd callables
        raise TaskRegistrationError(
            f"task {name!r}: cannot resolve the type hints of {getattr(fn, '__qualname__', fn)!r}: {exc}; "
            f"define the annotated types at module level or import them where the function is defined",
            task=name,
        ) from None


def build_spec(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    labels: tuple[str, ...] | list[str] = ("ok",),
    description: str | None = None,
    localns: Mapping[str, Any] | None = None,
    timeout_seconds: float | None = None,
) -> TaskSpec:
    """Inspect ``fn`` and build its ``TaskSpec``; raises ``TaskRegistrationError`` when it cannot."""
    if not callable(fn):
        raise TaskRegistrationError(f"a task must be callable, got {type(fn).__name__}")
    task_name = name if name is not None else getattr(fn, "__name__", None)
    if not isinstance(task_name, str) or not task_name.strip() or task_name != task_name.strip():
        raise TaskRegistrationError(
            f"task name must be a non-empty string without surrounding spaces, got {task_name!r}", task=task_name
        )
    label_tuple = _check_labels(task_name, labels)
    if timeout_seconds is not None and not (
        isinstance(timeout_seconds, int | float) and not isinstance(timeout_seconds, bool) and timeout_seconds > 0
    ):
        raise TaskRegistrationError(
            f"task {task_name!r}: timeout_seconds must be a positive number of seconds or None, "
            f"not {timeout_seconds!r}", task=task_name,
        )
    if description is None:
        doc = inspect.getdoc(fn) or ""
        description = doc.split("\n\n", 1)[0].strip()

    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise TaskRegistrationError(f"task {task_name!r}: cannot read its signature: {exc}", task=task_name) from None
    hints = _hints(fn, task_name, localns)

    context_params: list[str] = []
    params: list[tuple[str, Any, Any]] = []  # (name, annotation, default)
    for param in signature.parameters.values():
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise TaskRegistrationError(
                f"task {task_name!r}: parameter {param.name!r} is *args/**kwargs; a task's payload has named "
                f"fields, so declare each one",
                task=task_name, parameter=param.name,
            )
        if param.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise TaskRegistrationError(
                f"task {task_name!r}: parameter {param.name!r} is positional-only; the payload is passed by name",
                task=task_name, parameter=param.name,
            )
        annotation = hints.get(param.name, Any)
        if _is_context(annotation):
            context_params.append(param.name)
            continue
        params.append((param.name, annotation, param.default))

    whole = (
        len(params) == 1
        and params[0][0] == _PAYLOAD_PARAMETER
        and isinstance(params[0][1], type)
        and issubclass(params[0][1], BaseModel)
    )
    fields: list[tuple[str, str, Any]] = []
    try:
        if whole:
            input_model: type[BaseModel] = params[0][1]
            input_schema = json_schema_of(input_model)
        else:
            definitions: dict[str, Any] = {}
            for index, (param_name, annotation, default) in enumerate(params):
                attr = f"f{index}"
                # Aliases keep any parameter name usable (``json``, ``_x``, ``model_id``) without
                # clashing with BaseModel's own attributes.
                info = (Field(alias=param_name) if default is inspect.Parameter.empty
                        else Field(default=default, alias=param_name))
                definitions[attr] = (annotation, info)
                fields.append((param_name, attr, annotation))
            input_model = create_model(
                _model_name(task_name, "Input"),
                __config__=ConfigDict(
                    extra="forbid", validate_by_alias=True, validate_by_name=False,
                    serialize_by_alias=True, arbitrary_types_allowed=False,
                ),
                **definitions,
            )
            input_schema = json_schema_of(input_model)
    except TaskRegistrationError:
        raise
    except Exception as exc:  # pydantic cannot build a schema for some annotation
        raise TaskRegistrationError(
            f"task {task_name!r}: cannot derive an input schema from its parameters: {exc}", task=task_name
        ) from None

    result_type, may_route = _split_result(hints.get("return", inspect.Parameter.empty)
                                           if "return" in hints else signature.return_annotation)
    try:
        if result_type is Any:
            adapter: TypeAdapter[Any] | None = None
            result_schema: dict[str, Any] = {}
        else:
            adapter = TypeAdapter(result_type)
            result_schema = json_schema_of(result_type, mode="serialization")
    except Exception as exc:
        raise TaskRegistrationError(
            f"task {task_name!r}: cannot derive a result schema from its return annotation: {exc}",
            task=task_name,
        ) from None

    return TaskSpec(
        name=task_name,
        labels=label_tuple,
        description=description,
        input_schema=input_schema,
        result_schema=result_schema,
        is_async=_is_async(fn),
        fn=fn,
        whole_payload=whole,
        may_route=may_route,
        _input_model=input_model,
        _fields=tuple(fields),
        _context_params=tuple(context_params),
        _result_adapter=adapter,
        _result_type=result_type,
        timeout_seconds=float(timeout_seconds) if timeout_seconds is not None else None,
    )


def _is_async(fn: Callable[..., Any]) -> bool:
    """Coroutine functions, partials of them and objects whose ``__call__`` is one."""
    return inspect.iscoroutinefunction(inspect.unwrap(fn)) or inspect.iscoroutinefunction(_hint_target(fn))


def _model_name(task_name: str, suffix: str) -> str:
    words = "".join(ch if ch.isalnum() else " " for ch in task_name).split()
    return "".join(word[:1].upper() + word[1:] for word in words) + suffix if words else suffix


def _check_labels(task_name: str, labels: object) -> tuple[str, ...]:
    if isinstance(labels, str) or not isinstance(labels, (tuple, list)):
        raise TaskRegistrationError(
            f"task {task_name!r}: labels must be a tuple of strings such as ('ok',), got {labels!r}",
            task=task_name,
        )
    if not labels:
        raise TaskRegistrationError(f"task {task_name!r}: declare at least one label", task=task_name)
    seen: list[str] = []
    for label in labels:
        if not isinstance(label, str) or not label:
            raise TaskRegistrationError(
                f"task {task_name!r}: label {label!r} is not a non-empty string", task=task_name
            )
        if label in _IMPLICIT_LABELS:
            raise TaskRegistrationError(
                f"task {task_name!r}: label 'error' is implicit (a raised exception takes the error route); "
                f"do not declare it",
                task=task_name,
            )
        if label in seen:
            raise TaskRegistrationError(f"task {task_name!r}: label {label!r} is declared twice", task=task_name)
        seen.append(label)
    return tuple(seen)


# ---------------------------------------------------------------------------
# The registry


class TaskRegistry:
    """A name -> ``TaskSpec`` table. Names are unique; registering one twice is an error."""

    def __init__(self, specs: Mapping[str, TaskSpec] | None = None) -> None:
        self._specs: dict[str, TaskSpec] = dict(specs or {})

    @overload
    def task(self, fn: F, *, name: str | None = ..., labels: tuple[str, ...] | list[str] = ...,
             description: str | None = ..., timeout_seconds: float | None = ...) -> F: ...

    @overload
    def task(self, fn: None = ..., *, name: str | None = ..., labels: tuple[str, ...] | list[str] = ...,
             description: str | None = ..., timeout_seconds: float | None = ...) -> Callable[[F], F]: ...

    def task(
        self,
        fn: F | None = None,
        *,
        name: str | None = None,
        labels: tuple[str, ...] | list[str] = ("ok",),
        description: str | None = None,
        timeout_seconds: float | None = None,
    ) -> F | Callable[[F], F]:
        """Register a function; usable bare (``@registry.task``) or with arguments.

        ``timeout_seconds`` is the task's default start-to-close limit per attempt (a node's own
        ``timeout_seconds`` overrides it; the engine's ``step_timeout`` caps both).

        Returns the function itself, marked with ``__trellis_task__`` (its ``TaskSpec``).
        """
        # The decorating scope's locals let hints name classes defined in a function body.
        localns = dict(sys._getframe(1).f_locals)

        def decorate(func: F) -> F:
            spec = self._register(func, name=name, labels=labels, description=description, localns=localns,
                                  timeout_seconds=timeout_seconds)
            try:
                setattr(func, TASK_ATTRIBUTE, spec)
            except (AttributeError, TypeError):
                pass  # builtins and bound methods take no attributes; use() then needs the name
            return func

        if fn is not None:
            return decorate(fn)
        return decorate

    def register(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        labels: tuple[str, ...] | list[str] = ("ok",),
        description: str | None = None,
        timeout_seconds: float | None = None,
    ) -> TaskSpec:
        """Register ``fn`` without decorating it; returns its spec."""
        localns = dict(sys._getframe(1).f_locals)
        return self._register(fn, name=name, labels=labels, description=description, localns=localns,
                              timeout_seconds=timeout_seconds)

    def _register(self, fn: Callable[..., Any], *, name: str | None, labels: tuple[str, ...] | list[str],
                  description: str | None, localns: Mapping[str, Any] | None,
                  timeout_seconds: float | None = None) -> TaskSpec:
        task_name = name if name is not None else getattr(fn, "__name__", None)
        if isinstance(task_name, str) and task_name in self._specs:
            raise TaskRegistrationError(
                f"task {task_name!r} is already registered in this registry; task names must be unique",
                task=task_name,
            )
        spec = build_spec(fn, name=name, labels=labels, description=description, localns=localns,
                          timeout_seconds=timeout_seconds)
        self._specs[spec.name] = spec
        return spec

    def add(self, spec: TaskSpec) -> TaskSpec:
        """Add an already built spec (used when combining registries)."""
        existing = self._specs.get(spec.name)
        if existing is not None and existing is not spec:
            raise TaskRegistrationError(
                f"task {spec.name!r} is already registered in this registry; task names must be unique",
                task=spec.name,
            )
        self._specs[spec.name] = spec
        return spec

    def get(self, name: str) -> TaskSpec:
        try:
            return self._specs[name]
        except (KeyError, TypeError):
            pass
        close = difflib.get_close_matches(str(name), list(self._specs), n=3)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise UnknownTaskError(
            f"no task named {name!r} is registered{hint}", task=name, known=sorted(self._specs)
        )

    def merged(self, other: TaskRegistry) -> TaskRegistry:
        """A new registry holding both; a name registered in both (as different tasks) is an error."""
        combined = TaskRegistry(self._specs)
        for spec in other:
            combined.add(spec)
        return combined

    def names(self) -> tuple[str, ...]:
        return tuple(self._specs)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._specs

    def __iter__(self) -> Iterator[TaskSpec]:
        return iter(tuple(self._specs.values()))

    def __len__(self) -> int:
        return len(self._specs)

    def __repr__(self) -> str:
        return f"TaskRegistry({', '.join(self._specs)})"


def spec_of(fn: object) -> TaskSpec | None:
    """The spec a decorated function carries, if any."""
    spec = getattr(fn, TASK_ATTRIBUTE, None)
    return spec if isinstance(spec, TaskSpec) else None


default_registry = TaskRegistry()
task = default_registry.task


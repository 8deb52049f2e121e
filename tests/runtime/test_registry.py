"""TaskRegistry and TaskSpec: registration, schemas derived from type hints, and call validation."""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from runtime import task
from runtime.errors import InputValidationError, TaskRegistrationError, TaskResultError, UnknownTaskError
from runtime.state import RuntimeContext
from runtime.tasks import Route, TaskRegistry, TaskSpec, default_registry


class Address(BaseModel):
    city: str
    zip: str = ""


class Customer(BaseModel):
    name: str
    age: int = Field(ge=0)
    address: Address


class Receipt(BaseModel):
    total: float
    at: dt.date


def ctx(node_id: str = "") -> RuntimeContext:
    return RuntimeContext(run_id="r1", node_id=node_id)


# --- registration --------------------------------------------------------------------------------


def test_decorator_bare_and_with_arguments_returns_the_function_marked_with_its_spec() -> None:
    registry = TaskRegistry()

    @registry.task
    def double(x: int) -> int:
        return 2 * x

    @registry.task(name="halve", labels=("ok", "odd"), description="Halves a number.")
    def halve_number(x: int) -> int:
        return x // 2

    assert double(4) == 8
    assert halve_number.__name__ == "halve_number"
    spec = halve_number.__trellis_task__  # type: ignore[attr-defined]
    assert isinstance(spec, TaskSpec)
    assert (spec.name, spec.labels, spec.description) == ("halve", ("ok", "odd"), "Halves a number.")
    assert registry.get("double").fn is double
    assert registry.get("double").labels == ("ok",)


def test_register_without_decorating() -> None:
    registry = TaskRegistry()

    def add(a: int, b: int = 0) -> int:
        """Adds.

        The second paragraph is not part of the description."""
        return a + b

    spec = registry.register(add, name="plus")
    assert spec is registry.get("plus")
    assert spec.description == "Adds."
    assert not hasattr(add, "__trellis_task__")


def test_module_level_task_registers_in_the_default_registry() -> None:
    @task(name="test_registry.default_probe")
    def probe() -> None:
        return None

    assert "test_registry.default_probe" in default_registry
    assert default_registry.get("test_registry.default_probe").fn is probe


def test_duplicate_registration_is_refused() -> None:
    registry = TaskRegistry()

    @registry.task
    def once() -> None: ...

    with pytest.raises(TaskRegistrationError, match="task 'once' is already registered in this registry"):
        registry.register(lambda: None, name="once")
    assert registry.get("once").fn is once


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        ("ok", "labels must be a tuple of strings such as ('ok',), got 'ok'"),
        ((), "declare at least one label"),
        (("ok", "error"), "label 'error' is implicit"),
        (("ok", "ok"), "label 'ok' is declared twice"),
        (("ok", ""), "label '' is not a non-empty string"),
    ],
)
def test_bad_labels_are_refused(labels: Any, message: str) -> None:
    with pytest.raises(TaskRegistrationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        TaskRegistry().register(lambda: None, name="t", labels=labels)


def test_variadic_and_positional_only_parameters_are_refused() -> None:
    def star(*items: int) -> None: ...

    def stars(**fields: int) -> None: ...

    def positional(x: int, /) -> None: ...

    registry = TaskRegistry()
    with pytest.raises(TaskRegistrationError, match=r"task 'star': parameter 'items' is \*args/\*\*kwargs"):
        registry.register(star)
    with pytest.raises(TaskRegistrationError, match="parameter 'fields'"):
        registry.register(stars)
    with pytest.raises(TaskRegistrationError, match="parameter 'x' is positional-only"):
        registry.register(positional)


def test_unresolvable_type_hints_are_reported_naming_the_task() -> None:
    def broken(x: NoSuchType) -> None: ...  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(TaskRegistrationError, match="task 'broken': cannot resolve the type hints.*NoSuchType"):
        TaskRegistry().register(broken)


def test_types_defined_in_a_function_body_resolve() -> None:
    class Local(BaseModel):
        n: int

    registry = TaskRegistry()

    @registry.task
    def local(item: Local) -> Local:
        return item

    assert registry.get("local").input_schema["properties"]["item"]["properties"]["n"]["type"] == "integer"


def test_bad_task_names_are_refused() -> None:
    with pytest.raises(TaskRegistrationError, match="non-empty string without surrounding spaces"):
        TaskRegistry().register(lambda: None, name=" padded ")
    with pytest.raises(TaskRegistrationError, match="a task must be callable, got int"):
        TaskRegistry().register(3)  # type: ignore[arg-type]


# --- schemas -------------------------------------------------------------------------------------


def test_each_parameter_is_a_payload_field_required_unless_defaulted() -> None:
    registry = TaskRegistry()

    @registry.task
    def greet(name: str, times: int = 1, loud: bool | None = None, tags: list[str] | None = None) -> str:
        return name

    schema = registry.get("greet").input_schema
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert list(schema["properties"]) == ["name", "times", "loud", "tags"]
    assert schema["required"] == ["name"]
    assert schema["properties"]["name"]["type"] == "string"
    assert schema["properties"]["times"] == {"default": 1, "title": "Times", "type": "integer"}
    assert schema["properties"]["tags"]["anyOf"][0] == {"items": {"type": "string"}, "type": "array"}
    assert registry.get("greet").result_schema == {"type": "string"}


def test_runtime_context_parameters_are_injected_not_part_of_the_payload() -> None:
    registry = TaskRegistry()
    seen: list[RuntimeContext] = []

    @registry.task
    def where(x: int, context: RuntimeContext, maybe: RuntimeContext | None = None) -> str:
        seen.append(context)
        assert maybe is context
        return context.node_id

    spec = registry.get("where")
    assert list(spec.input_schema["properties"]) == ["x"]
    context = ctx("n7")
    assert spec.bind({"x": 1}, context)() == "n7"
    assert seen == [context]


def test_nested_models_are_inlined_in_the_schema() -> None:
    registry = TaskRegistry()

    @registry.task
    def register_customer(customer: Customer, note: str = "") -> Receipt:
        raise AssertionError

    spec = registry.get("register_customer")
    customer = spec.input_schema["properties"]["customer"]
    assert customer["properties"]["address"]["properties"]["city"] == {"title": "City", "type": "string"}
    assert "$defs" not in spec.input_schema and "$ref" not in str(spec.input_schema)
    assert spec.result_schema["properties"]["at"] == {"format": "date", "title": "At", "type": "string"}


def test_recursive_models_keep_their_definitions() -> None:
    class Tree(BaseModel):
        label: str
        children: list[Tree] = []

    Tree.model_rebuild()
    registry = TaskRegistry()

    @registry.task
    def count(tree: Tree) -> int:
        return 1 + sum(count(child) for child in tree.children)

    schema = registry.get("count").input_schema
    assert schema["properties"]["tree"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}
    assert set(schema["$defs"]) == {"Tree"}


def test_a_single_model_parameter_named_payload_is_the_whole_payload() -> None:
    registry = TaskRegistry()

    @registry.task
    def onboard(payload: Customer, context: RuntimeContext) -> str:
        return f"{payload.name}@{context.node_id}"

    spec = registry.get("onboard")
    assert spec.whole_payload
    assert list(spec.input_schema["properties"]) == ["name", "age", "address"]
    call = spec.bind({"name": "Ada", "age": 36, "address": {"city": "London"}}, ctx("n"))
    assert call() == "Ada@n"


def test_a_single_model_parameter_with_another_name_stays_a_field() -> None:
    registry = TaskRegistry()

    @registry.task
    def charge(customer: Customer) -> None: ...

    spec = registry.get("charge")
    assert not spec.whole_payload
    assert list(spec.input_schema["properties"]) == ["customer"]


def test_parameter_names_that_clash_with_pydantic_attributes_still_work() -> None:
    registry = TaskRegistry()

    @registry.task
    def odd(json: str, model_config: int = 0, _private: bool = False) -> list[Any]:
        return [json, model_config, _private]

    spec = registry.get("odd")
    assert list(spec.input_schema["properties"]) == ["json", "model_config", "_private"]
    assert spec.bind({"json": "j", "_private": True}, ctx())() == ["j", 0, True]


def test_result_schema_from_the_return_annotation() -> None:
    registry = TaskRegistry()

    @registry.task(labels=("ok", "rejected"))
    def decide(x: int) -> Route | Receipt:
        raise AssertionError

    @registry.task(labels=("yes", "no"))
    def only_route(x: int) -> Route:
        raise AssertionError

    @registry.task
    def untyped(x):  # type: ignore[no-untyped-def]
        return x

    @registry.task
    def nothing() -> None: ...

    assert registry.get("decide").may_route
    assert registry.get("decide").result_schema["title"] == "Receipt"
    assert registry.get("only_route").result_schema == {}
    assert registry.get("untyped").result_schema == {}
    assert registry.get("untyped").input_schema["properties"]["x"] == {"title": "X"}
    assert registry.get("nothing").result_schema == {"type": "null"}
    assert registry.get("nothing").input_schema["properties"] == {}


# --- bind: input validation ----------------------------------------------------------------------


def make_registry() -> TaskRegistry:
    registry = TaskRegistry()

    @registry.task
    def charge(customer: Customer, amount: int, currency: Literal["EUR", "USD"] = "EUR") -> Receipt:
        return Receipt(total=amount, at=dt.date(2026, 1, 2))

    return registry


def test_bind_validates_and_returns_a_zero_argument_call() -> None:
    spec = make_registry().get("charge")
    call = spec.bind({"customer": {"name": "Ada", "age": 3, "address": {"city": "Oslo"}}, "amount": "12"}, ctx())
    assert call() == Receipt(total=12, at=dt.date(2026, 1, 2))


def test_input_errors_name_node_task_field_and_expected_type() -> None:
    spec = make_registry().get("charge")
    with pytest.raises(InputValidationError) as caught:
        spec.bind({"customer": {"name": "Ada", "age": -1, "address": {}}, "amount": "lots"}, ctx("bill"))
    message = str(caught.value)
    assert message.startswith("node 'bill' (task 'charge'): invalid input: ")
    assert "field 'customer.age': Input should be greater than or equal to 0 (expected integer, got int -1)" in message
    assert "field 'customer.address.city' is required (expected string)" in message
    assert ("field 'amount': Input should be a valid integer, unable to parse string as an integer "
            "(expected integer, got str 'lots')") in message
    error = caught.value
    assert error.code == "input.invalid"
    assert error.details["task"] == "charge" and error.details["node_id"] == "bill"
    assert {e["field"] for e in error.details["errors"]} == {"customer.age", "customer.address.city", "amount"}


def test_missing_and_unknown_fields_are_explained() -> None:
    spec = make_registry().get("charge")
    with pytest.raises(InputValidationError) as caught:
        spec.bind({"amount": 1, "colour": "red", "currency": "GBP"}, ctx())
    message = str(caught.value)
    assert message.startswith("task 'charge': invalid input: ")
    assert "field 'customer' is required (expected Customer object)" in message
    assert "field 'colour' is not an input of this task (fields: amount, currency, customer)" in message
    assert "field 'currency': Input should be 'EUR' or 'USD' (expected one of 'EUR', 'USD', got str 'GBP')" in message


def test_a_payload_that_is_not_an_object_is_refused() -> None:
    spec = make_registry().get("charge")
    with pytest.raises(InputValidationError, match="the input payload must be an object with fields 'customer'"):
        spec.bind([1, 2], ctx())
    registry = TaskRegistry()

    @registry.task
    def nothing() -> int:
        return 1

    assert registry.get("nothing").bind(None, ctx())() == 1


def test_union_alternatives_are_reported_as_one_problem() -> None:
    registry = TaskRegistry()

    @registry.task
    def measure(value: list[Any] | dict[str, Any] | str, scale: int | float | None = None) -> int:
        return 0

    with pytest.raises(InputValidationError) as caught:
        registry.get("measure").bind({"value": 5, "scale": "big"}, ctx())
    assert str(caught.value) == (
        "task 'measure': invalid input: "
        "field 'value': int 5 matches none of the allowed types (expected array or object or string); "
        "field 'scale': str 'big' matches none of the allowed types (expected integer or number or null)"
    )
    assert [e["field"] for e in caught.value.details["errors"]] == ["value", "scale"]


def test_whole_payload_errors_use_the_schema_type() -> None:
    registry = TaskRegistry()

    @registry.task
    def onboard(payload: Customer) -> None: ...

    with pytest.raises(InputValidationError) as caught:
        registry.get("onboard").bind({"name": "A", "age": "x", "address": {"city": "B"}}, ctx())
    assert "field 'age': Input should be a valid integer" in str(caught.value)
    assert "(expected integer, got str 'x')" in str(caught.value)


def test_async_tasks_bind_to_a_coroutine() -> None:
    registry = TaskRegistry()

    @registry.task
    async def later(x: int, context: RuntimeContext) -> int:
        await asyncio.sleep(0)
        return x + 1

    spec = registry.get("later")
    assert spec.is_async and not make_registry().get("charge").is_async
    call = spec.bind({"x": 1}, ctx())
    assert asyncio.run(call()) == 2
    assert spec.finish(2) == ("ok", 2)


def test_async_callable_objects_and_partials_are_async() -> None:
    class Fetcher:
        async def __call__(self, url: str) -> str:
            return url

    async def fetch(url: str, retries: int) -> str:
        return f"{url}/{retries}"

    registry = TaskRegistry()
    spec = registry.register(Fetcher(), name="fetcher")
    assert spec.is_async
    assert list(spec.input_schema["properties"]) == ["url"]
    assert asyncio.run(spec.bind({"url": "u"}, ctx())()) == "u"
    partial = registry.register(functools.partial(fetch, retries=2), name="fetch2")
    assert partial.is_async
    assert asyncio.run(partial.bind({"url": "u"}, ctx())()) == "u/2"


# --- finish: result validation -------------------------------------------------------------------


def test_finish_dumps_the_result_to_json_with_the_default_label() -> None:
    spec = make_registry().get("charge")
    label, payload = spec.finish(Receipt(total=3, at=dt.date(2026, 5, 6)))
    assert (label, payload) == ("ok", {"total": 3.0, "at": "2026-05-06"})
    assert spec.finish({"total": "4.5", "at": "2026-05-06"}) == ("ok", {"total": 4.5, "at": "2026-05-06"})


def test_finish_unwraps_routes_and_checks_their_label() -> None:
    registry = TaskRegistry()

    @registry.task(labels=("approved", "rejected"))
    def review(amount: int) -> Route | Receipt:
        raise AssertionError

    spec = registry.get("review")
    assert spec.default_label == "approved"
    assert spec.finish(Route("rejected", {"total": 1, "at": "2026-01-01"}))[0] == "rejected"
    with pytest.raises(TaskResultError) as caught:
        spec.finish(Route("maybe", None), ctx("r1"))
    assert str(caught.value) == (
        "node 'r1' (task 'review') returned label 'maybe', which it does not declare; "
        "declared labels: approved, rejected"
    )
    assert isinstance(caught.value, InputValidationError)


def test_invalid_results_name_the_task_and_expected_type() -> None:
    spec = make_registry().get("charge")
    with pytest.raises(TaskResultError) as caught:
        spec.finish({"total": "much"}, ctx("bill"))
    message = str(caught.value)
    assert message == (
        "node 'bill' (task 'charge') returned an invalid result (expected Receipt object): "
        "field 'total': Input should be a valid number, unable to parse string as a number (got str 'much'); "
        "field 'at': Field required"
    )
    assert caught.value.code == "task.result_invalid"


def test_untyped_results_must_still_be_json_compatible() -> None:
    registry = TaskRegistry()

    @registry.task
    def anything(x: Any) -> Any:
        return x

    spec = registry.get("anything")
    assert spec.finish({"when": dt.date(2026, 1, 1), "n": (1, 2)}) == ("ok", {"when": "2026-01-01", "n": [1, 2]})
    with pytest.raises(TaskResultError, match="task 'anything' returned a result that is not JSON-compatible"):
        spec.finish(object())


# --- the registry as a collection ----------------------------------------------------------------


def test_unknown_task_suggests_close_names() -> None:
    registry = make_registry()
    with pytest.raises(UnknownTaskError) as caught:
        registry.get("chrage")
    assert str(caught.value) == "no task named 'chrage' is registered; did you mean 'charge'?"
    assert caught.value.code == "task.unknown"
    with pytest.raises(UnknownTaskError, match="^no task named 'zzz' is registered$"):
        registry.get("zzz")


def test_collection_protocol() -> None:
    registry = make_registry()
    assert "charge" in registry and "nope" not in registry and 3 not in registry
    assert len(registry) == 1
    assert [spec.name for spec in registry] == ["charge"]
    assert registry.names() == ("charge",)


def test_merged_is_a_union_and_refuses_duplicates() -> None:
    left, right = make_registry(), TaskRegistry()

    @right.task
    def other() -> None: ...

    both = left.merged(right)
    assert both.names() == ("charge", "other")
    assert len(left) == 1 and len(right) == 1
    assert both.merged(left).names() == ("charge", "other")  # the same specs are not duplicates
    with pytest.raises(TaskRegistrationError, match="task 'charge' is already registered"):
        left.merged(make_registry())


def test_specs_compare_by_identity_and_are_hashable() -> None:
    a, b = make_registry().get("charge"), make_registry().get("charge")
    assert a != b and a == a
    assert len({a, b}) == 2

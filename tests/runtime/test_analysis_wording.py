"""Diagnostic wording: messages say what is wrong in plain words and hints say how to fix it."""

from __future__ import annotations

from typing import Any

from runtime import analyze
from runtime._analysis._schemas import kind_text
from tests.runtime.analysis_docs import bind, foreach, route, shop_registry, task, workflow

REGISTRY = shop_registry()

INPUT = {"type": "object", "properties": {
    "customers": {"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": "string"}, "orders": {"type": "array", "items": {"type": "integer"}}},
        "required": ["name", "orders"]}},
    "tags": {"type": "array", "items": {"type": "string"}},
    "region": {"type": "string"},
}, "required": ["customers", "tags", "region"]}


def over_problem(nodes: list[dict[str, Any]], routes: list[dict[str, str]], node_id: str,
                 **extra: Any) -> Any:
    analysis = analyze(workflow(nodes, routes, **extra))
    [problem] = [d for d in analysis.diagnostics if d.node_id == node_id and d.field == "over"]
    return problem


def test_new_loop_over_whole_input_reads_naturally_and_names_lists() -> None:
    problem = over_problem([foreach("foreach", "input"), task("t")],
                           [route("foreach", "loop", "t"), route("t", "ok", "foreach")], "foreach",
                           input_schema=INPUT, state_schema={"type": "object", "properties": {
                               "orders": {"type": "array", "items": {"type": "integer"}}}})
    assert problem.code == "binding.type_mismatch"
    assert problem.severity == "error"
    assert problem.message == "foreach 'foreach' iterates 'input', which is an object, not a list"
    assert problem.hint == "point 'over' at a list such as input.customers, input.tags, state.orders"


def test_hint_offers_lists_of_an_outer_item_and_never_the_wrong_path() -> None:
    problem = over_problem(
        [foreach("outer", "input.customers"), foreach("inner", "context.foreach.outer.item.name"), task("t")],
        [route("outer", "loop", "inner"), route("inner", "loop", "t"), route("t", "ok", "inner"),
         route("inner", "done", "outer")], "inner", input_schema=INPUT)
    assert problem.message == ("foreach 'inner' iterates 'context.foreach.outer.item.name', which is a string, "
                               "not a list")
    assert "context.foreach.outer.item.orders" in problem.hint or "context.loop_item.orders" in problem.hint
    named = problem.hint.removeprefix("point 'over' at a list such as ").split(", ")
    assert len(named) == 3
    assert "context.foreach.outer.item.name" not in named


def test_hint_without_any_list_says_how_to_get_one() -> None:
    problem = over_problem([foreach("each", "input.region"), task("t")],
                           [route("each", "loop", "t"), route("t", "ok", "each")], "each",
                           input_schema={"type": "object", "properties": {"region": {"type": "string"}},
                                         "required": ["region"]})
    assert problem.message == "foreach 'each' iterates 'input.region', which is a string, not a list"
    assert problem.hint.startswith("'over' needs a list: add an array field to the input or state schema")


def test_kind_text_uses_articles() -> None:
    assert kind_text({"type": "object"}) == "an object"
    assert kind_text({"type": "integer"}) == "an integer"
    assert kind_text({"type": ["string", "null"]}) == "a string or null"
    assert kind_text({"type": "array", "items": {"type": "string"}}) == "an array<string>"
    assert kind_text({}) == "any value"


def test_unknown_task_suggests_close_names() -> None:
    analysis = analyze(workflow([task("c", "chrage")], []), registry=REGISTRY)
    [problem] = [d for d in analysis.errors if d.code == "task.unknown"]
    assert (problem.node_id, problem.field) == ("c", "task")
    assert "did you mean 'charge'" in problem.hint


def test_unknown_input_field_hint_lists_declared_fields() -> None:
    analysis = analyze(workflow([task("c", "charge", input=[bind("custmer", "input.name")])], [],
                                input_schema={"type": "object", "properties": {"name": {"type": "string"}}}),
                       registry=REGISTRY)
    [problem] = [d for d in analysis.diagnostics if d.code == "path.unknown_field"]
    assert problem.field == "input.custmer"
    assert "'customer'" in problem.hint and "'order'" in problem.hint


def test_reading_into_a_scalar_context_field_names_where_to_stop() -> None:
    analysis = analyze(workflow(
        [foreach("each", "input.tags"), task("t", input=[bind("x", "context.loop_index.y")])],
        [route("each", "loop", "t"), route("t", "ok", "each")], input_schema=INPUT))
    [problem] = [d for d in analysis.errors if d.node_id == "t"]
    assert problem.message == "'context.loop_index.y' reads into an integer, which has no fields"
    assert problem.hint == "stop the path at 'context.loop_index'"


OBJECTS = {"type": "object", "properties": {
    "short": {"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]},
    "maybe": {"type": "object", "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
              "required": ["sku"]},
    "other": {"not": {"type": "string"}},
    "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
}, "required": ["short", "maybe", "other", "either"]}


def _binding_problem(task_name: str, target: str, path: str) -> Any:
    extra = [bind("customer", "input.short.sku")] if task_name == "charge" else []
    analysis = analyze(workflow([task("a", task_name, input=[bind(target, path), *extra])], [],
                                input_schema=OBJECTS), registry=REGISTRY)
    [problem] = [d for d in analysis.diagnostics if d.field == f"input.{target}"]
    return problem


def test_a_missing_required_property_is_named() -> None:
    problem = _binding_problem("charge", "order", "input.short")
    assert problem.severity == "error"
    assert problem.message == ("'input.short' is an object, but task 'charge' expects an object for 'order': "
                               "it has no field 'qty', which is required")


def test_an_optional_property_warning_speaks_of_the_field() -> None:
    problem = _binding_problem("charge", "order", "input.maybe")
    assert problem.severity == "warning"
    assert problem.message == ("'input.maybe' is an object, but task 'charge' expects an object for 'order': "
                               "its field 'qty' may be missing, and it is required")


def test_a_not_schema_is_a_warning_not_no_value() -> None:
    problem = _binding_problem("count", "n", "input.other")
    assert problem.severity == "warning"
    assert problem.message.startswith("'input.other' is anything but a string, but task 'count' expects an integer")
    assert "no value" not in problem.message


def test_a_union_warning_says_which_alternative_does_not_fit() -> None:
    problem = _binding_problem("count", "n", "input.either")
    assert problem.message.endswith("expects an integer for 'n': it may be a string, which does not fit")


def test_an_object_with_extra_fields_does_not_fit_a_closed_target() -> None:
    from pydantic import BaseModel, ConfigDict

    from runtime.tasks import TaskRegistry

    class Strict(BaseModel):
        model_config = ConfigDict(extra="forbid")
        sku: str

    registry = TaskRegistry()

    @registry.task
    def take(item: Strict) -> None:
        return None

    doc = workflow([task("a", "take", input=[{"target": "item", "value": {"sku": "x", "note": "extra"}}])], [])
    [problem] = analyze(doc, registry=registry).errors
    assert (problem.code, problem.field) == ("binding.type_mismatch", "input.item")
    assert problem.message.endswith("it has field 'note', which is not allowed (additionalProperties is false)")
    ok = workflow([task("a", "take", input=[{"target": "item", "value": {"sku": "x"}}])], [])
    assert analyze(ok, registry=registry).ok

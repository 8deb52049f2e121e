"""Branch case values are checked against the schema of the branch path, the way the engine compares them."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from runtime import analyze
from runtime._algo import _case_matches
from tests.runtime.analysis_docs import route, task, workflow

INPUT = {"type": "object", "properties": {
    "n": {"type": "integer"}, "ratio": {"type": "number"}, "name": {"type": "string"},
    "flag": {"type": "boolean"}, "status": {"enum": ["open", "closed"]},
    "tags": {"type": "array", "items": {"type": "string"}},
    "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
    "required": ["n", "ratio", "name", "flag", "status", "tags", "maybe"]}


def branch_doc(path: str, *cases: dict[str, Any], input_schema: dict[str, Any] | None = None) -> Any:
    node = {"kind": "branch", "id": "b", "path": path, "cases": list(cases)}
    labels = [case["label"] for case in cases]
    return workflow([node, task("t")], [route("b", label, "t") for label in [*labels, "default"]],
                    input_schema=input_schema or INPUT)


def case(op: str, value: Any = None, label: str | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {"label": label or f"c_{op}", "op": op}
    if value is not None:
        data["value"] = value
    return data


def found(analysis: Any) -> list[tuple[str, str, str | None]]:
    return [(d.code, d.severity, d.field) for d in analysis.diagnostics]


def test_equals_with_a_value_of_another_type_never_matches() -> None:
    analysis = analyze(branch_doc("input.n", case("equals", "3", "a"), case("not_equals", True, "b")))
    assert found(analysis) == [("binding.type_mismatch", "error", "cases.0.value"),
                               ("binding.type_mismatch", "error", "cases.1.value")]
    first, second = analysis.errors
    assert "compares 'input.n', which is an integer, with \"3\": they are never equal, so the case never matches" \
        in first.message
    assert first.hint == "compare with a value of type integer"
    assert "always matches" in second.message


def test_equals_follows_json_equality_of_numbers() -> None:
    ok = analyze(branch_doc("input.n", case("equals", 3.0, "a"), case("equals", 3, "b")))
    assert found(ok) == []
    assert found(analyze(branch_doc("input.ratio", case("equals", 3, "a"), case("equals", 2.5, "b")))) == []
    assert found(analyze(branch_doc("input.n", case("equals", 2.5)))) == [
        ("binding.type_mismatch", "error", "cases.0.value")]


def test_null_is_always_a_plausible_value() -> None:
    # a missing path reads as null: "equals null" is how a branch tests for absence
    assert found(analyze(branch_doc("input.n", case("equals"), case("not_equals", None, "x")))) == []


def test_enum_paths_list_their_values_in_the_hint() -> None:
    analysis = analyze(branch_doc("input.status", case("equals", "opened"), case("equals", "open", "fine")))
    assert found(analysis) == [("binding.type_mismatch", "error", "cases.0.value")]
    assert analysis.errors[0].hint == 'compare with one of "open", "closed"'


def test_in_needs_a_list_of_possible_values() -> None:
    analysis = analyze(branch_doc(
        "input.n",
        case("in", [1, 2], "fine"), case("in", ["1", "2"], "dead"), case("in", [1, "2", True], "partly"),
        case("in", 5, "scalar"), case("in", [], "empty"), case("in", label="missing"), case("in", "12", "substr")))
    assert found(analysis) == [
        ("binding.type_mismatch", "error", "cases.1.value"),
        ("binding.type_mismatch", "warning", "cases.2.value"),
        ("binding.type_mismatch", "error", "cases.3.value"),
        ("binding.type_mismatch", "error", "cases.4.value"),
        ("binding.type_mismatch", "error", "cases.5.value"),
        ("binding.type_mismatch", "error", "cases.6.value"),
    ]
    messages = [d.message for d in analysis.diagnostics]
    assert 'none of the values "1", "2" can equal' in messages[0]
    assert '"2", true can never equal' in messages[1]
    assert "op 'in' needs a list of values" in messages[2]
    assert analysis.diagnostics[2].hint == "give a list, e.g. [5], or use op 'equals'"
    assert "is a substring test on a string, but 'input.n' is an integer" in messages[5]


def test_in_with_a_string_or_object_on_a_string_path() -> None:
    assert found(analyze(branch_doc("input.name", case("in", "abc", "sub"), case("in", {"a": 1}, "key"),
                                    case("in", ["x", "y"], "list")))) == []
    # on an array path, equality with a whole list
    assert found(analyze(branch_doc("input.tags", case("in", [["a"], ["b", "c"]])))) == []
    assert found(analyze(branch_doc("input.tags", case("in", ["a", "b"])))) == [
        ("binding.type_mismatch", "error", "cases.0.value")]


def test_comparisons_order_numbers_with_numbers_and_strings_with_strings() -> None:
    analysis = analyze(branch_doc(
        "input.n", case("gt", 3, "fine"), case("lte", 2.5, "fine2"), case("gte", "3", "text"),
        case("lt", True, "bool"), case("gt", label="none")))
    assert found(analysis) == [("binding.type_mismatch", "error", "cases.2.value"),
                               ("binding.type_mismatch", "error", "cases.3.value"),
                               ("binding.type_mismatch", "error", "cases.4.value")]
    assert analysis.diagnostics[0].hint == "compare with a number"
    assert "only numbers and strings are ordered" in analysis.diagnostics[1].message
    # enum membership does not matter for an ordering; the type does
    assert found(analyze(branch_doc("input.status", case("gt", "m")))) == []
    assert found(analyze(branch_doc("input.flag", case("gt", 1)))) == [
        ("binding.type_mismatch", "error", "cases.0.value")]
    # a nullable integer still compares with numbers
    assert found(analyze(branch_doc("input.maybe", case("gt", 1), case("equals", 1, "one")))) == []


def test_exists_and_truthy_take_no_value() -> None:
    analysis = analyze(branch_doc("input.n", case("exists", 1, "a"), case("truthy", label="b"),
                                  case("truthy", False, "c")))
    assert found(analysis) == [("binding.type_mismatch", "warning", "cases.0.value"),
                               ("binding.type_mismatch", "warning", "cases.2.value")]
    assert analysis.ok
    assert "op 'exists', which takes no value: 1 is ignored" in analysis.warnings[0].message
    assert analysis.warnings[0].hint == "remove the value, or use op 'equals' to compare with it"


def test_unknown_path_schema_checks_only_the_value_itself() -> None:
    open_input = {"type": "object"}
    analysis = analyze(branch_doc("input.anything", case("equals", "x"), case("gt", [1], "list"),
                                  case("in", 3, "scalar"), input_schema=open_input))
    assert found(analysis) == [("binding.type_mismatch", "error", "cases.1.value"),
                               ("binding.type_mismatch", "error", "cases.2.value")]
    # an undeclared path is reported on its own; the case values are still judged by themselves
    bad_path = analyze(branch_doc("input.nope", case("in", 3)))
    assert found(bad_path) == [("path.unknown_field", "error", "path"),
                               ("binding.type_mismatch", "error", "cases.0.value")]


# ---------------------------------------------------------------------------
# soundness against the engine's comparison

PATHS: dict[str, st.SearchStrategy[Any]] = {
    "n": st.integers(-5, 5),
    "ratio": st.one_of(st.integers(-5, 5), st.floats(-5, 5, allow_nan=False)),
    "name": st.text(max_size=3),
    "flag": st.booleans(),
    "status": st.sampled_from(["open", "closed"]),
    "tags": st.lists(st.sampled_from(["a", "b"]), max_size=2),
    "maybe": st.one_of(st.none(), st.integers(-5, 5)),
}
scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(-5, 5, allow_nan=False),
                    st.sampled_from(["open", "a", "", "3"]))
values = st.one_of(scalars, st.lists(scalars, max_size=3), st.dictionaries(st.sampled_from(["a", "open"]), scalars,
                                                                          max_size=2))
ops = st.sampled_from(["equals", "not_equals", "in", "exists", "truthy", "gt", "gte", "lt", "lte"])


@settings(max_examples=200, deadline=None)
@given(field=st.sampled_from(sorted(PATHS)), op=ops, value=values, data=st.data())
def test_a_case_reported_as_never_matching_never_matches_in_the_engine(field: str, op: str, value: Any,
                                                                       data: st.DataObject) -> None:
    analysis = analyze(branch_doc(f"input.{field}", case(op, value, "c")))
    errors = [d for d in analysis.errors if d.field == "cases.0.value"]
    if not errors:
        return
    never = op != "not_equals"  # an error on not_equals means it always matches
    for _ in range(10):
        sample = data.draw(PATHS[field])
        assert _case_matches(op, sample, value) is not never, (field, op, value, sample, errors[0].message)

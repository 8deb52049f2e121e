"""runtime.json_type: the schema type name of a JSON value, shared by the analyzer and the schema builder."""

from __future__ import annotations

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.analysis import json_type

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)


@given(JSON)
def test_a_schema_of_that_type_accepts_the_value_and_no_other_type_does(value: object) -> None:
    kind = json_type(value)
    assert jsonschema.Draft202012Validator({"type": kind}).is_valid(value)
    others = {"null", "boolean", "integer", "number", "string", "array", "object"} - {kind}
    if kind == "integer":
        others.discard("number")  # every integer is a number too
    assert not any(jsonschema.Draft202012Validator({"type": other}).is_valid(value) for other in others
                   if not (other == "integer" and isinstance(value, float) and value.is_integer()))


def test_booleans_are_not_integers_and_non_json_values_are_refused() -> None:
    assert json_type(True) == "boolean"
    assert json_type(3) == "integer"
    assert json_type(3.5) == "number"
    with pytest.raises(TypeError, match="not a JSON value: set"):
        json_type({1})

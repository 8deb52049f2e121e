"""Schema patterns are user input: matching one must not hold a worker for hours (ReDoS).

``^(a|a)*$`` against forty ``a`` and a ``!`` backtracks 2**40 times: with ``re`` that is
days of CPU. The catastrophic cases run in a subprocess with a timeout, so a regression
fails this test instead of hanging the suite.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime._compiled import schema_problems, schema_validator
from runtime._schema_patterns import PatternTooExpensive, search, validation_budget
from runtime.errors import InputValidationError
from runtime.inspect import check_run_input

EVIL = "^(a|a)*$"
VICTIM = "a" * 40 + "!"
REPO = Path(__file__).resolve().parents[2]

_SCRIPT = r"""
import json, sys
from runtime import Engine, WorkflowBuilder
from runtime.errors import InputValidationError, ResumeError
from runtime.inspect import check_run_input
from runtime.tasks import builtin_registry
from runtime._inspect import check_resume_value

EVIL, VICTIM = sys.argv[1], sys.argv[2]

def doc(schema):
    graph = WorkflowBuilder("redos", "ReDoS", input_schema=schema)
    graph.use("set_value", id="echo", input=[{"target": "value", "path": "input.name"}])
    return graph.build().model_dump(mode="json")

def outcome(call):
    try:
        call()
    except (InputValidationError, ResumeError) as exc:
        return {"refused": True, "errors": exc.details.get("errors")}
    return {"refused": False}

cases = {
    "pattern": ({"type": "object", "properties": {"name": {"type": "string", "pattern": EVIL}}},
                {"name": VICTIM}),
    "patternProperties": ({"type": "object", "patternProperties": {EVIL: {"type": "integer"}}}, {VICTIM: 1}),
    # additionalProperties is evaluated first here: it matches the patternProperties keys itself
    "additionalProperties": ({"type": "object", "additionalProperties": False,
                              "patternProperties": {EVIL: {}}}, {VICTIM: 1}),
    # a timeout inside `not` must not read as "does not match", which would accept the value
    "not": ({"type": "object", "properties": {"name": {"not": {"pattern": EVIL}}}}, {"name": VICTIM}),
    "propertyNames": ({"type": "object", "propertyNames": {"pattern": EVIL}}, {VICTIM: 1}),
}
results = {name: outcome(lambda s=schema, v=value: check_run_input(doc(s), v))
           for name, (schema, value) in cases.items()}
results["engine"] = outcome(lambda: Engine(builtin_registry()).run(doc(cases["pattern"][0]), {"name": VICTIM}))
results["resume"] = outcome(lambda: check_resume_value(
    {"type": "object", "properties": {"answer": {"type": "string", "pattern": EVIL}}}, ["ok"],
    {"answer": VICTIM}, None, interrupt_id="i1", node_id="ask"))
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def catastrophic() -> dict[str, Any]:
    try:
        done = subprocess.run([sys.executable, "-c", _SCRIPT, EVIL, VICTIM], cwd=REPO, capture_output=True,
                              text=True, timeout=180)
    except subprocess.TimeoutExpired:
        pytest.fail("validating against a catastrophic pattern did not finish: schema patterns have no time limit")
    assert done.returncode == 0, done.stderr
    results: dict[str, Any] = json.loads(done.stdout)
    return results


@pytest.mark.parametrize("case, field", [
    ("pattern", "name"), ("patternProperties", VICTIM), ("additionalProperties", VICTIM), ("not", "name"),
    ("propertyNames", VICTIM), ("engine", "name"), ("resume", "answer"),
])
def test_a_catastrophic_pattern_is_refused_as_too_expensive(catastrophic: dict[str, Any], case: str,
                                                            field: str) -> None:
    result = catastrophic[case]

    assert result["refused"] is True
    [error] = result["errors"]
    assert "too expensive to match" in error["message"] and EVIL in error["message"]
    assert error["field"] == field


def _doc(schema: dict[str, Any]) -> dict[str, Any]:
    return {"id": "p", "nodes": [{"kind": "task", "id": "a", "task": "noop"}], "input_schema": schema}


def test_patterns_still_search_like_json_schema_says() -> None:
    doc = _doc({"type": "object", "properties": {"code": {"type": "string", "pattern": "[0-9]{3}"}}})

    assert check_run_input(doc, {"code": "ab123cd"}) == {"code": "ab123cd"}  # search, not full match
    with pytest.raises(InputValidationError) as caught:
        check_run_input(doc, {"code": "ab12"})
    assert caught.value.details["errors"] == [{"field": "code", "message": "'ab12' does not match '[0-9]{3}'"}]


def test_pattern_properties_and_additional_properties_keep_their_meaning() -> None:
    schema = {"type": "object", "properties": {"id": {"type": "integer"}},
              "patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": False}
    validator = schema_validator(schema)

    assert schema_problems(validator, {"id": 1, "x-a": "ok"}) == []
    assert schema_problems(validator, {"x-a": 3}) == [{"field": "x-a", "message": "3 is not of type 'string'"}]
    assert schema_problems(validator, {"y": 1, "z": 2}) == [
        {"field": "", "message": "'y', 'z' do not match any of the regexes: '^x-'"}]
    closed = schema_validator({"type": "object", "properties": {"id": {}}, "additionalProperties": False})
    assert schema_problems(closed, {"id": 1, "y": 2}) == [
        {"field": "", "message": "Additional properties are not allowed ('y' was unexpected)"}]
    typed = schema_validator({"type": "object", "patternProperties": {"^n": {}},
                              "additionalProperties": {"type": "integer"}})
    assert schema_problems(typed, {"name": "x", "other": "y"}) == [
        {"field": "other", "message": "'y' is not of type 'integer'"}]


def test_one_validation_shares_one_time_budget() -> None:
    with validation_budget(0), pytest.raises(PatternTooExpensive) as caught:
        search("^a$", "a")

    assert caught.value.pattern == "^a$"
    assert search("^a$", "a") is True  # outside a validation only the per-match limit applies


_PIECES = ["a", "b", ".", "[ab]", "[^a]", "^", "$", "a*", "b+", "a?", "(a|b)", "(?:ab)", "\\d", "\\w", "x{2}",
           "a{1,3}", "(?=a)", "(?!b)", "\\b", "(a)\\1"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=5).map("".join), st.text(alphabet="ab1x ", max_size=8))
def test_matching_agrees_with_re_on_ordinary_patterns(pattern: str, text: str) -> None:
    assert search(pattern, text) is (re.search(pattern, text) is not None)

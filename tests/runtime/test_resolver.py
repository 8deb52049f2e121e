"""Subgraph workflows given as JSON mappings are parsed; anything else is refused with a clear error."""

from __future__ import annotations

from typing import Any

import pytest

from runtime import analyze
from runtime.document import WorkflowRef
from runtime.engine import MappingResolver
from runtime.errors import SubgraphResolutionError
from tests.runtime.engine_helpers import engine
from tests.runtime.test_engine_subgraph import caller, child


def test_a_mapping_of_json_documents_runs_like_one_of_workflows() -> None:
    result = engine(workflows={"child": child().model_dump(mode="json")}).run(caller(), {"n": 4})

    assert result.status == "completed", result.error
    assert result.output == {"result": {"y": 8, "calls": 7}}


def test_a_json_document_is_parsed_once() -> None:
    resolver = MappingResolver({("child", 2): child().model_dump(mode="json")})

    first = resolver.resolve(WorkflowRef(id="child", version=2))

    assert first.id == "child" and resolver.resolve(WorkflowRef(id="child", version=2)) is first


def test_a_resolver_function_may_return_json_too() -> None:
    document = child().model_dump(mode="json")
    assert analyze(caller(), workflows=lambda ref: document).ok


@pytest.mark.parametrize(("value", "words"), [
    ({"id": "child", "nodes": 3}, "workflow 'child' is not a valid workflow document (1 problem; first at nodes: "),
    ("child", "workflow 'child' resolved to a str, not a workflow document"),
    (None, "workflow 'child' resolved to a NoneType, not a workflow document"),
])
def test_anything_else_is_refused_naming_the_workflow(value: Any, words: str) -> None:
    with pytest.raises(SubgraphResolutionError) as caught:
        MappingResolver({"child": value}).resolve(WorkflowRef(id="child"))
    assert words in caught.value.message

    [problem] = [d for d in analyze(caller(), workflows={"child": value}).errors]
    assert problem.code == "subgraph.unknown_workflow" and words in problem.message

"""``document_json_schema``: the JSON Schema of a workflow document, generated from the models, agrees with them."""

from __future__ import annotations

import jsonschema
import pytest
from pydantic import ValidationError

from runtime import Workflow, WorkflowBuilder
from runtime.document import document_json_schema


def example() -> dict:
    graph = WorkflowBuilder("hello", "Hello")
    graph.use("set_value", id="greet", input=[{"target": "value", "value": "hi"}],
              output=[{"source": ".", "target": "greeting"}])
    graph.output("greeting", "state.greeting")
    return graph.build().model_dump(mode="json")


def test_a_built_document_fits_the_schema_and_the_refs_follow_the_template() -> None:
    jsonschema.validate(example(), document_json_schema())
    schema = document_json_schema(ref_template="#/components/schemas/X{model}")
    assert "#/components/schemas/XTaskNode" in str(schema) and "TaskNode" in schema["$defs"]


@pytest.mark.parametrize("change", [
    lambda d: d["nodes"][0].update(kind="nope"),
    lambda d: d["nodes"][0].update(timeout_seconds="3"),
    lambda d: d["nodes"][0].update(id=5),
])
def test_what_the_schema_refuses_the_model_refuses_too(change: object) -> None:
    document = example()
    change(document)  # type: ignore[operator]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, document_json_schema())
    with pytest.raises(ValidationError):
        Workflow.model_validate(document)

"""Values come back from the database exactly as saved: NUL characters and object key order survive on every
database (PostgreSQL's jsonb would refuse the one and reorder the other; designer/core/fields.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection

from designer.models import Run, RunEvent, RunStatePart, Workflow

pytestmark = pytest.mark.django_db

# Keys jsonb would reorder (it sorts shorter keys first), strings it would refuse, nesting and every JSON type.
AWKWARD: dict[str, Any] = {
    "outer_loop": {"index": 1, "item": "a\u0000b"},
    "inner": {"zz": [1, 2.5, None, True], "a": "\u0000"},
    "\u0000key": "tab\tnul\u0000é😀",
    "b": [],
}


def keys_in_order(value: Any) -> Any:
    """The value's structure with every object as a list of (key, value) pairs, so equality checks order."""
    if isinstance(value, dict):
        return [(key, keys_in_order(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [keys_in_order(item) for item in value]
    return value


def test_run_values_with_nul_and_key_order_survive_a_save_and_load(workflow: Any) -> None:
    run = Run.objects.create(team=workflow.team, workflow=workflow, document=workflow.document, input=AWKWARD,
                             output={"result": AWKWARD}, run_state={"state": AWKWARD}, error=None)
    RunEvent.objects.create(run=run, seq=1, kind="node_completed", data={"summary": AWKWARD},
                            at=run.created_at)
    RunStatePart.objects.create(run=run, key="items:x", value=[AWKWARD, AWKWARD])

    stored = Run.objects.get(pk=run.pk)
    assert keys_in_order(stored.input) == keys_in_order(AWKWARD)
    assert keys_in_order(stored.output) == keys_in_order({"result": AWKWARD})
    assert keys_in_order(stored.run_state) == keys_in_order({"state": AWKWARD})
    assert stored.error is None  # SQL NULL stays None, not the JSON text "null"
    assert keys_in_order(RunEvent.objects.get(run=run).data) == keys_in_order({"summary": AWKWARD})
    assert keys_in_order(RunStatePart.objects.get(run=run).value) == keys_in_order([AWKWARD, AWKWARD])


def test_an_update_keeps_order_and_nul_too(workflow: Any) -> None:
    run = Run.objects.create(team=workflow.team, workflow=workflow, document=workflow.document)
    Run.objects.filter(pk=run.pk).update(output=AWKWARD, run_state=None)
    stored = Run.objects.get(pk=run.pk)
    assert keys_in_order(stored.output) == keys_in_order(AWKWARD)
    assert stored.run_state is None


def test_a_documents_schema_keeps_its_property_order(workflow: Any) -> None:
    # Property order is the order of the run form's fields; jsonb would put "id" before "zeta_long_name".
    document = dict(workflow.document)
    document["input_schema"] = {"type": "object", "properties": {"zeta_long_name": {"type": "string"},
                                                                  "id": {"type": "number"}}}
    Workflow.objects.filter(pk=workflow.pk).update(document=document)
    properties = Workflow.objects.get(pk=workflow.pk).document["input_schema"]["properties"]
    assert list(properties) == ["zeta_long_name", "id"]


def test_the_column_holds_the_json_text_as_written(workflow: Any) -> None:
    run = Run.objects.create(team=workflow.team, workflow=workflow, document=workflow.document,
                             output={"z": 1, "a": "\u0000"})
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT output FROM {Run._meta.db_table} WHERE id = %s", [run.pk])
        (raw,) = cursor.fetchone()
    # Text on every database (never a jsonb value the driver decoded), in the order it was saved.
    assert isinstance(raw, str)
    assert list(json.loads(raw)) == ["z", "a"]


def nul_document(node_id: str = "echo") -> dict[str, Any]:
    """Echoes ``input.name`` and a literal holding NUL; NUL in the document's metadata too."""
    from runtime import WorkflowBuilder

    graph = WorkflowBuilder("nul", "Nul", input_schema={
        "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        state_schema={"type": "object", "properties": {"echo": {"type": "string"}, "literal": {"type": "string"}}})
    echo = graph.use("set_value", id=node_id, input=[{"target": "value", "path": "input.name"}],
                     output=[{"source": ".", "target": "echo"}])
    literal = graph.use("set_value", id="literal", input=[{"target": "value", "value": "lit\u0000eral"}],
                        output=[{"source": ".", "target": "literal"}])
    graph.set_route(echo, "ok", literal)
    graph.output("echo", "state.echo")
    graph.output("literal", "state.literal")
    document = graph.build().model_dump(mode="json")
    document["metadata"] = {"note": "a\u0000b", "\u0000": "key"}
    return document


@pytest.mark.django_db(transaction=True)
def test_nul_in_a_document_and_a_run_input_round_trips_through_the_api_and_a_worker(
    cast: Any, api: Any, run_worker: Any
) -> None:
    """What the API accepts (NUL in any JSON string) is stored, run by a real worker and given back exactly."""
    from django.urls import reverse

    from designer.workflows import services as workflow_services

    workflow = workflow_services.create_workflow(actor=cast.owner, team=cast.team, name="Nul",
                                                 document=nul_document())
    client = api(cast.editor)
    document = nul_document()
    saved = client.put(reverse("api:workflow-document", args=[workflow.pk]),
                       {"revision": workflow.revision, "document": document}, format="json")
    assert saved.status_code == 200, saved.json()
    loaded = client.get(reverse("api:workflow-document", args=[workflow.pk])).json()["document"]
    assert keys_in_order(loaded["metadata"]) == keys_in_order(document["metadata"])

    started = client.post(reverse("api:workflow-runs", args=[workflow.pk]),
                          {"input": {"name": "x\u0000y"}, "version": "draft"}, format="json")
    assert started.status_code == 201, started.json()
    run_worker()

    detail = client.get(reverse("api:run-detail", args=[started.json()["id"]])).json()
    assert detail["status"] == "completed", detail["error"]
    assert detail["input"] == {"name": "x\u0000y"}
    assert detail["output"] == {"echo": "x\u0000y", "literal": "lit\u0000eral"}

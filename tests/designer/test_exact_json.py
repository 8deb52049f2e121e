"""Values come back from the database exactly as saved: NUL characters and object key order survive on every
database (PostgreSQL's jsonb would refuse the one and reorder the other; designer/fields.py)."""

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

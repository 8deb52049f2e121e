"""The inspector's mapping editor, schema builders and outputs panel, server side: what the rows show for
an imported document's sub-field bindings, keys added and filled, schemas built, inferred and refused."""

from __future__ import annotations

import json
import re
from html import escape
from typing import Any

import pytest
from django.test import Client

from tests.designer.clients import client_for, inspector, post_change
from tests.documents_support import routes

pytestmark = pytest.mark.django_db

LOOPS: dict[str, Any] = {
    "id": "loops",
    "input_schema": {"type": "object", "properties": {"customers": {"type": "array", "items": {
        "type": "object", "properties": {
            "name": {"type": "string"},
            "orders": {"type": "array", "items": {"type": "object", "properties": {"total": {"type": "number"}}}},
        }}}}},
    "nodes": [
        {"id": "customers", "kind": "foreach", "over": "input.customers"},
        {"id": "orders", "kind": "foreach", "over": "context.foreach.customers.item.orders"},
        {"id": "line", "kind": "task", "task": "template", "input": [
            {"target": "template", "value": "{name}: {order.total}"},
            {"target": "values.name", "path": "context.foreach.customers.item.name"},
            {"target": "values.order.total", "path": "context.foreach.orders.item.total"},
            {"target": "values.order.currency", "value": "EUR"},
            {"target": "colour", "value": "red"},
        ]},
    ],
    "routes": routes("customers loop orders loop line ok orders done customers"),
}


@pytest.fixture
def loops(cast: Any) -> Any:
    return cast.workflow("Loops", LOOPS)


def _row(html: str, key: str) -> str:
    """The HTML of one mapping row (up to the next row or the end of the list)."""
    start = re.search(rf'<li class="field-row[^"]*"\s+data-field="{re.escape(escape(key))}"', html)
    assert start, f"no row {key} in the inspector"
    end = html.find('<li class="field-row', start.end())
    return html[start.start():end if end != -1 else len(html)]


def _post(client: Client, workflow: Any, **data: Any) -> Any:
    workflow.refresh_from_db()
    return post_change(client, workflow, **data)


def _line(workflow: Any) -> dict[str, Any]:
    workflow.refresh_from_db()
    return next(n for n in workflow.document["nodes"] if n["id"] == "line")


def test_imported_sub_field_bindings_show_under_their_field_typed_never_as_not_declared(
        cast: Any, loops: Any) -> None:
    html = inspector(client_for(cast.viewer), loops, node="line")
    values = _row(html, "input.values")
    assert "composed of 3 keys below" in values and "not bound" not in values
    assert 'data-testid="field-type">object | null<' in values
    name = _row(html, "input.values.name")
    assert 'data-depth="1"' in name and "context.foreach.customers.item.name" in name
    assert "not declared" not in name and "extra key" not in name
    assert "composed of 2 keys below" in _row(html, "input.values.order")
    total = _row(html, "input.values.order.total")
    assert 'data-depth="2"' in total and "context.foreach.orders.item.total" in total
    currency = _row(html, "input.values.order.currency")  # free-form text shows as text
    assert "= EUR<" in currency and "literal-chip--text" in currency and "&quot;EUR" not in currency
    # a key the task does not declare is shown, marked, with the analyzer's diagnostic
    colour = _row(html, "input.colour")
    assert "extra key" in colour and "path.unknown_field" in colour
    assert "not declared" not in html
    # the viewer sees every binding, and no control to change one
    assert "Choose path…" not in html and "+ key" not in html and 'draggable="true"' not in html


def test_a_required_field_left_unbound_is_marked_and_links_to_its_diagnostic(cast: Any, loops: Any) -> None:
    client = client_for(cast.editor)
    assert _post(client, loops, action="unbind", node="line", field="input.template").status_code == 200
    html = inspector(client, loops, node="line")
    template = _row(html, "input.template")
    assert 'title="required"' in template and "not bound" in template
    assert 'href="#diag-bindingmissing_required-line-inputtemplate"' in template
    page = client.get(f"/workflows/{loops.pk}/edit/").content.decode()
    assert 'id="diag-bindingmissing_required-line-inputtemplate"' in page


def test_adding_a_key_opens_its_row_with_a_picker_typed_for_that_key(cast: Any, loops: Any) -> None:
    client = client_for(cast.editor)
    html = inspector(client, loops, node="line", parent="input.values", key="first name")
    row = _row(html, 'input.values."first name"')
    assert "is-focused" in row and 'class="picker"' in row and "new: choose a path" in row
    assert "context.foreach.orders.item.total" in row  # a free-form key takes any value
    assert _line(loops)["input"] == LOOPS["nodes"][2]["input"]  # nothing saved yet
    assert "name the key first" in inspector(client, loops, node="line", parent="input.values", key=" ")

    # Choosing the path saves the key in the document's binding form (a target sub-path).
    response = _post(client, loops, action="bind", node="line", field='input.values."first name"',
                     path="context.foreach.customers.item.name")
    assert response.status_code == 200
    assert {"target": 'values."first name"', "path": "context.foreach.customers.item.name"} in _line(loops)["input"]


def test_literals_in_keys_are_typed_by_the_analyzer_and_a_composed_key_is_removed_whole(
        cast: Any, loops: Any) -> None:
    client = client_for(cast.editor)
    _post(client, loops, action="literal", node="line", field="input.values.count", value="3")
    _post(client, loops, action="literal", node="line", field="input.template", value="3")
    bound = {b["target"]: b for b in _line(loops)["input"]}
    assert bound["values.count"]["value"] == 3  # free-form key: JSON
    assert bound["template"]["value"] == "3"  # a string field keeps text
    # free-form text that would read back as another type is offered for editing as JSON, so it round-trips
    _post(client, loops, action="literal", node="line", field="input.values.code", value='"3"')
    _post(client, loops, action="literal", node="line", field="input.values.word", value="three")
    bound = {b["target"]: b for b in _line(loops)["input"]}
    assert bound["values.code"]["value"] == "3" and bound["values.word"]["value"] == "three"
    html = inspector(client, loops, node="line")
    assert 'value="&quot;3&quot;" aria-label="Literal value for values.code"' in _row(html, "input.values.code")
    assert 'value="three" aria-label="Literal value for values.word"' in _row(html, "input.values.word")
    assert 'value="3" aria-label="Literal value for values.count"' in _row(html, "input.values.count")
    _post(client, loops, action="unbind-tree", node="line", field="input.values.order")
    targets = [b["target"] for b in _line(loops)["input"]]
    assert targets == ["values.name", "colour", "values.count", "template", "values.code", "values.word"]


def test_data_panel_lists_every_readable_path_to_drag_and_each_row_a_drop_form(cast: Any, loops: Any) -> None:
    html = inspector(client_for(cast.editor), loops, node="line")
    panel = html[html.index('data-testid="data-panel"'):]
    for path in ("input.customers", "context.foreach.customers.item.name", "context.foreach.orders.item.total"):
        assert f'data-drag-path="{path}"' in panel
    assert "frame_id" not in panel  # a loop's run ids stay in the picker's folded list
    # a tree: a loop's item at the top of its group, the item's fields one level below
    depth = {path: int(level) for level, path in re.findall(
        r'data-item d(\d)"\s*(?:draggable="true")?\s*data-drag-path="([^"]+)"', panel)}
    assert depth["input"] == 0 and depth["input.customers"] == 1
    assert depth["context.foreach.orders.item"] == 0 and depth["context.foreach.orders.item.total"] == 1
    assert 'data-drop-field="input.values.name"' in html and 'class="drop-bind"' in html


def _builder(client: Client, workflow: Any, **data: Any) -> Any:
    workflow.refresh_from_db()
    data.setdefault("revision", workflow.revision)
    return client.post(f"/workflows/{workflow.pk}/edit/schema-builder/", data, HTTP_HX_REQUEST="true")


def test_schema_builder_adds_fields_infers_from_a_sample_and_saves(cast: Any, loops: Any) -> None:
    from designer.workflows import schema_builder as sb

    client = client_for(cast.editor)
    start = sb.form_data(sb.fields_of({"type": "object", "properties": {}}))
    html = _builder(client, loops, schema_key="state_schema", op="add", at="f", **start).content.decode()
    assert re.search(r'name="f\.0:name" value="field_1"', html)
    assert "&quot;type&quot;: &quot;string&quot;" in html  # the JSON view follows the builder
    loops.refresh_from_db()
    assert loops.revision == 1  # nothing saved yet

    html = _builder(client, loops, schema_key="input_schema", op="infer", **start,
                    sample='{"customers": [{"name": "Ada", "orders": [{"total": 2.5}]}]}').content.decode()
    assert 'value="customers"' in html and 'value="orders"' in html and 'value="total"' in html

    form = sb.form_data(sb.fields_of(sb.infer_schema({"customers": [{"name": "Ada"}]})))
    response = _builder(client, loops, schema_key="input_schema", op="save", **form)
    assert response["HX-Retarget"] == "#inspector"
    assert json.loads(response["HX-Trigger"])["trellis:document-changed"]["revision"] == 2
    loops.refresh_from_db()
    assert loops.document["input_schema"] == sb.infer_schema({"customers": [{"name": "Ada"}]})


def test_a_default_that_breaks_its_field_is_refused_where_it_is_typed_and_not_saved(
        cast: Any, loops: Any) -> None:
    from designer.workflows import schema_builder as sb

    client = client_for(cast.editor)
    schema = {"type": "object", "properties": {"tier": {"type": "string", "enum": ["gold", "silver"]}}}
    form = {**sb.form_data(sb.fields_of(schema)), "f.0:default": "bronze"}
    html = _builder(client, loops, schema_key="state_schema", op="refresh", **form).content.decode()
    assert 'data-testid="default-error"' in html and 'aria-invalid="true"' in html
    html = _builder(client, loops, schema_key="state_schema", op="save", **form).content.decode()
    assert "Not saved: 1 default" in html
    loops.refresh_from_db()
    assert loops.revision == 1
    # The raw JSON view is held to the same rule.
    broken = {"type": "object", "properties": {"n": {"type": "integer", "default": "x"}}}
    html = _post(client, loops, action="schema-json", schema_key="state_schema", schema=json.dumps(broken)) \
        .content.decode()
    assert "breaks its own field" in html
    loops.refresh_from_db()
    assert loops.revision == 1


def test_builder_is_for_editors_and_names_bad_input(cast: Any, loops: Any) -> None:
    assert _builder(client_for(cast.viewer), loops, schema_key="state_schema", op="add", at="f").status_code == 403
    client = client_for(cast.editor)
    html = _builder(client, loops, schema_key="state_schema", op="infer", sample="{oops").content.decode()
    assert "the sample is not valid JSON" in html
    assert _builder(client, loops, schema_key="nope", op="add").status_code == 400


def test_resume_schema_builder_on_an_interrupt_and_the_question_form_keeps_it(cast: Any) -> None:
    from designer.workflows import schema_builder as sb

    doc = {"id": "ask", "nodes": [{"id": "ask", "kind": "interrupt", "prompt": "?", "labels": ["ok"],
                                   "resume_schema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}]}
    workflow = cast.workflow("Ask", doc)
    client = client_for(cast.editor)
    html = inspector(client, workflow, node="ask")
    assert 'id="builder-resume_schema-ask"' in html and 'value="ok"' in html
    form = sb.form_data(sb.fields_of({"type": "object", "properties": {"note": {"type": "string"}}}))
    _builder(client, workflow, schema_key="resume_schema", node="ask", op="save", **form)
    _post(client, workflow, action="interrupt", node="ask", prompt="Really?", labels="ok, no")
    workflow.refresh_from_db()
    node = workflow.document["nodes"][0]
    assert node["resume_schema"] == {"type": "object", "properties": {"note": {"type": "string"}}}
    assert node["prompt"] == "Really?" and node["labels"] == ["ok", "no"]


def test_workflow_outputs_and_output_bindings_are_chosen_not_typed_as_json(cast: Any, loops: Any) -> None:
    client = client_for(cast.editor)
    html = inspector(client, loops)
    assert '<option value="input.customers">' in html  # the output path picker offers what the analyzer does
    _post(client, loops, action="workflow-output-add", target="everyone", path="input.customers")
    loops.refresh_from_db()
    assert loops.document["outputs"] == [{"target": "everyone", "path": "input.customers"}]
    _post(client, loops, action="workflow-output-remove", index="0")
    loops.refresh_from_db()
    assert loops.document["outputs"] == []

    _post(client, loops, action="output-add", node="line", source=".", target="", new_target="lines",
          mode="append")
    assert _line(loops)["output"] == [{"source": ".", "target": "lines", "mode": "append"}]
    html = inspector(client, loops, node="line")
    assert '<option value="set">replace</option>' in html


def test_the_raw_json_view_saves_a_resume_schema_and_the_builder_shows_it(cast: Any) -> None:
    doc = {"id": "ask", "nodes": [{"id": "ask", "kind": "interrupt", "prompt": "?", "labels": ["ok"]}]}
    workflow = cast.workflow("Ask", doc)
    client = client_for(cast.editor)
    schema = {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]}
    html = _post(client, workflow, action="schema-json", schema_key="resume_schema", node="ask",
                 schema=json.dumps(schema)).content.decode()
    workflow.refresh_from_db()
    assert workflow.document["nodes"][0]["resume_schema"] == schema
    assert 'data-name="note"' in html


ARRAYS: dict[str, Any] = {
    "id": "arrays",
    "input_schema": {"type": "object", "required": ["first", "second", "n"], "properties": {
        "first": {"type": "string"}, "second": {"type": "string"}, "n": {"type": "integer"}}},
    "nodes": [{"id": "gather", "kind": "task", "task": "collect", "input": []},
              {"id": "sum", "kind": "task", "task": "sum_totals", "input": [
                  {"target": "priced.0.order_id", "path": "input.first"},
                  {"target": "priced.0.total", "path": "input.n"}]}],
    "routes": [{"source": "gather", "label": "ok", "target": "sum"}],
}


def test_array_fields_take_items_from_paths_literals_and_keys_in_the_documents_binding_form(cast: Any) -> None:
    workflow = cast.workflow("Arrays", ARRAYS)
    client = client_for(cast.editor)

    def gather() -> list[dict[str, Any]]:
        workflow.refresh_from_db()
        return next(n for n in workflow.document["nodes"] if n["id"] == "gather")["input"]

    items = _row(inspector(client, workflow, node="gather"), "input.items")
    assert "+ item" in items and 'name="key" value="0"' in items and "+ key" not in items
    # "+ item" opens item 0 with its picker, typed as the array's items; nothing is saved yet
    row = _row(inspector(client, workflow, node="gather", parent="input.items", key="0"), "input.items.0")
    assert "item 0" in row and "is-focused" in row and 'class="picker"' in row and "input.first" in row
    assert gather() == []
    assert _post(client, workflow, action="bind", node="gather", field="input.items.0",
                 path="input.first").status_code == 200
    assert _post(client, workflow, action="literal", node="gather", field="input.items.1",
                 value="plain text").status_code == 200
    assert _post(client, workflow, action="literal", node="gather", field="input.items.2", value="3").status_code == 200
    assert gather() == [{"target": "items.0", "path": "input.first"}, {"target": "items.1", "value": "plain text"},
                        {"target": "items.2", "value": 3}]
    html = inspector(client, workflow, node="gather")
    assert "composed of 3 items below" in _row(html, "input.items")
    assert 'name="key" value="3"' in _row(html, "input.items")  # the next item
    assert "= plain text<" in _row(html, "input.items.1")  # text shown as text, not as JSON
    assert "= 3<" in _row(html, "input.items.2")
    # removing the first item moves the others up: items stay numbered 0, 1, ...
    _post(client, workflow, action="unbind", node="gather", field="input.items.0")
    assert gather() == [{"target": "items.0", "value": "plain text"}, {"target": "items.1", "value": 3}]

    # an array of objects: each item takes keys, typed by the item schema, with its declared keys offered
    html = inspector(client, workflow, node="sum")
    item = _row(html, "input.priced.0")
    assert "composed of 2 keys below" in item and "+ item" not in item
    customer = _row(html, "input.priced.0.customer_name")  # its declared keys are rows, required ones marked
    assert 'title="required"' in customer and "not bound" in customer
    assert 'data-testid="field-type">number<' in _row(html, "input.priced.0.total")
    # the analyzer checks each key against the item's schema
    assert "binding.type_mismatch" not in _row(html, "input.priced.0.order_id")
    _post(client, workflow, action="bind", node="sum", field="input.priced.1.order_id", path="input.n")
    row = _row(inspector(client, workflow, node="sum"), "input.priced.1.order_id")
    assert "binding.type_mismatch" in row and "item 1" in _row(inspector(client, workflow, node="sum"),
                                                                "input.priced.1")


def test_a_gap_in_array_items_is_refused_and_the_document_kept(cast: Any) -> None:
    workflow = cast.workflow("Arrays", ARRAYS)
    before = workflow.revision
    response = _post(client_for(cast.editor), workflow, action="bind", node="gather", field="input.items.1",
                     path="input.first")
    assert "number them 0, 1, 2" in response.content.decode()
    workflow.refresh_from_db()
    assert workflow.revision == before

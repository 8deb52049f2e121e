"""The editor page's server side: page access, palette, inspector edits saved with revisions, pickers."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.test import Client

from designer.access import permissions
from designer.core.errors import ActionForbidden, BadRequest, ObjectNotFound
from designer.workflows import operations as edits
from designer.workflows import services as workflow_services
from tests.designer.clients import client_for, inspector, post_change
from tests.designer.statements import access_reads, captured
from tests.documents_support import routes

pytestmark = pytest.mark.django_db

NESTED: dict[str, Any] = {
    "id": "nested",
    "input_schema": {"type": "object", "properties": {"customers": {"type": "array", "items": {
        "type": "object", "properties": {
            "name": {"type": "string"}, "tier": {"type": "string"},
            "orders": {"type": "array", "items": {"type": "object", "properties": {"sku": {"type": "string"}}}},
        }}}}},
    "nodes": [
        {"id": "customers", "kind": "foreach", "over": "input.customers"},
        {"id": "orders", "kind": "foreach", "over": "context.foreach.customers.item.orders"},
        {"id": "inner", "kind": "task", "task": "set_value",
         "input": [{"target": "value", "path": "context.foreach.orders.item.sku"}]},
        {"id": "after", "kind": "task", "task": "set_value"},
    ],
    "routes": routes("customers loop orders loop inner ok orders done after ok customers"),
    "metadata": {"positions": {"orders": {"x": 1, "y": 2}}},
}


@pytest.fixture
def nested(cast: Any) -> Any:
    return cast.workflow("Nested", NESTED)


def _node(workflow: Any, node_id: str) -> dict[str, Any]:
    workflow.refresh_from_db()
    return next(n for n in workflow.document["nodes"] if n["id"] == node_id)


# --- page access -------------------------------------------------------------------------


def test_editor_page_for_members_only(cast: Any, workflow: Any) -> None:
    url = f"/workflows/{workflow.pk}/edit/"
    page = client_for(cast.editor).get(url)
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-can-edit="true"' in html and 'data-editor-canvas' in html
    assert f'id="editor-revision" name="revision" value="{workflow.revision}"' in html
    viewer = client_for(cast.viewer).get(url).content.decode()
    assert 'data-can-edit="false"' in viewer and "data-readonly" in viewer and "data-template" not in viewer
    assert client_for(cast.stranger).get(url).status_code == 404
    assert Client().get(url).status_code == 302


def test_palette_lists_catalogue_and_control_nodes_and_searches(cast: Any, workflow: Any) -> None:
    client = client_for(cast.editor)
    html = client.get(f"/workflows/{workflow.pk}/edit/palette/", {"q": "price"}, HTTP_HX_REQUEST="true")
    text = html.content.decode()
    assert 'data-palette="task:price_order"' in text
    assert 'data-palette="task:set_value"' not in text
    full = client.get(f"/workflows/{workflow.pk}/edit/palette/", HTTP_HX_REQUEST="true").content.decode()
    for control in ("foreach:For each", "branch:Branch", "interrupt:Interrupt", "subgraph:Subgraph"):
        assert f'data-palette="{control}"' in full
    # No published workflow in the team yet: the subgraph control says why it is disabled.
    assert "Publish another workflow of this team first" in full


# --- edits --------------------------------------------------------------------------------


def test_bind_saves_with_revision_and_asks_the_canvas_to_reload(cast: Any, nested: Any) -> None:
    response = post_change(client_for(cast.editor), nested, action="bind", node="after", field="input.value",
                     path="context.foreach.customers.item.name")
    assert response.status_code == 200
    trigger = json.loads(response["HX-Trigger"])
    changed = trigger["trellis:document-changed"]
    assert {key: changed[key] for key in ("revision", "node")} == {"revision": 2, "node": "after"}
    # The canvas keeps the panel's undo: the node as it was before the binding.
    before = next(n for n in nested.document["nodes"] if n["id"] == "after")  # not refreshed yet
    assert changed["undo"] == [{"op": "put_nodes", "nodes": [before]}]
    assert _node(nested, "after")["input"] == [{"target": "value", "path": "context.foreach.customers.item.name"}]
    html = response.content.decode()
    # The page's revision is the canvas store's alone: the panel's answer does not overwrite it.
    assert 'data-node="after"' in html and 'id="editor-revision"' not in html


def test_a_stale_panel_edit_is_rebased_unless_it_sets_what_was_set_since(cast: Any, nested: Any) -> None:
    client = client_for(cast.editor)
    assert post_change(client, nested, action="start", node="after").status_code == 200
    # The same field as the save it missed (a tab that sends no id: every earlier save is another's): nothing
    # changes, and the notice says what was kept.
    stale = post_change(client, nested, revision=1, action="start", node="inner")
    trigger = json.loads(stale["HX-Trigger"])
    assert trigger["trellis:notice"]["kind"] == "conflict"
    assert trigger["trellis:notice"]["message"].startswith("Eddie changed the workflow's start first (revision 2)")
    assert trigger["trellis:notice"]["action"]["ops"] == [{"op": "set_start", "node": "inner"}]
    assert trigger["trellis:document-changed"]["revision"] == 2
    nested.refresh_from_db()
    assert nested.revision == 2 and nested.document["start"] == "after"
    # Another field: applied on top of the newer draft.
    rebased = post_change(client, nested, revision=1, action="unbind", node="inner", field="input.value")
    assert json.loads(rebased["HX-Trigger"])["trellis:document-changed"]["revision"] == 3
    assert _node(nested, "inner")["input"] == []
    nested.refresh_from_db()
    assert nested.document["start"] == "after"


def test_literal_values_are_typed_by_the_field_schema(cast: Any, nested: Any) -> None:
    client = client_for(cast.editor)
    post_change(client, nested, action="literal", node="after", field="input.value", value="[1, 2]")
    assert _node(nested, "after")["input"] == [{"target": "value", "value": [1, 2]}]
    assert edits.literal_value("hello", {"type": "string"}) == "hello"
    assert edits.literal_value("42", {"type": "string"}) == "42"
    assert edits.literal_value("42", {"type": "integer"}) == 42
    with pytest.raises(BadRequest, match="not a valid integer"):
        edits.literal_value("forty", {"type": "integer"})


def test_rename_follows_routes_start_positions_and_foreach_paths(cast: Any, nested: Any) -> None:
    response = post_change(client_for(cast.editor), nested, action="basics", node="orders", id="lines",
                           name="Order lines", description="")
    assert json.loads(response["HX-Trigger"])["trellis:document-changed"]["node"] == "lines"
    nested.refresh_from_db()
    doc = nested.document
    assert {(r["source"], r["target"]) for r in doc["routes"]} >= {("customers", "lines"), ("inner", "lines")}
    assert doc["metadata"]["positions"] == {"lines": {"x": 1, "y": 2}}
    assert _node(nested, "inner")["input"][0]["path"] == "context.foreach.lines.item.sku"
    assert _node(nested, "lines")["name"] == "Order lines"


def test_rename_refuses_ids_that_are_not_path_keys_or_taken(cast: Any, nested: Any) -> None:
    client = client_for(cast.editor)
    for bad, message in (("has space", "letters, digits"), ("customers", "already has the id")):
        response = post_change(client, nested, action="basics", node="orders", id=bad, name="", description="")
        assert message in response.content.decode()
        assert "HX-Trigger" not in response
    nested.refresh_from_db()
    assert nested.revision == 1


def test_settings_with_invalid_json_are_refused_with_the_reason(cast: Any, nested: Any) -> None:
    response = post_change(client_for(cast.editor), nested, action="settings", input_schema="{not json",
                     state_schema="", outputs="[]", start="")
    assert "the input schema is not valid JSON" in response.content.decode()
    nested.refresh_from_db()
    assert nested.revision == 1


def test_hostile_json_in_panels_is_refused_with_the_reason_not_a_server_error(cast: Any, nested: Any) -> None:
    client = client_for(cast.editor)
    deep = "[" * 5000 + "]" * 5000
    for fields, reason in (
        ({"action": "settings", "input_schema": deep, "state_schema": "", "outputs": "[]", "start": ""},
         "nested more than"),
        ({"action": "settings", "input_schema": '{"type": "object", "x": NaN}', "state_schema": "",
          "outputs": "[]", "start": ""}, "input schema"),
        ({"action": "literal", "node": "after", "field": "input.value", "value": deep}, "nested more than"),
    ):
        response = post_change(client, nested, **fields)
        assert response.status_code < 500
        assert reason in response.content.decode()
    nested.refresh_from_db()
    assert nested.revision == 1


def test_viewers_cannot_edit(cast: Any, nested: Any) -> None:
    response = post_change(client_for(cast.viewer), nested, action="start", node="after")
    assert response.status_code == 403
    nested.refresh_from_db()
    assert nested.revision == 1


# --- panels -------------------------------------------------------------------------------


def _picker_paths(client: Client, workflow: Any, node: str, field: str, **extra: str) -> list[str]:
    html = client.get(f"/workflows/{workflow.pk}/edit/picker/", {"node": node, "field": field, **extra},
                      HTTP_HX_REQUEST="true").content.decode()
    return [chunk.split('"', 1)[0] for chunk in html.split('data-path="')[1:]]


def test_picker_never_offers_a_loop_after_its_done(cast: Any, nested: Any) -> None:
    client = client_for(cast.editor)
    inside = _picker_paths(client, nested, "inner", "input.value")
    assert "context.foreach.orders.item.sku" in inside and "context.foreach.customers.item.name" in inside
    after = _picker_paths(client, nested, "after", "input.value", all="1")
    assert "context.foreach.customers.item.name" in after
    assert not [p for p in after if p.startswith("context.foreach.orders")]


def test_picker_offers_only_arrays_for_foreach_over_and_groups_outermost_first(cast: Any, nested: Any) -> None:
    client = client_for(cast.editor)
    offered = _picker_paths(client, nested, "orders", "over")
    assert "context.foreach.customers.item.orders" in offered and "input.customers" in offered
    assert "context.foreach.customers.item.name" not in offered
    html = client.get(f"/workflows/{nested.pk}/edit/picker/", {"node": "inner", "field": "input.value"},
                      HTTP_HX_REQUEST="true").content.decode()
    assert html.index('data-foreach="customers"') < html.index('data-foreach="orders"')
    searched = _picker_paths(client, nested, "inner", "input.value", q="sku", part="results")
    assert searched == ["context.foreach.orders.item.sku"]


def test_inspector_focuses_a_field_with_its_picker_open(cast: Any, nested: Any) -> None:
    html = client_for(cast.editor).get(f"/workflows/{nested.pk}/edit/inspector/",
                                    {"node": "inner", "field": "input.value"}, HTTP_HX_REQUEST="true")
    text = html.content.decode()
    assert re.search(r'class="field-row [^"]*is-focused', text) and 'class="picker"' in text
    assert "Inside the loop body of" in text


def test_diagnostics_partial_lists_every_diagnostic_with_its_node_and_field(cast: Any, nested: Any) -> None:
    client = client_for(cast.editor)
    post_change(client, nested, action="unbind", node="inner", field="input.value")
    nested.refresh_from_db()
    post_change(client, nested, action="bind", node="after", field="input.value", path="context.foreach.orders.item")
    html = client.get(f"/workflows/{nested.pk}/edit/diagnostics/", HTTP_HX_REQUEST="true").content.decode()
    assert 'data-focus-node="after" data-focus-field="input.value"' in html
    assert 'data-code="path.inactive_foreach"' in html
    # The severity is a word people see and hear alike; the shape beside it is hidden from screen readers.
    assert '<span class="sev" aria-hidden="true">●</span>' in html and '<span class="sev-word">error</span>' in html
    assert 'aria-label="error"' not in html


def test_publish_answers_with_a_notice(cast: Any, workflow: Any, nested: Any) -> None:
    client = client_for(cast.editor)
    ok = client.post(f"/workflows/{workflow.pk}/edit/publish/", HTTP_HX_REQUEST="true")
    assert ok.status_code == 204
    notice = json.loads(ok["HX-Trigger"])["trellis:notice"]
    assert notice == {"kind": "success", "message": "Published version 1 of Simple flow."}
    # The run panel reloads on this, so it offers the new version without a page reload.
    assert json.loads(ok["HX-Trigger"])["trellis:version-published"] == {"number": 1}
    # set_value needs no input: still ok
    post_change(client, nested, action="unbind", node="inner", field="input.value")
    nested.refresh_from_db()
    post_change(client, nested, action="bind", node="after", field="input.value", path="context.foreach.orders.item")
    refused = client.post(f"/workflows/{nested.pk}/edit/publish/", HTTP_HX_REQUEST="true")
    notice = json.loads(refused["HX-Trigger"])["trellis:notice"]
    assert notice["kind"] == "error" and notice["message"].startswith("Not published: the draft has 1 error")
    assert not nested.versions.exists() and "trellis:version-published" not in json.loads(refused["HX-Trigger"])
    assert client_for(cast.viewer).post(f"/workflows/{workflow.pk}/edit/publish/").status_code == 403


def test_settings_save_schemas_outputs_and_start(cast: Any, nested: Any) -> None:
    schema = {"type": "object", "properties": {"customers": {"type": "array"}}}
    response = post_change(client_for(cast.editor), nested, action="settings", input_schema=json.dumps(schema),
                     state_schema="", outputs='[{"target": "first", "path": "input.customers"}]', start="customers")
    changed = json.loads(response["HX-Trigger"])["trellis:document-changed"]
    assert (changed["revision"], changed["node"]) == (2, None)
    assert [op["op"] for op in changed["undo"]] == ["set_fields"]
    assert set(changed["undo"][0]["set"]) == {"input_schema", "outputs", "start"}
    nested.refresh_from_db()
    doc = nested.document
    assert doc["input_schema"] == schema and doc["start"] == "customers"
    assert doc["state_schema"] == {"type": "object", "properties": {}}
    assert doc["outputs"] == [{"target": "first", "path": "input.customers"}]


# --- branch and interrupt inspectors ---------------------------------------------------------

APPROVAL: dict[str, Any] = {
    "id": "approval",
    "input_schema": {"type": "object", "properties": {
        "amount": {"type": "number"}, "requester": {"type": "string"}}, "required": ["amount", "requester"]},
    "nodes": [
        {"id": "size", "kind": "branch", "path": "input", "cases": [{"label": "yes", "op": "truthy"}]},
        {"id": "review", "kind": "interrupt", "prompt": "", "labels": ["ok"]},
        {"id": "done", "kind": "task", "task": "set_value"},
    ],
    "routes": routes("size yes review", "size default done", "review ok done"),
}


@pytest.fixture
def approval(cast: Any) -> Any:
    return cast.workflow("Approval", APPROVAL)


def test_branch_path_is_picked_from_every_type_and_saved(cast: Any, approval: Any) -> None:
    client = client_for(cast.editor)
    html = inspector(client, approval, node="size", field="path")
    assert 'data-field="path"' in html and 'class="picker"' in html and "Compare the value at" in html
    offered = _picker_paths(client, approval, "size", "path")
    assert {"input", "input.amount", "input.requester"} <= set(offered)  # a branch compares any value
    post_change(client, approval, action="bind", node="size", field="path", path="input.amount")
    assert _node(approval, "size")["path"] == "input.amount"
    refused = post_change(client, approval, action="bind", node="size", field="path", path="input..amount")
    assert 'class="inspector-error"' in refused.content.decode()
    approval.refresh_from_db()
    assert approval.revision == 2


def test_branch_cases_are_saved_typed_in_order_and_blank_rows_dropped(cast: Any, approval: Any) -> None:
    client = client_for(cast.editor)
    post_change(client, approval, action="bind", node="size", field="path", path="input.amount")
    approval.refresh_from_db()
    response = client.post(f"/workflows/{approval.pk}/edit/change/", {
        "revision": approval.revision, "action": "branch", "node": "size",
        "case_label": ["large", " ", "exact"], "case_op": ["gt", "equals", "equals"],
        "case_value": ["1000", "", "500"], "default_label": "small",
    }, HTTP_HX_REQUEST="true")
    assert json.loads(response["HX-Trigger"])["trellis:document-changed"]["node"] == "size"
    node = _node(approval, "size")
    assert node["cases"] == [{"label": "large", "op": "gt", "value": 1000},
                             {"label": "exact", "op": "equals", "value": 500}]
    assert node["default_label"] == "small"
    # The labels the canvas draws come from the analyzer: the cases, the default, then error.
    api = client.get(f"/api/workflows/{approval.pk}/validate/").json()
    assert api["labels"]["size"] == ["large", "exact", "small", "error"]
    approval.refresh_from_db()
    bad = client.post(f"/workflows/{approval.pk}/edit/change/", {
        "revision": approval.revision, "action": "branch", "node": "size",
        "case_label": ["x"], "case_op": ["matches"], "case_value": [""],
    }, HTTP_HX_REQUEST="true")
    assert "unknown comparison &#x27;matches&#x27;" in bad.content.decode()


def test_branch_cases_are_added_with_fresh_labels_and_removed_by_row(cast: Any, approval: Any) -> None:
    client = client_for(cast.editor)
    for _ in range(2):
        post_change(client, approval, action="case-add", node="size")
        approval.refresh_from_db()
    labels = [case["label"] for case in _node(approval, "size")["cases"]]
    assert labels == ["yes", "case_2", "case_3"]
    html = inspector(client, approval, node="size")
    assert 'aria-label="Label of case 3"' in html and 'value="case_3"' in html
    post_change(client, approval, action="case-remove", node="size", index="0")
    assert [case["label"] for case in _node(approval, "size")["cases"]] == ["case_2", "case_3"]
    approval.refresh_from_db()
    gone = post_change(client, approval, action="case-remove", node="size", index="5")
    assert "that row no longer exists" in gone.content.decode()


def test_interrupt_question_labels_and_resume_schema_are_saved(cast: Any, approval: Any) -> None:
    client = client_for(cast.editor)
    schema = {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]}
    response = post_change(client, approval, action="interrupt", node="review", prompt="Approve this spend?",
                     labels="approve, reject,, ", resume_schema=json.dumps(schema))
    assert json.loads(response["HX-Trigger"])["trellis:document-changed"]["node"] == "review"
    node = _node(approval, "review")
    assert node["prompt"] == "Approve this spend?"
    assert node["labels"] == ["approve", "reject"]
    assert node["resume_schema"] == schema
    html = response.content.decode()
    assert 'value="approve, reject"' in html and "&quot;note&quot;" in html
    # The old route on "ok" now names a label the node cannot emit: the analyzer says so.
    api = client.get(f"/api/workflows/{approval.pk}/validate/").json()
    assert api["labels"]["review"] == ["approve", "reject", "error"]
    assert "route.unknown_label" in {d["code"] for d in api["diagnostics"]}
    approval.refresh_from_db()
    for text, message in (("{oops", "the resume schema is not valid JSON"), ("[1]", "is a JSON Schema object")):
        refused = post_change(client, approval, action="interrupt", node="review", prompt="", labels="ok",
                        resume_schema=text)
        assert message in refused.content.decode()
    approval.refresh_from_db()
    assert approval.revision == 2
    post_change(client, approval, action="interrupt", node="review", prompt="", labels=" , ", resume_schema="")
    node = _node(approval, "review")
    assert node["labels"] == ["ok"] and node["resume_schema"] == {"type": "object", "properties": {}}


def test_interrupt_payload_rows_are_added_bound_with_the_picker_and_removed(cast: Any, approval: Any) -> None:
    client = client_for(cast.editor)
    html = inspector(client, approval, node="review")
    assert "Prompt payload" in html and 'aria-label="New payload field"' in html
    assert 'data-field="input.amount"' not in html

    # Adding a field opens its row with the picker; nothing is saved until a source is chosen.
    html = inspector(client, approval, node="review", target="amount")
    assert re.search(r'class="field-row [^"]*is-focused[^"]*"\s+data-field="input\.amount"', html)
    assert 'aria-label="Paths for input.amount"' in html
    approval.refresh_from_db()
    assert approval.revision == 1
    offered = _picker_paths(client, approval, "review", "input.amount")
    assert {"input.amount", "input.requester", "input"} <= set(offered)  # no schema: every type fits

    post_change(client, approval, action="bind", node="review", field="input.amount", path="input.amount")
    approval.refresh_from_db()
    post_change(client, approval, action="literal", node="review", field="input.note", value="please check")
    approval.refresh_from_db()
    post_change(client, approval, action="bind", node="review", field="input.who.name", path="input.requester")
    assert _node(approval, "review")["input"] == [
        {"target": "amount", "path": "input.amount"},
        {"target": "note", "value": "please check"},
        {"target": "who.name", "path": "input.requester"},
    ]
    html = inspector(client, approval, node="review")
    for key in ("input.amount", "input.note", "input.who.name"):
        assert f'data-field="{key}"' in html
    # a text literal shows as text (no JSON quotes)
    # its Remove button is named by its text and described by the row's field name
    assert 'aria-describedby="fname-inputnote">Remove</button>' in html and 'id="fname-inputnote">note<' in html
    assert "= please check<" in html
    # Re-adding a bound field focuses its row instead of adding another.
    html = inspector(client, approval, node="review", target=" amount ")
    assert len(re.findall(r'<li class="field-row[^"]*"\s+data-field="input\.amount"', html)) == 1
    assert re.search(r'class="field-row [^"]*is-focused[^"]*"\s+data-field="input\.amount"', html)

    approval.refresh_from_db()
    post_change(client, approval, action="unbind", node="review", field="input.note")
    assert [b["target"] for b in _node(approval, "review")["input"]] == ["amount", "who.name"]
    # The engine hands this payload to the person answering: the analyzer accepts it.
    api = client.get(f"/api/workflows/{approval.pk}/validate/").json()
    assert api["ok"], api["diagnostics"]


def test_interrupt_payload_field_names_are_checked_as_paths(cast: Any, approval: Any) -> None:
    client = client_for(cast.editor)
    for bad in ("", "a..b", "items[0"):
        html = inspector(client, approval, node="review", target=bad)
        assert 'class="inspector-error"' in html, bad
        assert not re.search(r'class="field-row [^"]*is-focused', html)


def test_picker_folds_each_loops_run_ids_below_its_item_fields(cast: Any, nested: Any) -> None:
    client = client_for(cast.editor)
    url = f"/workflows/{nested.pk}/edit/picker/"
    html = client.get(url, {"node": "inner", "field": "input.value"}, HTTP_HX_REQUEST="true").content.decode()
    for loop in ("customers", "orders"):
        group = html[html.index(f'data-foreach="{loop}"'):]
        group = group[:group.index("</section>")]
        folded = group[group.index('<details class="picker__ids" >'):]
        assert f"Run ids of {loop} (5)" in folded
        for name in ("node_id", "activation_id", "frame_id", "scope_id", "lineage_id"):
            assert f'data-path="context.foreach.{loop}.{name}"' in folded
        assert f'data-path="context.foreach.{loop}.item' in group[:group.index("<details")]
        assert f'data-path="context.foreach.{loop}.index"' in group[:group.index("<details")]
    # A search shows what it finds unfolded; a bound run id keeps its fold open.
    found = client.get(url, {"node": "inner", "field": "input.value", "q": "frame"},
                       HTTP_HX_REQUEST="true").content.decode()
    assert "<details" not in found and 'data-path="context.foreach.orders.frame_id"' in found
    post_change(client, nested, action="bind", node="inner", field="input.value",
                path="context.foreach.orders.frame_id")
    bound = client.get(url, {"node": "inner", "field": "input.value"}, HTTP_HX_REQUEST="true").content.decode()
    assert '<details class="picker__ids" open>' in bound
    assert bound.count('<details class="picker__ids" open>') == 1


def test_picker_after_a_concurrent_loop_marks_a_field_its_items_overwrite(cast: Any) -> None:
    """The inner loop's results land in state.skus once per customer; with four customers at once the picker
    after the loop says so on that path (and on nothing else)."""
    document = json.loads(json.dumps(NESTED))
    document["state_schema"] = {"type": "object", "properties": {"skus": {"type": "array"},
                                                                 "note": {"type": "string"}}}
    customers, orders = document["nodes"][0], document["nodes"][1]
    customers["max_concurrency"] = 4
    customers["name"] = "Customers"
    orders["results"] = "skus"
    document["routes"][-1] = {"source": "after", "label": "ok", "target": "customers"}
    workflow = cast.workflow("Racing", document)
    html = client_for(cast.editor).get(f"/workflows/{workflow.pk}/edit/picker/",
                                       {"node": "after", "field": "input.value", "all": "1"},
                                       HTTP_HX_REQUEST="true").content.decode()
    options = {chunk.split('"', 1)[0]: chunk.split("</button>", 1)[0] for chunk in html.split('data-path="')[1:]}
    assert "last item wins" in options["state.skus"] and "Customers runs items at once" in options["state.skus"]
    assert [path for path, text in options.items() if "last item wins" in text] == ["state.skus"]
    customers["max_concurrency"] = 1
    calm = cast.workflow("Calm", document)
    html = client_for(cast.editor).get(f"/workflows/{calm.pk}/edit/picker/",
                                       {"node": "after", "field": "input.value", "all": "1"},
                                       HTTP_HX_REQUEST="true").content.decode()
    assert "state.skus" in html and "last item wins" not in html


def test_a_boolean_literal_is_edited_with_a_checkbox_and_an_unchecked_box_saves_false(cast: Any) -> None:
    workflow = cast.workflow("Tidy", {"id": "tidy", "input_schema": {"type": "object"}, "nodes": [
        {"id": "tidy", "kind": "task", "task": "collect", "input": [{"target": "items", "value": [1]}]}]})
    client = client_for(cast.editor)
    row = inspector(client, workflow, node="tidy").split('data-field="input.flatten"', 1)[1].split("</li>", 1)[0]
    assert re.search(r'<label class="check"><input type="checkbox" name="value" value="true"> flatten</label>', row)
    assert 'name="checkbox"' in row and 'type="text" name="value"' not in row
    post_change(client, workflow, action="literal", node="tidy", field="input.flatten", checkbox="1", value="true")
    workflow.refresh_from_db()
    assert {"target": "flatten", "value": True} in _node(workflow, "tidy")["input"]
    row = inspector(client, workflow, node="tidy").split('data-field="input.flatten"', 1)[1].split("</li>", 1)[0]
    assert 'value="true" checked>' in row
    post_change(client, workflow, action="literal", node="tidy", field="input.flatten", checkbox="1")  # unchecked
    workflow.refresh_from_db()
    assert {"target": "flatten", "value": False} in _node(workflow, "tidy")["input"]



def test_a_publish_from_the_editor_reads_the_callers_access_once(cast: Any, workflow: Any) -> None:
    """The editor's view read the caller's access (``load``); the publish service is given it rather than reading it
    again. Before: 12 statements, the access read twice."""
    client = client_for(cast.editor)
    url = f"/workflows/{workflow.pk}/edit/publish/"
    response, statements = captured(lambda: client.post(url, {"note": "first"}, HTTP_HX_REQUEST="true"))
    assert response.status_code == 204 and workflow.versions.get().note == "first"
    # Session, user, the workflow, the access, the analysis's two (newest version, secret names); then in the
    # service's transaction (savepoint here, in the test's): the locked workflow, the latest number, the version.
    assert (len(statements), access_reads(statements)) == (11, 1), [sql[:100] for sql in statements]
    assert statements[6].startswith("SAVEPOINT") and not access_reads(statements[6:])


def test_publish_reads_the_access_itself_when_the_one_given_does_not_prove_editor(cast: Any, workflow: Any) -> None:
    """An access read for someone else, or showing a lower role, does not let anyone publish."""
    editor_access = permissions.require_workflow_access(cast.editor, workflow, "editor")
    with pytest.raises(ActionForbidden):
        workflow_services.publish_workflow(actor=cast.viewer, workflow=workflow, access=editor_access)
    with pytest.raises(ObjectNotFound):
        workflow_services.publish_workflow(actor=cast.stranger, workflow=workflow, access=editor_access)
    viewer_access = permissions.require_workflow_access(cast.viewer, workflow, "viewer")
    with pytest.raises(ActionForbidden):
        workflow_services.publish_workflow(actor=cast.viewer, workflow=workflow, access=viewer_access)
    assert not workflow.versions.exists()
    _, statements = captured(lambda: workflow_services.publish_workflow(actor=cast.editor, workflow=workflow,
                                                                        access=editor_access))
    assert access_reads(statements) == 0 and workflow.versions.count() == 1

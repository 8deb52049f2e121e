"""The inspector's mapping editor and schema builders in headless Chromium, against a live server, the real
database and a real worker process.

A person defines the input and state schemas with the builder (never typing JSON), builds the nested
customers -> orders workflow by drag and drop, composes the template task's ``values`` from the outer loop's
customer and the inner loop's order (one key through the picker, one dragged from the data panel), runs it with
``max_concurrency: 4`` on both loops and gets exactly one line per order. A viewer sees that mapping read-only,
an imported document's sub-field bindings show under their field, and the schema can be inferred from a sample.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from designer.models import Membership, Run
from designer.workflows import catalog
from designer.workflows import services as workflow_services
from designer.workflows.analysis import parse_document
from runtime import Engine
from tests.browser.editor_page import EditorPage
from tests.documents_support import routes

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FINISH_MS = 60_000  # a separate worker process on a busy 2-core machine

#: What the builder must produce for the customers -> orders input.
INPUT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"customers": {"type": "array", "items": {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "orders": {"type": "array", "items": {"type": "object", "properties": {"total": {"type": "number"}},
                                              "required": ["total"]}},
    },
    "required": ["name", "orders"],
}}}, "required": ["customers"]}

SAMPLE = {"customers": [{"name": "Ada", "orders": [{"total": 3}, {"total": 4.5}]}, {"name": "Bo", "orders": []}]}
RUN_INPUT = (
    '[{"name": "Ada", "orders": [{"total": 3}, {"total": 4.5}]},'
    ' {"name": "Bo", "orders": [{"total": 7}]},'
    ' {"name": "Cy", "orders": [{"total": 1}, {"total": 2}, {"total": 8}]},'
    ' {"name": "Di", "orders": []},'
    ' {"name": "Ed", "orders": [{"total": 5}]}]'
)
EXPECTED_LINES = ["Ada: 3", "Ada: 4.5", "Bo: 7", "Cy: 1", "Cy: 2", "Cy: 8", "Ed: 5"]


@pytest.fixture
def workflow(user: Any, team: Any) -> Any:
    return workflow_services.create_workflow(actor=user, team=team, name="Order lines",
                                             document={"id": "lines", "nodes": [], "routes": []})


def _builder(editor: EditorPage, key: str) -> Locator:
    return editor.inspector.locator(f'.schema-builder[data-schema="{key}"]')


def _settle(editor: EditorPage) -> None:
    editor.page.wait_for_function("() => document.querySelector('.htmx-request') === null")


def _field(builder: Locator, name: str) -> Locator:
    return builder.locator(f'.sb-row[data-name="{name}"]').first


def _rename_new_field(editor: EditorPage, builder: Locator, name: str, type_: str, *, required: bool) -> None:
    """The builder's fresh ``field_1`` gets its name, type and required flag; every change re-renders."""
    row = _field(builder, "field_1")
    row.get_by_label("Field name").fill(name)
    row.get_by_label("Field name").press("Tab")
    _settle(editor)
    row = _field(builder, name)
    expect(row).to_have_count(1)
    if type_ != "string":
        row.get_by_label(f"Type of {name}").select_option(type_)
        _settle(editor)
    if required:
        # Named by its visible text; the field's name input describes it (aria-describedby).
        _field(builder, name).get_by_label("required", exact=True).check()
        _settle(editor)


def _add_field(editor: EditorPage, builder: Locator, to: str) -> None:
    builder.get_by_role("button", name=f"Add a field to {to}", exact=True).click()
    _settle(editor)
    expect(_field(builder, "field_1")).to_have_count(1)


def _save_schema(editor: EditorPage, key: str, title: str) -> None:
    builder = _builder(editor, key)
    expect(builder).to_have_attribute("data-dirty", "true")  # unsaved until the save is answered
    before = editor.revision()
    builder.get_by_role("button", name=f"Save {title}", exact=True).click()
    expect(builder).not_to_have_attribute("data-dirty", "true")
    # The canvas learns the new revision by fetching the document after the builder's answer; an action that
    # reads the revision before that fetch lands counts from a stale one.
    editor.wait_saved(before + 1)
    editor.wait_idle()


def test_build_compose_and_run_the_nested_order_lines_with_concurrency_4(
    logged_in_page: Page, live_server: Any, workflow: Any, background_worker: Any, artifacts_dir: Path
) -> None:
    editor = EditorPage(logged_in_page, live_server.url, workflow).open()

    # --- the input schema, field by field in the builder -----------------------------------------
    inputs = _builder(editor, "input_schema")
    _add_field(editor, inputs, "input schema")
    _rename_new_field(editor, inputs, "customers", "array", required=True)
    _add_field(editor, inputs, "each item of customers")  # the items become objects
    _rename_new_field(editor, inputs, "name", "string", required=True)
    _add_field(editor, inputs, "items of customers")
    _rename_new_field(editor, inputs, "orders", "array", required=True)
    _add_field(editor, inputs, "each item of orders")
    _rename_new_field(editor, inputs, "total", "number", required=True)
    # A default its own field refuses is flagged where it is typed, and the schema is not saved with it.
    total = _field(inputs, "total")
    total.locator("summary", has_text="Details").click()
    total.get_by_label("Default of total").fill("lots")
    total.get_by_label("Default of total").press("Tab")
    _settle(editor)
    expect(_field(inputs, "total").get_by_test_id("default-error")).to_contain_text("Default refused")
    before = editor.revision()
    inputs.get_by_role("button", name="Save input schema", exact=True).click()
    _settle(editor)
    expect(inputs.locator(".inspector-error")).to_contain_text("Not saved: 1 default")
    assert editor.revision() == before
    _field(inputs, "total").get_by_label("Default of total").fill("")
    _field(inputs, "total").get_by_label("Default of total").press("Tab")
    _settle(editor)
    expect(_field(inputs, "total").get_by_test_id("default-error")).to_have_count(0)
    _save_schema(editor, "input_schema", "input schema")
    assert editor.document()["input_schema"] == INPUT_SCHEMA

    # The state: a list of lines the template's results are appended to.
    state = _builder(editor, "state_schema")
    _add_field(editor, state, "state schema")
    _rename_new_field(editor, state, "lines", "array", required=False)
    _save_schema(editor, "state_schema", "state schema")
    assert editor.document()["state_schema"] == {"type": "object", "properties": {
        "lines": {"type": "array", "items": {"type": "string"}}}}

    # --- the graph, by drag and drop -------------------------------------------------------------
    assert editor.drop("foreach", "For each", 130, 160) == "foreach"
    editor.choose("input.customers")
    editor.rename("foreach", "customers")
    assert editor.drop("foreach", "For each", 410, 160) == "foreach"
    editor.rename("foreach", "orders")
    editor.connect("customers", "loop", "orders")
    editor.select("orders")
    editor.open_picker("over")
    editor.choose("context.foreach.customers.item.orders")
    assert editor.drop("task", "template", 700, 120) == "template"
    editor.connect("orders", "loop", "template")
    editor.connect("template", "ok", "orders")
    editor.connect("orders", "done", "customers")
    for loop in ("customers", "orders"):
        editor.select(loop)
        editor.inspector.get_by_label("Concurrency").fill("4")
        editor.press("Save loop")

    # --- the template's values, composed key by key -----------------------------------------------
    editor.select("template")
    values = editor.inspector.locator('li.field-row[data-field="input.values"]')
    expect(values.get_by_test_id("binding")).to_have_text("not bound")
    template_row = editor.inspector.locator('li.field-row[data-field="input.template"]')
    expect(template_row.locator(".required")).to_have_count(1)
    expect(template_row.locator(".diag-link")).to_contain_text("required: missing")
    template_row.locator("summary", has_text="Value…").click()
    template_row.get_by_label("Literal value for template").fill("{name}: {total}")
    editor.press("Set")

    # One key through its own picker: offered both loops' fields, outermost first.
    editor.wait_idle()
    values.get_by_label("New key in values").fill("name")
    values.get_by_role("button", name="+ key", exact=True).click()
    name_row = editor.inspector.locator('li.field-row[data-field="input.values.name"]')
    expect(name_row.locator(".picker")).to_be_visible()
    offered = editor.picker_paths()
    assert "context.foreach.customers.item.name" in offered and "context.foreach.orders.item.total" in offered
    editor.choose("context.foreach.customers.item.name")
    expect(name_row.get_by_test_id("bound-path")).to_have_text("context.foreach.customers.item.name")

    # The other dragged from the data panel onto its row.
    editor.wait_idle()
    values.get_by_label("New key in values").fill("total")
    values.get_by_role("button", name="+ key", exact=True).click()
    total_row = editor.inspector.locator('li.field-row[data-field="input.values.total"]')
    expect(total_row).to_contain_text("new: choose a path or set a value")
    editor.wait_idle()
    total_row.get_by_role("button", name="Close the path picker").click()  # both now fit on the screen
    source = editor.inspector.locator('[data-testid="data-panel"] [data-drag-path="context.foreach.orders.item.total"]')
    source.scroll_into_view_if_needed()
    expect(total_row).to_be_in_viewport()
    source.drag_to(total_row)
    expect(total_row.get_by_test_id("bound-path")).to_have_text("context.foreach.orders.item.total")
    expect(values.get_by_test_id("binding")).to_have_text("composed of 2 keys below")
    expect(name_row.get_by_test_id("field-type")).to_have_text("any")

    # The result appended to the state's lines, chosen from the declared state fields.
    editor.inspector.get_by_label("State field", exact=True).select_option("lines")
    editor.inspector.get_by_label("Write mode").select_option("append")
    editor.press("Add")
    expect(editor.diagnostics.get_by_test_id("error-count")).to_have_text("0 errors")

    # The workflow output reads the lines, picked from what the analyzer offers.
    editor.click_empty_canvas()
    expect(editor.inspector).to_have_attribute("data-node", "")
    editor.inspector.get_by_label("Output field").fill("lines")
    editor.inspector.get_by_label("Output path").select_option("state.lines")
    editor.press("Add")

    doc = editor.document()
    template = next(n for n in doc["nodes"] if n["id"] == "template")
    assert template["input"] == [
        {"target": "template", "value": "{name}: {total}"},
        {"target": "values.name", "path": "context.foreach.customers.item.name"},
        {"target": "values.total", "path": "context.foreach.orders.item.total"},
    ]
    assert template["output"] == [{"source": ".", "target": "lines", "mode": "append"}]
    assert [n.get("max_concurrency") for n in doc["nodes"] if n["kind"] == "foreach"] == [4, 4]
    assert doc["outputs"] == [{"target": "lines", "path": "state.lines"}]

    # Screenshots at both sizes with the mapping open.
    editor.select("template")
    for width, height in ((1440, 900), (1024, 768)):
        editor.page.set_viewport_size({"width": width, "height": height})
        editor.page.keyboard.press("f")
        editor.wait_fitted()
        editor.page.screenshot(path=artifacts_dir / f"editor-mapping-{width}x{height}.png")
    editor.page.set_viewport_size({"width": 1600, "height": 1000})

    # --- run it -------------------------------------------------------------------------------------
    panel = editor.page.locator("#run-panel")
    if panel.locator('.mode-switch input[value="json"]').count():
        panel.locator(".mode-switch label", has_text="JSON").click()
    panel.locator(".sf-json textarea").fill('{"customers": ' + RUN_INPUT + "}")
    panel.get_by_role("button", name="Start run").click()
    started = panel.locator(".notice a")
    expect(started).to_be_visible()
    run_id = int(started.inner_text().lstrip("#"))
    expect(editor.page.locator(f'#run-recent li[data-run="{run_id}"] .badge')).to_have_text(
        "completed", timeout=FINISH_MS)
    run = Run.objects.get(pk=run_id)
    assert set(run.output) == {"lines"}
    # Every order line names its own customer: no iteration read another one's values (max_concurrency 4).
    # The engine commits each superstep's writes in a fixed order, so the lines' order is the same on every
    # run, however the steps' timing fell: the worker's output equals the runtime's own run of that document,
    # list order included.
    reference = Engine(registry=catalog.registry()).run(parse_document(run.document), run.input)
    assert reference.status == "completed" and sorted(reference.output["lines"]) == EXPECTED_LINES
    assert run.output == reference.output
    assert editor.errors == []


def test_infer_the_input_schema_from_a_sample_then_edit_and_save_it(
    logged_in_page: Page, live_server: Any, workflow: Any, artifacts_dir: Path
) -> None:
    editor = EditorPage(logged_in_page, live_server.url, workflow).open()
    inputs = _builder(editor, "input_schema")
    inputs.locator("summary", has_text="Infer from a sample JSON").click()
    inputs.get_by_label("Sample JSON for input schema").fill(
        '{"customers": [{"name": "Ada", "orders": [{"total": 3}, {"total": 4.5}]}, {"name": "Bo", "orders": []}]}')
    inputs.get_by_role("button", name="Propose a schema").click()
    _settle(editor)
    for name in ("customers", "name", "orders", "total"):
        expect(_field(inputs, name)).to_have_count(1)
    expect(_field(inputs, "total").get_by_label("Type of total")).to_have_value("number")  # 3 and 4.5
    # The proposal is the person's to edit before saving: the JSON view follows the builder.
    inputs.locator("summary", has_text="JSON (advanced)").click()
    expect(inputs.get_by_label("Input schema as JSON")).to_contain_text('"required": [')
    for width, height in ((1440, 900), (1024, 768)):
        editor.page.set_viewport_size({"width": width, "height": height})
        _field(inputs, "total").scroll_into_view_if_needed()
        editor.page.screenshot(path=artifacts_dir / f"editor-schema-inferred-{width}x{height}.png")
    editor.page.set_viewport_size({"width": 1600, "height": 1000})
    assert editor.document().get("input_schema", {}).get("properties", {}) == {}
    _save_schema(editor, "input_schema", "input schema")
    assert editor.document()["input_schema"] == INPUT_SCHEMA

    # The raw JSON view edits the same schema: change it there, show it in the builder, save.
    inputs = _builder(editor, "input_schema")
    inputs.locator("summary", has_text="JSON (advanced)").click()
    text = inputs.get_by_label("Input schema as JSON").input_value()
    inputs.get_by_label("Input schema as JSON").fill(text.replace('"name": {\n', '"name": {\n "minLength": 1,\n', 1))
    inputs.get_by_role("button", name="Show in the builder").click()
    _settle(editor)
    _save_schema(editor, "input_schema", "input schema")
    saved = editor.document()["input_schema"]
    assert saved["properties"]["customers"]["items"]["properties"]["name"] == {"type": "string", "minLength": 1}
    assert editor.errors == []


IMPORTED: dict[str, Any] = {
    "id": "imported",
    "input_schema": INPUT_SCHEMA,
    "nodes": [
        {"id": "customers", "kind": "foreach", "over": "input.customers", "max_concurrency": 4},
        {"id": "orders", "kind": "foreach", "over": "context.foreach.customers.item.orders", "max_concurrency": 4},
        {"id": "line", "kind": "task", "task": "template", "input": [
            {"target": "template", "value": "{customer.name}: {total}"},
            {"target": "values.customer.name", "path": "context.foreach.customers.item.name"},
            {"target": "values.total", "path": "context.foreach.orders.item.total"},
        ]},
    ],
    "routes": routes("customers loop orders loop line ok orders done customers"),
}


def test_an_imported_mapping_shows_its_sub_field_bindings_and_a_viewer_sees_it_read_only(
    page: Page, live_server: Any, login: Any, user: Any, team: Any, make_user: Any, artifacts_dir: Path
) -> None:
    imported = workflow_services.import_workflow(actor=user, team=team.pk, document=IMPORTED, name="Imported")
    viewer = make_user("vera")
    Membership.objects.create(team=team, user=viewer, role="viewer")
    login(page, viewer)
    editor = EditorPage(page, live_server.url, imported).open()
    editor.select("line")
    rows = editor.inspector.locator("li.field-row")
    assert rows.evaluate_all("els => els.map(e => [e.dataset.field, Number(e.dataset.depth)])") == [
        ["input.template", 0], ["input.values", 0], ["input.values.customer", 1],
        ["input.values.customer.name", 2], ["input.values.total", 1],
    ]
    expect(editor.inspector.locator('[data-field="input.values"] [data-testid="binding"]')).to_have_text(
        "composed of 2 keys below")
    expect(editor.inspector.locator('[data-field="input.values.customer.name"] [data-testid="bound-path"]')) \
        .to_have_text("context.foreach.customers.item.name")
    expect(editor.inspector.locator('[data-field="input.values.total"] [data-testid="field-type"]')).to_have_text("any")
    expect(editor.inspector).not_to_contain_text("not declared")
    expect(editor.inspector).not_to_contain_text("not bound")
    # Read-only: nothing to choose, add, clear or drag.
    expect(editor.inspector.get_by_role("button", name=re.compile("Choose a path|Add a key|Remove|Clear"))) \
        .to_have_count(0)
    expect(editor.inspector.locator('[draggable="true"]')).to_have_count(0)
    expect(editor.inspector.locator("[data-drop-field]")).to_have_count(0)
    expect(editor.diagnostics.get_by_test_id("error-count")).to_have_text("0 errors")
    editor.page.screenshot(path=artifacts_dir / "editor-mapping-viewer.png")
    # The schema builders are read-only too.
    editor.click_empty_canvas()
    builder = _builder(editor, "input_schema")
    expect(builder.get_by_role("button")).to_have_count(0)
    expect(_field(builder, "customers").get_by_label("Field name")).to_have_attribute("readonly", "")
    assert editor.errors == []

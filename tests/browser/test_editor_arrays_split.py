"""In headless Chromium against a live server, the database and a real worker process: an array field's items
bound one by one in the mapping editor (a path, a literal) and run; a schema builder's unsaved changes kept through
a canvas save; the diagnostics split resized from the keyboard and remembered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from designer.access import teams as team_services
from designer.models import Run
from designer.workflows import services as workflow_services
from tests.browser.editor_page import EditorPage

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FINISH_MS = 60_000  # a separate worker process on a busy 2-core machine

ARRAYS: dict[str, Any] = {
    "id": "arrays",
    "input_schema": {"type": "object", "required": ["first"], "properties": {"first": {"type": "string"}}},
    "state_schema": {"type": "object", "properties": {"got": {"type": "array"}}},
    "nodes": [{"id": "gather", "kind": "task", "task": "collect", "input": [],
               "output": [{"source": ".", "target": "got"}]}],
    "outputs": [{"target": "got", "path": "state.got"}],
    "metadata": {"positions": {"gather": {"x": 80, "y": 80}}},
}


@pytest.fixture
def workflow(user: Any) -> Any:
    team = team_services.create_team(actor=user, name="Acme")
    return workflow_services.create_workflow(actor=user, team=team, name="Arrays", document=ARRAYS)


def test_an_array_fields_items_are_bound_one_by_one_and_the_run_gets_that_list(
    logged_in_page: Page, live_server: Any, workflow: Any, background_worker: Any, artifacts_dir: Path
) -> None:
    editor = EditorPage(logged_in_page, live_server.url, workflow).open()
    editor.select("gather")
    items = editor.inspector.locator('li.field-row[data-field="input.items"]')
    expect(items.get_by_test_id("binding")).to_contain_text("not bound")

    # Item 0 from a path, through the picker "+ item" opens (typed as the array's items).
    items.get_by_role("button", name="+ item", exact=True).click()  # adds item 0
    first = editor.inspector.locator('li.field-row[data-field="input.items.0"]')
    expect(first.locator(".picker")).to_be_visible()
    expect(first.locator(".field-name")).to_have_text("item 0")
    editor.choose("input.first")
    expect(first.get_by_test_id("bound-path")).to_have_text("input.first")

    # Item 1 a text literal, shown as text.
    editor.wait_idle()
    items = editor.inspector.locator('li.field-row[data-field="input.items"]')
    items.get_by_role("button", name="+ item", exact=True).click()  # adds item 1
    second = editor.inspector.locator('li.field-row[data-field="input.items.1"]')
    expect(second).to_contain_text("new: choose a path or set a value")
    editor.wait_idle()
    second.locator("summary", has_text="Value…").click()
    second.get_by_label("Literal value for items.1").fill("plain text")
    second.get_by_role("button", name="Set", exact=True).click()
    expect(second.get_by_test_id("literal")).to_have_text("= plain text")
    expect(editor.inspector.locator('li.field-row[data-field="input.items"]').get_by_test_id("binding")).to_have_text(
        "composed of 2 items below")
    expect(editor.diagnostics.get_by_test_id("error-count")).to_have_text("0 errors")
    gather = next(n for n in editor.document()["nodes"] if n["id"] == "gather")
    assert gather["input"] == [{"target": "items.0", "path": "input.first"},
                               {"target": "items.1", "value": "plain text"}]
    editor.page.screenshot(path=artifacts_dir / "editor-array-items-1600x1000.png")

    # The run panel reloads after each save; what is typed meanwhile survives the reload (run-panel.js).
    panel = editor.page.locator("#run-panel")
    textarea = panel.locator(".sf-json textarea")
    panel.locator(".mode-switch label", has_text="JSON").click()
    textarea.fill('{"first": "Ada"}')
    editor.wait_idle()
    expect(textarea).to_have_value('{"first": "Ada"}')
    panel.get_by_role("button", name="Start run").click()
    started = panel.locator(".notice a")
    expect(started).to_be_visible(timeout=15_000)
    run_id = int(started.inner_text().lstrip("#"))
    expect(editor.page.locator(f'#run-recent li[data-run="{run_id}"] .badge')).to_have_text(
        "completed", timeout=FINISH_MS)
    assert Run.objects.get(pk=run_id).output == {"got": ["Ada", "plain text"]}

    # Removing item 0 moves item 1 up: the document keeps its items numbered 0, 1, ...
    editor.wait_idle()
    editor.inspector.locator('li.field-row[data-field="input.items.0"]').get_by_role(
        "button", name="Remove", exact=True).click()
    expect(editor.inspector.locator('li.field-row[data-field="input.items.0"]').get_by_test_id("literal")).to_have_text(
        "= plain text")
    expect(editor.inspector.locator('li.field-row[data-field="input.items.1"]')).to_have_count(0)
    assert editor.errors == []


ASK: dict[str, Any] = {
    "id": "ask", "nodes": [{"id": "ask", "kind": "interrupt", "prompt": "Approve?", "labels": ["ok"]}],
    "metadata": {"positions": {"ask": {"x": 80, "y": 80}}},
}


def test_unsaved_schema_builder_changes_survive_a_canvas_save(
    logged_in_page: Page, live_server: Any, workflow: Any
) -> None:
    asking = workflow_services.create_workflow(actor=workflow.created_by, team=workflow.team, name="Ask",
                                               document=ASK)
    editor = EditorPage(logged_in_page, live_server.url, asking).open()
    editor.select("ask")
    resume = editor.inspector.locator('.schema-builder[data-schema="resume_schema"]')
    resume.get_by_role("button", name="Add a field to resume schema", exact=True).click()
    row = resume.locator('.sb-row[data-name="field_1"]')
    expect(row).to_have_count(1)
    row.get_by_label("Field name").fill("kept")
    row.get_by_label("Field name").press("Tab")
    expect(resume.locator('.sb-row[data-name="kept"]')).to_have_count(1)
    expect(resume).to_have_attribute("data-dirty", "true")
    expect(resume.get_by_test_id("builder-unsaved")).to_be_visible()
    editor.wait_idle()

    # Dragging the node on the canvas saves the document (and selects the node again); the builder is
    # not re-rendered from the saved schema.
    editor.move("ask", 120, 60)
    editor.wait_idle()
    expect(resume.locator('.sb-row[data-name="kept"]')).to_have_count(1)
    ask = editor.document()["nodes"][0]
    assert "kept" not in ask["resume_schema"].get("properties", {})

    # Its save goes out with the revision the canvas save produced: saved, not a conflict.
    resume.get_by_role("button", name="Save resume schema", exact=True).click()
    expect(resume).not_to_have_attribute("data-dirty", "true")
    editor.wait_idle()
    document = editor.document()
    assert "kept" in document["nodes"][0]["resume_schema"]["properties"]
    expect(editor.notice).not_to_contain_text("onflict")
    assert document["metadata"]["positions"]["ask"] != {"x": 80, "y": 80}  # the canvas edit was kept too
    assert editor.errors == []


def test_the_diagnostics_split_resizes_from_the_keyboard_without_moving_nodes_and_is_remembered(
    logged_in_page: Page, live_server: Any, workflow: Any
) -> None:
    editor = EditorPage(logged_in_page, live_server.url, workflow).open()
    handle = editor.page.get_by_role("separator", name="Resize the diagnostics panel (arrow keys)")
    diagnostics = editor.page.locator("#diagnostics")
    start = diagnostics.bounding_box()
    node = editor.node("gather").bounding_box()
    assert start and node
    handle.focus()
    for _ in range(4):
        editor.page.keyboard.press("ArrowUp")
    expect(handle).to_have_attribute("aria-valuenow", str(round(start["height"]) + 96))
    taller = diagnostics.bounding_box()
    assert taller and round(taller["height"]) == round(start["height"]) + 96
    assert editor.node("gather").bounding_box() == node  # the canvas got shorter below; nodes stayed put
    editor.page.keyboard.press("Home")
    expect(handle).to_have_attribute("aria-valuenow", "48")
    editor.page.keyboard.press("ArrowUp")
    expect(handle).to_have_attribute("aria-valuenow", "72")

    # Remembered for this user in this browser.
    editor.page.reload()
    expect(editor.canvas).to_have_attribute("data-fitted", "true")
    expect(editor.page.get_by_role("separator", name="Resize the diagnostics panel (arrow keys)")).to_have_attribute(
        "aria-valuenow", "72")
    box = diagnostics.bounding_box()
    assert box and round(box["height"]) == 72
    assert editor.errors == []

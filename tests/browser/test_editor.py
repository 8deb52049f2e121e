"""The workflow editor in headless Chromium against a live server and the real database.

A person builds the customers -> orders nested loop from an empty canvas by
drag and drop only, binds paths with the pickers (never typing one), and the
pickers only offer what the analyzer accepts at that node.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from designer.workflows import services as workflow_services
from tests.browser.editor_page import EditorPage, empty_document

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def workflow(user: Any, team: Any, site_tasks: None) -> Any:
    return workflow_services.create_workflow(actor=user, team=team, name="Customer orders",
                                             document=empty_document())


def _bound(document: dict[str, Any], node_id: str) -> dict[str, str]:
    node = next(n for n in document["nodes"] if n["id"] == node_id)
    return {b["target"]: b.get("path") for b in node.get("input", [])}


def test_build_nested_loops_by_drag_and_drop_and_bind_with_pickers(editor: EditorPage, artifacts_dir: Path) -> None:
    expect(editor.page.get_by_text("Drag a task or a control node from the palette")).to_be_visible()
    editor.page.screenshot(path=artifacts_dir / "editor-empty.png")

    # Outer loop over the input's customers.
    # A new loop opens its `over` picker at once; it offers lists only.
    assert editor.drop("foreach", "For each", 130, 160) == "foreach"
    expect(editor.inspector.locator('li.field-row[data-field="over"] .picker')).to_be_visible()
    offered = editor.picker_paths()
    assert "input.customers" in offered
    assert "input" not in offered and "input.customers.name" not in offered
    editor.choose("input.customers")
    editor.rename("foreach", "customers")

    # Inner loop over each customer's orders, wired from the outer loop's `loop` label.
    assert editor.drop("foreach", "For each", 410, 160) == "foreach"
    expect(editor.inspector.locator(".picker")).to_contain_text("not reachable from the start yet")
    editor.rename("foreach", "orders")
    editor.connect("customers", "loop", "orders")
    editor.select("orders")
    editor.open_picker("over")
    assert "context.foreach.customers.item.orders" in editor.picker_paths()
    editor.choose("context.foreach.customers.item.orders")

    # The inner body: one task that returns to the inner loop (the back-edge).
    assert editor.drop("task", "pack_item", 700, 90) == "pack_item"
    editor.connect("orders", "loop", "pack_item")
    editor.connect("pack_item", "ok", "orders")

    # After the inner loop is done: a node still inside the outer body, back to customers.
    assert editor.drop("task", "set_value", 700, 320) == "set_value"
    editor.connect("orders", "done", "set_value")
    editor.connect("set_value", "ok", "customers")

    # Bind the inner task's inputs with the pickers; a string field is offered strings only.
    editor.select("pack_item")
    editor.open_picker("customer")
    offered = editor.picker_paths()
    assert "context.foreach.customers.item.name" in offered
    assert "context.foreach.orders.item.sku" in offered
    assert "context.foreach.customers.item" not in offered  # an object, not a string
    assert "context.foreach.orders.item.qty" not in offered  # an integer
    groups = editor.inspector.locator(".picker__group").evaluate_all("els => els.map(e => e.dataset.foreach)")
    assert groups == ["customers", "orders"], "one group per active loop, outermost first"
    editor.page.screenshot(path=artifacts_dir / "editor-picker.png")
    editor.choose("context.foreach.customers.item.name")
    editor.open_picker("sku")
    editor.choose("context.foreach.orders.item.sku")
    expect(editor.inspector.locator('[data-field="input.customer"] .path-chip')).to_have_text(
        "context.foreach.customers.item.name")
    expect(editor.inspector.locator('[data-field="input.sku"] .path-chip')).to_have_text(
        "context.foreach.orders.item.sku")

    # After the inner loop's `done`, its context is gone: the picker never offers it, not even with all types.
    editor.select("set_value")
    editor.open_picker("value")
    offered = editor.picker_paths()
    assert "context.foreach.customers.item.name" in offered
    assert not [p for p in offered if p.startswith("context.foreach.orders")], offered
    editor.inspector.get_by_label("all types").check()
    expect(editor.inspector.locator(".picker .option").first).to_be_visible()
    assert not [p for p in editor.picker_paths() if p.startswith("context.foreach.orders")]

    # The body nodes are drawn inside their loops; the route back to a loop is a back-edge.
    expect(editor.node("pack_item")).to_contain_text("in customers › orders")
    expect(editor.node("set_value")).to_contain_text("in customers")
    expect(editor.page.locator('.wf-frame[data-foreach="orders"]')).to_have_count(1)
    expect(editor.page.locator('.wf-frame[data-foreach="customers"]')).to_have_count(1)
    expect(editor.edge("pack_item", "ok")).to_have_class(re.compile(r"wf-edge--back"))
    expect(editor.diagnostics.get_by_test_id("error-count")).to_have_text("0 errors")
    editor.click_empty_canvas()
    expect(editor.inspector).to_have_attribute("data-node", "")
    for _ in range(3):  # zoomed in, the graph overflows the canvas; "f" brings all of it back into view
        editor.page.get_by_role("button", name="Zoom In").click()
    editor.page.keyboard.press("f")
    editor.wait_fitted()
    editor.page.screenshot(path=artifacts_dir / "editor-nested-loops.png")

    # Saved: reload and find it unchanged.
    saved = editor.document()
    assert _bound(saved, "pack_item") == {
        "customer": "context.foreach.customers.item.name",
        "sku": "context.foreach.orders.item.sku",
    }
    assert {(r["source"], r["label"], r["target"]) for r in saved["routes"]} == {
        ("customers", "loop", "orders"), ("orders", "loop", "pack_item"), ("pack_item", "ok", "orders"),
        ("orders", "done", "set_value"), ("set_value", "ok", "customers"),
    }
    editor.page.reload()
    expect(editor.canvas).to_have_attribute("data-state", "saved")
    assert sorted(editor.node_ids()) == ["customers", "orders", "pack_item", "set_value"]
    expect(editor.page.locator(".react-flow__edge")).to_have_count(5)
    editor.select("pack_item")
    expect(editor.inspector.locator('[data-field="input.sku"] .path-chip')).to_have_text(
        "context.foreach.orders.item.sku")
    assert editor.document() == saved
    assert editor.errors == []


def test_a_new_loops_placeholder_path_is_flagged_and_leads_back_to_its_picker(
    editor: EditorPage, artifacts_dir: Path
) -> None:
    assert editor.drop("foreach", "For each", 160, 200) == "foreach"
    # The loop starts on the placeholder `input`: its picker is open, ready to type in.
    row = editor.inspector.locator('li.field-row[data-field="over"]')
    expect(row).to_have_class(re.compile(r"is-focused"))
    expect(row.get_by_label("Search paths")).to_be_focused()
    row.get_by_role("button", name="Close the path picker").click()
    expect(row.locator(".picker")).to_have_count(0)

    # Until a list is chosen, the diagnostics say what is wrong and where; the entry reopens the picker.
    problem = editor.diagnostics.locator('.diag-item[data-code="binding.type_mismatch"]')
    expect(problem).to_contain_text("foreach · over")
    expect(problem).to_contain_text("iterates 'input'")
    expect(row.locator(".diag")).to_contain_text("iterates 'input'")
    editor.page.screenshot(path=artifacts_dir / "editor-new-loop.png")
    problem.click()
    expect(row.locator(".picker")).to_be_visible()
    expect(row.get_by_label("Search paths")).to_be_focused()
    assert editor.picker_paths() == ["input.customers"]
    editor.choose("input.customers")
    expect(problem).to_have_count(0)
    assert editor.errors == []

"""Editor panels in the browser: subgraph wiring, fixing a diagnostic from the panel, undo/redo,
automatic layout of imported documents, and read-only viewers."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from designer.models import Membership
from designer.workflows import services as workflow_services
from tests.browser.editor_page import EDITOR_TASKS, EditorPage, empty_document, nested_document

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def site_tasks(settings: Any) -> None:
    settings.TRELLIS_TASK_MODULES = [EDITOR_TASKS]


def _node(document: dict[str, Any], node_id: str) -> dict[str, Any]:
    return next(n for n in document["nodes"] if n["id"] == node_id)


def test_subgraph_from_a_foreach_binds_the_childs_input_to_the_loop_item(
    logged_in_page: Page, live_server: Any, user: Any, team: Any, artifacts_dir: Path
) -> None:
    child = workflow_services.create_workflow(actor=user, team=team, name="Greet customer", document={
        "id": "greet",
        "input_schema": {"type": "object", "properties": {"customer_name": {"type": "string"}},
                         "required": ["customer_name"]},
        "nodes": [{"id": "echo", "kind": "task", "task": "set_value",
                   "input": [{"target": "value", "path": "input.customer_name"}]}],
    })
    workflow_services.publish_workflow(actor=user, workflow=child)
    parent = workflow_services.create_workflow(actor=user, team=team, name="Greet everyone", document=empty_document(
        nodes=[{"id": "customers", "kind": "foreach", "over": "input.customers"}],
        metadata={"positions": {"customers": {"x": 40, "y": 120}}},
    ))
    editor = EditorPage(logged_in_page, live_server.url, parent).open()

    node_id = editor.drop("subgraph", "Greet customer", 520, 200)
    assert node_id == child.slug
    expect(editor.node(node_id)).to_contain_text("greet-customer · latest")
    editor.connect("customers", "loop", node_id)
    editor.connect(node_id, "ok", "customers")
    expect(editor.node(node_id)).to_contain_text("in customers")

    editor.select(node_id)
    expect(editor.inspector.get_by_label("Workflow")).to_have_value(child.slug)
    editor.open_picker("customer_name")
    offered = editor.picker_paths()
    assert "context.foreach.customers.item.name" in offered
    assert "context.foreach.customers.item" not in offered  # the child wants a string
    editor.choose("context.foreach.customers.item.name")
    expect(editor.inspector.locator('[data-field="input.customer_name"] .path-chip')).to_have_text(
        "context.foreach.customers.item.name")
    expect(editor.diagnostics.get_by_test_id("error-count")).to_have_text("0 errors")
    editor.page.screenshot(path=artifacts_dir / "editor-subgraph.png")

    saved = _node(editor.document(), node_id)
    assert saved["kind"] == "subgraph"
    assert saved["workflow"] == {"id": child.slug, "version": None}
    assert saved["input"] == [{"target": "customer_name", "path": "context.foreach.customers.item.name"}]
    assert editor.errors == []


def test_provoke_a_diagnostic_and_fix_it_from_the_panel(
    logged_in_page: Page, live_server: Any, user: Any, team: Any, artifacts_dir: Path
) -> None:
    workflow = workflow_services.create_workflow(actor=user, team=team, name="Orders",
                                                 document=nested_document(positions=True))
    editor = EditorPage(logged_in_page, live_server.url, workflow).open()
    expect(editor.diagnostics.get_by_test_id("error-count")).to_have_text("0 errors")
    expect(editor.node("pack_item").get_by_test_id("node-badge")).to_have_count(0)

    # Provoke: clear a required input.
    editor.select("pack_item")
    before = editor.revision()
    editor.field_row("sku").get_by_role("button", name="Clear", exact=True).click()
    editor.wait_saved(before + 1)
    problem = editor.diagnostics.locator('.diag-item[data-code="binding.missing_required"]')
    expect(problem).to_have_count(1)
    expect(problem).to_contain_text("pack_item · input.sku")
    expect(editor.node("pack_item").get_by_test_id("node-badge")).to_have_text("1")
    editor.page.screenshot(path=artifacts_dir / "editor-diagnostic.png")

    # Fix it from the panel: the entry selects the node, focuses the field and opens its picker.
    editor.click_empty_canvas()
    expect(editor.inspector).to_have_attribute("data-node", "")
    problem.click()
    expect(editor.inspector).to_have_attribute("data-node", "pack_item")
    expect(editor.node("pack_item")).to_have_class(re.compile(r"\bselected\b"))
    row = editor.inspector.locator('li.field-row[data-field="input.sku"]')
    expect(row).to_have_class(re.compile(r"is-focused"))
    expect(row.locator(".picker")).to_be_visible()
    editor.choose("context.foreach.orders.item.sku")
    expect(editor.diagnostics.get_by_test_id("error-count")).to_have_text("0 errors")
    expect(editor.node("pack_item").get_by_test_id("node-badge")).to_have_count(0)
    assert editor.errors == []


def test_imported_document_is_laid_out_and_undo_redo_delete_by_keyboard(
    logged_in_page: Page, live_server: Any, user: Any, team: Any, artifacts_dir: Path
) -> None:
    workflow = workflow_services.import_workflow(actor=user, team=team, document=nested_document())
    original = workflow.document
    editor = EditorPage(logged_in_page, live_server.url, workflow).open()
    expect(editor.page.locator(".react-flow__node")).to_have_count(4)

    # Automatic layout: no two nodes overlap, and nothing was saved just by looking.
    boxes = [editor.node(n).bounding_box() for n in ("customers", "orders", "pack_item", "set_value")]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert a and b
            apart = (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
                     or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])
            assert apart, (a, b)
    assert editor.revision() == workflow.revision
    editor.page.screenshot(path=artifacts_dir / "editor-imported-layout.png")

    # Moving one node stores every drawn position in the document's metadata.
    editor.move("set_value", 0, 60)
    moved = editor.document()
    assert set(moved["metadata"]["positions"]) == {"customers", "orders", "pack_item", "set_value"}

    # Delete by keyboard, undo and redo: each one is a save.
    editor.select("set_value")
    before = editor.revision()
    editor.page.keyboard.press("Delete")
    editor.wait_saved(before + 1)
    expect(editor.node("set_value")).to_have_count(0)
    deleted = editor.document()
    assert "set_value" not in {n["id"] for n in deleted["nodes"]}
    assert not [r for r in deleted["routes"] if "set_value" in (r["source"], r["target"])]

    editor.page.keyboard.press("Control+z")
    editor.wait_saved(before + 2)
    expect(editor.node("set_value")).to_have_count(1)
    assert editor.document() == moved

    editor.page.keyboard.press("Control+Shift+z")
    editor.wait_saved(before + 3)
    expect(editor.node("set_value")).to_have_count(0)
    assert editor.document() == deleted

    editor.page.get_by_role("button", name="Undo", exact=True).click()
    editor.wait_saved(before + 4)
    assert editor.document() == moved
    assert {n["id"] for n in moved["nodes"]} == {n["id"] for n in original["nodes"]}

    # Keyboard: arrow keys move the selected node and the move is stored once it settles.
    editor.select("customers")
    x0 = moved["metadata"]["positions"]["customers"]["x"]
    for _ in range(3):
        editor.page.keyboard.press("ArrowRight")
    # A function, not a bare expression: Playwright evals those in the page, and the CSP refuses eval.
    editor.page.wait_for_function(
        f"() => document.querySelector('[data-editor-canvas]').dataset.revision > {before + 4}"
        " && document.querySelector('[data-editor-canvas]').dataset.state === 'saved'")
    for _ in range(50):
        if editor.document()["metadata"]["positions"]["customers"]["x"] == x0 + 15:
            break
        editor.page.wait_for_timeout(100)
    assert editor.document()["metadata"]["positions"]["customers"]["x"] == x0 + 15

    # Keyboard: an edge is focusable; Enter selects it and Delete disconnects that route only.
    revision = editor.revision()
    editor.edge("orders", "done").focus()
    editor.page.keyboard.press("Enter")
    editor.page.keyboard.press("Delete")
    editor.wait_saved(revision + 1)
    expect(editor.edge("orders", "done")).to_have_count(0)
    routes = {(r["source"], r["label"]) for r in editor.document()["routes"]}
    assert ("orders", "done") not in routes and ("orders", "loop") in routes
    expect(editor.diagnostics.locator('.diag-item[data-code="region.no_return"]')).not_to_have_count(0)

    # Keyboard: Enter on a palette item adds that node.
    revision = editor.revision()
    editor.palette_item("interrupt", "Interrupt").focus()
    editor.page.keyboard.press("Enter")
    editor.wait_saved(revision + 1)
    expect(editor.node("interrupt")).to_have_count(1)
    expect(editor.inspector).to_have_attribute("data-node", "interrupt")
    assert editor.errors == []


def test_viewer_sees_the_editor_read_only(
    page: Page, live_server: Any, login: Any, user: Any, team: Any, make_user: Any
) -> None:
    viewer = make_user("vera")
    Membership.objects.create(team=team, user=viewer, role="viewer")
    workflow = workflow_services.create_workflow(actor=user, team=team, name="Orders",
                                                 document=nested_document(positions=True))
    login(page, viewer)
    editor = EditorPage(page, live_server.url, workflow).open()
    expect(editor.page.get_by_text("Read-only", exact=True)).to_be_visible()
    expect(editor.page.get_by_role("button", name="Publish", exact=True)).to_have_count(0)
    expect(editor.page.get_by_role("button", name="Undo", exact=True)).to_have_count(0)
    item = editor.palette_item("task", "pack_item")
    expect(item).to_be_disabled()
    expect(item).to_have_attribute("draggable", "false")

    # Nodes can be inspected, not changed.
    editor.select("pack_item")
    expect(editor.inspector.get_by_label("Id", exact=True)).to_have_attribute("readonly", "")
    expect(editor.inspector.get_by_role("button", name=re.compile("Choose a path"))).to_have_count(0)
    expect(editor.inspector.get_by_role("button", name="Save node")).to_have_count(0)
    def offset() -> tuple[float, float]:
        a, b = editor.node("pack_item").bounding_box(), editor.node("customers").bounding_box()
        assert a and b
        return (round(a["x"] - b["x"]), round(a["y"] - b["y"]))

    before = offset()
    editor.page.keyboard.press("Delete")
    box = editor.node("pack_item").bounding_box()
    assert box
    editor.page.mouse.move(box["x"] + 20, box["y"] + 20)
    editor.page.mouse.down()
    editor.page.mouse.move(box["x"] + 120, box["y"] + 140, steps=8)
    editor.page.mouse.up()
    expect(editor.node("pack_item")).to_have_count(1)
    assert offset() == before  # at most the view panned; the node did not move
    # The server refuses edits from viewers even if a request is forged.
    status = editor.page.evaluate("""async () => {
        const body = new FormData();
        body.append("action", "start"); body.append("node", "pack_item");
        body.append("revision", document.getElementById("editor-revision").value);
        const token = JSON.parse(document.body.getAttribute("hx-headers"))["X-CSRFToken"];
        const r = await fetch(location.pathname + "change/", {method: "POST", body, headers: {"X-CSRFToken": token}});
        return r.status;
    }""")
    assert status == 403
    workflow.refresh_from_db()
    assert workflow.revision == 1

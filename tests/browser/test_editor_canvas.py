"""The canvas's write path and guided editing in headless Chromium against a live server and the real database.

Every edit is a named operation through the tab's one queue (a drag sends a
``move_nodes`` of the moved node, never the whole document); dropping a node
into a loop wires it into the body; diagnostics offer one-click fixes; the
canvas stays legible, and its drawing still while diagnostics change.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, Request, expect

from designer.workflows import services as workflow_services
from tests.browser.browser_support import overlap
from tests.browser.editor_page import EDITOR_TASKS, READABLE_ZOOM, EditorPage, HeldRequests, nested_document

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _workflow(user: Any, team: Any, document: dict[str, Any]) -> Any:
    return workflow_services.import_workflow(actor=user, team=team, document=document, name="Customer orders")


@pytest.fixture
def editor(logged_in_page: Page, live_server: Any, user: Any, team: Any, site_tasks: None) -> EditorPage:
    """The editor open on the customers -> orders loops, laid out."""
    return EditorPage(logged_in_page, live_server.url, _workflow(user, team, nested_document(positions=True))).open()


def _routes(document: dict[str, Any]) -> dict[tuple[str, str], str]:
    return {(r["source"], r["label"]): r["target"] for r in document["routes"]}


def _pane_point(editor: EditorPage, x: float, y: float) -> dict[str, float]:
    """A page point as a position inside the React Flow pane (what a drop's target_position wants)."""
    pane = editor.page.locator(".react-flow__pane").bounding_box()
    assert pane
    return {"x": x - pane["x"], "y": y - pane["y"]}


def _drop_at(editor: EditorPage, kind: str, title: str, x: float, y: float) -> str:
    """Drop a palette item at page point (x, y); returns the new node's id."""
    point = _pane_point(editor, x, y)
    return editor.drop(kind, title, round(point["x"]), round(point["y"]))


def test_a_drag_sends_one_move_operation_not_the_document(editor: EditorPage, live_server: Any) -> None:
    sent: list[Request] = []
    # Edits only: live co-editing's presence (the dragged node is now selected) is not an edit.
    editor.page.on("request", lambda request: sent.append(request)
                   if request.method != "GET" and "/edit/presence/" not in request.url else None)
    panels: list[str] = []
    editor.page.on("request", lambda request: panels.append(request.url) if "/run-panel/" in request.url else None)
    editor.move("set_value", 0, 60)
    assert [(r.method, r.url.removeprefix(live_server.url)) for r in sent] == [
        ("POST", f"/workflows/{editor.workflow.pk}/edit/change/")]
    # No panel shows where nodes stand: the run panel (which reloads 500 ms after a change) is not asked again.
    editor.page.wait_for_timeout(1_000)
    assert panels == []
    body = json.loads(sent[0].post_data or "")
    assert body["revision"] == 1
    assert [op["op"] for op in body["ops"]] == ["move_nodes"]
    assert list(body["ops"][0]["positions"]) == ["set_value"]
    assert editor.document()["metadata"]["positions"]["set_value"] == body["ops"][0]["positions"]["set_value"]

    # Undo is the operation the server answered with; it goes the same way.
    sent.clear()
    before = editor.revision()
    editor.page.keyboard.press("Control+z")
    editor.wait_saved(before + 1)
    assert [json.loads(r.post_data or "")["ops"][0]["op"] for r in sent] == ["move_nodes"]
    assert editor.document()["metadata"]["positions"]["set_value"] == {"x": 600, "y": 240}

    # A panel edit and a canvas edit sent back to back queue up: no conflict with oneself.
    before = editor.start_name_save("pack_item", "Pack it")
    editor.page.keyboard.press("Escape")
    editor.move("customers", 0, 30)
    editor.wait_saved(before + 2)
    expect(editor.notice).not_to_contain_text("Someone else")
    saved = editor.document()
    assert next(n for n in saved["nodes"] if n["id"] == "pack_item")["name"] == "Pack it"
    assert editor.errors == []


def test_a_node_picked_while_a_panel_save_reloads_the_draft_is_the_one_delete_removes(editor: EditorPage) -> None:
    # Save a node's name, and pick another node before the saved draft is back (a slow answer under load): the
    # draft's drawing must not select the saved node again, or Delete removes a node the inspector does not show.
    held = HeldRequests(editor.page, f"**/workflows/{editor.workflow.pk}/document/")
    before = editor.start_name_save("orders", "Every order")
    held.wait("the saved draft")
    editor.select("set_value")
    held.release()
    editor.wait_saved(before + 1)
    expect(editor.node("set_value")).to_have_class(re.compile(r"\bselected\b"))
    expect(editor.node("orders")).not_to_have_class(re.compile(r"\bselected\b"))

    editor.page.keyboard.press("Delete")
    editor.wait_saved(before + 2)
    expect(editor.node("set_value")).to_have_count(0)
    assert {n["id"] for n in editor.document()["nodes"]} == {"customers", "orders", "pack_item"}
    assert editor.errors == []


def test_a_press_on_a_node_keeps_it_selected_when_the_drawing_moves_away_before_the_release(
        editor: EditorPage) -> None:
    # The press selects the node. Something can move the drawing before the release (a fit, a redraw that moves
    # nodes; seen under load on CI): the click then lands on the empty canvas, which clears the selection. That
    # click is the press's own, not a click on the empty canvas, so the node stays selected.
    editor.wait_idle()
    box = editor.node("set_value").locator(".wf-node__title").bounding_box()
    assert box
    editor.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    editor.page.mouse.down()
    expect(editor.node("set_value")).to_have_class(re.compile(r"\bselected\b"))
    editor.page.evaluate("""() => {
      const viewport = document.querySelector(".react-flow__viewport");
      viewport.style.transform += " translate(0px, 5000px)";
    }""")
    editor.page.mouse.up()
    editor.page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    expect(editor.node("set_value")).to_have_class(re.compile(r"\bselected\b"))
    expect(editor.inspector).to_have_attribute("data-node", "set_value")
    # The empty canvas clicked after that still clears the selection.
    pane = editor.page.locator(".react-flow__pane").bounding_box()
    assert pane
    editor.page.mouse.click(pane["x"] + 10, pane["y"] + pane["height"] - 10)
    expect(editor.node("set_value")).not_to_have_class(re.compile(r"\bselected\b"))
    assert editor.errors == []


def test_a_panel_save_whose_form_is_replaced_before_its_answer_still_reaches_the_canvas(editor: EditorPage) -> None:
    # Save a node, then at once pick another one (or start dragging it): the
    # inspector swaps the saving form out before the server answers. The answer
    # must still reach the canvas, or the tab's edit queue stalls and the next
    # canvas edit goes out with a stale revision.
    held = HeldRequests(editor.page, f"**/workflows/{editor.workflow.pk}/edit/change/")
    before = editor.start_name_save("pack_item", "Pack it")
    held.wait("the panel's save")
    assert len(held.routes) == 1
    editor.select("set_value")
    held.release()

    editor.wait_saved(before + 1)
    assert next(n for n in editor.document()["nodes"] if n["id"] == "pack_item")["name"] == "Pack it"
    # The canvas learnt the panel save's undo, and the late answer does not take
    # the inspector back from the node the person picked.
    expect(editor.page.get_by_role("button", name="Undo")).to_be_enabled()
    expect(editor.inspector).to_have_attribute("data-node", "set_value")
    editor.move("customers", 0, 30)
    editor.wait_saved(before + 2)
    expect(editor.notice).not_to_contain_text("Someone else")
    assert editor.errors == []


def test_dropping_into_a_loop_wires_the_body_and_closes_the_back_edge(editor: EditorPage, artifacts_dir: Path) -> None:
    # Every route ends in an arrowhead of its own colour: a loop's, the way back to a loop's, a plain route's.
    assert editor.page.locator(".react-flow__edge").count() >= 3
    assert editor.arrowhead_problems() == []

    # Inside the inner loop's frame, under its last step: the node joins the end of that body.
    frame = editor.page.locator('.wf-frame[data-foreach="orders"]').bounding_box()
    packer = editor.node("pack_item").bounding_box()
    assert frame and packer
    added = _drop_at(editor, "task", "set_value", packer["x"] + packer["width"] / 2, frame["y"] + frame["height"] - 6)
    routes = _routes(editor.document())
    assert routes[("pack_item", "ok")] == added and routes[(added, "ok")] == "orders"
    expect(editor.edge(added, "ok")).to_have_count(1)

    # Onto the outer loop's "loop" handle: the node becomes the first step of that body.
    handle = editor.node("customers").locator('.react-flow__handle.source[data-handleid="loop"]').bounding_box()
    assert handle
    first = _drop_at(editor, "task", "set_value", handle["x"] + handle["width"] / 2,
                     handle["y"] + handle["height"] / 2)
    routes = _routes(editor.document())
    assert routes[("customers", "loop")] == first and routes[(first, "ok")] == "orders"

    # A loop dropped into a loop hands its "done" back to the outer loop.
    outer = editor.page.locator('.wf-frame[data-foreach="customers"]').bounding_box()
    assert outer
    inner = _drop_at(editor, "foreach", "For each", outer["x"] + 30, outer["y"] + outer["height"] - 8)
    routes = _routes(editor.document())
    assert routes[(inner, "done")] == "customers" and routes[("set_value", "ok")] == inner

    # Dropped nodes never land on one another.
    names = editor.node_ids()
    boxes = {name: editor.node(name).bounding_box() for name in names}
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            assert not overlap(boxes[a], boxes[b]), (a, b)  # type: ignore[arg-type]
    assert editor.arrowhead_problems() == []
    editor.page.screenshot(path=artifacts_dir / "editor-guided-loop-drops.png")
    assert editor.errors == []


def test_a_drop_on_top_of_a_node_lands_beside_it(editor: EditorPage) -> None:
    target = editor.node("set_value").bounding_box()
    assert target
    added = _drop_at(editor, "task", "pack_item", target["x"] + target["width"] / 2, target["y"] + 30)
    new, old = editor.node(added).bounding_box(), editor.node("set_value").bounding_box()
    assert new and old and not overlap(new, old)


def test_one_click_fix_and_the_drawing_stays_still_while_diagnostics_change(
    logged_in_page: Page, live_server: Any, user: Any, team: Any, site_tasks: None
) -> None:
    """The diagnostics band is one line once nothing is listed and its full height again with a problem (editor.css):
    only the canvas's bottom edge moves, never a node on screen."""
    document = nested_document(positions=True)
    document["routes"] = [r for r in document["routes"] if (r["source"], r["label"]) != ("pack_item", "ok")]
    workflow = _workflow(user, team, document)
    editor = EditorPage(logged_in_page, live_server.url, workflow).open()
    problem = editor.diagnostics.locator('.diag-item[data-code="region.no_return"]')
    expect(problem).to_have_count(1)
    page = editor.page

    def drawn() -> dict[str, Any]:
        pane = page.locator(".react-flow__pane").bounding_box()
        assert pane
        nodes = {node_id: editor.node(node_id).bounding_box() for node_id in ("customers", "orders", "set_value")}
        return {"pane": {k: pane[k] for k in ("x", "y", "width")}, "nodes": nodes, "height": pane["height"]}

    listed = drawn()
    fix = editor.diagnostics.locator('.diag-fix[data-node="pack_item"]')
    expect(fix).to_have_text("Route ok back to orders")
    before = editor.revision()
    fix.click()
    editor.wait_saved(before + 1)
    expect(problem).to_have_count(0)
    assert _routes(editor.document())[("pack_item", "ok")] == "orders"
    clean = drawn()
    assert clean["height"] > listed["height"]  # the band gave its room to the canvas
    assert {**clean, "height": 0} == {**listed, "height": 0}
    # The fix is one more edit: undo takes it back.
    page.keyboard.press("Control+z")
    editor.wait_saved(before + 2)
    expect(problem).to_have_count(1)
    assert drawn() == listed
    assert editor.errors == []


def test_one_picker_at_a_time_and_escape_closes_it(editor: EditorPage) -> None:
    editor.select("pack_item")
    editor.open_picker("customer")
    editor.open_picker("sku")
    expect(editor.page.locator(".picker")).to_have_count(1)
    expect(editor.page.locator('li.field-row[data-field="input.sku"] .picker')).to_be_visible()
    editor.page.keyboard.press("Escape")
    expect(editor.page.locator(".picker")).to_have_count(0)


@pytest.mark.parametrize("size", [(1440, 900), (1024, 768)])
def test_fit_never_zooms_below_legible_and_screenshots(
    logged_in_page: Page, live_server: Any, user: Any, team: Any, site_tasks: None, artifacts_dir: Path,
    size: tuple[int, int],
) -> None:
    width, height = size
    workflow = _workflow(user, team, nested_document())
    page = logged_in_page
    page.set_viewport_size({"width": width, "height": height})
    editor = EditorPage(page, live_server.url, workflow)
    page.goto(editor.url)
    expect(editor.canvas).to_have_attribute("data-fitted", "true")
    editor.wait_fitted()
    assert float(editor.canvas.get_attribute("data-zoom") or 0) >= READABLE_ZOOM - 0.001
    title = editor.node("customers").locator(".wf-node__title")
    font = title.evaluate("el => parseFloat(getComputedStyle(el).fontSize)")
    rendered = font * float(editor.canvas.get_attribute("data-zoom") or 0)
    assert rendered >= 12, rendered
    # Fit again from far out: the wheel cannot go below the legible zoom either.
    page.locator(".react-flow__pane").hover()
    for _ in range(10):
        page.mouse.wheel(0, 400)
    zoom = page.locator(".react-flow__viewport").evaluate(
        "el => new DOMMatrixReadOnly(getComputedStyle(el).transform).a")
    assert zoom >= READABLE_ZOOM - 0.001
    page.screenshot(path=artifacts_dir / f"editor-nested-{width}x{height}.png")
    assert editor.errors == []


def test_a_run_on_the_graph_statuses_loop_counts_and_a_nodes_item(
    logged_in_page: Page, live_server: Any, user: Any, team: Any, site_tasks: None, artifacts_dir: Path,
    worker_env: dict[str, str], run_worker: Any,
) -> None:
    from designer.models import Run
    from designer.runs import services as run_services

    workflow = _workflow(user, team, nested_document(positions=True))
    run = run_services.start_run(actor=user, workflow=workflow, input={"customers": [
        {"name": "Ada", "orders": [{"sku": "A-1", "qty": 1}, {"sku": "A-2", "qty": 2}]},
        {"name": "Bob", "orders": [{"sku": "B-1", "qty": 3}]},
    ]})
    worker_env["TRELLIS_TASK_MODULES"] = EDITOR_TASKS  # the real worker process knows pack_item too
    run_worker()
    assert Run.objects.get(pk=run.pk).status == "completed"
    editor = EditorPage(logged_in_page, live_server.url, workflow).open()
    chooser = editor.page.get_by_label("Show a run on the graph")
    chooser.select_option(str(run.pk))
    expect(editor.canvas).to_have_attribute("data-run", str(run.pk))
    status = editor.node("pack_item").get_by_test_id("run-status")
    expect(status).to_have_attribute("data-status", "done")
    expect(status).to_contain_text("3 done")
    expect(editor.node("set_value").get_by_test_id("run-status")).to_contain_text("2 done")
    expect(editor.node("customers").get_by_test_id("run-status")).to_have_attribute("data-status", "done")
    progress = editor.page.locator('.wf-frame[data-foreach="customers"] [data-testid="loop-progress"]')
    expect(progress).to_have_text("2/2 done")
    expect(editor.page.locator('.wf-frame[data-foreach="orders"] [data-testid="loop-progress"]')).to_have_text(
        "3/3 done")

    # A node's latest item, then a chosen one: its bound values, result and context.
    editor.node("pack_item").locator(".wf-node__title").click()
    drawer = editor.page.locator("#run-node")
    expect(drawer).to_have_class(re.compile(r"\bopen\b"))
    item = drawer.get_by_label("Item")
    expect(item.locator("option:checked")).to_have_text("customers[1] 'Bob' › orders[0] 'B-1' (latest)")
    expect(drawer.get_by_test_id("run-node-output")).to_contain_text("Bob: 1 x B-1")
    item.select_option(label="customers[0] 'Ada' › orders[1] 'A-2'")
    expect(drawer.get_by_test_id("run-node-output")).to_contain_text("Ada: 1 x A-2")
    # the input the engine recorded for that step, as the task received it
    expect(drawer.get_by_test_id("run-node-input")).to_have_text(re.compile(
        r'\{\s*"customer": "Ada",\s*"sku": "A-2"\s*\}'))
    editor.page.screenshot(path=artifacts_dir / "editor-run-overlay.png")
    # Esc closes the drawer; "No run shown" takes the overlay away.
    editor.page.keyboard.press("Escape")
    expect(drawer).not_to_have_class(re.compile(r"\bopen\b"))
    chooser.select_option("")
    expect(editor.page.get_by_test_id("run-status")).to_have_count(0)
    assert editor.errors == []


def test_node_kind_icons_are_drawn_from_the_one_set_of_symbols(
    logged_in_page: Page, live_server: Any, user: Any, team: Any, site_tasks: None
) -> None:
    """The palette and the canvas nodes both ``<use>`` the page's kind symbols (editor.html), and each icon draws."""
    editor = EditorPage(logged_in_page, live_server.url, _workflow(user, team, nested_document())).open()
    page = editor.page
    symbols = page.locator("svg[data-kind-icons] symbol").evaluate_all("els => els.map(e => e.id)")
    assert sorted(symbols) == sorted(f"wf-kind-{k}" for k in ("task", "foreach", "subgraph", "branch", "interrupt"))
    # Every icon on the page is a <use> of one of them, and draws something (a broken reference has no box).
    icons = page.locator(".wf-node__kind svg, .palette-item__icon svg")
    assert icons.count() >= 4
    drawn = icons.evaluate_all("""els => els.map(svg => {
        const use = svg.querySelector('use');
        const box = use ? use.getBBox() : {width: 0, height: 0};
        return [use ? use.getAttribute('href') : null, box.width > 0 && box.height > 0];
    })""")
    assert all(href and href[1:] in symbols and ok for href, ok in drawn), drawn
    kinds = editor.page.locator(".react-flow__node .wf-node").evaluate_all(
        "els => els.map(e => [e.dataset.kind, e.querySelector('.wf-node__kind use').getAttribute('href')])")
    assert kinds and all(href == f"#wf-kind-{kind}" for kind, href in kinds), kinds
    # The symbols take no room, so the editor ends inside the window (a 150px sprite pushed it below the fold and a
    # focused diagnostics button then scrolled the whole page).
    sprite, editor_box = page.locator("svg[data-kind-icons]").bounding_box(), page.locator(".editor").bounding_box()
    assert sprite and sprite["height"] == 0, sprite
    assert editor_box and editor_box["y"] + editor_box["height"] <= page.evaluate("window.innerHeight"), editor_box
    # Nor does anything else make the page scroll (the run form's hidden radios once did, placed against the page).
    sizes = page.evaluate("() => [document.documentElement.scrollHeight, window.innerHeight]")
    assert sizes[0] <= sizes[1], f"the editor page is taller than the window: {sizes}"

"""A big graph in the editor (issue 34): laid out in rows that fit a screen's shape, every node on the minimap,
the state schema's builder of the workflow settings loaded on demand, a drag answered with a small patch.

Timings are measured by ``make bench BENCH=editor_scale``, never here."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import Page, Response, expect

from bench.bench_editor_scale import document
from designer.access import teams as team_services
from designer.workflows import services as workflow_services
from tests.browser.editor_page import EditorPage

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZE = 120  # from layout.js ROWS_FROM / DRAW_VISIBLE_FROM (80): the layout in rows, only the view drawn


def _big_document() -> dict[str, Any]:
    return document(SIZE)  # the benchmark's: SIZE template nodes inside customers -> orders


# Every drawn node's box in flow coordinates.
_BOXES = """() => {
  const zoom = Number(document.querySelector("[data-editor-canvas]").dataset.zoom);
  const box = (el) => { const r = el.getBoundingClientRect(); return {x: r.x / zoom, y: r.y / zoom,
                                                                   width: r.width / zoom, height: r.height / zoom}; };
  return [...document.querySelectorAll(".react-flow__node")].map((el) => ({id: el.dataset.id, ...box(el)}));
}"""

# The minimap's node boxes that are at least a pixel wide.
_MINIMAP_DRAWN = "els => els.filter((el) => el.getBoundingClientRect().width >= 1).length"


def test_a_big_graph_is_laid_out_in_rows_shown_on_the_minimap_and_a_move_is_a_small_answer(
    logged_in_page: Page, live_server: Any, user: Any
) -> None:
    team = team_services.create_team(actor=user, name="Acme")
    workflow = workflow_services.import_workflow(actor=user, team=team, document=_big_document(), name="Big")
    editor = EditorPage(logged_in_page, live_server.url, workflow).open()
    minimap = editor.page.locator(".wf-minimap .react-flow__minimap-node")
    # Every node is on the minimap, but only those in view are in the page (with the routes between them).
    expect(minimap).to_have_count(SIZE + 2)
    assert minimap.evaluate_all(_MINIMAP_DRAWN) == SIZE + 2
    drawn = editor.page.locator(".react-flow__node").count()
    assert 0 < drawn < SIZE + 2, drawn
    expect(editor.edge("orders", "loop")).to_have_count(1)
    expect(editor.node(f"line_{SIZE - 1:03d}")).to_have_count(0)

    before = editor.revision()
    editor.page.get_by_role("button", name="Layout", exact=True).click()
    editor.wait_saved(before + 1)
    positions = editor.document()["metadata"]["positions"]
    assert len(positions) == SIZE + 2
    # No two drawn nodes overlap, nor (at their estimated sizes, layout.js estimatedHeight) any two laid out.
    boxes = editor.page.evaluate(_BOXES)
    boxes += [{"id": f"laid {key}", "x": p["x"], "y": p["y"], "width": 220, "height": 88 + 24 * 2}  # 2 labels each
              for key, p in positions.items()]
    boxes.sort(key=lambda b: b["x"])
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            if b["x"] >= a["x"] + a["width"]:
                break
            if a["id"].startswith("laid") != b["id"].startswith("laid"):
                continue
            assert b["y"] >= a["y"] + a["height"] or a["y"] >= b["y"] + b["height"], (a["id"], b["id"])
    # Shaped like a screen: not one row (the chain used to be 190,000 px wide at 600 nodes) nor one column.
    xs = [p["x"] for p in positions.values()]
    ys = [p["y"] for p in positions.values()]
    width, height = max(xs) - min(xs) + 220, max(ys) - min(ys) + 112
    assert 0.8 <= width / height <= 3.0, (width, height)
    # The body's frame holds the body: the first chain node is right of its foreach and below its frame's title.
    assert positions["line_000"]["x"] > positions["orders"]["x"] + 220
    # The minimap draws every node at least a pixel wide.
    assert minimap.evaluate_all(_MINIMAP_DRAWN) == SIZE + 2

    # Shown on demand (the diagnostics' links do this): the last node, out of view until now, is drawn.
    last = f"line_{SIZE - 1:03d}"
    editor.page.evaluate("(id) => document.dispatchEvent(new CustomEvent('trellis:focus', {detail: {nodeId: id}}))",
                         last)
    expect(editor.node(last)).to_be_visible()
    expect(editor.inspector).to_have_attribute("data-node", last)
    editor.page.keyboard.press("f")  # back to the fit, where line_000 is
    editor.wait_fitted()

    # A drag is answered with a patch of the move, not the document.
    answers: list[Response] = []
    editor.page.on("response", lambda r: answers.append(r) if r.request.method == "POST" else None)
    editor.wait_idle()
    editor.move("line_000", 40, 0)
    answer = json.loads(answers[-1].body())
    assert "document" not in answer and "analysis" not in answer
    moved_paths = {op["path"] for op in answer["patch"]}
    assert moved_paths <= {"/metadata/positions/line_000/x", "/metadata/positions/line_000/y"}
    moved = {op["path"].rsplit("/", 1)[1]: op["value"] for op in answer["patch"]}
    assert moved["x"] == editor.document()["metadata"]["positions"]["line_000"]["x"] > positions["line_000"]["x"]

    # The settings panel names the state schema's 120 fields; its builder opens when asked for.
    editor.click_empty_canvas()
    expect(editor.inspector).to_have_attribute("data-node", "")
    state = editor.inspector.locator("[data-section='state_schema']")
    expect(state.locator(".sb-summary")).to_contain_text(f"{SIZE} fields: line_000 string")
    expect(state.get_by_label("Field name")).to_have_count(0)
    state.get_by_role("button", name=f"Edit the {SIZE} fields", exact=True).click()
    expect(state.get_by_label("Field name")).to_have_count(SIZE)
    assert not editor.errors


# Nodes whose drawn box meets the canvas's pane (what a person sees after a fit).
_SHOWN = """() => {
  const pane = document.querySelector(".react-flow__pane").getBoundingClientRect();
  return [...document.querySelectorAll(".react-flow__node")].filter((n) => {
    const r = n.getBoundingClientRect();
    return r.right > pane.left && r.left < pane.right && r.bottom > pane.top && r.top < pane.bottom;
  }).length;
}"""


def test_a_small_graph_is_laid_out_to_the_canvas_shape_and_the_canvas_takes_the_preloaded_document(
    logged_in_page: Page, live_server: Any, user: Any
) -> None:
    size = 20  # dagre's own size (below ROWS_FROM): it drew this chain as one row of 6,820 x 173 px
    team = team_services.create_team(actor=user, name="Acme")
    workflow = workflow_services.import_workflow(actor=user, team=team, document=document(size), name="Small")
    asked: list[str] = []
    logged_in_page.on("request", lambda r: asked.append(r.url) if "/document/" in r.url else None)
    editor = EditorPage(logged_in_page, live_server.url, workflow).open()
    # The head's preload asked for the document once and the canvas took that answer (no second request).
    assert editor.page.locator("link[rel=preload][as=fetch]").get_attribute("href") == \
        f"/api/workflows/{workflow.pk}/document/"
    assert len(asked) == 1, asked

    before = editor.revision()
    editor.page.get_by_role("button", name="Layout", exact=True).click()
    editor.wait_saved(before + 1)
    positions = editor.document()["metadata"]["positions"]
    xs = [p["x"] for p in positions.values()]
    ys = [p["y"] for p in positions.values()]
    width, height = max(xs) - min(xs) + 220, max(ys) - min(ys) + 136
    # Shaped like the canvas it was laid out in (about 1,000 x 650 flow px at the readable zoom), not one row.
    assert 0.8 <= width / height <= 2.4, (width, height)
    # The reading order holds: the chain goes on to the right, or starts the next row below.
    for n in range(size - 1):
        here, after = positions[f"line_{n:03d}"], positions[f"line_{n + 1:03d}"]
        assert after["x"] > here["x"] or after["y"] > here["y"], (n, here, after)
    # After the fit that follows, more than the 3 nodes one long row showed.
    editor.page.wait_for_timeout(400)  # the fit's 200 ms animation
    assert editor.page.evaluate(_SHOWN) >= 5
    assert not editor.errors


def test_a_big_graphs_long_pickers_fill_when_pressed_or_focused_and_save_what_was_chosen(
    logged_in_page: Page, live_server: Any, user: Any
) -> None:
    """The workflow settings' start picker and output-path picker come with one option, and the rest are asked for
    when a person reaches for them (designer/editor/context.py SELECT_INLINE_OPTIONS): a press of the pointer
    fills the start picker and opens it, a key moves through the whole list; the keyboard's focus asks for the
    output-path picker's, and a key pressed before they are in is done on them once they are."""
    team = team_services.create_team(actor=user, name="Acme")
    workflow = workflow_services.import_workflow(actor=user, team=team, document=_big_document(), name="Big")
    page = logged_in_page
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url) if "/picker-options/" in request.url else None)
    editor = EditorPage(page, live_server.url, workflow).open()
    start = editor.inspector.locator("#settings-start")
    path = editor.inspector.get_by_role("combobox", name="Output path")
    options = "(select) => [...select.options].map((option) => option.value)"
    assert start.evaluate(options) == [""] and path.evaluate(options) == ["input"]
    assert asked == []  # nothing asked for until a person reaches for a picker

    # The pointer's press brings the whole list and opens it (Escape closes it, the first node still shown).
    start.click()
    expect(start.locator("option")).to_have_count(SIZE + 3)
    assert start.evaluate(options) == ["", "customers", "orders"] + [f"line_{n:03d}" for n in range(SIZE)]
    assert len(asked) == 1 and asked[0].endswith("?picker=start")
    expect(start).to_have_value("")
    editor.page.keyboard.press("Escape")
    expect(start).to_have_value("")
    editor.page.keyboard.press("ArrowDown")  # the first node, then customers
    editor.page.keyboard.press("ArrowDown")
    editor.page.keyboard.press("Enter")
    expect(start).to_have_value("orders")
    before = editor.revision()
    editor.inspector.get_by_role("button", name="Save start").click()
    editor.wait_saved(before + 1)
    assert editor.document()["start"] == "orders"

    # The settings drawn again after the save: the start shown is the one saved. The output path's options are
    # asked for on the keyboard's focus; a key pressed while they are on their way (held here) waits for them.
    held: list[Any] = []
    page.route("**/picker-options/?picker=output-path", lambda route: held.append(route))
    path = editor.inspector.get_by_role("combobox", name="Output path")
    expect(editor.inspector.locator("#settings-start")).to_have_value("orders")
    assert path.evaluate(options) == ["input"]
    editor.inspector.get_by_label("Output field").fill("last")
    editor.inspector.get_by_label("Output field").focus()
    editor.page.keyboard.press("Tab")
    expect(path).to_be_focused()
    expect(path).to_have_attribute("aria-busy", "true")
    for _ in range(200):  # the request reaches the route (its handler runs while Playwright waits)
        if held:
            break
        page.wait_for_timeout(50)
    assert len(held) == 1
    editor.page.keyboard.press("End")  # held: the list is not in yet
    expect(path).to_have_value("input")
    for route in held:
        route.continue_()
    page.unroute("**/picker-options/?picker=output-path")
    expect(path).to_have_value(f"state.line_{SIZE - 1:03d}")
    expect(path).not_to_have_attribute("aria-busy", "true")
    assert len(path.evaluate(options)) > SIZE and path.evaluate(options)[0] == "input"
    editor.page.keyboard.press("ArrowUp")
    expect(path).to_have_value(f"state.line_{SIZE - 2:03d}")
    editor.press("Add")
    expect(editor.inspector.locator("[data-output='last']")).to_have_count(1)
    assert editor.document()["outputs"] == [{"target": "last", "path": f"state.line_{SIZE - 2:03d}"}]
    assert not editor.errors


def test_a_nodes_long_state_field_picker_fills_on_focus_and_still_offers_a_new_field(
    logged_in_page: Page, live_server: Any, user: Any
) -> None:
    """A node's output binding among SIZE state fields: its picker shows the first and "new state field…", the
    rest come when it takes the focus; then any field, or a new one (its name typed beside it), can be chosen."""
    team = team_services.create_team(actor=user, name="Acme")
    workflow = workflow_services.import_workflow(actor=user, team=team, document=_big_document(), name="Big")
    editor = EditorPage(logged_in_page, live_server.url, workflow).open()
    editor.select("line_000")  # at the start of the graph, where the first fit shows it
    target = editor.inspector.get_by_role("combobox", name="State field")
    options = "(select) => [...select.options].map((option) => option.value)"
    assert target.evaluate(options) == ["line_000", ""]
    target.focus()
    expect(target.locator("option")).to_have_count(SIZE + 1)
    assert target.evaluate(options) == [f"line_{n:03d}" for n in range(SIZE)] + [""]
    expect(target).to_have_value("line_000")
    target.select_option(f"line_{SIZE - 1:03d}")
    expect(target).to_have_value(f"line_{SIZE - 1:03d}")
    target.select_option("")  # the way to a new field still works on the list that came
    new = editor.inspector.get_by_label("New state field")
    expect(new).to_be_visible()
    expect(new).to_be_focused()
    assert not editor.errors


def test_a_nodes_data_panel_sends_the_state_fields_when_opened_and_a_loaded_one_drags_onto_a_row(
    logged_in_page: Page, live_server: Any, user: Any
) -> None:
    """The data panel of a node among SIZE state fields shows the State group folded to one row (panels.
    DATA_TREE_FOLD: at 600 nodes they were ~176 KB of every node's panel); its button loads them in its place, and
    a field it loaded is dragged onto an input row like any other."""
    team = team_services.create_team(actor=user, name="Acme")
    workflow = workflow_services.import_workflow(actor=user, team=team, document=_big_document(), name="Big")
    editor = EditorPage(logged_in_page, live_server.url, workflow).open()
    editor.select("line_000")
    panel = editor.inspector.get_by_test_id("data-panel")
    state = panel.locator("[data-group='State']")
    expect(state.locator("[data-drag-path]")).to_have_count(1)  # state itself
    show = state.get_by_role("button", name=f"Show the {SIZE} paths under state", exact=True)
    show.click()
    expect(show).to_have_count(0)
    expect(state.locator("[data-drag-path^='state.']")).to_have_count(SIZE)
    # The button that had the focus is gone: the first row loaded has it, so a keyboard user keeps their place.
    expect(state.locator("[data-drag-path='state.line_000']")).to_be_focused()
    paths = state.locator("[data-drag-path]").evaluate_all("(items) => items.map((item) => item.dataset.dragPath)")
    assert paths == ["state"] + [f"state.line_{n:03d}" for n in range(SIZE)]

    editor.wait_idle()
    row = editor.field_row("values.customer")
    source = state.locator("[data-drag-path='state.line_002']")  # near the top: the row stays in view too
    source.scroll_into_view_if_needed()
    expect(row).to_be_in_viewport()
    before = editor.revision()
    source.drag_to(row)
    editor.wait_saved(before + 1)
    row = editor.field_row("values.customer")
    expect(row.get_by_test_id("bound-path")).to_have_text("state.line_002")
    node = next(n for n in editor.document()["nodes"] if n["id"] == "line_000")
    assert {"target": "values.customer", "path": "state.line_002"} in node["input"]
    assert not editor.errors

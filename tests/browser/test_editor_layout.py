"""The editor's room on a small screen, in headless Chromium: the palette and the inspector each fold to a narrow rail
and back (by their heading's button, by keyboard alone, or by [ and ]), the canvas takes the panel's width and React
Flow draws the graph into it; this browser keeps the choice across reloads, set before the page is first painted;
a folded inspector stays folded when a node is clicked and opens when a diagnostic is asked to show one; its rail
names the selected node and opens the panel on it; and the diagnostics band is one line when it has nothing to
list. Screenshots to test-artifacts/screenshots/."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from designer.workflows import services as workflow_services
from tests.browser.editor_page import EDITOR_TASKS, EditorPage, nested_document
from tests.browser.test_accessibility import refused_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

#: The folded panel's rail (editor.css --rail-width).
RAIL = 36

PANELS = {"palette": (".editor-palette", "Palette"), "inspector": (".editor-side", "Inspector")}

#: Whether, at the moment the parser put the palette and the inspector into the page (before any script of the
#: page's body or any deferred one ran, so before the first paint could show them), <html> already said how they
#: are laid out.
RECORD_FIRST_LAYOUT = """
window.__firstLayout = null;
new MutationObserver((changes, observer) => {
  if (!document.querySelector(".editor-side")) return;
  const html = document.documentElement;
  window.__firstLayout = {palette: html.getAttribute("data-palette"), inspector: html.getAttribute("data-inspector")};
  observer.disconnect();
}).observe(document, {childList: true, subtree: true});
"""

#: The nodes React Flow drew (their screen boxes) that lie wholly inside the canvas, and those that do not.
NODES_IN_CANVAS = """() => {
  const pane = document.querySelector(".react-flow").getBoundingClientRect();
  const inside = [], outside = [];
  for (const node of document.querySelectorAll(".react-flow__node")) {
    const r = node.getBoundingClientRect();
    const whole = r.left >= pane.left - 0.5 && r.right <= pane.right + 0.5 && r.top >= pane.top - 0.5
      && r.bottom <= pane.bottom + 0.5;
    (whole ? inside : outside).push(node.dataset.id);
  }
  return {inside, outside};
}"""

#: How far the middle of the drawing (nodes and loop frames) is from the middle of the canvas, across.
DRAWING_OFF_CENTRE = """() => {
  const pane = document.querySelector(".react-flow").getBoundingClientRect();
  const boxes = [...document.querySelectorAll(".react-flow__node, .wf-frame")].map((el) => el.getBoundingClientRect());
  const left = Math.min(...boxes.map((r) => r.left)), right = Math.max(...boxes.map((r) => r.right));
  return (left + right) / 2 - (pane.left + pane.right) / 2;
}"""


@pytest.fixture(autouse=True)
def site_tasks(settings: Any) -> None:
    settings.TRELLIS_TASK_MODULES = [EDITOR_TASKS]


def _box(page: Page, selector: str) -> dict[str, float]:
    box = page.locator(selector).first.bounding_box()
    assert box, selector
    return box


def _toggle(page: Page, panel: str) -> Any:
    return page.get_by_role("button", name=PANELS[panel][1], exact=True)


def _expect_open_as_ever(page: Page, panel: str) -> None:
    """``panel``, open while the other is folded, looks as it does with both open: its heading's button one line
    across (not a rail's word down the side) and its body in view."""
    button = _toggle(page, panel)
    expect(button).to_have_attribute("aria-expanded", "true")
    box = button.bounding_box()
    assert box and box["width"] > 2 * box["height"], (panel, box)
    expect(page.locator(f"#{button.get_attribute('aria-controls')}")).to_be_visible()


def _expect_room(editor: EditorPage, width: float) -> None:
    """The canvas is ``width`` px wide and its drawing has followed (usePanelRoom's answer to the panel's change)."""
    expect(editor.canvas).to_have_attribute("data-room", str(round(width)))
    assert abs(_box(editor.page, ".react-flow")["width"] - width) < 1


def _unbound_sku() -> dict[str, Any]:
    """customers -> orders -> pack_item, pack_item's required ``sku`` bound to nothing: one error, on that field."""
    document = nested_document(positions=True)
    pack = next(node for node in document["nodes"] if node["id"] == "pack_item")
    pack["input"] = [binding for binding in pack["input"] if binding["target"] != "sku"]
    return document


def _open(page: Page, live_server: Any, user: Any, team: Any, document: dict[str, Any] | None = None) -> EditorPage:
    """The editor at 1600x1000 on a new "Orders" workflow: the customers -> orders loops, placed, by default."""
    workflow = workflow_services.create_workflow(actor=user, team=team, name="Orders",
                                                 document=document or nested_document(positions=True))
    return EditorPage(page, live_server.url, workflow).open()


def test_each_side_panel_folds_to_a_rail_and_the_canvas_takes_its_room(
    logged_in_page: Page, live_server: Any, user: Any, team: Any, artifacts_dir: Path
) -> None:
    page = logged_in_page
    page.add_init_script(RECORD_FIRST_LAYOUT)
    workflow = workflow_services.create_workflow(actor=user, team=team, name="Orders",
                                                 document=nested_document(positions=True))
    editor = EditorPage(page, live_server.url, workflow)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(editor.url)
    expect(editor.canvas).to_have_attribute("data-fitted", "true")
    editor.wait_fitted()
    assert page.evaluate("window.__firstLayout") == {"palette": None, "inspector": None}
    opened = _box(page, ".react-flow")
    widths = {panel: _box(page, selector)["width"] for panel, (selector, _name) in PANELS.items()}
    assert widths == {"palette": 248, "inspector": 380}  # as before: the other tests' coordinates hold
    open_axe = refused_violations(page, "editor-panels-open", artifacts_dir)
    assert open_axe == [], json.dumps(open_axe, indent=1)

    grown = opened["width"]
    for panel, (selector, _name) in PANELS.items():
        button = _toggle(page, panel)
        expect(button).to_have_attribute("aria-expanded", "true")
        body = page.locator(f"#{button.get_attribute('aria-controls')}")
        expect(body).to_be_visible()
        button.click()
        expect(button).to_have_attribute("aria-expanded", "false")
        expect(body).to_be_hidden()
        rail = _box(page, selector)
        assert rail["width"] == RAIL, (panel, rail)
        pressed = button.bounding_box()  # the whole rail brings the panel back, not a word's worth of it
        assert pressed and pressed["height"] > 0.9 * rail["height"], (pressed, rail)
        grown += widths[panel] - RAIL
        _expect_room(editor, grown)
        # React Flow drew the graph into the new room: every node inside the canvas, the drawing in its middle
        # (the view was the fit's, so it is fitted again), the minimap at the canvas's new top right.
        assert page.evaluate(NODES_IN_CANVAS)["outside"] == [], panel
        assert abs(page.evaluate(DRAWING_OFF_CENTRE)) < 40, panel
        flow, minimap = _box(page, ".react-flow"), _box(page, ".wf-minimap")
        assert abs((flow["x"] + flow["width"]) - (minimap["x"] + minimap["width"])) < 24, (flow, minimap)
        expect(button).to_be_visible()  # the rail keeps the way back
        for other in PANELS:
            if other != panel and _toggle(page, other).get_attribute("aria-expanded") == "true":
                _expect_open_as_ever(page, other)
    both = _box(page, ".react-flow")
    assert both["width"] - opened["width"] == widths["palette"] + widths["inspector"] - 2 * RAIL
    page.screenshot(path=artifacts_dir / "editor-panels-folded-1440.png")
    folded_axe = refused_violations(page, "editor-panels-folded", artifacts_dir)
    assert folded_axe == [], json.dumps(folded_axe, indent=1)

    # This browser remembers, on this page and the others, and lays the page out so before its first paint.
    page.reload()
    expect(editor.canvas).to_have_attribute("data-fitted", "true")
    assert page.evaluate("window.__firstLayout") == {"palette": "collapsed", "inspector": "collapsed"}
    for panel in PANELS:
        expect(_toggle(page, panel)).to_have_attribute("aria-expanded", "false")
    assert _box(page, ".react-flow")["width"] == both["width"]
    editor.wait_fitted()
    other = workflow_services.create_workflow(actor=user, team=team, name="Other", document=nested_document())
    page.goto(f"{live_server.url}/workflows/{other.pk}/edit/")
    expect(page.locator("[data-editor-canvas]")).to_have_attribute("data-fitted", "true")
    assert _box(page, ".react-flow")["width"] == both["width"]

    # Opened again, everything is where it was.
    page.goto(editor.url)
    expect(editor.canvas).to_have_attribute("data-fitted", "true")
    for panel, (selector, _name) in PANELS.items():
        _toggle(page, panel).click()
        _expect_open_as_ever(page, panel)  # the palette first, beside the folded inspector
        assert _box(page, selector)["width"] == widths[panel]
    _expect_room(editor, opened["width"])
    assert _box(page, ".react-flow") == opened
    assert page.evaluate(NODES_IN_CANVAS)["outside"] == []
    page.reload()
    expect(editor.canvas).to_have_attribute("data-fitted", "true")
    assert page.evaluate("window.__firstLayout") == {"palette": None, "inspector": None}
    assert _box(page, ".react-flow") == opened
    assert editor.errors == []


def test_the_panels_fold_and_open_by_keyboard_alone(
    logged_in_page: Page, live_server: Any, user: Any, team: Any, artifacts_dir: Path
) -> None:
    page = logged_in_page
    editor = _open(page, live_server, user, team)
    editor.wait_idle()  # the panels' first loads are in: nothing swaps under the focus
    opened = _box(page, ".react-flow")["width"]
    palette = _toggle(page, "palette")

    # Reached with Tab from the top of the page, like every control before it.
    page.locator("body").focus()
    for _ in range(40):
        page.keyboard.press("Tab")
        if palette.evaluate("el => el === document.activeElement"):
            break
    else:
        pytest.fail("Tab never reaches the palette's button")
    page.keyboard.press("Enter")
    expect(palette).to_have_attribute("aria-expanded", "false")
    expect(palette).to_be_focused()  # the rail keeps the focus where it was
    _expect_room(editor, opened + 248 - RAIL)
    page.keyboard.press("Space")
    expect(palette).to_have_attribute("aria-expanded", "true")
    _expect_room(editor, opened)

    # The keys the workflow settings list: [ the palette, ] the inspector; typed into a field, they are text.
    expect(editor.inspector.locator("kbd", has_text="[")).to_have_count(1)
    expect(editor.inspector.locator("kbd", has_text="]")).to_have_count(1)
    page.keyboard.press("]")
    expect(_toggle(page, "inspector")).to_have_attribute("aria-expanded", "false")
    page.keyboard.press("[")
    expect(palette).to_have_attribute("aria-expanded", "false")
    _expect_room(editor, opened + 248 + 380 - 2 * RAIL)
    page.keyboard.press("[")
    page.keyboard.press("]")
    expect(palette).to_have_attribute("aria-expanded", "true")
    expect(_toggle(page, "inspector")).to_have_attribute("aria-expanded", "true")
    # (The version note: typing in the palette's search would reload the palette's list under the next step.)
    note = page.get_by_label("Note for the published version")
    note.press_sequentially("[x]")
    expect(note).to_have_value("[x]")
    expect(palette).to_have_attribute("aria-expanded", "true")
    expect(_toggle(page, "inspector")).to_have_attribute("aria-expanded", "true")

    # A key pressed with the focus in a panel that folds leaves the focus on its button, not lost off screen.
    page.locator('[data-palette="task:pack_item"]').focus()
    page.keyboard.press("[")
    expect(palette).to_be_focused()
    page.keyboard.press("[")
    _expect_room(editor, opened)

    # A view the person moved is not fitted again: the drawing stays where it was on screen while the canvas's
    # left edge moves by the palette's width.
    pane = _box(page, ".react-flow__pane")
    start = (pane["x"] + pane["width"] / 2, pane["y"] + pane["height"] - 30)
    page.mouse.move(*start)
    page.mouse.down()
    page.mouse.move(start[0] - 60, start[1] - 40, steps=8)
    page.mouse.up()
    moved = _box(page, '.react-flow__node[data-id="customers"]')
    page.keyboard.press("[")
    _expect_room(editor, opened + 248 - RAIL)
    still = _box(page, '.react-flow__node[data-id="customers"]')
    assert all(abs(still[k] - moved[k]) < 0.5 for k in moved), (moved, still)
    assert editor.errors == []


def test_a_folded_inspector_stays_folded_on_a_click_and_opens_when_a_diagnostic_is_shown(
    logged_in_page: Page, live_server: Any, user: Any, team: Any, artifacts_dir: Path
) -> None:
    """Decided: a click on a node (which selects it as the press of a drag does) leaves the folded inspector folded,
    so moving nodes about never resizes the canvas under the pointer; the inspector loads that node behind its rail,
    one press away. Asking to see a node (a diagnostic's entry, a double click on the node) opens it."""
    page = logged_in_page
    editor = _open(page, live_server, user, team, _unbound_sku())
    editor.wait_idle()
    inspector = _toggle(page, "inspector")
    inspector.click()
    expect(inspector).to_have_attribute("aria-expanded", "false")
    folded = _box(page, ".react-flow")["width"]

    editor.node("orders").locator(".wf-node__title").click()
    expect(editor.node("orders")).to_have_class(re.compile(r"\bselected\b"))
    expect(editor.inspector).to_have_attribute("data-node", "orders")  # loaded behind the rail
    expect(inspector).to_have_attribute("aria-expanded", "false")
    assert _box(page, ".react-flow")["width"] == folded
    editor.move("orders", 30, 0)  # a drag: the canvas keeps its size throughout
    expect(inspector).to_have_attribute("aria-expanded", "false")
    assert _box(page, ".react-flow")["width"] == folded

    problem = editor.diagnostics.locator('.diag-item[data-code="binding.missing_required"]')
    problem.click()
    expect(inspector).to_have_attribute("aria-expanded", "true")
    expect(editor.inspector).to_have_attribute("data-node", "pack_item")
    row = editor.inspector.locator('li.field-row[data-field="input.sku"]')
    expect(row).to_have_class(re.compile(r"is-focused"))
    expect(row).to_be_in_viewport()
    page.screenshot(path=artifacts_dir / "editor-panels-diagnostic-opens-inspector.png")

    inspector.click()
    expect(inspector).to_have_attribute("aria-expanded", "false")
    editor.node("set_value").locator(".wf-node__title").dblclick()
    expect(inspector).to_have_attribute("aria-expanded", "true")
    expect(editor.inspector).to_have_attribute("data-node", "set_value")
    expect(editor.inspector).to_be_in_viewport()
    assert editor.errors == []


def test_the_folded_inspectors_rail_names_the_selected_node_and_opens_on_it(
    logged_in_page: Page, live_server: Any, user: Any, team: Any, artifacts_dir: Path
) -> None:
    page = logged_in_page
    document = nested_document(positions=True)
    next(node for node in document["nodes"] if node["id"] == "pack_item")["name"] = "Pack the item"
    long_name = ("Send the monthly statement to every customer of the region, then file a copy with the regional "
                 "office and tell the account manager by email")
    next(node for node in document["nodes"] if node["id"] == "set_value")["name"] = long_name
    editor = _open(page, live_server, user, team, document)
    editor.wait_idle()
    inspector = _toggle(page, "inspector")
    page.keyboard.press("]")
    expect(inspector).to_have_attribute("aria-expanded", "false")
    rail = page.locator("[data-rail-selection]")
    expect(rail).to_be_hidden()  # the workflow's settings: no node to name
    pressed = inspector.bounding_box()  # and the rail is the panel's button alone, as before
    assert pressed and pressed["height"] > 0.9 * _box(page, ".editor-side")["height"], pressed

    # A node selected while folded: the rail names it (by its name, and its kind), in words a screen reader reads
    # as they show, inside the rail.
    editor.select("pack_item")
    named = page.get_by_role("button", name="Pack the item (task)", exact=True)
    expect(named).to_be_visible()
    expect(named).to_have_attribute("aria-controls", "side-body")
    box, side = named.bounding_box(), _box(page, ".editor-side")
    assert box and box["x"] >= side["x"] and box["x"] + box["width"] <= side["x"] + side["width"] + 0.5, (box, side)
    assert box["y"] >= _box(page, ".panel-toggle[data-panel-toggle='inspector']")["y"], box
    page.screenshot(path=artifacts_dir / "editor-rail-selection-1440.png")
    page.locator(".editor-side").screenshot(path=artifacts_dir / "editor-rail-selection-rail.png")
    folded_axe = refused_violations(page, "editor-rail-selection", artifacts_dir)
    assert folded_axe == [], json.dumps(folded_axe, indent=1)
    # A long name ends in an ellipsis on the rail, its kind still in view; the button's name is the whole of it.
    editor.select("set_value")
    long_button = page.get_by_role("button", name=f"{long_name} (task)", exact=True)
    expect(long_button).to_be_visible()
    kind, side = rail.locator(".rail-selection__kind").bounding_box(), _box(page, ".editor-side")
    assert kind and kind["y"] + kind["height"] <= side["y"] + side["height"], (kind, side)
    page.locator(".editor-side").screenshot(path=artifacts_dir / "editor-rail-selection-long.png")
    # Another node: the rail follows; a node with no name goes by its id.
    editor.select("orders")
    expect(page.get_by_role("button", name="orders (foreach)", exact=True)).to_be_visible()
    expect(named).to_have_count(0)

    # Reached by Tab from the panel's button, it opens the panel on that node, the focus on its heading.
    inspector.focus()
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="orders (foreach)", exact=True)).to_be_focused()
    page.keyboard.press("Enter")
    expect(inspector).to_have_attribute("aria-expanded", "true")
    heading = editor.inspector.locator(".inspector-head h2")
    expect(heading).to_have_text("orders")
    expect(heading).to_be_focused()
    expect(rail).to_be_hidden()  # open, the inspector's own heading says it
    # Folded again and pressed with the pointer, the same.
    inspector.click()
    expect(inspector).to_have_attribute("aria-expanded", "false")
    page.get_by_role("button", name="orders (foreach)", exact=True).click()
    expect(inspector).to_have_attribute("aria-expanded", "true")
    expect(heading).to_be_focused()
    assert editor.errors == []


def test_start_a_run_brings_the_run_panel_into_view_from_the_head_and_from_an_empty_runs_list(
    logged_in_page: Page, live_server: Any, user: Any, team: Any, artifacts_dir: Path
) -> None:
    """The run panel is at the inspector's foot, under a node's inspector or the workflow's settings (thousands of
    pixels down on a real workflow): the page's "Start a run" brings it into view, the inspector opened when
    folded and the focus on the form's first field; a workflow's runs page with no runs yet links to the same."""
    page = logged_in_page
    editor = _open(page, live_server, user, team)
    editor.wait_idle()
    editor.select("pack_item")
    run_form = page.locator("#run-panel .run-form")
    expect(run_form).not_to_be_in_viewport()  # under the node's inspector, out of sight
    page.keyboard.press("]")
    expect(_toggle(page, "inspector")).to_have_attribute("aria-expanded", "false")
    page.get_by_role("link", name="Start a run", exact=True).click()
    expect(_toggle(page, "inspector")).to_have_attribute("aria-expanded", "true")
    expect(run_form).to_be_in_viewport()
    expect(run_form.locator("select, input:not([type=hidden]), textarea").first).to_be_focused()
    expect(editor.inspector).to_have_attribute("data-node", "pack_item")  # what the inspector held stays
    page.screenshot(path=artifacts_dir / "editor-start-a-run-1440.png")

    page.goto(f"{live_server.url}/workflows/{editor.workflow.pk}/runs/")
    empty = page.locator("#run-table .empty")
    expect(empty).to_have_text("No runs yet. Start a run in the editor.")
    runs_axe = refused_violations(page, "runs-empty", artifacts_dir)
    assert runs_axe == [], json.dumps(runs_axe, indent=1)
    empty.get_by_role("link", name="Start a run in the editor", exact=True).click()
    expect(page.locator("[data-editor-canvas]")).to_have_attribute("data-fitted", "true")
    expect(run_form).to_be_in_viewport()
    expect(run_form.locator("select, input:not([type=hidden]), textarea").first).to_be_focused()


def test_the_diagnostics_band_is_one_line_with_nothing_to_list(
    logged_in_page: Page, live_server: Any, user: Any, team: Any, artifacts_dir: Path
) -> None:
    page = logged_in_page
    editor = _open(page, live_server, user, team)
    editor.wait_idle()
    band = editor.diagnostics
    expect(band.locator(".diag-ok")).to_be_visible()
    heading = _box(page, "#diagnostics .panel-head")
    clean = _box(page, "#diagnostics")
    # One line: the verdict beside the heading, the band no taller than that line and its padding.
    assert abs(_box(page, "#diagnostics .diag-ok")["y"] - heading["y"]) < heading["height"], clean
    assert clean["height"] < 48, clean
    expect(page.locator("[data-split-handle]")).to_be_hidden()  # one line: nothing to resize
    canvas_clean = _box(page, ".react-flow")["height"]
    page.screenshot(path=artifacts_dir / "editor-diagnostics-one-line.png")

    # A problem: the band takes the height it always had (the split's: 9.5rem unless the person chose another).
    editor.select("pack_item")
    before = editor.revision()
    editor.field_row("sku").get_by_role("button", name="Clear", exact=True).click()
    editor.wait_saved(before + 1)
    expect(band.locator(".diag-item")).to_have_count(1)
    expect(page.locator("[data-split-handle]")).to_be_visible()
    busy = _box(page, "#diagnostics")
    default = page.evaluate("Math.round(9.5 * parseFloat(getComputedStyle(document.documentElement).fontSize))")
    assert busy["height"] == default, busy
    assert _box(page, ".react-flow")["height"] < canvas_clean - 100
    page.screenshot(path=artifacts_dir / "editor-diagnostics-problem.png")

    # The person's own height holds for problems, and the band is one line again once they are gone.
    page.locator("[data-split-handle]").focus()
    page.keyboard.press("ArrowUp")
    expect(page.locator("[data-split-handle]")).to_have_attribute("aria-valuenow", str(default + 24))
    assert _box(page, "#diagnostics")["height"] == default + 24
    before = editor.revision()
    page.keyboard.press("Control+z")
    editor.wait_saved(before + 1)
    expect(band.locator(".diag-ok")).to_be_visible()
    assert _box(page, "#diagnostics")["height"] == clean["height"]
    assert _box(page, ".react-flow")["height"] == canvas_clean
    page.reload()
    expect(editor.canvas).to_have_attribute("data-fitted", "true")
    assert _box(page, "#diagnostics")["height"] == clean["height"]
    expect(page.locator("[data-split-handle]")).to_have_attribute("aria-valuenow", str(default + 24))
    assert editor.errors == []


#: The header's parts a person sees (the crumbs, the name, the role, every shown link and button, the note): their
#: names and screen boxes, in the header's order.
HEAD_PARTS = """() => [...document.querySelectorAll(
    '.editor-head .crumbs, .editor-title, .editor-head .chip--role, .editor-head__actions > :is(a, button, input),'
    + ' .head-more > a')]
  .filter((el) => el.checkVisibility() && el.getBoundingClientRect().width > 0)
  .map((el) => {
    const r = el.getBoundingClientRect();
    return {name: el.getAttribute('aria-label') || el.textContent.trim(), x: r.x, y: r.y, right: r.right,
            bottom: r.bottom};
  })"""

#: The workflow's name as the header shows it: on how many lines, whether its end is cut off and, if so, whether an
#: ellipsis says so.
TITLE_SHOWN = """() => {
  const el = document.querySelector('.editor-title');
  const line = parseFloat(getComputedStyle(el).lineHeight) || 1.25 * parseFloat(getComputedStyle(el).fontSize);
  const cut = el.scrollWidth > el.clientWidth;
  return {lines: Math.round(el.getBoundingClientRect().height / line),
          ...(cut ? {cut, shownCut: getComputedStyle(el).textOverflow === 'ellipsis'} : {cut})};
}"""

#: The width the note field keeps at least (editor.css: 11rem at the page's 15 px rem): a few words of the note.
NOTE_ROOM = 11 * 15


def _head_laid_out(page: Page, width: int) -> list[dict[str, Any]]:
    """The header's shown parts at ``width``: one row, none over another, all inside the window."""
    parts = page.evaluate(HEAD_PARTS)
    for left, right in zip(parts, parts[1:], strict=False):
        assert left["right"] <= right["x"] + 0.5, f"{left['name']!r} runs into {right['name']!r} at {width} px"
    assert all(part["right"] <= width for part in parts), parts
    head = _box(page, ".editor-head")
    assert all(head["y"] <= part["y"] and part["bottom"] <= head["y"] + head["height"] for part in parts), parts
    return parts


def test_the_head_keeps_the_note_usable_and_the_name_on_one_line_at_1024(
    logged_in_page: Page, live_server: Any, user: Any, team: Any, artifacts_dir: Path
) -> None:
    """At 1024 px the publish note once shrank to ~80 px (a word and a half) and the workflow's name wrapped to two
    lines: now the links used less often fold behind "More", the note keeps ~11rem, and the name is one line (cut
    with an ellipsis, whole in its title, when it is too long for the row). At 1440 px every link stays in the row."""
    page = logged_in_page
    workflow = workflow_services.create_workflow(actor=user, team=team, name="Customer orders",
                                                 document=nested_document(positions=True))
    editor = EditorPage(page, live_server.url, workflow)
    note = page.get_by_label("Note for the published version")
    more = page.get_by_role("button", name="More", exact=True)
    menu = page.locator("#editor-head-more")
    links = ("Versions & triggers", "Sharing", "Export JSON")

    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(editor.url)
    expect(editor.canvas).to_have_attribute("data-fitted", "true")
    names = [part["name"] for part in _head_laid_out(page, 1440)]
    assert set(names[-7:-2]) == {"Runs", "Start a run", *links}, names  # every link in the row
    assert names[-2:] == ["Note for the published version", "Publish"], names
    expect(more).to_be_hidden()
    assert _box(page, "#publish-note")["width"] >= 13 * 15  # the 14rem it always had, give or take
    assert page.evaluate(TITLE_SHOWN) == {"lines": 1, "cut": False}
    page.screenshot(path=artifacts_dir / "editor-head-1440.png")

    page.set_viewport_size({"width": 1024, "height": 768})
    assert _box(page, "#publish-note")["width"] >= NOTE_ROOM, _box(page, "#publish-note")  # was 83 px
    assert page.evaluate(TITLE_SHOWN) == {"lines": 1, "cut": False}  # was two lines
    names = [part["name"] for part in _head_laid_out(page, 1024)]
    assert names[-5:] == ["Runs", "Start a run", "More", "Note for the published version", "Publish"], names
    assert _box(page, ".editor-head")["height"] < 56
    note.fill("adds the audit step for the northeast region")
    closed_axe = refused_violations(page, "editor-head-1024", artifacts_dir)
    assert closed_axe == [], json.dumps(closed_axe, indent=1)
    page.screenshot(path=artifacts_dir / "editor-head-1024.png")

    # "More" opens a menu under itself with the folded links, inside the window; Escape closes it, focus back.
    more.click()
    expect(menu).to_be_visible()
    for name in links:
        expect(menu.get_by_role("link", name=name, exact=True)).to_be_visible()
    toggle, opened = _box(page, ".head-more__toggle"), _box(page, "#editor-head-more")
    assert opened["y"] >= toggle["y"] + toggle["height"] and opened["x"] + opened["width"] <= 1024, (toggle, opened)
    assert abs((opened["x"] + opened["width"]) - (toggle["x"] + toggle["width"])) < 2, (toggle, opened)
    open_axe = refused_violations(page, "editor-head-1024-more", artifacts_dir)
    assert open_axe == [], json.dumps(open_axe, indent=1)
    page.screenshot(path=artifacts_dir / "editor-head-1024-more.png")
    page.keyboard.press("Escape")
    expect(menu).to_be_hidden()
    expect(more).to_be_focused()
    more.click()
    menu.get_by_role("link", name="Versions & triggers", exact=True).click()
    expect(page).to_have_url(re.compile(rf"/workflows/{workflow.pk}/$"))

    # A name too long for the row: still one line, cut with an ellipsis and whole in its title; the note keeps its
    # room and nothing overlaps.
    long_name = "Quarterly procurement reconciliation for the northeast region's suppliers"
    workflow_services.update_workflow(actor=user, workflow=workflow, name=long_name)
    page.goto(editor.url)
    expect(editor.canvas).to_have_attribute("data-fitted", "true")
    _head_laid_out(page, 1024)
    assert page.evaluate(TITLE_SHOWN) == {"lines": 1, "cut": True, "shownCut": True}
    expect(page.locator(".editor-title")).to_have_attribute("title", long_name)
    expect(page.locator(".editor-title")).to_have_text(long_name)
    assert _box(page, "#publish-note")["width"] >= NOTE_ROOM
    role = page.locator(".editor-head .chip--role")
    assert role.evaluate("el => el.scrollWidth <= el.clientWidth"), "the role is cut, not the name"
    page.screenshot(path=artifacts_dir / "editor-head-1024-long-name.png")

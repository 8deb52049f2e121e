"""The editor as a person first sees it, in headless Chromium: Publish lists the new version in the run panel at
once; a node added from the palette goes beside the selected node's free output, on no node and no route; a
30-node graph's first view keeps every text on the canvas at 12 px or more on screen; and at 1024x768 the toolbar
is one row above the drawing (not over it) and the minimap covers no node. Screenshots at 1440x900 and 1024x768."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from designer.access import teams as team_services
from designer.models import Workflow
from designer.workflows import services as workflow_services
from tests.browser.editor_page import EditorPage
from tests.designer.conftest import simple_document

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = [(1440, 900), (1024, 768)]


def _workflow(user: Any, document: dict[str, Any], name: str = "Orders") -> Workflow:
    team = team_services.create_team(actor=user, name="Acme")
    return workflow_services.create_workflow(actor=user, team=team, name=name, document=document)


def thirty_nodes() -> dict[str, Any]:
    """30 checks in a chain, each also skipping one ahead on "review": no canvas positions, so the editor lays
    it out itself."""
    ids = [f"check_{n:02d}" for n in range(1, 31)]
    nodes = [{"id": node_id, "name": f"Check amount {n:02d}", "kind": "task", "task": "assess_request",
              "input": [{"target": "amount", "path": "input.amount"}], "output": []}
             for n, node_id in enumerate(ids, start=1)]
    routes = [{"source": ids[i], "label": "auto", "target": ids[i + 1]} for i in range(len(ids) - 1)]
    routes += [{"source": ids[i], "label": "review", "target": ids[i + 2]} for i in range(len(ids) - 2)]
    return {"id": "thirty", "name": "Thirty", "input_schema": {
        "type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]},
        "nodes": nodes, "routes": routes}


def _open(page: Page, base: str, workflow: Workflow, size: tuple[int, int]) -> EditorPage:
    editor = EditorPage(page, base, workflow)
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(editor.url)
    expect(editor.canvas).to_have_attribute("data-state", "saved")
    expect(editor.canvas).to_have_attribute("data-fitted", "true")
    editor.wait_fitted()
    return editor


def _box(page: Page, selector: str) -> dict[str, float]:
    box = page.locator(selector).first.bounding_box()
    assert box, selector
    return box


def _boxes(page: Page, selector: str) -> list[dict[str, float]]:
    return page.locator(selector).evaluate_all(
        "els => els.map(e => { const r = e.getBoundingClientRect();"
        " return {id: e.dataset.id, x: r.x, y: r.y, width: r.width, height: r.height}; })")


def _overlap(one: dict[str, float], other: dict[str, float]) -> bool:
    return not (one["x"] + one["width"] <= other["x"] or other["x"] + other["width"] <= one["x"]
                or one["y"] + one["height"] <= other["y"] or other["y"] + other["height"] <= one["y"])


#: Every element on the canvas that shows text of its own: (its text, its font size on screen in px).
_TEXT_ON_SCREEN = """() => {
  const zoom = new DOMMatrixReadOnly(getComputedStyle(document.querySelector('.react-flow__viewport')).transform).a;
  const selector = '.react-flow__node *, .wf-edge-label, .react-flow__edge-text, .wf-frame *';
  const shown = [...document.querySelectorAll(selector)]
    .filter(el => [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()))
    .filter(el => el.getClientRects().length);
  return shown.map(el => [el.textContent.trim(), parseFloat(getComputedStyle(el).fontSize) * zoom]);
}"""


# --- Publish, then the run panel ---------------------------------------------------------------


def test_publish_lists_the_new_version_in_the_run_panel_without_a_reload(
    logged_in_page: Page, live_server: Any, user: Any
) -> None:
    workflow = _workflow(user, simple_document())
    editor = EditorPage(logged_in_page, live_server.url, workflow).open()
    page = editor.page
    versions = page.locator("#run-version option")
    expect(versions).to_have_text(["Current draft"])
    page.evaluate("() => { window.sameTab = true; }")  # gone if the page reloads
    page.get_by_label("Note for the published version").fill("first")
    page.get_by_role("button", name="Publish", exact=True).click()
    expect(page.get_by_text("Published version 1")).to_be_visible()
    expect(versions).to_have_count(2)
    expect(versions.nth(1)).to_have_text(re.compile(r"^v1 · published "))
    page.get_by_role("button", name="Publish", exact=True).click()
    expect(versions).to_have_count(3)
    expect(versions.nth(1)).to_contain_text("v2 · published")
    assert page.evaluate("() => window.sameTab === true")
    assert editor.errors == []


# --- a node from the palette goes beside the selected node ---------------------------------------------


def _placement_document() -> dict[str, Any]:
    """simple_document with a node right where one added beside ``record``'s free output would go, and a route
    from it running down across the space below: the new node must find another place."""
    document = simple_document()
    document["nodes"].append({"id": "blocker", "name": "Blocker", "kind": "task", "task": "assess_request",
                              "input": [{"target": "amount", "path": "input.amount"}], "output": []})
    document["nodes"].append({"id": "below", "name": "Below", "kind": "task", "task": "assess_request",
                              "input": [{"target": "amount", "path": "input.amount"}], "output": []})
    document["routes"].append({"source": "blocker", "label": "review", "target": "below"})
    document["routes"].append({"source": "record", "label": "rejected", "target": "below"})
    document["metadata"] = {"positions": {"assess": {"x": 40, "y": 60}, "record": {"x": 340, "y": 60},
                                          "blocker": {"x": 640, "y": 80}, "below": {"x": 640, "y": 330}}}
    return document


def _edge_points_in(page: Page, box: dict[str, float]) -> list[str]:
    """The routes (by id) with a point of their drawn path inside ``box`` (screen px)."""
    return page.evaluate("""(box) => {
      const hits = [];
      for (const edge of document.querySelectorAll('.react-flow__edge')) {
        const path = edge.querySelector('path.react-flow__edge-path');
        const total = path.getTotalLength();
        const matrix = path.getScreenCTM();
        for (let s = 0; s <= total; s += 4) {
          const p = new DOMPoint(path.getPointAtLength(s).x, path.getPointAtLength(s).y).matrixTransform(matrix);
          if (p.x > box.x && p.x < box.x + box.width && p.y > box.y && p.y < box.y + box.height) {
            hits.push(edge.dataset.id); break;
          }
        }
      }
      return hits;
    }""", box)


@pytest.mark.parametrize("scene", ["open", "blocked"])
def test_a_node_added_from_the_palette_goes_beside_the_selected_nodes_free_output(
    logged_in_page: Page, live_server: Any, user: Any, artifacts_dir: Path, scene: str
) -> None:
    document = simple_document() if scene == "open" else _placement_document()
    if scene == "open":
        document["metadata"] = {"positions": {"assess": {"x": 40, "y": 60}, "record": {"x": 340, "y": 60}}}
    workflow = _workflow(user, document)
    editor = EditorPage(logged_in_page, live_server.url, workflow).open()
    page = editor.page
    editor.select("record")
    before, known = editor.revision(), set(editor.node_ids())
    editor.palette_item("task", "assess_request").click()
    editor.wait_saved(before + 1)
    added = [node_id for node_id in editor.node_ids() if node_id not in known]
    assert len(added) == 1, added
    new = editor.node(added[0])
    expect(new).to_be_visible()
    page.screenshot(path=artifacts_dir / f"editor-add-beside-{scene}.png")
    box = new.bounding_box()
    record = editor.node("record").bounding_box()
    assert box and record
    for other in _boxes(page, ".react-flow__node"):
        if other["id"] != added[0]:
            assert not _overlap(box, other), (other["id"], box, other)
    assert _edge_points_in(page, box) == []
    assert box["x"] >= record["x"] + record["width"]  # to the right of the selected node
    # In view, where the person can see it went: inside the drawing and clear of the minimap.
    pane = _box(page, ".react-flow")
    assert pane["x"] <= box["x"] and box["x"] + box["width"] <= pane["x"] + pane["width"], (box, pane)
    assert pane["y"] <= box["y"] and box["y"] + box["height"] <= pane["y"] + pane["height"], (box, pane)
    assert not _overlap(box, _box(page, ".wf-minimap"))
    free = editor.node("record").locator('.react-flow__handle.source[data-handleid="approved"]').bounding_box()
    assert free
    if scene == "open":
        # Level with the free output: its input handle within a few px of that output's height.
        entry = new.locator(".react-flow__handle.target").bounding_box()
        assert entry and abs((entry["y"] + entry["height"] / 2) - (free["y"] + free["height"] / 2)) < 30
    assert editor.errors == []


# --- the first view of a 30-node graph -------------------------------------------------------------------


@pytest.mark.parametrize("size", SIZES)
def test_the_first_view_of_a_30_node_graph_keeps_every_canvas_text_at_12px(
    logged_in_page: Page, live_server: Any, user: Any, artifacts_dir: Path, size: tuple[int, int]
) -> None:
    workflow = _workflow(user, thirty_nodes(), name="Thirty checks")
    editor = _open(logged_in_page, live_server.url, workflow, size)
    page = editor.page
    expect(page.locator(".react-flow__node")).to_have_count(30)
    texts = page.evaluate(_TEXT_ON_SCREEN)
    kinds = {text for text, _ in texts}
    assert "Check amount 01" in kinds and "auto" in kinds and "review" in kinds, kinds
    page.screenshot(path=artifacts_dir / f"editor-30-nodes-{size[0]}x{size[1]}.png")
    small = [(text, round(px, 2)) for text, px in texts if px < 12]
    assert small == [], small
    assert editor.errors == []


# --- 1024x768: the toolbar and the minimap ------------------------------------------------------------------


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("graph", ["simple", "thirty"])
def test_the_toolbar_is_one_row_above_the_canvas_and_the_minimap_covers_no_node(
    logged_in_page: Page, live_server: Any, user: Any, artifacts_dir: Path, size: tuple[int, int], graph: str
) -> None:
    document = simple_document() if graph == "simple" else thirty_nodes()
    editor = _open(logged_in_page, live_server.url, _workflow(user, document), size)
    page = editor.page
    page.screenshot(path=artifacts_dir / f"editor-{graph}-{size[0]}x{size[1]}.png")
    toolbar, pane = _box(page, ".wf-toolbar"), _box(page, ".react-flow")
    assert not _overlap(toolbar, pane), (toolbar, pane)
    # One row: no taller than its tallest control plus its padding.
    tallest = max(b["height"] for b in _boxes(page, ".wf-toolbar > button, .wf-toolbar > select"))
    assert toolbar["height"] < tallest + 16, (toolbar, tallest)
    for control in page.locator(".wf-toolbar > button, .wf-toolbar > select, .wf-status").all():
        box = control.bounding_box()
        assert box and box["x"] + box["width"] <= toolbar["x"] + toolbar["width"] + 0.5, box  # none cut off
    minimap = _box(page, ".wf-minimap")
    covered = [node["id"] for node in _boxes(page, ".react-flow__node") if _overlap(minimap, node)]
    assert covered == []
    assert editor.errors == []

"""A big graph in the editor (issue 34): laid out in rows that fit a screen's shape, every node on the minimap,
the state schema's builder of the workflow settings loaded on demand, a drag answered with a small patch.

Timings are measured by ``make bench BENCH=editor_scale``, never here."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import Page, Response, expect

from designer.access import teams as team_services
from designer.workflows import services as workflow_services
from tests.browser.editor_page import EditorPage, empty_document

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZE = 120  # above layout.js ROWS_FROM: the layered layout in rows (rows.js)


def _big_document() -> dict[str, Any]:
    names = [f"line_{n:03d}" for n in range(SIZE)]
    nodes: list[dict[str, Any]] = [
        {"id": "customers", "kind": "foreach", "over": "input.customers"},
        {"id": "orders", "kind": "foreach", "over": "context.foreach.customers.item.orders"},
    ]
    routes = [{"source": "customers", "label": "loop", "target": "orders"},
              {"source": "orders", "label": "loop", "target": names[0]},
              {"source": "orders", "label": "done", "target": "customers"}]
    for n, name in enumerate(names):
        nodes.append({"id": name, "kind": "task", "task": "template", "input": [
            {"target": "template", "value": "{customer}"},
            {"target": "values.customer", "path": "context.foreach.customers.item.name"},
        ], "output": [{"source": ".", "target": name}]})
        routes.append({"source": name, "label": "ok", "target": names[n + 1] if n + 1 < SIZE else "orders"})
    return empty_document(
        nodes=nodes, routes=routes,
        state_schema={"type": "object", "properties": {name: {"type": "string"} for name in names}})


# Every drawn node's box in flow coordinates, and the loop frames'.
_BOXES = """() => {
  const zoom = Number(document.querySelector("[data-editor-canvas]").dataset.zoom);
  const box = (el) => { const r = el.getBoundingClientRect(); return {x: r.x / zoom, y: r.y / zoom,
                                                                   width: r.width / zoom, height: r.height / zoom}; };
  return [...document.querySelectorAll(".react-flow__node")].map((el) => ({id: el.dataset.id, ...box(el)}));
}"""


def test_a_big_graph_is_laid_out_in_rows_shown_on_the_minimap_and_a_move_is_a_small_answer(
    logged_in_page: Page, live_server: Any, user: Any
) -> None:
    team = team_services.create_team(actor=user, name="Acme")
    workflow = workflow_services.import_workflow(actor=user, team=team, document=_big_document(), name="Big")
    editor = EditorPage(logged_in_page, live_server.url, workflow).open()
    expect(editor.page.locator(".react-flow__node")).to_have_count(SIZE + 2)

    before = editor.revision()
    editor.page.get_by_role("button", name="Layout", exact=True).click()
    editor.wait_saved(before + 1)
    positions = editor.document()["metadata"]["positions"]
    assert len(positions) == SIZE + 2
    boxes = editor.page.evaluate(_BOXES)
    # No two nodes overlap.
    boxes.sort(key=lambda b: b["x"])
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            if b["x"] >= a["x"] + a["width"]:
                break
            assert b["y"] >= a["y"] + a["height"] or a["y"] >= b["y"] + b["height"], (a["id"], b["id"])
    # Shaped like a screen: not one row (the chain used to be 190,000 px wide at 600 nodes) nor one column.
    xs = [p["x"] for p in positions.values()]
    ys = [p["y"] for p in positions.values()]
    width, height = max(xs) - min(xs) + 220, max(ys) - min(ys) + 112
    assert 0.8 <= width / height <= 3.0, (width, height)
    # The body's frame holds the body: the first chain node is right of its foreach and below its frame's title.
    assert positions["line_000"]["x"] > positions["orders"]["x"] + 220
    # The minimap draws every node at least a pixel wide.
    drawn = editor.page.locator(".wf-minimap .react-flow__minimap-node").evaluate_all(
        "els => els.filter((el) => el.getBoundingClientRect().width >= 1).length")
    assert drawn == SIZE + 2

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

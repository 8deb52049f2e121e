"""Driving the workflow editor in a real browser: a small page object for the editor tests.

Every action goes through the UI the way a person does it (palette drag and
drop, dragging from a label handle, the inspector's pickers); waits are on
what the page shows (the saved revision, the inspector's node), never on time.
"""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Locator, Page, Route, expect

from designer.models import Workflow

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "customers": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "orders": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
                            "required": ["sku", "qty"],
                        },
                    },
                },
                "required": ["name", "orders"],
            },
        }
    },
    "required": ["customers"],
}


def empty_document(**extra: Any) -> dict[str, Any]:
    return {"id": "draft", "input_schema": INPUT_SCHEMA, "nodes": [], "routes": [], **extra}


#: The canvas never zooms below this (static/src/editor/layout.js READABLE_ZOOM): labels stay legible.
READABLE_ZOOM = 0.924  # 12 / 13, rounded up

#: The test task module (``pack_item``) the editor tests add to the catalogue with the public setting.
EDITOR_TASKS = "tests.browser.editor_tasks"


# Each drawn route's end: the arrowhead its marker-end names (graph.js arrowheadId), in the page, in its colour.
_ARROWHEAD_PROBLEMS = """() => [...document.querySelectorAll(".react-flow__edge path.react-flow__edge-path")]
  .flatMap((path) => {
  const edge = path.closest(".react-flow__edge").dataset.id;
  const id = (path.getAttribute("marker-end") || "").match(/^url\\('?#([^')]+)'?\\)$/);
  const head = id && document.getElementById(id[1]);
  if (!head || head.tagName !== "marker") return [`${edge}: no arrowhead (${path.getAttribute("marker-end")})`];
  const [want, got] = [getComputedStyle(path).stroke, getComputedStyle(head.querySelector("polyline")).fill];
  return want === got ? [] : [`${edge}: a ${got} arrowhead on a ${want} route`];
})"""


class EditorPage:
    """One browser tab on ``/workflows/<id>/edit/``; collects console errors as it goes."""

    def __init__(self, page: Page, base_url: str, workflow: Workflow) -> None:
        self.page = page
        self.workflow = workflow
        self.url = f"{base_url}/workflows/{workflow.pk}/edit/"
        self.errors: list[str] = []
        page.on("console", lambda message: self.errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        # Locators are lazy: each finds its element again whenever it is used.
        self.canvas = page.locator("[data-editor-canvas]")
        self.inspector = page.locator("#inspector .inspector")
        self.diagnostics = page.locator("#diagnostics")
        self.notice = page.locator("#editor-notice")

    # --- locators -----------------------------------------------------------------

    def node(self, node_id: str) -> Locator:
        return self.page.locator(f'.react-flow__node[data-id="{node_id}"]')

    def edge(self, source: str, label: str) -> Locator:
        return self.page.locator(f'.react-flow__edge[data-id="{source}::{label}"]')

    def palette_item(self, kind: str, title: str) -> Locator:
        return self.page.locator(f'[data-palette="{kind}:{title}"]')

    # --- state ----------------------------------------------------------------------

    def open(self) -> EditorPage:
        # Room for a four-node graph at 100 % zoom between the palette and the inspector.
        self.page.set_viewport_size({"width": 1600, "height": 1000})
        self.page.goto(self.url)
        expect(self.canvas).to_have_attribute("data-state", "saved")
        # The first fit sets the zoom; measuring or dragging before it races with it.
        expect(self.canvas).to_have_attribute("data-fitted", "true")
        return self

    def arrowhead_problems(self) -> list[str]:
        """Each drawn route whose end names no arrowhead in the page, or one of another colour than the route."""
        return self.page.evaluate(_ARROWHEAD_PROBLEMS)

    def revision(self) -> int:
        return int(self.canvas.get_attribute("data-revision") or 0)

    def wait_saved(self, revision: int) -> None:
        expect(self.canvas).to_have_attribute("data-revision", str(revision))
        expect(self.canvas).to_have_attribute("data-state", "saved")

    def node_ids(self) -> list[str]:
        return self.page.locator(".react-flow__node").evaluate_all("els => els.map(e => e.dataset.id)")

    def document(self) -> dict[str, Any]:
        self.workflow.refresh_from_db()
        return self.workflow.document

    # --- canvas actions -------------------------------------------------------------

    def start_name_save(self, node_id: str, name: str) -> int:
        """Select ``node_id``, type ``name`` and press Save node without waiting for the answer; returns the
        revision before the save."""
        self.select(node_id)
        self.inspector.get_by_label("Name", exact=True).fill(name)
        before = self.revision()
        self.inspector.get_by_role("button", name="Save node", exact=True).click()
        return before

    def drop(self, kind: str, title: str, x: int, y: int) -> str:
        """Drag a palette item onto the canvas at (x, y) of the pane; returns the new node's id."""
        before, known = self.revision(), set(self.node_ids())
        self.palette_item(kind, title).drag_to(self.page.locator(".react-flow__pane"),
                                               target_position={"x": x, "y": y})
        self.wait_saved(before + 1)
        added = [node_id for node_id in self.node_ids() if node_id not in known]
        assert len(added) == 1, added
        expect(self.inspector).to_have_attribute("data-node", added[0])
        return added[0]

    def connect(self, source: str, label: str, target: str) -> None:
        """Drag from ``source``'s ``label`` handle to ``target``, as a person wires a route."""
        before = self.revision()
        handle = self.node(source).locator(f'.react-flow__handle.source[data-handleid="{label}"]')
        goal = self.node(target).locator(".react-flow__handle.target")
        start, end = handle.bounding_box(), goal.bounding_box()
        assert start and end
        mouse = self.page.mouse
        mouse.move(start["x"] + start["width"] / 2, start["y"] + start["height"] / 2)
        mouse.down()
        mouse.move(start["x"] + start["width"] / 2 + 1, start["y"] + start["height"] / 2 + 1)
        mouse.move(end["x"] + end["width"] / 2, end["y"] + end["height"] / 2, steps=12)
        mouse.up()
        self.wait_saved(before + 1)
        expect(self.edge(source, label)).to_have_count(1)

    def move(self, node_id: str, dx: int, dy: int) -> None:
        title = self.node(node_id).locator(".wf-node__title")
        # Where the node stands once the canvas stops moving (a fit or a pan animates): a box read mid-way put the
        # press beside the node, on the pane, which pans instead of moving anything.
        box = title.bounding_box()
        for _ in range(120):  # frames: an animation of the canvas lasts a fraction of a second
            self.page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
            again = title.bounding_box()
            if again == box:
                break
            box = again
        assert box
        before = self.revision()  # read as the drag begins: a save in flight may land while the canvas settles
        mouse = self.page.mouse
        mouse.move(box["x"] + 10, box["y"] + box["height"] / 2)
        mouse.down()
        mouse.move(box["x"] + 11, box["y"] + box["height"] / 2 + 1)
        mouse.move(box["x"] + 10 + dx, box["y"] + box["height"] / 2 + dy, steps=10)
        mouse.up()
        self.wait_saved(before + 1)

    def wait_fitted(self) -> None:
        """Wait until the fit is done: every node and loop frame inside the canvas and clear of the toolbar,
        the zoom controls and the minimap; or, for a graph too big for that at a legible zoom, the readable
        zoom with the graph's top left (where it starts) in view and clear of them."""
        self.page.wait_for_function("""(readable) => {
            const box = (el) => el.getBoundingClientRect();
            const pane = box(document.querySelector(".react-flow__pane"));
            const chrome = [...document.querySelectorAll(".wf-toolbar, .react-flow__controls, .wf-minimap")].map(box);
            const apart = (a, b) => a.right <= b.left || b.right <= a.left || a.bottom <= b.top || b.bottom <= a.top;
            const inside = (r) => r.left >= pane.left && r.right <= pane.right && r.top >= pane.top
                && r.bottom <= pane.bottom && chrome.every((c) => apart(r, c));
            const drawn = [...document.querySelectorAll(".react-flow__node, .wf-frame")].map(box);
            if (drawn.every(inside)) return true;
            const zoom = Number(document.querySelector("[data-editor-canvas]").dataset.zoom);
            if (Math.abs(zoom - readable) > 0.001) return false;
            const left = Math.min(...drawn.map((r) => r.left)), top = Math.min(...drawn.map((r) => r.top));
            const corner = {left, top, right: left + 40, bottom: top + 40};
            return inside(corner);
        }""", arg=READABLE_ZOOM)

    def click_empty_canvas(self) -> None:
        """Click the pane where no node, toolbar, minimap or control sits (clears the selection)."""
        pane = self.page.locator(".react-flow__pane")
        box = pane.bounding_box()
        assert box
        pane.click(position={"x": box["width"] / 2, "y": box["height"] - 24})

    def select(self, node_id: str) -> None:
        self.node(node_id).locator(".wf-node__title").click()
        expect(self.inspector).to_have_attribute("data-node", node_id)

    # --- inspector actions -------------------------------------------------------------

    def rename(self, node_id: str, new_id: str) -> None:
        self.select(node_id)
        before = self.revision()
        self.inspector.get_by_label("Id", exact=True).fill(new_id)
        self.inspector.get_by_role("button", name="Save node", exact=True).click()
        expect(self.inspector).to_have_attribute("data-node", new_id)
        self.wait_saved(before + 1)
        expect(self.node(new_id)).to_have_count(1)

    def wait_idle(self) -> None:
        """No save and no htmx request in flight, and the live feed's first answer in (it may reload the draft
        and its panels): a panel refresh landing later would replace what we open."""
        expect(self.canvas).to_have_attribute("data-state", "saved")
        self.page.wait_for_function("() => !document.querySelector('[data-live-url]')"
                                    " || document.querySelector('[data-live-url]').dataset.live === 'online'")
        self.page.wait_for_function("() => document.querySelector('.htmx-request') === null")

    def field_row(self, field_label: str) -> Locator:
        """The inspector's row of a field (``over``, ``path`` or the input field ``field_label``): its buttons
        are named by their text ("Clear", "Choose path…"), the row's field name describes them."""
        return self.inspector.locator(f"li.field-row[data-field='{field_label}'], "
                                      f"li.field-row[data-field='input.{field_label}']").first

    def open_picker(self, field_label: str) -> Locator:
        button = self.field_row(field_label).get_by_role("button", name="Choose path…", exact=True)
        picker = self.inspector.locator(".picker")
        # A refresh of the inspector triggered by an earlier edit can still swap in after the click and take
        # the freshly opened picker with it; wait for quiet, and open it again if that happened anyway.
        for _ in range(3):
            self.wait_idle()
            button.click()
            try:
                expect(picker).to_be_visible(timeout=3_000)
                self.wait_idle()
                if picker.is_visible():
                    return picker
            except AssertionError:
                continue
        expect(picker).to_be_visible()
        return picker

    def picker_paths(self) -> list[str]:
        return self.inspector.locator(".picker .option").evaluate_all("els => els.map(e => e.dataset.path)")

    def choose(self, path: str) -> None:
        before = self.revision()
        self.inspector.locator(f'.picker .option[data-path="{path}"]').click()
        self.wait_saved(before + 1)
        expect(self.inspector.locator(".picker")).to_have_count(0)

    def press(self, name: str) -> None:
        """Click an inspector button that saves an edit, and wait until the canvas shows the new revision."""
        before = self.revision()
        self.inspector.get_by_role("button", name=name, exact=True).click()
        self.wait_saved(before + 1)

    def handles(self, node_id: str) -> list[str]:
        """The labels the node's source handles offer, top to bottom."""
        return self.node(node_id).locator(".react-flow__handle.source").evaluate_all(
            "els => els.map(e => e.dataset.handleid)")

    def bind(self, node_id: str, field_label: str, path: str) -> None:
        self.select(node_id)
        self.open_picker(field_label)
        self.choose(path)


def nested_document(*, positions: bool = False) -> dict[str, Any]:
    """The finished customers -> orders workflow, as an export would carry it (no canvas positions)."""
    doc = empty_document(
        nodes=[
            {"id": "customers", "kind": "foreach", "over": "input.customers"},
            {"id": "orders", "kind": "foreach", "over": "context.foreach.customers.item.orders"},
            {"id": "pack_item", "kind": "task", "task": "pack_item", "input": [
                {"target": "customer", "path": "context.foreach.customers.item.name"},
                {"target": "sku", "path": "context.foreach.orders.item.sku"},
            ]},
            {"id": "set_value", "kind": "task", "task": "set_value"},
        ],
        routes=[
            {"source": "customers", "label": "loop", "target": "orders"},
            {"source": "orders", "label": "loop", "target": "pack_item"},
            {"source": "pack_item", "label": "ok", "target": "orders"},
            {"source": "orders", "label": "done", "target": "set_value"},
            {"source": "set_value", "label": "ok", "target": "customers"},
        ],
    )
    if positions:
        doc["metadata"] = {"positions": {
            "customers": {"x": 0, "y": 100}, "orders": {"x": 300, "y": 100},
            "pack_item": {"x": 600, "y": 0}, "set_value": {"x": 600, "y": 240},
        }}
    return doc


class HeldRequests:
    """Every request to ``url`` (a glob) stopped before it reaches the server, until ``release()``: a slow answer
    under load, made certain."""

    def __init__(self, page: Page, url: str) -> None:
        self.page, self.url = page, url
        self.routes: list[Route] = []
        page.route(url, self._hold)

    def _hold(self, route: Route) -> None:
        self.routes.append(route)

    def wait(self, what: str) -> None:
        """Until one is held (Playwright hands routes over only while the page is waited on)."""
        for _ in range(250):
            if self.routes:
                return
            self.page.wait_for_timeout(20)
        raise AssertionError(f"{what} never went out")

    def release(self) -> None:
        for route in self.routes:
            route.continue_()
        self.page.unroute(self.url, self._hold)

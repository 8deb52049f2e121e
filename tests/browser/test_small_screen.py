"""In headless Chromium at 1024x768, a small laptop's window: the pages fit its width (nothing pushed past the right
edge, no sideways scrolling), the editor's header keeps Publish on screen, a task's snake_case name in the
palette wraps after an underscore rather than mid-word, and with its side panels folded the editor shows more of
the demo's graph at a readable zoom."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from demo.data import TEAM_SLUG, load_demo
from designer.access import teams as team_services
from designer.models import Membership, Team, Workflow
from designer.workflows import services as workflow_services
from tests.browser.editor_page import READABLE_ZOOM, EditorPage

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SMALL = {"width": 1024, "height": 768}

DOCUMENT: dict[str, Any] = {
    "id": "approval", "nodes": [{"id": "ask", "kind": "interrupt", "prompt": "Approve?", "labels": ["ok"]}],
    "metadata": {"positions": {"ask": {"x": 80, "y": 80}}},
}

# The characters at which a text element's lines break: the last character of every line but the last.
LINE_ENDS = """el => {
  const text = el.textContent, range = document.createRange(), ends = [];
  const node = [...el.childNodes].filter(n => n.nodeType === 3);
  let top = null, last = '';
  for (const t of node) for (let i = 0; i < t.length; i++) {
    range.setStart(t, i); range.setEnd(t, i + 1);
    const y = Math.round(range.getBoundingClientRect().top);
    if (top !== null && y > top) ends.push(last);
    top = y; last = t.data[i];
  }
  return [text, ends];
}"""


def page_width(page: Page) -> tuple[int, int]:
    return page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")


def open_editor_and_check_its_header(page: Page, url: str, *, max_height: int) -> None:
    """Open the editor at ``url``: the page is no wider than the window, Publish is on screen and the header is
    lower than ``max_height`` px."""
    page.goto(url)
    expect(page.locator("[data-editor-canvas]")).to_have_attribute("data-state", "saved")
    width, window = page_width(page)
    assert width <= window, f"the editor page is {width - window}px wider than the window"
    publish = page.get_by_role("button", name="Publish", exact=True).bounding_box()
    assert publish and publish["x"] + publish["width"] <= window, publish
    head = page.locator(".editor-head").bounding_box()
    assert head and head["height"] < max_height, f"the header takes {head} of the window"


def test_the_editor_header_fits_a_1024_window_and_task_names_wrap_at_underscores(
    logged_in_page: Page, live_server: Any, user: Any
) -> None:
    page = logged_in_page
    page.set_viewport_size(SMALL)
    team = team_services.create_team(actor=user, name="Purchasing")
    workflow = workflow_services.create_workflow(actor=user, team=team, name="Spending approval review",
                                                 document=DOCUMENT)
    open_editor_and_check_its_header(page, f"{live_server.url}/workflows/{workflow.pk}/edit/", max_height=60)
    # The editor fills the window's height below the top bar: no strip of page under it, nothing below the fold.
    editor = page.locator(".editor").bounding_box()
    assert editor and round(editor["y"] + editor["height"]) == SMALL["height"], editor

    # The canvas toolbar's save status is read whole, not cut to "Saved · r…" by the run chooser beside it.
    status = page.locator(".wf-status")
    expect(status).to_have_text(re.compile(r"^Saved · revision \d+$"))
    assert status.evaluate("el => el.scrollWidth <= el.clientWidth"), "the save status is cut off"

    title = page.locator('[data-palette="task:assess_request"] .palette-item__title')
    text, ends = title.evaluate(LINE_ENDS)
    assert text == "assess_request" and ends in ([], ["_"]), f"{text!r} wraps after {ends}"


def test_the_list_and_settings_pages_fit_a_1024_window(logged_in_page: Page, live_server: Any, user: Any) -> None:
    page = logged_in_page
    page.set_viewport_size(SMALL)
    team = team_services.create_team(actor=user, name="Purchasing")
    workflow = workflow_services.create_workflow(actor=user, team=team, name="Spending approval review",
                                                 document=DOCUMENT)
    workflow_services.publish_workflow(actor=user, workflow=workflow, note="first")
    for path in ("/", "/runs/", f"/teams/{team.pk}/", f"/workflows/{workflow.pk}/", f"/workflows/{workflow.pk}/runs/",
                 f"/workflows/{workflow.pk}/sharing/", "/settings/tokens/"):
        page.goto(live_server.url + path)
        width, window = page_width(page)
        assert width <= window, f"{path} is {width - window}px wider than the window"


#: The nodes wholly inside the canvas, as drawn on screen.
NODES_IN_VIEW = """() => {
  const pane = document.querySelector(".react-flow").getBoundingClientRect();
  return [...document.querySelectorAll(".react-flow__node")].filter((node) => {
    const r = node.getBoundingClientRect();
    return r.left >= pane.left && r.right <= pane.right && r.top >= pane.top && r.bottom <= pane.bottom;
  }).map((node) => node.dataset.id);
}"""


def test_folding_the_side_panels_shows_more_of_the_demo_graph_at_a_readable_zoom(
    logged_in_page: Page, live_server: Any, user: Any, artifacts_dir: Path
) -> None:
    load_demo()
    team = Team.objects.get(slug=TEAM_SLUG)
    Membership.objects.create(team=team, user=user, role="editor")
    workflow = Workflow.objects.get(team=team, slug="customer-orders")  # six nodes, two nested loops
    page = logged_in_page
    page.set_viewport_size(SMALL)
    editor = EditorPage(page, live_server.url, workflow)

    def shown(name: str) -> list[str]:
        expect(editor.canvas).to_have_attribute("data-fitted", "true")
        editor.wait_fitted()
        assert float(editor.canvas.get_attribute("data-zoom") or 0) >= READABLE_ZOOM - 0.001
        page.screenshot(path=artifacts_dir / f"editor-1024x768-{name}.png")
        in_view: list[str] = page.evaluate(NODES_IN_VIEW)
        return in_view

    page.goto(editor.url)
    expect(page.locator(".editor-diagnostics .diag-ok")).to_be_visible()
    opened = shown("panels-open")
    # Nothing to list: the diagnostics band is one line even under the narrow canvas.
    band = page.locator(".editor-diagnostics").bounding_box()
    assert band and band["height"] < 48, band
    width = page.locator(".react-flow").bounding_box()
    assert width
    for name in ("Palette", "Inspector"):
        page.get_by_role("button", name=name, exact=True).click()
    folded_width = 1024 - 2 * 36  # both rails (editor.css --rail-width)
    expect(editor.canvas).to_have_attribute("data-room", str(folded_width))
    folded = shown("panels-folded")
    assert len(folded) > len(opened), (opened, folded)
    # The toolbar's words follow the canvas's width: back on the wider canvas, gone on the narrow one.
    words = page.locator(".wf-toolbar .wf-tool__text", has_text="Fit")
    expect(words).to_be_visible()
    page.get_by_role("button", name="Inspector", exact=True).click()
    expect(words).to_be_hidden()
    page.get_by_role("button", name="Inspector", exact=True).click()
    expect(words).to_be_visible()
    # The same on the next visit, fitted to the wider canvas from the start.
    page.reload()
    assert shown("panels-folded-reloaded") == folded
    assert editor.errors == []

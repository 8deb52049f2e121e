"""What a newcomer noticed first, checked in headless Chromium against a live server and the real database:
no 404 for the icon, home tables whose columns and borders line up, editor notices that leave the header's
buttons free, and an import that opens the new workflow in the editor."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from designer.access import teams as team_services
from designer.workflows import services as workflow_services
from tests.browser.browser_support import overlap
from tests.browser.editor_page import EditorPage, nested_document

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_home_tables_line_up_and_nothing_is_missing(
    logged_in_page: Page, live_server: Any, user: Any, artifacts_dir: Path
) -> None:
    acme = team_services.create_team(actor=user, name="Acme")
    umbrella = team_services.create_team(actor=user, name="Umbrella Corporation")
    workflow_services.create_workflow(actor=user, team=acme, name="A short one")
    workflow_services.create_workflow(actor=user, team=umbrella, name="A much longer workflow name than the other",
                                      description="With a description that takes a second line under the name.")
    missing: list[str] = []
    page = logged_in_page
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server.url}/")
    tables = page.locator("table.workflow-table")
    expect(tables).to_have_count(2)

    def columns(table: int) -> list[tuple[float, float]]:
        return tables.nth(table).locator("thead th").evaluate_all(
            "els => els.map(e => { const r = e.getBoundingClientRect(); return [r.left, r.width]; })")

    assert columns(0) == columns(1)  # the two teams' tables share their columns
    for table in range(2):
        head = columns(table)
        cells = tables.nth(table).locator("tbody tr").first.locator("td").evaluate_all(
            "els => els.map(e => { const r = e.getBoundingClientRect(); return [r.left, r.width, r.height,"
            " getComputedStyle(e).display]; })")
        assert [[left, width] for left, width, _, _ in cells] == head
        # Every cell of a row is a table cell of the row's height: the borders run straight.
        assert {display for *_, display in cells} == {"table-cell"}
        assert len({round(height) for _, _, height, _ in cells}) == 1
    page.screenshot(path=artifacts_dir / "home-tables.png", full_page=True)
    # The icon every browser asks for is there.
    icon = page.request.get(f"{live_server.url}/favicon.ico")
    assert icon.ok and "svg" in icon.headers["content-type"]
    assert missing == []


def test_editor_notices_leave_the_header_buttons_free(
    logged_in_page: Page, live_server: Any, user: Any
) -> None:
    team = team_services.create_team(actor=user, name="Acme")
    document = nested_document(positions=True)
    document["nodes"][0]["over"] = "input"  # an error: publishing is refused with a notice
    workflow = workflow_services.import_workflow(actor=user, team=team, document=document)
    editor = EditorPage(logged_in_page, live_server.url, workflow).open()
    editor.page.set_viewport_size({"width": 1024, "height": 768})
    editor.page.get_by_role("button", name="Publish", exact=True).click()
    toast = editor.notice.locator(".editor-toast")
    expect(toast).to_contain_text("Not published")
    box = toast.bounding_box()
    assert box
    # The ones shown: at 1024 px the links behind "More" are folded away, so no toast can cover them.
    for button in editor.page.locator(":is(.editor-head a, .editor-head button, .editor-head .button):visible").all():
        other = button.bounding_box()
        assert other and not overlap(box, other), button.inner_text()


def test_import_opens_the_new_workflow_in_the_editor(
    logged_in_page: Page, live_server: Any, user: Any, tmp_path: Path
) -> None:
    team_services.create_team(actor=user, name="Acme")
    upload = tmp_path / "orders.json"
    upload.write_text(json.dumps(nested_document()))
    page = logged_in_page
    page.goto(f"{live_server.url}/")
    form = page.locator("form[action$='/workflows/import/']")
    form.locator("input[type=file]").set_input_files(str(upload))
    with page.expect_navigation():
        form.get_by_role("button").last.click()
    expect(page.locator("[data-editor-canvas]")).to_have_attribute("data-fitted", "true")
    assert "/edit/" in page.url
    expect(page.locator('.react-flow__node[data-id="pack_item"]')).to_have_count(1)
    expect(page.get_by_text("Imported")).to_be_visible()

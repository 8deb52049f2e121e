"""Two people edit the same workflow in two browsers: a stale save never overwrites, it reloads and says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, expect

from designer.access import teams as team_services
from designer.workflows import services as workflow_services
from tests.browser.editor_page import EDITOR_TASKS, EditorPage, nested_document

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def site_tasks(settings: Any) -> None:
    settings.TRELLIS_TASK_MODULES = [EDITOR_TASKS]


def test_stale_revision_between_two_browsers_reloads_and_says_so(
    browser: Browser, browser_context_args: dict[str, Any], live_server: Any, login: Any, user: Any,
    artifacts_dir: Path,
) -> None:
    team = team_services.create_team(actor=user, name="Acme")
    workflow = workflow_services.create_workflow(actor=user, team=team, name="Orders",
                                                 document=nested_document(positions=True))
    pages = []
    for _ in range(2):
        context = browser.new_context(**browser_context_args)
        page = context.new_page()
        login(page, user)
        pages.append(page)
    alice = EditorPage(pages[0], live_server.url, workflow).open()
    bob = EditorPage(pages[1], live_server.url, workflow).open()
    assert alice.revision() == bob.revision() == 1

    # Alice moves a node; Bob, still on revision 1, adds one from the palette.
    alice.move("set_value", 0, 80)
    moved = alice.document()
    bob.palette_item("branch", "Branch").drag_to(bob.page.locator(".react-flow__pane"),
                                                 target_position={"x": 150, "y": 420})
    expect(bob.notice).to_contain_text("Someone else saved this workflow (now revision 2)")
    expect(bob.notice.get_by_role("alert")).to_be_visible()
    bob.wait_saved(2)
    expect(bob.node("branch")).to_have_count(0)
    assert bob.document() == moved  # nothing overwritten, nothing of Bob's stored
    assert bob.page.evaluate("document.getElementById('editor-revision').value") == "2"
    bob.page.screenshot(path=artifacts_dir / "editor-conflict.png")

    # Alice opens a node in her inspector; on the reloaded document Bob's change goes through.
    alice.select("pack_item")
    assert bob.drop("branch", "Branch", 150, 420) == "branch"
    assert "branch" in {n["id"] for n in bob.document()["nodes"]}

    # Alice's inspector is now stale: her edit is refused, her canvas reloads with Bob's node.
    alice.field_row("sku").get_by_role("button", name="Clear", exact=True).click()
    expect(alice.notice).to_contain_text("Someone else saved this workflow (now revision 3)")
    alice.wait_saved(3)
    expect(alice.node("branch")).to_have_count(1)
    sku = next(b for n in alice.document()["nodes"] if n["id"] == "pack_item" for b in n["input"]
               if b["target"] == "sku")
    assert sku["path"] == "context.foreach.orders.item.sku"
    expect(alice.inspector.locator('li.field-row[data-field="input.sku"] .path-chip')).to_have_text(
        "context.foreach.orders.item.sku")
    # The only console message is Chromium logging the expected 409 answer itself; no script error.
    assert alice.errors == []
    assert bob.errors == ["Failed to load resource: the server responded with a status of 409 (Conflict)"]

"""Two people edit one draft in two browsers, live: both see each other, and both people's edits are kept.

Each person's change reaches the other's canvas through the live feed without a reload; edits of different
things made on a stale revision are rebased by the server; a same-field conflict keeps the first and offers the
second person "Apply mine instead"; a dropped feed resumes from the last revision it saw.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client
from playwright.sync_api import Browser, BrowserContext, Page, Route, expect

from designer.access import teams as team_services
from designer.models import Membership
from designer.workflows import services as workflow_services
from tests.browser.editor_page import EDITOR_TASKS, EditorPage, nested_document

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

#: How long both screens may take to show the same draft (see the loop that waits for it).
CONVERGE_MS = 45_000


@pytest.fixture(autouse=True)
def site_tasks(settings: Any) -> None:
    settings.TRELLIS_TASK_MODULES = [EDITOR_TASKS]
    # News wakes a waiting feed at once; a short wait only makes the test's end quicker.
    settings.TRELLIS_LIVE_WAIT_SECONDS = 1


@pytest.fixture
def contexts(browser: Browser, browser_context_args: dict[str, Any]) -> Iterator[list[BrowserContext]]:
    made: list[BrowserContext] = []
    yield made
    for context in made:  # closed, so their feeds stop asking the server
        context.close()


def _pair(contexts: list[BrowserContext], browser: Browser, browser_context_args: dict[str, Any], live_server: Any,
          make_user: Any, user: Any) -> tuple[EditorPage, EditorPage]:
    bob_user = make_user("bob", email="bob@example.com", first_name="Bob", last_name="Builder")
    user.first_name, user.last_name = "Alice", "Adams"
    user.save()
    team = team_services.create_team(actor=user, name="Acme")
    Membership.objects.create(team=team, user=bob_user, role="editor")
    workflow = workflow_services.create_workflow(actor=user, team=team, name="Orders",
                                                 document=nested_document(positions=True))
    pages = []
    for who in (user, bob_user):
        # Signed in by session cookie (the login form has its own tests): two people in seconds.
        client = Client()
        client.force_login(who)
        context = browser.new_context(**browser_context_args)
        contexts.append(context)
        session = client.cookies[settings.SESSION_COOKIE_NAME].value
        context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": session, "url": live_server.url}])
        pages.append(context.new_page())
    return tuple(EditorPage(page, live_server.url, workflow).open() for page in pages)  # type: ignore[return-value]


def _shows(editor: EditorPage, revision: int) -> None:
    expect(editor.canvas).to_have_attribute("data-revision", str(revision))
    expect(editor.canvas).to_have_attribute("data-state", "saved")


def _set_name(editor: EditorPage, node_id: str, name: str) -> None:
    editor.select(node_id)
    editor.inspector.get_by_label("Name", exact=True).fill(name)
    editor.inspector.get_by_role("button", name="Save node", exact=True).click()


def _title(editor: EditorPage, node_id: str) -> Any:
    return editor.node(node_id).locator(".wf-node__title")


def _x(page: Page, node_id: str) -> float:
    return float(page.locator(f'.react-flow__node[data-id="{node_id}"]').evaluate(
        "el => new DOMMatrix(getComputedStyle(el).transform).m41"))


def test_two_people_edit_one_draft_live(
    contexts: list[BrowserContext], browser: Browser, browser_context_args: dict[str, Any], live_server: Any,
    make_user: Any, user: Any, artifacts_dir: Path,
) -> None:
    # One test, one pair of browsers: opening two editors is most of the cost.
    alice, bob = _pair(contexts, browser, browser_context_args, live_server, make_user, user)
    shots = artifacts_dir  # test-artifacts/screenshots/

    # Presence: each sees the other in the header, and the node the other has selected carries their initials.
    alice.select("pack_item")
    bob.select("orders")
    expect(bob.page.locator("#editor-presence")).to_contain_text("Alice Adams, on pack_item")
    expect(bob.node("pack_item").locator(".presence-badges")).to_have_text("AA")
    expect(alice.node("orders").get_by_role("img", name="Selected by Bob Builder")).to_have_text("BB")

    # Interleaved, neither waiting for the other: a move, a relabel, a binding edit and a delete.
    alice.move("customers", 0, 60)  # revision 2
    _set_name(bob, "orders", "Every order")
    alice.select("pack_item")
    alice.field_row("sku").get_by_role("button", name="Clear", exact=True).click()
    bob.select("set_value")
    bob.page.keyboard.press("Delete")
    # Both screens converge on the server's order. Within a second on a quiet machine; the wait is long because
    # CI's two cores also run other browsers and workers, and a screen that never converges still fails.
    for editor in (alice, bob):
        _shows(editor, 5)
        expect(editor.node("set_value")).to_have_count(0, timeout=CONVERGE_MS)
        expect(_title(editor, "orders")).to_contain_text("Every order", timeout=CONVERGE_MS)
    stored = alice.document()
    # A 60 px drag on the screen, at the fitted zoom: the node follows the pointer from the press.
    zoom = float(alice.canvas.get_attribute("data-zoom") or 1)
    moved_once = round(100 + 60 / zoom)
    assert stored["metadata"]["positions"]["customers"]["y"] == moved_once
    assert {n["id"] for n in stored["nodes"]} == {"customers", "orders", "pack_item"}
    pack = next(n for n in stored["nodes"] if n["id"] == "pack_item")
    assert [b["target"] for b in pack["input"]] == ["customer"]
    assert _x(alice.page, "customers") == _x(bob.page, "customers")  # both draw Alice's move alike
    alice.page.screenshot(path=shots / "coedit-alice.png")
    bob.page.screenshot(path=shots / "coedit-bob.png")

    # Bob's connection drops: Alice's changes meanwhile reach him once it is back, none lost, none twice.
    bob.page.context.set_offline(True)
    expect(bob.canvas).to_have_attribute("data-live", "offline")
    alice.move("customers", 0, 60)
    _set_name(alice, "pack_item", "Pack it")
    _shows(alice, 7)
    expect(bob.canvas).to_have_attribute("data-revision", "5")
    bob.page.context.set_offline(False)
    _shows(bob, 7)
    expect(bob.canvas).to_have_attribute("data-live", "online")
    expect(_title(bob, "pack_item")).to_contain_text("Pack it")

    # Bob's feed alone is cut, so he has not heard that Alice named "orders" when he names it too: hers is
    # kept, he is told so, and one click applies his.
    def drop(route: Route) -> None:
        route.abort()

    bob.page.route("**/edit/live/**", drop)
    expect(bob.canvas).to_have_attribute("data-live", "offline")
    _set_name(alice, "orders", "Alice's orders")
    _shows(alice, 8)
    _set_name(bob, "orders", "Bob's orders")
    conflict = bob.notice.get_by_role("alert")
    expect(conflict).to_contain_text("Alice Adams changed the name and description of orders first (revision 8)")
    _shows(bob, 8)
    expect(_title(bob, "orders")).to_contain_text("Alice's orders")
    bob.page.screenshot(path=shots / "coedit-conflict-bob.png")
    bob.page.unroute("**/edit/live/**", drop)
    conflict.get_by_role("button", name="Apply mine instead").click()
    for editor in (alice, bob):
        _shows(editor, 9)
        expect(_title(editor, "orders")).to_contain_text("Bob's orders")
    alice.page.screenshot(path=shots / "coedit-conflict-alice.png")

    # Undo is Bob's own: it takes back his name, not Alice's names or moves.
    bob.click_empty_canvas()
    bob.page.keyboard.press("Control+z")
    for editor in (alice, bob):
        _shows(editor, 10)
        expect(_title(editor, "orders")).to_contain_text("Alice's orders")
        expect(_title(editor, "pack_item")).to_contain_text("Pack it")
    assert alice.document()["metadata"]["positions"]["customers"]["y"] == round(moved_once + 60 / zoom)
    assert alice.errors == []
    # Chromium logs the expected 409 answer and the cut feed's failed requests; no script error.
    assert all("409 (Conflict)" in e or "ERR_" in e or "Failed to fetch" in e for e in bob.errors), bob.errors

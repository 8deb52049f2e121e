"""The demo's Customer orders at concurrency 4, as the first-run tour built it: the editor warns that each
customer overwrites state.orders and the orders loop's results (naming both loops), and the path picker after
the loop marks those fields "last item wins"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from demo.data import load_demo
from designer.models import Workflow
from designer.workflows import services as workflow_services
from tests.browser.editor_page import EditorPage

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def racing(transactional_db: None) -> Workflow:
    load_demo()
    workflow = Workflow.objects.get(team__slug="demo", slug="customer-orders")
    document = json.loads(json.dumps(workflow.document))
    for node in document["nodes"]:
        if node["id"] == "customers":
            node["max_concurrency"] = 4
    workflow_services.save_document(actor=get_user_model().objects.get(username="demo"), workflow=workflow,
                                    revision=workflow.revision, document=document)
    workflow.refresh_from_db()
    return workflow


@pytest.mark.parametrize("width,height", [(1440, 900), (1024, 768)])
def test_a_last_item_wins_write_is_warned_and_marked_in_the_picker(
        page: Page, live_server: Any, racing: Workflow, artifacts_dir: Path, width: int, height: int) -> None:
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill("demo")
    page.get_by_label("Password").fill("demo")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")
    editor = EditorPage(page, live_server.url, racing).open()

    warnings = editor.diagnostics.locator("li", has_text="state.concurrent_write")
    expect(warnings).to_have_count(2)
    expect(warnings.filter(has_text="loop 'orders' inside loop 'customers'")).to_contain_text(
        "state.customer_priced")
    expect(warnings.filter(has_text="node 'fetch'")).to_contain_text("last to finish wins")

    editor.select("flatten")  # at the page object's 1600 px: at 1024 the minimap may sit over this node
    picker = editor.open_picker("items")
    page.set_viewport_size({"width": width, "height": height})
    badge = picker.locator(".option[data-path='state.customer_priced'] .compat--last-item-wins")
    expect(badge).to_have_text("last item wins")
    expect(picker.locator(".option[data-path='state.orders'] .compat--last-item-wins")).to_have_count(1)
    # the customers loop's own results collect every customer: not marked
    expect(picker.locator(".option[data-path='state.priced_by_customer'] .compat--last-item-wins")).to_have_count(0)
    badge.scroll_into_view_if_needed()
    page.screenshot(path=artifacts_dir / f"picker-last-item-wins-{width}.png")

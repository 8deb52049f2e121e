"""Try a node from a past run in headless Chromium (issue 25): the node ran once per customer, so choosing the run
lists each execution by loop name and item, and the trial (run by a real worker process) takes the chosen one's
values, not whichever came first or last."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from designer.access import teams as team_services
from designer.models import Run
from designer.runs import services as run_services
from tests.browser.editor_page import EditorPage
from tests.designer.nested_failure import CUSTOMERS, make_workflows

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_trial_takes_the_values_of_the_execution_chosen_by_loop_item(
        page: Page, live_server: Any, make_user: Any, login: Any, run_worker: Any, artifacts_dir: Path) -> None:
    owner = make_user("tara")
    team = team_services.create_team(actor=owner, name="Trials")
    parent = make_workflows(owner, team)
    run = run_services.start_run(actor=owner, workflow=parent, input={"customers": CUSTOMERS})
    run_worker()
    assert Run.objects.get(pk=run.pk).status == "failed"  # the nested run fails in an order; fetch ran 3 times

    login(page, owner)
    editor = EditorPage(page, live_server.url, parent).open()
    editor.wait_idle()
    editor.select("fetch")
    section = editor.inspector.locator("section.try-node")
    section.scroll_into_view_if_needed()
    # The try form loads into the inspector after it; htmx binds its run menu's change when that swap settles
    # (it drops the htmx-added class then): a run chosen before asks for no executions (seen 2 runs in 7).
    page.wait_for_function("() => { const menu = document.querySelector('#try-run');"
                           " return menu !== null && menu.closest('.htmx-added') === null; }")
    section.get_by_label("…or the values it read in a past run").select_option(str(run.pk))
    executions = section.get_by_label("Execution")
    expect(executions.locator("option")).to_have_count(len(CUSTOMERS))
    labels = [text.split(" · ")[0] for text in executions.locator("option").all_inner_texts()]
    assert labels == ["customers item 3 'Cy'", "customers item 2 'Bob'", "customers item 1 'Ada'"]
    executions.select_option(label=executions.locator("option").nth(1).inner_text())
    for width, height in ((1440, 900), (1024, 768)):
        page.set_viewport_size({"width": width, "height": height})
        section.scroll_into_view_if_needed()
        page.screenshot(path=artifacts_dir / f"editor-try-node-execution-{width}x{height}.png")

    section.get_by_role("button", name="Try it").click()
    expect(section.locator('[data-try-status="pending"]')).to_be_visible()
    run_worker()
    expect(section.locator('[data-try-status="completed"]')).to_be_visible()
    result = json.loads(section.locator("[data-try-result]").inner_text())
    bob = next(customer["id"] for customer in CUSTOMERS if customer["name"] == "Bob")
    assert result and {order["customer_id"] for order in result} == {bob}  # Bob's orders: his item was tried
    page.screenshot(path=artifacts_dir / "editor-try-node-outcome.png")

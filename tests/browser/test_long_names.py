"""Names people type may be one long word (a pasted id, a slug, no spaces): at 1440x900 in headless Chromium every
page that shows a workflow's, team's, webhook's or schedule's name still fits the window's width. Walking the app
from a fresh clone found a 200-character workflow name pushing the workflow page 1,850 px past the right edge, the
editor's Publish off screen, and the "Created ..." message wider than the window."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from designer.access import teams as team_services
from designer.runs import services as run_services
from designer.triggers import services as trigger_services
from designer.workflows import services as workflow_services
from tests.browser.test_small_screen import DOCUMENT, open_editor_and_check_its_header, page_width

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDE = {"width": 1440, "height": 900}
LONG_WORKFLOW = ("Quarterlyprocurementreconciliation" * 6)[:200]  # the longest name a workflow may have
LONG_TEAM = ("Purchasingdepartmentnortheast" * 5)[:120]
LONG_TRIGGER = ("nightlyreconciliationjob" * 5)[:100]


def test_pages_fit_the_window_whatever_the_names(logged_in_page: Page, live_server: Any, user: Any) -> None:
    page = logged_in_page
    page.set_viewport_size(WIDE)
    team = team_services.create_team(actor=user, name=LONG_TEAM)
    workflow = workflow_services.create_workflow(actor=user, team=team, name=LONG_WORKFLOW, document=DOCUMENT)
    workflow_services.publish_workflow(actor=user, workflow=workflow, note="first")
    trigger_services.create_webhook(actor=user, workflow=workflow, name=LONG_TRIGGER)
    trigger_services.create_schedule(actor=user, workflow=workflow, name=LONG_TRIGGER, cron="0 9 * * *")
    run_services.start_run(actor=user, workflow=workflow, input={})  # queued: nothing executes it here

    for path in ("/", "/runs/", "/teams/", f"/teams/{team.pk}/", f"/teams/{team.pk}/runs/",
                 f"/workflows/{workflow.pk}/", f"/workflows/{workflow.pk}/runs/", f"/workflows/{workflow.pk}/sharing/"):
        page.goto(live_server.url + path)
        width, window = page_width(page)
        assert width <= window, f"{path} is {width - window}px wider than the window"

    open_editor_and_check_its_header(page, f"{live_server.url}/workflows/{workflow.pk}/edit/", max_height=80)
    expect(page.locator(".editor-title")).to_have_attribute("title", LONG_WORKFLOW)  # the whole name, on hover


def test_the_message_naming_a_new_workflow_fits_the_window(logged_in_page: Page, live_server: Any, user: Any) -> None:
    page = logged_in_page
    page.set_viewport_size(WIDE)
    team_services.create_team(actor=user, name="Purchasing")
    page.goto(live_server.url + "/workflows/")
    form = page.locator("form", has=page.get_by_role("button", name="Create and edit"))
    form.get_by_label("Name").fill(LONG_WORKFLOW)
    form.get_by_role("button", name="Create and edit").click()
    message = page.locator(".messages .message")
    expect(message).to_contain_text("Created")
    box = message.bounding_box()
    width, window = page_width(page)
    assert box and box["x"] + box["width"] <= window and width <= window, (box, width, window)

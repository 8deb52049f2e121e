"""A run whose checkpoint is damaged, in headless Chromium: the open page learns of it on its next htmx request
and reloads into the damaged page (no answer form), and cancel and delete work from that page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from designer.models import Run, Workflow
from tests.browser.browser_support import sign_in, worked_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_damaged_run_page_reloads_as_damaged_and_can_be_cancelled_and_deleted(
    page: Page, live_server: Any, artifacts_dir: Path, run_worker: Any, demo: dict[str, Workflow]
) -> None:
    workflow = demo["spending-approval"]
    run = worked_run(workflow, run_worker)
    assert run.status == "interrupted"

    base = live_server.url
    sign_in(page, base, "demo")
    page.goto(f"{base}/runs/{run.pk}/")
    question = page.locator("form.interrupt")
    expect(question).to_be_visible()

    Run.objects.filter(pk=run.pk).update(run_state="garbage")
    # Asking for the frame's context (an htmx fragment) meets the damage: the page reloads as the damaged page.
    question.get_by_role("link", name="frame context").click()
    damage = page.locator("#run-damage")
    expect(damage).to_be_visible()
    expect(damage).to_contain_text("runstate.corrupt")
    expect(damage).to_contain_text("not an object")
    expect(page.locator("form.interrupt")).to_have_count(0)
    expect(page.locator("#run-status")).to_have_text("interrupted")
    page.screenshot(path=artifacts_dir / "runs-damaged.png", full_page=True)

    page.on("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Cancel run").click()
    expect(page.locator("#run-status")).to_have_text("cancelled")
    expect(page.locator("#run-damage")).to_be_visible()

    page.get_by_role("button", name="Delete run").click()
    page.wait_for_url(f"{base}/workflows/{workflow.pk}/runs/")
    assert not Run.objects.filter(pk=run.pk).exists()

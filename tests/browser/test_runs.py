"""Runs in headless Chromium: live server, real database, and a REAL worker process (``db_worker``).

A person starts the demo's nested workflow from the editor's run panel, watches it finish with every progress bar
at its total, opens a step in the timeline and sees that frame's structured context; runs the approval workflow and
answers its question in the page; a viewer gets no run controls and a stranger gets 404.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from designer.models import Run, Workflow
from tests.browser.browser_support import sign_in, worked_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

#: Generous: the worker is a separate process on a busy 2-core machine.
FINISH_MS = 60_000


def start_from_panel(page: Page, base: str, workflow: Workflow) -> int:
    page.goto(f"{base}/workflows/{workflow.pk}/edit/")
    panel = page.locator("#run-panel")
    expect(panel.get_by_role("button", name="Start run")).to_be_visible()
    panel.get_by_role("button", name="Start run").click()
    started = panel.locator(".notice a")
    expect(started).to_be_visible()
    return int(started.inner_text().lstrip("#"))


def test_nested_demo_run_progress_trace_and_frame_context(
    page: Page, live_server: Any, demo: dict[str, Workflow], background_worker: Any, artifacts_dir: Path
) -> None:
    base = live_server.url
    sign_in(page, base, "demo")
    workflow = demo["customer-orders"]
    run_id = start_from_panel(page, base, workflow)
    page.locator("#run-panel").screenshot(path=artifacts_dir / "runs-panel-started.png")

    # The panel follows the run's status without a reload, then we open it.
    expect(page.locator(f'#run-recent li[data-run="{run_id}"] .badge')).to_have_text("completed", timeout=FINISH_MS)
    page.locator(f'#run-recent a[href="/runs/{run_id}/"]').click()
    expect(page.locator("#run-status")).to_have_text("completed", timeout=FINISH_MS)
    expect(page.locator("#run-live")).not_to_have_attribute("hx-trigger", re.compile(".*"))

    # One bar per activation, each at its total; inner activations sit under their customer's item.
    customers = workflow.document["metadata"]["sample_input"]["customers"]
    rows = page.locator(".progress-row")
    expect(rows).to_have_count(1 + len(customers))
    for i in range(rows.count()):
        row = rows.nth(i)
        assert row.get_attribute("data-done") == row.get_attribute("data-total"), row.inner_text()
        expect(row.locator(".done")).to_have_text(row.get_attribute("data-total") or "")
    expect(rows.first).to_have_attribute("data-node", "customers")
    expect(rows.first).to_have_attribute("data-total", str(len(customers)))
    expect(page.locator(".progress-row .pr-label", has_text="item [2]")).to_have_count(1)
    page.screenshot(path=artifacts_dir / "runs-nested-completed.png", full_page=True)

    # The trace: rows per lineage, items nested; a bar opens its frame with the runtime's context.
    assert page.locator(".tl-row.kind-item").count() > len(customers)
    price = page.locator('.tl-row.kind-item .tl-bar[data-node="price"]').last
    price.click()
    drawer = page.locator("#frame-panel.open")
    expect(drawer).to_be_visible()
    expect(drawer.locator(".ctx-entry")).to_have_count(2)
    expect(drawer.locator(".ctx-entry").nth(0)).to_have_attribute("data-foreach", "customers")
    expect(drawer.locator(".ctx-entry").nth(1)).to_have_attribute("data-foreach", "orders")
    expect(drawer.locator('.ctx-entry[data-foreach="customers"] .ctx-index')).to_have_text(str(len(customers) - 1))
    page.screenshot(path=artifacts_dir / "runs-frame-context.png")
    drawer.locator("button.close").click()
    expect(page.locator("#frame-panel.open")).to_have_count(0)

    # Events table filters without a reload.
    page.locator("#ev-kind").select_option("item_completed")
    expect(page.locator(".events-table tbody tr").first).to_have_attribute("data-kind", "item_completed")
    kinds = set(page.locator(".events-table tbody tr").evaluate_all("rs => rs.map(r => r.dataset.kind)"))
    assert kinds == {"item_completed"}
    run = Run.objects.get(pk=run_id)
    assert run.status == "completed" and run.output["totals"]


def test_answer_the_approval_question_in_the_browser(
    page: Page, live_server: Any, demo: dict[str, Workflow], background_worker: Any, artifacts_dir: Path
) -> None:
    base = live_server.url
    sign_in(page, base, "demo")
    run_id = start_from_panel(page, base, demo["spending-approval"])
    page.goto(f"{base}/runs/{run_id}/")

    # Polling brings the question in as soon as the worker reaches it.
    question = page.locator("form.interrupt")
    expect(question).to_be_visible(timeout=FINISH_MS)
    expect(page.locator("#run-status")).to_have_text("interrupted")
    expect(question.locator(".prompt")).to_have_text("Approve this spending request?")
    expect(question.locator(".int-payload")).to_contain_text("laptops")
    # The events table follows the live region: the question's event is listed without a reload.
    expect(page.locator('.events-table tr[data-kind="interrupted"]')).to_have_count(1)
    page.screenshot(path=artifacts_dir / "runs-approval-question.png", full_page=True)

    question.get_by_label("Approve?").check()
    question.get_by_label("Comment").fill("Fine for the new hires")
    # Experts can switch to JSON: what the fields hold is carried over, and the answer is sent as JSON.
    question.locator(".mode-switch label", has_text="JSON").click()
    json_value = question.locator(".sf-json textarea")
    expect(json_value).to_be_visible()
    expect(question.get_by_label("Comment")).to_be_hidden()
    assert json.loads(json_value.input_value()) == {"approved": True, "comment": "Fine for the new hires"}
    question.get_by_role("button", name="Answer").click()

    expect(page.locator("#run-status")).to_have_text("completed", timeout=FINISH_MS)
    expect(page.locator("form.interrupt")).to_have_count(0)
    expect(page.locator("#run-output")).to_contain_text('"approved": true')
    expect(page.locator("#run-output")).to_contain_text("Fine for the new hires")
    page.screenshot(path=artifacts_dir / "runs-approval-completed.png", full_page=True)


def test_viewer_has_no_run_controls_and_a_stranger_gets_404(
    page: Page, live_server: Any, demo: dict[str, Workflow], run_worker: Any, make_user: Any, password: str,
    artifacts_dir: Path,
) -> None:
    workflow = demo["spending-approval"]
    run = worked_run(workflow, run_worker, {"amount": 5000, "requester": "ops"})
    assert run.status == "interrupted"

    base = live_server.url
    sign_in(page, base, "viewer")
    page.goto(f"{base}/workflows/{workflow.pk}/edit/")
    panel = page.locator("#run-panel")
    expect(panel.locator(".viewer-note")).to_be_visible()
    expect(panel.get_by_role("button", name="Start run")).to_have_count(0)
    expect(panel.locator(f'li[data-run="{run.pk}"]')).to_be_visible()

    page.goto(f"{base}/runs/{run.pk}/")
    expect(page.locator("form.interrupt .prompt")).to_have_text("Approve this spending request?")
    expect(page.get_by_text("Waiting for an editor of this team to answer.")).to_be_visible()
    expect(page.locator('form.interrupt input[name="field.approved"]')).to_have_count(0)
    expect(page.get_by_role("button", name="Cancel run")).to_have_count(0)
    page.screenshot(path=artifacts_dir / "runs-viewer.png", full_page=True)

    stranger = make_user("stan")
    page.context.clear_cookies()
    sign_in(page, base, stranger.get_username(), password)
    for url in (f"/runs/{run.pk}/", f"/workflows/{workflow.pk}/runs/", f"/teams/{workflow.team_id}/",
                f"/workflows/{workflow.pk}/edit/"):
        response = page.goto(f"{base}{url}")
        assert response is not None and response.status == 404, url

"""Runs a person can read (issue 25), in headless Chromium with runs and trials executed by a real worker process
(``run_worker``): a run redriven five minutes after it failed draws the wait as a marked gap on its timeline, with
an axis of active time (seconds, not the five minutes) and both active and wall time shown; its attempt count is
the same on the run page and in the admin; and trying a node from a past run of a loop lets one choose which
execution's values the trial reads. Screenshots at 1440x900 and 1024x768 go to test-artifacts/screenshots."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db.models import F
from playwright.sync_api import Page, ViewportSize, expect

from designer.access import teams as team_services
from designer.models import Run, RunEvent, Team
from designer.services import runs as run_services
from designer.workflows import services as workflow_services
from tests.browser.editor_page import EditorPage
from tests.browser.run_page import show_the_settled_run
from tests.designer.nested_failure import CUSTOMERS, make_workflows
from tests.designer.runs_support import STEP_TASKS, flaky_document

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDE: ViewportSize = {"width": 1440, "height": 900}
SMALL: ViewportSize = {"width": 1024, "height": 768}
#: How long ago the run failed when its owner redrives it: the wait the timeline must leave out of its axis.
WAITED = timedelta(minutes=5)


@pytest.fixture
def step_tasks(settings: Any, worker_env: dict[str, str]) -> None:
    settings.TRELLIS_TASK_MODULES = [STEP_TASKS]
    worker_env["TRELLIS_TASK_MODULES"] = STEP_TASKS


def failed_a_while_ago(run: Run) -> None:
    """The run's first attempt as if it had happened ``WAITED`` ago: its trace and its times moved back."""
    RunEvent.objects.filter(run=run).update(at=F("at") - WAITED)
    Run.objects.filter(pk=run.pk).update(created_at=F("created_at") - WAITED, started_at=F("started_at") - WAITED,
                                         finished_at=F("finished_at") - WAITED)


def test_a_redriven_run_shows_its_wait_as_a_gap_and_one_attempt_count_on_the_page_and_the_admin(
    page: Page, live_server: Any, make_user: Any, login: Any, run_worker: Any, step_tasks: None, tmp_path: Path,
    artifacts_dir: Path,
) -> None:
    # The owner is staff too, to read the same run in the admin.
    owner = make_user("rhea", is_staff=True, is_superuser=True)
    team = team_services.create_team(actor=owner, name="Redrives")
    workflow = workflow_services.create_workflow(actor=owner, team=team, name="Flaky", document=flaky_document())
    run = run_services.start_run(actor=owner, workflow=workflow,
                                 input={"keys": ["a", "bad1", "b"], "folder": str(tmp_path)})
    run_worker()
    assert Run.objects.get(pk=run.pk).status == "failed"
    failed_a_while_ago(run)

    login(page, owner)
    page.set_viewport_size(WIDE)
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    page.on("dialog", lambda dialog: dialog.accept())
    page.locator("#redrive-form button").click()
    expect(page.locator("#run-status")).to_have_text("queued")
    run_worker()
    show_the_settled_run(page)
    expect(page.locator("#run-status")).to_have_text("completed")
    expect(page.locator("#run-attempt")).to_have_text("2")

    timeline = page.get_by_role("region", name="Timeline")
    # The five minutes between the failure and the redrive are one marked gap...
    gap = timeline.get_by_test_id("timeline-gap")
    expect(gap).to_have_count(1)
    expect(gap).to_have_text(re.compile(r"^waited 5 min \d\d s for a redrive$"))
    # ...left out of the axis: its ticks count the run's seconds at work, not the wall clock's minutes.
    ticks = timeline.locator(".tl-axis .tick").all_inner_texts()
    assert ticks and not any("min" in tick for tick in ticks), ticks
    expect(timeline.get_by_test_id("timeline-active")).to_have_text(re.compile(r"^\d+(\.\d)? (ms|s) active$"))
    expect(timeline.get_by_test_id("timeline-wall")).to_have_text(re.compile(r"^5 min \d\d s wall$"))
    # The run's facts: Active beside Wall time (no single "Duration" that would be mostly waiting).
    expect(page.locator("#run-active")).to_have_text(re.compile(r"^\d+(\.\d)? (ms|s)$"))
    expect(page.locator(".fact-k", has_text="Wall time")).to_have_count(1)
    # Both attempts are drawn: steps before the gap's mark and steps after it.
    gap_left = float(gap.evaluate("e => parseFloat(e.style.left)"))
    lefts = timeline.locator("a.tl-bar").evaluate_all("bars => bars.map(b => parseFloat(b.style.left))")
    assert any(left < gap_left for left in lefts) and any(left >= gap_left for left in lefts), (gap_left, lefts)
    # The last tick's label ends inside the track (the wait's mark after it in the page must not push it out).
    track = timeline.locator(".tl-axis .tl-track").bounding_box()
    last_tick = timeline.locator(".tl-axis .tick").last.bounding_box()
    assert track and last_tick and last_tick["x"] + last_tick["width"] <= track["x"] + track["width"] + 0.5
    # The graph agrees: the step that failed and was redriven to completion is completed, not failed.
    call = page.locator('[data-testid="run-node"][data-node="call"]')
    expect(call).to_have_attribute("data-state", "completed")
    expect(call.get_by_test_id("run-counts")).to_have_text("3 done")
    timeline.scroll_into_view_if_needed()
    page.screenshot(path=artifacts_dir / "run-redriven-gap-1440.png", full_page=True)
    page.set_viewport_size(SMALL)
    expect(gap).to_be_visible()
    page.screenshot(path=artifacts_dir / "run-redriven-gap-1024.png", full_page=True)

    # The admin counts attempts the way the run page does: the redrive made attempt 2 (one worker claim each).
    page.goto(f"{live_server.url}/admin/designer/run/{run.pk}/change/")
    expect(page.locator(".form-row.field-attempt .readonly")).to_have_text("2")
    expect(page.locator(".form-row.field-attempt label")).to_have_text("Attempt:")
    expect(page.locator(".form-row.field-worker_claims label")).to_have_text("Worker claims:")
    page.locator(".form-row.field-attempt").scroll_into_view_if_needed()
    page.screenshot(path=artifacts_dir / "run-redriven-admin-1024.png")
    page.set_viewport_size(WIDE)
    page.screenshot(path=artifacts_dir / "run-redriven-admin-1440.png")


def test_trying_a_node_from_a_past_run_of_a_loop_uses_the_execution_chosen(
    page: Page, live_server: Any, make_user: Any, login: Any, run_worker: Any, artifacts_dir: Path,
) -> None:
    owner = make_user("tara")
    team: Team = team_services.create_team(actor=owner, name="Orders")
    workflow = make_workflows(owner, team)
    run = run_services.start_run(actor=owner, workflow=workflow, input={"customers": CUSTOMERS})
    run_worker()
    assert Run.objects.get(pk=run.pk).status == "failed"

    login(page, owner)
    editor = EditorPage(page, live_server.url, workflow).open()
    page.set_viewport_size(WIDE)
    editor.select("fetch")
    section = editor.inspector.locator("[data-try-node='fetch']")
    # The try form loads into the inspector after it; htmx binds its run menu's change when the swap settles
    # (it drops the htmx-added class then): a choice made before would ask for no executions.
    page.wait_for_function("() => { const menu = document.querySelector('#try-run');"
                           " return menu !== null && menu.closest('.htmx-added') === null; }")
    section.get_by_label("…or the values it read in a past run").select_option(str(run.pk))
    # The node ran once per customer: each execution is offered by its loop and item, the latest first.
    picker = section.get_by_label("Execution")
    options = picker.locator("option")
    expect(options).to_have_count(3)
    labels = [label.split(" · ")[0] for label in options.all_inner_texts()]
    assert labels == ["customers item 3 'Cy'", "customers item 2 'Bob'", "customers item 1 'Ada'"], labels
    expect(options.first).to_contain_text("(latest)")
    picker.select_option(label=options.nth(1).inner_text())
    section.scroll_into_view_if_needed()
    page.screenshot(path=artifacts_dir / "try-node-executions-1440.png")
    page.set_viewport_size(SMALL)
    expect(picker).to_be_visible()
    page.screenshot(path=artifacts_dir / "try-node-executions-1024.png")

    section.get_by_role("button", name="Try it").click()
    expect(section.locator("[data-try-status='pending']")).to_have_count(1)
    run_worker()
    answer = section.locator("[data-try-status='completed']")
    expect(answer).to_be_visible()
    # The trial read Bob's values: his orders, not the latest execution's (Cy) nor the first's (Ada).
    result = answer.locator("[data-try-result]")
    expect(result).to_contain_text('"customer_id": "C-2"')
    expect(result).not_to_contain_text('"C-1"')
    expect(result).not_to_contain_text('"C-3"')
    result.scroll_into_view_if_needed()
    page.screenshot(path=artifacts_dir / "try-node-execution-result-1024.png")

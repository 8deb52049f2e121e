"""The run page is the graph, in headless Chromium with a REAL worker process: a failed nested run (customers ->
orders -> a subgraph call per order, concurrency 4) read on its graph, each node in its state and each loop's
failed items counted as failed; a subgraph call opened as its child scope and left by the breadcrumb; a node's
click asking for its executions in the side panel; a running run's graph moving with the page's poll, with
no reload; and a node reached by the keyboard panned into view (in one step under reduced motion). Screenshots
at 1440x900 and 1024x768 go to test-artifacts/."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, ViewportSize, expect

from demo.data import load_demo
from designer.models import Run, Team
from designer.runs import services as run_services
from designer.workflows import services as workflow_services
from runtime import WorkflowBuilder
from tests.browser.browser_support import sign_in
from tests.browser.test_runs import FINISH_MS
from tests.browser.test_runs_live_feed import slow_foreach
from tests.designer.nested_failure import CUSTOMERS, make_workflows

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDE: ViewportSize = {"width": 1440, "height": 900}
SMALL: ViewportSize = {"width": 1024, "height": 768}
#: Items of the live run: each waits 0.3 s, so it runs long enough for several polls.
ITEMS = 24


def demo_user() -> Any:
    from django.contrib.auth import get_user_model

    load_demo()
    return get_user_model().objects.get(username="demo")


def node(page: Page, node_id: str) -> Any:
    return page.locator(f'[data-testid="run-node"][data-node="{node_id}"]')


def open_graph(page: Page, url: str) -> None:
    page.goto(url)
    expect(page.locator("[data-run-canvas]")).to_have_attribute("data-fitted", "true")


def test_a_failed_nested_run_reads_on_its_graph_with_failures_counted_as_failures(
    page: Page, live_server: Any, run_worker: Any, artifacts_dir: Path
) -> None:
    user = demo_user()
    workflow = make_workflows(user, Team.objects.get(slug="demo"))
    run = run_services.start_run(actor=user, workflow=workflow, input={"customers": CUSTOMERS})
    run_worker()
    assert Run.objects.get(pk=run.pk).status == "failed"
    base = live_server.url
    sign_in(page, base, "demo")
    page.set_viewport_size(WIDE)
    open_graph(page, f"{base}/runs/{run.pk}/")

    # Every node in its state, in words; the customers loop: Bob's item failed, the others stopped, none running.
    expect(node(page, "customers")).to_have_attribute("data-state", "failed")
    expect(node(page, "customers").get_by_test_id("run-state")).to_have_text("failed")
    expect(node(page, "customers").get_by_test_id("run-counts")).to_have_text("0 done · 1 failed · 0 running / 3")
    expect(node(page, "fetch")).to_have_attribute("data-state", "completed")
    expect(node(page, "fetch").get_by_test_id("run-counts")).to_have_text("3 done")
    expect(node(page, "process")).to_have_attribute("data-state", "failed")
    expect(page.locator('[data-foreach="customers"] [data-testid="loop-progress"]')).to_have_text(
        "0/3 done, 1 failed")
    # Each node is a real button named by its label.
    expect(page.get_by_role("button", name="customers", exact=True)).to_be_visible()
    # The progress list agrees: failures are failures, nothing is "running" in a failed run.
    row = page.locator('.progress-row[data-node="customers"]')
    expect(row).to_have_attribute("data-failed", "1")
    expect(row.locator(".pr-count")).to_have_text(re.compile(r"^0 / 3\s*· 1 failed$"))
    expect(page.locator(".progress .pr-count .running")).to_have_count(0)
    # The timeline is under the canvas.
    canvas_box = page.locator(".run-graph__canvas").bounding_box()
    timeline_box = page.locator("section.trace").bounding_box()
    assert canvas_box and timeline_box and timeline_box["y"] >= canvas_box["y"] + canvas_box["height"]
    page.screenshot(path=artifacts_dir / "run-graph-failed-1440.png")

    # A click on a node asks the server for its executions, shown in the side panel beside the canvas.
    with page.expect_request(re.compile(rf"/runs/{run.pk}/nodes/fetch/executions/$")):
        page.get_by_role("button", name="fetch", exact=True).click()
    side = page.locator("#run-node-side")
    expect(side).to_be_visible()
    expect(side).to_have_attribute("data-node", "fetch")
    expect(side.get_by_role("heading", name="fetch")).to_be_visible()
    # Its executions: one per customer, each with where it ran, and the input field, its source and value.
    executions = side.get_by_test_id("execution")
    expect(executions).to_have_count(3)
    expect(executions.nth(1)).to_contain_text("customers item 2 'Bob'")
    expect(executions.nth(1).locator("tbody tr").first).to_contain_text("context.foreach.customers.item")
    expect(executions.nth(1).get_by_test_id("input-value")).to_contain_text('"name": "Bob"')
    # The item picker narrows to one customer.
    side.get_by_label("customers").select_option(label="item 3 'Cy'")
    expect(executions).to_have_count(1)
    expect(executions.first).to_contain_text("customers item 3 'Cy'")
    page.screenshot(path=artifacts_dir / "run-graph-executions-1440.png")
    side.get_by_role("button", name="Close").click()
    expect(side).to_be_hidden()

    # The subgraph node opens its failed call first, as the child scope; the breadcrumb leads back.
    # The process node sits below the canvas's visible part at this zoom: its button is reached by the keyboard, as
    # a person would without panning. (A pointer click there relies on the clipped canvas being scrolled to show
    # the button; twice on a busy CI machine the click opened nothing.)
    page.get_by_role("button", name=re.compile(r"^Open check-order \(3 calls\)$")).press("Enter")
    expect(page.get_by_test_id("scope-current")).to_contain_text("process → Check order · customers[1] 'Bob'")
    expect(node(page, "ratio")).to_have_attribute("data-state", "failed")
    expect(node(page, "price")).to_have_attribute("data-state", "not reached")
    calls = page.get_by_label("Call")
    expect(calls.locator("option")).to_have_count(3)
    with page.expect_request(re.compile(rf"/runs/{run.pk}/nodes/ratio/executions/\?scope=frame_\w+$")):
        page.get_by_role("button", name="ratio", exact=True).click()
    # Bob's call: the step that divided by his credit of 0, its input read from the call's own input, its error.
    ratio = page.locator("#run-node-side").get_by_test_id("execution")
    expect(ratio).to_have_count(1)
    expect(ratio.first).to_contain_text("input.customer.credit")
    expect(ratio.first.get_by_test_id("execution-error")).to_be_visible()
    page.screenshot(path=artifacts_dir / "run-graph-child-scope-1440.png")
    # Another call of the same node: Ada's, stopped by Bob's failure before its price step ran.
    calls.select_option(index=0)
    expect(page.get_by_test_id("scope-current")).to_contain_text("customers[0] 'Ada'")
    expect(node(page, "ratio")).to_have_attribute("data-state", "completed")
    expect(node(page, "price")).to_have_attribute("data-state", "cancelled")
    page.get_by_role("navigation", name="Scope").get_by_role("button", name="Checked orders").click()
    expect(node(page, "customers")).to_have_attribute("data-state", "failed")
    expect(page.get_by_test_id("scope-current")).to_have_text("Checked orders")

    # Readable at 1024x768: the canvas is in view with the nodes at a readable zoom, the page does not scroll
    # sideways.
    page.set_viewport_size(SMALL)
    open_graph(page, f"{base}/runs/{run.pk}/")
    assert float(page.locator("[data-run-canvas]").get_attribute("data-zoom") or 0) >= 0.75
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.locator(".run-graph").scroll_into_view_if_needed()
    page.screenshot(path=artifacts_dir / "run-graph-failed-1024.png")
    page.get_by_role("button", name="orders", exact=True).click()
    expect(page.locator("#run-node-side")).to_be_visible()
    page.screenshot(path=artifacts_dir / "run-graph-panel-1024.png")


def test_a_running_runs_graph_moves_with_the_poll_without_a_reload(
    page: Page, live_server: Any, background_worker: Any, artifacts_dir: Path
) -> None:
    user = demo_user()
    workflow = workflow_services.create_workflow(actor=user, team=Team.objects.get(slug="demo"), name="Slow",
                                                 document=slow_foreach())
    base = live_server.url
    sign_in(page, base, "demo")
    page.set_viewport_size(WIDE)
    run = run_services.start_run(actor=user, workflow=workflow, input={"xs": list(range(ITEMS))})
    open_graph(page, f"{base}/runs/{run.pk}/")
    page.evaluate("window.notReloaded = true")

    # While it runs: the loop is under way, its done count grows poll after poll, on the same page.
    each = node(page, "each")
    expect(each).to_have_attribute("data-state", "running", timeout=FINISH_MS)
    counts = each.get_by_test_id("run-counts")
    expect(counts).to_have_text(re.compile(rf"^\d+ done · 0 failed · [01] running / {ITEMS}$"))
    first = int((counts.inner_text()).split(" ")[0])
    page.wait_for_function(
        "first => { const counts = document.querySelector("
        "'[data-testid=\"run-node\"][data-node=\"each\"] [data-testid=\"run-counts\"]');"
        " return counts !== null && parseInt(counts.textContent) > first; }", arg=first, timeout=FINISH_MS)
    assert page.evaluate("window.notReloaded === true")
    assert int(page.locator("[data-run-canvas]").get_attribute("data-polls") or 0) >= 1
    page.screenshot(path=artifacts_dir / "run-graph-live-1440.png")

    # The end: the page refreshes itself into the finished run, every node completed.
    expect(page.locator("#run-status")).to_have_text("completed", timeout=FINISH_MS)
    expect(node(page, "each")).to_have_attribute("data-state", "completed")
    expect(node(page, "each").get_by_test_id("run-counts")).to_have_text(
        f"{ITEMS} done · 0 failed · 0 running / {ITEMS}")
    expect(node(page, "pause")).to_have_attribute("data-state", "completed")


#: A run page's graph wider than the canvas: twelve steps in one row, at a readable zoom.
WIDE_STEPS = [f"step{number:02d}" for number in range(1, 13)]

_BOX_IN = """([nodeId]) => {
  const canvas = document.querySelector(".run-graph__canvas").getBoundingClientRect();
  const box = document.querySelector(`[data-testid="run-node"][data-node="${nodeId}"]`).getBoundingClientRect();
  return box.left >= canvas.left && box.right <= canvas.right && box.top >= canvas.top && box.bottom <= canvas.bottom;
}"""


def wide_run(user: Any, run_worker: Any) -> Run:
    g = WorkflowBuilder("wide", input_schema={"type": "object", "properties": {}})
    steps = [g.use("set_value", step, input=[{"target": "value", "value": index}])
             for index, step in enumerate(WIDE_STEPS)]
    for before, after in zip(steps, steps[1:], strict=False):
        g.chain(before, "ok", after)
    document = g.build().model_dump(mode="json")
    # Placed in one row, as a person may draw it: the canvas's automatic layout would wrap it into rows.
    document["metadata"] = {"positions": {step: {"x": 300 * index, "y": 40} for index, step in enumerate(WIDE_STEPS)}}
    workflow = workflow_services.create_workflow(actor=user, team=Team.objects.get(slug="demo"), name="Wide",
                                                 document=document)
    run = run_services.start_run(actor=user, workflow=workflow, input={})
    run_worker()
    assert Run.objects.get(pk=run.pk).status == "completed"
    return run


def focused_node(page: Page) -> str | None:
    return page.evaluate("document.activeElement.closest('[data-testid=\"run-node\"]')?.dataset.node ?? null")


def viewport_transform(page: Page) -> str:
    return page.locator(".react-flow__viewport").evaluate("v => v.style.transform")


def test_a_node_reached_by_the_keyboard_is_panned_into_view(
    page: Page, live_server: Any, run_worker: Any, artifacts_dir: Path
) -> None:
    run = wide_run(demo_user(), run_worker)
    sign_in(page, live_server.url, "demo")
    page.set_viewport_size(WIDE)
    open_graph(page, f"{live_server.url}/runs/{run.pk}/")
    for step in WIDE_STEPS:
        expect(node(page, step)).to_have_attribute("data-state", "completed")
    # The row is wider than the canvas: its end is clipped at first.
    assert not page.evaluate(_BOX_IN, [WIDE_STEPS[-1]])
    canvas = page.locator("[data-run-canvas]")

    # The first step shows already: reaching it moves nothing.
    page.get_by_role("button", name=WIDE_STEPS[0], exact=True).focus()
    page.keyboard.press("Tab")
    page.keyboard.press("Shift+Tab")
    assert focused_node(page) == WIDE_STEPS[0]
    still = viewport_transform(page)
    assert canvas.get_attribute("data-reveals") is None

    # Tab on: each node whose button takes the focus is inside the canvas once it has it, the clipped ones too.
    for step in WIDE_STEPS[1:]:
        page.keyboard.press("Tab")
        assert focused_node(page) == step
        page.wait_for_function(_BOX_IN, arg=[step])
    assert int(canvas.get_attribute("data-reveals") or 0) >= 1
    assert viewport_transform(page) != still
    # The drawing moved by the canvas's own pan, not by the browser scrolling the clipped canvas under it.
    assert page.locator(".run-graph__canvas .react-flow").evaluate("f => f.scrollLeft + f.scrollTop") == 0
    page.screenshot(path=artifacts_dir / "run-graph-keyboard-pan-1440.png")

    # With reduced motion the canvas jumps there in one step, with no animation in between.
    page.emulate_media(reduced_motion="reduce")
    page.locator(".react-flow__viewport").evaluate("""v => {
      window.viewportMoves = 0;
      new MutationObserver(() => { window.viewportMoves += 1; })
        .observe(v, {attributes: true, attributeFilter: ["style"]});
    }""")
    reveals = int(canvas.get_attribute("data-reveals") or 0)
    for step in reversed(WIDE_STEPS[:-1]):
        page.keyboard.press("Shift+Tab")
        assert focused_node(page) == step
        page.wait_for_function(_BOX_IN, arg=[step])
    panned = int(canvas.get_attribute("data-reveals") or 0) - reveals
    assert panned >= 1
    assert page.evaluate("window.viewportMoves") == panned

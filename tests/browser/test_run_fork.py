"""Fork a run from its trace in a real browser: pick a superstep in the events table, see the state and each live
frame's context as they were, edit the state, fork; a real worker process runs both runs."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from designer.access import teams as team_services
from designer.models import Run
from designer.runs import services as run_services
from designer.workflows import services as workflow_services
from runtime import WorkflowBuilder
from tests.browser.run_page import show_the_settled_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def scaling_document() -> dict[str, Any]:
    """Each x times ``state.factor`` (default 10), one item per superstep, the products collected."""
    g = WorkflowBuilder("scaling", "Scaling", input_schema={"type": "object", "properties": {
        "xs": {"type": "array", "items": {"type": "integer"}}}, "required": ["xs"]},
        state_schema={"type": "object", "properties": {"factor": {"type": "integer", "default": 10}}})
    each = g.foreach("each", "input.xs", results="products")
    times = g.use("math", id="times", input=[{"target": "op", "value": "mul"}, {"target": "a", "path": each.item},
                                              {"target": "b", "path": "state.factor"}])
    g.chain(each, "loop", times, "ok", each)
    g.output("products", "state.products")
    return g.build().model_dump(mode="json")


def test_a_run_is_forked_from_a_superstep_picked_in_its_trace(page: Page, live_server: Any, make_user: Any,
                                                               login: Any, run_worker: Any) -> None:
    owner = make_user("fiona")
    team = team_services.create_team(actor=owner, name="Forks")
    workflow = workflow_services.create_workflow(actor=owner, team=team, name="Scaling", document=scaling_document())
    original = run_services.start_run(actor=owner, workflow=workflow, input={"xs": [1, 2, 3]})
    run_worker()
    assert Run.objects.get(pk=original.pk).output == {"products": [10, 20, 30]}

    login(page, owner)
    page.goto(f"{live_server.url}/runs/{original.pk}/")
    # Superstep 2: the first item is done, the second is about to run.
    page.locator('.events-table a.step-pick[data-step="2"]').first.click()
    panel = page.locator("#frame-panel.checkpoint-panel")
    expect(panel).to_have_attribute("data-step", "2")
    item = panel.locator("details.cp-frame", has_text="each[1]")
    expect(item).to_be_visible()
    shown = json.loads(item.locator("pre.json").inner_text())
    assert shown["foreach"]["each"]["item"] == 2 and shown["foreach"]["each"]["index"] == 1

    state = json.loads(panel.locator("#fork-state").input_value())
    assert state["factor"] == 10
    panel.locator("#fork-state").fill(json.dumps({**state, "factor": "many"}))
    panel.locator("#fork-submit").click()
    expect(page.locator("#fork-error")).to_contain_text("factor")  # refused by the state schema, nothing started
    assert Run.objects.count() == 1

    page.locator("#fork-state").fill(json.dumps({**state, "factor": 1000}))
    page.locator("#fork-submit").click()
    page.wait_for_url(lambda url: url.rstrip("/").split("/")[-1] != str(original.pk))
    fork = Run.objects.exclude(pk=original.pk).get()
    assert fork.parent_id == original.pk and fork.forked_from_step == 2
    expect(page.locator("#run-parent")).to_contain_text(f"#{original.pk} at superstep 2")

    run_worker()
    show_the_settled_run(page)
    expect(page.locator("#run-status")).to_have_text("completed")
    assert json.loads(page.locator("#run-output").inner_text()) == {"products": [10, 2000, 3000]}
    expect(page.locator(".events-table tr.ev-run_forked")).to_have_count(1)

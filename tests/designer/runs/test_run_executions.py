"""A node's executions in a run: the run page's node panel and its API, from a real failed nested run (customers
-> fetch -> orders -> a subgraph call per order; Bob's credit of 0 fails his order's child run).

Each execution is one (item, attempt) of the node: where it ran (loop names and item positions, not frame ids),
its resolved input as target / source as written / value, its output, the state it wrote, its route, error,
attempt and duration; pickers per enclosing loop narrow the list; only=failed and only=slow filter and sort.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from designer.models import Run
from designer.runs.executor import execute
from tests.designer.clients import client_for
from tests.designer.nested_failure import CUSTOMERS, start_failed_run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def failed_run(cast: Any) -> Run:
    return start_failed_run(cast)


def panel(client: Any, run: Run, node: str, **query: str) -> str:
    response = client.get(f"/runs/{run.pk}/nodes/{node}/executions/", query)
    assert response.status_code == 200, response.content[:500]
    return str(response.content.decode())


def test_each_execution_says_where_it_ran_and_what_it_read_from_where(cast: Any, failed_run: Run) -> None:
    html = panel(client_for(cast.viewer), failed_run, "fetch")
    assert "3 executions" in html
    # Names and positions, 1-based, with the item's name: never a frame id outside the details fold.
    assert "customers item 1 &#x27;Ada&#x27;" in html and "customers item 2 &#x27;Bob&#x27;" in html
    assert "frame_" not in html.split("<details class=\"execution__ids\">")[0]
    # The resolved input: the field, the path as written, the value the step got.
    assert "<code>customer</code>" in html and "<code>context.foreach.customers.item</code>" in html
    assert "&quot;name&quot;: &quot;Bob&quot;" in html
    # What it wrote into the state.
    assert "<code>state.orders</code> (set)" in html


def test_pickers_narrow_to_one_item_and_failed_only_finds_the_failure(cast: Any, failed_run: Run) -> None:
    client = client_for(cast.viewer)
    events = failed_run.events.filter(kind="scope_opened").order_by("seq")
    assert events.count() == 3
    html = panel(client, failed_run, "fetch", **{"item.customers": "1"})
    assert html.count('data-testid="execution"') == 1 and "customers item 2 &#x27;Bob&#x27;" in html
    assert '<option value="1" selected>item 2 &#x27;Bob&#x27;</option>' in html
    failed = panel(client, failed_run, "process", only="failed")
    assert failed.count('data-testid="execution"') == 1
    assert "customers item 2 &#x27;Bob&#x27; › orders item 1" in failed
    assert 'data-testid="execution-error"' in failed


def test_a_subgraph_calls_child_nodes_are_read_in_their_scope(cast: Any, failed_run: Run) -> None:
    client = client_for(cast.viewer)
    calls = client.get(f"/runs/{failed_run.pk}/graph/").json()["calls"]["process"]
    bob = next(call for call in calls if call["state"] == "failed")
    html = panel(client, failed_run, "ratio", scope=bob["key"])
    assert "in Check order" in html and "failed" in html
    assert "<code>input.customer.credit</code>" in html and ">0</code>" in html


def test_the_api_gives_the_same_paginated_and_documented(cast: Any, failed_run: Run) -> None:
    client = client_for(cast.viewer)
    body = client.get(f"/api/runs/{failed_run.pk}/nodes/fetch/executions/", {"item.customers": "0"}).json()
    assert body["count"] == 1 and body["total"] == 3
    (one,) = body["results"]
    assert one["where"] == "customers item 1 'Ada'" and one["items"] == [{"loop": "customers", "index": 0}]
    assert one["status"] == "completed" and one["attempt"] in (None, 1)
    assert one["input"][0] == {"target": "customer", "source": "context.foreach.customers.item",
                               "value": CUSTOMERS[0], "recorded": True}
    paged = client.get(f"/api/runs/{failed_run.pk}/nodes/fetch/executions/", {"page_size": "2"}).json()
    assert paged["count"] == 3 and len(paged["results"]) == 2 and paged["next"]
    schema = client.get("/api/schema/?format=json").json()
    assert "/api/runs/{run_id}/nodes/{node_id}/executions/" in schema["paths"]


def test_only_the_runs_team_sees_it_and_unknown_nodes_or_bad_pickers_are_named(cast: Any, failed_run: Run) -> None:
    assert client_for(cast.stranger).get(f"/runs/{failed_run.pk}/nodes/fetch/executions/").status_code == 404
    assert client_for(cast.stranger).get(f"/api/runs/{failed_run.pk}/nodes/fetch/executions/").status_code == 404
    viewer = client_for(cast.viewer)
    missing = viewer.get(f"/api/runs/{failed_run.pk}/nodes/nope/executions/")
    assert missing.status_code == 404 and "no node 'nope'" in missing.json()["message"]
    bad = viewer.get(f"/api/runs/{failed_run.pk}/nodes/fetch/executions/", {"item.customers": "x"})
    assert bad.status_code == 400 and bad.json()["field"] == "item.customers"


def test_the_run_error_names_the_node_workflow_call_and_items_and_keeps_the_ids_in_a_fold(cast: Any,
                                                                                         failed_run: Run) -> None:
    html = client_for(cast.viewer).get(f"/runs/{failed_run.pk}/").content.decode()
    headline = html.split('data-testid="run-error-headline">')[1].split("</strong>")[0]
    # (The order's name is whichever customer's orders the shared state.orders held: the analyzer's
    # state.concurrent_write warning is about exactly that race.)
    assert re.fullmatch(r"ratio in Check order \(called by process for customers item 2 &#x27;Bob&#x27; › orders "
                        r"item 1( &#x27;[\w-]+&#x27;)?\) failed", headline), headline
    assert "frame_" not in headline
    banner = html.split('class="card run-error"')[1].split("</div>")[0]
    assert ": math: division by zero (1 / 0)" in banner
    # The raw message, ids and all, is still there for whoever needs it: in the fold.
    assert "<summary>Details</summary><code>node.failed</code>: node &#x27;ratio&#x27; (frame frame_" in banner


def test_one_attempt_count_on_the_run_page_the_admin_and_the_api(cast: Any, failed_run: Run, make_user: Any) -> None:
    from django.urls import reverse

    from designer.runs import history as run_history

    # A redrive makes the run's second attempt (it fails again: Bob's credit is still 0).
    run_history.redrive_run(actor=cast.editor, run=failed_run)
    assert execute(failed_run.pk) == "failed"
    page = client_for(cast.viewer).get(f"/runs/{failed_run.pk}/").content.decode()
    assert '<div class="fact-v" id="run-attempt">2</div>' in page
    assert client_for(cast.viewer).get(f"/api/runs/{failed_run.pk}/").json()["attempt"] == 2
    admin = make_user("root", is_staff=True, is_superuser=True)
    html = client_for(admin).get(reverse("admin:designer_run_change", args=[failed_run.pk])).content.decode()
    attempt = html.split("<label>Attempt:</label>")[1].split("</div>")[0]
    assert attempt.split('class="readonly">')[1].strip() == "2"
    assert "Worker claims" in html


def test_a_redrive_28_s_later_is_a_gap_not_a_stretched_axis(cast: Any, failed_run: Run) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from designer.models import RunEvent
    from designer.runs import history as run_history
    from designer.runs.display import build_timeline

    run_history.redrive_run(actor=cast.editor, run=failed_run)
    assert execute(failed_run.pk) == "failed"
    redriven = RunEvent.objects.get(run=failed_run, kind="run_redriven").seq
    # The redrive came 28 s after the failure, as in the tour.
    for event in RunEvent.objects.filter(run=failed_run, seq__gte=redriven):
        RunEvent.objects.filter(pk=event.pk).update(at=event.at + timedelta(seconds=28))
    Run.objects.filter(pk=failed_run.pk).update(finished_at=timezone.now() + timedelta(seconds=28))
    run = Run.objects.get(pk=failed_run.pk)
    events = list(run.events.order_by("seq"))
    timeline = build_timeline(events, now=timezone.now(), end=run.finished_at)
    assert [gap.reason for gap in timeline.gaps] == ["a redrive"]
    assert timeline.gaps[0].waited_ms >= 28_000
    assert timeline.wall_ms >= 28_000 and timeline.total_ms < 10_000
    # The second attempt's steps start where the first attempt's ended, not squeezed against the right edge.
    second = [step for row in timeline.rows for step in row.steps if step.seq > redriven]
    assert second and min(step.left for step in second) < 95
    page = client_for(cast.viewer).get(f"/runs/{run.pk}/").content.decode()
    assert 'data-testid="timeline-gap"' in page and "for a redrive" in page
    assert 'id="run-active"' in page and "Wall time" in page


def test_a_foreach_nodes_own_step_ends_when_it_read_its_collection_and_a_failed_runs_open_steps_are_stopped(
        cast: Any, failed_run: Run) -> None:
    body = client_for(cast.viewer).get(f"/api/runs/{failed_run.pk}/nodes/orders/executions/").json()
    assert body["total"] == 3
    assert {e["status"] for e in body["results"]} == {"completed"}
    # Its own step's output is how many items it found (each customer's orders).
    assert all(isinstance(e["output"]["items"], int) and e["output"]["items"] > 0 for e in body["results"])
    # Ada's and Cy's calls were under way when Bob's failure ended the run: stopped, not running.
    calls = client_for(cast.viewer).get(f"/api/runs/{failed_run.pk}/nodes/process/executions/").json()["results"]
    assert "running" not in {e["status"] for e in calls}
    assert {e["status"] for e in calls} <= {"failed", "stopped", "completed"}
    assert "failed" in {e["status"] for e in calls}

"""The live run page reads incrementally: a poll reads the run's counters and the events after a cursor, so a
poll of a large run costs what a poll of a small one costs (queries, rows and bytes counted), while the full
page (read once) still grows with the run."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from designer.models import ForeachBatch, ForeachBatchItem, Run, RunEvent
from designer.runs.checkpointer import OrmCheckpointer
from designer.runs.views import LIVE_EVENTS
from runtime import Engine, RunState, Workflow, WorkflowBuilder
from runtime.engine import EngineOptions
from runtime.state import SequentialIds
from runtime.tasks import TaskRegistry
from tests.designer.clients import client_for

pytestmark = pytest.mark.django_db


def htmx() -> dict[str, str]:
    return {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "run-poll"}


def stopping_foreach(size: int) -> Workflow:
    """A foreach over ``input.xs`` (500 at a time) that doubles each item and stops for a question at the last."""
    g = WorkflowBuilder("live", input_schema={"type": "object", "properties": {
        "xs": {"type": "array", "items": {"type": "integer"}}}})
    each = g.foreach("each", "input.xs", max_concurrency=500, results="doubled")
    check = g.branch("check", each.item, [{"label": "stop", "op": "equals", "value": size - 1}])
    double = g.use("double", "double", input=[{"target": "x", "path": each.item}])
    ask = g.interrupt("ask", prompt="last one?")
    g.chain(each, "loop", check, "stop", ask, "ok", each)
    g.chain(check, "default", double, "ok", each)
    return g.build()


def live_run(cast: Any, workflow: Any, size: int) -> Run:
    """A real run of ``size`` items checkpointed by the designer's checkpointer, left mid-way (as a worker would
    leave it between two checkpoints): every item but the last done, the last one waiting."""
    registry = TaskRegistry()

    @registry.task
    def double(x: int) -> int:
        return 2 * x

    def create_run(run_state: RunState) -> Run:
        return Run.objects.create(team=cast.team, workflow=workflow, document={}, runtime_id=run_state.run_id,
                                  created_by=cast.editor, input={"size": size})

    checkpointer = OrmCheckpointer(cast.team, create_run=create_run)
    engine = Engine(registry, EngineOptions(checkpointer=checkpointer, ids=SequentialIds(), keep_trace=0))
    result = engine.run(stopping_foreach(size), {"xs": list(range(size))}, run_id=f"run_live_{size}")
    assert result.status == "interrupted"
    run = Run.objects.get(team=cast.team, runtime_id=result.run_id)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    run.refresh_from_db()
    return run


NUMBER = re.compile(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def measured_poll(client: Client, run: Run, since: int, *, page: str = "run-live") -> tuple[Any, int, int, int]:
    """(response, queries, rows read, bytes read) of one poll: each SELECT the poll ran is run again to count
    what it returned (numbers counted as one character each)."""
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse(page, args=[run.pk]), {"since": since}, **(htmx() if page == "run-live" else {}))
    rows = size = 0
    with connection.cursor() as cursor:
        for query in queries.captured_queries:
            if query["sql"].lstrip().upper().startswith("SELECT"):
                cursor.execute(query["sql"])
                for row in cursor.fetchall():
                    rows += 1
                    # Numbers count as one character: seq 60 and seq 18,000 are the same read, and so are a time
                    # of 12:00:00.5 and one of 12:00:00 (a whole second prints no fraction; seen on CI) or 1e-05.
                    size += sum(len(NUMBER.sub("0", str(value))) for value in row)
    return response, len(queries.captured_queries), rows, size


def test_a_poll_of_a_large_run_reads_what_a_poll_of_a_small_run_reads(cast: Any, workflow: Any) -> None:
    small, large = live_run(cast, workflow, 10), live_run(cast, workflow, 3000)
    assert large.events.count() > 100 * small.events.count() / 10 > 0
    client = client_for(cast.viewer)
    polls = {}
    for run in (small, large):
        since = run.progress["next_seq"] - 5  # five events arrived since the last poll
        polls[run.pk] = response, queries, rows, size = measured_poll(client, run, since)
        assert response.status_code == 200
        assert re.findall(r'<li class="ev-[^"]*" data-seq="(\d+)"', response.content.decode()) == [
            str(seq) for seq in range(since, since + 5)]
    (_, small_queries, small_rows, small_bytes), (_, large_queries, large_rows, large_bytes) = polls.values()
    assert (large_queries, large_rows, large_bytes) == (small_queries, small_rows, small_bytes)

    # The page itself (read once, when it is opened) grows with the run, measured the same way: so the
    # measurement would see a poll that re-read the trace or the state.
    (_, _, small_page_rows, small_page_bytes), (page, _, large_page_rows, large_page_bytes) = (
        measured_poll(client, run, 0, page="run-detail") for run in (small, large))
    assert page.status_code == 200 and f'?since={large.progress["next_seq"]}"' in page.content.decode()
    assert large_page_rows > 50 * small_page_rows and large_page_bytes > 50 * small_page_bytes


def test_the_poll_shows_the_counters_the_checkpointer_keeps(cast: Any, workflow: Any) -> None:
    run = live_run(cast, workflow, 30)
    assert run.items_done == 29 and run.failures == 0
    assert run.progress["foreach"][0] | {"activation_id": "-"} == {
        "activation_id": "-", "node_id": "each", "done": 29, "total": 30, "running": 1, "failed": 0,
        "parent_activation_id": None, "parent_index": None}
    body = client_for(cast.viewer).get(reverse("run-live", args=[run.pk]), {"since": 0}, **htmx()).content.decode()
    assert body.lstrip().startswith('<div id="run-poll"')
    assert 'id="run-counters" aria-label="Foreach progress" hx-swap-oob="true"' in body
    assert 'data-step="' in body and 'data-items-done="29" data-failures="0"' in body
    assert 'data-node="each" data-done="29" data-total="30"' in body
    assert f'<span id="run-event-count" hx-swap-oob="true">{run.progress["next_seq"]}</span>' in body
    # Far behind: the newest LIVE_EVENTS events, and how many were passed over; the cursor moves to the end.
    shown = re.findall(r'data-seq="(\d+)"', body)
    assert len(shown) == LIVE_EVENTS and int(shown[-1]) == run.progress["next_seq"] - 1
    assert f"… {run.progress['next_seq'] - LIVE_EVENTS} more events" in body
    assert f'?since={run.progress["next_seq"]}"' in body
    # Caught up: nothing new, the same cursor.
    again = client_for(cast.viewer).get(reverse("run-live", args=[run.pk]), {"since": run.progress["next_seq"]},
                                        **htmx()).content.decode()
    assert "data-seq=" not in again and f'?since={run.progress["next_seq"]}"' in again


def test_a_failed_step_is_counted(cast: Any, workflow: Any) -> None:
    from runtime.state import TraceEvent

    run = live_run(cast, workflow, 3)
    state = OrmCheckpointer(cast.team).load(run.runtime_id)
    failed = TraceEvent(seq=state.trace_seq, kind="node_failed", run_id=run.runtime_id, step=state.step, time=1.0,
                        node_id="double")
    state.trace_seq += 1
    OrmCheckpointer(cast.team).save(state, [failed])
    run.refresh_from_db()
    assert (run.failures, run.items_done) == (1, 2)


def test_a_poll_of_a_run_that_stopped_reloads_the_page(cast: Any, workflow: Any) -> None:
    run = live_run(cast, workflow, 3)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.INTERRUPTED)
    response = client_for(cast.viewer).get(reverse("run-live", args=[run.pk]), **htmx())
    assert response.status_code == 200 and response["HX-Refresh"] == "true"


def test_strangers_cannot_poll(cast: Any, workflow: Any) -> None:
    run = live_run(cast, workflow, 3)
    assert client_for(cast.stranger).get(reverse("run-live", args=[run.pk]), **htmx()).status_code == 404
    assert RunEvent.objects.filter(run=run).exists()


def test_a_run_waiting_for_its_batches_is_polled(cast: Any, workflow: Any) -> None:
    run = live_run(cast, workflow, 3)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.WAITING)
    page = client_for(cast.viewer).get(reverse("run-detail", args=[run.pk])).content.decode()
    assert '<div id="run-poll"' in page
    poll = client_for(cast.viewer).get(reverse("run-live", args=[run.pk]), **htmx())
    assert "HX-Refresh" not in poll and 'id="run-status" hx-swap-oob="true">waiting<' in poll.content.decode()


def waiting_distributed_run(cast: Any, workflow: Any, size: int, committed: int) -> Run:
    """A real run of a distributed foreach over ``size`` items (batches of 100), left waiting for its batches
    with the first ``committed`` items committed through the batches' own commit path (``Committer``)."""
    from designer.runs import batches
    from designer.runs.lease import expiry_in
    from runtime.engine import ItemOutcome, distributed_foreach

    registry = TaskRegistry()

    @registry.task
    def double(x: int) -> int:
        return 2 * x

    g = WorkflowBuilder("spread", input_schema={"type": "object", "properties": {
        "xs": {"type": "array", "items": {"type": "integer"}}}})
    each = g.foreach("each", "input.xs", results="doubled", batch_size=100, max_batches_in_flight=2)
    double_node = g.use("double", "double", input=[{"target": "x", "path": each.item}])
    g.chain(each, "loop", double_node, "ok", each)

    def create_run(run_state: RunState) -> Run:
        return Run.objects.create(team=cast.team, workflow=workflow, document={}, runtime_id=run_state.run_id,
                                  created_by=cast.editor, input={"size": size})

    engine = Engine(registry, EngineOptions(checkpointer=OrmCheckpointer(cast.team, create_run=create_run),
                                            ids=SequentialIds(), keep_trace=0, distribute=lambda node, items: True))
    result = engine.run(g.build(), {"xs": list(range(size))}, run_id=f"run_spread_{size}")
    assert result.status == "waiting"
    run = Run.objects.get(team=cast.team, runtime_id=result.run_id)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.WAITING)
    batches.plan_batches(run.pk, distributed_foreach(result.run_state))
    for row in run.foreach_batches.order_by("number"):
        if row.start >= committed:
            break
        # As a worker's claim leaves it (queued rows wait with a queue deadline that claim() honours).
        ForeachBatch.objects.filter(pk=row.pk).update(status=ForeachBatch.Status.RUNNING, lease_owner="owner",
                                                      lease_expires_at=expiry_in(60))
        committer = batches.Committer(row, "owner")
        committer.add(tuple(ItemOutcome(index, 2 * index) for index in range(row.start, min(row.stop, committed))))
        committer.flush()
    run.refresh_from_db()
    return run


def test_a_poll_of_a_large_distributed_run_costs_what_a_poll_of_a_small_one_costs(cast: Any, workflow: Any
                                                                                  ) -> None:
    small, large = waiting_distributed_run(cast, workflow, 10, 5), waiting_distributed_run(cast, workflow, 3000, 2050)
    assert ForeachBatchItem.objects.filter(run=large).count() == 2050
    client = client_for(cast.viewer)
    polls = {}
    for run in (small, large):
        polls[run.pk] = response, *_ = measured_poll(client, run, run.progress["next_seq"])
        assert response.status_code == 200
    (small_poll, *small_cost), (large_poll, *large_cost) = polls.values()
    assert large_cost == small_cost
    # Same queries is not enough (a COUNT returns one row whatever it scans): no poll reads the items table.
    with CaptureQueriesContext(connection) as queries:
        client.get(reverse("run-live", args=[large.pk]), {"since": 0}, **htmx())
    assert queries.captured_queries and not [q for q in queries.captured_queries if "foreachbatchitem" in q["sql"]]
    # The progress the poll shows comes from the batch rows' counters: committed items, batches running now.
    body = large_poll.content.decode()
    assert 'data-node="each" data-done="2050" data-total="3000"' in body
    assert "21 running" in body  # batches 0..20 were claimed (the last one part-committed) and not finished
    assert 'data-node="each" data-done="5" data-total="10"' in small_poll.content.decode()

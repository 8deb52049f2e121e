"""The run page's timeline: built from the trace of real engine runs (the demo workflows), stored as the
checkpointer stores it (``event_row``), without a database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.utils import timezone

from demo.data import customer_orders, orders_via_subgraph, process_order, spending_approval
from designer.runs.checkpointer import event_row
from designer.runs.display import InFlight, build_timeline, short_id
from designer.workflows import catalog
from runtime import Engine
from runtime.engine import EngineOptions, MappingResolver

CUSTOMERS = [{"id": "C-1", "name": "Ada", "tier": "gold"}, {"id": "C-2", "name": "Bob", "tier": "standard"}]


def run_events(document: Any, input: dict[str, Any], **engine: Any) -> tuple[Any, list[Any]]:
    result = Engine(registry=catalog.registry(), options=EngineOptions(**engine)).run(document, input)
    return result, [event_row(1, event) for event in result.trace]


def finished_timeline(events: list[Any]) -> Any:
    end = max(event.at for event in events)
    return build_timeline(events, now=end + timedelta(hours=1), end=end)


def test_rows_nest_items_under_the_lineage_that_started_their_foreach() -> None:
    _, events = run_events(customer_orders(), {"customers": CUSTOMERS})
    timeline = finished_timeline(events)
    shape = [(row.depth, row.kind, row.title) for row in timeline.rows]
    assert shape[0] == (0, "root", "run")
    customers = [entry for entry in shape if entry[2].startswith("customers [")]
    assert [entry[:2] for entry in customers] == [(1, "item")] * len(CUSTOMERS)
    orders = [entry for entry in shape if entry[2].startswith("orders [")]
    assert orders and all(entry[:2] == (2, "item") for entry in orders)
    # Children follow their parent: the row after "customers [0]" is its first order.
    first = shape.index((1, "item", "customers [0]"))
    assert shape[first + 1] == (2, "item", "orders [0]")


def test_a_finished_run_leaves_no_step_open_and_bars_stay_inside_the_track() -> None:
    _, events = run_events(customer_orders(), {"customers": CUSTOMERS})
    timeline = finished_timeline(events)
    steps = [step for row in timeline.rows for step in row.steps]
    assert steps and all(step.end is not None and step.status == "completed" for step in steps)
    for item in (*steps, *(span for row in timeline.rows for span in row.spans)):
        assert 0 <= item.left <= 100 and 0 < item.width and item.left + item.width <= 100.5
    # The last step (short, at the very end) is drawn whole at its minimum width, not cut at the edge.
    last = max(steps, key=lambda step: step.start)
    assert last.width >= 1.5 and last.left + last.width <= 100.0
    spans = [span for row in timeline.rows for span in row.spans]
    assert {span.total for span in spans if span.node_id == "customers"} == {len(CUSTOMERS)}


def test_subgraph_scopes_are_rows_under_the_item_that_called_them() -> None:
    resolver = MappingResolver({"process-order": process_order()})
    _, events = run_events(orders_via_subgraph(), {"customers": CUSTOMERS}, workflows=resolver)
    timeline = finished_timeline(events)
    by_lineage = {row.lineage_id: row for row in timeline.rows}
    calls = [row for row in timeline.rows if row.kind == "subgraph"]
    assert calls and all(row.title == "process → process-order" for row in calls)
    for row in calls:
        parent = by_lineage[row.parent or ""]
        assert parent.title.startswith("orders [") and row.depth == parent.depth + 1
        assert {step.node_id for step in row.steps} == {"price", "ship"}


def test_an_open_question_is_a_waiting_bar_up_to_now() -> None:
    result, events = run_events(spending_approval(), {"amount": 5000, "requester": "x"})
    assert result.status == "interrupted"
    now = max(event.at for event in events) + timedelta(seconds=30)
    timeline = build_timeline(events, now=now)
    review = next(step for row in timeline.rows for step in row.steps if step.node_id == "review")
    assert review.status == "waiting" and review.end is None
    assert review.left + review.width > 99  # reaches the right edge: it is still waiting


def test_frames_ready_in_the_checkpoint_are_drawn_as_running() -> None:
    start = timezone.now()
    events = [event_row(1, _event(0, "run_started", start)), event_row(1, _event(1, "node_started", start)),
              event_row(1, _event(2, "node_completed", start + timedelta(milliseconds=5)))]
    flight = InFlight(frame_id="frame_1", lineage_id="lineage_1", scope_id="root", node_id="next")
    timeline = build_timeline(events, now=start + timedelta(milliseconds=50), in_flight=[flight])
    steps = timeline.rows[0].steps
    assert [(s.node_id, s.status) for s in steps] == [("a", "completed"), ("next", "running")]
    assert steps[1].start == start + timedelta(milliseconds=5)


def _event(seq: int, kind: str, at: datetime) -> Any:
    from runtime.state import TraceEvent

    return TraceEvent(seq=seq, kind=kind, run_id="run_1", step=seq, time=at.astimezone(UTC).timestamp(),
                      scope_id="root", frame_id="frame_1", lineage_id="lineage_1", node_id="a")


def test_short_ids_keep_prefix_and_tail() -> None:
    assert short_id("frame_1234567890123") == "frame_…0123"
    assert short_id("root") == "root" and short_id("") == ""


def test_a_step_that_waited_and_started_again_ends_its_first_stretch_as_a_wait() -> None:
    """A wait step through the worker: node_started, node_waiting (the frame is suspended), node_started again
    when it wakes, node_completed. The first stretch is a waiting bar up to the restart, never a running bar
    left open to the end of the run (the live timeline showed every finished item as still running)."""
    from designer.models import RunEvent

    t0 = datetime(2026, 12, 5, 7, 0, tzinfo=UTC)

    def event(seq: int, kind: str, ms: int) -> RunEvent:
        return RunEvent(run_id=1, seq=seq, kind=kind, node_id="pause", frame_id="f1", lineage_id="l1",
                        scope_id="root", at=t0 + timedelta(milliseconds=ms), data={})

    events = [event(0, "node_started", 0), event(1, "node_waiting", 5), event(2, "node_started", 300),
              event(3, "node_completed", 302)]
    timeline = build_timeline(events, now=t0 + timedelta(seconds=10), end=t0 + timedelta(milliseconds=302))
    steps = [(step.status, step.start, step.end) for row in timeline.rows for step in row.steps]
    assert steps == [("waiting", t0, t0 + timedelta(milliseconds=300)),
                     ("completed", t0 + timedelta(milliseconds=300), t0 + timedelta(milliseconds=302))]

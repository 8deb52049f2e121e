"""``selectors.run_history.tolerated_failures``: which distributed foreach a completed run's redrive goes back to,
read from the committed items and the trace (rows written directly: no worker needed)."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from designer.models import ForeachBatch, ForeachBatchItem, Run, RunCheckpoint, RunEvent
from designer.runs.history_selectors import TolerantRedrive, tolerated_failures

pytestmark = pytest.mark.django_db


def event(run: Run, seq: int, kind: str, step: int, activation_id: str = "", node_id: str = "",
          **summary: Any) -> None:
    RunEvent.objects.create(run=run, seq=seq, kind=kind, activation_id=activation_id, node_id=node_id,
                            data={"step": step, "summary": summary}, at=timezone.now())


def items(run: Run, activation_id: str, node_id: str, failed: list[int], total: int = 4) -> None:
    batch = ForeachBatch.objects.create(run=run, activation_id=activation_id, node_id=node_id, number=0, start=0,
                                        stop=total, status="done", committed=total)
    ForeachBatchItem.objects.bulk_create([
        ForeachBatchItem(run=run, batch=batch, activation_id=activation_id, index=i,
                         result=None if i in failed else i, error={"message": "down"} if i in failed else None)
        for i in range(total)])


def test_the_first_join_with_failed_items_of_the_current_attempt_is_the_one_redriven(cast: Any, workflow: Any
                                                                                       ) -> None:
    run = Run.objects.create(team=cast.team, workflow=workflow, document=workflow.document, input={},
                             status="completed")
    assert tolerated_failures(run) is None
    items(run, "act_1", "first", [])  # no failures: nothing to redrive there
    items(run, "act_2", "second", [1, 3])
    items(run, "act_3", "third", [0])
    event(run, 0, "foreach_completed", 3, "act_1", "first")
    event(run, 1, "foreach_completed", 6, "act_2", "second")
    event(run, 2, "foreach_completed", 9, "act_3", "third")
    RunCheckpoint.objects.create(run=run, step=5, status="waiting", engine_trace_seq=1, state={})
    assert tolerated_failures(run) == TolerantRedrive("act_2", "second", 5, (1, 3), True)

    # Redriven: back to the checkpoint after superstep 5; act_2 joins again (now without failures), and act_3's
    # join of the first attempt is undone. A new foreach after it failed one item in the new attempt.
    event(run, 3, "run_redriven", 10, foreach="second", from_step=5)
    ForeachBatchItem.objects.filter(activation_id="act_2", index__in=[1, 3]).update(result=7, error=None)
    event(run, 4, "foreach_completed", 11, "act_2", "second")
    items(run, "act_4", "third", [2])
    event(run, 5, "foreach_completed", 14, "act_4", "third")
    assert tolerated_failures(run) == TolerantRedrive("act_4", "third", 13, (2,), False)  # not act_3: undone

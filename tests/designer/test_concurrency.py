"""Two editors saving the same revision at the same moment: exactly one wins, the other gets a conflict.

Real threads, real database connections (transactional DB so each thread sees
committed rows), no mocks: the compare-and-set on ``revision`` is what is tested.
"""

from __future__ import annotations

import copy
import threading

import pytest
from django.db import connection

from designer.core.errors import RevisionConflict
from designer.editor import edits as editor_edits
from designer.models import DraftOperation, Workflow, WorkflowVersion
from designer.workflows import services
from designer.workflows.analysis import analysis_for

pytestmark = pytest.mark.django_db(transaction=True)

ATTEMPTS = 6


def _in_threads(count, work):
    barrier = threading.Barrier(count)
    results: list[object] = [None] * count

    def run(index: int) -> None:
        try:
            barrier.wait()
            results[index] = work(index)
        except Exception as exc:  # noqa: BLE001 - collected and asserted on below
            results[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_simultaneous_saves_of_one_revision_let_exactly_one_win(cast, workflow, document):
    def save(index: int) -> object:
        edited = copy.deepcopy(document)
        edited["description"] = f"edit {index}"
        return services.save_document(actor=cast.editor, workflow=Workflow.objects.get(pk=workflow.pk),
                                      revision=1, document=edited)

    results = _in_threads(ATTEMPTS, save)
    winners = [r for r in results if not isinstance(r, Exception)]
    losers = [r for r in results if isinstance(r, Exception)]
    assert len(winners) == 1, results
    assert all(isinstance(r, RevisionConflict) and r.details["current_revision"] == 2 for r in losers), losers
    stored = Workflow.objects.get(pk=workflow.pk)
    assert stored.revision == 2
    assert stored.document["description"] == winners[0].workflow.document["description"]


def test_simultaneous_publishes_get_distinct_numbers(cast, workflow):
    results = _in_threads(4, lambda i: services.publish_workflow(
        actor=cast.editor, workflow=Workflow.objects.get(pk=workflow.pk)))
    assert not [r for r in results if isinstance(r, Exception)], results
    assert sorted(WorkflowVersion.objects.values_list("number", flat=True)) == [1, 2, 3, 4]


def test_simultaneous_edits_of_different_fields_on_one_revision_are_all_kept_in_one_order(cast, workflow):
    """Live co-editing: each stale edit is rebased (and re-judged when yet another save lands first)."""
    def edit(index: int) -> object:
        stored = Workflow.objects.get(pk=workflow.pk)
        return editor_edits.commit(
            actor=cast.editor, workflow=stored, revision=1, client=f"tab-{index}",
            operations=[{"op": "bind_literal", "node": "record", "field": f"input.f{index}", "value": index}],
            analysis=analysis_for(stored))

    results = _in_threads(ATTEMPTS, edit)
    assert not [r for r in results if isinstance(r, Exception)], results
    stored = Workflow.objects.get(pk=workflow.pk)
    assert stored.revision == 1 + ATTEMPTS
    record = next(n for n in stored.document["nodes"] if n["id"] == "record")
    bound = {b["target"]: b.get("value") for b in record["input"]}
    assert all(bound[f"f{i}"] == i for i in range(ATTEMPTS)), bound
    log = list(DraftOperation.objects.filter(workflow=workflow).order_by("revision"))
    assert [row.revision for row in log] == list(range(2, 2 + ATTEMPTS))
    assert sorted(row.client for row in log) == sorted(f"tab-{i}" for i in range(ATTEMPTS))

"""A worker compiles each distinct run document once (``designer.runs.plans``, issue 33), and never runs a run
with another document's compile: a new published version, an edited draft and the same text in another team
each get their own. Runs go through the real executor on the real database."""

from __future__ import annotations

from typing import Any

import pytest

from designer.models import Run
from designer.runs import plans, waiting
from designer.runs import services as run_services
from designer.runs.executor import execute
from designer.workflows import catalog
from designer.workflows import services as workflow_services
from tests.designer.runs_support import one_value_document

pytestmark = pytest.mark.django_db


def ran(run: Run) -> Any:
    assert execute(run.pk) == "completed"
    run.refresh_from_db()
    return run.output["answer"]


def plan_of(run: Run) -> Any:
    """The compiled plan this worker process keeps for ``run``'s document (None: none)."""
    cache = plans.compiled(catalog.registry(), waiting.max_retry_delay())
    return cache.get(plans.document(run.team_id, run.document, run.subgraph_versions))


def test_runs_of_one_document_share_a_compile_and_a_new_version_gets_its_own(cast: Any) -> None:
    workflow = cast.workflow("Answer", one_value_document("answer", 1))
    workflow_services.publish_workflow(actor=cast.owner, workflow=workflow)
    first = run_services.start_run(actor=cast.owner, workflow=workflow, version=run_services.LATEST)
    second = run_services.start_run(actor=cast.owner, workflow=workflow, version=run_services.LATEST)
    assert (ran(first), ran(second)) == (1, 1)
    assert plan_of(first) is not None and plan_of(first) is plan_of(second)  # compiled once, for both

    workflow.refresh_from_db()
    workflow_services.save_document(actor=cast.owner, workflow=workflow, revision=workflow.revision,
                                    document=one_value_document("answer", 2))
    workflow_services.publish_workflow(actor=cast.owner, workflow=workflow)
    newer = run_services.start_run(actor=cast.owner, workflow=workflow, version=run_services.LATEST)
    assert ran(newer) == 2  # the new version's own document, not the compile of the one before
    assert plan_of(newer) is not None and plan_of(newer) is not plan_of(first)

    workflow.refresh_from_db()
    workflow_services.save_document(actor=cast.owner, workflow=workflow, revision=workflow.revision,
                                    document=one_value_document("answer", 3))
    draft = run_services.start_run(actor=cast.owner, workflow=workflow)
    older = run_services.start_run(actor=cast.owner, workflow=workflow, version=1)
    assert (ran(draft), ran(older)) == (3, 1)
    assert plan_of(older) is plan_of(first)


def test_the_same_document_in_another_team_is_its_own(cast: Any) -> None:
    ours = cast.workflow("Answer", one_value_document("answer", 1))
    theirs = cast.their_workflow("Answer", one_value_document("answer", 1))
    mine = run_services.start_run(actor=cast.owner, workflow=ours)
    other = run_services.start_run(actor=cast.stranger, workflow=theirs)
    assert (ran(mine), ran(other)) == (1, 1)
    assert plans.document(mine.team_id, mine.document, None) is not plans.document(other.team_id, other.document,
                                                                                    None)


def test_a_document_the_engine_refuses_is_refused_as_before(cast: Any) -> None:
    workflow = cast.workflow("Answer", one_value_document("answer", 1))
    broken = Run.objects.create(team=workflow.team, workflow=workflow, document={"id": "x", "nodes": "none"})
    assert plans.document(workflow.team_id, broken.document, None) == broken.document  # left to the engine
    assert execute(broken.pk) == "failed"
    broken.refresh_from_db()
    assert broken.status == "failed" and broken.error["code"]

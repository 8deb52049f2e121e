"""Trying one task node from the inspector: a real worker runs it on sample data (typed, or a past run's values
for the node) under the run step limits, and the editor shows its result and route; nothing is saved."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse
from django_tasks_db.models import DBTaskResult

from designer.models import Run, Workflow
from designer.workflows import services as workflow_services
from runtime import WorkflowBuilder
from tests.designer.runs_support import run_batch, start_run

pytestmark = pytest.mark.django_db(transaction=True)


def _start(client: Any, workflow: Any, node: str, **data: Any) -> Any:
    return client.post(reverse("editor-try-node-start", args=[workflow.pk]), {"node": node, **data})


def _outcome(client: Any, workflow: Any, started: Any) -> Any:
    result_id = re.search(r"try-node/([0-9a-f-]{36})/", started.content.decode()).group(1)
    return client.get(reverse("editor-try-node-outcome", args=[workflow.pk, result_id]))


def test_a_typed_sample_runs_in_the_worker_and_shows_result_and_route(client: Any, cast: Any, workflow: Any,
                                                                     env: dict[str, str]) -> None:
    client.force_login(cast.editor)
    revision, runs = workflow.revision, Run.objects.count()
    form = client.get(reverse("editor-try-node", args=[workflow.pk]), {"node": "assess"})
    assert "Try it" in form.content.decode()
    started = _start(client, workflow, "assess", sample='{"amount": 1500}')
    assert 'data-try-status="pending"' in started.content.decode()
    assert 'data-try-status="pending"' in _outcome(client, workflow, started).content.decode()  # no worker yet
    run_batch(env)
    answer = _outcome(client, workflow, started)
    assert answer.context["answer"]["status"] == "completed"
    assert answer.context["answer"]["label"] == "review"
    assert answer.context["answer"]["result"] == {"amount": 1500.0, "limit": 1000.0}
    assert 'data-try-label>review<' in answer.content.decode()
    assert Workflow.objects.get(pk=workflow.pk).revision == revision and Run.objects.count() == runs


def test_a_sample_of_the_wrong_type_is_refused_naming_the_field(client: Any, cast: Any, workflow: Any) -> None:
    client.force_login(cast.editor)
    refused = _start(client, workflow, "assess", sample='{"amount": "lots"}')
    assert 'data-try-status="refused"' in refused.content.decode() and "amount" in refused.context["error"]
    assert "not valid JSON" in _start(client, workflow, "assess", sample="{oops").context["error"]
    assert not DBTaskResult.objects.filter(task_path="designer.tasks.try_node").exists()


def test_a_past_runs_values_for_the_node_are_the_sample(api: Any, client: Any, cast: Any, workflow: Any,
                                                        env: dict[str, str]) -> None:
    run = start_run(api(cast.editor), workflow, {"amount": 20})
    run_batch(env)
    client.force_login(cast.editor)
    started = _start(client, workflow, "record", run=str(run["id"]))
    assert started.context["sample"] == '{"approved": true}'
    run_batch(env)
    answer = _outcome(client, workflow, started).context["answer"]
    assert (answer["status"], answer["label"]) == ("completed", "approved")
    assert answer["result"]["approved"] is True


def test_a_trial_gets_the_step_timeout_of_a_run(client: Any, cast: Any, env: dict[str, str], settings: Any) -> None:
    settings.TRELLIS_TASK_MODULES = ["tests.designer.step_tasks"]
    graph = WorkflowBuilder("sleepy", "Sleepy")
    graph.use("snooze", id="nap", input=[{"target": "seconds", "value": 0.01}])
    workflow = workflow_services.create_workflow(actor=cast.editor, team=cast.team, name="Sleepy",
                                                 document=graph.build().model_dump(mode="json"))
    client.force_login(cast.editor)
    started = _start(client, workflow, "nap", sample='{"seconds": 30}')
    run_batch({**env, "TRELLIS_TASK_MODULES": "tests.designer.step_tasks", "TRELLIS_STEP_TIMEOUT_SECONDS": "1",
               "TRELLIS_STEP_PROCESSES": "1"})
    answer = _outcome(client, workflow, started).context["answer"]
    assert answer["status"] == "failed"
    assert "step.timeout" in str(answer["error"])  # killed at the limit, as a run's step is


def test_viewers_cannot_try_a_node(client: Any, cast: Any, workflow: Any) -> None:
    client.force_login(cast.viewer)
    form = client.get(reverse("editor-try-node", args=[workflow.pk]), {"node": "assess"})
    assert form.status_code == 200 and "Try it" not in form.content.decode()
    assert _start(client, workflow, "assess", sample='{"amount": 1}').status_code == 403
    client.force_login(cast.stranger)
    assert _start(client, workflow, "assess", sample='{"amount": 1}').status_code == 404
    assert not DBTaskResult.objects.filter(task_path="designer.tasks.try_node").exists()


def test_a_past_run_of_a_loop_offers_each_execution_and_the_chosen_ones_values_are_the_sample(
        client: Any, cast: Any, env: dict[str, str]) -> None:
    from designer.runs import services as run_services
    from designer.runs.executor import execute
    from tests.designer.nested_failure import CUSTOMERS, make_workflows

    parent = make_workflows(cast.owner, cast.team)
    run = run_services.start_run(actor=cast.editor, workflow=parent, input={"customers": CUSTOMERS})
    assert execute(run.pk) == "failed"
    client.force_login(cast.editor)
    form = client.get(reverse("editor-try-node", args=[parent.pk]), {"node": "fetch"}).content.decode()
    assert f'hx-get="/workflows/{parent.pk}/edit/try-node/executions/"' in form
    picker = client.get(reverse("editor-try-node-executions", args=[parent.pk]),
                        {"node": "fetch", "run": run.pk}).content.decode()
    options = re.findall(r'<option value="(frame_\w+)">([^<]*)</option>', picker)
    assert [label.split(" · ")[0] for _frame, label in options] == [
        "customers item 3 &#x27;Cy&#x27;", "customers item 2 &#x27;Bob&#x27;", "customers item 1 &#x27;Ada&#x27;"]
    bob = options[1][0]
    started = _start(client, parent, "fetch", run=str(run.pk), frame=bob)
    assert 'data-try-status="pending"' in started.content.decode()
    # The trial's sample is Bob's values, not whichever execution came first or last.
    sample = DBTaskResult.objects.order_by("-enqueued_at").first()
    assert '"name": "Bob"' in str(sample.args_kwargs).replace("'", '"')

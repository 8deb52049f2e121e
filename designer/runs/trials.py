"""Trying a node: one task node of the draft on sample data, run by a worker without saving anything.

The sample is either JSON typed by the person (the task's input fields) or a past run's values for
the node (what its bindings read in one frame: ``run_overlay.node_detail``). The trial document is
checked by the analyzer before it is queued, so a sample of the wrong type is refused at once, naming
the field; the worker then runs it under the step limits (``designer.runs.trial``).
"""

from __future__ import annotations

import copy
from typing import Any

from django.core.exceptions import ValidationError
from django.tasks import TaskResult
from django.tasks.exceptions import TaskResultDoesNotExist, TaskResultMismatch

from designer.access.permissions import require_workflow_role
from designer.core.errors import BadRequest, ObjectNotFound
from designer.models import Run, Workflow
from designer.runs.dispatch import task_named
from designer.runs.overlay import node_as_ran, node_detail
from designer.workflows.analysis import analyze_document, parse_document


def _task_node(workflow: Workflow, node_id: object) -> dict[str, Any]:
    node = next((n for n in workflow.document.get("nodes", []) if n.get("id") == node_id), None)
    if node is None:
        raise ObjectNotFound(f"the draft has no node {node_id!r}", node=node_id)
    if node.get("kind") != "task":
        raise BadRequest(f"node {node_id!r} is a {node.get('kind')} node; only task nodes can be tried alone",
                         node=node_id)
    return node


def sample_from_run(*, workflow: Workflow, run: Run, node_id: str, frame_id: str | None = None) -> dict[str, Any]:
    """The values ``node_id``'s bindings read in one frame of a past run (default: its latest visit)."""
    if run.workflow_id != workflow.pk:
        raise ObjectNotFound("this run belongs to another workflow", run=run.pk)
    ran = node_as_ran(run, node_id)
    node = _task_node(workflow, node_id)
    detail = node_detail(run, list(run.events.filter(node_id=node_id).order_by("seq")), ran or node, frame_id)
    if detail["chosen"] is None:
        raise BadRequest(f"node {node_id!r} did not run in run #{run.pk}; pick another run or type the input",
                         node=node_id, run=run.pk)
    return {row["target"]: row["value"] for row in detail["bindings"] if row["found"]}


def trial_document(workflow: Workflow, node_id: str, sample: object) -> dict[str, Any]:
    """The one-node workflow that runs ``node_id`` as drafted on ``sample`` ({input field: value})."""
    node = copy.deepcopy(_task_node(workflow, node_id))
    if not isinstance(sample, dict):
        raise BadRequest("the sample input is a JSON object of the task's input fields, e.g. {\"amount\": 3}",
                         field="sample")
    node["input"] = [{"target": target, "value": value} for target, value in sample.items()]
    node["output"] = [{"source": ".", "target": "result"}]
    document: dict[str, Any] = {
        "id": f"{workflow.slug}-try-{node_id}"[:200], "name": f"try {node_id}", "nodes": [node],
        "state_schema": {"type": "object"}, "outputs": [{"target": "result", "path": "state.result"}],
    }
    if workflow.document.get("step_timeout_seconds") is not None:
        document["step_timeout_seconds"] = workflow.document["step_timeout_seconds"]
    return document


def start_trial(*, actor: Any, workflow: Workflow, node_id: str, sample: object) -> TaskResult:
    """Queue a trial of ``node_id`` on ``sample`` (runner or above: it runs the node's task). Raises
    ``runtime.WorkflowValidationError`` naming the field when the sample does not fit the task."""
    require_workflow_role(actor, workflow, "runner")
    document = trial_document(workflow, node_id, sample)
    analyze_document(parse_document(document), team=workflow.team_id).raise_for_errors()
    return task_named("try_node").enqueue(workflow.pk, node_id, document)


def trial_result(*, actor: Any, workflow: Workflow, result_id: str) -> TaskResult:
    """A queued trial of this workflow, by its task result id."""
    require_workflow_role(actor, workflow, "runner")
    try:
        result = task_named("try_node").get_result(result_id)
    except (TaskResultDoesNotExist, TaskResultMismatch, ValueError, ValidationError):
        raise ObjectNotFound("no such trial", trial=result_id) from None
    if not result.args or result.args[0] != workflow.pk:
        raise ObjectNotFound("no such trial", trial=result_id)
    return result

""""Try this node" in the inspector: run one task node on sample data and see its result and route.

The form (loaded into the inspector of a task node) takes the sample as JSON, or names a past run
whose values for the node are used. Starting a trial queues it (``services.trials``); the answer
polls until the worker has run it. Nothing is saved and no run is started.
"""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpResponse
from django.template.response import TemplateResponse

from designer.access.permissions import has_role, require_workflow_role
from designer.core.errors import DesignerError
from designer.core.htmx import HtmxHttpRequest
from designer.core.json_text import pretty_json
from designer.core.pages import error_message, signed_in
from designer.core.untrusted import form_json
from designer.models import Run
from designer.models import Workflow as WorkflowModel
from designer.runs import executions as node_executions
from designer.runs import selectors as run_selectors
from designer.runs import trials
from designer.runs.selectors import runs_for
from designer.workflows import selectors as workflow_selectors
from runtime import WorkflowError

TEMPLATE = "editor/_try_node.html"
RECENT_RUNS = 10


def _workflow(request: HtmxHttpRequest, workflow_id: int) -> tuple[WorkflowModel, str]:
    workflow = workflow_selectors.get_workflow(user=request.user, workflow_id=workflow_id)
    return workflow, require_workflow_role(request.user, workflow, "viewer")


def _form_context(request: HtmxHttpRequest, workflow: WorkflowModel, role: str, node_id: str,
                  **extra: Any) -> dict[str, Any]:
    node: dict[str, Any] = next((n for n in workflow.document.get("nodes", []) if n.get("id") == node_id), {})
    literals = {b["target"]: b["value"] for b in node.get("input", []) or [] if "value" in b and "target" in b}
    runs = list(runs_for(user=request.user).filter(workflow=workflow.pk, events__node_id=node_id)
                .distinct().order_by("-created_at", "-pk")[:RECENT_RUNS])
    return {"workflow": workflow, "node_id": node_id, "can_try": has_role(role, "runner"), "runs": runs,
            "sample": pretty_json(literals), **extra}


@signed_in("GET")
def form(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    workflow, role = _workflow(request, workflow_id)
    node_id = request.GET.get("node", "")
    return TemplateResponse(request, f"{TEMPLATE}#try-form", _form_context(request, workflow, role, node_id))


def _sample(request: HtmxHttpRequest, workflow: WorkflowModel, node_id: str) -> object:
    run_id = request.POST.get("run")
    if run_id:
        run: Run = run_selectors.get_run(user=request.user, run_id=run_id)
        return trials.sample_from_run(workflow=workflow, run=run, node_id=node_id,
                                      frame_id=request.POST.get("frame") or None)
    return form_json(request.POST.get("sample", ""), field="sample", what="the sample input", empty={})


@signed_in("GET")
def executions(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    """The executions of the node in the past run chosen in the form (one per item of each enclosing loop), to
    pick which one's values the trial uses: a run of a foreach ran the node once per item, and the values differ."""
    workflow, _role = _workflow(request, workflow_id)
    node_id, run_id = request.GET.get("node", ""), request.GET.get("run", "")
    choices: list[tuple[str, str]] = []
    if run_id:
        run: Run = run_selectors.get_run(user=request.user, run_id=run_id)
        document = run.document if isinstance(run.document, dict) else workflow.document
        nodes = {str(n.get("id")): n for n in document.get("nodes", []) or [] if isinstance(n, dict)}
        node = nodes.get(node_id)
        if node is not None:
            found = node_executions.executions(run.events.filter(node_id=node_id).order_by("seq"), node,
                                               scope_id="root", run_input=run.input, run_finished=run.is_finished)
            for execution in reversed(found):
                where = " › ".join(f"{nodes.get(p.loop, {}).get('name') or p.loop} item {p.index + 1}{p.item}"
                                   for p in execution.positions) or "the only run"
                choices.append((execution.frame_id, f"{where} · {execution.status}"))
    return TemplateResponse(request, f"{TEMPLATE}#try-executions", {"choices": choices, "run_id": run_id})


@signed_in("POST")
def start(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    workflow, role = _workflow(request, workflow_id)
    node_id = request.POST.get("node", "")
    require_workflow_role(request.user, workflow, "runner")
    try:
        sample = _sample(request, workflow, node_id)
        result = trials.start_trial(actor=request.user, workflow=workflow, node_id=node_id, sample=sample)
    except (DesignerError, WorkflowError) as exc:
        if getattr(exc, "status", 400) in (403, 404):
            raise
        return TemplateResponse(request, f"{TEMPLATE}#try-outcome", {"error": error_message(exc), "node_id": node_id})
    return TemplateResponse(request, f"{TEMPLATE}#try-outcome",
                            {"workflow": workflow, "node_id": node_id, "result_id": result.id, "pending": True,
                             "sample": json.dumps(sample, ensure_ascii=False, default=str)})


@signed_in("GET")
def outcome(request: HtmxHttpRequest, workflow_id: int, result_id: str) -> HttpResponse:
    workflow, _ = _workflow(request, workflow_id)
    result = trials.trial_result(actor=request.user, workflow=workflow, result_id=result_id)
    context: dict[str, Any] = {"workflow": workflow, "node_id": result.args[1], "result_id": result.id}
    if result.status == "SUCCESSFUL":
        answer = result.return_value
        context["answer"] = answer
        context["pretty"] = pretty_json(answer.get("result"))
    elif result.status == "FAILED":
        context["error"] = "the worker could not run the trial: " + (
            result.errors[-1].exception_class_path if result.errors else "unknown error")
    else:
        context["pending"] = True
    return TemplateResponse(request, f"{TEMPLATE}#try-outcome", context)

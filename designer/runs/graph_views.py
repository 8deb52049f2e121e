"""The run page's graph: the run's own version drawn read-only, each node in its state, one runtime scope at a
time (the root workflow, or one subgraph call's child workflow), as JSON for the canvas island.

Node states and loop counts are the editor's run overlay (``designer.runs.overlay``), computed for the scope
shown; this module only picks the scope, finds its document (the run's own, or the child version the run
pinned) and says how to get back up (the breadcrumb).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse, JsonResponse
from django.urls import NoReverseMatch, reverse

from designer.core.errors import ObjectNotFound
from designer.core.htmx import HtmxHttpRequest
from designer.core.pages import signed_in
from designer.models import Run, RunEvent
from designer.runs import overlay as run_overlay
from designer.runs import selectors as run_selectors
from designer.runs.checkpoints import Inspection, load_state
from designer.runs.display import MAX_EVENTS
from designer.runs.scopes import scope_document
from designer.workflows.analysis import analyze_document, parse_document, summary

#: Stands for the node id in the executions URL the canvas fills in per node.
NODE_SLOT = "__node__"


def _executions_url(run: Run) -> str:
    try:
        return reverse("run-node-executions", args=[run.pk, NODE_SLOT])
    except NoReverseMatch:  # the executions panel's URL, by the run page's contract, before its view lands
        return f"{reverse('run-detail', args=[run.pk])}nodes/{NODE_SLOT}/executions/"


def scope_graph(run: Run, events: list[RunEvent], key: str, *, states_only: bool = False,
                inspection: Inspection | None = None) -> dict[str, Any]:
    """One scope of the run drawn: its document and analysis (unless ``states_only``), node states, loop counts,
    the subgraph calls made from it and the breadcrumb back to the root."""
    calls = run_overlay.subgraph_calls(events)
    document, scope_id, title, crumbs = scope_document(run, calls, key)
    overlay = run_overlay.overlay(run, events, scope_id=scope_id, inspection=inspection)
    made_here: dict[str, list[dict[str, Any]]] = {}
    here = [call for call in calls if (call.caller_scope or run_overlay.ROOT_SCOPE) == scope_id]
    states = run_overlay.call_states(events, here, run.status)
    for call in here:
        made_here.setdefault(call.caller_node, []).append({"key": call.key, "item": call.item,
                                                           "state": states[call.key]})
    out: dict[str, Any] = {
        **overlay,
        "scope": {"key": key, "title": title, "workflow": document.get("id")},
        "crumbs": crumbs,
        "calls": made_here,
        "executions_url": _executions_url(run),
        "node_slot": NODE_SLOT,
    }
    if not states_only:
        analysis = summary(analyze_document(parse_document(document), team=run.team_id))
        out["document"] = document
        out["analysis"] = {name: analysis[name] for name in ("labels", "control_regions", "reachable")}
    return out


@signed_in("GET")
def run_graph(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    """``?scope=<child scope's root frame id>`` (default: the root workflow); ``?states=1``: states only (the
    live page's polls, which already have the drawing)."""
    run = run_selectors.get_run(user=request.user, run_id=run_id)
    inspection = load_state(run)  # read once: for the damage check here and the overlay's loop counts
    damage = inspection.error
    if damage:
        return JsonResponse({"code": "runstate.corrupt", "message": f"run #{run.pk} is damaged: {damage}",
                             "run": {"id": run.pk, "status": run.status}}, status=409)
    events = list(run.events.order_by("seq")[:MAX_EVENTS])
    try:
        graph = scope_graph(run, events, request.GET.get("scope", "").strip(),
                            states_only=request.GET.get("states") == "1", inspection=inspection)
    except ObjectNotFound as exc:
        # The run is the caller's: say which scope is unknown, so the canvas can show why it stays where it is.
        return JsonResponse({"code": exc.code, "message": exc.message}, status=404)
    return JsonResponse(graph)

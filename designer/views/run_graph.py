"""The run page's graph: the run's own version drawn read-only, each node in its state, one runtime scope at a
time (the root workflow, or one subgraph call's child workflow), as JSON for the canvas island.

Node states and loop counts are the editor's run overlay (``designer.run_overlay``), computed for the scope
shown; this module only picks the scope, finds its document (the run's own, or the child version the run
pinned) and says how to get back up (the breadcrumb).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import HttpResponse, JsonResponse
from django.urls import NoReverseMatch, reverse

from designer import run_overlay, selectors
from designer.analysis import analyze_document, dump_document, parse_document, summary
from designer.errors import ObjectNotFound
from designer.models import Run, RunEvent
from designer.resolvers import TeamVersionResolver
from designer.runs.checkpoints import damage_of
from designer.runs.pinning import PinnedResolver
from designer.views.htmx import HtmxHttpRequest
from designer.views.pages import signed_in
from designer.views.run_display import MAX_EVENTS
from runtime import SubgraphResolutionError, WorkflowRef

#: Stands for the node id in the executions URL the canvas fills in per node.
NODE_SLOT = "__node__"


def _node(document: Mapping[str, Any], node_id: str) -> Mapping[str, Any] | None:
    return next((n for n in document.get("nodes", []) or [] if isinstance(n, Mapping) and n.get("id") == node_id),
                None)


def _name(document: Mapping[str, Any], node_id: str) -> str:
    node = _node(document, node_id)
    return str((node or {}).get("name") or node_id)


def _chain(calls: list[run_overlay.Call], key: str) -> list[run_overlay.Call]:
    """The calls from the root down to the one whose child scope is ``key`` (empty for the root)."""
    by_scope = {call.scope_id: call for call in calls}
    call = next((c for c in calls if c.key == key), None)
    if call is None:
        raise ObjectNotFound(f"this run opened no subgraph scope {key!r}; open one from its subgraph node",
                             scope=key)
    chain = [call]
    while chain[-1].caller_scope in by_scope and len(chain) < 64:
        chain.append(by_scope[chain[-1].caller_scope])
    return list(reversed(chain))


def _child_document(run: Run, document: Mapping[str, Any], call: run_overlay.Call) -> dict[str, Any]:
    """The child workflow a call ran: the version its subgraph node names, or the one the run pinned."""
    node = _node(document, call.caller_node) or {}
    named = node.get("workflow")
    ref: Mapping[str, Any] = named if isinstance(named, Mapping) else {"id": call.workflow}
    version = ref.get("version")
    resolver = PinnedResolver(TeamVersionResolver(run.team_id), run.subgraph_versions
                              if isinstance(run.subgraph_versions, dict) else None)
    try:
        pinned = WorkflowRef(id=str(ref.get("id")), version=version if isinstance(version, int) else None)
        return dump_document(resolver.resolve(pinned))
    except SubgraphResolutionError as exc:
        raise ObjectNotFound(f"the child workflow {call.workflow!r} this call ran is no longer published",
                             scope=call.key) from exc


def _executions_url(run: Run) -> str:
    try:
        return reverse("run-node-executions", args=[run.pk, NODE_SLOT])
    except NoReverseMatch:  # the executions panel's URL, by the run page's contract, before its view lands
        return f"{reverse('run-detail', args=[run.pk])}nodes/{NODE_SLOT}/executions/"


def scope_graph(run: Run, events: list[RunEvent], key: str, *, states_only: bool = False) -> dict[str, Any]:
    """One scope of the run drawn: its document and analysis (unless ``states_only``), node states, loop counts,
    the subgraph calls made from it and the breadcrumb back to the root."""
    calls = run_overlay.subgraph_calls(events)
    document: dict[str, Any] = run.document if isinstance(run.document, dict) else {}
    title = run.workflow.name
    crumbs = [{"key": "", "title": title}]
    scope_id = run_overlay.ROOT_SCOPE
    if key:
        for call in _chain(calls, key):
            caller = _name(document, call.caller_node)
            document = _child_document(run, document, call)
            title = str(document.get("name") or call.workflow)
            item = "" if call.item == "the only run" else f" · {call.item}"
            crumbs.append({"key": call.key, "title": f"{caller} → {title}{item}"})
            scope_id = call.scope_id
    overlay = run_overlay.overlay(run, events, scope_id=scope_id)
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
    run = selectors.get_run(user=request.user, run_id=run_id)
    damage = damage_of(run)
    if damage:
        return JsonResponse({"code": "runstate.corrupt", "message": f"run #{run.pk} is damaged: {damage}",
                             "run": {"id": run.pk, "status": run.status}}, status=409)
    events = list(run.events.order_by("seq")[:MAX_EVENTS])
    try:
        graph = scope_graph(run, events, request.GET.get("scope", "").strip(),
                            states_only=request.GET.get("states") == "1")
    except ObjectNotFound as exc:
        # The run is the caller's: say which scope is unknown, so the canvas can show why it stays where it is.
        return JsonResponse({"code": exc.code, "message": exc.message}, status=404)
    return JsonResponse(graph)

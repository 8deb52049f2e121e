"""Turning stored JSON into runtime documents, and asking the runtime about them.

The designer owns no workflow semantics: parsing is the runtime's pydantic
model, analysis is ``runtime.analyze`` with the site's task catalogue and a
resolver over the team's published versions. This module only adds the
designer's limits and error shapes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from django.db.models import Max
from pydantic import ValidationError

from designer.conf import trellis
from designer.core.errors import DocumentInvalid, DocumentTooLarge, ObjectNotFound
from designer.models import Team, WorkflowVersion
from designer.secrets.selectors import secret_names
from designer.workflows import catalog
from designer.workflows.resolvers import TeamVersionResolver
from runtime import Analysis, Workflow, analyze
from runtime.analysis import retry_delay_diagnostics, step_timeout_diagnostics
from runtime.secrets import secret_diagnostics


def max_nodes() -> int:
    return trellis.MAX_DOCUMENT_NODES


def _loc(loc: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in loc) or "(document)"


def parse_document(data: object) -> Workflow:
    """A runtime ``Workflow`` from JSON data, or ``DocumentInvalid`` listing readable errors."""
    if isinstance(data, Workflow):
        return data
    if not isinstance(data, dict):
        raise DocumentInvalid(
            f"a workflow document is a JSON object, got {type(data).__name__}",
            errors=[{"loc": "(document)", "msg": "expected a JSON object"}],
        )
    nodes = data.get("nodes")
    limit = max_nodes()
    if isinstance(nodes, list) and len(nodes) > limit:
        raise DocumentTooLarge(
            f"the document has {len(nodes)} nodes; at most {limit} are allowed",
            nodes=len(nodes), limit=limit,
        )
    try:
        return Workflow.model_validate(data)
    except ValidationError as exc:
        errors = [
            {"loc": _loc(tuple(error["loc"])), "msg": error["msg"]}
            for error in exc.errors(include_url=False, include_input=False, include_context=False)
        ]
        shown = "; ".join(f"{e['loc']}: {e['msg']}" for e in errors[:5])
        more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
        raise DocumentInvalid(f"not a valid workflow document: {shown}{more}", errors=errors) from None


def dump_document(workflow: Workflow) -> dict[str, Any]:
    """The JSON form stored in the database and returned by the API."""
    return workflow.model_dump(mode="json")


def analyze_document(workflow: Workflow, *, team: Team | int) -> Analysis:
    """``runtime.analyze`` with the site's catalogue and this team's published versions, plus this site's
    limits on the document (``retry.delay_too_long`` over ``TRELLIS_RUN_MAX_RETRY_DELAY_SECONDS``, the warning
    ``step.timeout_capped`` for a timeout over ``TRELLIS_STEP_TIMEOUT_SECONDS``, the workers' cap) and
    ``binding.unknown_secret`` for a secret the team does not have."""
    analysis = analyze(workflow, registry=catalog.registry(), workflows=TeamVersionResolver(team))
    if any(binding.secret is not None for node in workflow.nodes for binding in getattr(node, "input", ()) or ()):
        analysis = analysis.extended(secret_diagnostics(workflow, secret_names(team_id=getattr(team, "pk", team))))
    limit = trellis.RUN_MAX_RETRY_DELAY_SECONDS  # what runs/waiting.py's max_retry_delay hands the engine
    if limit is not None:
        analysis = analysis.extended(retry_delay_diagnostics(workflow, limit))
    cap = trellis.STEP_TIMEOUT_SECONDS
    return analysis.extended(step_timeout_diagnostics(workflow, cap)) if cap is not None else analysis


# --- one analysis per saved revision ------------------------------------------------------
#
# The editor's panels (inspector, pickers, diagnostics) each ask about the same saved draft
# right after every edit. A saved revision never changes, so its analysis is kept, keyed by
# the workflow, its revision and save time (any write, even one that bypasses the revision,
# bumps ``updated_at``) and the newest published version of its team (a subgraph's child is
# resolved among those) and the team's secret names (a binding's secret is checked against them).
# Process-local and bounded: a miss only costs a re-analysis.

_CACHE_SIZE = 64
_cache: OrderedDict[tuple[int, int, str, int, tuple[str, ...]], Analysis] = OrderedDict()
_cache_lock = threading.Lock()
_cache_counts = {"hits": 0, "misses": 0}


def _cache_key(workflow: Any) -> tuple[int, int, str, int, tuple[str, ...]]:
    newest = WorkflowVersion.objects.filter(workflow__team_id=workflow.team_id).aggregate(newest=Max("pk"))["newest"]
    names = tuple(sorted(secret_names(team_id=workflow.team_id)))
    return (workflow.pk, workflow.revision, str(workflow.updated_at), newest or 0, names)


def remember_analysis(workflow: Any, analysis: Analysis) -> None:
    """Keep the analysis of the draft exactly as stored at ``workflow.revision``."""
    key = _cache_key(workflow)
    with _cache_lock:
        _cache[key] = analysis
        _cache.move_to_end(key)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)


def analysis_for(workflow: Any) -> Analysis:
    """The analysis of ``workflow``'s stored draft, computed once per saved revision."""
    key = _cache_key(workflow)
    with _cache_lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
            _cache_counts["hits"] += 1
            return found
        _cache_counts["misses"] += 1
    analysis = analyze_document(parse_document(workflow.document), team=workflow.team_id)
    with _cache_lock:
        _cache[key] = analysis
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return analysis


def analysis_cache_counts() -> dict[str, int]:
    """Hits and misses so far (tests check that panels reuse a saved revision's analysis)."""
    with _cache_lock:
        return dict(_cache_counts)


def diagnostics_json(analysis: Any) -> list[dict[str, Any]]:
    return [diagnostic.to_dict() for diagnostic in analysis.diagnostics]


def summary(analysis: Any) -> dict[str, Any]:
    """Whole-document facts the canvas needs in one call: diagnostics, reachability,
    each reachable node's foreach owner stack and the labels each node can emit."""
    reachable = [node.id for node in analysis.workflow.nodes if node.id in analysis.reachable]
    return {
        "ok": analysis.ok,
        "diagnostics": diagnostics_json(analysis),
        "reachable": reachable,
        "control_regions": {node_id: list(analysis.control_region(node_id)) for node_id in reachable},
        "labels": {node.id: list(analysis.labels(node.id)) for node in analysis.workflow.nodes},
    }


def _option_json(option: Any, compatibility: str | None) -> dict[str, Any]:
    return {
        "path": option.path_str,
        "type": option.type,
        "schema": option.schema,
        "title": option.title,
        "description": option.description,
        "group": option.group,
        "foreach_id": option.foreach_id,
        "compatibility": compatibility,
        "last_item_wins": option.last_item_wins or None,
    }


def node_report(analysis: Any, node_id: str, *, field: str | None = None, want: dict[str, Any] | None = None,
                show_all: bool = False) -> dict[str, Any]:
    """Everything the inspector shows for one node, all of it answered by the runtime.

    The wanted schema comes from ``want`` if given, else from the runtime's
    ``field_schema(node_id, field)``. Options are filtered by it unless
    ``show_all``; then every option is listed and incompatible ones say so.
    """
    if node_id not in {node.id for node in analysis.workflow.nodes}:
        raise ObjectNotFound(f"the workflow has no node {node_id!r}", node_id=node_id)
    report: dict[str, Any] = {
        "node_id": node_id,
        "reachable": node_id in analysis.reachable,
        "control_region": [],
        "context_schema": None,
        "field": field,
        "want": want,
        "path_options": [],
        "diagnostics": [d.to_dict() for d in analysis.diagnostics if d.node_id == node_id],
    }
    if not report["reachable"]:
        return report
    if want is None and field:
        want = analysis.field_schema(node_id, field)
        report["want"] = want
    report["control_region"] = list(analysis.control_region(node_id))
    report["context_schema"] = analysis.context_schema(node_id)
    if want is None:
        report["path_options"] = [_option_json(o, None) for o in analysis.path_options(node_id)]
    elif not show_all:
        report["path_options"] = [_option_json(o, o.compatibility) for o in analysis.path_options(node_id, want)]
    else:
        fitting = {o.path_str: o.compatibility for o in analysis.path_options(node_id, want)}
        report["path_options"] = [
            _option_json(o, fitting.get(o.path_str, "incompatible")) for o in analysis.path_options(node_id)
        ]
    return report

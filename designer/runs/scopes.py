"""The scopes of a run: the root workflow, or one subgraph call's child workflow, named by the call's root frame id
(how pages and the API name a scope), with the document that scope ran and the way back up to the root.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from designer.core.errors import ObjectNotFound
from designer.models import Run
from designer.runs import overlay as run_overlay
from designer.runs.pinning import PinnedResolver
from designer.workflows.analysis import dump_document
from designer.workflows.resolvers import TeamVersionResolver
from runtime.document import WorkflowRef
from runtime.errors import SubgraphResolutionError


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


def scope_document(run: Run, calls: list[run_overlay.Call], key: str
                   ) -> tuple[dict[str, Any], str, str, list[dict[str, str]]]:
    """The scope ``key`` names (empty: the root workflow; else a subgraph call's root frame id): its document, its
    runtime scope id, its title and the breadcrumb down to it. ``ObjectNotFound`` for a scope the run never
    opened or whose child version is gone."""
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
    return document, scope_id, title, crumbs



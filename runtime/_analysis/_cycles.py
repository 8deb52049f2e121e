"""``route.no_exit``: route cycles that, once entered, nothing ever leaves.

The route graph's strongly connected components that hold a cycle are judged
as a whole. A component has a way out when any of its members

* has a route to a node outside it (``error`` routes included: a failure
  handled elsewhere ends the loop),
* can emit a label with no route (the lineage ends there; a foreach whose
  ``done`` has no route is one of these),
* is an interrupt (every round waits for a person, who can stop answering),
* is a task the analyzer cannot look up (its labels are unknown, so it may
  emit one that is not routed: not judged, to avoid a false alarm).

A component with none of these runs until the engine's superstep cap. The
diagnostic sits on its first node in document order and lists every node of
the component in ``data["nodes"]``, so the editor can offer a fix.
"""

from __future__ import annotations

from collections.abc import Mapping

from runtime._analysis._labels import LabelSet
from runtime._diagnostics import Diagnostic
from runtime._document import InterruptNode, Workflow
from runtime._graphs import strongly_connected


def no_exit_diagnostics(workflow: Workflow, nodes: Mapping[str, object], routes: Mapping[str, Mapping[str, str]],
                        labels: Mapping[str, LabelSet], reachable: Mapping[str, object]) -> list[Diagnostic]:
    edges = {source: [t for t in targets.values() if t in nodes] for source, targets in routes.items()}
    order = {node.id: index for index, node in enumerate(workflow.nodes)}
    out: list[Diagnostic] = []
    for component in strongly_connected(list(nodes), edges):
        members = set(component)
        looped = len(component) > 1 or component[0] in edges.get(component[0], ())
        if not looped or not members & set(reachable):
            continue
        if any(_leaves(node_id, members, nodes, routes, labels) for node_id in component):
            continue
        ordered = sorted(component, key=lambda node_id: order.get(node_id, len(order)))
        shown = ", ".join(repr(node_id) for node_id in ordered)
        one = len(ordered) == 1
        out.append(Diagnostic(
            "route.no_exit", "error", ordered[0], "routes",
            (f"node {shown} routes only back to itself" if one else
             f"nodes {shown} route only to each other") +
            ": no route leaves the cycle, no label ends it and no interrupt waits in it, so a run that gets "
            "there never finishes (it fails at the step limit)",
            "add a way out: a route from one of these nodes to a node outside the cycle (e.g. a branch case "
            "or an 'error' route), a label left unrouted so the run can end, or an interrupt inside the cycle",
            data={"nodes": ordered}))
    return out


def _leaves(node_id: str, members: set[str], nodes: Mapping[str, object], routes: Mapping[str, Mapping[str, str]],
            labels: Mapping[str, LabelSet]) -> bool:
    node = nodes[node_id]
    if isinstance(node, InterruptNode):
        return True
    label_set = labels.get(node_id)
    if label_set is None or not label_set.known:
        return True
    routed = routes.get(node_id, {})
    if any(target not in members for target in routed.values()):
        return True
    return any(label not in routed for label in label_set.required)

"""One-click fixes: the operations that resolve a diagnostic when the fix is clear."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from designer.workflows.operations.registry import Op


def fix_ops(diagnostic: Mapping[str, Any], document: Mapping[str, Any],
            regions: Mapping[str, Sequence[str]]) -> list[Op]:
    """The operations that resolve ``diagnostic`` when the fix is clear, else ``[]``.

    ``regions`` maps each reachable node to its foreach owners, outermost first
    (the analyzer's control regions). A body node whose label has no route gets
    the route back to its innermost loop; that includes an inner loop's
    ``done``, which is offered back to its outer loop.
    """
    code, node_id, where = diagnostic.get("code"), diagnostic.get("node_id"), diagnostic.get("field") or ""
    if not isinstance(node_id, str) or not any(n.get("id") == node_id for n in document.get("nodes", [])):
        return []
    if code == "region.no_return" and where.startswith("routes."):
        label = where[len("routes."):]
        owners = regions.get(node_id) or ()
        if label != "loop" and owners:
            return [{"op": "connect", "source": node_id, "label": label, "target": owners[-1]}]
    if code == "route.no_exit":
        # A cycle nothing leaves: leave the route that closes it (back to its first node) unrouted,
        # so the run ends there. An unrouted "error" ends nothing (failures are optional labels), so
        # a normal route is chosen; the last in the document is the one most recently drawn.
        members = (diagnostic.get("data") or {}).get("nodes") or [node_id]
        closing = [r for r in document.get("routes", [])
                   if r.get("target") == members[0] and r.get("source") in members]
        normal = [r for r in closing if r.get("label") != "error"]
        if normal:
            route = normal[-1]
            return [{"op": "disconnect", "source": route["source"], "label": route["label"]}]
    return []

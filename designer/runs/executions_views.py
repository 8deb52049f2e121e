"""A node's executions on the run page: the panel the graph opens when a node is clicked (``#run-node-panel``).

``GET /runs/<id>/nodes/<node>/executions/``: ``scope`` (a subgraph call's root frame id; default the root
workflow), one ``item.<loop>=<index>`` per enclosing loop (0-based, as the trace counts), ``only=failed|slow``,
``page``. The same data as JSON is ``GET /api/runs/<id>/nodes/<node>/executions/`` (designer/runs/api.py).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.template.response import TemplateResponse

from designer.core.htmx import HtmxHttpRequest
from designer.core.pages import signed_in
from designer.runs import executions as node_executions
from designer.runs import selectors as run_selectors


def _value(value: Any) -> dict[str, Any]:
    text, cut = node_executions.short(value)
    return {"text": text, "cut": cut, "full": node_executions.as_text(value) if cut else ""}


@signed_in("GET")
def run_node_executions(request: HtmxHttpRequest, run_id: int, node_id: str) -> HttpResponse:
    run = run_selectors.get_run(user=request.user, run_id=run_id)
    found = node_executions.read(run, node_id, request.GET)
    rows = []
    for execution in found.page.object_list:
        where = " › ".join(f"{found.loop_names.get(p.loop, p.loop)} item {p.index + 1}{p.item}"
                           for p in execution.positions) or "the only run"
        rows.append({
            "execution": execution, "where": where,
            "inputs": [{"row": row, "value": _value(row.value)} for row in execution.inputs],
            "output": _value(execution.output) if execution.status == "completed" else None,
            "writes": [{**write, "shown": _value(write["value"])} for write in execution.writes],
            "error": execution.error,
        })
    pickers = [{"loop": p.loop, "name": found.loop_names.get(p.loop, p.loop), "options": p.options,
                "chosen": p.chosen} for p in found.pickers]
    return TemplateResponse(request, "runs/node_executions.html", {
        "run": run, "node": found.node, "node_name": found.node.get("name") or found.node.get("id"),
        "found": found, "rows": rows, "pickers": pickers,
    })

"""The demo workflows (``manage.py load_demo``) as a person first sees them in the editor: every node
drawn, none overlapping, no diagnostics, no script errors. Screenshots go to test-artifacts/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from demo.data import TEAM_SLUG, load_demo
from designer.access import teams as team_services
from designer.models import Membership, Team, Workflow
from designer.workflows import services as workflow_services
from tests.browser.browser_support import overlap
from tests.browser.editor_page import EditorPage

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DEMO_SLUGS = ("customer-orders", "process-order", "orders-via-subgraph", "spending-approval")


def test_demo_workflows_open_laid_out_and_clean(
    logged_in_page: Page, live_server: Any, user: Any, artifacts_dir: Path
) -> None:
    load_demo()
    team = Team.objects.get(slug=TEAM_SLUG)
    Membership.objects.create(team=team, user=user, role="editor")
    assert sorted(Workflow.objects.filter(team=team).values_list("slug", flat=True)) == sorted(DEMO_SLUGS)
    for slug in DEMO_SLUGS:
        workflow = Workflow.objects.get(team=team, slug=slug)
        editor = EditorPage(logged_in_page, live_server.url, workflow).open()
        ids = [node["id"] for node in workflow.document["nodes"]]
        expect(editor.page.locator(".react-flow__node")).to_have_count(len(ids))
        expect(editor.diagnostics.get_by_test_id("error-count")).to_have_text("0 errors")
        boxes = {node_id: editor.node(node_id).bounding_box() for node_id in ids}
        for i, first in enumerate(ids):
            for second in ids[i + 1:]:
                a, b = boxes[first], boxes[second]
                assert a and b and not overlap(a, b), (slug, first, second)
        # After the initial fit every node and loop frame is inside the canvas, none under the toolbar,
        # the zoom controls or the minimap; a graph too big for that at a legible zoom shows its start
        # that way and the minimap the rest (EditorPage.wait_fitted).
        editor.wait_fitted()
        editor.page.screenshot(path=artifacts_dir / f"editor-demo-{slug}.png")
        assert editor.errors == [], slug
        assert editor.revision() == workflow.revision  # looking stores nothing


def test_a_tall_graph_is_fitted_with_its_loop_frame_clear_of_the_canvas_tools(
    logged_in_page: Page, live_server: Any, user: Any, artifacts_dir: Path
) -> None:
    """A loop body that fans out into many branch cases is taller than the canvas is high: the fit is
    decided by the height, where the frame's label and the back-edges lie beyond the nodes."""
    team = team_services.create_team(actor=user, name="Acme")
    cases = [f"case_{i}" for i in range(6)]
    workflow = workflow_services.import_workflow(actor=user, team=team, document={
        "id": "fan-out",
        "input_schema": {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "string"}}},
                         "required": ["items"]},
        "nodes": [
            {"id": "items", "kind": "foreach", "over": "input.items"},
            {"id": "which", "kind": "branch", "path": "context.foreach.items.item",
             "cases": [{"label": case, "op": "equals", "value": case} for case in cases]},
            *({"id": f"on_{case}", "kind": "task", "task": "set_value"} for case in [*cases, "default"]),
        ],
        "routes": [
            {"source": "items", "label": "loop", "target": "which"},
            *({"source": "which", "label": case, "target": f"on_{case}"} for case in [*cases, "default"]),
            *({"source": f"on_{case}", "label": "ok", "target": "items"} for case in [*cases, "default"]),
        ],
    })
    editor = EditorPage(logged_in_page, live_server.url, workflow).open()
    expect(editor.diagnostics.locator(".diag-item")).to_have_count(0)
    editor.wait_fitted()
    editor.page.screenshot(path=artifacts_dir / "editor-tall-fan-out.png")
    assert editor.errors == []

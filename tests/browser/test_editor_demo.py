"""The demo workflows (``manage.py load_demo``) as a person first sees them in the editor: every node
drawn, none overlapping, no diagnostics, no script errors. Screenshots go to test-artifacts/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from designer.demo import TEAM_SLUG, load_demo
from designer.models import Membership, Team, Workflow
from tests.browser.editor_page import EditorPage

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DEMO_SLUGS = ("customer-orders", "process-order", "orders-via-subgraph", "spending-approval")


def _apart(a: dict[str, float], b: dict[str, float]) -> bool:
    return (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
            or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])


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
                assert a and b and _apart(a, b), (slug, first, second)
        # Every node is inside the canvas after the initial fit.
        pane = editor.page.locator(".react-flow__pane").bounding_box()
        assert pane
        for node_id, box in boxes.items():
            assert box and pane["x"] <= box["x"] and box["x"] + box["width"] <= pane["x"] + pane["width"], node_id
            assert pane["y"] <= box["y"] and box["y"] + box["height"] <= pane["y"] + pane["height"], node_id
        editor.page.screenshot(path=artifacts_dir / f"editor-demo-{slug}.png")
        assert editor.errors == [], slug
        assert editor.revision() == workflow.revision  # looking stores nothing

"""Versions in headless Chromium: publish with a note from the editor, compare two versions on the workflow's
page (the canvas colours each node, the list names each change), restore one into the draft and undo it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from designer.access import teams as team_services
from designer.models import Workflow
from designer.workflows import services as workflow_services
from tests.designer.conftest import simple_document

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def versioned(user: Any) -> Workflow:
    team = team_services.create_team(actor=user, name="Acme")
    workflow = workflow_services.create_workflow(actor=user, team=team, name="Orders", document=simple_document())
    workflow_services.publish_workflow(actor=user, workflow=workflow, note="the first one")
    document = copy.deepcopy(workflow.document)
    document["nodes"].append({"id": "audit", "kind": "task", "task": "assess_request",
                              "input": [{"target": "amount", "path": "input.amount"}], "output": []})
    document["routes"].append({"source": "record", "label": "approved", "target": "audit"})
    document["nodes"][1]["input"][0]["value"] = False
    workflow_services.save_document(actor=user, workflow=workflow, revision=workflow.revision, document=document)
    workflow.refresh_from_db()
    return workflow


def test_publish_with_a_note_compare_two_versions_and_restore(
    logged_in_page: Page, live_server: Any, versioned: Workflow, artifacts_dir: Path
) -> None:
    page, base = logged_in_page, live_server.url
    page.goto(f"{base}/workflows/{versioned.pk}/edit/")
    expect(page.locator("[data-editor-canvas][data-state='saved']")).to_have_count(1)
    page.get_by_label("Note for the published version").fill("adds an audit step")
    page.get_by_role("button", name="Publish", exact=True).click()
    expect(page.get_by_text("Published version 2")).to_be_visible()

    page.get_by_role("link", name="Versions & triggers").click()
    expect(page.locator("tr[data-version='2'] .version-note")).to_have_text("adds an audit step")
    expect(page.locator("tr[data-version='1'] .version-note")).to_have_text("the first one")
    page.locator("#compare-a").select_option("1")
    page.locator("#compare-b").select_option("2")
    page.get_by_role("button", name="Compare").click()

    expect(page.get_by_role("heading", name="Compare v1 with v2")).to_be_visible()
    canvas = page.locator("[data-diff-canvas]")
    expect(canvas.locator("[data-testid='diff-node']")).to_have_count(3)
    expect(canvas.locator("[data-node='audit']")).to_have_attribute("data-mark", "added")
    expect(canvas.locator("[data-node='record']")).to_have_attribute("data-mark", "changed")
    expect(canvas.locator("[data-node='assess']")).to_have_attribute("data-mark", "same")
    # the added node is drawn in the "added" colour, not just labelled
    border = canvas.locator("[data-node='audit']").evaluate("n => getComputedStyle(n).borderTopColor")
    assert border == "rgb(46, 125, 50)"
    changes = page.locator(".changes li")
    expect(changes).to_have_count(3)
    expect(page.locator("li[data-what='node'][data-change='added'][data-key='audit']")).to_be_visible()
    expect(page.locator("li[data-what='route'][data-change='added']")).to_contain_text("record --approved")
    changed = page.locator("li[data-what='input'][data-change='changed']")
    expect(changed).to_contain_text("approved of record")
    expect(changed.locator("td[data-before]")).to_have_text("true")
    expect(changed.locator("td[data-after]")).to_have_text("false")
    page.screenshot(path=artifacts_dir / "versions-compare.png", full_page=True)

    # Restore v1 into the draft, see the draft equal v1, then undo.
    page.goto(f"{base}/workflows/{versioned.pk}/")
    page.locator("tr[data-version='1']").get_by_role("link", name="Restore into draft…").click()
    expect(page.get_by_role("heading", name="Restore v1 into the draft")).to_be_visible()
    assert Workflow.objects.get(pk=versioned.pk).revision == versioned.revision  # the preview changes nothing
    page.get_by_role("button", name="Restore v1").click()
    expect(page.get_by_text("Version 1 is now the draft")).to_be_visible()
    assert Workflow.objects.get(pk=versioned.pk).document == versioned.versions.get(number=1).document
    page.get_by_role("link", name="Compare with draft").nth(1).click()  # v1's row (v2 is listed first)
    expect(page.locator("[data-no-changes]")).to_be_visible()
    page.goto(f"{base}/workflows/{versioned.pk}/")
    page.get_by_role("button", name="Undo restore").click()
    expect(page.get_by_text("Restore undone")).to_be_visible()
    assert Workflow.objects.get(pk=versioned.pk).document == versioned.versions.get(number=2).document


def test_try_a_node_from_the_inspector(logged_in_page: Page, live_server: Any, versioned: Workflow,
                                       background_worker: Any) -> None:
    """The trial runs in a real worker process (``background_worker``), never in this test's process."""
    from tests.browser.editor_page import EditorPage

    editor = EditorPage(logged_in_page, live_server.url, versioned).open()
    editor.select("assess")
    section = editor.inspector.locator("[data-try-node='assess']")
    section.get_by_label("Input (JSON, the task's fields)").fill('{"amount": 5000}')
    section.get_by_role("button", name="Try it").click()
    answer = section.locator("[data-try-status='completed']")
    expect(answer).to_be_visible(timeout=60_000)
    expect(answer.locator("[data-try-label]")).to_have_text("review")
    expect(answer.locator("[data-try-result]")).to_contain_text('"limit": 1000.0')
    assert Workflow.objects.get(pk=versioned.pk).revision == versioned.revision  # nothing saved


# --- two routes between one pair of nodes are drawn apart ------------------------------------------

#: In the page: sample a path every 4 px and count the samples within 2 px of the other path.
_SHARED = """([a, b]) => {
  const near = (p, path) => {
    const total = path.getTotalLength();
    for (let s = 0; s <= total; s += 1) {
      const q = path.getPointAtLength(s);
      if (Math.hypot(p.x - q.x, p.y - q.y) < 2) return true;
    }
    return false;
  };
  const shared = (one, other) => {
    const total = one.getTotalLength();
    let hits = 0, samples = 0;
    for (let s = 0; s <= total; s += 4) { samples += 1; if (near(one.getPointAtLength(s), other)) hits += 1; }
    return hits / samples;
  };
  return [shared(a, b), shared(b, a)];
}"""


def _apart(page: Page, first: Any, second: Any) -> list[float]:
    """The share of each path that runs on top of the other one."""
    paths = [locator.element_handle() for locator in (first, second)]
    return page.evaluate(_SHARED, paths)


def _overlap(one: dict[str, float] | None, other: dict[str, float] | None) -> bool:
    assert one and other
    return not (one["x"] + one["width"] <= other["x"] or other["x"] + other["width"] <= one["x"]
                or one["y"] + one["height"] <= other["y"] or other["y"] + other["height"] <= one["y"])


def test_two_routes_between_the_same_nodes_are_drawn_apart(
    logged_in_page: Page, live_server: Any, versioned: Workflow, artifacts_dir: Path
) -> None:
    """simple_document routes both ``auto`` and ``review`` of ``assess`` to ``record``: on the comparison canvas
    each is its own labelled curve, and the editor draws them in their own channels."""
    page, base = logged_in_page, live_server.url
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"{base}/workflows/{versioned.pk}/versions/compare/?a=1&b=draft")
    canvas = page.locator("[data-diff-canvas]")
    labels = {name: canvas.locator(f"[data-testid='diff-edge-label'][data-route='assess --{name}']")
              for name in ("auto", "review")}
    for name, label in labels.items():
        expect(label).to_have_text(name)
    assert not _overlap(labels["auto"].bounding_box(), labels["review"].bounding_box())
    paths = [canvas.locator(f".react-flow__edge[data-id='assess --{name}'] path.react-flow__edge-path")
             for name in ("auto", "review")]
    assert paths[0].get_attribute("d") != paths[1].get_attribute("d")
    shared = _apart(page, *paths)
    assert max(shared) < 0.25, shared  # they meet only at the two handles
    page.screenshot(path=artifacts_dir / "versions-compare-parallel-routes.png", full_page=True)

    from tests.browser.editor_page import EditorPage

    editor = EditorPage(page, base, versioned).open()
    edges = [editor.edge("assess", name).locator("path.react-flow__edge-path").first for name in ("auto", "review")]
    assert edges[0].get_attribute("d") != edges[1].get_attribute("d")
    shared = _apart(page, *edges)
    # Each leaves its own label's handle and turns in its own channel; they join only on the last stretch
    # into the one input handle.
    assert max(shared) < 0.5, shared
    page.screenshot(path=artifacts_dir / "editor-parallel-routes.png")


# --- before and after values, a fitted and readable canvas, the restore's preview ---------------------------

#: The comparison canvas's zoom and every text on it: (text, font size on screen in px).
_CANVAS_TEXT = """() => {
  const canvas = document.querySelector('[data-diff-canvas]');
  const zoom = new DOMMatrixReadOnly(getComputedStyle(canvas.querySelector('.react-flow__viewport')).transform).a;
  return [...canvas.querySelectorAll('.react-flow__node *, .diff-edge-label')]
    .filter(el => [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()))
    .map(el => [el.textContent.trim(), parseFloat(getComputedStyle(el).fontSize) * zoom]);
}"""


@pytest.fixture
def labelled(user: Any) -> Workflow:
    """Two versions of a workflow whose nodes have labels: v2 changes a binding's path and a literal, sends
    "review" elsewhere and adds a node."""
    team = team_services.create_team(actor=user, name="Acme")
    document = simple_document()
    document["nodes"][0]["name"] = "Assess the request"
    document["nodes"][1]["name"] = "Record decision"
    document["metadata"] = {"positions": {"assess": {"x": 0, "y": 0}, "record": {"x": 320, "y": 0}}}
    workflow = workflow_services.create_workflow(actor=user, team=team, name="Orders", document=document)
    workflow_services.publish_workflow(actor=user, workflow=workflow, note="first")
    document = copy.deepcopy(workflow.document)
    document["nodes"].append({"id": "audit", "name": "Audit", "kind": "task", "task": "assess_request",
                              "input": [{"target": "amount", "path": "input.amount"}], "output": []})
    document["nodes"][0]["input"][0]["value"] = 5
    del document["nodes"][0]["input"][0]["path"]
    document["nodes"][1]["input"][0]["value"] = False
    for route in document["routes"]:
        if route["label"] == "review":
            route["target"] = "audit"
    document["metadata"]["positions"]["audit"] = {"x": 640, "y": 200}
    workflow_services.save_document(actor=user, workflow=workflow, revision=workflow.revision, document=document)
    workflow_services.publish_workflow(actor=user, workflow=workflow, note="second")
    workflow.refresh_from_db()
    return workflow


def _fitted_and_readable(page: Page) -> None:
    canvas = page.locator("[data-diff-canvas]")
    expect(canvas.locator("[data-testid='diff-node']")).to_have_count(3)
    box = canvas.bounding_box()
    assert box
    for node in canvas.locator(".react-flow__node").all():
        inner = node.bounding_box()
        assert inner and inner["x"] >= box["x"] and inner["y"] >= box["y"], (inner, box)
        assert inner["x"] + inner["width"] <= box["x"] + box["width"], (inner, box)
        assert inner["y"] + inner["height"] <= box["y"] + box["height"], (inner, box)
    texts = page.evaluate(_CANVAS_TEXT)
    assert any(text == "Assess the request" for text, _ in texts), texts
    small = [(text, round(px, 2)) for text, px in texts if px < 12]
    assert small == [], small


def _drawn(page: Page, screenshot: Path) -> None:
    """The diff canvas drawn with its three nodes and fitted; then a screenshot of the whole page."""
    expect(page.locator("[data-diff-canvas][data-ready='true'] .react-flow__node")).to_have_count(3)
    expect(page.locator("[data-diff-canvas]")).to_have_attribute("data-fitted", "true")
    page.screenshot(path=screenshot, full_page=True)


def _row(page: Page, what: str, key: str) -> Any:
    return page.locator(f"li[data-what='{what}'][data-key='{key}']")


@pytest.mark.parametrize("size", [(1440, 900), (1024, 768)])
def test_compare_shows_before_and_after_by_label_on_a_fitted_readable_canvas_and_so_does_restore(
    logged_in_page: Page, live_server: Any, labelled: Workflow, artifacts_dir: Path, size: tuple[int, int]
) -> None:
    page, base = logged_in_page, live_server.url
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(f"{base}/workflows/{labelled.pk}/versions/compare/?a=1&b=2")
    _drawn(page, artifacts_dir / f"versions-compare-values-{size[0]}x{size[1]}.png")
    amount = _row(page, "input", "amount")
    expect(amount.locator(".change-summary")).to_have_text("input binding amount of Assess the request changed")
    expect(amount.locator("td[data-before]")).to_have_text("input.amount")
    expect(amount.locator("td[data-after]")).to_have_text("5")
    review = _row(page, "route", "assess --review")
    expect(review.locator(".change-summary")).to_have_text("route Assess the request --review changed")
    expect(review.locator("td[data-before]")).to_have_text("Record decision")
    expect(review.locator("td[data-after]")).to_have_text("Audit")
    added = _row(page, "node", "audit")
    expect(added.locator("tr[data-field='task'] td[data-after]")).to_have_text("assess_request")
    expect(added.locator("tr[data-field='task'] td[data-before]")).to_have_text("—")
    expect(added.locator("tr[data-field='retry']")).to_have_count(0)  # unset fields are not listed
    _fitted_and_readable(page)

    # The restore's preview: the same list and canvas, from the draft (= v2) back to v1.
    page.goto(f"{base}/workflows/{labelled.pk}/")
    page.locator("tr[data-version='1']").get_by_role("link", name="Restore into draft…").click()
    expect(page.get_by_role("heading", name="Restore v1 into the draft")).to_be_visible()
    _drawn(page, artifacts_dir / f"versions-restore-preview-{size[0]}x{size[1]}.png")
    amount = _row(page, "input", "amount")
    expect(amount.locator("td[data-before]")).to_have_text("5")
    expect(amount.locator("td[data-after]")).to_have_text("input.amount")
    expect(_row(page, "node", "audit")).to_have_attribute("data-change", "removed")
    _fitted_and_readable(page)
    page.get_by_role("button", name="Restore v1").click()
    expect(page.get_by_text("Version 1 is now the draft")).to_be_visible()
    assert Workflow.objects.get(pk=labelled.pk).document == labelled.versions.get(number=1).document

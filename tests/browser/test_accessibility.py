"""axe-core in Chromium on the pages a person reads most: the workflow list, the editor with a node's inspector
open, the page of a finished nested run, the runs list, the team's notifications, the page a notification's
answer link opens and the compare page. Each must have no serious or
critical violation (names that say what a control does, contrast, labels, landmarks...).

axe-core comes from npm (devDependency, ``node_modules/axe-core/axe.min.js``); it is evaluated through the
DevTools protocol, which the pages' Content-Security-Policy does not govern (an injected ``<script>`` would be
refused, as it should be).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import timezone
from playwright.sync_api import Page, expect

from designer.models import EditorPresence, Run, Workflow
from designer.notifications import services as notification_services
from designer.runs import services as run_services
from designer.workflows import services as workflow_services
from tests.browser.browser_support import sign_in
from tests.browser.editor_page import EditorPage

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = Path(settings.BASE_DIR) / "node_modules" / "axe-core" / "axe.min.js"
#: The impacts this test refuses; "minor" and "moderate" findings are printed, not failed.
REFUSED = ("serious", "critical")


def axe_violations(page: Page) -> list[dict[str, Any]]:
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE.read_text(encoding="utf-8"))
    result: dict[str, Any] = page.evaluate(
        "async () => await window.axe.run(document, {resultTypes: ['violations']})")
    return list(result["violations"])


#: Every control with a visible word on it (a button, a link, a summary): its accessible name, as axe computes it,
#: and the text a person sees on it (icons marked aria-hidden left out).
NAMES_AND_TEXT = """() => {
  const shown = (el) => {
    const parts = [];
    for (const node of el.childNodes) {
      if (node.nodeType === Node.TEXT_NODE) parts.push(node.textContent);
      else if (node.nodeType === Node.ELEMENT_NODE && node.getAttribute("aria-hidden") !== "true"
               && getComputedStyle(node).display !== "none") parts.push(shown(node));
    }
    return parts.join("");
  };
  const squash = (text) => text.replace(/\\s+/g, " ").trim();
  const found = [];
  window.axe.setup(document);  // axe's tree of the page, which its name computation reads
  try {
  for (const el of document.querySelectorAll("button, a[href], summary, [role=button], [role=link]")) {
    if (!el.checkVisibility({visibilityProperty: true}) || el.closest("[aria-hidden=true], [hidden]")) continue;
    const text = squash(shown(el));
    if (!/[\\p{L}\\p{N}]/u.test(text)) continue;  // an icon alone (×, ⤢) is no visible label
    const name = squash(window.axe.commons.text.accessibleTextVirtual(window.axe.utils.getNodeFromTree(el)));
    if (name !== text) found.push({element: el.outerHTML.slice(0, 160), text, name});
  }
  } finally {
    window.axe.teardown();
  }
  return found;
}"""


def name_mismatches(page: Page) -> list[dict[str, str]]:
    """Controls whose accessible name is not the text on them ("Choose path…" named "Choose a path for x")."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE.read_text(encoding="utf-8"))
    found: list[dict[str, str]] = page.evaluate(NAMES_AND_TEXT)
    return found


def refused_violations(page: Page, where: str, artifacts_dir: Path) -> list[dict[str, Any]]:
    """The page's serious and critical violations, each with the elements (and axe's reason) it names; every
    finding, minor ones too, goes to ``test-artifacts/.../axe-<where>.json``."""
    found = axe_violations(page)
    shown = [{"id": v["id"], "impact": v["impact"], "help": v["help"],
              "nodes": [{"target": n["target"], "why": n.get("failureSummary", "")} for n in v["nodes"][:8]]}
             for v in found]
    (artifacts_dir / f"axe-{where}.json").write_text(json.dumps(shown, indent=1), encoding="utf-8")
    refused = [v for v in shown if v["impact"] in REFUSED]
    mismatched = name_mismatches(page)
    if mismatched:
        refused.append({"id": "visible-label-is-name", "nodes": mismatched})
    return refused


def test_main_pages_have_no_serious_or_critical_axe_violations(
        page: Page, live_server: Any, demo: dict[str, Workflow], run_worker: Callable[..., Any],
        artifacts_dir: Path) -> None:
    assert AXE.is_file(), "run `npm ci` (axe-core is a devDependency)"
    owner = get_user_model().objects.get(username="demo")
    orders = demo["customer-orders"]
    run = run_services.start_run(actor=owner, workflow=orders, version=run_services.DRAFT,
                                 input=orders.document["metadata"]["sample_input"])
    approval = demo["spending-approval"]
    asking = run_services.start_run(actor=owner, workflow=approval, version=run_services.DRAFT,
                                    input=approval.document["metadata"]["sample_input"])
    run_worker()  # the real worker process runs the nested customers > orders loops to the end
    assert Run.objects.get(pk=run.pk).status == "completed"
    asking.refresh_from_db()
    assert asking.status == "interrupted"
    notification_services.save_rule(actor=owner, team=orders.team, on_failure=True, on_interrupt=True,
                                    on_completion=False, members=[owner.pk], webhook_url="https://example.com/h")
    answer_path = urlsplit(notification_services.answer_link(
        run=asking, interrupt_id=asking.interrupts[0]["id"], recipient=owner)).path
    workflow_services.publish_workflow(actor=owner, workflow=orders)
    orders.refresh_from_db()
    changed = json.loads(json.dumps(orders.document))
    changed["nodes"][0]["name"] = "Each customer"
    workflow_services.save_document(actor=owner, workflow=orders, revision=orders.revision, document=changed)

    base = live_server.url
    page.set_viewport_size({"width": 1440, "height": 900})
    sign_in(page, base, "demo")

    page.goto(f"{base}/")
    expect(page.locator("h1").first).to_be_visible()
    refused = {"workflow-list": refused_violations(page, "workflow-list", artifacts_dir)}

    # Someone else on the draft (live co-editing's presence): their initials in the header and on their node.
    now = timezone.now()
    EditorPresence.objects.create(workflow=orders, user=get_user_model().objects.get(username="viewer"),
                                  client="other-tab", node="price", seen_at=now, changed_at=now)
    editor = EditorPage(page, base, orders).open()
    editor.wait_idle()
    editor.select("price")
    expect(editor.inspector.locator(".picker-slot").first).to_be_attached()
    expect(editor.node("price").locator(".presence-badges")).to_be_visible()
    expect(page.locator("#editor-presence")).to_be_visible()
    refused["editor"] = refused_violations(page, "editor", artifacts_dir)
    editor.click_empty_canvas()  # the workflow's own inspector: its settings and schema builders
    expect(editor.inspector).to_have_attribute("data-kind", "workflow")
    refused["editor-workflow"] = refused_violations(page, "editor-workflow", artifacts_dir)

    page.goto(f"{base}/runs/{run.pk}/")
    expect(page.locator("h1").first).to_be_visible()
    refused["run"] = refused_violations(page, "run", artifacts_dir)

    page.goto(f"{base}/runs/")
    expect(page.locator("h1").first).to_be_visible()
    refused["runs-list"] = refused_violations(page, "runs-list", artifacts_dir)

    page.goto(f"{base}/teams/{orders.team_id}/notifications/")
    expect(page.get_by_role("button", name="Send a test")).to_be_visible()
    refused["notifications"] = refused_violations(page, "notifications", artifacts_dir)
    page.screenshot(path=artifacts_dir / "axe-notifications.png", full_page=True)

    page.goto(f"{base}{answer_path}")
    expect(page.locator("form.interrupt")).to_be_visible()
    refused["answer-link"] = refused_violations(page, "answer-link", artifacts_dir)
    page.screenshot(path=artifacts_dir / "axe-answer-link.png", full_page=True)

    page.goto(f"{base}/workflows/{orders.pk}/versions/compare/?a=1&b=draft")
    expect(page.locator("[data-diff-canvas] [data-testid='diff-node']").first).to_be_visible()
    refused["compare"] = refused_violations(page, "compare", artifacts_dir)
    page.screenshot(path=artifacts_dir / "axe-compare.png", full_page=True)
    assert not any(refused.values()), json.dumps({where: v for where, v in refused.items() if v}, indent=1)

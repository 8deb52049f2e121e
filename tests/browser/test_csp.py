"""The Content-Security-Policy in a real browser: Chromium enforces the header on every page and reports each
refused script, style or connection; a person walks through the app's pages, the admin and the API docs, and
uses the behaviours that were inline code before (frame drawer close, event filters, path picker close), and the
browser reports nothing refused and no script error."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from designer.models import Workflow
from tests.browser.browser_support import sign_in, worked_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Collects every CSP violation the document reports, before any page script runs.
RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  const where = `${e.sourceFile}:${e.lineNumber}`;
  window.__cspViolations.push(`${e.violatedDirective} blocked ${e.blockedURI || "inline"} at ${where}`);
});
"""


class Watch:
    """Console errors, uncaught exceptions and CSP violations of one tab."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.problems: list[str] = []
        page.add_init_script(RECORD_VIOLATIONS)
        page.on("console", self._console)
        page.on("pageerror", lambda exc: self.problems.append(f"pageerror: {exc}"))

    def _console(self, message: Any) -> None:
        # The pages have no favicon; Chromium's own request for one is not the page's doing.
        if message.type == "error" and not message.location.get("url", "").endswith("/favicon.ico"):
            self.problems.append(f"console: {message.text} ({message.location.get('url')})")

    def check(self, where: str, *, htmx: bool = True) -> None:
        violations = self.page.evaluate("window.__cspViolations || []")
        problems = self.problems + [f"csp: {v}" for v in violations]
        assert not problems, f"{where}: {problems}"
        if htmx:  # our pages; the admin and Swagger UI don't load htmx
            assert self.page.evaluate("window.htmx.config.allowEval") is False, where


def test_pages_run_under_the_policy_without_violations(page: Page, live_server: Any,
                                                       demo: dict[str, Workflow], run_worker: Any) -> None:
    base = live_server.url
    watch = Watch(page)
    page.goto(f"{base}/accounts/login/")
    watch.check("login")
    sign_in(page, base, "admin")  # demo owner and superuser: sees the app pages and the admin
    watch.check("home")

    run = worked_run(demo["customer-orders"], run_worker)
    page.goto(f"{base}/runs/{run.pk}/")
    # Server-rendered style attributes (style-src-attr) position the timeline bars: they are applied.
    bar = page.locator(".tl-bar").last
    expect(bar).to_be_visible()
    assert bar.evaluate("b => b.style.left") not in ("", "0%")
    fill = page.locator(".progress-row .fill").first
    assert fill.evaluate("f => f.style.width") == "100%"
    # The drawer's close button (was onclick) works.
    bar.click()
    expect(page.locator("#frame-panel.open")).to_be_visible()
    page.locator("#frame-panel button.close").click()
    expect(page.locator("#frame-panel.open")).to_have_count(0)
    page.locator("#ev-kind").select_option("item_completed")
    expect(page.locator(".events-table tbody tr").first).to_have_attribute("data-kind", "item_completed")
    watch.check("run detail")

    for path in ("/teams/", "/runs/", f"/workflows/{demo['customer-orders'].pk}/runs/"):
        page.goto(base + path)
        expect(page.locator("h1").first).to_be_visible()
        watch.check(path)

    page.goto(f"{base}/workflows/{demo['customer-orders'].pk}/edit/")
    expect(page.locator("[data-editor-canvas] .react-flow__node").first).to_be_visible()
    expect(page.locator("#run-panel")).to_be_visible()
    watch.check("editor")

    for path in ("/admin/", "/admin/designer/workflow/", f"/admin/designer/run/{run.pk}/change/"):
        page.goto(base + path)
        expect(page.locator("#content")).to_be_visible()
        watch.check(path, htmx=False)

    # Swagger UI: its initialiser runs by nonce and renders the operations.
    page.goto(f"{base}/api/docs/")
    expect(page.locator(".opblock").first).to_be_visible(timeout=20_000)
    watch.check("api docs", htmx=False)


def test_the_browser_refuses_inline_script_and_style_on_our_pages(page: Page, live_server: Any) -> None:
    # The control for the test above: the policy is enforced (not just sent) and the watcher sees refusals.
    watch = Watch(page)
    page.goto(f"{live_server.url}/accounts/login/")
    page.evaluate("""() => {
        window.__ran = false;
        const script = document.createElement("script");
        script.textContent = "window.__ran = true";
        document.body.append(script);
        const style = document.createElement("style");
        style.textContent = "body { display: none }";
        document.head.append(style);
    }""")
    expect(page.get_by_label("Username")).to_be_visible()  # the injected <style> did not apply
    assert page.evaluate("window.__ran") is False
    violations = page.evaluate("window.__cspViolations")
    assert any(v.startswith("script-src") for v in violations), violations
    assert any(v.startswith("style-src") for v in violations), violations
    assert any("Content Security Policy" in problem for problem in watch.problems), watch.problems


def test_the_browsable_api_renders_under_the_policy_without_violations(page: Page, live_server: Any,
                                                                       demo: dict[str, Workflow]) -> None:
    # DRF's own pages (Bootstrap, jQuery, prettify, its forms) under the same policy as ours.
    base = live_server.url
    watch = Watch(page)
    sign_in(page, base, "admin")
    for path in ("/api/", "/api/workflows/", f"/api/workflows/{demo['customer-orders'].pk}/", "/api/runs/"):
        page.goto(base + path)
        expect(page.locator(".response-info").first).to_be_visible()
        watch.check(path, htmx=False)

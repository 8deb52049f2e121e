"""Content-Security-Policy: every page sends the policy, and no page or template needs more than it allows
(inline scripts, inline event handlers, htmx attributes that htmx would evaluate as code)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from designer.runs import services as run_services

pytestmark = pytest.mark.django_db

EXPECTED = {
    "default-src": ["'self'"],
    "style-src": ["'self'"],
    "style-src-attr": ["'unsafe-inline'"],
    "img-src": ["'self'", "data:"],
    "connect-src": ["'self'"],
    "object-src": ["'none'"],
    "base-uri": ["'self'"],
    "form-action": ["'self'"],
    "frame-ancestors": ["'none'"],
}


def directives(header: str) -> dict[str, list[str]]:
    parsed: dict[str, list[str]] = {}
    for part in header.split(";"):
        name, *values = part.split()
        parsed[name] = values
    return parsed


def assert_policy(response: Any) -> dict[str, list[str]]:
    assert response.status_code == 200, response.status_code
    policy = directives(response.headers["Content-Security-Policy"])
    for name, values in EXPECTED.items():
        assert policy[name] == values, (name, policy[name])
    scripts = policy["script-src"]
    # Same-origin files, plus at most this response's nonce: never unsafe-inline / unsafe-eval.
    assert scripts[0] == "'self'" and all(v.startswith("'nonce-") for v in scripts[1:]), scripts
    assert "Content-Security-Policy-Report-Only" not in response.headers
    return policy


def nonces_in(html: str) -> set[str]:
    return set(re.findall(r'<script[^>]*\snonce="([^"]+)"', html))


def inline_scripts(html: str) -> list[str]:
    """Opening tags of <script> elements that carry code in the page (no src, not a JSON data block)."""
    tags = re.findall(r"<script\b[^>]*>", html)
    return [t for t in tags if "src=" not in t and "application/json" not in t]


def assert_no_inline_code(html: str, policy: dict[str, list[str]]) -> None:
    assert not re.search(r"\son[a-z]+\s*=", html), "inline event handler"
    assert "hx-on" not in html
    allowed = {f"'nonce-{n}'" for n in nonces_in(html)}
    assert allowed <= set(policy["script-src"])
    for tag in inline_scripts(html):
        assert re.search(r'\snonce="', tag), f"inline script without the nonce: {tag}"


@pytest.fixture
def editor_client(cast: Any) -> Client:
    client = Client()
    client.force_login(cast.editor)
    return client


def test_the_policy_setting_has_the_chosen_directives() -> None:
    # The header test below checks pages; this pins the setting those pages get it from.
    assert set(settings.SECURE_CSP) == {*EXPECTED, "script-src"}
    assert "django.middleware.csp.ContentSecurityPolicyMiddleware" in settings.MIDDLEWARE


@pytest.mark.parametrize("page", ["home", "team-list", "run-list", "editor", "run-detail", "team-detail"])
def test_every_app_page_sends_the_policy_and_needs_no_inline_code(
    page: str, cast: Any, workflow: Any, editor_client: Client
) -> None:
    run = run_services.start_run(actor=cast.editor, workflow=workflow, input={"amount": 5})
    args = {"editor": [workflow.pk], "run-detail": [run.pk], "team-detail": [cast.team.pk]}.get(page, [])
    response = editor_client.get(reverse(page, args=args))
    html = response.content.decode()
    assert_no_inline_code(html, assert_policy(response))
    # htmx must be told not to evaluate attribute code, nor inject its inline <style>.
    assert '"allowEval": false' in html and '"includeIndicatorStyles": false' in html


def test_htmx_fragments_need_no_inline_code(cast: Any, workflow: Any, editor_client: Client) -> None:
    run = run_services.start_run(actor=cast.editor, workflow=workflow, input={"amount": 5})
    hx = {"HTTP_HX_REQUEST": "true"}
    for url in (reverse("run-panel", args=[workflow.pk]), reverse("run-events", args=[run.pk])):
        response = editor_client.get(url, **hx)
        assert_no_inline_code(response.content.decode(), assert_policy(response))


def test_login_page_sends_the_policy(client: Client) -> None:
    response = client.get(reverse("login"))
    assert_no_inline_code(response.content.decode(), assert_policy(response))


def test_admin_pages_send_the_policy(make_user: Any) -> None:
    client = Client()
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    for url in (reverse("admin:index"), reverse("admin:designer_workflow_changelist"), reverse("admin:login")):
        response = client.get(url, follow=True)
        assert_no_inline_code(response.content.decode(), assert_policy(response))


def test_api_docs_inline_initialiser_carries_the_nonce_of_its_own_header(logged_in_client: Client) -> None:
    response = logged_in_client.get(reverse("api-docs"))
    html = response.content.decode()
    policy = assert_policy(response)
    assert_no_inline_code(html, policy)
    (nonce,) = nonces_in(html)
    assert policy["script-src"] == ["'self'", f"'nonce-{nonce}'"]
    assert "<style" not in html  # Swagger's page rules come from static/css/api-docs.css
    # A fresh nonce per response.
    (again,) = nonces_in(logged_in_client.get(reverse("api-docs")).content.decode())
    assert again != nonce


def test_the_browsable_api_links_its_code_style_instead_of_an_inline_style(logged_in_client: Client) -> None:
    from rest_framework.compat import pygments_css
    from rest_framework.renderers import BrowsableAPIRenderer

    response = logged_in_client.get(reverse("api:workflow-list"), HTTP_ACCEPT="text/html")
    html = response.content.decode()
    assert "Django REST framework" in html and ">Workflow List<" in html.replace("\n", "")
    assert_no_inline_code(html, assert_policy(response))
    assert "<style" not in html  # style-src 'self' would refuse it
    rules = pygments_css(BrowsableAPIRenderer.code_style)
    if rules:  # pygments installed: DRF's rules come from a same-origin stylesheet
        assert f'<link rel="stylesheet" type="text/css" href="{reverse("api-code-style")}"/>' in html
        sheet = logged_in_client.get(reverse("api-code-style"))
        assert sheet["Content-Type"].startswith("text/css") and sheet.content.decode() == rules


def test_no_template_carries_inline_code() -> None:
    # Catches a handler or hx-on added to a template branch the page tests above don't render.
    paths = [path for directory in settings.TEMPLATES[0]["DIRS"] for path in Path(directory).rglob("*.html")]
    assert {"detail.html", "base.html", "workflow_page.html"} <= {path.name for path in paths}  # site's and domains'
    for path in paths:
        text = path.read_text()
        assert not re.search(r"\son[a-z]+\s*=\s*[\"']", text), path
        assert "hx-on" not in text.replace("no hx-on", ""), path
        assert not re.search(r'hx-trigger="[^"]*\[', text), f"{path}: trigger filters are evaluated as code"
        assert not re.search(r"hx-vals=['\"]\s*js:|hx-vars", text), path
        for tag in inline_scripts(text):
            assert "csp_nonce_attr" in tag or "csp_nonce" in tag, f"{path}: {tag}"


def test_favicon_ico_leads_to_the_sites_icon_and_pages_link_it(client: Any) -> None:
    from django.contrib.staticfiles import finders

    response = client.get("/favicon.ico")
    assert response.status_code == 301
    assert response["Location"].endswith("favicon.svg")
    assert finders.find("favicon.svg")
    page = client.get("/accounts/login/").content.decode()
    assert 'rel="icon"' in page and "favicon.svg" in page

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_login_through_real_page_shows_workflow_list(page, live_server, user, password, artifacts_dir):
    page.goto(f"{live_server.url}/")

    # Anonymous visitors land on the login page.
    expect(page).to_have_url(f"{live_server.url}/accounts/login/?next=/")
    page.get_by_label("Username").fill(user.username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()

    expect(page).to_have_url(f"{live_server.url}/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Workflows")
    expect(page.get_by_text(user.username)).to_be_visible()
    # htmx is loaded from the base template and static files are served. The heading can be visible
    # before the script has run, so wait for it rather than sample it once.
    page.wait_for_function("() => typeof window.htmx === 'object'", timeout=10_000)
    assert page.evaluate("typeof window.htmx") == "object"
    page.screenshot(path=artifacts_dir / "login-workflows.png", full_page=True)


def test_wrong_password_stays_on_login_page(page, live_server, user):
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill(user.username)
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Log in").click()

    expect(page.get_by_role("alert")).to_contain_text("enter a correct username and password")
    expect(page).to_have_url(f"{live_server.url}/accounts/login/")

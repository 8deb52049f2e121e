"""Fixtures shared by the whole suite.

Browser fixtures (Playwright + Debian's chromium) live here too so any test
directory can use them; mark such tests with ``@pytest.mark.browser``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS_DIR = REPO_ROOT / "test-artifacts" / "screenshots"

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

# Playwright's sync API runs an event loop in the test thread, which makes
# Django refuse ORM calls from it. The browser tests need both; nothing else
# in the process runs async code, so lifting the guard is safe here.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


# --- users ------------------------------------------------------------------

PASSWORD = "correct horse battery staple"


@pytest.fixture
def password() -> str:
    """The password every ``make_user`` user has."""
    return PASSWORD


@pytest.fixture
def make_user(db: None) -> Callable[..., Any]:
    """Factory: ``make_user("alice")`` creates (or returns) a user with ``PASSWORD``."""
    from django.contrib.auth import get_user_model

    def make(username: str = "alice", **fields: Any) -> Any:
        user_model = get_user_model()
        user, created = user_model.objects.get_or_create(username=username, defaults=fields)
        if created:
            user.set_password(PASSWORD)
            user.save()
        return user

    return make


@pytest.fixture
def user(make_user: Callable[..., Any]) -> Any:
    return make_user("alice", email="alice@example.com")


@pytest.fixture
def logged_in_client(client: Any, user: Any) -> Any:
    """Django test client with ``user`` logged in."""
    client.force_login(user)
    return client


# --- browser ----------------------------------------------------------------


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail("Browser tests need Debian's chromium: apt-get install -y chromium (.ci/run does this).")
    return path


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any], chromium_path: str) -> dict[str, Any]:
    # pytest-playwright ignores environment variables for the executable, and
    # Playwright's own browser download is unavailable here.
    return {
        **browser_type_launch_args,
        "executable_path": chromium_path,
        "headless": True,
        "args": CHROMIUM_ARGS,
    }


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict[str, Any]) -> dict[str, Any]:
    return {**browser_context_args, "viewport": {"width": 1280, "height": 900}}


@pytest.fixture
def artifacts_dir() -> Path:
    ARTIFACTS_DIR.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS_DIR


@pytest.fixture
def login(live_server: Any, password: str) -> Callable[..., None]:
    """``login(page, user)``: log in through the real login form."""

    def do_login(page: Any, user: Any) -> None:
        page.goto(f"{live_server.url}/accounts/login/")
        page.get_by_label("Username").fill(user.get_username())
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{live_server.url}/")

    return do_login


@pytest.fixture
def logged_in_page(page: Any, login: Callable[..., None], user: Any) -> Iterator[Any]:
    """A Playwright page already logged in as ``user`` at the live server's home page."""
    login(page, user)
    yield page

"""Fixtures shared by the whole suite.

Browser fixtures (Playwright + Debian's chromium) live here too so any test
directory can use them; mark such tests with ``@pytest.mark.browser``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.journal import SECTION as JOURNAL_SECTION

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

PLAYWRIGHT_FIXTURES = frozenset({"page", "context", "browser", "browser_type", "playwright", "new_context"})


def _is_browser_test(item: pytest.Item) -> bool:
    return (
        item.get_closest_marker("browser") is not None
        or not PLAYWRIGHT_FIXTURES.isdisjoint(getattr(item, "fixturenames", ()))
        or "browser" in Path(str(item.path)).relative_to(REPO_ROOT).parts[:2]
    )


#: The database fixtures of pytest-django. A test that requests none of them (and has no django_db marker) is
#: refused every query by pytest-django, so it runs alike on any database engine.
DATABASE_FIXTURES = frozenset({"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback",
                               "live_server"})


def _uses_database(item: pytest.Item) -> bool:
    return (item.get_closest_marker("django_db") is not None
            or not DATABASE_FIXTURES.isdisjoint(getattr(item, "fixturenames", ())))


def pytest_itemcollected(item: pytest.Item) -> None:
    # Marked as each test is collected, before -m selects by markers.
    if _is_browser_test(item) and item.get_closest_marker("browser") is None:
        item.add_marker(pytest.mark.browser)
    if not _uses_database(item):
        item.add_marker(pytest.mark.no_database)


@pytest.hookimpl(trylast=True)  # after pytest-django's own reordering by database use
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Playwright's session-scoped sync API leaves an asyncio loop running in the
    # test thread once the first browser test starts; any later asyncio.run()
    # fails and Django's async guard trips. So browser tests run last (xdist
    # hands out items in this order too), and every one carries the marker.
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("browser") is not None:
        # From the first browser test on, ORM calls happen in a thread with a
        # running loop (Playwright's); only browser tests follow, so the guard
        # stays lifted for the rest of the process.
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"


# --- users ------------------------------------------------------------------

#: Django's production hasher (PBKDF2, 1.5 million rounds) costs about 0.35 s of CPU to set a password and as much to
#: check one; each browser test set one and checked it at its login, the demo's accounts more.
FAST_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _fast_password_hashing(request: pytest.FixtureRequest) -> None:
    """Passwords are hashed with MD5 in every test that uses the database (users live there); a test about the real
    hasher sets ``settings.PASSWORD_HASHERS`` itself (tests/designer/access/test_login_throttle.py)."""
    if request.node.get_closest_marker("no_database") is None:
        request.getfixturevalue("settings").PASSWORD_HASHERS = FAST_HASHERS

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


# --- task worker ------------------------------------------------------------


def _database_url(settings_dict: dict[str, Any], vendor: str) -> str:
    if vendor == "sqlite":
        return f"sqlite:///{settings_dict['NAME']}"
    if vendor == "postgresql":
        from urllib.parse import quote

        user = quote(settings_dict.get("USER") or "", safe="")
        password = quote(settings_dict.get("PASSWORD") or "", safe="")
        auth = f"{user}:{password}@" if user else ""
        host = settings_dict.get("HOST") or "localhost"
        port = f":{settings_dict['PORT']}" if settings_dict.get("PORT") else ""
        return f"postgres://{auth}{host}{port}/{settings_dict['NAME']}"
    raise NotImplementedError(f"no DATABASE_URL for {vendor}")


@pytest.fixture
def worker_env(transactional_db: None) -> dict[str, str]:
    """Environment for a subprocess (worker, manage.py command) that must use this test's database.

    Requests ``transactional_db`` so rows the test writes are committed and
    visible to the other process.
    """
    from django.db import connection

    env = dict(os.environ)
    env["DATABASE_URL"] = _database_url(connection.settings_dict, connection.vendor)
    # The test settings (pytest-django put them in the environment): the demo app too.
    env["DJANGO_SETTINGS_MODULE"] = os.environ.get("DJANGO_SETTINGS_MODULE") or "tests.settings"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return env


WORKER_COMMAND = [sys.executable, "manage.py", "db_worker", "--no-startup-delay", "--no-reload"]


@pytest.fixture
def run_worker(worker_env: dict[str, str]) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``run_worker()``: run a real ``db_worker --batch`` until the queue is empty; fails on a non-zero exit.

    Extra arguments go to db_worker, e.g. ``run_worker("--max-tasks", "1")``.
    """

    def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [*WORKER_COMMAND, "--batch", *args],
            cwd=REPO_ROOT,
            env=worker_env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert result.returncode == 0, f"db_worker failed:\n{result.stdout}\n{result.stderr}"
        return result

    return run


@pytest.fixture
def background_worker(worker_env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    """A real ``db_worker`` polling the test database for the whole test (e.g. behind a browser test)."""
    process = subprocess.Popen(
        [*WORKER_COMMAND, "--interval", "0.1"],
        cwd=REPO_ROOT,
        env=worker_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        yield process
    finally:
        from tests.designer.runs_support import stop_worker

        stop_worker(process)


# --- browser ----------------------------------------------------------------

# CI's two cores run two test processes, each with Chromium, a live server and often a worker: the load
# average reached 9 during the browser tests, where Playwright's 5 s default for an assertion ran out on pages
# that were right a moment later. Waiting longer changes no verdict: an assertion about a page that never gets
# there still fails.
expect.set_options(timeout=15_000)


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


@pytest.fixture(autouse=True)
def _forget_login_failures() -> Iterator[None]:
    """Sign-in attempts are counted in database rows (designer/access/login_throttle.py), which each test's database
    reset removes; the cache is cleared too so nothing cached by one test leaks into the next."""
    yield
    from django.core.cache import cache

    cache.clear()

# --- failed browser tests' journals, repeated at the end of the log ----------------------------------

_journals: list[tuple[str, str]] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.failed:
        _journals.extend((report.nodeid, text) for name, text in report.sections if name == JOURNAL_SECTION)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for nodeid, text in _journals:
        terminalreporter.write_sep("-", f"browser journal of {nodeid}")
        terminalreporter.write_line(text)

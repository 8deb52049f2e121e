"""Fixtures the browser tests share: the editor's test tasks in the catalogue, and the user's team."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import Any

import pytest
from playwright.sync_api import Page

from demo.data import load_demo
from designer.access import teams as team_services
from designer.models import Workflow
from tests.browser.editor_page import EDITOR_TASKS, EditorPage
from tests.browser.journal import SECTION, Journal

JOURNAL = pytest.StashKey[Journal]()


@pytest.fixture(autouse=True)
def _page_journal(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test's ``page`` keeps a journal, printed when the test fails (tests/browser/journal.py)."""
    if "page" in request.fixturenames:
        journal = Journal()
        journal.attach(request.getfixturevalue("page"))
        request.node.stash[JOURNAL] = journal
    yield


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    journal = item.stash.get(JOURNAL, None)
    if report.failed and journal is not None and journal.entries:
        report.sections.append((SECTION, journal.render()))
    return report


@pytest.fixture
def site_tasks(settings: Any) -> None:
    """The site's catalogue plus the test's ``pack_item`` task (the live server shares this process)."""
    settings.TRELLIS_TASK_MODULES = [EDITOR_TASKS]


@pytest.fixture
def team(user: Any) -> Any:
    return team_services.create_team(actor=user, name="Acme")


@pytest.fixture
def editor(logged_in_page: Page, live_server: Any, workflow: Any) -> EditorPage:
    """The editor open on the test module's ``workflow`` fixture."""
    return EditorPage(logged_in_page, live_server.url, workflow).open()


@pytest.fixture
def demo(transactional_db: None) -> dict[str, Workflow]:
    """The demo's workflows (``make demo``'s data), by slug."""
    load_demo()
    return {w.slug: w for w in Workflow.objects.filter(team__slug="demo")}

"""The run page as a test reads it after a worker ran the run."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.browser.test_runs import FINISH_MS


def show_the_settled_run(page: Page) -> None:
    """The run page once the run the worker just ran has settled. A live page (one with its poll) refreshes
    itself then, since the poll answers HX-Refresh; reloading it as well raced that navigation and CI saw
    ``net::ERR_ABORTED``. So a live page is left to refresh itself, and only a page without a poll is reloaded."""
    if page.locator("#run-poll").count():
        expect(page.locator("#run-poll")).to_have_count(0, timeout=FINISH_MS)
        page.wait_for_load_state()
    else:
        page.reload()

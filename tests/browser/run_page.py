"""The run page as a test reads it after a worker ran the run."""

from __future__ import annotations

import time
from urllib.parse import urlsplit

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page

from designer.models import Run
from tests.browser.test_runs import FINISH_MS


def show_the_settled_run(page: Page) -> None:
    """The run page once the run the worker just ran has settled: no poll left and the status the database holds.

    A live page (one with its poll) refreshes itself when the run settles, since the poll answers HX-Refresh, and a
    page rendered before then without a poll must be reloaded. Reading the page while that refresh is under way, or
    reloading it then, races the navigation (CI saw ``net::ERR_ABORTED`` and "Not attached to an active page"). So
    this looks until the page shows what the database says, and a read or reload caught by a navigation tries again.
    """
    run_id = int(urlsplit(page.url).path.rstrip("/").split("/")[-1])
    settled = Run.objects.get(pk=run_id).status
    deadline = time.monotonic() + FINISH_MS / 1000
    while True:
        try:
            page.wait_for_load_state()
            live = page.locator("#run-poll").count() > 0
            if not live and page.locator("#run-status").inner_text(timeout=2_000).strip() == settled:
                return
            if live:
                page.wait_for_timeout(100)
            else:
                page.reload()
        except PlaywrightError:
            pass  # a navigation (the page's own refresh) replaced the document we were reading: look again
        assert time.monotonic() < deadline, f"the run page never showed run {run_id} as {settled}"

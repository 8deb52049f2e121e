"""What a browser test's page did, kept for its failure report.

A browser test that fails only on a loaded CI machine leaves nothing to look at but the log: its screenshot and
trace stay on that machine. So every ``page`` keeps a short journal (its requests' answers, console messages,
script errors, navigations, with milliseconds since the test began) and a failed test prints it under its
report, and CI's summary repeats it at the end of the log where it is read first.
"""

from __future__ import annotations

import time
from collections import deque
from urllib.parse import urlsplit

from playwright.sync_api import ConsoleMessage, Error, Frame, Page, Request, Response

#: The section of a failed test's report that holds its journal.
SECTION = "browser journal"
#: Entries kept: the last ones are what led to the failure.
KEPT = 40
#: Where the site's files are served: their successful loads are left out.
STATIC = "/static/"


class Journal:
    def __init__(self) -> None:
        self.started = time.monotonic()
        self.entries: deque[str] = deque(maxlen=KEPT)

    def note(self, text: str) -> None:
        self.entries.append(f"{(time.monotonic() - self.started) * 1000:8.0f} ms  {text}")

    def attach(self, page: Page) -> None:
        page.on("response", self._response)
        page.on("requestfailed", self._failed)
        page.on("console", self._console)
        page.on("pageerror", self._page_error)
        page.on("framenavigated", self._navigated)

    def render(self) -> str:
        return "\n".join(self.entries)

    def _response(self, response: Response) -> None:
        if response.ok and urlsplit(response.url).path.startswith(STATIC):
            return  # a stylesheet or script that loaded tells nothing
        self.note(f"{response.status} {response.request.method} {_where(response.url)}")

    def _failed(self, request: Request) -> None:
        self.note(f"failed {request.method} {_where(request.url)}: {request.failure}")

    def _console(self, message: ConsoleMessage) -> None:
        self.note(f"console.{message.type}: {message.text[:300]}")

    def _page_error(self, error: Error) -> None:
        self.note(f"script error: {error.message[:300]}")

    def _navigated(self, frame: Frame) -> None:
        if frame.parent_frame is None:
            self.note(f"page at {_where(frame.url)}")


def _where(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")

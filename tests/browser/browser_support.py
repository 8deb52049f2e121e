"""What several browser tests do the same way: sign in through the form, run a demo workflow in a real worker,
tell whether two boxes overlap."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth import get_user_model
from playwright.sync_api import Page

from designer.models import Run, Workflow
from designer.runs import services as run_services


def sign_in(page: Page, base: str, username: str, password: str | None = None) -> None:
    page.goto(f"{base}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password or username)  # demo accounts: password == username
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{base}/")


def worked_run(workflow: Workflow, run_worker: Callable[..., Any], run_input: dict[str, Any] | None = None) -> Run:
    """A run of a demo workflow started by its owner ``demo`` (on its sample input unless given), as a real worker
    process left it: the step pool forked inside this Playwright-driven process would inherit the browser driver's
    pipes and event loop and can hang the session."""
    if run_input is None:
        run_input = workflow.document["metadata"]["sample_input"]
    run = run_services.start_run(actor=get_user_model().objects.get(username="demo"), workflow=workflow,
                                 input=run_input)
    run_worker()
    return Run.objects.get(pk=run.pk)


def overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    """Whether two bounding boxes share any area (touching edges do not)."""
    return not (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
                or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])

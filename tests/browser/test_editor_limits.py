"""The inspector's "Timeout and retries" form in a real browser: a bad value is named and saves nothing, a good one
is saved as one edit, and Undo takes it back like any other edit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from designer.access import teams as team_services
from designer.workflows import services as workflow_services
from tests.browser.editor_page import EditorPage, empty_document

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _work(document: dict[str, Any]) -> dict[str, Any]:
    return next(n for n in document["nodes"] if n["id"] == "work")


def test_timeout_and_retries_are_edited_in_the_inspector_checked_and_undone(
    logged_in_page: Page, live_server: Any, user: Any, artifacts_dir: Path
) -> None:
    team = team_services.create_team(actor=user, name="Acme")
    workflow = workflow_services.create_workflow(actor=user, team=team, name="Limits", document=empty_document(
        nodes=[{"id": "work", "kind": "task", "task": "set_value", "input": [{"target": "value", "value": 1}]}],
        metadata={"positions": {"work": {"x": 80, "y": 120}}},
    ))
    editor = EditorPage(logged_in_page, live_server.url, workflow).open()
    editor.select("work")
    form = editor.inspector.locator("form[data-section=limits]")
    expect(form.get_by_test_id("retry-summary")).to_contain_text("One attempt: a failure is not retried.")
    original = editor.document()
    start = editor.revision()

    # A bad value: the inspector names the field and the bounds; nothing is saved.
    form.get_by_label("Timeout per attempt").fill("0")
    form.get_by_role("button", name="Save limits").click()
    alert = editor.inspector.locator(".inspector-error")
    expect(alert).to_contain_text("node 'work': the timeout is a number of seconds above 0 and at most 86400")
    expect(editor.inspector.get_by_label("Timeout per attempt")).to_have_attribute("aria-invalid", "true")
    editor.wait_idle()
    assert editor.revision() == start and editor.document() == original

    # A good one is one saved edit; the summary says what the policy does.
    form = editor.inspector.locator("form[data-section=limits]")
    form.get_by_label("Timeout per attempt").fill("2.5")
    form.get_by_label("Attempts").fill("3")
    form.get_by_label("First wait").fill("1")
    form.get_by_role("button", name="Save limits").click()
    editor.wait_saved(start + 1)
    saved = _work(editor.document())
    assert saved["timeout_seconds"] == 2.5 and saved["retry"]["max_attempts"] == 3
    assert saved["retry"]["backoff_seconds"] == 1.0
    expect(editor.inspector.locator(".inspector-error")).to_have_count(0)
    expect(editor.inspector.get_by_test_id("retry-summary")).to_contain_text(
        "Up to 3 attempts; it waits 1 s, 2 s before the retries.")
    editor.page.screenshot(path=artifacts_dir / "editor-limits.png")

    # Undo, as for any edit.
    editor.wait_idle()
    editor.page.get_by_role("button", name="Undo", exact=True).click()
    editor.wait_saved(start + 2)
    assert _work(editor.document()) == _work(original)
    editor.select("work")
    expect(editor.inspector.get_by_label("Timeout per attempt")).to_have_value("")
    assert editor.errors == []

"""Branch and interrupt nodes in the browser editor: built by drag and drop, configured in the inspector
(paths only from the picker), wired from their label handles, and stored as the runtime document says."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from designer.workflows import services as workflow_services

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

from tests.browser.editor_page import EditorPage  # noqa: E402

SPENDING_INPUT = {
    "type": "object",
    "properties": {"amount": {"type": "number"}, "requester": {"type": "string"}},
    "required": ["amount", "requester"],
}


@pytest.fixture
def workflow(user: Any, team: Any) -> Any:
    return workflow_services.create_workflow(actor=user, team=team, name="Spending", document={
        "id": "spending", "input_schema": SPENDING_INPUT, "nodes": [], "routes": [],
    })


def _node(document: dict[str, Any], node_id: str) -> dict[str, Any]:
    return next(n for n in document["nodes"] if n["id"] == node_id)


def test_branch_dropped_given_a_path_two_cases_and_a_route_per_case(editor: EditorPage, artifacts_dir: Path) -> None:
    # Dropped, the branch compares the placeholder `input`; its path picker is already open.
    assert editor.drop("branch", "Branch", 160, 220) == "branch"
    picker = editor.inspector.locator('li.field-row[data-field="path"] .picker')
    expect(picker).to_be_visible()
    assert {"input.amount", "input.requester"} <= set(editor.picker_paths())  # a branch compares any type
    editor.choose("input.amount")
    expect(editor.inspector.locator('[data-field="path"] .path-chip')).to_have_text("input.amount")
    expect(editor.node("branch")).to_contain_text("on input.amount")

    # Two new cases; the template's own case goes.
    editor.press("Add case")
    editor.press("Add case")
    expect(editor.inspector.get_by_label("Label of case 3")).to_have_value("case_3")
    editor.press("Remove case yes")
    form = editor.inspector
    form.get_by_label("Label of case 1").fill("large")
    form.get_by_label("Comparison of case 1").select_option("gt")
    form.get_by_label("Value of case 1").fill("1000")
    form.get_by_label("Label of case 2").fill("medium")
    form.get_by_label("Comparison of case 2").select_option("gte")
    form.get_by_label("Value of case 2").fill("100")
    form.get_by_label("Label when no case matches").fill("small")
    editor.press("Save cases")
    # One handle per label the analyzer says the branch emits: cases in order, default, error.
    expect(editor.node("branch").locator('.react-flow__handle.source[data-handleid="medium"]')).to_have_count(1)
    assert editor.handles("branch") == ["large", "medium", "small", "error"]

    # One target per case, and the default.
    assert editor.drop("task", "set_value", 560, 60) == "set_value"
    assert editor.drop("task", "set_value", 560, 260) == "set_value_2"
    assert editor.drop("task", "length", 560, 460) == "length"
    editor.connect("branch", "large", "set_value")
    editor.connect("branch", "medium", "set_value_2")
    editor.connect("branch", "small", "length")
    editor.bind("length", "value", "input.requester")
    expect(editor.diagnostics.get_by_test_id("error-count")).to_have_text("0 errors")
    editor.select("branch")
    expect(editor.inspector.locator(".routes")).to_contain_text("large → set_value")
    editor.page.screenshot(path=artifacts_dir / "editor-branch.png")

    saved = editor.document()
    branch = _node(saved, "branch")
    assert branch["path"] == "input.amount"
    assert branch["cases"] == [{"label": "large", "op": "gt", "value": 1000},
                               {"label": "medium", "op": "gte", "value": 100}]
    assert branch["default_label"] == "small"
    assert sorted((r["source"], r["label"], r["target"]) for r in saved["routes"]) == [
        ("branch", "large", "set_value"), ("branch", "medium", "set_value_2"), ("branch", "small", "length"),
    ]
    assert editor.errors == []


def test_interrupt_prompt_labels_resume_schema_and_payload(editor: EditorPage, artifacts_dir: Path) -> None:
    assert editor.drop("interrupt", "Interrupt", 160, 220) == "interrupt"
    assert editor.drop("task", "set_value", 560, 220) == "set_value"
    assert editor.handles("interrupt") == ["ok", "error"]

    editor.select("interrupt")
    schema = {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]}
    editor.inspector.get_by_label("Prompt", exact=True).fill("Approve this spend?")
    editor.inspector.get_by_label("Answers (labels, comma separated)").fill("approve, reject")
    editor.press("Save question")
    # The answer's schema: here through the builder's raw JSON view (the builder edits the same schema).
    resume = editor.inspector.locator('.schema-builder[data-schema="resume_schema"]')
    resume.locator("summary", has_text="JSON (advanced)").click()
    resume.get_by_label("Resume schema as JSON").fill(json.dumps(schema))
    editor.press("Save JSON")
    expect(editor.inspector.locator('.schema-builder[data-schema="resume_schema"] .sb-row[data-name="note"]')) \
        .to_have_count(1)
    expect(editor.node("interrupt")).to_contain_text("Approve this spend?")
    assert editor.handles("interrupt") == ["approve", "reject", "error"]

    # The prompt payload: name a field, then its source comes from the picker.
    revision = editor.revision()
    editor.inspector.get_by_label("New payload field").fill("amount")
    editor.inspector.get_by_role("button", name="Add field", exact=True).click()
    row = editor.inspector.locator('li.field-row[data-field="input.amount"]')
    expect(row.locator(".picker")).to_be_visible()
    assert editor.revision() == revision  # nothing stored until the field has a source
    editor.choose("input.amount")
    expect(row.locator(".path-chip")).to_have_text("input.amount")
    editor.inspector.get_by_label("New payload field").fill("requester")
    editor.inspector.get_by_role("button", name="Add field", exact=True).click()
    editor.choose("input.requester")
    before = editor.revision()
    editor.field_row("requester").get_by_role("button", name="Remove", exact=True).click()
    editor.wait_saved(before + 1)
    expect(editor.inspector.locator('li.field-row[data-field="input.requester"]')).to_have_count(0)

    # Its answer fields are offered as output-binding sources.
    editor.inspector.get_by_label("Result field").select_option("note")
    editor.inspector.get_by_label("New state field").fill("review_note")
    editor.press("Add")

    editor.connect("interrupt", "approve", "set_value")
    editor.connect("interrupt", "reject", "set_value")
    expect(editor.diagnostics.get_by_test_id("error-count")).to_have_text("0 errors")
    editor.select("interrupt")
    editor.page.screenshot(path=artifacts_dir / "editor-interrupt.png")
    # The payload rows are below the fold; another node's inspector starts at its top.
    assert editor.page.locator(".editor-side").evaluate("el => el.scrollTop") > 0
    editor.select("set_value")
    editor.page.wait_for_function("() => document.querySelector('.editor-side').scrollTop === 0")

    node = _node(editor.document(), "interrupt")
    assert node["prompt"] == "Approve this spend?"
    assert node["labels"] == ["approve", "reject"]
    assert node["resume_schema"] == schema
    assert node["input"] == [{"target": "amount", "path": "input.amount"}]
    assert node["output"] == [{"source": "note", "target": "review_note", "mode": "set"}]
    assert editor.errors == []

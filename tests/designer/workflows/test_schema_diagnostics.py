"""A broken schema in a document is a diagnostic when it is saved, and the draft does not start."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from designer.models import Run
from designer.runs import services as run_services
from designer.workflows import services as workflow_services
from runtime.errors import WorkflowValidationError

pytestmark = pytest.mark.django_db


def test_a_remote_ref_is_reported_at_save_time_and_the_draft_does_not_start(cast: Any, workflow: Any,
                                                                             document: dict[str, Any]) -> None:
    edited = copy.deepcopy(document)
    edited["input_schema"]["properties"]["amount"] = {"$ref": "http://169.254.169.254/latest/meta-data"}

    saved = workflow_services.save_document(actor=cast.editor, workflow=workflow, revision=workflow.revision,
                                            document=edited)

    [problem] = [d for d in saved.diagnostics if d.code == "schema.invalid"]
    assert (problem.severity, problem.node_id, problem.field) == ("error", None, "input_schema")
    assert "points outside the schema" in problem.message
    with pytest.raises(WorkflowValidationError, match="schema.invalid"):
        run_services.start_run(actor=cast.editor, workflow=saved.workflow, input={"amount": 3})
    assert not Run.objects.exists()


def test_a_pattern_that_does_not_compile_is_reported_at_save_time(cast: Any, workflow: Any,
                                                                  document: dict[str, Any]) -> None:
    edited = copy.deepcopy(document)
    edited["state_schema"]["properties"]["code"] = {"type": "string", "pattern": "([A-Z]"}

    saved = workflow_services.save_document(actor=cast.editor, workflow=workflow, revision=workflow.revision,
                                            document=edited)

    [problem] = [d for d in saved.diagnostics if d.code == "schema.invalid"]
    assert problem.field == "state_schema"
    assert "#/properties/code/pattern" in problem.message


def test_a_default_that_breaks_its_own_field_is_reported_at_save_time(cast: Any, workflow: Any,
                                                                      document: dict[str, Any]) -> None:
    edited = copy.deepcopy(document)
    edited["input_schema"]["properties"]["amount"] = {"type": "number", "minimum": 0, "default": -5}

    saved = workflow_services.save_document(actor=cast.editor, workflow=workflow, revision=workflow.revision,
                                            document=edited)

    [problem] = [d for d in saved.diagnostics if d.code == "schema.invalid"]
    assert (problem.severity, problem.field) == ("error", "input_schema")
    assert "the default -5 breaks its own schema: -5 is less than the minimum of 0" in problem.message
    assert "#/properties/amount/default" in problem.message
    with pytest.raises(WorkflowValidationError, match="schema.invalid"):
        run_services.start_run(actor=cast.editor, workflow=saved.workflow, input={"amount": 3})

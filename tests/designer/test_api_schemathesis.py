"""The API against its own OpenAPI schema: schemathesis generates requests for every operation from
/api/schema/ (valid and invalid ones) and runs all of its checks on the answers, as a team owner calling with
a personal access token. Bounded (a fixed number of examples per operation) and derandomized, so a failure
reproduces and the run takes a minute or two."""

from __future__ import annotations

import secrets
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from designer.models import ApiToken
from designer.models_access import hash_secret
from designer.wsgi import application

#: "Schema-valid data is accepted" also allows 422: the status the schema declares (only on the operations that carry
#: a workflow document, which the status-code check holds every operation to) for a document that fits the schema
#: (the runtime's own, designer.api.schema.document_components) but breaks a rule across its fields.
CONFIG = schemathesis.Config.from_dict({"checks": {"positive_data_acceptance": {
    "expected-statuses": ["2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"]}}})

schema = schemathesis.openapi.from_wsgi("/api/schema/", application, config=CONFIG)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _keep_the_test_connection() -> Any:
    """The WSGI handler closes database connections after each request; in a test that would close the
    test's own transaction (Django's test client disconnects the same handler for the same reason)."""
    from django.core import signals
    from django.db import close_old_connections

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def owner_token(cast: Any, workflow: Any) -> str:
    from designer.services import tokens as token_services
    from designer.services import workflows as workflow_services
    from designer.services.runs import start_run

    workflow_services.publish_workflow(actor=cast.owner, workflow=workflow)
    start_run(actor=cast.owner, workflow=workflow, input={"amount": 3})
    created = token_services.create_token(actor=cast.owner, name="schemathesis")
    ApiToken.objects.filter(pk=created.token.pk).update(token_hash=hash_secret(SECRET), prefix=SECRET[:12])
    return SECRET


#: The owner's token, fixed so that schemathesis can attach it while it builds cases (before any fixture runs);
#: the fixture stores its hash like any token made on the settings page.
SECRET = "trl_" + secrets.token_urlsafe(32)


@schema.auth()
class OwnerToken:
    """The Bearer scheme the schema declares, with the owner's token: schemathesis knows it is the
    authentication, so its ignored-auth check can take it away or spoil it and expect a refusal."""

    def get(self, case: Any, context: Any) -> str:
        return SECRET

    def set(self, case: Any, data: str, context: Any) -> None:
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}


#: Operations whose body carries a workflow document. Generated ids would almost never name the owner's workflow
#: (a 404 says nothing about the document), so these are aimed at it: the document itself decides the answer.
DOCUMENT_BODIES = {("POST", "/api/workflows/"), ("POST", "/api/workflows/import/"),
                   ("PUT", "/api/workflows/{workflow_id}/document/"),
                   ("POST", "/api/workflows/{workflow_id}/validate/")}

#: A cron expression's grammar and the fit of a schedule's input to the version's own input schema are not in the
#: schema yet: a string or object that fits it may still be refused with 400, so "schema-valid data is accepted"
#: is off for this one operation (every other check runs on it).
NOT_YET_IN_SCHEMA = {("POST", "/api/workflows/{workflow_id}/schedules/")}


def _aim_at_the_owners_workflow(case: Any, workflow: Any) -> None:
    if case.path_parameters and "workflow_id" in case.path_parameters:
        case.path_parameters = {**case.path_parameters, "workflow_id": workflow.pk}
    if isinstance(case.body, dict):
        body = dict(case.body)
        if "team" in body and isinstance(body["team"], int):
            body["team"] = workflow.team_id
        if "revision" in body and isinstance(body["revision"], int):
            workflow.refresh_from_db()
            body["revision"] = workflow.revision
        case.body = body


@schema.parametrize()
@settings(max_examples=6, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_matches_its_schema(case: Any, owner_token: str, workflow: Any) -> None:
    if (case.method.upper(), case.path) in DOCUMENT_BODIES:
        _aim_at_the_owners_workflow(case, workflow)
    if (case.method.upper(), case.path) in NOT_YET_IN_SCHEMA:
        case.call_and_validate(excluded_checks=[positive_data_acceptance])
    else:
        case.call_and_validate()

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

schema = schemathesis.openapi.from_wsgi("/api/schema/", application)

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


#: Operations whose body carries a workflow document. Its JSON Schema (designer.api.schema.DOCUMENT_SCHEMA) cannot
#: state the document's cross-field rules (the start node exists, routes name real nodes, ...), so a generated
#: document that fits the schema is still refused with 400 document.invalid: for these, and only for
#: "schema-valid data is accepted", that refusal is the documented answer. Every other check runs on them too.
DOCUMENT_BODIES = {("POST", "/api/workflows/"), ("POST", "/api/workflows/import/"),
                   ("PUT", "/api/workflows/{workflow_id}/document/"),
                   ("POST", "/api/workflows/{workflow_id}/validate/"),
                   # Likewise a cron expression's grammar and the fit of a schedule's input to the version's own
                   # input schema: a string or object that fits the schema may still be refused with 400.
                   ("POST", "/api/workflows/{workflow_id}/schedules/")}


@schema.parametrize()
@settings(max_examples=6, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_matches_its_schema(case: Any, owner_token: str) -> None:
    if (case.method.upper(), case.path) in DOCUMENT_BODIES:
        case.call_and_validate(excluded_checks=[positive_data_acceptance])
    else:
        case.call_and_validate()

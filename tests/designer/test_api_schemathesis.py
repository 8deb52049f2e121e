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

from designer.access.models import hash_secret
from designer.models import ApiToken, Run
from designer.wsgi import application

#: "Schema-valid data is accepted" runs on every operation and also allows 422: the status the schema declares (only on
#: the operations whose body carries a value checked beyond the schema, which the status-code check holds every
#: operation to) for a document that breaks a rule across its fields, a run input that does not fit the workflow's
#: input schema, or a cron expression that fits the published grammar but can never fire.
#: Every other check runs as schemathesis ships it (all are enabled); none is switched off, and a 5xx is never
#: an expected answer.
CONFIG = schemathesis.Config.from_dict({"checks": {"enabled": True, "positive_data_acceptance": {
    "expected-statuses": ["2xx", "3xx", "401", "403", "404", "409", "422", "429"]}}})

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
    from designer.access import tokens as token_services
    from designer.runs.services import start_run
    from designer.workflows import services as workflow_services

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


#: Operations whose body carries a value the server checks beyond the schema (a workflow document; a schedule's
#: cron expression and input). Generated ids would almost never name the owner's workflow (a 404 says nothing about
#: the body), so these are aimed at it: the body itself decides the answer, and "schema-valid data is accepted"
#: holds them to 2xx or the 422 their schema declares.
AIMED = {("POST", "/api/workflows/"), ("POST", "/api/workflows/import/"),
         ("PUT", "/api/workflows/{workflow_id}/document/"),
         ("POST", "/api/workflows/{workflow_id}/validate/"),
         ("POST", "/api/workflows/{workflow_id}/schedules/")}


def _aim_at_the_owners_workflow(case: Any, workflow: Any) -> None:
    if case.path_parameters and "workflow_id" in case.path_parameters:
        case.path_parameters = {**case.path_parameters, "workflow_id": workflow.pk}
    _aim_at_the_owners_run(case)
    if isinstance(case.body, dict):
        body = dict(case.body)
        if "team" in body and isinstance(body["team"], int):
            body["team"] = workflow.team_id
        if "revision" in body and isinstance(body["revision"], int):
            workflow.refresh_from_db()
            body["revision"] = workflow.revision
        case.body = body


def _aim_at_the_owners_run(case: Any) -> None:
    """Half the examples of a run's operation name the owner's run, so its body and query are judged by what the
    run is (generated ids almost never name one: a 404 says nothing about the rest of the request)."""
    generated = (case.path_parameters or {}).get("run_id")
    if isinstance(generated, int) and generated % 2 == 0:  # decided by the generated id: reproducible
        run = Run.objects.order_by("pk").first()
        if run is not None:
            case.path_parameters = {**case.path_parameters, "run_id": run.pk}


@schema.parametrize()
@settings(max_examples=8, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_matches_its_schema(case: Any, owner_token: str, workflow: Any) -> None:
    if (case.method.upper(), case.path) in AIMED:
        _aim_at_the_owners_workflow(case, workflow)
    else:
        _aim_at_the_owners_run(case)
    case.call_and_validate()

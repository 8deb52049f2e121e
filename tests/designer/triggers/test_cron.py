"""The schedule's cron grammar: the pattern the API schema publishes is exactly what the server accepts, and what
fits it either fires or is refused 422 with the reason (never a 400 for a string the schema allows)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest
from cronsim import CronSim, CronSimError
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from designer.models import Schedule
from designer.triggers import cron
from designer.triggers import services as triggers
from designer.workflows import services as workflow_services

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.from_regex(cron.CRON_PATTERN, fullmatch=True))
def test_every_expression_the_pattern_allows_fires_or_is_named_impossible(expression: str) -> None:
    problem = cron.impossibility(" ".join(expression.split()), NOW)
    try:
        fires = next(CronSim(" ".join(expression.split()), NOW)) is not None
    except (CronSimError, StopIteration):
        fires = False
    assert fires == (problem is None), (expression, problem)


@pytest.mark.parametrize("expression", [
    "0 9 * * 1-5", "*/15 * * * *", "0 0 L * *", "0 0 LW * *", "0 12 * * 5L", "0 12 * * MON#2", "0 0 1 jan,Jul *",
    "0-30/10 8-18 1,15 * sun-sat", " 5  4 * * *  ", "0 0 29 2 *", "0\t0 * * 7",
])
def test_usual_expressions_fit_and_fire(expression: str) -> None:
    assert cron.fits_grammar(expression)
    assert cron.impossibility(" ".join(expression.split()), NOW) is None


@pytest.mark.parametrize(("expression", "named"), [
    ("61 * * * *", "the minute field '61'"),
    ("0 24 * * *", "the hour field '24'"),
    ("0 0 32 * *", "the day-of-month field '32'"),
    ("0 0 * 13 *", "the month field '13'"),
    ("0 0 * * 8", "the day-of-week field '8'"),
    ("*/0 * * * *", "the minute field '*/0'"),
    ("0 0 * * FRIL", "the day-of-week field 'FRIL'"),
    ("0 * * *", "has 4 fields"),
    ("0 0 * * * *", "has 6 fields"),
    ("@daily", "has 1 field;"),
])
def test_what_the_pattern_refuses_is_named_by_field(expression: str, named: str) -> None:
    assert not cron.fits_grammar(expression)
    assert named in cron.grammar_problem(expression)


@pytest.mark.parametrize(("expression", "reason"), [
    ("0 19-8 * * *", "the hour range 19-8 runs backwards; write the smaller end first, e.g. 8-19"),
    ("0 0 * DEC-JAN *", "the month range DEC-JAN runs backwards"),
    ("0 0 30 2 *", "no month in '2' has a day '30'"),
    ("0 0 31 4,6 *", "no month in '4,6' has a day '31'"),
])
def test_expressions_that_fit_but_never_fire_say_why(expression: str, reason: str) -> None:
    assert cron.fits_grammar(expression)
    assert reason in (cron.impossibility(expression, NOW) or "")


def test_the_api_schema_publishes_the_servers_pattern(client: Any) -> None:
    schema = client.get(reverse("api-schema"), HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    body = schema["components"]["schemas"]["ScheduleCreateRequest"]["properties"]
    assert body["cron"]["pattern"] == cron.CRON_PATTERN
    assert body["timezone"]["pattern"] == triggers.TIME_ZONE_PATTERN
    operation = schema["paths"]["/api/workflows/{workflow_id}/schedules/"]["post"]
    assert "422" in operation["responses"]
    # ECMAScript reads the pattern as Python does here: no Python-only syntax in it.
    assert not re.search(r"\(\?P|\(\?[aiLmsux]|\\A|\\Z", cron.CRON_PATTERN)


@pytest.mark.django_db
@pytest.mark.parametrize(("body", "status", "code"), [
    ({"cron": "0 19-8 * * *"}, 422, "cron.never_fires"),
    ({"cron": "0 0 30 2 *"}, 422, "cron.never_fires"),
    ({"cron": "0 0 * * FRIL"}, 400, "request.invalid"),
    ({"timezone": "Mars/Olympus"}, 422, "timezone.unknown"),
    ({"timezone": "not a zone"}, 400, "request.invalid"),
    ({"input": {}}, 422, "input.invalid"),
    ({"input": {"amount": "x"}}, 422, "input.invalid"),
    # Several problems: well-formed but wrong together (an unknown zone, an impossible cron, a version that
    # does not exist) stay 422, as each is alone; one malformed field among them makes the whole request 400.
    ({"timezone": "Mars/Olympus", "cron": "0 19-8 * * *", "version": 150}, 422, "request.invalid"),
    ({"timezone": "Mars/Olympus", "version": 150}, 422, "request.invalid"),
    ({"timezone": "Mars/Olympus", "input": {}}, 422, "request.invalid"),
    ({"timezone": "not a zone", "version": 150}, 400, "request.invalid"),
])
def test_a_schedule_that_fits_the_schema_but_cannot_run_is_422_and_a_malformed_one_400(
        api: Any, cast: Any, workflow: Any, body: dict[str, Any], status: int, code: str) -> None:
    workflow_services.publish_workflow(actor=cast.owner, workflow=workflow)
    url = reverse("api:workflow-schedules", args=[workflow.pk])
    response = api(cast.editor).post(url, {"name": "n", "cron": "0 9 * * 1-5", "timezone": "UTC",
                                           "input": {"amount": 1}, **body}, format="json")
    assert (response.status_code, response.json()["code"]) == (status, code), response.json()
    assert Schedule.objects.count() == 0
    made = api(cast.editor).post(url, {"name": "n", "cron": "0 9 * * mon-fri", "timezone": "Europe/Berlin",
                                       "input": {"amount": 1}}, format="json")
    assert made.status_code == 201 and made.json()["cron"] == "0 9 * * mon-fri"

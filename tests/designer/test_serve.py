"""``manage.py serve`` (what ``make run`` starts) takes bursts: every connection of 100 simultaneous run starts,
and of a burst of webhook calls within the webhook's rate limit, gets its answer and nothing is lost.

Django's development server, which ``make run`` used before, listens with a backlog of 5 and reset some of 50
simultaneous connections (no run, no error for the caller). The server here is the real process, on the test's
database, answering real sockets; each request opens its own connection, as 100 separate callers would.
"""

from __future__ import annotations

import http.client
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from runtime import WorkflowBuilder

BURST = 100


@pytest.fixture
def server(served: str) -> int:
    """The port of ``manage.py serve`` on this test's database (the ``served`` fixture)."""
    return int(served.rsplit(":", 1)[1])


def one_step_document() -> dict[str, Any]:
    graph = WorkflowBuilder("burst", "Burst", input_schema={
        "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    graph.use("math", "add", input=[{"target": "op", "value": "add"}, {"target": "a", "path": "input.n"},
                                    {"target": "b", "value": 1}])
    return graph.build().model_dump(mode="json")


@pytest.fixture
def published(make_user: Any) -> tuple[Any, str]:
    """A published one-step workflow and an API token of its owner."""
    from designer.access import teams, tokens
    from designer.workflows import services as workflows

    owner = make_user("burst-owner")
    team = teams.create_team(actor=owner, name="Burst")
    workflow = workflows.create_workflow(actor=owner, team=team, name="Burst", document=one_step_document())
    workflows.publish_workflow(actor=owner, workflow=workflow, note="for the burst")
    return workflow, tokens.create_token(actor=owner, name="burst").secret


def post_all(port: int, requests: list[tuple[str, dict[str, str], bytes]]) -> list[tuple[int, dict[str, str], Any]]:
    """Send every request at once, each on its own connection; (status, headers, JSON body) of each, or the
    exception a connection raised (a reset, a refusal) in place of the status."""
    start = threading.Barrier(len(requests))

    def send(request: tuple[str, dict[str, str], bytes]) -> tuple[Any, dict[str, str], Any]:
        path, headers, body = request
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        try:
            start.wait()
            connection.request("POST", path, body=body, headers={"Content-Type": "application/json", **headers})
            response = connection.getresponse()
            payload = response.read()
            return response.status, dict(response.getheaders()), json.loads(payload) if payload else None
        except (OSError, http.client.HTTPException) as error:
            return error, {}, None
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=len(requests)) as pool:
        return list(pool.map(send, requests))


def test_a_hundred_run_starts_at_once_are_each_answered_and_each_created(server: int, published: tuple[Any, str]
                                                                       ) -> None:
    from designer.models import Run

    workflow, token = published
    path = f"/api/workflows/{workflow.pk}/runs/"
    answers = post_all(server, [(path, {"Authorization": f"Bearer {token}"},
                                 json.dumps({"input": {"n": n}, "version": 1}).encode()) for n in range(BURST)])
    lost = [status for status, _headers, _body in answers if not isinstance(status, int)]
    assert not lost, f"{len(lost)} of {BURST} connections got no answer: {lost[:3]}"
    statuses = sorted({status for status, _headers, _body in answers})
    assert set(statuses) <= {201, 429}, f"answers other than 201/429: {statuses}"
    for status, headers, _body in answers:
        if status == 429:
            assert int(headers["Retry-After"]) > 0
    created = {body["id"] for status, _headers, body in answers if status == 201}
    assert len(created) == sum(1 for status, *_ in answers if status == 201)
    assert set(Run.objects.filter(workflow=workflow).values_list("pk", flat=True)) == created
    # Nothing limits one owner's run starts today, so every one of them is a run.
    assert len(created) == BURST
    inputs = sorted(Run.objects.get(pk=pk).input["n"] for pk in created)
    assert inputs == list(range(BURST))


def test_a_burst_of_webhook_calls_within_the_rate_limit_loses_none(server: int, published: tuple[Any, str]) -> None:
    from designer.models import Run
    from designer.triggers import services as triggers

    workflow, _token = published
    hook = triggers.create_webhook(actor=workflow.created_by, workflow=workflow, name="burst", rate_limit=BURST)
    answers = post_all(server, [(f"/hooks/{hook.secret}/", {}, json.dumps({"n": n}).encode())
                                for n in range(BURST)])
    lost = [status for status, _headers, _body in answers if not isinstance(status, int)]
    assert not lost, f"{len(lost)} of {BURST} webhook calls got no answer: {lost[:3]}"
    assert {status for status, *_ in answers} == {202}, answers[:3]
    assert sorted(run.input["n"] for run in Run.objects.filter(workflow=workflow)) == list(range(BURST))

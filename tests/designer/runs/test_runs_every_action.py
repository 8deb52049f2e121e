"""Every run action, page and API operation, on a run in every status and with each kind of damage, twice in a row:
each answers a status it documents (the API: one its schema lists for the operation), never a 5xx.

The routes are not listed by hand: the test walks the URLconf (every route taking a ``run_id``, the admin's run
pages) and the API schema (every operation on a ``{run_id}`` path) and fails when one has no request below, so a
new run action joins the test when it is added. A run is a real one (a foreach whose items wait at interrupts,
executed in-process and checkpointed by the ORM checkpointer), then set to the status and damaged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import jsonschema
import pytest
from django.db.models import JSONField as JSONModelField
from django.db.models import Value
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from designer.models import Run, RunCheckpoint, RunEvent, RunInput, RunStatePart
from designer.runs import services as run_services
from designer.runs.executor import execute
from designer.workflows import services as workflow_services
from runtime import WorkflowBuilder
from tests.designer.clients import client_for, htmx
from tests.designer.runs_support import greeting_document

pytestmark = pytest.mark.django_db


def _states(run: Run, change: Callable[[Any], Any]) -> None:
    """Apply ``change`` to the run's latest checkpoint and to every kept one (the checkpoint pages read those)."""
    Run.objects.filter(pk=run.pk).update(run_state=Value(change(run.run_state), output_field=JSONModelField()))
    for row in RunCheckpoint.objects.filter(run=run):
        RunCheckpoint.objects.filter(pk=row.pk).update(state=Value(change(row.state), output_field=JSONModelField()))


def _frames_not_object(state: Any) -> Any:
    return {**state, "frames": ["not", "a", "map"]}


DAMAGES: dict[str, Callable[[Run], None]] = {
    "intact": lambda run: None,
    "state_not_object": lambda run: _states(run, lambda state: [1, 2, 3]),
    "frames_not_object": lambda run: _states(run, _frames_not_object),
    "parts_missing": lambda run: RunStatePart.objects.filter(run=run).delete() and None,
    "document_invalid": lambda run: Run.objects.filter(pk=run.pk).update(
        document={"id": "greetings", "nodes": "not a list", "version": "x"}) and None,
    "document_nodes_invalid": lambda run: Run.objects.filter(pk=run.pk).update(
        document={**run.document, "nodes": [{"id": "ask", "kind": "no such kind"}, "not a node"]}) and None,
    "versions_mistyped": lambda run: Run.objects.filter(pk=run.pk).update(
        subgraph_versions=Value(["child", "three"], output_field=JSONModelField())) and None,
    "interrupts_not_a_list": lambda run: Run.objects.filter(pk=run.pk).update(
        interrupts=Value({"not": "a list"}, output_field=JSONModelField())) and None,
    "input_missing": lambda run: RunInput.objects.filter(run=run).delete() and None,
    "input_not_object": lambda run: RunInput.objects.filter(run=run).update(
        value=Value([1, 2], output_field=JSONModelField())) and None,
    "events_not_objects": lambda run: RunEvent.objects.filter(run=run).update(
        data=Value([1, "two"], output_field=JSONModelField())) and None,
}

#: Statuses a page may answer: a page, a redirect after an action, the form again with its error (400/422), a
#: refusal (403, 404: the run was deleted by the first of the two calls; 409: the run's status or damage).
PAGE_STATUSES = {200, 302, 400, 403, 404, 409, 422}


@dataclass(frozen=True, slots=True)
class Call:
    method: str
    url: str
    data: dict[str, Any] | None = None
    headers: dict[str, str] | None = None


def _frame_id(run: Run) -> str:
    interrupts = run.interrupts if isinstance(run.interrupts, list) else []
    first = interrupts[0] if interrupts and isinstance(interrupts[0], dict) else {}
    return str(first.get("frame_id") or "frame_none")


def _interrupt_id(run: Run) -> str:
    interrupts = run.interrupts if isinstance(run.interrupts, list) else []
    first = interrupts[0] if interrupts and isinstance(interrupts[0], dict) else {}
    return str(first.get("id") or "interrupt_none")


def _step(run: Run) -> int:
    return RunCheckpoint.objects.filter(run=run).values_list("step", flat=True).first() or 0


#: One or more calls per page route that takes a run (by URL name); deleting comes last (it ends the run).
PAGE_CALLS: dict[str, Callable[[Run], list[Call]]] = {
    "run-detail": lambda run: [Call("GET", reverse("run-detail", args=[run.pk])),
                               Call("GET", reverse("run-detail", args=[run.pk]), headers=htmx("run-live"))],
    "run-events": lambda run: [Call("GET", reverse("run-events", args=[run.pk])),
                               Call("GET", reverse("run-events", args=[run.pk]), headers=htmx("run-events"))],
    "run-live": lambda run: [Call("GET", reverse("run-live", args=[run.pk]))],
    "run-timeline": lambda run: [Call("GET", reverse("run-timeline", args=[run.pk])),
                                 Call("GET", reverse("run-timeline", args=[run.pk]), headers=htmx("timeline"))],
    "run-graph": lambda run: [Call("GET", reverse("run-graph", args=[run.pk])),
                              Call("GET", reverse("run-graph", args=[run.pk]), {"states": "1"}),
                              Call("GET", reverse("run-graph", args=[run.pk]), {"scope": _frame_id(run)})],
    "run-node-executions": lambda run: [
        Call("GET", reverse("run-node-executions", args=[run.pk, "ask"])),
        Call("GET", reverse("run-node-executions", args=[run.pk, "ask"]), {"only": "failed", "item.people": "0"},
             headers=htmx("run-node-panel")),
        Call("GET", reverse("run-node-executions", args=[run.pk, "ask"]), {"scope": _frame_id(run)})],
    "run-frame": lambda run: [Call("GET", reverse("run-frame", args=[run.pk, _frame_id(run)])),
                              Call("GET", reverse("run-frame", args=[run.pk, _frame_id(run)]),
                                   headers=htmx("frame-panel"))],
    "run-resume": lambda run: [Call("POST", reverse("run-resume", args=[run.pk]),
                                    {"interrupt_id": _interrupt_id(run), "field.answer": "hi"})],
    "run-redrive": lambda run: [Call("POST", reverse("run-redrive", args=[run.pk])),
                                Call("POST", reverse("run-redrive", args=[run.pk]), headers=htmx("main"))],
    "run-rerun": lambda run: [Call("POST", reverse("run-rerun", args=[run.pk]), {"input": "", "version": "same"}),
                              Call("POST", reverse("run-rerun", args=[run.pk]), {"input": "", "version": "latest"},
                                   headers=htmx("rerun-form"))],
    "run-checkpoint": lambda run: [Call("GET", reverse("run-checkpoint", args=[run.pk, _step(run)])),
                                   Call("GET", reverse("run-checkpoint", args=[run.pk, _step(run)]),
                                        headers=htmx("frame-panel"))],
    "run-fork": lambda run: [Call("POST", reverse("run-fork", args=[run.pk, _step(run)]), {"state": ""},
                                  headers=htmx("frame-panel"))],
    # Pages that take the run as a parameter rather than in their path.
    "editor-run-overlay": lambda run: [Call("GET", reverse("editor-run-overlay", args=[run.workflow_id]),
                                            {"run": run.pk})],
    "editor-run-node": lambda run: [Call("GET", reverse("editor-run-node", args=[run.workflow_id]),
                                         {"run": run.pk, "node": "ask"}, headers=htmx("run-node"))],
    "editor-try-node-executions": lambda run: [Call("GET", reverse("editor-try-node-executions",
                                                                   args=[run.workflow_id]),
                                                    {"run": run.pk, "node": "ask"}, headers=htmx("try-executions"))],
    "editor-try-node-start": lambda run: [Call("POST", reverse("editor-try-node-start", args=[run.workflow_id]),
                                               {"run": run.pk, "node": "ask", "frame": _frame_id(run)},
                                               headers=htmx("try-outcome"))],
    "admin:designer_run_change": lambda run: [Call("GET", reverse("admin:designer_run_change", args=[run.pk]))],
    "admin:designer_run_history": lambda run: [Call("GET", reverse("admin:designer_run_history", args=[run.pk]))],
    "admin:designer_run_changelist": lambda run: [Call("GET", reverse("admin:designer_run_changelist"))],
    "admin:designer_run_add": lambda run: [Call("GET", reverse("admin:designer_run_add"))],
    "run-cancel": lambda run: [Call("POST", reverse("run-cancel", args=[run.pk]))],
    "admin:designer_run_delete": lambda run: [Call("GET", reverse("admin:designer_run_delete", args=[run.pk]))],
    "run-delete": lambda run: [Call("POST", reverse("run-delete", args=[run.pk]))],
}

#: One call per API operation on a run (method, path as the schema writes it); deleting comes last.
API_CALLS: dict[tuple[str, str], Callable[[Run], Call]] = {
    ("get", "/api/runs/{run_id}/"): lambda run: Call("GET", f"/api/runs/{run.pk}/"),
    ("get", "/api/runs/{run_id}/events/"): lambda run: Call("GET", f"/api/runs/{run.pk}/events/"),
    ("get", "/api/runs/{run_id}/frames/{frame_id}/context/"):
        lambda run: Call("GET", f"/api/runs/{run.pk}/frames/{_frame_id(run)}/context/"),
    ("get", "/api/runs/{run_id}/nodes/{node_id}/executions/"):
        lambda run: Call("GET", f"/api/runs/{run.pk}/nodes/ask/executions/", {"page_size": "1"}),
    ("get", "/api/runs/{run_id}/checkpoints/"): lambda run: Call("GET", f"/api/runs/{run.pk}/checkpoints/"),
    ("get", "/api/runs/{run_id}/checkpoints/{step}/"):
        lambda run: Call("GET", f"/api/runs/{run.pk}/checkpoints/{_step(run)}/"),
    ("post", "/api/runs/{run_id}/resume/"): lambda run: Call(
        "POST", f"/api/runs/{run.pk}/resume/", {"interrupt_id": _interrupt_id(run), "value": {"answer": "hi"}}),
    ("post", "/api/runs/{run_id}/redrive/"): lambda run: Call("POST", f"/api/runs/{run.pk}/redrive/", {}),
    ("post", "/api/runs/{run_id}/rerun/"): lambda run: Call("POST", f"/api/runs/{run.pk}/rerun/", {}),
    ("post", "/api/runs/{run_id}/fork/"): lambda run: Call("POST", f"/api/runs/{run.pk}/fork/",
                                                          {"step": _step(run)}),
    ("post", "/api/runs/{run_id}/cancel/"): lambda run: Call("POST", f"/api/runs/{run.pk}/cancel/", {}),
    ("delete", "/api/runs/{run_id}/"): lambda run: Call("DELETE", f"/api/runs/{run.pk}/"),
}


def _walk(patterns: list[URLPattern | URLResolver], namespace: str = "", prefix: str = ""
          ) -> Iterator[tuple[str, str]]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            yield from _walk(pattern.url_patterns, inner, prefix + str(pattern.pattern))
        elif pattern.name:
            yield f"{namespace}{pattern.name}", prefix + str(pattern.pattern)


def page_run_routes() -> set[str]:
    """The names of every page route that acts on one run: a ``run_id`` in its path, or the admin's run pages."""
    return {name for name, route in _walk(get_resolver().url_patterns)
            if not name.startswith("api:") and ("run_id" in route or name.startswith("admin:designer_run_"))}


SCHEMA: dict[str, Any] = SchemaGenerator().get_schema(request=None, public=True)


def api_run_operations() -> dict[tuple[str, str], set[str]]:
    """Every API operation on one run: (method, path) -> the statuses its schema documents."""
    return {(method, path): set(operation["responses"])
            for path, item in SCHEMA["paths"].items() if "{run_id}" in path
            for method, operation in item.items() if method in ("get", "post", "put", "patch", "delete")}


def _json_schema(node: Any) -> Any:
    """OpenAPI 3.0's ``nullable`` as JSON Schema (what jsonschema validates)."""
    if isinstance(node, list):
        return [_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    converted = {key: _json_schema(value) for key, value in node.items() if key != "nullable"}
    if not node.get("nullable"):
        return converted
    if isinstance(converted.get("type"), str) and "$ref" not in converted and "allOf" not in converted:
        converted["type"] = [converted["type"], "null"]
        if "enum" in converted:
            converted["enum"] = [*converted["enum"], None]
        return converted
    return {"anyOf": [converted, {"type": "null"}]}


COMPONENTS = _json_schema(SCHEMA["components"])


def assert_body_fits_the_schema(key: tuple[str, str], status: int, body: Any) -> None:
    """A 2xx body is one the schema allows for this operation and status (every field, every nested event)."""
    content = SCHEMA["paths"][key[1]][key[0]]["responses"][str(status)].get("content", {})
    declared = content.get("application/json", {}).get("schema")
    assert declared is not None, f"{key} answers {status} with a body its schema does not declare"
    validator = jsonschema.Draft7Validator({"allOf": [_json_schema(declared)], "components": COMPONENTS})
    problems = [f"{'/'.join(map(str, error.absolute_path)) or '(body)'}: {error.message[:200]}"
                for error in validator.iter_errors(body)]
    assert problems == [], (key, status, problems[:5])


def test_every_run_route_and_operation_is_driven() -> None:
    """A new run page or API operation fails here until it has a request in PAGE_CALLS or API_CALLS."""
    assert page_run_routes() - set(PAGE_CALLS) == set()
    assert set(api_run_operations()) - set(API_CALLS) == set()
    assert {"run-redrive", "run-fork", "admin:designer_run_change"} <= page_run_routes()  # the walk finds them


def _run(cast: Any, status: str, damage: str) -> Run:
    workflow = workflow_services.create_workflow(actor=cast.owner, team=cast.team, name="Greetings",
                                                 document=greeting_document())
    run = run_services.start_run(actor=cast.owner, workflow=workflow, input={"names": ["Ada", "Grace"]})
    assert execute(run.pk) == "interrupted"
    run = Run.objects.get(pk=run.pk)
    DAMAGES[damage](run)
    Run.objects.filter(pk=run.pk).update(status=status)
    return Run.objects.get(pk=run.pk)


def _send(client: Client | APIClient, call: Call, *, api: bool) -> Any:
    headers = call.headers or {}
    if call.method == "GET":
        return client.get(call.url, call.data or {}, **headers)
    if call.method == "DELETE":
        return client.delete(call.url, **headers)
    if api:
        return client.post(call.url, call.data or {}, format="json", **headers)  # type: ignore[call-arg]
    return client.post(call.url, call.data or {}, **headers)


@pytest.mark.parametrize("damage", sorted(DAMAGES))
@pytest.mark.parametrize("status", [choice.value for choice in Run.Status])
def test_every_action_answers_a_documented_status(status: str, damage: str, cast: Any, make_user: Any) -> None:
    pages = client_for(cast.owner, raise_request_exception=False)
    admin = client_for(make_user("root", is_staff=True, is_superuser=True), raise_request_exception=False)
    api = APIClient(raise_request_exception=False)
    api.force_login(cast.owner)
    operations = api_run_operations()

    run = _run(cast, status, damage)
    for key, make in API_CALLS.items():
        for attempt in (1, 2):
            call = make(run)
            response = _send(api, call, api=True)
            assert str(response.status_code) in operations[key], (key, attempt, response.status_code,
                                                                  response.content[:300])
            assert response.status_code == 204 or response["Content-Type"].startswith("application/json"), key
            if 200 <= response.status_code < 300 and response.status_code != 204:
                assert_body_fits_the_schema(key, response.status_code, response.json())

    run = _run(cast, status, damage)
    for name, make_calls in PAGE_CALLS.items():
        client = admin if name.startswith("admin:") else pages
        for attempt in (1, 2):
            for call in make_calls(run):
                response = _send(client, call, api=False)
                assert response.status_code in PAGE_STATUSES, (name, call, attempt, response.status_code,
                                                               response.content[:300])


def test_a_double_clicked_redrive_answers_the_second_press_with_a_409_page(cast: Any) -> None:
    """A real failed run: the first press queues the redrive, the second meets the run already queued (a
    ``RunConflict``, a 500 before) and says so on a page of its own, linking back to the run."""
    graph = WorkflowBuilder("dividing", state_schema={"type": "object", "properties": {"out": {}}})
    graph.use("math", id="divide", input=[{"target": "op", "value": "div"}, {"target": "a", "value": 1},
                                          {"target": "b", "value": 0}], output=[{"source": ".", "target": "out"}])
    workflow = workflow_services.create_workflow(actor=cast.owner, team=cast.team, name="Dividing",
                                                 document=graph.build().model_dump(mode="json"))
    run = run_services.start_run(actor=cast.owner, workflow=workflow, input={})
    assert execute(run.pk) == "failed"
    client = client_for(cast.owner)
    first = client.post(reverse("run-redrive", args=[run.pk]))
    assert first.status_code == 302 and Run.objects.get(pk=run.pk).status == "queued"
    second = client.post(reverse("run-redrive", args=[run.pk]))
    assert second.status_code == 409
    page = second.content.decode()
    assert "run.conflict" in page and "is queued" in page
    assert f'href="{reverse("run-detail", args=[run.pk])}"' in page

"""The API's contract with its schema, beyond what the schemathesis run samples: JSON errors on every path under
/api/, every operation documenting its errors, typed runs and events, unknown fields refused, and the schema's
own example document accepted by the endpoints it is the example for."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def schema_of(api: Any, user: Any) -> dict[str, Any]:
    return api(user).get(reverse("api-schema"), {"format": "json"}).json()


@pytest.mark.parametrize("path", ["/api/nothing-here/", "/api/workflows/not-a-number/", "/api/teams", "/api/x/y/z"])
def test_unknown_api_paths_answer_json_404(path: str, cast: Any, api: Any) -> None:
    for client in (api(cast.owner), api(None)):
        response = client.get(path)
        assert response.status_code == 404 and response["Content-Type"].startswith("application/json")
        assert response.json()["code"] == "not_found"
        assert client.delete(path).json()["code"] == "not_found"


def test_a_wrong_method_answers_json_405(cast: Any, api: Any) -> None:
    response = api(cast.owner).put(reverse("api:team-list"), {}, format="json")
    assert response.status_code == 405 and response.json()["code"] == "method.not_allowed"
    assert "GET" in response["Allow"]


def test_every_operation_documents_its_error_answers(cast: Any, api: Any) -> None:
    schema = schema_of(api, cast.owner)
    assert schema["components"]["schemas"]["Error"]["required"] == ["code", "message"]
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            for status in ("400", "401", "403", "404", "405", "409", "413", "415"):
                content = operation["responses"][status]["content"]["application/json"]
                assert content["schema"] == {"$ref": "#/components/schemas/Error"}, (method, path, status)
    assert not any("{" not in p and p.endswith(".*$") for p in schema["paths"])  # the JSON 404 is not an operation


def test_runs_and_events_are_typed_in_the_schema(cast: Any, api: Any) -> None:
    schema = schema_of(api, cast.owner)
    components = schema["components"]["schemas"]
    detail = schema["paths"]["/api/runs/{run_id}/"]["get"]["responses"]["200"]["content"]["application/json"]
    assert detail["schema"] == {"$ref": "#/components/schemas/RunDetail"}
    assert {"status", "input", "output", "interrupts", "progress"} <= set(components["RunDetail"]["properties"])
    assert components["RunPage"]["properties"]["results"]["items"] == {"$ref": "#/components/schemas/RunSummary"}
    assert components["EventPage"]["properties"]["events"]["items"] == {"$ref": "#/components/schemas/Event"}
    start = schema["paths"]["/api/workflows/{workflow_id}/runs/"]["post"]["requestBody"]["content"]
    assert components["StartRunRequest"]["properties"]["input"]["type"] == "object"
    assert "application/json" in start
    # Without a version the latest published version runs; the draft only by name; nothing published is a 409.
    version = components["StartRunRequest"]["properties"]["version"]
    assert {"type": "string", "enum": ["draft"]} in version["oneOf"] and version["nullable"] is True
    assert "latest published version" in version["description"]
    operation = schema["paths"]["/api/workflows/{workflow_id}/runs/"]["post"]
    assert "latest published version" in operation["description"]
    conflict = operation["responses"]["409"]
    assert "workflow.not_published" in conflict["description"] and "content" in conflict


def test_the_schemas_example_document_validates_and_saves(cast: Any, api: Any, workflow: Any) -> None:
    schema = schema_of(api, cast.owner)
    document = schema["components"]["schemas"]["ValidateRequest"]["properties"]["document"]
    assert "#/components/schemas/WorkflowDocument" in str(document)  # the runtime's document schema, by reference
    example = schema["components"]["schemas"]["WorkflowDocument"]["example"]
    client = api(cast.owner)
    checked = client.post(reverse("api:workflow-validate", args=[workflow.pk]), {"document": example},
                          format="json")
    assert checked.status_code == 200 and checked.json()["ok"] is True, checked.json()
    saved = client.put(reverse("api:workflow-document", args=[workflow.pk]),
                       {"revision": workflow.revision, "document": example}, format="json")
    assert saved.status_code == 200


def test_request_bodies_refuse_unknown_fields_and_wrong_types(cast: Any, api: Any, workflow: Any) -> None:
    client = api(cast.owner)
    misspelt = client.patch(reverse("api:workflow-detail", args=[workflow.pk]), {"nmae": "x"}, format="json")
    assert misspelt.status_code == 400 and misspelt.json()["errors"][0]["loc"] == "nmae"
    number_as_name = client.post(reverse("api:team-list"), {"name": 7}, format="json")
    assert number_as_name.status_code == 400
    blank = client.post(reverse("api:team-list"), {"name": "   "}, format="json")
    assert blank.status_code == 400
    schema = schema_of(api, cast.owner)["components"]["schemas"]
    assert schema["PatchedWorkflowUpdateRequest"]["additionalProperties"] is False
    assert "pattern" in schema["TeamCreateRequest"]["properties"]["name"]


def test_the_api_root_lists_the_collections_every_link_answering(client: Any, cast: Any) -> None:
    """``/api/`` (the browsable API's breadcrumbs link to it) lists where things are; every link works."""
    client.force_login(cast.viewer)
    root = client.get("/api/", HTTP_ACCEPT="application/json")
    assert root.status_code == 200
    links = root.json()
    assert {"teams", "workflows", "runs", "tasks", "invitations", "schema", "docs"} <= set(links)
    for name, url in links.items():
        assert client.get(url).status_code == 200, name
    assert client.get("/api/", HTTP_ACCEPT="text/html").status_code == 200  # the browsable page
    crumbs = client.get("/api/workflows/", HTTP_ACCEPT="text/html").context["breadcrumblist"]
    assert [name for name, _ in crumbs] == ["Api Root", "Workflow List"]


def _operations(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(method, path, operation) for path, item in schema["paths"].items()
            for method, operation in item.items() if method in ("get", "post", "put", "patch", "delete")]


def _url(path: str, ids: dict[str, int]) -> str:
    for name, value in ids.items():
        path = path.replace("{" + name + "}", str(value))
    return re.sub(r"\{[a-z_]+\}", "1", path)


def test_every_operation_says_which_credentials_it_takes(cast: Any, api: Any) -> None:
    schema = schema_of(api, cast.owner)
    assert schema["components"]["securitySchemes"]["csrfToken"] == {
        "type": "apiKey", "in": "header", "name": "X-CSRFToken",
        "description": schema["components"]["securitySchemes"]["csrfToken"]["description"]}
    for method, path, operation in _operations(schema):
        session = {"cookieAuth": []} if method == "get" else {"cookieAuth": [], "csrfToken": []}
        assert operation["security"] == [{"bearerAuth": []}, session], (method, path)


def test_every_operation_answers_401_with_the_challenge_without_credentials(cast: Any, api: Any,
                                                                             workflow: Any) -> None:
    """Anonymous, or with a bad token: 401 with WWW-Authenticate on every operation, as the schema documents."""
    schema = schema_of(api, cast.owner)
    ids = {"workflow_id": workflow.pk, "team_id": cast.team.pk}
    anonymous = APIClient()
    for method, path, operation in _operations(schema):
        assert "401" in operation["responses"], (method, path)
        for headers in ({}, {"HTTP_AUTHORIZATION": "Bearer trl_revoked-or-never-made"}):
            response = getattr(anonymous, method)(_url(path, ids), **headers)
            assert response.status_code == 401, (method, path, headers, response.status_code)
            assert response["WWW-Authenticate"] == 'Bearer realm="api"'
            assert response.json()["code"] in ("auth.required", "auth.failed")


def test_a_session_write_without_its_csrf_token_is_refused(cast: Any, workflow: Any) -> None:
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(cast.owner)
    url = reverse("api:workflow-publish", args=[workflow.pk])
    refused = client.post(url, {"note": "v1"}, format="json")
    assert refused.status_code == 403 and refused.json()["code"] == "csrf.failed"
    client.get(reverse("api:workflow-list"))  # any page sets the csrftoken cookie
    token = client.cookies["csrftoken"].value if "csrftoken" in client.cookies else None
    if token is None:
        client.cookies["csrftoken"] = token = "a" * 32
    accepted = client.post(url, {"note": "v1"}, format="json", HTTP_X_CSRFTOKEN=token)
    assert accepted.status_code == 201, accepted.json()


def test_every_closed_request_body_refuses_an_unknown_field(cast: Any, api: Any, workflow: Any) -> None:
    """Each operation whose request body the schema closes (additionalProperties: false) answers 400 naming a field
    it does not have, before doing anything (publish accepted {"bogus": 1} and published)."""
    schema = schema_of(api, cast.owner)
    components = schema["components"]["schemas"]
    ids = {"workflow_id": workflow.pk, "team_id": cast.team.pk, "user_id": cast.editor.pk}
    client = api(cast.owner)
    checked = []
    for method, path, operation in _operations(schema):
        ref = (operation.get("requestBody", {}).get("content", {}).get("application/json", {})
               .get("schema", {}).get("$ref", ""))
        component = components.get(ref.rsplit("/", 1)[-1]) if ref else None
        if not component or component.get("additionalProperties") is not False:
            continue
        response = getattr(client, method)(_url(path, ids), {"unexpected_field": 1}, format="json")
        if response.status_code == 404:
            continue  # the path's object (an id of 1) does not exist: nothing was parsed
        assert response.status_code == 400, (method, path, response.status_code, response.json())
        assert any(error["loc"] == "unexpected_field" for error in response.json()["errors"]), (method, path)
        checked.append((method, path))
    assert ("post", "/api/workflows/{workflow_id}/publish/") in checked
    assert len(checked) >= 10, checked
    assert not workflow.versions.exists()  # the refused publish published nothing

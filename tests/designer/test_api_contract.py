"""The API's contract with its schema, beyond what the schemathesis run samples: JSON errors on every path under
/api/, every operation documenting its errors, typed runs and events, unknown fields refused, and the schema's
own example document accepted by the endpoints it is the example for."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

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

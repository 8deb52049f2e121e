from __future__ import annotations

import copy
import json

import pytest
from django.urls import reverse

from designer.models import Workflow, WorkflowVersion
from designer.workflows import services

pytestmark = pytest.mark.django_db


def url(name, *args):
    return reverse(f"api:{name}", args=args)


# --- list, create, detail -------------------------------------------------------


def test_list_is_scoped_to_the_callers_teams_and_searchable(cast, api, workflow):
    client = api(cast.viewer)
    services.create_workflow(actor=cast.stranger, team=cast.other_team, name="Secret plan")
    services.create_workflow(actor=cast.editor, team=cast.team, name="Invoices", description="monthly billing")

    names = [w["name"] for w in client.get(url("workflow-list")).json()]
    assert names == ["Invoices", "Simple flow"]
    assert [w["name"] for w in client.get(url("workflow-list"), {"q": "billing"}).json()] == ["Invoices"]
    assert client.get(url("workflow-list"), {"team": cast.other_team.pk}).json() == []
    # The schema types ?team= as an integer: anything else is a 400, not an empty list.
    assert client.get(url("workflow-list"), {"team": "nonsense"}).json()["code"] == "request.invalid"
    row = client.get(url("workflow-list"), {"team": cast.team.pk, "q": "simple"}).json()[0]
    assert set(row) >= {"id", "team", "slug", "name", "description", "revision", "updated_at", "latest_version"}
    assert row["latest_version"] is None and row["team"] == cast.team.pk


def test_create_with_and_without_document(cast, api, document):
    client = api(cast.editor)
    response = client.post(url("workflow-list"), {"team": cast.team.pk, "name": "Blank"}, format="json")
    assert response.status_code == 201
    assert response.json()["slug"] == "blank" and response.json()["revision"] == 1
    response = client.post(url("workflow-list"), {"team": cast.team.pk, "name": "Full", "document": document},
                           format="json")
    assert response.status_code == 201
    body = client.get(url("workflow-document", response.json()["id"])).json()
    assert [n["id"] for n in body["document"]["nodes"]] == ["assess", "record"]


def test_create_validates_the_request(cast, api):
    response = api(cast.editor).post(url("workflow-list"), {"name": "No team"}, format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "request.invalid" and body["errors"][0]["loc"] == "team"


def test_patch_and_delete(cast, api, workflow):
    client = api(cast.editor)
    response = client.patch(url("workflow-detail", workflow.pk), {"name": "Renamed"}, format="json")
    assert response.status_code == 200 and response.json()["name"] == "Renamed"
    assert client.delete(url("workflow-detail", workflow.pk)).status_code == 204
    assert client.get(url("workflow-detail", workflow.pk)).status_code == 404


# --- document: save, conflicts, invalid ------------------------------------------


def test_get_document_returns_revision_document_diagnostics_and_analysis(cast, api, workflow):
    body = api(cast.viewer).get(url("workflow-document", workflow.pk)).json()
    assert body["revision"] == 1 and body["document"]["id"] == workflow.slug
    assert body["diagnostics"] == []
    analysis = body["analysis"]
    assert analysis["ok"] is True and analysis["reachable"] == ["assess", "record"]
    assert analysis["control_regions"] == {"assess": [], "record": []}


def test_put_document_stores_even_with_errors_and_returns_diagnostics(cast, api, workflow, document):
    broken = copy.deepcopy(document)
    broken["nodes"].append({"kind": "task", "id": "orphan", "task": "no_such_task"})
    response = api(cast.editor).put(url("workflow-document", workflow.pk),
                                    {"revision": 1, "document": broken}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["revision"] == 2
    codes = {(d["code"], d["node_id"]) for d in body["diagnostics"]}
    assert ("node.unreachable", "orphan") in codes
    assert body["analysis"]["ok"] is False
    assert Workflow.objects.get(pk=workflow.pk).revision == 2


def test_put_document_with_stale_revision_is_409_and_changes_nothing(cast, api, workflow, document):
    editor, owner = api(cast.editor), api(cast.owner)
    first = copy.deepcopy(document)
    first["description"] = "editor's change"
    assert editor.put(url("workflow-document", workflow.pk), {"revision": 1, "document": first},
                      format="json").status_code == 200
    second = copy.deepcopy(document)
    second["description"] = "owner's change, based on revision 1"
    response = owner.put(url("workflow-document", workflow.pk), {"revision": 1, "document": second},
                         format="json")
    assert response.status_code == 409
    body = response.json()
    assert body["code"] == "revision.conflict" and body["current_revision"] == 2
    assert body["document"]["description"] == "editor's change"
    stored = Workflow.objects.get(pk=workflow.pk)
    assert (stored.revision, stored.document["description"]) == (2, "editor's change")


def test_put_malformed_document_is_400_with_readable_errors(cast, api, workflow, document):
    bad = copy.deepcopy(document)
    bad["routes"].append({"source": "assess", "label": "auto", "target": "nowhere"})
    bad["nodes"][0]["input"][0]["path"] = "output.amount"
    response = api(cast.editor).put(url("workflow-document", workflow.pk), {"revision": 1, "document": bad},
                                    format="json")
    assert response.status_code == 422  # well-formed request, a document the runtime refuses
    body = response.json()
    assert body["code"] == "document.invalid"
    assert body["errors"] and all(set(e) == {"loc", "msg"} for e in body["errors"])
    assert any("output" in e["msg"] for e in body["errors"])
    assert "Traceback" not in response.content.decode()
    assert Workflow.objects.get(pk=workflow.pk).revision == 1


def test_put_document_that_is_not_an_object(cast, api, workflow):
    response = api(cast.editor).put(url("workflow-document", workflow.pk), {"revision": 1, "document": [1, 2]},
                                    format="json")
    assert response.status_code == 400 and response.json()["code"] == "request.invalid"


def test_put_document_with_too_many_nodes_is_400(cast, api, workflow, settings):
    settings.TRELLIS_MAX_DOCUMENT_NODES = 5
    nodes = [{"kind": "task", "id": f"n{i}", "task": "sum_totals"} for i in range(6)]
    response = api(cast.editor).put(url("workflow-document", workflow.pk),
                                    {"revision": 1, "document": {"id": "x", "nodes": nodes}}, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "document.too_large" and response.json()["limit"] == 5


def test_body_over_the_limit_is_413_json(cast, api, workflow, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    payload = json.dumps({"revision": 1, "document": {"id": "x", "description": "y" * 2000}})
    response = api(cast.editor).generic("PUT", url("workflow-document", workflow.pk), payload,
                                        content_type="application/json")
    assert response.status_code == 413
    assert response.json()["code"] == "request.too_large"
    assert Workflow.objects.get(pk=workflow.pk).revision == 1


def test_malformed_json_body_is_400_json(cast, api, workflow):
    response = api(cast.editor).generic("PUT", url("workflow-document", workflow.pk), "{not json",
                                        content_type="application/json")
    assert response.status_code == 400 and response.json()["code"] == "request.malformed"


# --- validate, analysis --------------------------------------------------------------


def test_validate_stored_draft_and_a_given_document(cast, api, workflow, document):
    client = api(cast.viewer)
    body = client.get(url("workflow-validate", workflow.pk)).json()
    assert body["ok"] is True and body["diagnostics"] == []
    assert set(body["labels"]["assess"]) >= {"auto", "review"}
    broken = copy.deepcopy(document)
    broken["nodes"][0]["input"] = []
    body = client.post(url("workflow-validate", workflow.pk), {"document": broken}, format="json").json()
    assert body["ok"] is False
    assert {d["code"] for d in body["diagnostics"]} >= {"binding.missing_required"}
    assert Workflow.objects.get(pk=workflow.pk).revision == 1  # validating stores nothing


def test_analysis_for_a_node(cast, api, workflow):
    body = api(cast.viewer).get(url("workflow-analysis", workflow.pk), {"node": "assess"}).json()
    assert body["node_id"] == "assess" and body["reachable"] is True and body["control_region"] == []
    paths = {o["path"] for o in body["path_options"]}
    assert "input.amount" in paths
    option = next(o for o in body["path_options"] if o["path"] == "input.amount")
    assert option["type"] == "number" and option["group"]


def test_analysis_filters_by_the_fields_wanted_schema(cast, api, workflow):
    client = api(cast.viewer)
    body = client.get(url("workflow-analysis", workflow.pk), {"node": "record", "field": "input.approved"}).json()
    assert body["want"]["type"] == "boolean"
    assert "input.amount" not in {o["path"] for o in body["path_options"]}
    every = client.get(url("workflow-analysis", workflow.pk),
                       {"node": "record", "field": "input.approved", "all": "1"}).json()
    amount = next(o for o in every["path_options"] if o["path"] == "input.amount")
    assert amount["compatibility"] == "incompatible"


def test_analysis_with_an_explicit_want(cast, api, workflow):
    body = api(cast.viewer).get(url("workflow-analysis", workflow.pk),
                                {"node": "record", "want": json.dumps({"type": "number"})}).json()
    assert "input.amount" in {o["path"] for o in body["path_options"]}
    response = api(cast.viewer).get(url("workflow-analysis", workflow.pk), {"node": "record", "want": "{oops"})
    assert response.status_code == 400 and response.json()["code"] == "request.invalid"


def test_analysis_of_unknown_node_is_404_and_missing_node_is_400(cast, api, workflow):
    client = api(cast.viewer)
    assert client.get(url("workflow-analysis", workflow.pk), {"node": "ghost"}).status_code == 404
    assert client.get(url("workflow-analysis", workflow.pk)).status_code == 400


# --- publish, versions -------------------------------------------------------------


def test_publish_then_list_and_read_versions(cast, api, workflow):
    client = api(cast.editor)
    response = client.post(url("workflow-publish", workflow.pk), {}, format="json")
    assert response.status_code == 201
    assert response.json()["number"] == 1 and response.json()["published_by"] == "eddie"
    assert client.post(url("workflow-publish", workflow.pk)).json()["number"] == 2
    assert [v["number"] for v in client.get(url("workflow-versions", workflow.pk)).json()] == [2, 1]
    detail = client.get(url("workflow-version", workflow.pk, 1)).json()
    assert detail["document"] == workflow.document
    assert client.get(url("workflow-version", workflow.pk, 9)).status_code == 404
    assert client.get(url("workflow-detail", workflow.pk)).json()["latest_version"] == 2


def test_publish_refuses_a_draft_with_errors(cast, api, workflow, document):
    client = api(cast.editor)
    broken = copy.deepcopy(document)
    broken["nodes"].append({"kind": "task", "id": "orphan", "task": "sum_totals"})
    client.put(url("workflow-document", workflow.pk), {"revision": 1, "document": broken}, format="json")
    response = client.post(url("workflow-publish", workflow.pk))
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "workflow.invalid"
    assert any(d["code"] == "node.unreachable" and d["node_id"] == "orphan" for d in body["diagnostics"])
    assert not WorkflowVersion.objects.exists()


# --- duplicate, import, export ------------------------------------------------------


def test_export_then_import_round_trips(cast, api, workflow):
    client = api(cast.editor)
    response = client.get(url("workflow-export", workflow.pk))
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="{workflow.slug}.json"'
    exported = json.loads(response.content)
    assert exported == workflow.document
    created = client.post(url("workflow-import"), {"team": cast.team.pk, "document": exported, "name": "Back"},
                          format="json")
    assert created.status_code == 201
    copy_doc = client.get(url("workflow-document", created.json()["id"])).json()["document"]
    assert {**copy_doc, "id": None} == {**exported, "id": None}


def test_import_of_garbage_is_422(cast, api):
    response = api(cast.editor).post(url("workflow-import"), {"team": cast.team.pk, "document": {"nodes": 3}},
                                     format="json")
    assert response.status_code == 422 and response.json()["code"] == "document.invalid"


def test_duplicate(cast, api, workflow):
    response = api(cast.editor).post(url("workflow-duplicate", workflow.pk), {}, format="json")
    assert response.status_code == 201
    assert response.json()["name"] == "Copy of Simple flow" and response.json()["id"] != workflow.pk


# --- tasks -------------------------------------------------------------------------


def test_task_catalogue_lists_schemas_and_labels(cast, api):
    tasks = {t["name"]: t for t in api(cast.viewer).get(url("task-list")).json()}
    assert {"fetch_orders", "price_order", "record_decision"} <= set(tasks)
    assert tasks["record_decision"]["labels"] == ["approved", "rejected"]
    assert tasks["fetch_orders"]["input_schema"]["properties"]["customer"]["type"] == "object"
    assert tasks["fetch_orders"]["result_schema"]["type"] == "array"

"""A team's secrets (issue 26): owners and editors create, rotate and delete them; their values are encrypted at
rest with rotatable keys, never returned by the API or a page, never written anywhere a run leaves data. A real
``http_request`` step, run by the real worker, sends a secret in a header to a local listener; then every column
of every table and the worker's output are searched for the value, and it is not there."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography.fernet import Fernet
from django.db import connection

from designer.models import Run, Secret, SecretUse
from designer.runs import services as run_services
from designer.secrets import crypto
from designer.secrets import services as secret_services
from designer.workflows import services as workflow_services
from runtime import WorkflowBuilder

VALUE = "tok-7f3a-VERY-secret-9921"


def caller_document(url: str) -> dict[str, Any]:
    g = WorkflowBuilder("caller", "Caller", input_schema={"type": "object"})
    g.use("http_request", id="call", input=[
        {"target": "url", "value": url},
        {"target": "headers.Authorization", "secret": "billing_key", "template": "Bearer {secret}"},
        {"target": "headers.X-Echo", "secret": "billing_key"}],
        output=[{"source": ".", "target": "response"}])
    g.output("response", "state.response")
    return g.build().model_dump(mode="json")


@pytest.fixture
def listener() -> Iterator[tuple[str, list[dict[str, str]]]]:
    """An HTTP server on 127.0.0.1 that records each request's headers and echoes them back (as a careless API
    would), so the run's output would hold the secret if nothing scrubbed it."""
    received: list[dict[str, str]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            received.append(dict(self.headers))
            body = json.dumps({"you_sent": self.headers.get("Authorization")}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/charge", received
    server.shutdown()


def every_stored_text() -> str:
    """Every column of every row of every table, as text: where a leaked value would be found."""
    chunks = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f'SELECT * FROM "{table}"')  # noqa: S608 - table names from the database itself
            chunks.extend(repr(row) for row in cursor.fetchall())
    return "\n".join(chunks)


@pytest.mark.django_db(transaction=True)
def test_a_real_request_sends_the_secret_and_nothing_stored_or_logged_holds_it(
        cast: Any, listener: tuple[str, list[dict[str, str]]], worker_env: dict[str, str], run_worker: Any) -> None:
    url, received = listener
    worker_env["TRELLIS_HTTP_ALLOWED_HOSTS"] = "127.0.0.1"
    secret_services.create_secret(actor=cast.editor, team=cast.team, name="billing_key", value=VALUE,
                                  description="the billing API")
    workflow = workflow_services.create_workflow(actor=cast.editor, team=cast.team, name="Caller",
                                                 document=caller_document(url))
    run = run_services.start_run(actor=cast.editor, workflow=workflow, input={})
    worker = run_worker()

    done = Run.objects.get(pk=run.pk)
    assert done.status == "completed", done.error
    assert received and received[0]["Authorization"] == f"Bearer {VALUE}" and received[0]["X-Echo"] == VALUE
    # What the API echoed is scrubbed before it reaches state and the output.
    assert done.output["response"]["json"] == {"you_sent": "Bearer secret billing_key"}
    started = done.events.get(kind="node_started", node_id="call")
    assert started.data["summary"]["input"]["headers"] == {"Authorization": "secret billing_key",
                                                          "X-Echo": "secret billing_key"}
    assert list(SecretUse.objects.filter(run=done).values_list("name", "node_id")) == [
        ("billing_key", "call"), ("billing_key", "call")]
    assert VALUE not in every_stored_text()
    assert VALUE not in worker.stdout + worker.stderr


@pytest.mark.django_db
def test_the_api_never_returns_a_value_and_only_editors_write(cast: Any, api: Any) -> None:
    base = f"/api/teams/{cast.team.pk}/secrets/"
    created = api(cast.editor).post(base, {"name": "billing_key", "value": VALUE, "description": "billing"},
                                    format="json")
    assert created.status_code == 201 and VALUE not in created.content.decode()
    assert "value" not in created.json() and created.json()["name"] == "billing_key"
    assert Secret.objects.get().ciphertext != VALUE and VALUE not in Secret.objects.get().ciphertext
    listed = api(cast.viewer).get(base)
    assert listed.status_code == 200 and [s["name"] for s in listed.json()] == ["billing_key"]
    assert VALUE not in listed.content.decode()

    assert api(cast.viewer).post(base, {"name": "other", "value": "x"}, format="json").status_code == 403
    assert api(cast.stranger).get(base).status_code == 404
    again = api(cast.owner).post(base, {"name": "billing_key", "value": "y"}, format="json")
    assert again.status_code == 409 and again.json()["code"] == "secret.exists"
    bad = api(cast.owner).post(base, {"name": "billing key", "value": "y"}, format="json")
    assert bad.status_code == 400

    rotated = api(cast.owner).put(f"{base}billing_key/", {"value": "new-value-123"}, format="json")
    assert rotated.status_code == 200 and "new-value-123" not in rotated.content.decode()
    assert crypto.decrypt(Secret.objects.get().ciphertext) == "new-value-123"
    assert api(cast.viewer).delete(f"{base}billing_key/").status_code == 403
    assert api(cast.editor).delete(f"{base}billing_key/").status_code == 204
    assert not Secret.objects.exists()


@pytest.mark.django_db
def test_the_page_shows_names_to_members_and_forms_to_editors_never_a_value(cast: Any, client: Any) -> None:
    client.force_login(cast.editor)
    saved = client.post(f"/teams/{cast.team.pk}/secrets/new/", {"name": "billing_key", "value": VALUE},
                        HTTP_HX_REQUEST="true")
    assert saved.status_code == 200 and "Secret billing_key saved" in saved.content.decode()
    assert VALUE not in saved.content.decode()
    refused = client.post(f"/teams/{cast.team.pk}/secrets/new/", {"name": "billing_key", "value": VALUE},
                          HTTP_HX_REQUEST="true")
    assert refused.status_code == 409 and VALUE not in refused.content.decode()  # not even back in the form
    client.force_login(cast.viewer)
    page = client.get(f"/teams/{cast.team.pk}/secrets/").content.decode()
    assert "<code>billing_key</code>" in page and "Add a secret" not in page and VALUE not in page
    client.force_login(cast.stranger)
    assert client.get(f"/teams/{cast.team.pk}/secrets/").status_code == 404


@pytest.mark.django_db
def test_keys_rotate_old_values_stay_readable_until_re_encrypted(cast: Any, settings: Any) -> None:
    first, second = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.TRELLIS_SECRET_KEYS = [first]
    secret = secret_services.create_secret(actor=cast.owner, team=cast.team, name="k", value=VALUE)
    settings.TRELLIS_SECRET_KEYS = [second, first]  # a new key first; the old one still reads
    assert crypto.decrypt(Secret.objects.get(pk=secret.pk).ciphertext) == VALUE
    assert secret_services.rotate_keys() == 1
    settings.TRELLIS_SECRET_KEYS = [second]  # the old key can go now
    assert crypto.decrypt(Secret.objects.get(pk=secret.pk).ciphertext) == VALUE
    settings.TRELLIS_SECRET_KEYS = [first]
    with pytest.raises(crypto.UnreadableSecret):
        crypto.decrypt(Secret.objects.get(pk=secret.pk).ciphertext)


@pytest.mark.django_db
def test_the_analyzer_names_a_secret_the_team_does_not_have(cast: Any, api: Any) -> None:
    workflow = workflow_services.create_workflow(actor=cast.editor, team=cast.team, name="Caller",
                                                 document=caller_document("https://example.com/"))
    body = api(cast.editor).get(f"/api/workflows/{workflow.pk}/document/").json()
    unknown = [d for d in body["diagnostics"] if d["code"] == "binding.unknown_secret"]
    assert [(d["node_id"], d["field"], d["severity"]) for d in unknown] == [
        ("call", "input.headers.Authorization", "error"), ("call", "input.headers.X-Echo", "error")]
    secret_services.create_secret(actor=cast.editor, team=cast.team, name="billing_key", value=VALUE)
    body = api(cast.editor).get(f"/api/workflows/{workflow.pk}/document/").json()
    assert not [d for d in body["diagnostics"] if d["code"] == "binding.unknown_secret"]  # not a stale analysis




@pytest.mark.django_db
def test_the_inspector_binds_a_field_to_a_secret_in_a_template(cast: Any, client: Any) -> None:
    secret_services.create_secret(actor=cast.editor, team=cast.team, name="billing_key", value=VALUE)
    document = caller_document("https://example.com/")
    document["nodes"][0]["input"] = [b for b in document["nodes"][0]["input"] if b["target"] == "url"]
    workflow = workflow_services.create_workflow(actor=cast.editor, team=cast.team, name="Caller", document=document)
    client.force_login(cast.editor)
    panel = client.get(f"/workflows/{workflow.pk}/edit/inspector/", {"node": "call"}).content.decode()
    assert '<option value="billing_key">billing_key</option>' in panel and "<summary>Secret…</summary>" in panel
    saved = client.post(f"/workflows/{workflow.pk}/edit/change/", {
        "action": "secret", "node": "call", "field": "input.headers.Authorization", "secret": "billing_key",
        "template": "Bearer {secret}", "revision": workflow.revision}, HTTP_HX_REQUEST="true")
    assert saved.status_code == 200, saved.content.decode()[:500]
    workflow.refresh_from_db()
    assert {"target": "headers.Authorization", "secret": "billing_key", "template": "Bearer {secret}"} in \
        workflow.document["nodes"][0]["input"]
    assert "secret billing_key in “Bearer {secret}”" in saved.content.decode()
    refused = client.post(f"/workflows/{workflow.pk}/edit/change/", {
        "action": "secret", "node": "call", "field": "input.headers.X", "secret": "billing_key",
        "template": "Bearer", "revision": workflow.revision}, HTTP_HX_REQUEST="true")
    assert "holds {secret} once" in refused.content.decode()

"""Clients generated from the API schema do everything the API does (issue 30).

The schema is served by the real server; ``openapi-python-client`` (in its own virtualenv, ``.venv-tools``: it
needs an older httpx than the project's) and ``openapi-typescript`` (an npm dev dependency) generate from it
with no warning and every operation present. Then a script drives the generated Python client, and nothing
else, through a workflow's life against ``manage.py serve`` and a real worker: create from a document, save an
edited document, validate, publish, start a run, read its output, export and import. Before the document's
components were titled by their own names, the generator dropped the document model ("duplicate models with
name Workflow") and with it every operation carrying a document.
"""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime import WorkflowBuilder
from tests.designer.runs_support import FINISHED, REPO_ROOT, status_of, work_until_finished

GENERATOR = REPO_ROOT / ".venv-tools" / "bin" / "openapi-python-client"
TS_GENERATOR = REPO_ROOT / "node_modules" / ".bin" / "openapi-typescript"
PACKAGE = "trellis_api_client"


def schema_of(base_url: str, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """The OpenAPI schema a running server serves, as a file and parsed."""
    with urllib.request.urlopen(f"{base_url}/api/schema/?format=json", timeout=30) as response:
        text = response.read().decode()
    path = tmp_path / "schema.json"
    path.write_text(text)
    return path, json.loads(text)


@pytest.fixture
def schema(client: Any, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """The schema as the application serves it (Django's test client: no server needed to read it)."""
    text = client.get("/api/schema/?format=json").content.decode()
    path = tmp_path / "schema.json"
    path.write_text(text)
    return path, json.loads(text)


def operation_ids(schema: dict[str, Any]) -> set[str]:
    return {operation["operationId"] for item in schema["paths"].values() for operation in item.values()
            if isinstance(operation, dict) and "operationId" in operation}


def generate_python(schema_path: Path, out: Path) -> str:
    """Generate the Python client into ``out``; the generator's whole output."""
    if not GENERATOR.exists():
        pytest.fail(f"{GENERATOR} is missing: run `make setup` (it installs requirements-tools.lock)")
    done = subprocess.run([str(GENERATOR), "generate", "--path", str(schema_path), "--meta", "none",
                           "--output-path", str(out)], capture_output=True, text=True, timeout=300,
                          # its post-generation hook formats with ruff, which is the project's
                          env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"})
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


@pytest.fixture
def python_client(served: str, tmp_path: Path) -> Iterator[tuple[Any, str, dict[str, Any]]]:
    """The package generated from the live server's schema, imported; what the generator printed; the schema."""
    schema_path, schema = schema_of(served, tmp_path)
    out = tmp_path / "client"
    output = generate_python(schema_path, out / PACKAGE)
    sys.path.insert(0, str(out))
    try:
        yield importlib.import_module(PACKAGE), output, schema
    finally:
        sys.path.remove(str(out))
        for name in [name for name in sys.modules if name == PACKAGE or name.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def test_the_typescript_generator_warns_about_nothing_and_types_every_operation(
        schema: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    out = tmp_path / "api.d.ts"
    done = subprocess.run([str(TS_GENERATOR), str(schema[0]), "--output", str(out)], capture_output=True,
                          text=True, timeout=300, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not re.search(r"warn|error", done.stderr, re.IGNORECASE), done.stderr
    typed = out.read_text()
    operations = typed[typed.index("export interface operations {"):]
    missing = {name for name in operation_ids(schema[1]) if not re.search(rf"^\s+{name}: {{", operations, re.M)}
    assert missing == set()
    assert re.search(r"^\s+WorkflowDocument: {", typed, re.M)


def doubling_document() -> dict[str, Any]:
    graph = WorkflowBuilder("doubling", "Doubling", input_schema={
        "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    graph.use("math", "double", input=[{"target": "op", "value": "mul"}, {"target": "a", "path": "input.n"},
                                       {"target": "b", "value": 2}], output=[{"source": ".", "target": "doubled"}])
    graph.output("doubled", "state.doubled")
    return graph.build().model_dump(mode="json")


def test_the_python_client_generates_cleanly_and_a_script_does_a_workflows_whole_life_through_it_alone(
        python_client: tuple[Any, str, dict[str, Any]], served: str, env: dict[str, str], make_user: Any) -> None:
    from designer.access import teams, tokens

    package, output, schema = python_client
    assert "Warning" not in output and "Unable" not in output, output
    generated = {path.stem for path in Path(package.__file__).parent.glob("api/*/*.py") if path.stem != "__init__"}
    wanted = {re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower() for name in operation_ids(schema)}
    assert wanted - generated == set()
    models_made = {path.stem for path in Path(package.__file__).parent.glob("models/*.py")}
    # The document is one named model, its node kinds a union the client parses by `kind`.
    assert {"workflow_document", "document_task_node", "document_foreach_node"} <= models_made

    owner = make_user("scripter")
    team = teams.create_team(actor=owner, name="Scripts")
    secret = tokens.create_token(actor=owner, name="script").secret
    models = importlib.import_module(f"{PACKAGE}.models")
    client = package.AuthenticatedClient(base_url=served, token=secret, raise_on_unexpected_status=True)

    def call(operation: str, *args: Any, **kwargs: Any) -> Any:
        module = importlib.import_module(f"{PACKAGE}.api.{operation}")
        answer = module.sync(*args, client=client, **kwargs)
        assert not isinstance(answer, models.Error), f"{operation}: {answer.to_dict()}"
        return answer

    document = doubling_document()
    created = call("workflows.workflows_create", body=models.WorkflowCreateRequest.from_dict(
        {"team": team.pk, "name": "Doubling", "document": document}))
    assert isinstance(created, models.Workflow) and created.name == "Doubling"

    saved = call("workflows.workflows_document_retrieve", created.id)
    assert isinstance(saved.document, models.WorkflowDocument)
    assert [node.kind for node in saved.document.nodes] == ["task"]
    edited = saved.document.to_dict()
    edited["name"] = "Doubling, edited"
    put = call("workflows.workflows_document_update", created.id, body=models.DocumentPutRequest.from_dict(
        {"revision": saved.revision, "document": edited}))
    assert put.revision > saved.revision and put.document.name == "Doubling, edited"

    checked = call("workflows.workflows_validate_create", created.id, body=models.ValidateRequest.from_dict({}))
    assert checked.ok, checked.to_dict()
    version = call("workflows.workflows_publish_create", created.id,
                   body=models.PublishRequest.from_dict({"note": "first"}))
    assert version.number == 1

    started = call("workflows.runs_start", created.id, body=models.StartRunRequest.from_dict(
        {"input": {"n": 21}, "version": version.number}))
    work_until_finished(env, [{"id": started.id}], message="the script's run")
    assert status_of(started.id) in FINISHED
    finished = call("runs.runs_retrieve", started.id)
    assert finished.status == "completed" and finished.output == {"doubled": 42}

    exported = call("workflows.workflows_export_retrieve", created.id)
    assert isinstance(exported, models.WorkflowDocument) and exported.name == "Doubling, edited"
    imported = call("workflows.workflows_import_create", body=models.ImportRequest.from_dict(
        {"team": team.pk, "document": exported.to_dict(), "name": "Doubling, imported"}))
    assert imported.id != created.id and imported.name == "Doubling, imported"
    again = call("workflows.workflows_document_retrieve", imported.id)
    assert again.document.to_dict()["nodes"] == edited["nodes"]

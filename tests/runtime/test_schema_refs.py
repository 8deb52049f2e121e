"""Schemas in a document are user input: validating against them must never fetch anything.

jsonschema's default resolves an unknown ``$ref`` by downloading it, which would let a document
make the server request URLs on its own network (or read ``file://`` paths).
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from runtime import (
    Engine,
    InputValidationError,
    WorkflowBuilder,
    WorkflowValidationError,
    builtin_registry,
    check_run_input,
)


class _Recorder(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's handler name
        type(self).hits.append(self.path)
        body = b'{"type": "integer"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def schema_server() -> Iterator[tuple[str, list[str]]]:
    hits: list[str] = []
    handler = type("Handler", (_Recorder,), {"hits": hits})
    server = http.server.HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        server.server_close()


def _document(input_schema: dict[str, Any]) -> dict[str, Any]:
    graph = WorkflowBuilder("refs", "Refs", input_schema=input_schema)
    graph.use("set_value", id="echo", input=[{"target": "value", "path": "input.amount"}])
    return graph.build().model_dump(mode="json")


def test_remote_ref_in_input_schema_is_not_fetched(schema_server: tuple[str, list[str]]) -> None:
    base, hits = schema_server
    document = _document({"type": "object", "properties": {"amount": {"$ref": f"{base}/schema.json"}}})

    with pytest.raises(InputValidationError) as caught:
        check_run_input(document, {"amount": 3})

    assert hits == []
    assert f"{base}/schema.json" in caught.value.message
    assert "$ref may only point inside the schema" in caught.value.message


def test_engine_refuses_the_document_without_fetching(schema_server: tuple[str, list[str]]) -> None:
    base, hits = schema_server
    document = _document({"$id": f"{base}/root.json", "type": "object",
                          "properties": {"amount": {"$ref": "other.json"}}})

    with pytest.raises(WorkflowValidationError) as caught:
        Engine(builtin_registry()).run(document, {"amount": 3})

    assert hits == []
    assert [(d.code, d.field) for d in caught.value.diagnostics] == [("schema.invalid", "input_schema")]


def test_file_refs_are_not_read(tmp_path: Any) -> None:
    target = tmp_path / "schema.json"
    target.write_text('{"type": "string"}')
    document = _document({"type": "object", "properties": {"amount": {"$ref": target.as_uri()}}})

    with pytest.raises(InputValidationError) as caught:
        check_run_input(document, {"amount": 3})

    assert target.as_uri() in caught.value.message


def test_local_refs_still_resolve() -> None:
    document = _document({
        "type": "object",
        "$defs": {"amount": {"type": "integer", "minimum": 0}},
        "properties": {"amount": {"$ref": "#/$defs/amount"}},
    })

    assert check_run_input(document, {"amount": 3}) == {"amount": 3}
    with pytest.raises(InputValidationError) as caught:
        check_run_input(document, {"amount": -1})
    assert caught.value.details["errors"][0]["field"] == "amount"


def test_input_nested_deeper_than_json_can_carry_is_a_validation_error() -> None:
    deep: Any = 1
    for _ in range(400):
        deep = {"a": deep}
    document = _document({"type": "object"})

    with pytest.raises(InputValidationError) as caught:
        check_run_input(document, {"amount": deep})

    assert "not usable JSON data" in caught.value.message


def test_a_ref_cycle_is_a_validation_error_not_a_crash() -> None:
    document = _document({"$defs": {"loop": {"$ref": "#/$defs/loop"}}, "$ref": "#/$defs/loop"})

    with pytest.raises(InputValidationError) as caught:
        check_run_input(document, {"amount": 3})

    assert "lead back to themselves" in caught.value.message


@pytest.mark.parametrize("ref, shown", [("#/$defs/missing", "#/$defs/missing"), ("#nowhere", "#nowhere")])
def test_a_local_ref_to_nothing_says_so(ref: str, shown: str) -> None:
    document = _document({"type": "object", "properties": {"amount": {"$ref": ref}}})

    with pytest.raises(InputValidationError) as caught:
        check_run_input(document, {"amount": 3})

    assert f"$ref '{shown}' points at nothing inside the schema" in caught.value.message

"""What the OpenAPI schema says beyond what drf-spectacular infers: the error answers every operation can give,
a typed workflow document with a working example, and the JSON 404 for unknown paths under /api/."""

from __future__ import annotations

import json
import re
from typing import Any, Final

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.views import APIView

from designer.conf import trellis
from designer.core.errors import ObjectNotFound
from runtime import WorkflowBuilder
from runtime.document import document_json_schema

#: Errors the one exception handler (designer.core.api_errors) can answer on any operation, all as {code, message}.
ERROR_STATUSES: Final[dict[str, str]] = {
    "400": "The request is malformed or fails validation (code request.invalid, request.malformed, "
           "document.invalid, ...; `errors` lists each problem).",
    "401": "No credentials (auth.required), or the Bearer token is unknown, revoked or expired (auth.failed); "
           "answered with `WWW-Authenticate: Bearer realm=\"api\"`.",
    "403": "The role is too low (permission.denied), a read-only token tried to write (token.read_only), or a "
           "session's write came without its CSRF token (csrf.failed).",
    "404": "The object does not exist or is not shared with you (not_found); unknown paths under /api/ too.",
    "405": "The method is not allowed on this path (method.not_allowed).",
    "406": "The Accept header asks for something other than JSON (request.not_acceptable).",
    "409": "A conflict: a stale revision, a run in the wrong state, an answered invitation.",
    "422": "The body fits this schema but its content is refused: a workflow document that breaks a rule across its "
           "fields (document.invalid, `errors` lists each problem with its location), a run input, state or answer "
           "that does not fit the workflow's own schema (input.invalid, `errors` per field), or a cron expression "
           "that can never fire (cron.never_fires). Only on operations whose body carries such a value.",
    "413": "The request body is larger than the limit (request.too_large).",
    "415": "The body is not JSON (request.unsupported_media_type).",
}

ERROR_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "description": "Every error: a stable code, a readable message, and details that depend on the code.",
    "properties": {
        "code": {"type": "string", "example": "not_found"},
        "message": {"type": "string", "example": "this workflow does not exist or is not shared with you"},
        "errors": {"type": "array", "items": {"type": "object"}},
        "diagnostics": {"type": "array", "items": {"type": "object"}},
    },
    "required": ["code", "message"],
}

def _example_document() -> dict[str, Any]:
    """A small valid document, built by the runtime's own builder so it stays valid as the format evolves."""
    graph = WorkflowBuilder("hello", "Hello", input_schema={
        "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        state_schema={"type": "object", "properties": {"greeting": {"type": "string"}}})
    graph.use("set_value", id="greet", input=[{"target": "value", "path": "input.name"}],
              output=[{"source": ".", "target": "greeting"}])
    graph.output("greeting", "state.greeting")
    example: dict[str, Any] = graph.build().model_dump(mode="json")
    return example


#: Used as the example wherever a document is sent (Swagger's "Try it out" body validates).
DOCUMENT_EXAMPLE: Final[dict[str, Any]] = _example_document()

#: Components of the workflow document, named with this prefix so they never meet the API's own (``Workflow`` is
#: the API's workflow record; the document is ``WorkflowDocument``).
DOCUMENT_PREFIX: Final[str] = "Document"
DOCUMENT_COMPONENT: Final[str] = "WorkflowDocument"

DOCUMENT_SCHEMA: Final[dict[str, Any]] = {"$ref": f"#/components/schemas/{DOCUMENT_COMPONENT}"}

#: Marks a request field whose value the server checks beyond this schema (against the workflow's own schemas, or a
#: cron expression's calendar): a value that fits the schema and fails that check is answered 422, so only operations
#: carrying such a field (or a workflow document) declare 422. An OpenAPI extension: clients ignore it.
CHECKED_BEYOND: Final[str] = "x-checked-beyond-schema"


def _oas30(node: Any) -> Any:
    """pydantic writes JSON Schema 2020-12; OpenAPI 3.0 says some of it differently: ``const`` is a one-value
    ``enum``, a ``null`` alternative is ``nullable``, and ``exclusiveMinimum`` is a flag on ``minimum``."""
    if isinstance(node, list):
        return [_oas30(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _oas30(value) for key, value in node.items()}
    if "const" in out:
        out["enum"] = [out.pop("const")]
    for bound, flag in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if bound in out and not isinstance(out[bound], bool):
            out[flag], out[bound] = out.pop(bound), True
    options = out.get("anyOf")
    if isinstance(options, list) and {"type": "null"} in options:
        rest = [option for option in options if option != {"type": "null"}]
        del out["anyOf"]
        if len(rest) == 1 and "$ref" not in rest[0]:
            out.update(rest[0])
        elif len(rest) == 1:
            out["allOf"] = rest
        else:
            out["anyOf"] = rest
        out["nullable"] = True
    return out


def document_components(max_nodes: int) -> dict[str, dict[str, Any]]:
    """The workflow document's components for the OpenAPI schema, from the runtime's own pydantic models
    (``runtime.document_json_schema``), with the node limit of this deployment."""
    schema = document_json_schema(ref_template=f"#/components/schemas/{DOCUMENT_PREFIX}{{model}}")
    definitions = schema.pop("$defs", {})
    components = {f"{DOCUMENT_PREFIX}{name}": _oas30(body) for name, body in definitions.items()}
    root = _oas30(schema)
    # pydantic titles each model by its class name, and client generators name their models by title: the
    # document's root was titled "Workflow" like the API's workflow record, so openapi-python-client dropped the
    # document model and every operation carrying one. Each component is titled by its own (unique) name.
    for name, body in components.items():
        body["title"] = name
    root["title"] = DOCUMENT_COMPONENT
    root["properties"]["nodes"]["maxItems"] = max_nodes
    root["description"] = (
        "A workflow document: the JSON of runtime.Workflow, generated from the runtime's models. Rules across "
        "fields (unique node ids, routes naming real nodes, one of path or value per binding, path syntax) are "
        "checked by the runtime: a document that fits this schema but breaks one is answered 422 document.invalid "
        "with every problem listed.")
    root["example"] = DOCUMENT_EXAMPLE
    components[DOCUMENT_COMPONENT] = root
    return components


@extend_schema_field(DOCUMENT_SCHEMA)
class DocumentField(serializers.JSONField):
    """A workflow document in a request or response (a JSON object)."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            # Not the schema's type at all: a malformed request (400), unlike a document the runtime refuses (422).
            raise serializers.ValidationError(
                f"a workflow document is a JSON object (e.g. {{\"id\": \"hello\"}}), got {type(data).__name__}")
        return super().to_internal_value(data)


@extend_schema_field({"type": "object", "additionalProperties": True, "example": {"amount": 3},
                     CHECKED_BEYOND: "against the workflow's input, state or answer schema (422 input.invalid)"})
class JSONObjectField(serializers.JSONField):
    """A JSON object (a run's input, a state)."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            raise serializers.ValidationError("must be a JSON object")
        return super().to_internal_value(data)


class RequestSerializer(serializers.Serializer):
    """A request body: a field the operation does not have is refused (400) rather than ignored, as the schema's
    ``additionalProperties: false`` says, so a misspelt field never passes silently."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(str(key) for key in data if key not in self.fields)
            if unknown:
                raise serializers.ValidationError(
                    {key[:100]: ["unknown field; this operation takes " + (", ".join(self.fields) or "no fields")]
                     for key in unknown[:10]}
                )
        return super().to_internal_value(data)


class StrictCharField(serializers.CharField):
    """A string, and only a string: the schema says ``type: string``, so 0 or true is refused, not coerced."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            raise serializers.ValidationError("must be a string")
        return str(super().to_internal_value(data))


class StrictIntegerField(serializers.IntegerField):
    """An integer, and only an integer: "5", 5.0 and true are refused, as the schema's ``type: integer`` says."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise serializers.ValidationError("must be an integer")
        return int(super().to_internal_value(data))


class StrictBooleanField(serializers.BooleanField):
    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            raise serializers.ValidationError("must be true or false")
        return data


def _carries_runtime_data(operation: dict[str, Any], schemas: dict[str, Any]) -> bool:
    """Operations whose body carries a workflow document or a field checked beyond the schema: only they answer
    422."""
    body = json.dumps(operation.get("requestBody", {}))
    bodies = [body, *(json.dumps(schemas.get(name, {})) for name in re.findall(r"#/components/schemas/(\w+)", body))]
    return any(DOCUMENT_COMPONENT in text or CHECKED_BEYOND in text for text in bodies)


#: Methods that change nothing: a session cookie alone is enough for them.
SAFE_METHODS = ("get", "head", "options")

CSRF_SCHEME: Final[dict[str, Any]] = {
    "type": "apiKey", "in": "header", "name": "X-CSRFToken",
    "description": "The session's CSRF token (the csrftoken cookie's value): a signed-in browser's writes carry it "
                   "with the session cookie; a Bearer token needs none.",
}


def declare_security(result: dict[str, Any]) -> None:
    """Say per operation what authenticates it: a Bearer token, or the session cookie, which on a write must come
    with its CSRF token (DRF's SessionAuthentication refuses a write without one)."""
    schemes = result.setdefault("components", {}).setdefault("securitySchemes", {})
    schemes["csrfToken"] = CSRF_SCHEME
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            session: dict[str, list[str]] = {"cookieAuth": []}
            if method not in SAFE_METHODS:
                session["csrfToken"] = []
            operation["security"] = [{"bearerAuth": []}, session]


def add_error_responses(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """Postprocessing hook: every operation documents the error answers, with one Error component, and the
    credentials it takes."""
    declare_security(result)
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    for name, component in schemas.items():
        if name.endswith("Request") and component.get("type") == "object":
            component["additionalProperties"] = False  # RequestSerializer refuses unknown fields
    schemas["Error"] = ERROR_SCHEMA
    schemas.update(document_components(trellis.MAX_DOCUMENT_NODES))
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            responses = operation.setdefault("responses", {})
            for status, description in ERROR_STATUSES.items():
                if status == "422" and not _carries_runtime_data(operation, schemas):
                    continue
                if status not in responses or "content" not in responses[status]:
                    responses[status] = {
                        # an operation may say what its own answer of this status means (runs_start's 409)
                        "description": responses.get(status, {}).get("description") or description,
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
                    }
    return result


class UnknownAPIPath(APIView):
    """Any path under /api/ that names no endpoint: the JSON 404 every other API error has, never an HTML page."""

    permission_classes: list[Any] = []
    authentication_classes: list[Any] = []

    def _missing(self, request: Request, *args: Any, **kwargs: Any) -> Any:
        raise ObjectNotFound(f"no API endpoint at {request.path}; see /api/docs/ for the endpoints")

    get = post = put = patch = delete = head = options = _missing


_unknown_api_path = extend_schema(exclude=True)(UnknownAPIPath).as_view()


@csrf_exempt  # as DRF's own views are: any method on an unknown path answers the JSON 404
def unknown_api_path(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    """The catch-all, as a plain function: the browsable API's breadcrumbs list every prefix of a URL that a DRF
    view answers, and ``/api/workflows`` (no trailing slash) matched this one, so every page showed an
    "Unknown Api Path" crumb."""
    response: HttpResponse = _unknown_api_path(request, *args, **kwargs)
    return response

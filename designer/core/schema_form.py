"""HTML forms generated from a JSON Schema: run input and interrupt answers.

Only presentation lives here: which input widget a property gets and how its
text turns back into JSON. Whether the assembled value is *valid* is decided
by the runtime when the run starts or resumes; its error is shown next to the
form. Scalars (string, number, integer, boolean, enum) get their own inputs;
anything else is edited as JSON, and experts can always switch the whole
value to one JSON textarea.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from designer.core.json_text import pretty_json
from designer.core.untrusted import json_error_message, loads_json

#: Name of the submitted field that selects whole-value JSON editing.
MODE_FIELD = "_mode"
JSON_FIELD = "_json"
FIELD_PREFIX = "field."

_SCALARS = ("string", "integer", "number", "boolean")


@dataclass(frozen=True, slots=True)
class Choice:
    value: str  # the JSON text of the enum member, so non-string members survive the round trip
    label: str
    selected: bool


@dataclass(frozen=True, slots=True)
class SchemaField:
    name: str
    kind: str  # string | integer | number | boolean | enum | json
    label: str
    description: str
    required: bool
    nullable: bool
    text: str  # what the widget shows
    checked: bool = False
    choices: tuple[Choice, ...] = ()
    error: str = ""

    @property
    def html_name(self) -> str:
        return FIELD_PREFIX + self.name

    @property
    def html_id(self) -> str:
        return "f-" + "".join(ch if ch.isalnum() else "-" for ch in self.name)


@dataclass(slots=True)
class SchemaForm:
    """A form for one JSON value described by ``schema``.

    ``fields`` is empty when the schema is not an object with properties; the
    form then only offers the JSON textarea (``json_only``).
    """

    schema: dict[str, Any]
    fields: list[SchemaField]
    json_text: str
    mode: str = "fields"  # or "json"
    errors: list[str] = field(default_factory=list)

    @property
    def json_only(self) -> bool:
        return not self.fields

    @property
    def takes_nothing(self) -> bool:
        """An object schema that declares no properties: there is nothing to ask for."""
        return not self.fields and isinstance(self.schema.get("properties"), dict) and not self.schema["properties"]

    @property
    def has_errors(self) -> bool:
        return bool(self.errors) or any(f.error for f in self.fields)


def _types(prop: Mapping[str, Any]) -> tuple[str | None, bool]:
    """(the one non-null JSON type, whether null is allowed); None when there is no single type."""
    raw = prop.get("type")
    types = [raw] if isinstance(raw, str) else list(raw) if isinstance(raw, list) else []
    nullable = "null" in types
    rest = [t for t in types if t != "null"]
    return (rest[0] if len(rest) == 1 else None), nullable


def _kind(prop: Mapping[str, Any]) -> str:
    if isinstance(prop.get("enum"), list) and prop["enum"]:
        return "enum"
    if "const" in prop:
        return "json"
    kind, _ = _types(prop)
    return kind if kind in _SCALARS else "json"


def _properties(schema: Mapping[str, Any]) -> dict[str, dict[str, Any]] | None:
    if not isinstance(schema, Mapping):
        return None
    kind, _ = _types(schema)
    props = schema.get("properties")
    if kind not in (None, "object") or not isinstance(props, Mapping) or not props:
        return None
    if kind is None and "type" in schema:
        return None
    return {str(name): (prop if isinstance(prop, dict) else {}) for name, prop in props.items()}


def _text(kind: str, value: Any) -> str:
    if value is None:
        return ""
    if kind == "string":
        return value if isinstance(value, str) else json.dumps(value)
    if kind in ("integer", "number"):
        return "" if isinstance(value, bool) else str(value)
    if kind == "json":
        return pretty_json(value)
    return ""


def _field(name: str, prop: dict[str, Any], required: bool, value: Any, present: bool, error: str = "") -> SchemaField:
    kind = _kind(prop)
    _, nullable = _types(prop)
    if not present and "default" in prop:
        value, present = prop["default"], True
    choices: tuple[Choice, ...] = ()
    if kind == "enum":
        members = list(prop["enum"])
        choices = tuple(
            Choice(value=json.dumps(member), label=str(member) if member is not None else "—",
                   selected=present and member == value)
            for member in members
        )
    return SchemaField(
        name=name,
        kind=kind,
        label=str(prop.get("title") or name),
        description=str(prop.get("description") or ""),
        required=required,
        nullable=nullable,
        text=_text(kind, value) if present else "",
        checked=bool(value) if kind == "boolean" and present else False,
        choices=choices,
        error=error,
    )


def build_form(schema: Any, initial: Any = None) -> SchemaForm:
    """An unbound form; ``initial`` (a JSON value) pre-fills it."""
    schema = schema if isinstance(schema, dict) else {}
    props = _properties(schema)
    required = set(schema.get("required") or ())
    fields: list[SchemaField] = []
    values = initial if isinstance(initial, Mapping) else {}
    if props is not None:
        for name, prop in props.items():
            fields.append(_field(name, prop, name in required, values.get(name), name in values))
    if initial is None:
        initial = {name: prop["default"] for name, prop in (props or {}).items() if "default" in prop}
    return SchemaForm(schema=schema, fields=fields, json_text=pretty_json(initial))


def _parse_field(prop: dict[str, Any], kind: str, required: bool, nullable: bool,
                 data: Mapping[str, Any], key: str) -> tuple[bool, Any, str]:
    """(present, value, error) for one submitted field."""
    if kind == "boolean":
        return True, key in data and data.get(key) not in ("", "off", "false"), ""
    text = str(data.get(key, ""))
    if kind != "string":
        text = text.strip()
    if text == "":
        if nullable and required:
            return True, None, ""
        return False, None, "This field is required." if required else ""
    if kind == "string":
        return True, text, ""
    if kind == "integer":
        try:
            return True, int(text), ""
        except ValueError:
            return True, text, "Enter a whole number."
    if kind == "number":
        try:
            number = float(text)
        except ValueError:
            return True, text, "Enter a number."
        if number != number or number in (float("inf"), float("-inf")):
            return True, text, "Enter a finite number."
        return True, int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number, ""
    try:
        return True, loads_json(text), ""
    except ValueError as exc:
        return True, text, f"Not valid JSON: {json_error_message(exc)}."


def parse_form(schema: Any, data: Mapping[str, Any]) -> tuple[SchemaForm, Any]:
    """Bind submitted data: (form to re-render, value); ``value`` means nothing when ``form.has_errors``."""
    schema = schema if isinstance(schema, dict) else {}
    props = _properties(schema)
    mode = "json" if props is None or data.get(MODE_FIELD) == "json" else "fields"
    if mode == "json":
        text = str(data.get(JSON_FIELD, "")).strip() or "{}"
        form = build_form(schema)
        form.mode, form.json_text = "json", text
        try:
            whole = loads_json(text)
        except ValueError as exc:
            form.errors.append(f"Not valid JSON: {json_error_message(exc)}.")
            return form, None
        # Re-fill the per-field widgets too, so switching back keeps what was typed.
        form.fields = build_form(schema, whole).fields
        return form, whole
    assert props is not None
    required = set(schema.get("required") or ())
    fields: list[SchemaField] = []
    value: dict[str, Any] = {}
    for name, prop in props.items():
        kind = _kind(prop)
        _, nullable = _types(prop)
        key = FIELD_PREFIX + name
        if kind == "enum":
            present, raw, error = _parse_field(prop, "json", name in required, nullable, data, key)
            if present and not error and raw not in prop["enum"]:
                error = "Choose one of the listed values."
        else:
            present, raw, error = _parse_field(prop, kind, name in required, nullable, data, key)
        if present and not error:
            value[name] = raw
        shown = _field(name, prop, name in required, raw, True, error) if present or error else _field(
            name, {k: v for k, v in prop.items() if k != "default"}, name in required, None, False
        )
        if kind in ("integer", "number", "json") and error:
            shown = replace(shown, text=str(data.get(key, "")))
        fields.append(shown)
    form = SchemaForm(schema=schema, fields=fields, json_text=pretty_json(value))
    return form, value


def with_error(form: SchemaForm, message: str, field_errors: Mapping[str, str] | None = None) -> SchemaForm:
    """Attach an error from the runtime (e.g. input validation) to the form and to the fields it names."""
    field_errors = field_errors or {}
    form.fields = [
        replace(f, error=field_errors[f.name]) if f.name in field_errors and not f.error else f
        for f in form.fields
    ]
    if message:
        form.errors.append(message)
    return form

"""What the editor's server-rendered panels show: palette, inspector, path picker, diagnostics.

Every fact comes from the runtime (the task catalogue, ``analyze``'s regions,
path options, diagnostics and schemas) or from the stored document; this
module only arranges those answers for the templates.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from designer import analysis as doc_analysis
from designer import catalog
from designer.models import Workflow as WorkflowModel
from designer.views.editor_edits import BRANCH_OPS, OUTPUT_MODES, field_key, same_target
from runtime import UnknownTaskError, WorkflowError
from runtime import schema_type_label as type_label  # the analyzer's type text, so rows and pickers agree

CONTROL_NODES: tuple[dict[str, Any], ...] = (
    {
        "kind": "foreach", "title": "For each",
        "description": "Run a body once per item of a list; 'loop' goes to the body, 'done' after the last item.",
        "node": {"kind": "foreach", "over": "input"},
    },
    {
        "kind": "subgraph", "title": "Subgraph",
        "description": "Run a published workflow with its own input; its output is this node's result.",
        "node": {"kind": "subgraph"},
    },
    {
        "kind": "branch", "title": "Branch",
        "description": "Choose a route by comparing a value with cases.",
        "node": {"kind": "branch", "path": "input", "cases": [{"label": "yes", "op": "truthy"}]},
    },
    {
        "kind": "interrupt", "title": "Interrupt",
        "description": "Pause and ask a person for a value; resume by one of its labels.",
        "node": {"kind": "interrupt", "prompt": "", "labels": ["ok"]},
    },
)


@dataclass(frozen=True, slots=True)
class PaletteItem:
    kind: str
    title: str
    description: str
    template: str  # JSON the canvas adds: {"id_hint", "node"}
    detail: str = ""
    disabled: str = ""  # why it cannot be added, if it cannot


def _template(hint: str, node: Mapping[str, Any]) -> str:
    return json.dumps({"id_hint": hint, "node": node}, ensure_ascii=False)


def plain(text: str) -> str:
    """Docstring text for display: reStructuredText ``literal`` markers dropped."""
    return text.replace("``", "")


def _matches(query: str, *texts: str) -> bool:
    return not query or any(query in text.lower() for text in texts)


def palette(workflow: WorkflowModel, query: str = "") -> dict[str, list[PaletteItem]]:
    query = query.strip().lower()
    children = list(
        WorkflowModel.objects.filter(team_id=workflow.team_id, versions__isnull=False)
        .exclude(pk=workflow.pk).distinct().order_by("name")
    )
    controls = []
    for control in CONTROL_NODES:
        if not _matches(query, control["title"], control["kind"], control["description"]):
            continue
        node = dict(control["node"])
        disabled = ""
        if control["kind"] == "subgraph":
            if children:
                node["workflow"] = {"id": children[0].slug, "version": None}
            else:
                disabled = "Publish another workflow of this team first; a subgraph runs a published version."
        controls.append(PaletteItem(control["kind"], control["title"], control["description"],
                                    _template(control["kind"], node), disabled=disabled))
    tasks = [
        PaletteItem("task", spec.name, plain(spec.description) or "No description.",
                    _template(spec.name.rsplit(".", 1)[-1], {"kind": "task", "task": spec.name}),
                    detail=", ".join(spec.labels))
        for spec in sorted(catalog.registry(), key=lambda spec: spec.name)
        if _matches(query, spec.name, spec.description or "")
    ]
    workflows = [
        PaletteItem("subgraph", child.name, child.description or f"Runs the published workflow {child.slug}.",
                    _template(child.slug, {"kind": "subgraph", "workflow": {"id": child.slug, "version": None}}),
                    detail=child.slug)
        for child in children
        if _matches(query, child.name, child.slug, child.description)
    ]
    return {"controls": controls, "tasks": tasks, "workflows": workflows}


# --- inspector ---------------------------------------------------------------------


@dataclass(slots=True)
class FieldRow:
    """One input field of a node: what it wants and what it is bound to."""

    name: str
    key: str  # the analyzer's field name, e.g. input.customer_name
    type: str
    description: str
    required: bool
    schema: dict[str, Any]
    binding: dict[str, Any] | None
    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    focused: bool = False
    picker: dict[str, Any] | None = None
    free: bool = False  # a target the author names (an interrupt's payload), not a schema field

    @property
    def literal_text(self) -> str:
        if self.binding is None or "value" not in self.binding:
            return ""
        value = self.binding["value"]
        return value if isinstance(value, str) and self.schema.get("type") == "string" else json.dumps(value)


def _bindings(node: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(b.get("target")): b for b in node.get("input", [])}


def _properties(schema: Mapping[str, Any] | None) -> tuple[dict[str, Any], set[str]]:
    if not isinstance(schema, Mapping):
        return {}, set()
    props = schema.get("properties")
    return (dict(props) if isinstance(props, Mapping) else {}), set(schema.get("required", []) or [])


def _by_field(diagnostics: Iterable[dict[str, Any]]) -> dict[str | None, list[dict[str, Any]]]:
    by_field: dict[str | None, list[dict[str, Any]]] = {}
    for diagnostic in diagnostics:
        by_field.setdefault(diagnostic.get("field"), []).append(diagnostic)
    return by_field


def field_rows(node: Mapping[str, Any], schema: Mapping[str, Any] | None,
               diagnostics: Iterable[dict[str, Any]]) -> list[FieldRow]:
    props, required = _properties(schema)
    bound = _bindings(node)
    by_field = _by_field(diagnostics)
    rows = []
    for name, prop in props.items():
        key = field_key(name)
        target = key[len("input."):]
        rows.append(FieldRow(
            name=name, key=key, type=type_label(prop) if isinstance(prop, dict) else "any",
            description=str(prop.get("description", "")) if isinstance(prop, dict) else "",
            required=name in required, schema=prop if isinstance(prop, dict) else {},
            binding=bound.pop(target, None), diagnostics=by_field.get(key, []),
        ))
    for target, binding in bound.items():  # bindings of fields the schema does not declare
        key = f"input.{target}"
        rows.append(FieldRow(name=target, key=key, type="not declared", description="", required=False, schema={},
                             binding=binding, diagnostics=by_field.get(key, [])))
    return rows


def payload_rows(node: Mapping[str, Any], diagnostics: Iterable[dict[str, Any]], *,
                 adding: str | None = None) -> list[FieldRow]:
    """An interrupt's prompt payload, one row per binding. It has no input schema, so the
    targets are the author's own names; ``adding`` (a field key, ``input.<target>``) is the
    row being added, shown unbound until its source is chosen (a binding needs one)."""
    by_field = _by_field(diagnostics)
    rows = [
        FieldRow(name=target, key=f"input.{target}", type="any", description="", required=False, schema={},
                 binding=binding, diagnostics=by_field.get(f"input.{target}", []), free=True)
        for target, binding in _bindings(node).items()
    ]
    if adding and not any(same_target(row.key, adding) for row in rows):
        rows.append(FieldRow(name=adding[len("input."):], key=adding, type="any", description="", required=False,
                             schema={}, binding=None, free=True))
    return rows


def field_schema(node: Mapping[str, Any], analysis: Any, name: str) -> dict[str, Any] | None:
    """The schema an input field of ``node`` wants (task input or subgraph child input)."""
    schema = input_schema_of(node, analysis)
    props, _ = _properties(schema)
    prop = props.get(name)
    return prop if isinstance(prop, dict) else None


def input_schema_of(node: Mapping[str, Any], analysis: Any) -> dict[str, Any] | None:
    kind = node.get("kind")
    if kind == "task":
        try:
            return catalog.registry().get(str(node.get("task"))).input_schema
        except UnknownTaskError:
            return None
    if kind == "subgraph":
        child = analysis.subgraph(node["id"]) if hasattr(analysis, "subgraph") else None
        return child.input_schema if child is not None else None
    return None


def result_fields(node: Mapping[str, Any], analysis: Any) -> list[str]:
    """Top-level result fields offered as output-binding sources ('.' is always offered)."""
    schema: Any = None
    if node.get("kind") == "task":
        try:
            schema = catalog.registry().get(str(node.get("task"))).result_schema
        except UnknownTaskError:
            schema = None
    elif node.get("kind") == "subgraph":
        child = analysis.subgraph(node["id"]) if hasattr(analysis, "subgraph") else None
        schema = child.output_schema if child is not None else None
    elif node.get("kind") == "interrupt":
        schema = node.get("resume_schema")
    props, _ = _properties(schema)
    return list(props)


def state_fields(analysis: Any) -> list[str]:
    props, _ = _properties(getattr(analysis, "state_schema", None))
    return list(props)


# --- path picker -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OptionGroup:
    title: str
    foreach_id: str | None
    options: list[dict[str, Any]]
    ids: list[dict[str, Any]] = field(default_factory=list)  # a loop's run identifiers, folded away

    @property
    def ids_open(self) -> bool:
        return any(option.get("is_current") for option in self.ids)


def _is_run_id(option: Mapping[str, Any]) -> bool:
    """``context.foreach.<id>.<x>_id``: identifiers of the loop's run (frame, scope, lineage...). They are
    strings, so they fit every text field, and would bury the item's own fields in every loop group."""
    owner = option.get("foreach_id")
    prefix = f"context.foreach.{owner}."
    rest = str(option["path"])[len(prefix):]
    return bool(owner) and str(option["path"]).startswith(prefix) and "." not in rest and rest.endswith("_id")


def picker(analysis: Any, node_id: str, field_name: str, *, show_all: bool = False, query: str = "",
           current: str | None = None) -> dict[str, Any]:
    """Path options for one field, grouped Input, State, then one group per active foreach (outermost first)."""
    try:
        report = doc_analysis.node_report(analysis, node_id, field=field_name, show_all=show_all)
    except WorkflowError as exc:
        return {"node": node_id, "field": field_name, "error": exc.message, "groups": [], "count": 0,
                "show_all": show_all, "query": query, "reachable": True}
    query = query.strip().lower()
    region = report["control_region"]
    grouped: dict[str, list[dict[str, Any]]] = {}
    foreach_of: dict[str, str | None] = {}
    for option in report["path_options"]:
        if query and not _matches(query, option["path"], option["title"] or "", option["description"] or ""):
            continue
        # Break opportunities after the dots, so long paths wrap at segments, not mid-word.
        grouped.setdefault(option["group"], []).append({**option, "display": option["path"].replace(".", ".\u200b"),
                                                         "is_current": option["path"] == current})
        foreach_of.setdefault(option["group"], option["foreach_id"])

    def rank(group: str) -> tuple[int, int]:
        owner = foreach_of[group]
        if owner is None:
            return (0 if group == "Input" else 1 if group == "State" else 2, 0)
        return (3, region.index(owner) if owner in region else len(region))

    groups = [
        OptionGroup(name, foreach_of[name],
                    # A search shows everything it finds unfolded.
                    [o for o in grouped[name] if query or not _is_run_id(o)],
                    [o for o in grouped[name] if not query and _is_run_id(o)])
        for name in sorted(grouped, key=rank)
    ]
    return {
        "node": node_id, "field": field_name, "groups": groups, "show_all": show_all, "query": query,
        "count": sum(len(g.options) + len(g.ids) for g in groups), "reachable": report["reachable"], "current": current,
        "want": type_label(report["want"]) if isinstance(report.get("want"), dict) and report["want"] else "",
        "region": region, "error": "",
    }


# --- diagnostics -------------------------------------------------------------------


def diagnostics_summary(diagnostics: Iterable[dict[str, Any]]) -> dict[str, Any]:
    items = list(diagnostics)
    return {
        "items": items,
        "errors": sum(1 for d in items if d["severity"] == "error"),
        "warnings": sum(1 for d in items if d["severity"] != "error"),
    }


EDITOR_CHOICES = {"branch_ops": BRANCH_OPS, "output_modes": OUTPUT_MODES}

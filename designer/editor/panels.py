"""What the editor's server-rendered panels show: palette, inspector, path picker, diagnostics.

Every fact comes from the runtime (the task catalogue, ``analyze``'s regions,
path options, diagnostics and schemas) or from the stored document; this
module only arranges those answers for the templates.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from designer.core.errors import BadRequest
from designer.models import Workflow as WorkflowModel
from designer.workflows import analysis as doc_analysis
from designer.workflows import catalog
from designer.workflows.operations import BRANCH_OPS, OUTPUT_MODES, input_target, same_target
from runtime import Analysis, WorkflowError
from runtime.analysis import schema_type_label as type_label  # the analyzer's type text, so rows and pickers agree
from runtime.errors import PathSyntaxError, UnknownTaskError
from runtime.paths import LocalPath, is_item_index, parse_local_path

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
    """One row of a node's input mapping: a field (or a key inside one), what it wants, what fills it."""

    name: str
    key: str  # the analyzer's field name, e.g. input.customer_name or input.values.name
    type: str
    description: str
    required: bool
    schema: dict[str, Any]
    binding: dict[str, Any] | None
    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    focused: bool = False
    picker: dict[str, Any] | None = None
    free: bool = False  # a target the author names (an interrupt's payload), not a schema field
    depth: int = 0  # 0 for a field of the payload, 1 for a key inside it, ...
    declared: bool = True  # the schema names it (or it is a key of a free-form object); else "extra key"
    composed: int = 0  # how many bindings fill keys below this row
    inherited: str = ""  # the key of an ancestor row whose binding already fills this one
    composable: bool = False  # an object (declared or free-form) that can be filled key by key
    suggestions: list[str] = field(default_factory=list)  # declared keys not yet shown below this row
    new: bool = False  # being added: no binding until a source is chosen
    itemizable: bool = False  # an array that can be filled item by item
    next_item: int = 0  # the index "+ item" adds
    item: bool = False  # this row is an item of an array (its name is its index)
    item_rows: bool = False  # the rows below this one are items, not keys

    @property
    def label(self) -> str:
        return f"item {self.name}" if self.item else self.name

    @property
    def literal_text(self) -> str:
        """A literal as the author typed it: text as plain text; other types, and text that would read
        back as another type (``3``, ``true``, ``"x"``), as JSON, so the value box round-trips."""
        if self.binding is None or "value" not in self.binding:
            return ""
        value = self.binding["value"]
        if not isinstance(value, str):
            return json.dumps(value, ensure_ascii=False)
        if self.schema.get("type") == "string":
            return value
        try:
            json.loads(value)
        except ValueError:
            return value
        return json.dumps(value, ensure_ascii=False)

    @property
    def literal_shown(self) -> str:
        """The literal in the row: text plain, every other type as JSON."""
        if self.binding is None or "value" not in self.binding:
            return ""
        value = self.binding["value"]
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    @property
    def literal_is_text(self) -> bool:
        return self.binding is not None and isinstance(self.binding.get("value"), str)


def _bindings(node: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(b.get("target")): b for b in node.get("input", [])}


def _properties(schema: Mapping[str, Any] | None) -> tuple[dict[str, Any], set[str]]:
    if not isinstance(schema, Mapping):
        return {}, set()
    props = schema.get("properties")
    return (dict(props) if isinstance(props, Mapping) else {}), set(schema.get("required", []) or [])


def _object_atoms(schema: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """The object forms a (declared) schema allows: itself, or its anyOf/oneOf members."""
    if not isinstance(schema, Mapping):
        return []
    members = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(members, list):
        return [atom for member in members for atom in _object_atoms(member)]
    kind = schema.get("type")
    return [schema] if kind == "object" or (isinstance(kind, list) and "object" in kind) else []


def _accepts_keys(schema: Mapping[str, Any] | None) -> bool:
    """Whether a field can be filled key by key: an object form, or no type at all (any value)."""
    if schema is None:
        return False
    if not schema or (not schema.get("type") and not schema.get("anyOf") and not schema.get("oneOf")
                      and not schema.get("enum") and "const" not in schema):
        return True
    return bool(_object_atoms(schema))


def _accepts_items(schema: Mapping[str, Any] | None) -> bool:
    """Whether a field is an array (or may be one): it can be filled item by item."""
    if not isinstance(schema, Mapping):
        return False
    members = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(members, list):
        return any(_accepts_items(member) for member in members if isinstance(member, Mapping))
    kind = schema.get("type")
    return kind == "array" or (isinstance(kind, list) and "array" in kind)


def _declared_props(schema: Mapping[str, Any] | None) -> tuple[dict[str, Any], set[str]]:
    props: dict[str, Any] = {}
    required: set[str] = set()
    for atom in _object_atoms(schema):
        more, needed = _properties(atom)
        props.update({k: v for k, v in more.items() if k not in props})
        required |= needed
    return props, required


def _by_field(diagnostics: Iterable[dict[str, Any]]) -> dict[str | None, list[dict[str, Any]]]:
    by_field: dict[str | None, list[dict[str, Any]]] = {}
    for diagnostic in diagnostics:
        by_field.setdefault(diagnostic.get("field"), []).append(diagnostic)
    return by_field


def _target_parts(text: str) -> tuple[str, ...]:
    try:
        return parse_local_path(text).parts
    except PathSyntaxError:
        return (text,)


def field_rows(node: Mapping[str, Any], schema: Mapping[str, Any] | None, diagnostics: Iterable[dict[str, Any]],
               *, analysis: Analysis | None = None, adding: str | None = None) -> list[FieldRow]:
    """The node's input mapping as rows, parents before their keys: every declared field, every key the
    document binds (``values.name`` shows as ``name`` under ``values``, typed by the analyzer, or marked
    "extra key" when nothing declares it), and ``adding`` (a field key being added, still unbound)."""
    props, required = _properties(schema)
    bound: dict[tuple[str, ...], dict[str, Any]] = {}
    for binding in node.get("input", []):
        bound.setdefault(_target_parts(str(binding.get("target"))), binding)
    add_parts = _target_parts(adding[len("input."):]) if adding and adding.startswith("input.") else None
    known = list(bound) + ([add_parts] if add_parts and add_parts not in bound else [])  # document order
    by_field = _by_field(diagnostics)
    node_id = str(node.get("id"))

    def wanted(parts: tuple[str, ...]) -> dict[str, Any] | None:
        if analysis is None or node_id not in analysis.reachable:
            return None
        try:
            found = analysis.field_schema(node_id, field_key_of(parts))
        except WorkflowError:
            return None
        return found if isinstance(found, dict) else None

    rows: list[FieldRow] = []

    def emit(parts: tuple[str, ...], declared_schema: Mapping[str, Any] | None, is_required: bool,
             inherited: str) -> None:
        key = field_key_of(parts)
        binding = bound.get(parts)
        below = list(dict.fromkeys(p[len(parts)] for p in known if len(p) > len(parts) and p[:len(parts)] == parts))
        composed = sum(1 for p in bound if len(p) > len(parts) and p[:len(parts)] == parts)
        want = declared_schema if declared_schema is not None else wanted(parts)
        sub_props, sub_required = _declared_props(want)
        declared = declared_schema is not None or want is not None
        if declared_schema is not None:
            type_text = type_label(dict(declared_schema))
        elif want is not None:
            type_text = type_label(dict(want))
        else:
            type_text = "extra key" if analysis is not None and node_id in analysis.reachable \
                else "not declared"
        items = [k for k in below if is_item_index(k)]
        item_rows = bool(items) and len(items) == len(below)
        itemizable = not binding and not inherited and _accepts_items(want) and (item_rows or not below)
        composable = not binding and not inherited and not item_rows and _accepts_keys(want)
        show_declared = bool(below) and not item_rows
        if item_rows:
            children = sorted(items, key=lambda k: (len(k), k))
        else:
            children = ([k for k in sub_props] if show_declared else []) + [k for k in below if k not in sub_props]
        rows.append(FieldRow(
            name=parts[-1], key=key, type=type_text,
            description=str(declared_schema.get("description", "")) if isinstance(declared_schema, Mapping) else "",
            required=is_required, schema=dict(want) if isinstance(want, Mapping) else {},
            binding=binding, diagnostics=by_field.get(key, []), depth=len(parts) - 1, declared=declared,
            composed=composed, inherited=inherited, composable=composable,
            suggestions=[k for k in sub_props if k not in children],
            new=parts == add_parts and binding is None,
            itemizable=itemizable, next_item=len(items) if item_rows else 0,
            item=len(parts) > 1 and is_item_index(parts[-1]), item_rows=item_rows,
        ))
        for child in children:
            # an item's type comes from the analyzer (items, or prefixItems by position)
            child_schema = None if item_rows else sub_props.get(child)
            emit((*parts, child), child_schema if isinstance(child_schema, Mapping) else None,
                 not item_rows and child in sub_required, inherited or (key if binding else ""))

    tops = list(props) + [p[0] for p in known if p and p[0] not in props]
    for name in dict.fromkeys(tops):
        prop = props.get(name)
        emit((name,), prop if isinstance(prop, Mapping) else ({} if name in props else None), name in required, "")
    return rows


def field_key_of(parts: tuple[str, ...]) -> str:
    """``input.<target>`` for a binding target's parts, quoted as the analyzer names fields."""
    return f"input.{LocalPath(parts)}" if parts else "input"


def child_key(parent: str, key: str) -> str:
    """The field key of ``key`` inside the row ``parent`` (``input.values`` + ``name``): a key is one name,
    quoted in the path if it needs to be, never parsed as a path of its own."""
    key = key.strip()
    if not key:
        raise BadRequest("name the key first", field=parent)
    return field_key_of((*input_target(parent).parts, key))


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


def field_schema(node: Mapping[str, Any], analysis: Analysis | None, name: str) -> dict[str, Any] | None:
    """The schema an input field of ``node`` wants (task input or subgraph child input)."""
    schema = input_schema_of(node, analysis)
    props, _ = _properties(schema)
    prop = props.get(name)
    return prop if isinstance(prop, dict) else None


def input_schema_of(node: Mapping[str, Any], analysis: Analysis | None) -> dict[str, Any] | None:
    kind = node.get("kind")
    if kind == "task":
        try:
            return catalog.registry().get(str(node.get("task"))).input_schema
        except UnknownTaskError:
            return None
    if kind == "subgraph":
        child = analysis.subgraph(node["id"]) if analysis is not None else None
        return child.input_schema if child is not None else None
    return None


def result_fields(node: Mapping[str, Any], analysis: Analysis | None) -> list[str]:
    """Top-level result fields offered as output-binding sources ('.' is always offered)."""
    schema: Any = None
    if node.get("kind") == "task":
        try:
            schema = catalog.registry().get(str(node.get("task"))).result_schema
        except UnknownTaskError:
            schema = None
    elif node.get("kind") == "subgraph":
        child = analysis.subgraph(node["id"]) if analysis is not None else None
        schema = child.output_schema if child is not None else None
    elif node.get("kind") == "interrupt":
        schema = node.get("resume_schema")
    props, _ = _properties(schema)
    return list(props)


def state_fields(analysis: Analysis | None) -> list[str]:
    props, _ = _properties(analysis.state_schema if analysis is not None else None)
    return list(props)


def state_field_types(analysis: Analysis | None) -> list[dict[str, str]]:
    """Declared state fields with their types, for the output-binding target picker."""
    props, _ = _properties(analysis.state_schema if analysis is not None else None)
    return [{"name": name, "type": type_label(prop) if isinstance(prop, dict) else "any"}
            for name, prop in props.items()]


def workflow_output_paths(analysis: Analysis | None) -> list[dict[str, Any]]:
    """Paths a workflow output can read once the run completes: the input and the state (no loop is active
    then), as the analyzer offers them at the top-level start node, grouped Input then State."""
    workflow = analysis.workflow if analysis is not None else None
    if workflow is None or not workflow.nodes:
        return []
    start = workflow.start or workflow.nodes[0].id
    try:
        report = doc_analysis.node_report(analysis, start)
    except WorkflowError:
        return []
    groups: dict[str, list[dict[str, Any]]] = {"Input": [], "State": []}
    for option in report["path_options"]:
        root = str(option["path"]).split(".", 1)[0]
        if root in ("input", "state") and option["group"] in groups:
            groups[option["group"]].append(option)
    return [{"title": title, "options": options} for title, options in groups.items() if options]


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


def _tree_depth(path: str) -> int:
    """How far below its group's top a path sits: ``input`` 0, ``input.customers`` 1; a loop's
    ``context.foreach.<id>.item`` 0 and ``.item.name`` 1; ``context.<alias>`` 0."""
    dots = path.count(".")
    if path.startswith("context.foreach."):
        return max(dots - 3, 0)
    if path.startswith("context."):
        return max(dots - 1, 0)
    return dots


#: An option of the data panel with more paths below it than this shows them only when asked for (a row that
#: loads them in its place, views.data_tree): at 600 nodes the State group's 600 fields were ~176 KB of a node's
#: ~197 KB panel, sent with every node opened and again after every save, for a panel most visits never drag from.
DATA_TREE_FOLD: Final = 40


def _tree_order(path: str) -> str:
    """The key that puts each path's descendants right after it, before its next sibling: ``.`` sorts first
    (``input.a.x`` before ``input.a-b``), so a subtree is one run of the sorted list."""
    return path.replace(".", "\x00")


def _readable(analysis: Any, node_id: str) -> list[OptionGroup]:
    """Every path the node can read but a loop's run ids, grouped like the picker, each group in tree order; each
    option carries its depth below its group's root (for indentation) and its last segment."""
    try:
        report = doc_analysis.node_report(analysis, node_id)
    except WorkflowError:
        return []
    if not report["reachable"]:
        return []
    region = report["control_region"]
    grouped: dict[str, list[dict[str, Any]]] = {}
    owner: dict[str, str | None] = {}
    for option in report["path_options"]:
        if _is_run_id(option):
            continue
        grouped.setdefault(option["group"], []).append(option)
        owner.setdefault(option["group"], option["foreach_id"])
    groups = []
    for name in sorted(grouped, key=lambda g: (3, region.index(owner[g])) if owner[g] in region
                       else (0 if g == "Input" else 1 if g == "State" else 2, 0)):
        options = sorted(grouped[name], key=lambda o: _tree_order(o["path"]))
        groups.append(OptionGroup(name, owner[name], [
            {**o, "depth": _tree_depth(o["path"]), "leaf": o["path"].rsplit(".", 1)[-1]} for o in options]))
    return groups


def _below(options: list[dict[str, Any]], index: int) -> int:
    """How many options after ``options[index]`` (a list in tree order) are its descendants."""
    prefix = options[index]["path"] + "."
    end = index + 1
    while end < len(options) and options[end]["path"].startswith(prefix):
        end += 1
    return end - index - 1


def _folded(options: list[dict[str, Any]], fold: int) -> list[dict[str, Any]]:
    """The rows that show ``options`` (in tree order): each option, except that the descendants of one with more
    than ``fold`` of them are one row, ``{"more": count, ...}``, that loads them when opened."""
    rows: list[dict[str, Any]] = []
    index = 0
    while index < len(options):
        option = options[index]
        rows.append(option)
        below = _below(options, index)
        if below > fold:
            rows.append({"more": below, "path": option["path"], "leaf": option["leaf"], "depth": option["depth"] + 1})
            index += below
        index += 1
    return rows


def data_tree(analysis: Any, node_id: str, *, fold: int = DATA_TREE_FOLD) -> list[OptionGroup]:
    """Every path the node can read, grouped like the picker, as a tree to drag fields from (the "data" panel);
    each option carries its depth below its group's root for indentation. A subtree of more than ``fold`` paths is
    one row that loads it (``data_subtree``)."""
    return [OptionGroup(group.title, group.foreach_id, _folded(group.options, fold))
            for group in _readable(analysis, node_id)]


def data_subtree(analysis: Any, node_id: str, under: str, *, fold: int = DATA_TREE_FOLD) -> list[dict[str, Any]]:
    """The rows of the data panel below ``under`` (a folded option's path), its own big subtrees folded again.
    Refused (``request.invalid`` on ``under``) when the node cannot read ``under``."""
    for group in _readable(analysis, node_id):
        for index, option in enumerate(group.options):
            if option["path"] == under:
                return _folded(group.options[index + 1:index + 1 + _below(group.options, index)], fold)
    raise BadRequest(f"node {node_id!r} has no path {under!r} to open in its data panel", field="under", node=node_id)


# --- diagnostics -------------------------------------------------------------------


def diagnostics_summary(diagnostics: Iterable[dict[str, Any]]) -> dict[str, Any]:
    items = list(diagnostics)
    return {
        "items": items,
        "errors": sum(1 for d in items if d["severity"] == "error"),
        "warnings": sum(1 for d in items if d["severity"] != "error"),
    }


EDITOR_CHOICES = {"branch_ops": BRANCH_OPS, "output_modes": OUTPUT_MODES}

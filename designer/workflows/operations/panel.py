"""The panels' edits as named operations."""

from __future__ import annotations

import copy
from collections.abc import Callable

from designer.core.errors import BadRequest
from designer.core.untrusted import form_json
from designer.workflows.operations.edits import (
    SCHEMA_KEYS,
    add_branch_case,
    add_output,
    add_workflow_output,
    bind_literal,
    bind_path,
    bind_secret,
    remove_branch_case,
    remove_output,
    remove_workflow_output,
    set_schema,
    set_start,
    unbind,
    unbind_tree,
    update_basics,
    update_branch,
    update_foreach,
    update_interrupt,
    update_limits,
    update_settings,
    update_subgraph,
)
from designer.workflows.operations.fields import Document, find_node, input_target, literal_value
from designer.workflows.operations.registry import OPERATIONS, Applied, Args, Context, diffed, operation


def _panel(name: str, edit: Callable[[Document, str, Args], Document]) -> None:
    def run(document: Document, args: Args, context: Context) -> Applied:
        node_id = args.node()
        return diffed(document, edit(document, node_id, args), node_id)

    run.__name__ = name
    run.__doc__ = edit.__doc__
    OPERATIONS[name] = run


_panel("set_foreach", update_foreach)
_panel("set_subgraph", update_subgraph)
_panel("add_output", add_output)
_panel("remove_output", remove_output)
_panel("set_branch", update_branch)
_panel("add_case", add_branch_case)
_panel("remove_case", remove_branch_case)
_panel("set_interrupt", update_interrupt)
_panel("set_limits", update_limits)


@operation("bind_path")
def _bind_path(document: Document, args: Args, context: Context) -> Applied:
    """``node``, ``field`` (``input.<target>``, ``over`` or ``path``), ``path``."""
    node_id = args.node()
    return diffed(document, bind_path(document, node_id, str(args.get("field", "")), str(args.get("path", ""))),
                   node_id)


@operation("bind_literal")
def _bind_literal(document: Document, args: Args, context: Context) -> Applied:
    """``node``, ``field`` and ``value`` (JSON), or ``text`` read as the type the field wants."""
    node_id = args.node()
    field_name = str(args.get("field", ""))
    target = input_target(field_name)
    if "text" in args:
        # The whole target (values.count, not just values): a key inside a field has its own type.
        name = str(target) if target.parts else ""
        schema = context.field_schema(find_node(document, node_id), name) if name else None
        value = literal_value(str(args.get("text", "")), schema)
    else:
        value = args.get("value")
    return diffed(document, bind_literal(document, node_id, field_name, value), node_id)


@operation("bind_secret")
def _bind_secret(document: Document, args: Args, context: Context) -> Applied:
    """``node``, ``field`` (``input.<target>``), ``secret`` (a name) and an optional ``template``."""
    node_id = args.node()
    return diffed(document, bind_secret(document, node_id, str(args.get("field", "")), str(args.get("secret", "")),
                                        str(args.get("template", "") or "")), node_id)


@operation("unbind")
def _unbind(document: Document, args: Args, context: Context) -> Applied:
    node_id = args.node()
    return diffed(document, unbind(document, node_id, str(args.get("field", ""))), node_id)


@operation("unbind_tree")
def _unbind_tree(document: Document, args: Args, context: Context) -> Applied:
    """``node``, ``field``: the field's binding and every binding below it (a mapping row's keys)."""
    node_id = args.node()
    return diffed(document, unbind_tree(document, node_id, str(args.get("field", ""))), node_id)


@operation("set_schema")
def _set_schema(document: Document, args: Args, context: Context) -> Applied:
    """``key`` (input_schema, state_schema; resume_schema with ``node``) and ``schema`` (an object,
    or JSON text)."""
    node_id = args.get("node") or None
    schema = args.get("schema")
    if isinstance(schema, str):
        schema = form_json(schema, field="schema", what=SCHEMA_KEYS.get(str(args.get("key")), "the schema"))
    return diffed(document, set_schema(document, node_id, str(args.get("key", "")), schema), node_id)


@operation("add_workflow_output")
def _add_workflow_output(document: Document, args: Args, context: Context) -> Applied:
    """``target`` (the output field) and ``path`` (where its value is read)."""
    return diffed(document, add_workflow_output(document, str(args.get("target", "")), str(args.get("path", ""))))


@operation("remove_workflow_output")
def _remove_workflow_output(document: Document, args: Args, context: Context) -> Applied:
    try:
        index = int(args.get("index", ""))
    except (TypeError, ValueError):
        raise BadRequest("unknown output row", field="index") from None
    return diffed(document, remove_workflow_output(document, index))


@operation("set_basics")
def _set_basics(document: Document, args: Args, context: Context) -> Applied:
    """``node``, ``id`` (a rename follows every route and path naming it), ``name``, ``description``."""
    doc, new_id = update_basics(document, args.node(), args)
    return diffed(document, doc, new_id)


@operation("set_start")
def _set_start(document: Document, args: Args, context: Context) -> Applied:
    node_id = args.node()
    return diffed(document, set_start(document, node_id), node_id)


@operation("set_workflow_start")
def _set_workflow_start(document: Document, args: Args, context: Context) -> Applied:
    """``start``: the node a run starts at; empty means the first node."""
    doc = copy.deepcopy(document)
    start = str(args.get("start", "") or "").strip()
    if start:
        find_node(doc, start)
    doc["start"] = start or None
    return diffed(document, doc)


@operation("set_settings")
def _set_settings(document: Document, args: Args, context: Context) -> Applied:
    """Workflow settings as text: ``input_schema``, ``state_schema``, ``outputs`` (JSON) and ``start``."""
    return diffed(document, update_settings(document, args))



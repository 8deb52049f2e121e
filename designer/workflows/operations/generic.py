"""Generic operations, what undo of a panel edit sends: whole nodes, document fields, the document."""

from __future__ import annotations

import copy
from collections.abc import Mapping

from designer.core.errors import BadRequest
from designer.workflows.operations.fields import Document
from designer.workflows.operations.registry import Applied, Args, Context, diffed, operation


@operation("put_nodes")
def put_nodes(document: Document, args: Args, context: Context) -> Applied:
    """``nodes``: whole node objects replacing the nodes of the same ids."""
    replacements = args.getlist("nodes")
    doc = copy.deepcopy(document)
    by_id = {n.get("id"): i for i, n in enumerate(doc.get("nodes", []))}
    for node in replacements:
        if not isinstance(node, dict) or node.get("id") not in by_id:
            raise BadRequest("put_nodes replaces existing nodes; one of them no longer exists", field="nodes")
        doc["nodes"][by_id[node["id"]]] = copy.deepcopy(node)
    return diffed(document, doc)


#: Top-level fields ``set_fields`` may change (the document's own keys).
DOCUMENT_FIELDS = frozenset({"name", "description", "input_schema", "state_schema", "start", "nodes", "routes",
                             "outputs", "metadata"})


@operation("set_fields")
def set_fields(document: Document, args: Args, context: Context) -> Applied:
    """``set``: {field: value} and ``unset``: [field] for the document's top-level fields."""
    put = args.get("set") or {}
    unset = args.getlist("unset")
    if not isinstance(put, Mapping):
        raise BadRequest("set_fields needs set: {field: value}", field="set")
    unknown = sorted({*put, *unset} - DOCUMENT_FIELDS)
    if unknown:
        raise BadRequest(f"set_fields cannot change {', '.join(unknown)}; it changes "
                         f"{', '.join(sorted(DOCUMENT_FIELDS))}", field="set")
    doc = copy.deepcopy(document)
    for key, value in put.items():
        doc[key] = copy.deepcopy(value)
    for key in unset:
        doc.pop(key, None)
    return diffed(document, doc)


@operation("replace_document")
def replace_document(document: Document, args: Args, context: Context) -> Applied:
    """``document``: a whole document (a published version's, say) replacing the draft's content; the id
    stays the workflow's. Undone by replacing it with the draft as it was."""
    new = args.get("document")
    if not isinstance(new, Mapping) or not isinstance(new.get("nodes", []), list):
        raise BadRequest("replace_document needs document: a whole workflow document object", field="document")
    doc = {key: copy.deepcopy(value) for key, value in new.items()}
    if "id" in document:
        doc["id"] = document["id"]
    return Applied(doc, [{"op": "replace_document", "document": copy.deepcopy(document)}])



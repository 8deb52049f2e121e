"""What changed between two stored drafts, as a JSON Patch (RFC 6902: ``add``, ``remove`` and ``replace`` only).

The editor's save answers with it instead of the whole document when the client asks (``designer.editor.edits``):
a 50 px drag of one node of 600 is one ``replace`` of that node's position, not 360 KB. Applying the patch to the
document at the base revision gives exactly the saved one (static/src/editor/patch.js applies it in the browser).

Lists are compared by their common start and end: one node added, removed or changed is one operation, whatever
the list's length; a changed stretch of equal length is compared item by item, else removed and added whole.
Scalars are equal only with the same JSON type (``1``, ``1.0`` and ``true`` are three values).
"""

from __future__ import annotations

import json
from typing import Any


def _pointer(path: tuple[str | int, ...]) -> str:
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


def same_json(a: Any, b: Any) -> bool:
    """The same JSON text (the C encoder: a node of 600 compares in microseconds, and ``1 == True`` does not)."""
    return a is b or (type(a) is type(b) and json.dumps(a) == json.dumps(b))


_same = same_json


def _diff(a: Any, b: Any, path: tuple[str | int, ...], out: list[dict[str, Any]]) -> None:
    if a is b:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in a:
            if key not in b:
                out.append({"op": "remove", "path": _pointer((*path, key))})
        for key, value in b.items():
            if key not in a:
                out.append({"op": "add", "path": _pointer((*path, key)), "value": value})
            else:
                _diff(a[key], value, (*path, key), out)
        return
    if isinstance(a, list) and isinstance(b, list):
        _diff_list(a, b, path, out)
        return
    if not _same(a, b):
        out.append({"op": "replace", "path": _pointer(path), "value": b})


def _diff_list(a: list[Any], b: list[Any], path: tuple[str | int, ...], out: list[dict[str, Any]]) -> None:
    start = 0
    shortest = min(len(a), len(b))
    while start < shortest and _same(a[start], b[start]):
        start += 1
    end = 0
    while end < shortest - start and _same(a[len(a) - 1 - end], b[len(b) - 1 - end]):
        end += 1
    old, new = a[start:len(a) - end], b[start:len(b) - end]
    if len(old) == len(new):
        for offset, (x, y) in enumerate(zip(old, new, strict=True)):
            _diff(x, y, (*path, start + offset), out)
        return
    # Highest index first, so each index still names the item it meant.
    for offset in range(len(old) - 1, -1, -1):
        out.append({"op": "remove", "path": _pointer((*path, start + offset))})
    for offset, value in enumerate(new):
        out.append({"op": "add", "path": _pointer((*path, start + offset)), "value": value})


def json_patch(before: Any, after: Any) -> list[dict[str, Any]]:
    """The operations that turn ``before`` into ``after`` (empty when they are the same JSON)."""
    out: list[dict[str, Any]] = []
    _diff(before, after, (), out)
    return out


def _parent(document: Any, pointer: str) -> tuple[Any, str | int]:
    parts = [part.replace("~1", "/").replace("~0", "~") for part in pointer.split("/")[1:]]
    if not parts:
        raise ValueError("a patch operation on the whole document")
    node = document
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    last = parts[-1]
    return node, (int(last) if isinstance(node, list) and last != "-" else last)


def apply_patch(document: Any, patch: list[dict[str, Any]]) -> Any:
    """``document`` with ``patch`` applied, in place (what the browser does; the tests check the two agree)."""
    for operation in patch:
        parent, key = _parent(document, operation["path"])
        kind = operation["op"]
        if kind == "remove":
            del parent[key]
        elif kind == "add" and isinstance(parent, list):
            parent.insert(len(parent) if key == "-" else int(key), operation["value"])
        elif kind in ("add", "replace"):
            parent[key] = operation["value"]
        else:
            raise ValueError(f"unsupported patch operation {kind!r}")
    return document

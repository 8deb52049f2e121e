"""Recursion that multiplies: a schema that checks one nested value against itself more than once.

``expanded_size`` counts a recursive part of a schema (a tree of ``children``) once, because
validating against it costs as much as the value is large: each place in the value is checked
against each of its subschemas once. That holds only while one check of a recursive subschema
leads to at most one check of it (or of any other member of its recursion) at each place one
level down. ``{"$defs": {"r": {"allOf": [{"$ref": "#/$defs/s"}, {"$ref": "#/$defs/s"}]},
"s": {"properties": {"x": {"$ref": "#/$defs/r"}}}}}`` checks ``x`` twice, ``x.x`` four times:
a value nested 30 levels deep would take a billion checks. ``recursive_fanout`` finds that.

Places one level down are keys of an object or indexes of an array. Which subschemas apply at
a place is decided from the keywords alone, erring towards "applies": every
``patternProperties`` pattern is taken to match every key, while ``additionalProperties``
skips the names its own ``properties`` lists and ``items`` after ``prefixItems`` skips the
indexes those cover, as validation does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: Counts only need to tell 0, 1 and "more than one" apart.
_MANY = 2

Label = tuple[Any, ...]  # ("key", name) | ("key*",) | ("key-except", names) | ("index", i) | ("index-from", n)
Place = tuple[str, Any]  # ("key", name) | ("index", i)


@dataclass(frozen=True, slots=True)
class Fanout:
    node: int  # id of the recursive subschema that multiplies
    place: Place
    count: int  # at least 2 (capped)


def descending(contents: Mapping[str, Any], keywords: frozenset[str]) -> list[tuple[Label, Any]]:
    """(which places one level down, subschema) for every keyword of ``contents`` that descends."""
    out: list[tuple[Label, Any]] = []
    props = contents.get("properties")
    names = frozenset(props) if isinstance(props, Mapping) else frozenset()
    if isinstance(props, Mapping):
        out += [(("key", name), sub) for name, sub in props.items()]
    patterns = contents.get("patternProperties")
    if isinstance(patterns, Mapping):
        out += [(("key*",), sub) for sub in patterns.values()]
    for keyword, label in (("additionalProperties", ("key-except", names)), ("unevaluatedProperties", ("key*",)),
                           ("contains", ("index-from", 0)), ("unevaluatedItems", ("index-from", 0))):
        if keyword in keywords and isinstance(contents.get(keyword), Mapping):
            out.append((label, contents[keyword]))
    prefix = contents.get("prefixItems") if "prefixItems" in keywords else None
    if isinstance(prefix, list):
        out += [(("index", i), sub) for i, sub in enumerate(prefix)]
    items = contents.get("items")
    if isinstance(items, list):  # drafts before 2020-12: one schema per index, then additionalItems
        out += [(("index", i), sub) for i, sub in enumerate(items)]
        if isinstance(contents.get("additionalItems"), Mapping):
            out.append((("index-from", len(items)), contents["additionalItems"]))
    elif isinstance(items, Mapping):
        out.append((("index-from", len(prefix) if isinstance(prefix, list) else 0), items))
    return out


def _applies(label: Label, place: Place) -> bool:
    kind = label[0]
    if place[0] == "key":
        return (kind == "key" and label[1] == place[1]) or kind == "key*" or (
            kind == "key-except" and place[1] not in label[1])
    return bool((kind == "index" and label[1] == place[1]) or (kind == "index-from" and place[1] >= label[1]))


def recursive_fanout(nodes: Mapping[int, Mapping[str, Any]], in_place: Mapping[int, list[int]],
                     component: Mapping[int, int], keywords: frozenset[str]) -> Fanout | None:
    """The first recursive subschema one of whose checks leads to two or more recursive checks at one
    place one level down; None when every recursion stays linear in the value."""
    sizes: dict[int, int] = {}
    for comp in component.values():
        sizes[comp] = sizes.get(comp, 0) + 1
    down = {key: [(label, id(sub)) for label, sub in descending(contents, keywords)
                  if isinstance(sub, Mapping) and id(sub) in nodes]
            for key, contents in nodes.items()}

    def recursive(key: int, child: int) -> bool:
        comp = component.get(child)
        return comp is not None and comp == component.get(key) and (sizes[comp] > 1 or key == child or
                                                                      child in in_place.get(child, ()))

    entries = {child for key, edges in down.items() for _, child in edges if recursive(key, child)}
    applied: dict[int, dict[int, int]] = {}

    def closure(key: int) -> dict[int, int]:
        """Every subschema checked against the same value as ``key``, with how many times (capped)."""
        found = applied.get(key)
        if found is None:
            found = {key: 1}
            for child in in_place.get(key, ()):
                for member, count in closure(child).items():
                    found[member] = min(_MANY, found.get(member, 0) + count)
            applied[key] = found
        return found

    for entry in entries:
        checked = closure(entry)
        onward = [(label, child, count) for member, count in checked.items() for label, child in down[member]
                  if component.get(child) == component.get(entry)]
        places: set[Place] = {("key", "\x00any other key"), ("index", 1 << 30)}
        for label, _, _ in onward:
            if label[0] in ("key", "index"):
                places.add((label[0], label[1]))
            elif label[0] == "index-from":
                places.add(("index", label[1]))
        for place in places:
            total = sum(count for label, _, count in onward if _applies(label, place))
            if total >= _MANY:
                return Fanout(entry, place, total)
    return None

"""Path options: what the designer's path pickers offer at one node."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from runtime._analysis import _schemas as S
from runtime._analysis._schemas import Schema
from runtime._analysis._scope import IDENTITY_DESCRIPTIONS, IDENTITY_FIELDS, INDEX_SCHEMA, Scope, Stack
from runtime._paths import GraphSourcePath

Compatibility = Literal["exact", "compatible", "optional"]


@dataclass(frozen=True, slots=True)
class PathOption:
    """One readable path at a node.

    ``compatibility`` is set when options were asked for with a ``want``
    schema: ``exact`` (same type), ``compatible`` (fits, e.g. integer into
    number, or an unknown schema), ``optional`` (may not fit at run time, e.g.
    a nullable value into a non-nullable field: a warning if bound).
    ``last_item_wins`` names the loop whose concurrent items each overwrite
    this state value (``state.concurrent_write``): read after that loop, it
    holds whichever item finished last.
    ``schema`` is shared with the analysis; treat it as read-only.
    """

    path: GraphSourcePath
    path_str: str
    schema: dict[str, Any]
    type: str
    title: str
    description: str
    group: str
    foreach_id: str | None = None
    compatibility: Compatibility | None = None
    last_item_wins: str = ""


#: How many segments below a root (or below a loop item) the options descend.
MAX_DEPTH = 4
#: A guard against enormous schemas; pickers show a search box long before this.
MAX_OPTIONS_PER_ROOT = 2000


def _some(names: list[str], shown: int = 3) -> str:
    if len(names) <= shown:
        return ", ".join(names)
    return f"{', '.join(names[:shown])} and {len(names) - shown} more"


def _title(schema: Schema, fallback: str) -> str:
    title = schema.get("title") if isinstance(schema, dict) else None
    return title if isinstance(title, str) and title else fallback


def _description(schema: Schema, fallback: str) -> str:
    text = schema.get("description") if isinstance(schema, dict) else None
    return text if isinstance(text, str) and text else fallback


def _walk(out: list[PathOption], path: GraphSourcePath, schema: Schema, title: str, description: str,
          group: str, foreach_id: str | None, depth: int, limit: int, notes: Mapping[str, str] | None = None,
          absent_is_null: bool = True) -> None:
    if len(out) >= limit:
        return
    out.append(PathOption(path, str(path), schema, S.type_label(schema), title, description, group, foreach_id))
    if depth >= MAX_DEPTH:
        return
    names: list[str] = []
    for atom in S.object_atoms(schema):
        props = atom.get("properties")
        if isinstance(props, dict):
            names.extend(name for name in props if name not in names)
    for name in names:
        child = S.property_schema(schema, name, absent_is_null=absent_is_null)
        if child is None:
            continue
        note = (notes or {}).get(name, "")
        _walk(out, path.child(name), child, _title(child, name),
              _description(child, note or f"Field {name!r} of {path}"), group, foreach_id, depth + 1, limit)


class OptionIndex:
    """Path options per control region, built lazily and cached (regions share foreach entries)."""

    def __init__(self, scope: Scope, foreach_titles: Mapping[str, str], writers: Mapping[str, list[str]],
                 overwritten: Mapping[str, str] | None = None) -> None:
        self.scope = scope
        self.overwritten = overwritten or {}
        self.foreach_titles = foreach_titles
        self.writers = writers
        self._base: list[PathOption] | None = None
        self._foreach: dict[str, list[PathOption]] = {}
        self._regions: dict[Stack, list[PathOption]] = {}
        self._wanted: dict[tuple[Stack, str], list[PathOption]] = {}

    def base(self) -> list[PathOption]:
        if self._base is None:
            out: list[PathOption] = []
            _walk(out, GraphSourcePath("input"), self.scope.input_schema, "Input",
                  "The workflow's whole input", "Input", None, 0, MAX_OPTIONS_PER_ROOT)
            state: list[PathOption] = []
            notes = {name: f"State field {name!r}, written by {_some(nodes)}" for name, nodes in self.writers.items()}
            _walk(state, GraphSourcePath("state"), self.scope.state_schema, "State",
                  "The workflow's whole state", "State", None, 0, MAX_OPTIONS_PER_ROOT, notes,
                  absent_is_null=False)
            if self.overwritten:
                state = [self._mark(option) for option in state]
            self._base = out + state
        return self._base

    def _mark(self, option: PathOption) -> PathOption:
        """Mark an overwritten state path and everything read inside it (``state.lines.0`` of ``state.lines``)."""
        for target, loop in self.overwritten.items():
            if option.path_str == target or option.path_str[len(target):len(target) + 1] in (".", "[") and \
                    option.path_str.startswith(target):
                return replace(option, last_item_wins=loop)
        return option

    def group(self, foreach_id: str) -> str:
        return f"Loop: {self.foreach_titles.get(foreach_id, foreach_id)}"

    def entry(self, foreach_id: str) -> list[PathOption]:
        found = self._foreach.get(foreach_id)
        if found is not None:
            return found
        group = self.group(foreach_id)
        over = str(self.scope.foreach_nodes[foreach_id].over)
        base = GraphSourcePath("context", ("foreach", foreach_id))
        out: list[PathOption] = []
        item = self.scope.item_schema(foreach_id)
        _walk(out, base.child("item"), item, "Item", f"The current item of foreach {foreach_id!r} (from {over})",
              group, foreach_id, 0, MAX_OPTIONS_PER_ROOT)
        out.append(PathOption(base.child("index"), str(base.child("index")), INDEX_SCHEMA, "integer", "Index",
                              f"Position of the current item in {over}, from 0", group, foreach_id))
        node_id_schema: Schema = {"type": "string", "const": foreach_id}
        for name in IDENTITY_FIELDS:
            path = base.child(name)
            schema = node_id_schema if name == "node_id" else {"type": "string"}
            out.append(PathOption(path, str(path), schema, "string", name.replace("_", " ").capitalize(),
                                  IDENTITY_DESCRIPTIONS[name], group, foreach_id))
        self._foreach[foreach_id] = out
        return out

    def region(self, stack: Stack) -> list[PathOption]:
        found = self._regions.get(stack)
        if found is not None:
            return found
        out = list(self.base())
        for foreach_id in stack:
            out.extend(self.entry(foreach_id))
        if stack:
            inner = stack[-1]
            group = self.group(inner)
            item = self.scope.item_schema(inner)
            for name, schema, title, text in (
                ("loop_item", item, "Loop item (innermost)", f"Same as context.foreach.{inner}.item"),
                ("loop_index", INDEX_SCHEMA, "Loop index (innermost)", f"Same as context.foreach.{inner}.index"),
            ):
                path = GraphSourcePath("context", (name,))
                out.append(PathOption(path, str(path), schema, S.type_label(schema), title, text, group, inner))
            for alias, foreach_id in self.scope.active_aliases(stack).items():
                path = GraphSourcePath("context", (alias,))
                schema = self.scope.item_schema(foreach_id)
                out.append(PathOption(path, str(path), schema, S.type_label(schema), f"{alias} (alias)",
                                      f"Alias of context.foreach.{foreach_id}.item", self.group(foreach_id),
                                      foreach_id))
        self._regions[stack] = out
        return out

    def wanted(self, stack: Stack, want: Schema) -> list[PathOption]:
        key = (stack, json.dumps(want, sort_keys=True, default=str))
        found = self._wanted.get(key)
        if found is not None:
            return found
        prepared = S.prepare(want)
        scored: list[tuple[int, int, PathOption]] = []
        for position, option in enumerate(self.region(stack)):
            level = S.fit(option.schema, prepared)
            if level > S.NONE:
                scored.append((-level, position, replace(option, compatibility=S.LEVEL_NAMES[level])))  # type: ignore[arg-type]
        scored.sort(key=lambda entry: (entry[0], entry[1]))
        result = [option for _, _, option in scored]
        if len(self._wanted) > 512:
            self._wanted.clear()
        self._wanted[key] = result
        return result


_ARRAY: Schema = {"type": "array"}


def list_paths(options: OptionIndex, stack: Stack | None, *, exclude: str = "", limit: int = 3) -> list[str]:
    """Up to ``limit`` paths readable at ``stack`` that hold a list, best fit first (for hints)."""
    if stack is None:
        return []
    found: list[str] = []
    for option in options.wanted(stack, _ARRAY):
        if option.path_str == exclude or S.is_any(option.schema) or S.items_schema(option.schema) is None:
            continue
        if option.path_str not in found:
            found.append(option.path_str)
        if len(found) == limit:
            break
    return found

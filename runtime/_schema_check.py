"""Is a document's JSON Schema usable? Checked before anything is validated against it.

A workflow's ``input_schema``, ``state_schema`` and interrupts' ``resume_schema``
are user input. ``schema_defects`` finds, without validating any value:

* an unsupported ``$schema`` (draft 2020-12 is the default; 2019-09, 7, 6, 4 are accepted);
* a schema its meta-schema refuses (``{"type": "text"}``, ``"required": "name"``);
* a ``pattern`` / ``patternProperties`` key that is no regular expression, or too large to compile
  (``_schema_patterns``);
* a ``$ref`` that leaves the schema (``http:``, ``file:``, another document: never fetched), that
  points at nothing, or at something that is not a schema;
* ``$ref``s that lead back to the same schema without descending into the value
  (``{"$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}}}``): validation would never end;
* ``$schema`` below the top: jsonschema switches to its stock validator class there, which
  would match patterns without a time limit;
* ``unevaluatedProperties`` together with ``patternProperties``: jsonschema evaluates that
  combination with ``re`` internally, out of reach of the time limit;
* a ``default`` its own subschema refuses (checked only on a schema free of the defects above);
* recursion that multiplies: one check of a recursive subschema leading to two checks at one
  place one level down in the value (``_schema_fanout``), so work doubles per level of nesting;
* a schema too large once expanded: ``expanded_size`` counts every subschema validation may apply,
  each ``$ref`` (and so each ``allOf``/``anyOf``/``oneOf`` branch that holds one) counted once per
  place it is used. ``{"$defs": {"d1": {"allOf": [{"$ref": "#/$defs/d0"}, {"$ref": "#/$defs/d0"}]}, ...}}``
  doubles per level while the text grows by a line, so validating one value would take as long as
  the expansion is large. Above ``MAX_SCHEMA_SUBSCHEMAS`` the schema is refused ("too complex").

The analyzer reports these as ``schema.invalid``; the runtime refuses to validate against such a
schema (``runtime._compiled.schema_validator``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import referencing
import referencing.exceptions
import referencing.jsonschema
from jsonschema import exceptions as jsonschema_exceptions
from jsonschema import validators as jsonschema_validators

from runtime._graphs import strongly_connected
from runtime._schema_fanout import recursive_fanout
from runtime._schema_patterns import (
    PatternRefused,
    PatternTooExpensive,
    ValidationTooExpensive,
    pattern_problem,
    timed_validator_class,
    validation_budget,
)


@dataclass(frozen=True, slots=True)
class Dialect:
    uri: str
    name: str
    stock: Any  # jsonschema's validator class (its meta-schema check)
    timed: Any  # the same class with time-limited pattern keywords (what validates values)
    spec: Any  # referencing.Specification: where $id / $anchor live in this draft


def _dialect(uri: str, name: str, stock: Any, spec: Any) -> Dialect:
    return Dialect(uri, name, stock, timed_validator_class(stock), spec)


_DIALECTS: dict[str, Dialect] = {d.uri: d for d in (
    _dialect("https://json-schema.org/draft/2020-12/schema", "draft 2020-12",
             jsonschema_validators.Draft202012Validator, referencing.jsonschema.DRAFT202012),
    _dialect("https://json-schema.org/draft/2019-09/schema", "draft 2019-09",
             jsonschema_validators.Draft201909Validator, referencing.jsonschema.DRAFT201909),
    _dialect("http://json-schema.org/draft-07/schema", "draft 7",
             jsonschema_validators.Draft7Validator, referencing.jsonschema.DRAFT7),
    _dialect("http://json-schema.org/draft-06/schema", "draft 6",
             jsonschema_validators.Draft6Validator, referencing.jsonschema.DRAFT6),
    _dialect("http://json-schema.org/draft-04/schema", "draft 4",
             jsonschema_validators.Draft4Validator, referencing.jsonschema.DRAFT4),
)}
DEFAULT_DIALECT = _DIALECTS["https://json-schema.org/draft/2020-12/schema"]

# Where subschemas sit. "In place" ones apply to the same value as their parent, so a cycle
# through them (and $refs) never terminates; the others descend into a property or an item.
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_MANY = ("allOf", "anyOf", "oneOf")
_IN_PLACE_MAP = ("dependentSchemas", "dependencies")
_REFS = ("$ref", "$dynamicRef", "$recursiveRef")
_CHILD_ONE = ("additionalProperties", "propertyNames", "contains", "unevaluatedItems", "unevaluatedProperties",
              "additionalItems", "items")
_CHILD_MANY = ("prefixItems", "items")
_CHILD_MAP = ("properties", "patternProperties", "$defs", "definitions")

#: The validation budget: how many subschemas one value may be checked against, $refs expanded.
#: Generated schemas of large real models stay in the hundreds; 10,000 is validated in milliseconds.
MAX_SCHEMA_SUBSCHEMAS = 10_000

_REF_HINT = "copy the referenced schema under $defs and point at it, e.g. {\"$ref\": \"#/$defs/name\"}"


@dataclass(frozen=True, slots=True)
class SchemaDefect:
    """One reason a schema cannot be used; ``where`` is a JSON pointer into it (``#`` = the whole schema)."""

    kind: str  # dialect | meta_schema | pattern | ref_outside | ref_dangling | ref_not_schema | ref_cycle |
    #            nested_schema | unevaluated_patterns | too_deep | too_complex | default
    where: str
    message: str
    hint: str


def dialect_of(schema: Mapping[str, Any]) -> Dialect | None:
    """The draft ``schema`` declares (2020-12 when it declares none); None when it is not supported."""
    uri = schema.get("$schema")
    if uri is None:
        return DEFAULT_DIALECT
    if not isinstance(uri, str):
        return None
    return _DIALECTS.get(uri[:-1] if uri.endswith("#") else uri)


def schema_defects(schema: Mapping[str, Any]) -> tuple[SchemaDefect, ...]:
    """Every reason ``schema`` cannot be used to validate values (empty when it can)."""
    try:
        key = json.dumps(schema, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        return _defects(schema)
    return _cached_defects(key)


@lru_cache(maxsize=256)
def _cached_defects(key: str) -> tuple[SchemaDefect, ...]:
    return _defects(json.loads(key))


def _defects(schema: Any) -> tuple[SchemaDefect, ...]:
    if not isinstance(schema, Mapping):
        return (SchemaDefect("meta_schema", "#", "a schema must be a JSON object",
                             'write an object such as {"type": "object"}'),)
    dialect = dialect_of(schema)
    if dialect is None:
        known = ", ".join(sorted(_DIALECTS))
        return (SchemaDefect(
            "dialect", "#/$schema", f"$schema {schema.get('$schema')!r} is not a supported JSON Schema draft",
            f"leave $schema out (draft 2020-12 is used) or use one of {known}"),)
    try:
        meta = _meta_problem(dialect, schema)
        if meta is not None:
            return (meta,)
        return tuple(_Walk(dialect, schema).defects())
    except RecursionError:
        return (SchemaDefect("too_deep", "#", "the schema is nested too deeply to check",
                             "flatten it: move nested parts under $defs and refer to them with $ref"),)


def pointer(parts: Iterator[Any] | list[Any] | tuple[Any, ...]) -> str:
    """A JSON pointer as a URI fragment: ``#/properties/a~1b``."""
    escaped = [str(p).replace("~", "~0").replace("/", "~1") for p in parts]
    return "#" + "".join("/" + part for part in escaped)


_META_VALIDATORS: dict[str, Any] = {}


def _meta_validator(dialect: Dialect) -> Any:
    found = _META_VALIDATORS.get(dialect.uri)
    if found is None:
        # No format checking: "regex" would compile patterns with `re`; patterns are checked below.
        found = _META_VALIDATORS[dialect.uri] = dialect.stock(dialect.stock.META_SCHEMA, format_checker=None)
    return found


def _meta_problem(dialect: Dialect, schema: Mapping[str, Any]) -> SchemaDefect | None:
    error = jsonschema_exceptions.best_match(_meta_validator(dialect).iter_errors(schema))
    if error is None:
        return None
    path = list(error.absolute_path)
    where = pointer(path)
    keyword = next((str(p) for p in reversed(path) if isinstance(p, str)), None)
    subject = f"{keyword!r} at {where}" if keyword else "the schema"
    return SchemaDefect("meta_schema", where, f"{subject} is not valid JSON Schema ({dialect.name}): {error.message}",
                        f"fix {where} so that it follows JSON Schema {dialect.name}")


@dataclass(slots=True)
class _Node:
    contents: Mapping[str, Any]
    resolver: Any  # referencing.Resolver with this subschema's base URI
    where: str


class _Walk:
    """Every subschema of one schema, its $refs resolved locally, and the in-place graph they form."""

    def __init__(self, dialect: Dialect, schema: Mapping[str, Any]) -> None:
        self.dialect = dialect
        self.keywords = frozenset(dialect.stock.VALIDATORS)
        self.root = schema
        self.nodes: dict[int, _Node] = {}
        self.refs: dict[int, list[int]] = {}  # a subschema's resolved $ref targets
        self._edges: tuple[dict[int, list[int]], dict[int, int]] | None = None
        self.out: list[SchemaDefect] = []
        root = dialect.spec.create_resource(schema)
        # An empty registry: nothing outside the schema resolves (not even the meta-schemas).
        self.resolver = referencing.Registry().resolver_with_root(root)

    def defects(self, limit: int = MAX_SCHEMA_SUBSCHEMAS) -> list[SchemaDefect]:
        self._index()
        self.refs = {key: list(self._ref_targets(node)) for key, node in self.nodes.items()}
        edges = {key: list(self._in_place(node)) for key, node in self.nodes.items()}
        looped = self._cycle(edges)
        self._unevaluated_with_patterns()
        if not looped:  # a loop is infinite already, and reported
            size = self.expanded_size(limit)
            if size <= limit:
                self._fanout(edges)
            if size <= limit and not self.out:
                # Only a schema fit to validate with is used to check its own defaults.
                self._defaults()
            if size > limit:
                self.out.append(SchemaDefect(
                    "too_complex", "#",
                    f"too complex: more than {limit} subschemas, the limit is {limit} (counted with every $ref "
                    f"expanded where it is used: validating a value would check it against each of them)",
                    "reuse fewer definitions inside allOf/anyOf/oneOf, or split the schema; definitions that "
                    "each refer twice to the previous one double the size at every level"))
        return self.out

    def expanded_size(self, limit: int) -> int:
        """How many subschemas the schema has with every $ref replaced by its target; at most ``limit + 1``.

        Counted on the graph of subschemas (an edge per schema-valued position, and one per $ref)
        rather than by expanding it: each subschema's count is computed once (memoised) and is
        the sum over its edges, saturating at ``limit + 1``, so the work is linear in the
        schema's text however large the expansion. Recursion that descends into the value (a
        tree of ``children``) is a strongly connected component, counted once for its members:
        its cost grows with the value, not with the schema.
        """
        cap = limit + 1
        edges, component = self._graph()
        members: dict[int, list[int]] = {}
        for key, comp in component.items():
            members.setdefault(comp, []).append(key)
        sizes: dict[int, int] = {}
        # _components numbers components in reverse topological order: callees before callers.
        for comp in sorted(members):
            total = len(members[comp])
            for key in members[comp]:
                for target in edges[key]:
                    other = component[target]
                    if other != comp:
                        total += sizes[other]
                if total >= cap:
                    break
            sizes[comp] = min(total, cap)
        root = id(self.root)
        return sizes[component[root]] if root in component else 1

    def _graph(self) -> tuple[dict[int, list[int]], dict[int, int]]:
        """Every subschema's edges (positions and $refs) and its strongly connected component."""
        if self._edges is None:
            edges = {key: [id(child) for _, child in _subschemas(node.contents)
                           if isinstance(child, Mapping) and id(child) in self.nodes] + self.refs.get(key, [])
                     for key, node in self.nodes.items()}
            self._edges = (edges, _components(edges))
        return self._edges

    def _fanout(self, in_place: Mapping[int, list[int]]) -> None:
        _, component = self._graph()
        found = recursive_fanout({key: node.contents for key, node in self.nodes.items()}, in_place, component,
                                 self.keywords)
        if found is None:
            return
        kind, name = found.place
        place = (f"key {name!r}" if kind == "key" and not str(name).startswith("\x00") else
                 "any key" if kind == "key" else f"index {name}" if name < 1 << 30 else "any index")
        where = self.nodes[found.node].where
        self.out.append(SchemaDefect(
            "too_complex", where,
            f"too complex: a value is checked against the recursive schema at {where} {found.count} or more times "
            f"for each level it nests (at {place}), so validation work would double with every level; the limit "
            f"is 1",
            "let each recursive $ref apply once per nested value: do not reach the same recursive definition "
            "through two branches of allOf/anyOf/oneOf, or through both properties and patternProperties"))

    def _index(self) -> None:
        stack: list[tuple[Any, Any, tuple[Any, ...]]] = [(self.root, self.resolver, ())]
        while stack:
            contents, parent_resolver, path = stack.pop()
            if not isinstance(contents, Mapping) or id(contents) in self.nodes:
                continue
            resolver = parent_resolver if not path else parent_resolver.in_subresource(
                self.dialect.spec.create_resource(contents))
            node = self.nodes[id(contents)] = _Node(contents, resolver, pointer(path))
            self._check_node(node, path)
            for child_path, child in _subschemas(contents):
                stack.append((child, resolver, (*path, *child_path)))

    def _check_node(self, node: _Node, path: tuple[Any, ...]) -> None:
        contents = node.contents
        if path and "$schema" in contents:
            self.out.append(SchemaDefect(
                "nested_schema", pointer((*path, "$schema")), "$schema may only appear at the top of the schema",
                f"remove $schema from {node.where}; the draft is chosen once, for the whole schema"))
        found = contents.get("pattern")
        if isinstance(found, str) and "pattern" in self.keywords:
            self._pattern(found, (*path, "pattern"))
        patterns = contents.get("patternProperties")
        if isinstance(patterns, Mapping) and "patternProperties" in self.keywords:
            for key in patterns:
                self._pattern(key, (*path, "patternProperties", key))

    def _pattern(self, pattern: str, path: tuple[Any, ...]) -> None:
        problem = pattern_problem(pattern)
        if problem is not None:
            self.out.append(SchemaDefect(
                "pattern", pointer(path), f"the pattern {problem}",
                "write a Python-style regular expression, e.g. ^[a-z0-9-]{1,64}$; avoid huge repeat counts"))

    def _defaults(self) -> None:
        """A ``default`` its own subschema refuses: the runtime would fill in a value that fails validation."""
        holders = [node for node in self.nodes.values() if "default" in node.contents]
        if not holders:
            return
        body = {key: value for key, value in self.root.items() if key != "$schema"}
        validator = self.dialect.timed(body, registry=referencing.Registry())
        for node in holders:
            where = f"{node.where}/default"
            try:
                with validation_budget():
                    error = jsonschema_exceptions.best_match(
                        validator.evolve(schema=node.contents).iter_errors(node.contents["default"]))
            except (PatternTooExpensive, PatternRefused, ValidationTooExpensive, RecursionError,
                    referencing.exceptions.Unresolvable, jsonschema_exceptions.SchemaError):
                continue  # not judged: the value is validated (with its own limits) when it is used
            if error is not None:
                inside = "".join(f"/{part}" for part in error.absolute_path)
                self.out.append(SchemaDefect(
                    "default", where,
                    f"the default {_shown(node.contents['default'])} breaks its own schema"
                    f"{f' at {inside}' if inside else ''}: {error.message}",
                    "change the default so that it fits the field's type and constraints, or remove it"))

    def _ref_targets(self, node: _Node) -> Iterator[int]:
        contents = node.contents
        for keyword in _REFS:
            ref = contents.get(keyword)
            if keyword in self.keywords and isinstance(ref, str):
                target = self._resolve(node, keyword, ref)
                if target is not None:
                    yield target

    def _in_place(self, node: _Node) -> Iterator[int]:
        """Subschemas applied to the same value as ``node`` (their ids), $ref targets included."""
        contents = node.contents
        for keyword in (*_IN_PLACE_ONE, *_IN_PLACE_MANY, *_IN_PLACE_MAP):
            applies = keyword in self.keywords or (keyword in ("then", "else") and "if" in self.keywords)
            value = contents.get(keyword)
            if not applies or value is None:
                continue
            values = value if keyword in _IN_PLACE_MANY else (
                value.values() if keyword in _IN_PLACE_MAP and isinstance(value, Mapping) else (value,))
            for sub in values:
                if isinstance(sub, Mapping):
                    yield id(sub)
        yield from self.refs.get(id(contents), ())

    def _resolve(self, node: _Node, keyword: str, ref: str) -> int | None:
        where = f"{node.where}/{keyword}"
        try:
            resolved = node.resolver.lookup(ref)
        except (referencing.exceptions.PointerToNowhere, referencing.exceptions.NoSuchAnchor,
                referencing.exceptions.InvalidAnchor):
            self.out.append(SchemaDefect(
                "ref_dangling", where, f"$ref {ref!r} points at nothing inside the schema",
                "check the name under $defs (and the spelling of the pointer or anchor)"))
            return None
        except referencing.exceptions.Unresolvable as exc:
            shown = getattr(exc, "ref", "") or ref
            self.out.append(SchemaDefect(
                "ref_outside", where,
                f"$ref {shown!r} points outside the schema: a $ref may only point inside the schema itself "
                f"(e.g. '#/$defs/name'); remote and file references are never fetched", _REF_HINT))
            return None
        target = resolved.contents
        if isinstance(target, bool):
            return None
        if not isinstance(target, Mapping) or id(target) not in self.nodes:
            self.out.append(SchemaDefect(
                "ref_not_schema", where, f"$ref {ref!r} points at something inside the schema that is not a schema",
                "point the $ref at a schema, usually one under $defs"))
            return None
        return id(target)

    def _cycle(self, edges: Mapping[int, list[int]]) -> bool:
        """Report the first loop of in-place edges (depth-first, iterative: schemas may nest deeply)."""
        state: dict[int, int] = {}  # 1 = on the current path, 2 = done
        for start in edges:
            if start in state:
                continue
            path = [start]
            iters = [iter(edges[start])]
            state[start] = 1
            while iters:
                step = next(iters[-1], None)
                if step is None:
                    state[path.pop()] = 2
                    iters.pop()
                    continue
                seen = state.get(step)
                if seen == 1:
                    loop = [*path[path.index(step):], step]
                    shown = " -> ".join(self.nodes[key].where for key in loop)
                    self.out.append(SchemaDefect(
                        "ref_cycle", self.nodes[step].where,
                        f"the schema's $refs lead back to themselves without ever describing a value ({shown}), "
                        f"so validation would never end",
                        "recurse only through properties, items or another keyword that descends into the value"))
                    return True
                if seen is None:
                    state[step] = 1
                    path.append(step)
                    iters.append(iter(edges.get(step, ())))
        return False

    def _unevaluated_with_patterns(self) -> None:
        if "unevaluatedProperties" not in self.keywords:
            return
        uses = [n for n in self.nodes.values() if "unevaluatedProperties" in n.contents]
        if uses and any(isinstance(n.contents.get("patternProperties"), Mapping) for n in self.nodes.values()):
            self.out.append(SchemaDefect(
                "unevaluated_patterns", f"{uses[0].where}/unevaluatedProperties",
                "unevaluatedProperties cannot be combined with patternProperties in a workflow schema: their "
                "patterns could not be matched with a time limit",
                "use additionalProperties next to patternProperties, or list the allowed properties"))


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _components(edges: Mapping[int, list[int]]) -> dict[int, int]:
    """Strongly connected components, numbered so that a component's successors come before it."""
    return {member: number for number, component in enumerate(strongly_connected(edges, edges))
            for member in component}


def _subschemas(contents: Mapping[str, Any]) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """(relative path, subschema) for every schema-valued position of one schema object."""
    for keyword in (*_IN_PLACE_ONE, *_CHILD_ONE):
        value = contents.get(keyword)
        if isinstance(value, Mapping):
            yield (keyword,), value
    for keyword in (*_IN_PLACE_MANY, *_CHILD_MANY):
        value = contents.get(keyword)
        if isinstance(value, list):
            for index, sub in enumerate(value):
                yield (keyword, index), sub
    for keyword in (*_IN_PLACE_MAP, *_CHILD_MAP):
        value = contents.get(keyword)
        if isinstance(value, Mapping):
            for name, sub in value.items():
                yield (keyword, name), sub

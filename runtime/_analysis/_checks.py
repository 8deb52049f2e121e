"""Per-node diagnostics that need schemas: paths, input bindings, output bindings, foreach collections."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runtime._analysis import _schemas as S
from runtime._analysis._branch import check_cases
from runtime._analysis._infer import StateWrites, written_schema
from runtime._analysis._options import OptionIndex, list_paths
from runtime._analysis._schemas import Schema
from runtime._analysis._scope import Scope, Stack
from runtime._diagnostics import Diagnostic
from runtime._document import BranchNode, ForeachNode, InputBinding, OutputBinding, Workflow
from runtime._paths import format_key, is_item_index

_SEVERITY = {S.NONE: "error", S.OPTIONAL: "warning"}


def _why(source: Schema, target: Schema) -> str:
    return f"{S.type_label(source)} into {S.type_label(target)}"


def _declared_hint(target: Schema, parent: tuple[str, ...]) -> str:
    holder, _ = S.descend(target, parent, for_target=True, indexes=True)
    names = [n for a in S.object_atoms(holder or {}) for n in (a.get("properties") or {})]
    shown = ", ".join(repr(n) for n in dict.fromkeys(names))
    return f"bind one of its declared input fields: {shown}" if shown else "bind one of its declared input fields"


class Checker:
    """Collects diagnostics for one workflow; ``scope`` may be set after the writes are known."""

    def __init__(self, workflow: Workflow, stacks: Mapping[str, Stack], fits: S.FitCache | None = None) -> None:
        self.workflow = workflow
        self.stacks = stacks
        self.fits = fits or S.FitCache()
        self._fields: dict[tuple[str, ...], str] = {}
        self._sources: dict[tuple[int, tuple[str, ...]], tuple[Schema, tuple[Schema | None, int]]] = {}
        self._targets: dict[tuple[int, tuple[str, ...]], tuple[Schema, tuple[Schema | None, int]]] = {}
        # values keep their key objects alive, so an id is never reused while cached
        self._writes: dict[tuple[int, str], tuple[Schema, Schema | None]] = {}
        self._unions: dict[tuple[int, ...], tuple[list[Schema], Schema]] = {}
        self.out: list[Diagnostic] = []

    def add(self, code: str, severity: str, node_id: str | None, field: str | None, message: str,
            hint: str) -> None:
        self.out.append(Diagnostic(code, severity, node_id, field, message, hint))  # type: ignore[arg-type]

    # -- output bindings (before the state view exists) ------------------------

    def writes(self, node_id: str, bindings: Sequence[OutputBinding], result: Schema,
               declared_state: Schema, into: StateWrites, error: Schema | None = None, *,
               field: str | None = None) -> None:
        """Check output bindings; ``error`` is the error-route payload schema when the node has an error route.

        The engine applies output bindings to the error payload too, and skips
        a binding whose source the committed payload lacks. So a source is
        valid when the result or the error payload has it, each side it exists
        on is checked on its own, and the state target is typed as the union
        of what the sides write.
        """
        declared = declared_state.get("properties")
        declared = declared if isinstance(declared, dict) else {}
        closed = declared_state.get("additionalProperties") is False
        named = field
        for binding in bindings:
            field = named or self._field_text(binding.target.parts, "output")
            sides = self._sides(node_id, field, binding, result, error)
            top = binding.target.parts[0]
            target = self._declared_target(node_id, field, binding, declared[top]) if top in declared else None
            if top not in declared and closed:
                self.add("path.unknown_field", "error", node_id, field,
                         f"output binding writes state field {top!r}, which state_schema does not declare and "
                         f"does not allow (additionalProperties is false)",
                         "declare the field in state_schema, or write a declared field")
            written: list[Schema] = []
            for side, source in sides:
                schema = self._written(source, binding.mode)
                if schema is None:
                    need = "an array" if binding.mode == "extend" else "an object"
                    what = (f"{str(binding.source)!r} of the result is" if side == "result" else
                            f"on the error route {str(binding.source)!r} of the error payload is")
                    self.add("binding.type_mismatch", "error", node_id, field,
                             f"mode {binding.mode!r} needs {need}, but {what} {S.kind_text(source)}",
                             "use mode 'set' or 'append', or bind another field" if side == "result" else
                             "bind a field of the result (not '.'), or use mode 'set' or 'append'")
                    continue
                if target is not None:
                    self._check_declared_write(node_id, field, binding, source, target, side)
                written.append(schema)
            into.add(node_id, binding, self._either(written))

    def _written(self, source: Schema, mode: str) -> Schema | None:
        """``written_schema``, one shared object per (source, mode): writes are deduplicated by identity."""
        key = (id(source), mode)
        found = self._writes.get(key)
        if found is None:
            found = (source, written_schema(source, mode))
            self._writes[key] = found
        return found[1]

    def _either(self, written: list[Schema]) -> Schema:
        if not written:
            return S.ANY
        if len(written) == 1:
            return written[0]
        key = tuple(id(schema) for schema in written)
        found = self._unions.get(key)
        if found is None:
            found = (written, S.union(written))
            self._unions[key] = found
        return found[1]

    def _sides(self, node_id: str, field: str, binding: OutputBinding, result: Schema,
               error: Schema | None) -> list[tuple[str, Schema]]:
        """(side, source schema) for the result and the error payload that ``binding.source`` reads."""
        parts = binding.source.parts
        source, bad = self._source(result, parts)
        sides = [("result", source)] if source is not None else []
        if error is not None:
            from_error, _ = self._source(error, parts)
            if from_error is not None:
                sides.append(("error", from_error))
        if sides:
            return sides
        parent, _ = S.descend(result, parts[:bad])
        names = [n for a in S.object_atoms(parent or {}) for n in (a.get("properties") or {})]
        has = f" (it has: {', '.join(names)})" if names else ""
        if error is not None:
            has += ", nor does the error payload of its error route (it has: error)"
            hint = "use '.' for the whole result, one of its declared fields, or a field of 'error'"
        elif parts[0] == "error":
            hint = (f"'error' is the payload of the error route, and {node_id!r} has none: add a route "
                    f"{node_id!r} --error--> a node to handle the failure, or bind a declared result field")
        else:
            hint = "use '.' for the whole result or one of its declared fields"
        self.add("path.unknown_field", "error", node_id, field,
                 f"output binding reads {str(binding.source)!r} from the result of {node_id!r}, which has "
                 f"no field {parts[bad]!r}{has}", hint)
        return [("result", S.ANY)]

    def _declared_target(self, node_id: str, field: str, binding: OutputBinding,
                         declared: Schema) -> Schema | None:
        """What a write into a declared state field must fit (the item for append); None when reported."""
        target, bad = S.descend(declared, binding.target.parts[1:], for_target=True)
        if target is None:
            self.add("path.unknown_field", "error", node_id, field,
                     f"output binding writes state {str(binding.target)!r}, but the declared state field "
                     f"{binding.target.parts[0]!r} has no field {binding.target.parts[1 + bad]!r}",
                     "write a field that state_schema declares, or extend state_schema")
            return None
        if binding.mode == "append":
            items = S.items_schema(target)
            if items is None:
                self.add("binding.type_mismatch", "error", node_id, field,
                         f"mode 'append' needs an array, but state {str(binding.target)!r} is declared as "
                         f"{S.kind_text(target)}", "use mode 'set', or declare the state field as an array")
            return items
        if binding.mode == "merge" and not S.is_object(target) and not S.is_any(target):
            self.add("binding.type_mismatch", "error", node_id, field,
                     f"mode 'merge' needs an object, but state {str(binding.target)!r} is declared as "
                     f"{S.kind_text(target)}", "use mode 'set', or declare the state field as an object")
            return None
        return target

    def _check_declared_write(self, node_id: str, field: str, binding: OutputBinding, source: Schema,
                              target: Schema, side: str) -> None:
        what = (f"{str(binding.source)!r} of the result of {node_id!r}" if side == "result" else
                f"on the error route, {str(binding.source)!r} of the error payload of {node_id!r},")
        hint = ("change the declared state type, or bind a result field of the right type" if side == "result" else
                "declare the state type to accept the error payload too, or bind a result field the error "
                "payload does not have (the binding is skipped on the error route)")
        # The engine does not validate state, so an error-route write that does not fit fails nothing by
        # itself; and a whole-result '.' binding cannot be limited to the ok route. It is a warning.
        severity = None if side == "result" else "warning"
        tail = "" if side == "result" else ": after a failure the field does not match state_schema"
        if binding.mode == "merge":
            for name in {n for a in S.object_atoms(source) for n in (a.get("properties") or {})}:
                got = S.property_schema(source, name, absent_is_null=False) or S.ANY
                want = S.property_schema(target, name, for_target=True)
                if want is not None and S.fit(got, want) == S.NONE:
                    self.add("binding.type_mismatch", severity or "error", node_id, field,
                             f"merging {what} into state {str(binding.target)!r} puts field {name!r} as "
                             f"{_why(got, want)}{tail}", hint)
            return
        level = self.fits.fit(source, target)
        if level in _SEVERITY:
            reason = S.why_not(source, target) if side == "result" else ""
            may = f": {reason}" if reason else ": the value may not fit" if level == S.OPTIONAL and side == "result" \
                else tail
            self.add("binding.type_mismatch", severity or _SEVERITY[level], node_id, field,
                     f"writing {what} into state {str(binding.target)!r} ({binding.mode}) puts "
                     f"{_why(source, target)}{may}", hint)

    # -- reads ----------------------------------------------------------------

    def read(self, scope: Scope, node_id: str | None, field: str, path: Any, stack: Stack | None) -> Schema | None:
        """Check one graph path; returns its schema, or None when it is invalid (already reported)."""
        if stack is None:
            if path.root == "context":
                return None  # unreachable node: no context to judge against (node.unreachable says why)
            stack = ()
        resolved = scope.resolve(path, stack)
        if resolved.problem is not None:
            problem = resolved.problem
            self.add(problem.code, problem.severity, node_id, field, problem.message, problem.hint)
            return None
        return resolved.schema

    def inputs(self, scope: Scope, node_id: str, stack: Stack | None, bindings: Sequence[InputBinding],
               target: Schema | None, what: str) -> None:
        """Input bindings of a task, subgraph or interrupt; ``target`` is the payload schema when known."""
        for binding in bindings:
            field = self._field_text(binding.target.parts)
            if binding.path is not None:
                source = self.read(scope, node_id, field, binding.path, stack)
            elif binding.secret is not None:
                source = {"type": "string"}  # a secret is text, whatever its template puts around it
            else:
                source = S.schema_of_value(binding.value)
            if target is None:
                continue
            want, bad = self._target(target, binding.target.parts)
            if want is None:
                parts = binding.target.parts
                holder, _ = self._target(target, parts[:bad])
                if is_item_index(parts[bad]) and holder is not None and not S.is_array(holder):
                    # the runtime builds a list here, which the field cannot take
                    self.add("binding.type_mismatch", "error", node_id, field,
                             f"{field!r} binds item {parts[bad]} of {format_key(parts[:bad]) or 'the payload'!r}, "
                             f"but {what} expects {S.kind_text(holder)} there, not an array",
                             "bind a named key of the object instead of a numbered item")
                    continue
                closed = any(a.get("additionalProperties") is False for a in S.object_atoms(target))
                self.add("path.unknown_field", "error" if closed else "warning", node_id, field,
                         f"{what} has no input field {'.'.join(parts[: bad + 1])!r}",
                         _declared_hint(target, parts[:bad]))
                continue
            if source is None:
                continue
            level = self.fits.fit(source, want)
            if level in _SEVERITY:
                shown = (repr(str(binding.path)) if binding.path is not None
                         else f"secret {binding.secret!r}" if binding.secret is not None else "the literal value")
                reason = S.why_not(source, want)
                tail = f": {reason}" if reason else ": it may not fit" if level == S.OPTIONAL else ""
                self.add("binding.type_mismatch", _SEVERITY[level], node_id, field,
                         f"{shown} is {S.kind_text(source)}, but {what} expects {S.kind_text(want)} for "
                         f"{str(binding.target)!r}{tail}",
                         "bind a path of the expected type (the path picker lists compatible ones first)")
        if target is not None:
            self._missing(node_id, bindings, target, what)

    def _source(self, result: Schema, parts: tuple[str, ...]) -> tuple[Schema | None, int]:
        key = (id(result), parts)
        found = self._sources.get(key)
        if found is None:
            found = (result, S.descend(result, parts))
            self._sources[key] = found
        return found[1]

    def _field_text(self, parts: tuple[str, ...], prefix: str = "input") -> str:
        key = (prefix, *parts)
        text = self._fields.get(key)
        if text is None:
            text = f"{prefix}.{format_key(parts)}" if parts else prefix
            self._fields[key] = text
        return text

    def _target(self, target: Schema, parts: tuple[str, ...]) -> tuple[Schema | None, int]:
        """The schema of one field of a payload schema (cached: many nodes bind the same task's fields)."""
        key = (id(target), parts)
        found = self._targets.get(key)
        if found is None:
            found = (target, S.descend(target, parts, for_target=True, indexes=True))
            self._targets[key] = found
        return found[1]

    def _missing(self, node_id: str, bindings: Sequence[InputBinding], target: Schema, what: str) -> None:
        if any(b.target.is_whole for b in bindings):
            return
        bound = {b.target.parts[0] for b in bindings}
        for atom in S.object_atoms(target)[:1]:
            props = atom.get("properties") or {}
            for name in atom.get("required", ()):
                if name in bound or "default" in (props.get(name) or {}):
                    continue
                self.add("binding.missing_required", "error", node_id, f"input.{name}",
                         f"{what} requires input field {name!r} ({S.type_label(props.get(name) or S.ANY)}), "
                         f"but nothing is bound to it",
                         f"add an input binding with target {name!r} (a path or a literal value)")

    def foreach(self, scope: Scope, node: ForeachNode, stack: Stack | None,
                options: OptionIndex | None = None) -> None:
        schema = self.read(scope, node.id, "over", node.over, stack)
        if schema is None or S.is_any(schema):
            return
        if S.items_schema(schema) is None:
            lists = list_paths(options, stack, exclude=str(node.over)) if options is not None else []
            hint = (f"point 'over' at a list such as {', '.join(lists)}" if lists else
                    "'over' needs a list: add an array field to the input or state schema, or iterate a list "
                    "field of an outer loop's item")
            self.add("binding.type_mismatch", "error", node.id, "over",
                     f"foreach {node.id!r} iterates {str(node.over)!r}, which is {S.kind_text(schema)}, not a list",
                     hint)
        elif S.nullable(schema):
            self.add("binding.type_mismatch", "warning", node.id, "over",
                     f"foreach {node.id!r} iterates {str(node.over)!r}, which may be null or missing",
                     f"make {str(node.over)!r} required and non-nullable in its schema, or give it a default")

    def branch(self, scope: Scope, node: BranchNode, stack: Stack | None) -> None:
        schema = self.read(scope, node.id, "path", node.path, stack)

        def report(severity: str, field: str, message: str, hint: str) -> None:
            self.add("binding.type_mismatch", severity, node.id, field, message, hint)

        # an unknown path is reported already; cases are still checked for what holds whatever it reads
        check_cases(node, S.ANY if schema is None else schema, report)

"""Branch cases: is each case's ``value`` something the branch path can hold, for the case's ``op``?

Follows the engine's ``_case_matches``: ``equals``/``not_equals`` use JSON
equality (``true`` is not ``1``, ``3`` equals ``3.0``); ``in`` looks the value
up in a list (each element compared like ``equals``), and also accepts a
string (substring test) or an object (key test) for a string path;
``gt``/``gte``/``lt``/``lte`` compare numbers with numbers and strings with
strings, anything else never matches; ``exists``/``truthy`` ignore the value.
A missing path reads as ``null``, so comparing with ``null`` is always
plausible and never reported. Findings are ``binding.type_mismatch`` on
field ``cases.<i>.value``: an error when the case can never match (or, for
``not_equals``, always matches), a warning when only part of it is dead or
the value is ignored.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from runtime._analysis import _schemas as S
from runtime._analysis._schemas import Schema
from runtime._document import BranchCase, BranchNode

Report = Callable[[str, str, str, str], None]  # severity, field, message, hint

_COMPARISONS = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def _shown(value: object) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _value_schema(value: object) -> Schema:
    if isinstance(value, float) and value.is_integer():
        return {"type": "integer", "const": int(value)}  # 3.0 == 3 for the engine: it may equal an integer path
    return S.schema_of_value(value)


def _kinds(path: Schema) -> set[str] | None:
    """The JSON types the path may hold (None: unknown, anything goes)."""
    kinds: set[str] = set()
    for atom in S.atoms(path):
        if S.is_any(atom):
            return None
        kinds.add(str(atom.get("type")))
    return kinds


def _want(path: Schema) -> str:
    values = [v for atom in S.atoms(path) for v in (atom.get("enum") or ([atom["const"]] if "const" in atom else []))]
    if values and all(atom.get("enum") or "const" in atom or atom.get("type") == "null" for atom in S.atoms(path)):
        return "one of " + ", ".join(_shown(v) for v in values[:8]) + (", ..." if len(values) > 8 else "")
    return f"a value of type {S.type_label(path)}"


def check_cases(node: BranchNode, path: Schema, report: Report) -> None:
    for index, case in enumerate(node.cases):
        field = f"cases.{index}.value"
        where = f"case {index} ({case.label!r}) of branch {node.id!r}"
        if case.op in ("exists", "truthy"):
            if case.value is not None:
                report("warning", field, f"{where} uses op {case.op!r}, which takes no value: "
                       f"{_shown(case.value)} is ignored",
                       "remove the value, or use op 'equals' to compare with it")
            continue
        if case.value is None:
            if case.op in ("equals", "not_equals"):
                continue  # compares with null: true when the path is missing or null
            report("error", field, f"{where} uses op {case.op!r} without a value, so it never matches",
                   "give the value to compare with" if case.op in _COMPARISONS else
                   'give the list of values to look for, e.g. ["a", "b"]')
            continue
        if case.op in ("equals", "not_equals"):
            _equality(case, path, where, field, str(node.path), report)
        elif case.op == "in":
            _membership(case, path, where, field, str(node.path), report)
        elif case.op in _COMPARISONS:
            _comparison(case, path, where, field, str(node.path), report)


def _equality(case: BranchCase, path: Schema, where: str, field: str, shown_path: str,
              report: Report) -> None:
    level = S.fit(_value_schema(case.value), path)
    if level > S.OPTIONAL:
        return
    outcome = "never matches" if case.op == "equals" else "always matches"
    if level == S.NONE:
        severity, why = "error", f"they are never equal, so the case {outcome}"
    else:
        severity, why = "warning", f"part of the value does not fit, so the case likely {outcome}"
    report(severity, field,
           f"{where} compares {shown_path!r}, which is {S.kind_text(path)}, with {_shown(case.value)}: {why}",
           f"compare with {_want(path)}")


def _membership(case: BranchCase, path: Schema, where: str, field: str, shown_path: str,
                report: Report) -> None:
    value = case.value
    if isinstance(value, str | dict):
        kinds = _kinds(path)
        if kinds is not None and "string" not in kinds:
            test = "a substring test" if isinstance(value, str) else "a key test"
            report("error", field,
                   f"{where}: op 'in' with {'a string' if isinstance(value, str) else 'an object'} is {test} "
                   f"on a string, but {shown_path!r} is {S.kind_text(path)}, so the case never matches",
                   f'give the list of values {shown_path!r} may equal, e.g. [{_shown(value)}]')
        return
    if not isinstance(value, list):
        report("error", field,
               f"{where}: op 'in' needs a list of values, but the value is {_shown(value)}, so the case never "
               f"matches", f"give a list, e.g. [{_shown(value)}], or use op 'equals'")
        return
    if not value:
        report("error", field, f"{where}: op 'in' with an empty list never matches",
               f"list the values {shown_path!r} may equal")
        return
    dead = [option for option in value if option is not None and S.fit(_value_schema(option), path) == S.NONE]
    if not dead:
        return
    listed = ", ".join(_shown(option) for option in dead[:5]) + (", ..." if len(dead) > 5 else "")
    if len(dead) == len(value):
        report("error", field,
               f"{where}: none of the values {listed} can equal {shown_path!r}, which is {S.kind_text(path)}, "
               f"so the case never matches", f"list values that are {_want(path)}")
    else:
        report("warning", field,
               f"{where}: {listed} can never equal {shown_path!r}, which is {S.kind_text(path)}",
               f"remove {'it' if len(dead) == 1 else 'them'}, or list values that are {_want(path)}")


def _comparison(case: BranchCase, path: Schema, where: str, field: str, shown_path: str,
                report: Report) -> None:
    value = case.value
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    kinds = _kinds(path)
    symbol = _COMPARISONS[case.op]
    if not is_number and not isinstance(value, str):
        report("error", field,
               f"{where} compares {shown_path!r} {symbol} {_shown(value)}; only numbers and strings are ordered, "
               f"so the case never matches", "compare with a number or a string")
        return
    if kinds is None:
        return
    ok = bool(kinds & {"integer", "number"}) if is_number else "string" in kinds
    if not ok:
        report("error", field,
               f"{where} compares {shown_path!r}, which is {S.kind_text(path)}, {symbol} {_shown(value)} "
               f"({'a number' if is_number else 'a string'}): the engine compares numbers with numbers and "
               f"strings with strings, so the case never matches",
               f"compare with {'a string' if 'string' in kinds else 'a number'}" if kinds & {
                   "string", "integer", "number"} else "branch on a number or string field instead")

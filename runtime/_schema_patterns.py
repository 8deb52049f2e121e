"""Regular expressions from workflow schemas, matched with a time limit.

A document's ``pattern``/``patternProperties`` are written by users, and
Python's ``re`` has no timeout: ``^(a|a)*$`` against forty ``a`` and a ``!``
backtracks for hours while holding a worker. So the validators built for
document schemas match with the ``regex`` package, which can give up after a
timeout, and a timeout aborts the whole validation (``PatternTooExpensive``)
rather than becoming an ordinary error: inside ``not``/``anyOf`` an ordinary
error would be swallowed and could turn "too slow to decide" into "valid".

Compiling is guarded as well: ``regex`` unrolls a minimum repeat count when it
compiles (``(?:x{65535}){65535}`` exhausts memory), so a pattern whose
unrolled size (``runtime._pattern_size``) is too large is refused before it
reaches ``regex.compile``. The accepted syntax is Python's ``re`` syntax (as
before), checked with ``re.compile``, lookbehinds excepted: ``re`` wants them
fixed-width, ``regex`` does not; ``regex`` matches such patterns the way ``re``
does.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from itertools import chain, islice
from typing import Any

import regex
from jsonschema import ValidationError
from jsonschema import validators as jsonschema_validators

from runtime._pattern_size import pattern_size

#: Longest a single match may run before it is called too expensive.
MATCH_TIMEOUT = 0.1
#: Longest all pattern matches of one validation may run together.
VALIDATION_BUDGET = 1.0
#: Largest pattern, in elements after repeats are unrolled, that is compiled (a few ms at most).
MAX_UNROLLED = 20_000

#: Most keyword checks one validation may make (each keyword of each subschema at each place in the
#: value counts one). The static schema budget bounds the checks per place; this bounds the whole,
#: so a large value against a wide schema cannot hold a web request or worker either. It is a count,
#: not a time, so the same value is accepted or refused on any machine.
MAX_VALIDATION_STEPS = 500_000

#: Deadline (``time.monotonic()``) of the validation in progress, shared by all its matches.
_DEADLINE: ContextVar[float | None] = ContextVar("trellis_schema_pattern_deadline", default=None)
#: Keyword checks left to the validation in progress (a one-element list, shared by its keywords).
_STEPS: ContextVar[list[int] | None] = ContextVar("trellis_schema_validation_steps", default=None)


class ValidationTooExpensive(Exception):
    """A validation made more than ``MAX_VALIDATION_STEPS`` keyword checks; abandoned (the value is not accepted)."""

    @property
    def message(self) -> str:
        return (f"the value is too large to check against this schema: validation stopped after "
                f"{MAX_VALIDATION_STEPS:,} keyword checks; send a smaller value, or simplify the schema")


class PatternTooExpensive(Exception):
    """Matching a schema pattern took too long; validation was abandoned (the value is not accepted)."""

    def __init__(self, pattern: str, text: str, *, is_key: bool) -> None:
        super().__init__(pattern)
        self.pattern = pattern
        self.text = text
        self.is_key = is_key  # matched against a property name (patternProperties), not a string value

    @property
    def message(self) -> str:
        against = "a property name" if self.is_key else "this value"
        return (f"the schema's pattern {self.pattern!r} is too expensive to match against {against}: it did "
                f"not finish within {MATCH_TIMEOUT:g} s; simplify the pattern (nested repetition such as "
                f"(a+)+ or (a|a)* backtracks exponentially)")


class PatternRefused(Exception):
    """A pattern that is not a usable regular expression (only reachable when the schema check was skipped)."""

    def __init__(self, pattern: str, problem: str) -> None:
        super().__init__(problem)
        self.pattern = pattern
        self.problem = problem


def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot be used in a schema, or None when it compiles safely."""
    try:
        _compile(pattern)
    except PatternRefused as refused:
        return refused.problem
    return None


def _without_lookbehinds(pattern: str, lookbehinds: tuple[int, ...]) -> str:
    """``pattern`` with each lookbehind ``(?<=`` / ``(?<!`` opened as ``(?:=`` / ``(?:!``: the same syntax to
    check but for ``re``'s fixed-width rule, and the same length, so an error's position still fits."""
    if not lookbehinds:
        return pattern
    chars = list(pattern)
    for at in lookbehinds:
        chars[at + 2] = ":"
    return "".join(chars)


@lru_cache(maxsize=512)
def _compile(pattern: str) -> regex.Pattern[str]:
    try:
        measured = pattern_size(pattern)
        re.compile(_without_lookbehinds(pattern, measured.lookbehinds))
    except (re.error, OverflowError) as exc:
        raise PatternRefused(pattern, f"{pattern!r} is not a valid regular expression: {exc}") from None
    except RecursionError:
        raise PatternRefused(pattern, f"{pattern!r} nests groups too deeply") from None
    if measured.size > MAX_UNROLLED:
        raise PatternRefused(pattern, (
            f"{pattern!r} is too large once its repeat counts are multiplied out (over {MAX_UNROLLED} "
            f"elements); use smaller counts such as {{1,64}}"))
    try:
        return regex.compile(pattern)
    except (regex.error, OverflowError, MemoryError, RecursionError) as exc:
        raise PatternRefused(pattern, f"{pattern!r} is not a valid regular expression: {exc}") from None


def search(pattern: str, text: str, *, is_key: bool = False) -> bool:
    """``re.search(pattern, text)`` semantics, abandoned with ``PatternTooExpensive`` when it runs too long."""
    compiled = _compile(pattern)
    timeout = MATCH_TIMEOUT
    deadline = _DEADLINE.get()
    if deadline is not None:
        timeout = min(timeout, deadline - time.monotonic())
        if timeout <= 0:
            raise PatternTooExpensive(pattern, text, is_key=is_key)
    try:
        return compiled.search(text, timeout=timeout) is not None
    except TimeoutError:
        raise PatternTooExpensive(pattern, text, is_key=is_key) from None


@contextmanager
def validation_budget(seconds: float = VALIDATION_BUDGET) -> Iterator[None]:
    """All pattern matches inside the block share one budget of ``seconds`` (many slow-ish matches add up),
    and all keyword checks one of ``MAX_VALIDATION_STEPS``."""
    token = _DEADLINE.set(time.monotonic() + seconds)
    steps = _STEPS.set([MAX_VALIDATION_STEPS])
    try:
        yield
    finally:
        _STEPS.reset(steps)
        _DEADLINE.reset(token)


# -- jsonschema keywords -------------------------------------------------------------------
# The stock implementations call ``re.search`` on the schema's patterns; these do the same
# matching through ``search``. Signatures are jsonschema's keyword protocol.

def _pattern(validator: Any, pattern: str, instance: Any, schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Mapping[str, Any], instance: Any,
                        schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if search(pattern, key, is_key=True):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, additional: Any, instance: Any,
                           schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    extras = [key for key in instance
              if key not in properties and not any(search(p, key, is_key=True) for p in patterns)]
    if validator.is_type(additional, "object"):
        for key in extras:
            yield from validator.descend(instance[key], additional, path=key)
    elif not additional and extras:
        shown = ", ".join(repr(key) for key in sorted(extras, key=str))
        if patterns:
            verb = "does" if len(extras) == 1 else "do"
            listed = ", ".join(repr(p) for p in sorted(patterns))
            yield ValidationError(f"{shown} {verb} not match any of the regexes: {listed}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(f"Additional properties are not allowed ({shown} {verb} unexpected)")


_TIMED_KEYWORDS = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
}


#: Keywords whose check of one value costs O(1) whatever the value (no subschema, no pattern, no list in the
#: schema to compare against). An ``items`` schema made only of these is "flat": checking an array against it
#: is schema work counted once, not once per element, so a list of a million integers is as cheap to accept
#: as its schema is to read. Anything else (objects, subschemas, patterns, enums, $refs) counts per element,
#: which keeps the budget's protection where the work per element depends on the schema's shape.
_FLAT_ITEM_KEYWORDS = frozenset({
    "type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength",
    "maxLength", "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly",
    "$comment",
})
_SCALAR_TYPES = frozenset({"integer", "number", "string", "boolean", "null"})
#: Errors kept from one flat ``items`` check (the callers report 20 at most; ``anyOf`` needs only one).
_FLAT_ITEM_ERRORS = 100


def _flat_items(items: Any) -> bool:
    if not isinstance(items, Mapping) or not items.keys() <= _FLAT_ITEM_KEYWORDS:
        return False
    kind = items.get("type")
    if isinstance(kind, list):  # a union of types is fine as long as each is a scalar type name
        return all(isinstance(k, str) and k in _SCALAR_TYPES for k in kind)
    return kind is None or (isinstance(kind, str) and kind in _SCALAR_TYPES)


_ANNOTATIONS = _FLAT_ITEM_KEYWORDS - {"type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                      "multipleOf", "minLength", "maxLength"}
_EXACT_TYPES: dict[str, tuple[type, ...]] = {
    "integer": (int,), "number": (int, float), "string": (str,), "boolean": (bool,), "null": (type(None),)}
_QUICK_KEYWORDS = frozenset({"type", "minimum", "maximum", "minLength", "maxLength"}) | _ANNOTATIONS


def _quick_check(items: Mapping[str, Any]) -> Any:
    """A predicate that is sufficient for ``items`` (a value it accepts, the draft accepts), or None.

    For the common item schemas: one scalar type with numeric bounds or string lengths. A value it does
    not accept goes through jsonschema itself, so errors and edge cases (1.0 as an integer) are the draft's.
    """
    kind = items.get("type")
    if not items.keys() <= _QUICK_KEYWORDS or not isinstance(kind, str):
        return None
    exact = _EXACT_TYPES[kind]
    bounds = [items.get(name) for name in ("minimum", "maximum", "minLength", "maxLength")]
    if any(b is not None and (type(b) not in (int, float)) for b in bounds):
        return None
    low, high, shortest, longest = bounds
    if (low is not None or high is not None) and kind not in ("integer", "number"):
        low = high = None  # the draft ignores numeric bounds on other types
    if (shortest is not None or longest is not None) and kind != "string":
        shortest = longest = None

    def accepts(value: Any) -> bool:
        if type(value) not in exact:
            return False
        if low is not None and value < low:
            return False
        if high is not None and value > high:
            return False
        if shortest is not None and len(value) < shortest:
            return False
        return longest is None or len(value) <= longest

    return accepts


def _items(keyword: Any) -> Any:
    """``items`` counted by the schema's work: a flat item schema costs its keywords once (see above)."""
    counted = _counted(keyword)

    def check(validator: Any, items: Any, instance: Any, schema: Mapping[str, Any]) -> Any:
        steps = _STEPS.get()
        if (steps is None or not _flat_items(items) or "prefixItems" in schema  # items then skips the prefix
                or not validator.is_type(instance, "array")):
            return counted(validator, items, instance, schema)
        steps[0] -= 1 + len(items)
        if steps[0] < 0:
            raise ValidationTooExpensive
        quick = _quick_check(items)
        # Uncounted (flat: O(1) per element) and gathered now, so no uncounted stretch outlives this call.
        token = _STEPS.set(None)
        try:
            if quick is None:
                errors = list(islice(keyword(validator, items, instance, schema), _FLAT_ITEM_ERRORS))
            else:  # only the elements the quick test does not accept go through jsonschema, for its verdict
                doubtful = (validator.descend(value, items, path=index)
                            for index, value in enumerate(instance) if not quick(value))
                errors = list(islice(chain.from_iterable(doubtful), _FLAT_ITEM_ERRORS))
        finally:
            _STEPS.reset(token)
        return iter(errors)

    check.__name__ = getattr(keyword, "__name__", "items")
    return check


def _counted(keyword: Any) -> Any:
    def check(validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]) -> Any:
        steps = _STEPS.get()
        if steps is not None:
            steps[0] -= 1
            if steps[0] < 0:
                raise ValidationTooExpensive
        return keyword(validator, value, instance, schema)

    check.__name__ = getattr(keyword, "__name__", "keyword")
    return check


def timed_validator_class(stock: Any) -> Any:
    """``stock`` (a jsonschema validator class) with every keyword that runs a schema pattern time-limited,
    and every keyword counted against ``MAX_VALIDATION_STEPS`` inside ``validation_budget``.

    ``unevaluatedProperties`` also matches ``patternProperties`` inside jsonschema, with ``re``;
    the schema check refuses that combination instead of re-implementing the keyword.
    The class is not registered for any ``$schema`` URI, so jsonschema's own lookups never hand it out.
    """
    keywords = {**stock.VALIDATORS, **_TIMED_KEYWORDS}
    wrapped = {name: _counted(fn) for name, fn in keywords.items()}
    if "items" in keywords:
        wrapped["items"] = _items(keywords["items"])
    return jsonschema_validators.extend(stock, validators=wrapped)

"""Helpers for tests of a document's read-only JSON values."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from runtime._document_json import thaw


def containers(value: Any) -> Iterator[Any]:
    """``value`` and every object and array inside it."""
    if isinstance(value, dict | list):
        yield value
        for item in value.values() if isinstance(value, dict) else value:
            yield from containers(item)


def plain_twin(value: Any) -> Any:
    """``value`` (a document or any model in one) rebuilt with ``model_construct`` and every read-only JSON value
    thawed: the document as it was before its values were frozen, to compare dumps with."""
    if hasattr(type(value), "model_fields"):
        fields = {name: plain_twin(item) for name, item in value.__dict__.items()}
        return type(value).model_construct(value.model_fields_set, **fields)
    if isinstance(value, tuple):
        return tuple(plain_twin(item) for item in value)
    return thaw(value)

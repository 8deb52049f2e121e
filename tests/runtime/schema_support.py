"""Shared by the schema-budget tests: the ``$defs`` bomb and a spy on value validation."""

from __future__ import annotations

from typing import Any

import pytest

from runtime._schema_check import _DIALECTS


def bomb(levels: int) -> dict[str, Any]:
    """d(i) = allOf [d(i-1), d(i-1)]: a line of text per level, twice the validation work per level."""
    defs: dict[str, Any] = {"d0": {"type": "integer"}}
    for i in range(1, levels + 1):
        defs[f"d{i}"] = {"allOf": [{"$ref": f"#/$defs/d{i - 1}"}, {"$ref": f"#/$defs/d{i - 1}"}]}
    return {"$defs": defs, "type": "object", "properties": {"x": {"$ref": f"#/$defs/d{levels}"}}}


def spy_on_validation(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every value handed to a validator the runtime builds (the time-limited classes of every draft)."""
    calls: list[Any] = []
    for dialect in _DIALECTS.values():
        original = dialect.timed.iter_errors

        def spy(self: Any, instance: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            calls.append(instance)
            return _original(self, instance, *args, **kwargs)

        monkeypatch.setattr(dialect.timed, "iter_errors", spy)
    return calls

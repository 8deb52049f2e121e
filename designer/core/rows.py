"""Model instances from rows that hand-written SQL returned, without ``Model.objects.raw``.

``raw`` works out again for every query which column goes to which field and which converters each needs: for
a run's row (some thirty columns) that cost about ten times the statement itself, at every claim of a run
(issue 33). ``reader(model)`` does that once per model and database; its ``instance`` converts a row's values
as the ORM would (the backend's converters, then the field's ``from_db_value``) and builds the instance with
``Model.from_db``, as ``raw`` does. The row holds the model's concrete columns first, in the order of ``columns``;
any values after them are the caller's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connections
from django.db.models import Model

type Converter = Callable[[Any, Any, Any], Any]


@dataclass(frozen=True, slots=True)
class RowReader[M: Model]:
    """How a row of ``model``'s concrete columns becomes an instance, on one database."""

    model: type[M]
    using: str
    attnames: tuple[str, ...]
    #: (position in the row, the column's expression, its converters) for the columns that have any.
    converters: tuple[tuple[int, Any, tuple[Converter, ...]], ...]

    #: The concrete columns, quoted and in order, for a SELECT list or a RETURNING clause.
    columns: str

    def instance(self, row: Sequence[Any]) -> M:
        """The instance ``row`` (the concrete columns first) holds, as loaded from the database."""
        values = list(row[:len(self.attnames)])
        connection = connections[self.using]
        for position, expression, converters in self.converters:
            value = values[position]
            for convert in converters:
                value = convert(value, expression, connection)
            values[position] = value
        return self.model.from_db(self.using, self.attnames, values)


#: Each model's reader per database, once built (a race builds one twice, harmlessly).
_readers: dict[tuple[type[Model], str], RowReader[Any]] = {}


def reader[M: Model](model: type[M], using: str = "default") -> RowReader[M]:
    """``model``'s reader on the database ``using`` (built once)."""
    found = _readers.get((model, using))
    if found is None:
        found = _readers[(model, using)] = _build(model, using)
    return found


def _build[M: Model](model: type[M], using: str) -> RowReader[M]:
    connection = connections[using]
    fields = model._meta.concrete_fields
    converters = []
    for position, field in enumerate(fields):
        expression = field.get_col(model._meta.db_table)
        found = (*connection.ops.get_db_converters(expression), *expression.get_db_converters(connection))
        if found:
            converters.append((position, expression, tuple(found)))
    return RowReader(model, using, tuple(field.attname for field in fields), tuple(converters),
                     ", ".join(connection.ops.quote_name(field.column) for field in fields))

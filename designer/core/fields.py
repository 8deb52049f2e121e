"""``ExactJSONField``: a JSONField that gives back exactly what was saved, on every database.

PostgreSQL's ``jsonb`` (what Django's JSONField uses there) normalises a value: it reorders object
keys (shorter keys first) and refuses the NUL character (``\\u0000``) in any string. Run values are
what user tasks return, so both happen: a task output with a NUL made the checkpoint's save fail, and
``context.foreach`` (whose key order is the loop nesting, outer first) came back inner loop first.
SQLite keeps the JSON text as written, so the two databases disagreed.

This field stores the JSON *text* (``json.dumps``, in which NUL is the six characters ``\\u0000``) in
a ``text`` column on every database other than SQLite (where Django's JSONField column is already
text), and parses it back on load: keys keep their order, every string survives, and both databases
behave the same. What it gives up is SQL on the inside of the value (``field__key`` lookups, GIN
indexes); nothing in Trellis queries into these values, and such a lookup fails loudly (the column is
text), it never silently matches differently.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from django.db import models
from django.db.models import expressions


class ExactJSONField(models.JSONField):
    description = "JSON stored as text, with key order and every character kept"

    if TYPE_CHECKING:  # Django is untyped here: say that model attributes hold any JSON value, as JSONField's do
        def __get__(self, instance: Any, owner: Any) -> Any: ...

    def db_type(self, connection: Any) -> str | None:
        if connection.vendor == "sqlite":
            return super().db_type(connection)
        return "text"

    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        if connection.vendor == "sqlite":
            return super().get_db_prep_value(value, connection, prepared)
        if not prepared:
            value = self.get_prep_value(value)
        if isinstance(value, expressions.Value):
            value = value.value
        elif hasattr(value, "as_sql"):
            return value
        return json.dumps(value, cls=self.encoder, ensure_ascii=False)

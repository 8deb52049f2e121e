"""The list filters, one django-filter ``FilterSet`` per list, shared by the pages and the API.

Both read the same query parameters with the same rules; they differ only in what a value that cannot mean
anything does (``apply_filters``): a page drops it, shows the list without it and says so in a notice; the API
answers 400 naming the parameter. Each filter also carries its OpenAPI schema (``openapi_parameters``), so the
API documents exactly what the FilterSet accepts.
"""

from __future__ import annotations

from typing import Any, Final

import django_filters
from django import forms
from django.db.models import QuerySet

from designer.core.errors import BadRequest
from designer.core.filters import (
    DAY_SCHEMA,
    ID_SCHEMA,
    MAX_USERNAME,
    DayFilter,
    Documented,
    IdFilter,
    UserRefFilter,
    VersionFilter,
)
from designer.models import Run, RunValue
from designer.runs import values as run_values

_STATUS = "(" + "|".join(Run.Status.values) + ")"


MAX_VALUE_SEARCHES = 5


_LINE = run_values.LINE_PATTERN


VALUE_SEARCH_PATTERN: Final = rf"^(|{_LINE}(\n{_LINE}){{0,{MAX_VALUE_SEARCHES - 1}}})$"


class StatusesField(forms.Field):
    """One run status, or several separated by commas."""

    def to_python(self, value: Any) -> list[str] | None:
        if value in self.empty_values:
            return None
        wanted = [part.strip() for part in str(value).split(",") if part.strip()]
        unknown = sorted(set(wanted) - set(Run.Status.values))
        if unknown or not wanted:
            raise forms.ValidationError(
                f"unknown run status {', '.join(u[:40] for u in unknown[:5]) or repr(value)}; "
                f"give one or more of {', '.join(Run.Status.values)}, separated by commas")
        return wanted


class ValueSearchField(forms.CharField):
    """``input.<path> = <value>`` or ``output.<path> = <value>``; several (one a line) must all match."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(strip=True, **kwargs)

    def to_python(self, value: Any) -> list[run_values.ValueQuery] | None:
        text = super().to_python(value)
        lines = [line for line in text.split("\n") if line.strip()]
        if not lines:
            return None
        if len(lines) > MAX_VALUE_SEARCHES:
            raise forms.ValidationError(f"at most {MAX_VALUE_SEARCHES} value searches at once")
        try:
            return [run_values.parse_query(line) for line in lines]
        except BadRequest as exc:
            raise forms.ValidationError(exc.message) from None


class StatusFilter(Documented):
    field_class = StatusesField

    def filter(self, qs: QuerySet[Any], value: list[str] | None) -> QuerySet[Any]:
        return qs.filter(status__in=value) if value else qs


class ValueFilter(Documented):
    field_class = ValueSearchField

    def filter(self, qs: QuerySet[Any], value: list[run_values.ValueQuery] | None) -> QuerySet[Any]:
        for query in value or ():
            qs = qs.filter(pk__in=RunValue.objects.run_ids_matching(query))
        return qs


class RunFilter(django_filters.FilterSet):
    """Run history (the pages) and ``GET /api/runs/``."""

    workflow = IdFilter(field_name="workflow_id", schema=ID_SCHEMA, help="only this workflow's runs")
    team = IdFilter(field_name="team_id", schema=ID_SCHEMA, help="only this team's runs")
    status = StatusFilter(schema={"type": "string", "pattern": rf"^(|{_STATUS}(,{_STATUS})*)$"},
                          help="one status, or several separated by commas")
    version = VersionFilter(schema={"type": "string", "pattern": r"^(|draft|null|[1-9][0-9]{0,8})$"},
                            help="a published version number, or `draft` (also `null`) for runs of the draft")
    created_by = UserRefFilter(schema={"type": "string", "maxLength": MAX_USERNAME, "pattern": r"^[^\x00]*$"},
                               help="who started the run: a user id or a username")
    since = DayFilter(field_name="created_at", lookup_expr="date__gte", schema=DAY_SCHEMA,
                      help="created on or after this day (YYYY-MM-DD)")
    until = DayFilter(field_name="created_at", lookup_expr="date__lte", schema=DAY_SCHEMA,
                      help="created on or before this day (YYYY-MM-DD)")
    value = ValueFilter(schema={"type": "string", "maxLength": 1000, "pattern": VALUE_SEARCH_PATTERN},
                        help="runs whose input or output holds a value at a path: `input.order = A-1042`, "
                             "`input.customers[*].id = C-200` ([*]: any item of a list), `output.total = 42`; "
                             "several, one a line, must all match. A parameter named `input.<path>` or "
                             "`output.<path>` is the same search (`?input.order=A-1042`)")

    class Meta:
        model = Run
        fields: list[str] = []

"""The list filters, one django-filter ``FilterSet`` per list, shared by the pages and the API.

Both read the same query parameters with the same rules; they differ only in what a value that cannot mean
anything does (``apply_filters``): a page drops it, shows the list without it and says so in a notice; the API
answers 400 naming the parameter. Each filter also carries its OpenAPI schema (``openapi_parameters``), so the
API documents exactly what the FilterSet accepts.
"""

from __future__ import annotations

from typing import Any

import django_filters
from django.db.models import Q, QuerySet

from designer.core.filters import ID_SCHEMA, MAX_SEARCH, Documented, IdField, SearchFilter, YesNoFilter
from designer.models import Team, Workflow, WorkflowGrant


class TeamListFilter(Documented):
    """A team's workflows: those it holds and those shared with it."""

    field_class = IdField

    def filter(self, qs: QuerySet[Any], value: int | None) -> QuerySet[Any]:
        if value is None:
            return qs
        granted = WorkflowGrant.objects.filter(team_id=value).values("workflow_id")
        return qs.filter(Q(team_id=value) | Q(pk__in=granted))


class WorkflowFilter(django_filters.FilterSet):
    """The workflow list (the home page) and ``GET /api/workflows/``."""

    team = TeamListFilter(schema=ID_SCHEMA, help="only this team's list: the workflows it holds and those other "
                                                 "teams share with it")
    q = SearchFilter(schema={"type": "string", "maxLength": MAX_SEARCH, "pattern": r"^[^\x00]*$"},
                     help="search in name, slug and description")
    shared = YesNoFilter(schema={"type": "boolean"},
                         help="true: only workflows other teams share with yours; false: only your teams' own")

    class Meta:
        model = Workflow
        fields: list[str] = []

    def filter_queryset(self, queryset: QuerySet[Any]) -> QuerySet[Any]:
        queryset = super().filter_queryset(queryset)
        shared = self.form.cleaned_data.get("shared")
        if shared is not None:
            user = getattr(self.request, "user", None)
            mine = Team.objects.for_user(user).values("pk")
            queryset = queryset.exclude(team_id__in=mine) if shared else queryset.filter(team_id__in=mine)
        return queryset

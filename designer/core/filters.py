"""The list filters, one django-filter ``FilterSet`` per list, shared by the pages and the API.

Both read the same query parameters with the same rules; they differ only in what a value that cannot mean
anything does (``apply_filters``): a page drops it, shows the list without it and says so in a notice; the API
answers 400 naming the parameter. Each filter also carries its OpenAPI schema (``openapi_parameters``), so the
API documents exactly what the FilterSet accepts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import django_filters
from django import forms
from django.db.models import Q, QuerySet
from drf_spectacular.utils import OpenApiParameter

from designer.core.errors import BadRequest
from designer.core.untrusted import MAX_ID, parse_id

ID_SCHEMA: Final[dict[str, Any]] = {"type": "integer", "minimum": 1, "maximum": MAX_ID}
#: Longest username Django's user model stores; a longer ``created_by`` cannot name anyone.
MAX_USERNAME = 150
MAX_SEARCH = 200
#: A day, or nothing (an empty value is no filter, as for every parameter here).
DAY_SCHEMA: Final[dict[str, Any]] = {"anyOf": [{"type": "string", "format": "date"},
                                               {"type": "string", "maxLength": 0}]}


# --- form fields: each says what is wrong with a value, in words an API client and a page can show ---------------


class _ParsedField(forms.Field):
    """A parameter read from its text: an empty value is no filter (None); ``parse`` gets the rest, stripped."""

    def to_python(self, value: Any) -> Any:
        if value in self.empty_values:
            return None
        return self.parse(str(value).strip())

    def parse(self, text: str) -> Any:
        raise NotImplementedError


class IdField(_ParsedField):
    #: What the parameter must be, said when it is not.
    expected = f"an id (a positive integer up to {MAX_ID})"

    def parse(self, text: str) -> int | str:
        number = parse_id(text)
        if number is None:
            raise forms.ValidationError(f"must be {self.expected}, got {text[:40]!r}")
        return number


class VersionField(IdField):
    """A published version number, or ``draft`` (also ``null``) for runs of the draft."""

    expected = "a published version number (1 or more) or draft"

    def parse(self, text: str) -> int | str:
        return "draft" if text in ("draft", "null") else super().parse(text)


class UserRefField(_ParsedField):
    """A user id or a username."""

    def parse(self, text: str) -> int | str:
        if len(text) > MAX_USERNAME or "\x00" in text:
            raise forms.ValidationError(f"must be a user id or a username (at most {MAX_USERNAME} characters)")
        return parse_id(text) or text


class SearchField(forms.CharField):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_length=MAX_SEARCH, strip=True, **kwargs)

    def to_python(self, value: Any) -> str:
        text = super().to_python(value)
        if "\x00" in text:
            raise forms.ValidationError("may not contain NUL characters")
        return text


class YesNoField(_ParsedField):
    def parse(self, text: str) -> bool:
        if text.lower() in ("true", "1", "yes"):
            return True
        if text.lower() in ("false", "0", "no"):
            return False
        raise forms.ValidationError(f"must be true or false, got {text.lower()[:40]!r}")


# --- filters: a form field, a lookup, and the OpenAPI schema of the parameter --------------------------------


class Documented(django_filters.Filter):
    def __init__(self, *args: Any, schema: dict[str, Any], help: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.schema, self.help = schema, help


class IdFilter(Documented):
    field_class = IdField


class VersionFilter(Documented):
    field_class = VersionField

    def filter(self, qs: QuerySet[Any], value: int | str | None) -> QuerySet[Any]:
        if value is None:
            return qs
        if value == "draft":
            return qs.filter(workflow_version__isnull=True)
        return qs.filter(workflow_version__number=value)


class UserRefFilter(Documented):
    field_class = UserRefField

    def filter(self, qs: QuerySet[Any], value: int | str | None) -> QuerySet[Any]:
        if value is None:
            return qs
        return qs.filter(created_by_id=value) if isinstance(value, int) else qs.filter(created_by__username=value)


class DayFilter(Documented):
    """A calendar day (YYYY-MM-DD, in the site's time zone), compared with a datetime column's day."""

    field_class = forms.DateField


class SearchFilter(Documented):
    field_class = SearchField

    def filter(self, qs: QuerySet[Any], value: str | None) -> QuerySet[Any]:
        if not value:
            return qs
        return qs.filter(Q(name__icontains=value) | Q(slug__icontains=value) | Q(description__icontains=value))


class YesNoFilter(Documented):
    """A yes/no the FilterSet itself applies (``WorkflowFilter.filter_queryset``: it needs the caller's teams)."""

    field_class = YesNoField

    def filter(self, qs: QuerySet[Any], value: bool | None) -> QuerySet[Any]:
        return qs


# --- the FilterSets ----------------------------------------------------------------------------------------------


# --- applying them -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Filtered:
    """A filtered list: the rows, the values that were applied (as typed), and those that were dropped."""

    queryset: QuerySet[Any]
    values: dict[str, str]
    dropped: dict[str, str]

    @property
    def notice(self) -> str:
        """What a page says about the values it dropped (empty when none was)."""
        if not self.dropped:
            return ""
        parts = "; ".join(f"{name}: {message}" for name, message in self.dropped.items())
        return f"Some filters were ignored because their values are not valid ({parts}). Showing the list without them."


def _messages(filterset: django_filters.FilterSet) -> dict[str, str]:
    return {name: " ".join(str(m) for m in errors) for name, errors in filterset.errors.items()}


def apply_filters(filterset_class: type[django_filters.FilterSet], params: Any, queryset: QuerySet[Any], *,
                  request: Any, strict: bool) -> Filtered:
    """Filter ``queryset`` by the query parameters the FilterSet knows (others are not its business).

    ``strict`` (the API): a bad value is a ``BadRequest`` naming the parameter, with every bad one listed.
    Otherwise (the pages): bad values are dropped and reported in ``dropped``; the rest still apply.
    """
    names = list(filterset_class.base_filters)
    data = {name: str(params.get(name, "")).strip() for name in names if params.get(name) not in (None, "")}
    if "value" in names:
        searches = [f"{key} = {params.get(key)}" for key in params if str(key).startswith(VALUE_PREFIXES)]
        if searches:
            data["value"] = "\n".join([data.get("value", ""), *searches]).strip()
    filterset = filterset_class(data, queryset=queryset, request=request)
    dropped: dict[str, str] = {}
    if not filterset.is_valid():
        dropped = _messages(filterset)
        if strict:
            first = next(iter(dropped))
            raise BadRequest(
                "; ".join(f"{name} {message}" for name, message in dropped.items()),
                field=first, errors=[{"loc": name, "msg": message} for name, message in dropped.items()],
            )
        data = {name: value for name, value in data.items() if name not in dropped}
        filterset = filterset_class(data, queryset=queryset, request=request)
        filterset.is_valid()
    return Filtered(queryset=filterset.qs, values=data, dropped=dropped)


def openapi_parameters(filterset_class: type[django_filters.FilterSet]) -> list[OpenApiParameter]:
    """The query parameters of a FilterSet for ``extend_schema``, each with the schema its filter declares."""
    return [
        OpenApiParameter(name, flt.schema, description=f"{flt.help}. A value that cannot mean anything is a 400 "
                                                       "naming this parameter.")
        for name, flt in filterset_class.base_filters.items()
        if isinstance(flt, Documented)
    ]


#: Query parameters named ``input.<path>`` or ``output.<path>`` are value searches too (``?input.order=A-1042``).
VALUE_PREFIXES: Final = ("input.", "output.", "input[", "output[")

"""Request parsing and response shapes. No queries and no rules here: those are the
selectors' and services' job; a serializer only checks types and renders."""

from __future__ import annotations

from typing import Any

from django.core.validators import RegexValidator
from rest_framework import serializers

from designer.core.api_schema import StrictCharField, StrictIntegerField
from designer.core.untrusted import MAX_ID

# What the services accept, said in the schema too: a name has a visible character and no NUL anywhere.
HAS_TEXT = RegexValidator(r"^[^\x00]*[^\s\x00][^\x00]*$", "must contain a visible character and no NUL")
NO_NUL = RegexValidator(r"^[^\x00]*$", "may not contain NUL characters")


class StrictChoiceField(serializers.ChoiceField):
    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            raise serializers.ValidationError("must be one of the listed strings")
        return super().to_internal_value(data)


def name_field(max_length: int, **kwargs: Any) -> StrictCharField:
    return StrictCharField(max_length=max_length, min_length=1, validators=[HAS_TEXT], **kwargs)


def id_field(**kwargs: Any) -> StrictIntegerField:
    return StrictIntegerField(min_value=1, max_value=MAX_ID, **kwargs)


# --- responses ---------------------------------------------------------------


class DiagnosticSerializer(serializers.Serializer):
    code = serializers.CharField()
    severity = serializers.ChoiceField(choices=["error", "warning"])
    node_id = serializers.CharField(allow_null=True)
    field = serializers.CharField(allow_null=True)
    message = serializers.CharField()
    hint = serializers.CharField(allow_blank=True)
    data = serializers.DictField(help_text="structured facts for tools, e.g. route.no_exit: {\"nodes\": [...]}")

    def to_representation(self, instance: Any) -> dict[str, Any]:
        return instance if isinstance(instance, dict) else instance.to_dict()


class ErrorSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    diagnostics = DiagnosticSerializer(many=True, required=False)


# --- requests ----------------------------------------------------------------



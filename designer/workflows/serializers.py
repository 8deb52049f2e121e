"""Request parsing and response shapes. No queries and no rules here: those are the
selectors' and services' job; a serializer only checks types and renders."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from designer.core.api_schema import DocumentField, RequestSerializer, StrictCharField, StrictIntegerField
from designer.core.serializers import HAS_TEXT, NO_NUL, DiagnosticSerializer, StrictChoiceField, id_field, name_field
from designer.core.untrusted import MAX_ID, json_error_message, loads_json
from designer.models import Workflow, WorkflowGrant, WorkflowVersion


class GrantedToSerializer(serializers.Serializer):
    team = serializers.IntegerField(source="team_id", help_text="your team the workflow is shared with")
    team_name = serializers.CharField()
    role = StrictChoiceField(choices=WorkflowGrant.Role.choices, help_text="the role that team was granted")


class WorkflowSerializer(serializers.ModelSerializer):
    """A workflow as the caller sees it; pass workflows marked by ``selectors.mark_access``."""

    team = serializers.IntegerField(source="team_id", read_only=True, help_text="the team that holds it")
    team_name = serializers.CharField(source="team.name", read_only=True)
    latest_version = serializers.IntegerField(read_only=True, allow_null=True, default=None)
    created_by = serializers.CharField(source="created_by.username", read_only=True, default=None)
    shared = serializers.BooleanField(read_only=True, help_text="true: you see it because its team shares it "
                                                                "with one of your teams, not as a member of its team")
    grant_role = serializers.ChoiceField(choices=WorkflowGrant.Role.choices, read_only=True, allow_null=True,
                                         help_text="the best role granted to one of your teams (null: none)")
    granted_to = GrantedToSerializer(many=True, read_only=True,
                                     help_text="your teams it is shared with, each with its role")

    class Meta:
        model = Workflow
        fields = ("id", "team", "team_name", "slug", "name", "description", "revision", "latest_version",
                  "created_by", "created_at", "updated_at", "shared", "grant_role", "granted_to")


class AnalysisSummarySerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    diagnostics = DiagnosticSerializer(many=True)
    reachable = serializers.ListField(child=serializers.CharField())
    control_regions = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))
    labels = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))


class DocumentSerializer(serializers.Serializer):
    revision = serializers.IntegerField()
    document = DocumentField()
    diagnostics = DiagnosticSerializer(many=True)
    analysis = AnalysisSummarySerializer()


class VersionSerializer(serializers.ModelSerializer):
    published_by = serializers.CharField(source="published_by.username", read_only=True, default=None)

    class Meta:
        model = WorkflowVersion
        fields: tuple[str, ...] = ("number", "published_at", "published_by", "note")


class PublishSerializer(RequestSerializer):
    note = serializers.CharField(required=False, allow_blank=True, max_length=2000, default="",
                                 help_text="what changed in this version; shown in the version list")


class VersionDetailSerializer(VersionSerializer):
    document = DocumentField(read_only=True)

    class Meta(VersionSerializer.Meta):
        fields = (*VersionSerializer.Meta.fields, "document")


class TaskSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    labels = serializers.ListField(child=serializers.CharField())
    input_schema = serializers.JSONField()
    result_schema = serializers.JSONField()
    is_async = serializers.BooleanField()

    def to_representation(self, spec: Any) -> dict[str, Any]:
        return {
            "name": spec.name,
            "description": spec.description,
            "labels": list(spec.labels),
            "input_schema": spec.input_schema,
            "result_schema": spec.result_schema,
            "is_async": spec.is_async,
        }


class PathOptionSerializer(serializers.Serializer):
    path = serializers.CharField()
    type = serializers.CharField(allow_null=True)
    schema = serializers.JSONField()
    title = serializers.CharField(allow_blank=True)
    description = serializers.CharField(allow_blank=True)
    group = serializers.CharField()
    foreach_id = serializers.CharField(allow_null=True)
    compatibility = serializers.CharField(allow_null=True)
    last_item_wins = serializers.CharField(
        allow_null=True,
        help_text="The loop whose items run concurrently and each overwrite this state value (diagnostic "
                  "state.concurrent_write): read after that loop it holds whichever item finished last; null when "
                  "no such loop writes it.")


class NodeAnalysisSerializer(serializers.Serializer):
    node_id = serializers.CharField()
    reachable = serializers.BooleanField()
    control_region = serializers.ListField(child=serializers.CharField())
    context_schema = serializers.JSONField(allow_null=True)
    field = serializers.CharField(allow_null=True)
    want = serializers.JSONField(allow_null=True)
    path_options = PathOptionSerializer(many=True)
    diagnostics = DiagnosticSerializer(many=True)


class ValidationResultSerializer(AnalysisSummarySerializer):
    pass


class GrantCreateSerializer(RequestSerializer):
    team = StrictCharField(max_length=140, min_length=1, validators=[HAS_TEXT],
                                 help_text="the team to share with: its slug or id")
    role = StrictChoiceField(
        choices=WorkflowGrant.Role.choices, default="viewer",
        help_text="viewer: read it and see its runs; runner: also start runs and use it as a subgraph; "
                  "editor: also edit and publish it",
    )


class WorkflowCreateSerializer(RequestSerializer):
    team = id_field()
    name = name_field(200)
    description = StrictCharField(required=False, allow_blank=True, default="", validators=[NO_NUL])
    document = DocumentField(required=False, default=None, help_text="defaults to an empty graph")


class WorkflowUpdateSerializer(RequestSerializer):
    name = name_field(200, required=False)
    description = StrictCharField(required=False, allow_blank=True, validators=[NO_NUL])


class DuplicateSerializer(RequestSerializer):
    team = id_field(required=False, allow_null=True, default=None, help_text="null: the workflow's own team")
    name = name_field(200, required=False, allow_null=True, default=None)


class ImportSerializer(RequestSerializer):
    team = id_field()
    document = DocumentField()
    name = name_field(200, required=False, allow_null=True, default=None)


class DocumentPutSerializer(RequestSerializer):
    revision = StrictIntegerField(min_value=1, max_value=MAX_ID, help_text="the revision this edit started from")
    document = DocumentField()


class ValidateSerializer(RequestSerializer):
    document = DocumentField(required=False, default=None,
                             help_text="a document to check instead of the stored draft")


class AnalysisQuerySerializer(serializers.Serializer):
    node = serializers.CharField()
    field = serializers.CharField(required=False, allow_blank=True, default="")
    want = serializers.JSONField(required=False, default=None,
                                 help_text="JSON Schema the path must satisfy (JSON text)")
    all = serializers.BooleanField(required=False, default=False,
                                   help_text="list every path, compatible or not")

    def to_internal_value(self, data: Any) -> Any:
        # ``want`` arrives as JSON text in the query string.
        if hasattr(data, "dict"):
            data = data.dict()
        return super().to_internal_value(data)

    def validate_want(self, value: Any) -> Any:
        if isinstance(value, str):
            try:
                value = loads_json(value)
            except ValueError as exc:
                raise serializers.ValidationError(
                    f"want must be a JSON Schema object (JSON text): {json_error_message(exc)}"
                ) from None
        if value is not None and not isinstance(value, dict):
            raise serializers.ValidationError("want must be a JSON Schema object")
        return value

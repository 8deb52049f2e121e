"""Admin for workflows (published versions inline, read-only); the team's admin is ``designer/admin.py``.

Versions are immutable, so their inline only shows them; the draft document is
edited through the API/editor, which run the analyzer and guard revisions, so
here it is read-only too.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from designer.core.admin import ReadOnly, json_field
from designer.models import Workflow, WorkflowVersion


class WorkflowVersionInline(admin.TabularInline):
    model = WorkflowVersion
    extra = 0
    can_delete = False
    ordering = ("-number",)
    fields = ("number", "published_by", "published_at", "node_count")
    readonly_fields = fields
    show_change_link = True

    @admin.display(description="nodes")
    def node_count(self, version: WorkflowVersion) -> int:
        return len(version.document.get("nodes", []))

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Workflow)
class WorkflowAdmin(admin.ModelAdmin):
    list_display = ("name", "team", "slug", "revision", "updated_at", "created_by")
    list_filter = ("team",)
    search_fields = ("name", "slug", "description")
    list_select_related = ("team", "created_by")
    readonly_fields = ("slug", "revision", "document_json", "created_by", "created_at", "updated_at")
    fields = ("team", "name", "slug", "description", "revision", "document_json", "created_by", "created_at",
              "updated_at")
    inlines = (WorkflowVersionInline,)

    document_json = json_field("document", "document (edit it in the editor)")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        # Moving a workflow between teams would break its subgraph references and runs.
        return (*self.readonly_fields, "team") if obj is not None else self.readonly_fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # created through the API/pages, which set slug and document


@admin.register(WorkflowVersion)
class WorkflowVersionAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("workflow", "number", "published_by", "published_at")
    list_filter = ("workflow__team",)
    search_fields = ("workflow__name", "workflow__slug")
    list_select_related = ("workflow", "published_by")
    fields = ("workflow", "number", "published_by", "published_at", "document_json")
    readonly_fields = fields

    document_json = json_field("document", "document")

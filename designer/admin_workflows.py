"""Admin for teams (memberships inline) and workflows (published versions inline, read-only).

Versions are immutable, so their inline only shows them; the draft document is
edited through the API/editor, which run the analyzer and guard revisions, so
here it is read-only too.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from designer.admin_support import ReadOnly, json_field
from designer.models import Membership, Team, Workflow, WorkflowVersion
from designer.runs import retention


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ("user",)
    fields = ("user", "role", "created_at")
    readonly_fields = ("created_at",)


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "member_count", "workflow_count", "retention_policy", "runs_to_prune",
                    "created_at")
    search_fields = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}
    inlines = (MembershipInline,)
    fieldsets = (
        (None, {"fields": ("name", "slug")}),
        ("Retention", {"fields": ("retention_days", "retention_runs", "retention_policy", "retention_preview"),
                       "description": "Finished runs the policy expires are deleted, with their traces and "
                                      "checkpoint history, by the periodic prune; live runs are never touched."}),
        ("Fair queues", {"fields": ("queue_weight", "max_running", "workflow_max_running"),
                         "description": "run_worker picks queued tasks in weighted round robin across teams; "
                                        "these limits hold across all workers."}),
    )
    readonly_fields = ("retention_policy", "retention_preview")

    @admin.display(description="retention")
    def retention_policy(self, team: Team) -> str:
        policy = retention.policy_for(team)
        return f"{policy.describe()} ({'this team' if policy.own else 'server default'})"

    @admin.display(description="runs the next prune deletes")
    def runs_to_prune(self, team: Team) -> int:
        return retention.expired_runs(team).count()

    @admin.display(description="what will go")
    def retention_preview(self, team: Team) -> str:
        if team.pk is None:
            return "-"
        runs = retention.expired_runs(team)
        count = runs.count()
        if not count:
            return "Nothing: no finished run of this team is past its policy."
        first = runs.values_list("finished_at", flat=True).first()
        last = runs.order_by("-finished_at").values_list("finished_at", flat=True).first()
        return (f"{count} finished run{'s' if count != 1 else ''} (finished {first:%Y-%m-%d %H:%M} to "
                f"{last:%Y-%m-%d %H:%M} UTC), with their traces and checkpoint history, at the next prune.")

    @admin.display(description="members")
    def member_count(self, team: Team) -> int:
        return team.memberships.count()

    @admin.display(description="workflows")
    def workflow_count(self, team: Team) -> int:
        return team.workflows.count()


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

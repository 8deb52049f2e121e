"""Admin registrations. Each domain keeps its ModelAdmins in its own ``admin.py``; importing it registers them.

The team's admin page is here, not in ``designer/access/``: besides its members it shows the team's run retention
(``designer/runs/retention.py``), and access comes before runs in the domain order."""

from __future__ import annotations

from django.contrib import admin

from designer.models import Membership, Team
from designer.runs import admin as runs_admin  # noqa: F401  (registers Run with the trace inline)
from designer.runs import retention
from designer.workflows import admin as workflows_admin  # noqa: F401  (workflows with their versions)


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

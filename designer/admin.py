"""Admin registrations. Each area keeps its ModelAdmins in its own module; importing it registers them."""

from __future__ import annotations

from designer import admin_workflows  # noqa: F401  (teams with memberships, workflows with versions)
from designer.runs import admin as runs_admin  # noqa: F401  (registers Run with the trace inline)

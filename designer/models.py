"""The designer app's models, gathered from the domain packages that define them.

Django looks for an app's models here; each domain keeps its own in ``designer/<domain>/models.py`` and they
depend one way (access <- workflows <- runs <- triggers, notifications, secrets, monitoring), so no domain's
models import this module. ``from designer.models import Run`` keeps working for every caller.

Every team-owned model gets its manager from ``TeamScopedQuerySet`` so that the one question "what may this
user see?" is answered in exactly one place: ``Model.objects.for_user(user)``. Selectors build on it; views
never filter by team themselves.
"""

from __future__ import annotations

from designer.access.models import (
    ApiToken,
    Invitation,
    LoginAttemptWindow,
    Membership,
    Team,
    TeamQuerySet,
    TeamScopedQuerySet,
    WorkflowGrant,
)
from designer.editor.models import EditorPresence
from designer.monitoring.models import WorkerHeartbeat
from designer.notifications.models import AnswerLink, Delivery, NotificationRule
from designer.runs.models import (
    FairShare,
    ForeachBatch,
    ForeachBatchItem,
    QueuedTask,
    RecoveryChain,
    Run,
    RunCheckpoint,
    RunEvent,
    RunInput,
    RunStatePart,
    RunValue,
)
from designer.secrets.models import Secret, SecretUse
from designer.triggers.models import Schedule, TriggerFire, Webhook, WebhookSignatureUse
from designer.workflows.models import DraftOperation, Workflow, WorkflowVersion, empty_document

__all__ = [
    "AnswerLink", "ApiToken", "Delivery", "DraftOperation", "EditorPresence", "empty_document", "FairShare",
    "ForeachBatch", "ForeachBatchItem", "Invitation", "LoginAttemptWindow", "Membership", "NotificationRule",
    "QueuedTask", "RecoveryChain", "Run", "RunCheckpoint", "RunEvent", "RunInput", "RunStatePart", "RunValue",
    "Schedule", "Secret", "SecretUse", "Team", "TeamQuerySet", "TeamScopedQuerySet", "TriggerFire", "Webhook",
    "WebhookSignatureUse", "WorkerHeartbeat", "Workflow", "WorkflowGrant", "WorkflowVersion",
]

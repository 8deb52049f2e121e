"""The designer's own error hierarchy.

Services and selectors raise these; the API's single exception handler
(``designer.core.api_errors``) turns them into ``{code, message, ...}`` JSON with
``status``. Each carries structured details so no caller parses a message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runtime import WorkflowError
from runtime.errors import (
    CheckpointNotFoundError,
    CorruptRunStateError,
    ForkError,
    InputValidationError,
    NodeFailedError,
    RedriveError,
    ResumeError,
    SubgraphResolutionError,
    UnknownTaskError,
    WorkflowValidationError,
)


class DesignerError(Exception):
    code: str = "designer.error"
    status: int = 400

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = details

    def to_dict(self) -> dict[str, Any]:
        payload: dict[str, Any] = {"code": self.code, "message": self.message}
        payload.update({key: value for key, value in self.details.items() if value is not None})
        return payload


#: HTTP status per runtime error class; the most specific class in an error's MRO wins.
RUNTIME_STATUS: dict[type[WorkflowError], int] = {
    WorkflowError: 400,
    WorkflowValidationError: 400,
    # The request fits the API's schema; its value does not fit the workflow's own (see designer.core.api_schema).
    InputValidationError: 422,
    UnknownTaskError: 400,
    SubgraphResolutionError: 400,
    ResumeError: 409,
    RedriveError: 409,
    ForkError: 409,
    CheckpointNotFoundError: 404,
    NodeFailedError: 422,
    # A damaged checkpoint conflicts with what the run claims to be; the run itself can still be cancelled or
    # deleted, so this is not a server fault.
    CorruptRunStateError: 409,
}


def status_of(error: DesignerError | WorkflowError) -> int:
    """The HTTP status a designer or runtime error is answered with."""
    if isinstance(error, DesignerError):
        return error.status
    for klass in type(error).__mro__:
        if klass in RUNTIME_STATUS:
            return RUNTIME_STATUS[klass]
    return 400


class ObjectNotFound(DesignerError):
    """Missing, or outside the caller's teams: the two are indistinguishable on purpose."""

    code = "not_found"
    status = 404


class ActionForbidden(DesignerError):
    """Visible to the caller, but their role is too low for the action."""

    code = "permission.denied"
    status = 403


class BadRequest(DesignerError):
    code = "request.invalid"
    status = 400


class RequestTooLarge(DesignerError):
    code = "request.too_large"
    status = 413


class RevisionConflict(DesignerError):
    """A document save based on a stale revision; carries the current revision and document."""

    code = "revision.conflict"
    status = 409


class EditConflict(DesignerError):
    """An edit that wants a field someone else changed after the revision it started from: the first change is
    kept, ``kept`` lists what it changed and who made it, ``ops`` are the refused edit's own operations (sent again
    on the current revision, they apply: "apply mine")."""

    code = "edit.conflict"
    status = 409


class SecretExists(DesignerError):
    """A team already has a secret of that name (rotate it instead)."""

    code = "secret.exists"
    status = 409


class DocumentInvalid(DesignerError):
    """A JSON object the runtime does not read as a workflow document (pydantic refused it: a wrong type, a rule
    across fields); ``errors`` lists [{loc, msg}]. 422: the request is well formed, its document is not."""

    code = "document.invalid"
    status = 422


class CronNeverFires(DesignerError):
    """A cron expression that fits the published grammar (designer.triggers.cron) but can never fire: a range that runs
    backwards, a day none of its months has. 422: the request is well formed, its schedule is not."""

    code = "cron.never_fires"
    status = 422


class UnknownTimeZone(DesignerError):
    """A time zone name of the right shape that the tz database does not have (422, like ``CronNeverFires``)."""

    code = "timezone.unknown"
    status = 422


class DocumentTooLarge(DesignerError):
    code = "document.too_large"
    status = 400


class TeamRuleViolation(DesignerError):
    """A membership change that would break a team rule (e.g. removing the last owner)."""

    code = "team.rule"
    status = 400


class InvitationClosed(DesignerError):
    """An invitation that was already answered, revoked, or has expired."""

    code = "invitation.closed"
    status = 409


class TokenReadOnly(DesignerError):
    """A write through an API token created read-only."""

    code = "token.read_only"
    status = 403


class RunConflict(DesignerError):
    """The run is not in a state that allows the action (e.g. resuming a run that is not interrupted)."""

    code = "run.conflict"
    status = 409


class NotPublished(DesignerError):
    """A trigger for a workflow with no published version: the request is fine, the workflow is not ready for
    it (409, like a run in the wrong state); publishing it resolves the conflict."""

    code = "workflow.not_published"
    status = 409


class ResumeInvalid(DesignerError):
    """The answer does not fit the interrupt (its resume schema or labels); ``errors`` lists [{field, message}]."""

    code = "resume.invalid"
    status = 400


class ProblemsFound(DesignerError):
    """Several fields of one request are wrong at once (a form that checks every field before answering);
    ``errors`` lists each as {code, field, message}. 400 when any problem is a malformed field (the request does
    not fit its schema); otherwise the request is well formed and what it names is wrong (a 422 zone, a 404
    version), so 422: a 404 for the whole request would say the URL names nothing.
    ``problems`` are designer or runtime errors, each with ``code``, ``message`` and ``details["field"]``."""

    code = "request.invalid"

    def __init__(self, problems: Sequence[Any]) -> None:
        errors = [{"code": p.code, "field": p.details.get("field"), "message": p.message} for p in problems]
        super().__init__("; ".join(f"{e['field'] or 'request'}: {e['message']}" for e in errors), errors=errors)
        self.status = 400 if any(status_of(problem) == 400 for problem in problems) else 422


class InvitationsLimited(DesignerError):
    """Too many invitations from one owner, or to one person, in the window; ``retry_after`` in seconds."""

    code = "invitation.rate_limited"
    status = 429


class RateLimited(DesignerError):
    """Too many calls of one trigger in its window; ``retry_after`` says when to try again, in seconds."""

    code = "trigger.rate_limited"
    status = 429


class AnswerLinkClosed(DesignerError):
    """A notification's answer link that can no longer answer: used, expired, or its question already answered."""

    code = "answer_link.closed"
    status = 410

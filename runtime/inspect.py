"""Reading a run without running it: progress, frames and their context, summaries, and the checks a host makes
before it resumes, redrives or forks one.
"""

from __future__ import annotations

from runtime._inspect import (
    ForkEdits,
    FrameView,
    activation_progress,
    check_fork,
    check_redrive,
    check_resume,
    check_run_input,
    frame_context,
    live_frames,
)
from runtime._summary import ActivationProgress, RunSummary, run_summary

__all__ = [
    "ActivationProgress",
    "ForkEdits",
    "FrameView",
    "RunSummary",
    "activation_progress",
    "check_fork",
    "check_redrive",
    "check_resume",
    "check_run_input",
    "frame_context",
    "live_frames",
    "run_summary",
]

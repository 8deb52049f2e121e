"""Helpers for tests that write a workflow document as JSON by hand."""

from __future__ import annotations


def routes(*paths: str) -> list[dict[str, str]]:
    """A document's ``routes``, written as paths: ``"each loop body ok each"`` is each --loop--> body --ok--> each.

    Each path alternates node ids and labels, so a loop reads as one line; the routes come out in the order
    written, as the dicts a hand-written document would hold.
    """
    out: list[dict[str, str]] = []
    for path in paths:
        words = path.split()
        if len(words) < 3 or len(words) % 2 == 0:
            raise ValueError(f"route path {path!r} must be node, then label and node pairs")
        for at in range(0, len(words) - 2, 2):
            out.append({"source": words[at], "label": words[at + 1], "target": words[at + 2]})
    return out

"""htmx response headers come from ``django_htmx.http`` (``trigger_client_event``, ``retarget``, ``reswap``,
``HttpResponseClientRefresh``...), never written by hand: a misspelt ``HX-`` header is silently ignored by the
browser, and the helpers are where the header names and value formats are kept right (issue 17)."""

from __future__ import annotations

import ast
from pathlib import Path

DESIGNER = Path(__file__).resolve().parents[2] / "designer"


def _hand_written_hx_headers(source: str) -> list[int]:
    """Lines that store to ``something["HX-..."]`` (a response or its headers)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AugAssign | ast.AnnAssign) else []
        for target in targets:
            if (isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant)
                    and isinstance(target.slice.value, str) and target.slice.value.lower().startswith("hx-")):
                lines.append(node.lineno)
    return lines


def test_the_scan_finds_a_hand_written_header() -> None:
    assert _hand_written_hx_headers('response = HttpResponse()\nresponse["HX-Refresh"] = "true"\n') == [2]
    assert _hand_written_hx_headers('response.headers["hx-trigger"] = "{}"\n') == [1]
    assert _hand_written_hx_headers('response = trigger_client_event(response, "saved")\n') == []


def test_no_designer_module_writes_an_hx_header_by_hand() -> None:
    offenders = [f"{path.relative_to(DESIGNER.parent)}:{line}"
                 for path in sorted(DESIGNER.rglob("*.py"))
                 for line in _hand_written_hx_headers(path.read_text(encoding="utf-8"))]
    assert not offenders, "use django_htmx.http's helpers for HX-* response headers:\n" + "\n".join(offenders)

"""The one table ``make bench`` ends with: every headline row recorded by the benchmarks that ran, with the
machine's cores and the load beside each row."""

from __future__ import annotations

import os

import pytest

from bench import _headline


@pytest.fixture(autouse=True)
def no_rows_left_over(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_headline, "_recorded", [])


def test_nothing_is_printed_when_no_benchmark_recorded_a_row(capsys: pytest.CaptureFixture[str]) -> None:
    _headline.print_summary()
    assert capsys.readouterr().out == ""


def test_each_recorded_row_is_one_line_with_its_peer_ratio_goal_and_verdict(
        capsys: pytest.CaptureFixture[str]) -> None:
    _headline.record("engine", "foreach 1,000 items", trellis="32.3 us/item", peer="LangGraph 258 us/item",
                     ratio="8.0x", goal=">= 10x", met=False)
    _headline.record("worker", "collected foreach, 1,000 items, sqlite", trellis="5,669 items/s",
                     goal=">= 4,000 items/s", met=True)
    _headline.record("durable", "resume context", trellis="1.2 ms", goal="-", met=None)
    _headline.print_summary()
    lines = capsys.readouterr().out.splitlines()
    title = next(line for line in lines if line.startswith("Issue 33 headline rows"))
    assert f"{os.cpu_count()} cores" in title
    foreach = next(line for line in lines if "foreach 1,000 items" in line)
    assert foreach.split()[-2:-1] == ["NO"] and "LangGraph 258 us/item" in foreach and "8.0x" in foreach
    collected = next(line for line in lines if "collected foreach" in line)
    assert collected.split()[-2] == "yes"
    context = next(line for line in lines if "resume context" in line)
    assert context.split()[-2] == "-"
    assert [h.area for h in _headline.recorded()] == ["engine", "worker", "durable"]

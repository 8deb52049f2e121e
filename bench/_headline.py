"""Issue 33's headline rows, gathered from the benchmarks that ran and printed as one table at the end.

Each benchmark keeps its own detailed tables; the figures the issue asks for (a row, Trellis's figure, the peer's
beside it where there is one, the ratio and the goal) are also recorded here as they are measured, so ``make
bench`` ends with one table of them, with the machine's cores and the load when each row was measured. These
machines are noisy: a ratio is only meaningful within one run, so every ratio here is from one run and nothing is
asserted.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from bench._table import table


@dataclass(frozen=True, slots=True)
class Headline:
    area: str
    row: str
    trellis: str
    peer: str
    ratio: str
    goal: str
    met: bool | None
    load: float


_recorded: list[Headline] = []


def record(area: str, row: str, *, trellis: str, goal: str, met: bool | None, peer: str = "-",
           ratio: str = "-") -> None:
    """Keep one headline row; ``met`` is None where the row has no goal of its own (context for another row)."""
    _recorded.append(Headline(area, row, trellis, peer, ratio, goal, met, os.getloadavg()[0]))


def recorded() -> tuple[Headline, ...]:
    return tuple(_recorded)


def _met_cell(met: bool | None) -> str:
    return "-" if met is None else ("yes" if met else "NO")


def print_summary() -> None:
    """The one table of every headline row recorded so far (nothing when no benchmark recorded one)."""
    if not _recorded:
        return
    table(f"Issue 33 headline rows from this run; {os.cpu_count()} cores, load average now "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}",
          ["area", "row", "Trellis", "peer", "ratio", "goal", "met?", "load"],
          [[h.area, h.row, h.trellis, h.peer, h.ratio, h.goal, _met_cell(h.met), f"{h.load:.1f}"]
           for h in _recorded],
          "ratio = peer / Trellis (higher is better for Trellis) or Trellis / goal; load = 1-minute load average when "
          "the row was measured. Peers: LangGraph 1.2.24 (in memory), its SqliteSaver (durable), the engine alone "
          "(through the worker).")

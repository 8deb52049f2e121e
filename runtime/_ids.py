"""Identifier factories for runs, frames, lineages, activations, scopes and interrupts.

Identifiers look like ``act_1234567890123``: a kind prefix and thirteen
digits. The engine numbers every identifier it mints within a run
(``RunState.id_seq``) and hands that number to the factory, so a
deterministic factory can derive ids from the persisted run alone: a run that
is checkpointed, reloaded in another process and resumed mints exactly the ids
an uninterrupted run would have minted.
"""

from __future__ import annotations

import os
import random
import threading
from typing import Protocol, runtime_checkable

#: Prefixes of the identifiers the engine mints.
KINDS = ("run", "frame", "lineage", "act", "scope", "int")

_DIGITS = 13
_LOW: int = 10 ** (_DIGITS - 1)
_HIGH: int = 10**_DIGITS
_SPAN: int = _HIGH - _LOW


@runtime_checkable
class IdFactory(Protocol):
    def run_id(self) -> str:
        """A fresh run id (``run_…``)."""
        ...

    def new(self, kind: str, seq: int) -> str:
        """The id of the ``seq``-th identifier minted in a run (``kind`` is one of ``KINDS``)."""
        ...


class RandomIds:
    """Random thirteen-digit ids: what production runs use."""

    def __init__(self, seed: int | None = None) -> None:
        self._rng = random.Random(seed if seed is not None else int.from_bytes(os.urandom(16), "big"))

    def _digits(self) -> int:
        # random() is one C call (atomic under the GIL), several times cheaper than randrange;
        # its 53 bits cover the 13-digit range evenly enough for identifiers.
        return _LOW + int(self._rng.random() * _SPAN)

    def run_id(self) -> str:
        return f"run_{self._digits()}"

    def new(self, kind: str, seq: int) -> str:
        # _digits() written out: the engine mints two ids per foreach item.
        return f"{kind}_{_LOW + int(self._rng.random() * _SPAN)}"


class SequentialIds:
    """Deterministic ids for tests and reproducible debugging.

    Run ids count per factory instance; every other id is the run's own mint
    counter, so it depends on nothing but the run's history.
    """

    def __init__(self, first_run: int = 1) -> None:
        self._next_run = first_run
        self._lock = threading.Lock()

    def run_id(self) -> str:
        with self._lock:
            number = self._next_run
            self._next_run += 1
        return f"run_{number:0{_DIGITS}d}"

    def new(self, kind: str, seq: int) -> str:
        return f"{kind}_{seq:0{_DIGITS}d}"

"""Benchmarks: each bench/bench_*.py module exposes main(); `python -m bench` runs them all."""

from __future__ import annotations

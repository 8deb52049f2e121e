"""Test support shipped with the runtime (imported by test suites, never by the engine itself)."""

from __future__ import annotations

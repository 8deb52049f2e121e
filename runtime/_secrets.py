"""Secrets in bindings: a binding names a secret, the payload holds a ``SecretRef``, and only the step that uses it
sees the value.

``build_payload`` puts a ``SecretRef`` where the value goes, so everything the engine records of a payload (the
``node_started`` event, a step executor's call before it is revealed) shows ``secret <name>``. Just before a task
runs, ``reveal`` swaps each reference for its value from the engine's ``SecretResolver``, for that call only
(``Work`` is never persisted); afterwards ``scrub`` replaces every revealed value found in the task's result, error
and retry messages with ``secret <name>``, so a task that echoes its key cannot write it into state, the trace or
the run's error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from runtime._diagnostics import Diagnostic
from runtime._errors import WorkflowError

#: A secret's name: what a binding writes and what a team's secrets are called.
SECRET_NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
#: Where a template puts the value, e.g. ``"Bearer {secret}"``.
PLACEHOLDER: Final = "{secret}"


class SecretNotFoundError(WorkflowError):
    """A binding names a secret the run's secrets do not hold (or the engine was given none)."""

    code = "secret.unknown"


class SecretResolver(Protocol):
    """Gives a secret's value by name, for one step of one node; raises ``SecretNotFoundError`` when unknown."""

    def reveal(self, name: str, *, node_id: str) -> str: ...


@dataclass(frozen=True, slots=True)
class SecretRef:
    """Where a secret's value goes in a payload, until the step runs."""

    name: str
    template: str | None = None

    def __str__(self) -> str:
        return shown(self.name)


def shown(name: str) -> str:
    """How a secret appears anywhere but the step that uses it."""
    return f"secret {name}"


class MappingSecrets:
    """A ``SecretResolver`` over a plain mapping (tests, scripts, the command line)."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self._values = dict(values)

    def reveal(self, name: str, *, node_id: str) -> str:
        if name not in self._values:
            raise SecretNotFoundError(f"node {node_id!r} uses secret {name!r}, which is not defined; add it, or "
                                      f"bind another", node_id=node_id, secret=name)
        return self._values[name]


def holds_secrets(value: Any) -> bool:
    if type(value) is SecretRef:
        return True
    if isinstance(value, Mapping):
        return any(holds_secrets(item) for item in value.values())
    if isinstance(value, list | tuple):
        return any(holds_secrets(item) for item in value)
    return False


def reveal(payload: Any, resolver: SecretResolver | None, *, node_id: str) -> tuple[Any, dict[str, str]]:
    """``payload`` with each ``SecretRef`` replaced by its value, and the values revealed (by the text the task
    received, to scrub later)."""
    revealed: dict[str, str] = {}

    def walk(value: Any) -> Any:
        if type(value) is SecretRef:
            if resolver is None:
                raise SecretNotFoundError(f"node {node_id!r} uses secret {value.name!r}, but this engine was given "
                                          "no secrets (EngineOptions(secrets=...))",
                                          node_id=node_id, secret=value.name)
            plain = resolver.reveal(value.name, node_id=node_id)
            text = value.template.replace(PLACEHOLDER, plain) if value.template else plain
            if plain:
                revealed[plain] = value.name
            return text
        if isinstance(value, Mapping):
            return {key: walk(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [walk(item) for item in value]
        return value

    return walk(payload), revealed


def conceal(value: Any) -> Any:
    """``value`` with each ``SecretRef`` as the text that names it (for payloads that are stored, not run)."""
    if type(value) is SecretRef:
        return str(value)
    if isinstance(value, Mapping):
        return {key: conceal(item) for key, item in value.items()} if holds_secrets(value) else value
    if isinstance(value, list | tuple):
        return [conceal(item) for item in value] if holds_secrets(value) else value
    return value


def scrub(value: Any, revealed: Mapping[str, str]) -> Any:
    """``value`` with every revealed secret inside its strings (keys too) shown as ``secret <name>``."""
    if not revealed:
        return value
    if isinstance(value, str):
        for plain, name in revealed.items():
            if plain in value:
                value = value.replace(plain, shown(name))
            escaped = json.dumps(plain)[1:-1]  # as it appears inside a JSON text the task returned
            if escaped != plain and escaped in value:
                value = value.replace(escaped, shown(name))
        return value
    if isinstance(value, Mapping):
        return {scrub(key, revealed): scrub(item, revealed) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(item, revealed) for item in value]
    return value


def scrub_error(exc: BaseException, revealed: Mapping[str, str]) -> BaseException:
    """The same exception with no revealed secret left in its message, details or arguments (its cause chain
    too, which an error's description may quote)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        current.args = tuple(scrub(arg, revealed) for arg in current.args)
        if isinstance(current, WorkflowError):
            current.message = scrub(current.message, revealed)
            current.details = scrub(current.details, revealed)
        current = current.__cause__ or current.__context__
    return exc


def secret_diagnostics(workflow: Any, known: Collection[str]) -> list[Diagnostic]:
    """A ``binding.unknown_secret`` error for each binding of ``workflow`` naming a secret not in ``known`` (the
    secrets of the workflow's team, which only its host knows): the run would fail at that step."""
    found: list[Diagnostic] = []
    for node in workflow.nodes:
        for binding in getattr(node, "input", None) or ():
            name = binding.secret
            if name is None or name in known:
                continue
            field = f"input.{binding.target}" if binding.target.parts else "input"
            offered = ", ".join(sorted(known)[:10]) or "none yet"
            found.append(Diagnostic(
                "binding.unknown_secret", "error", node.id, field,
                f"node {node.id!r} binds secret {name!r} to {str(binding.target)!r}, but the team has no secret of "
                f"that name", hint=f"add it on the team's Secrets page, or bind one the team has ({offered})",
                data={"secret": name}))
    return found

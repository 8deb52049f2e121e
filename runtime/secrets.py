"""Secrets in bindings, as a host gives them to the engine.

A binding ``{"target": "headers.Authorization", "secret": "api_key", "template": "Bearer {secret}"}`` puts the
value of the secret ``api_key`` into the step's payload; the host passes ``EngineOptions(secrets=...)`` a
``SecretResolver`` (or a plain mapping, wrapped in ``MappingSecrets``). The value reaches only the task that uses
it: the trace, RunState, results and errors show ``secret api_key`` instead. ``secret_diagnostics`` checks a
document's secret names against those a host knows (``binding.unknown_secret``).
"""

from __future__ import annotations

from runtime._secrets import SECRET_NAME, MappingSecrets, SecretNotFoundError, SecretResolver, secret_diagnostics

__all__ = ["SECRET_NAME", "MappingSecrets", "SecretNotFoundError", "SecretResolver", "secret_diagnostics"]

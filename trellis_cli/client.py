"""The few API calls the folder commands make, over ``urllib`` with a bearer token."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any


class ApiError(Exception):
    """The server refused a call: its status and the API's ``{code, message}``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class Client:
    url: str  # the site's root, e.g. http://127.0.0.1:8000
    token: str
    timeout: float = 30.0

    def call(self, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None) -> Any:
        address = f"{self.url.rstrip('/')}/api/{path.lstrip('/')}"
        if query:
            address += "?" + urllib.parse.urlencode(query)
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(address, data=data, method=method, headers={
            "Authorization": f"Bearer {self.token}", "Accept": "application/json",
            **({"Content-Type": "application/json"} if data is not None else {}),
        })
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 - the user's URL
                raw = response.read()
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                problem = json.loads(raw)
            except ValueError:
                problem = {}
            problem = problem if isinstance(problem, dict) else {}
            raise ApiError(exc.code, str(problem.get("code") or "http.error"),
                           str(problem.get("message") or problem.get("detail") or raw[:200].decode(errors="replace"))
                           ) from None
        except urllib.error.URLError as exc:
            raise ApiError(0, "connection.failed", f"cannot reach {self.url}: {exc.reason}") from None
        return json.loads(raw) if raw else None

    def workflows(self, team: int) -> list[dict[str, Any]]:
        # The team's own workflows: those other teams share with it are theirs to keep in their folders.
        return [w for w in self.call("GET", "workflows/", query={"team": team}) if w.get("team") == team]

    def document(self, workflow_id: int) -> dict[str, Any]:
        return self.call("GET", f"workflows/{workflow_id}/document/")

    def versions(self, workflow_id: int) -> list[dict[str, Any]]:
        return self.call("GET", f"workflows/{workflow_id}/versions/")

    def save(self, workflow_id: int, revision: int, document: dict[str, Any]) -> dict[str, Any]:
        return self.call("PUT", f"workflows/{workflow_id}/document/", {"revision": revision, "document": document})

    def rename(self, workflow_id: int, name: str, description: str) -> dict[str, Any]:
        return self.call("PATCH", f"workflows/{workflow_id}/", {"name": name, "description": description})

    def create(self, team: int, name: str, description: str, document: dict[str, Any]) -> dict[str, Any]:
        return self.call("POST", "workflows/", {"team": team, "name": name, "description": description,
                                                "document": document})

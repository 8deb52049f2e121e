"""One file per workflow: what it is on the server (id, team, revision), its versions' notes, and its document.

The text is stable: keys sorted, two-space indent, one trailing newline, so pulling twice writes the same bytes
and git shows only real changes. ``versions`` is read-only history (pushing never changes it).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT = 1


class FileError(Exception):
    """A workflow file that cannot be read: which file and what is wrong with it."""


@dataclass(frozen=True, slots=True)
class WorkflowFile:
    name: str
    document: dict[str, Any]
    team: int | None = None
    id: int | None = None  # None: a new workflow, created by push
    slug: str = ""
    description: str = ""
    revision: int | None = None
    versions: list[dict[str, Any]] = field(default_factory=list)
    # The digest of what the file held when it was last pulled or pushed: a document that no longer matches it
    # was edited here, and pull will not overwrite it.
    pulled: str = ""

    @property
    def edited(self) -> bool:
        return self.id is not None and digest(self.document, self.name, self.description) != self.pulled

    def text(self) -> str:
        body = {
            "trellis": FORMAT,
            "workflow": {"id": self.id, "team": self.team, "slug": self.slug, "name": self.name,
                         "description": self.description, "revision": self.revision,
                         "pulled_sha256": digest(self.document, self.name, self.description)},
            "versions": self.versions,
            "document": self.document,
        }
        return json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def digest(document: dict[str, Any], name: str, description: str) -> str:
    canonical = json.dumps([document, name, description], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def file_name(workflow: WorkflowFile) -> str:
    stem = re.sub(r"[^a-z0-9-]+", "-", (workflow.slug or workflow.name).lower()).strip("-") or "workflow"
    return f"{stem}.json"


def read(path: Path) -> WorkflowFile:
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise FileError(f"{path}: not a workflow file ({exc})") from None
    if not isinstance(body, dict) or body.get("trellis") != FORMAT:
        raise FileError(f"{path}: not a workflow file of format {FORMAT} (its 'trellis' key says which)")
    meta, document = body.get("workflow"), body.get("document")
    if not isinstance(meta, dict) or not isinstance(document, dict):
        raise FileError(f"{path}: 'workflow' and 'document' must both be JSON objects")
    name = meta.get("name")
    if not isinstance(name, str) or not name.strip():
        raise FileError(f"{path}: workflow.name must be a non-empty string")
    for key in ("id", "team", "revision"):
        if meta.get(key) is not None and (not isinstance(meta[key], int) or isinstance(meta[key], bool)):
            raise FileError(f"{path}: workflow.{key} must be a whole number or null")
    if meta.get("id") is not None and meta.get("revision") is None:
        raise FileError(f"{path}: workflow.revision is missing: push needs the revision the file was pulled at")
    versions = body.get("versions") or []
    return WorkflowFile(name=name, document=document, team=meta.get("team"), id=meta.get("id"),
                        slug=str(meta.get("slug") or ""), description=str(meta.get("description") or ""),
                        revision=meta.get("revision"), versions=versions if isinstance(versions, list) else [],
                        pulled=str(meta.get("pulled_sha256") or ""))


def read_folder(folder: Path) -> dict[Path, WorkflowFile]:
    return {path: read(path) for path in sorted(folder.glob("*.json"))}

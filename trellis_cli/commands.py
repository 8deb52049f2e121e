"""``pull``, ``diff`` and ``push``: a team's workflows as a folder of files.

Exit status: 0 when everything asked was done (``diff --exit-code``: and nothing differs), 1 when some
workflow was refused or differs, 2 for a usage or connection error. Each refusal names the file and the reason.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from trellis_cli.client import ApiError, Client
from trellis_cli.files import FileError, WorkflowFile, file_name, read_folder


def _versions(client: Client, workflow_id: int) -> list[dict[str, Any]]:
    rows = client.versions(workflow_id)
    keep = ("number", "published_at", "published_by", "note")
    return sorted(({key: row.get(key) for key in keep} for row in rows), key=lambda row: row["number"])


def _remote(client: Client, row: dict[str, Any]) -> WorkflowFile:
    body = client.document(row["id"])
    return WorkflowFile(name=row["name"], description=row.get("description") or "", document=body["document"],
                        team=row["team"], id=row["id"], slug=row.get("slug") or "", revision=body["revision"],
                        versions=_versions(client, row["id"]))


def pull(client: Client, folder: Path, team: int, *, force: bool, out: TextIO) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    local: dict[int | None, tuple[Path, WorkflowFile | None]] = {
        wf.id: (path, wf) for path, wf in read_folder(folder).items() if wf.id is not None}
    refused = 0
    for row in sorted(client.workflows(team), key=lambda row: row["id"]):
        remote = _remote(client, row)
        path, mine = local.get(remote.id, (folder / file_name(remote), None))
        same = mine is not None and (mine.document, mine.name, mine.description) == (
            remote.document, remote.name, remote.description)
        if mine is not None and not force and mine.edited and not same:
            out.write(f"{path.name}: not pulled, it has changes not pushed (pulled at revision {mine.revision}, the "
                      f"server is at {remote.revision}): push them, or pull --force to drop them\n")
            refused += 1
            continue
        text = remote.text()
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        path.write_text(text, encoding="utf-8")
        out.write(f"{path.name}: {remote.name} at revision {remote.revision}\n")
    return 1 if refused else 0


def _dump(value: Any) -> list[str]:
    return (json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n").splitlines(keepends=True)


def diff(client: Client, folder: Path, *, out: TextIO) -> int:
    differs = 0
    for path, mine in read_folder(folder).items():
        if mine.id is None:
            out.write(f"{path.name}: new workflow {mine.name!r}; push creates it\n")
            differs += 1
            continue
        try:
            body = client.document(mine.id)
            row = client.call("GET", f"workflows/{mine.id}/")
        except ApiError as exc:
            out.write(f"{path.name}: {exc.message}\n")
            differs += 1
            continue
        theirs = {"name": row["name"], "description": row.get("description") or "", "document": body["document"]}
        ours = {"name": mine.name, "description": mine.description, "document": mine.document}
        if theirs == ours:
            continue
        differs += 1
        if body["revision"] != mine.revision:
            out.write(f"{path.name}: the server's draft is at revision {body['revision']}, this file at "
                      f"{mine.revision}: someone saved since you pulled\n")
        out.writelines(difflib.unified_diff(_dump(theirs), _dump(ours), f"server/{path.name}", f"local/{path.name}"))
    return 1 if differs else 0


def push(client: Client, folder: Path, *, team: int | None, out: TextIO) -> int:
    refused = 0
    for path, mine in read_folder(folder).items():
        try:
            if mine.id is None:
                owner = mine.team if mine.team is not None else team
                if owner is None:
                    raise ApiError(0, "team.missing", "a new workflow needs a team: set workflow.team or --team")
                row = client.create(owner, mine.name, mine.description, mine.document)
                saved = _remote(client, row)
                path.write_text(saved.text(), encoding="utf-8")
                out.write(f"{path.name}: created workflow {saved.id} at revision {saved.revision}\n")
                continue
            row = client.call("GET", f"workflows/{mine.id}/")
            body = client.document(mine.id)
            changed = False
            if body["document"] != mine.document:
                if body["revision"] != mine.revision:
                    raise ApiError(409, "revision.conflict",
                                   f"the server's draft is at revision {body['revision']} and this file was pulled "
                                   f"at {mine.revision}: pull (or diff) and merge first; nothing was saved")
                client.save(mine.id, mine.revision or 0, mine.document)
                changed = True
            if (row["name"], row.get("description") or "") != (mine.name, mine.description):
                client.rename(mine.id, mine.name, mine.description)
                changed = True
            if changed:
                saved = _remote(client, client.call("GET", f"workflows/{mine.id}/"))
                path.write_text(saved.text(), encoding="utf-8")
                out.write(f"{path.name}: saved, now revision {saved.revision}\n")
        except ApiError as exc:
            out.write(f"{path.name}: not pushed: {exc.message} ({exc.code})\n")
            refused += 1
    return 1 if refused else 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m trellis_cli", description=__doc__.split("\n")[0])
    parser.add_argument("--url", default=os.environ.get("TRELLIS_URL", "http://127.0.0.1:8000"),
                        help="the site's address (default: $TRELLIS_URL or http://127.0.0.1:8000)")
    parser.add_argument("--token", default=os.environ.get("TRELLIS_TOKEN", ""),
                        help="a personal access token from Settings (default: $TRELLIS_TOKEN)")
    commands = parser.add_subparsers(dest="command", required=True)
    pulling = commands.add_parser("pull", help="write the team's workflows into FOLDER, one file each")
    pulling.add_argument("folder", type=Path)
    pulling.add_argument("--team", type=int, required=True, help="the team's id")
    pulling.add_argument("--force", action="store_true", help="overwrite files with changes not pushed")
    diffing = commands.add_parser("diff", help="show what pushing FOLDER would change")
    diffing.add_argument("folder", type=Path)
    pushing = commands.add_parser("push", help="save each changed workflow of FOLDER through the API")
    pushing.add_argument("folder", type=Path)
    pushing.add_argument("--team", type=int, default=None, help="the team new workflows go to")
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    args = _parser().parse_args(argv)
    out = out or sys.stdout
    if not args.token:
        out.write("no token: pass --token or set TRELLIS_TOKEN (create one in Settings > API tokens)\n")
        return 2
    client = Client(args.url, args.token)
    try:
        if args.command == "pull":
            return pull(client, args.folder, args.team, force=args.force, out=out)
        if args.command == "diff":
            return diff(client, args.folder, out=out)
        return push(client, args.folder, team=args.team, out=out)
    except (ApiError, FileError) as exc:
        out.write(f"{exc}\n")
        return 2


__all__ = ["diff", "main", "pull", "push"]

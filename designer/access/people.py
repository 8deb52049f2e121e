"""How a person is named to others: in the editor's presence list, on a change in the draft's log, in a conflict."""

from __future__ import annotations

from typing import Any


def display_name(user: Any) -> str:
    """The person's full name, else their username; "Someone" for no one (a deleted account)."""
    if user is None:
        return "Someone"
    full = f"{user.first_name} {user.last_name}".strip()
    return full or user.get_username()

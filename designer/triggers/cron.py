"""The cron expressions a schedule takes: one grammar, stated as a regular expression so the OpenAPI schema
publishes exactly what the server accepts (the API's ``cron`` field carries ``CRON_PATTERN``; the schedule
service checks every expression, from the API or the page, against the same pattern).

Five fields, separated by whitespace: minute (0-59), hour (0-23), day of month (1-31, ``L`` last day, ``LW``
last weekday), month (1-12 or JAN-DEC) and day of week (0-7 or SUN-SAT, 0 and 7 are Sunday; ``5L`` the last
Friday, ``MON#2`` the second Monday). A field is ``*`` or a comma-separated list of values and ranges
(``1-5``), each optionally with a step (``*/15``, ``0-30/10``); names in any case.

What a pattern cannot say is checked after it (``impossibility``): a range that runs backwards (``5-3``) and a
day that none of the chosen months has (``30 2``) fit the grammar but can never be meant; the API answers them
422, like any well-formed request whose content is refused.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Final

from cronsim import CronSim, CronSimError

FIELDS: Final = ("minute", "hour", "day-of-month", "month", "day-of-week")
MONTHS: Final = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
DAYS: Final = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")


def _any_case(name: str) -> str:
    return "".join(f"[{char}{char.lower()}]" for char in name)


def _names(names: tuple[str, ...]) -> str:
    return "|".join(_any_case(name) for name in names)


_STEP: Final = "/[1-9][0-9]?"
_NUMBER: Final = {
    "minute": "[0-5]?[0-9]",
    "hour": "[01]?[0-9]|2[0-3]",
    "day-of-month": "0?[1-9]|[12][0-9]|3[01]",
    "month": f"0?[1-9]|1[0-2]|{_names(MONTHS)}",
    "day-of-week": f"[0-7]|{_names(DAYS)}",
}


def _field(name: str) -> str:
    value = f"(?:{_NUMBER[name]})"
    item = rf"(?:\*|{value}(?:-{value})?)(?:{_STEP})?"
    if name == "day-of-month":
        item = f"(?:{item}|[Ll][Ww]?)"
    elif name == "day-of-week":
        item = f"(?:{item}|[0-7][Ll]|{value}#[1-5])"
    return f"{item}(?:,{item})*"


#: The grammar as a JSON Schema / ECMAScript pattern (also valid for Python's ``re``), anchored at both ends.
CRON_PATTERN: Final = r"^\s*" + r"\s+".join(_field(name) for name in FIELDS) + r"\s*$"
_CRON_RE: Final = re.compile(CRON_PATTERN)

CRON_FORMAT: Final = (
    "five fields separated by spaces: minute (0-59), hour (0-23), day of month (1-31, L, LW), month (1-12 or "
    "JAN-DEC), day of week (0-7 or SUN-SAT, 5L, MON#2); each * or a comma-separated list of values and ranges, "
    "each optionally /step; e.g. '0 9 * * 1-5' (09:00 on weekdays), '*/15 * * * *'")


def fits_grammar(expression: str) -> bool:
    return _CRON_RE.fullmatch(expression) is not None


def grammar_problem(expression: str) -> str:
    """Why ``expression`` does not fit the grammar, as precisely as can be said (call when it does not fit)."""
    fields = expression.split()
    if len(fields) != len(FIELDS):
        return (f"{expression!r} has {len(fields)} field{'s' if len(fields) != 1 else ''}; a cron expression has "
                f"five: minute hour day-of-month month day-of-week")
    for name, text in zip(FIELDS, fields, strict=True):
        if re.fullmatch(_field(name), text) is None:
            return f"{expression!r} is not a cron expression: the {name} field {text!r} is not valid ({CRON_FORMAT})"
    return f"{expression!r} is not a cron expression ({CRON_FORMAT})"


def _value(field: str, text: str) -> int:
    upper = text.upper()
    if field == "month" and upper in MONTHS:
        return MONTHS.index(upper) + 1
    if field == "day-of-week" and upper in DAYS:
        return DAYS.index(upper)
    return int(upper)


def impossibility(expression: str, now: datetime) -> str | None:
    """For an expression that fits the grammar: why it can never fire, or None when it fires."""
    fields = expression.split()
    for field, text in zip(FIELDS, fields, strict=True):
        for item in text.split(","):
            base = item.split("/", 1)[0]
            if "-" in base:
                start, end = (_value(field, part) for part in base.split("-", 1))
                if end < start:
                    return (f"{expression!r}: the {field} range {base} runs backwards; "
                            f"write the smaller end first, e.g. {base.split('-', 1)[1]}-{base.split('-', 1)[0]}")
    try:
        next(CronSim(" ".join(fields), now))
    except CronSimError as exc:
        if str(exc) == "Bad day-of-month":
            return (f"{expression!r} never fires: no month in {fields[3]!r} has a day {fields[2]!r} "
                    "(April, June, September and November have 30 days, February 29 at most)")
        return f"{expression!r} never fires: {exc}"
    except StopIteration:
        return f"{expression!r} never fires"
    return None

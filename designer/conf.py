"""Every ``TRELLIS_*`` setting in one place: its name, type, default and one line of documentation.

Code reads a setting as an attribute of ``trellis`` (``trellis.STEP_PROCESSES``), never with ``getattr(settings,
...)`` or ``os.environ``: the value comes from the Django settings when they define it (a settings module,
``override_settings``, pytest-django's ``settings`` fixture), else the default below, and is checked at its first
read. The checked value is kept until Django says the setting changed (``setting_changed``, which
``override_settings`` and the ``settings`` fixture send): a worker read some twenty-five settings a run, each
checked again (issue 33). ``designer/settings.py`` fills the Django settings from the environment
(``from_environ``) and ``DesignerConfig.ready`` checks every value (``check_all``), so a bad value (a negative
timeout, a word where a number belongs) stops the process at start-up with a message that names the setting.

The README's settings table is generated from ``SETTINGS`` (``manage.py trellis_settings``) and a test keeps
the two the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast, overload

from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed

from runtime.checkpoint import HistoryPolicy

PREFIX = "TRELLIS_"


class _Invalid(ValueError):
    """A value a kind cannot accept; ``Setting`` adds the setting's name."""


@dataclass(frozen=True, slots=True)
class Kind[T]:
    """How one type of setting is read from text (the environment) or checked as a Python value."""

    describe: str  # what a good value is, for error messages
    clean: Callable[[object], T]
    #: The environment's text as a settings module would give the value (a list is split at commas).
    from_text: Callable[[str], object] = str


def _number(value: object, *, integer: bool) -> float:
    if isinstance(value, bool):
        raise _Invalid("a boolean is not a number")
    if isinstance(value, str):
        try:
            return int(value.strip()) if integer else float(value.strip())
        except ValueError:
            raise _Invalid(f"{value!r} is not a{'n integer' if integer else ' number'}") from None
    if integer and isinstance(value, int):
        return value
    if not integer and isinstance(value, int | float):
        return float(value)
    raise _Invalid(f"{value!r} is not a{'n integer' if integer else ' number'}")


def _at_least(minimum: float, number: float) -> None:
    if number != number or number in (float("inf"), float("-inf")):
        raise _Invalid(f"{number!r} is not a finite number")
    if number < minimum:
        raise _Invalid(f"{number!r} is below {minimum:g}")


def count(minimum: int = 0) -> Kind[int]:
    def clean(value: object) -> int:
        number = int(_number(value, integer=True))
        _at_least(minimum, number)
        return number

    return Kind(f"a whole number >= {minimum}", clean)


def seconds(*, positive: bool = False) -> Kind[float]:
    def clean(value: object) -> float:
        number = _number(value, integer=False)
        _at_least(0, number)
        if positive and number == 0:
            raise _Invalid("0 is not above 0")
        return number

    return Kind(f"a number of seconds {'> 0' if positive else '>= 0'}", clean)


def limit[T](base: Kind[T]) -> Kind[T | None]:
    """A cap where ``0`` means none: reads as None then."""

    def clean(value: object) -> T | None:
        cleaned = base.clean(value)
        return None if cleaned == 0 else cleaned

    return Kind(f"{base.describe} (0: no limit)", clean, base.from_text)


def optional[T](base: Kind[T]) -> Kind[T | None]:
    """Unset (None, or empty text) reads as None: the reader derives a value."""

    def clean(value: object) -> T | None:
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        return base.clean(value)

    return Kind(f"{base.describe}, or empty", clean, base.from_text)


_SWITCH_WORDS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False,
                 "off": False}


def switch() -> Kind[bool]:
    """On or off: a boolean, or its word (``on``/``off``, ``true``/``false``, ``yes``/``no``, ``1``/``0``)."""

    def clean(value: object) -> bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _SWITCH_WORDS:
            return _SWITCH_WORDS[value.strip().lower()]
        raise _Invalid(f"{value!r} is neither on nor off")

    return Kind("on or off (on/off, true/false, yes/no, 1/0)", clean)


def text() -> Kind[str]:
    def clean(value: object) -> str:
        if not isinstance(value, str):
            raise _Invalid(f"{value!r} is not text")
        return value.strip()

    return Kind("text", clean)


def port() -> Kind[int | None]:
    """A TCP port, ``0`` (or empty) for none."""

    def clean(value: object) -> int | None:
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        number = int(_number(value, integer=True))
        _at_least(0, number)
        if number > 65535:
            raise _Invalid(f"{number!r} is above 65535")
        return number or None

    return Kind("a TCP port (0: none)", clean)


def trace_exporter() -> Kind[str]:
    """Where spans go: ``otlp``, ``console``, ``file:<path>`` (JSON lines), ``off``, or empty (the default)."""

    def clean(value: object) -> str:
        if not isinstance(value, str):
            raise _Invalid(f"{value!r} is not text")
        value = value.strip()
        if value in ("", "off", "otlp", "console") or (value.startswith("file:") and len(value) > 5):
            return value
        raise _Invalid(f"{value!r} is none of otlp, console, file:<path>, off")

    return Kind("otlp, console, file:<path>, off, or empty", clean)


def _split(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def names_list() -> Kind[list[str]]:
    def clean(value: object) -> list[str]:
        if isinstance(value, list | tuple):
            return [str(item) for item in value]
        raise _Invalid(f"{value!r} is not a list (in the environment: comma-separated)")

    return Kind("a list of names (in the environment: comma-separated)", clean, _split)


def _history(value: object) -> HistoryPolicy | None:
    try:
        return HistoryPolicy.parse(value)
    except ValueError as exc:
        raise _Invalid(str(exc)) from None


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise _Invalid(f"{value!r} is not text")
    return value


TEXT: Kind[str] = Kind("text", _text)
HISTORY: Kind[HistoryPolicy | None] = Kind("'all', N, either with '-until-end', or 'none'", _history)


class Setting[T]:
    """One ``TRELLIS_<NAME>`` setting, declared as a class attribute of ``TrellisSettings``."""

    name: str

    def __init__(self, kind: Kind[T], default: object, doc: str, *, shown_default: str | None = None,
                 read_by_runtime: bool = False, read_by_web_server: bool = False) -> None:
        self.kind = kind
        self.default = default  # in the form a settings module gives it; cleaned on read like any value
        self.doc = doc
        self.shown_default = shown_default
        # The framework-free runtime reads these from the environment itself; they are declared (documented
        # and checked) here all the same.
        self.read_by_runtime = read_by_runtime
        # Gunicorn reads its settings (designer/gunicorn_conf.py) before Django starts: from the environment too.
        self.read_by_web_server = read_by_web_server

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = PREFIX + name

    @overload
    def __get__(self, instance: None, owner: type) -> Setting[T]: ...

    @overload
    def __get__(self, instance: object, owner: type) -> T: ...

    def __get__(self, instance: object | None, owner: type) -> Setting[T] | T:
        if instance is None:
            return self
        return self.value()

    def value(self) -> T:
        """The current value: the Django setting if defined, else the default; checked (once: ``_checked``)."""
        try:
            kept = _checked[self.name]
        except KeyError:
            kept = _checked[self.name] = self.clean(getattr(django_settings, self.name, self.default),
                                                    source="settings")
        # A list is the caller's to change: a copy, so the kept value stays the setting's.
        return cast(T, list(kept)) if isinstance(kept, list) else cast(T, kept)

    def clean(self, raw: object, *, source: str) -> T:
        try:
            return self.kind.clean(raw)
        except _Invalid as exc:
            raise ImproperlyConfigured(
                f"{self.name} (from the {source}) must be {self.kind.describe}: {exc}") from None

    def default_text(self) -> str:
        if self.shown_default is not None:
            return self.shown_default
        if self.default in (None, "", [], ()):
            return "empty"
        return f"`{self.default}`"


#: Each setting's checked value, by name, since its first read; a bad value is never kept (it raises each read).
_checked: dict[str, Any] = {}


def _forget(*, setting: str, **kwargs: Any) -> None:
    """``setting_changed``'s receiver: the setting is checked again at its next read."""
    if setting.startswith(PREFIX):
        _checked.pop(setting, None)


setting_changed.connect(_forget, dispatch_uid="designer.conf.forget")


class TrellisSettings:
    """The settings, read as attributes: ``trellis.RUN_MAX_ATTEMPTS``."""

    # --- database ---
    DB_IDLE_IN_TRANSACTION_SECONDS = Setting(
        seconds(), 60,
        "PostgreSQL ends a session of ours that stalls inside a transaction after this long, releasing its row "
        "locks")
    DB_PREPARED_STATEMENTS = Setting(
        switch(), "on",
        "PostgreSQL plans the statements every run makes once per connection (prepared statements); turn off "
        "behind a connection pooler in transaction mode that does not carry them (PgBouncer before 1.21)")
    TEST_DB = Setting(
        optional(TEXT), None,
        "SQLite test database path (on PostgreSQL pytest-django makes `test_<name>` databases; the role needs "
        "`CREATEDB`)", shown_default="a per-process file in the temp dir")
    # --- runs ---
    RUN_LEASE_SECONDS = Setting(
        seconds(positive=True), 30,
        "how long a worker's claim on a run lasts without renewal; a run whose worker died is re-queued after it")
    RECOVERY_INTERVAL_SECONDS = Setting(
        optional(seconds(positive=True)), None,
        "seconds between recovery sweeps (re-queueing runs whose worker died, lost schedule ticks; see "
        "\"Deployment\")", shown_default="half the lease, at least `0.5`")
    SWEEP_RETENTION_SECONDS = Setting(
        seconds(), 86_400,
        "finished recovery-sweep task rows older than this are deleted by the sweep (one a sweep, thousands a "
        "day); `0` deletes every finished one")
    RETENTION_DAYS = Setting(
        count(), 90,
        "finished runs (completed, failed, cancelled) older than this many days are deleted with their trace, "
        "checkpoint history and batches by the periodic prune; a team's own policy (admin) overrides it; `0` keeps "
        "them however old")
    RETENTION_RUNS = Setting(
        count(), 0,
        "besides the age limit, each team keeps at most this many finished runs (the newest); a team's own policy "
        "overrides it; `0`: no count limit")
    RETENTION_TASK_DAYS = Setting(
        count(1), 7, "finished task rows of the queue (runs, batches, ticks, trials) older than this many days are "
        "deleted by the periodic prune; a live run's own row is always kept")
    RETENTION_INTERVAL_SECONDS = Setting(
        seconds(positive=True), 3600, "how often the recovery sweep also prunes by the retention policies (one "
        "worker at a time; a prune deletes at most 1,000 runs, the next goes on)")
    RUN_MAX_ATTEMPTS = Setting(count(1), 5, "workers that may die on one run before it is failed")
    RUN_MAX_RETRY_DELAY_SECONDS = Setting(
        limit(seconds()), 86_400,
        "total backoff one node's retry policy may ask for (the waits before all of its attempts added up); a "
        "document over it gets the `retry.delay_too_long` diagnostic on the node's `retry` in the editor and "
        "cannot be run; `0` turns the cap off (see \"Waiting without a worker\" below)")
    RUN_MAX_SECONDS = Setting(
        limit(seconds()), 0,
        "cap on a run's wall-time budget, from the start of a run attempt (a redrive starts a new one) to its "
        "end, waits for people included; a workflow's own `run_timeout_seconds` applies under it. A step still "
        "running when it is spent is stopped; the run fails with `run.timeout` through the node's error route. "
        "`0`: no cap", shown_default="`0` (no cap)")
    RUN_MAX_STEP_SECONDS = Setting(
        limit(seconds()), 14_400,
        "cap on a run's step-seconds budget: the seconds of all its task steps together, in every worker; a "
        "workflow's own `run_step_seconds` applies under it; spent, the run fails with `run.budget` through the "
        "node's error route. `0`: no cap", shown_default="`14400` (4 hours of step time)")
    RUN_MAX_STEPS = Setting(
        count(1), 100_000,
        "node steps one frame (one line of work: the run's root, one foreach item, one subgraph's root) may "
        "take before the run fails with `run.step_limit`, which names the node, the frame and the item path where "
        "a route cycle spins. It stops cycles that never end, not big runs: each foreach item is a frame of its "
        "own, so a foreach of 100k or 1M items passes")
    CHECKPOINT_HISTORY = Setting(
        HISTORY, "all",
        "past checkpoints kept per run, to fork new runs from: `all`, `N` (the last N), either with "
        "`-until-end` (dropped once the run completes or is cancelled; a failed run keeps them for redrive), "
        "or `none`. Kept in `RunCheckpoint` rows that share the write-once parts; the live `Run.run_state` "
        "never grows with them")
    FOREACH_DISTRIBUTE_ABOVE = Setting(
        count(0), 1000,
        "a foreach whose node sets `batch_size` runs its items as distributed batches (see \"Distributed "
        "foreach\") when it has more items than this; `0`: whenever it has a batch size")
    BATCH_COMMIT_SECONDS = Setting(
        seconds(), 0.5,
        "how often a running batch commits the items that have ended; a worker killed mid-batch re-runs only "
        "items it had not committed")
    # --- notifications (designer/notifications/) ---
    SITE_URL = Setting(
        TEXT, "http://127.0.0.1:8000",
        "the address people open Trellis at, for the links in notifications (a worker has no request to take it "
        "from), e.g. `https://trellis.example.com`")
    NOTIFY_MAX_ATTEMPTS = Setting(
        count(1), 5, "attempts at one notification (an email, a webhook call) before its delivery is failed")
    NOTIFY_RETRY_SECONDS = Setting(
        seconds(positive=True), 10,
        "wait before a notification's second attempt; each later wait is twice the one before")
    ANSWER_LINK_HOURS = Setting(
        count(1), 72, "hours the link in a notification can answer its interrupt (once) before it expires")
    # --- fair queues (designer/runs/fairness.py) ---
    WORKER_SLOTS = Setting(
        count(1), 2,
        "tasks (runs, foreach batches) one `run_worker` process executes at once; with more than one, a worker "
        "keeps its last free slot, and one of its step processes, for a team other than the one holding the rest "
        "(see \"Fair queues and limits\")")
    TEAM_MAX_RUNNING = Setting(
        count(0), 0,
        "tasks one team may have running at once across all workers; a team's own limit (admin) overrides it; "
        "`0`: no limit")
    WORKFLOW_MAX_RUNNING = Setting(
        count(0), 0,
        "tasks one workflow may have running at once across all workers; a team's own limit (admin) overrides "
        "it; `0`: no limit")
    # --- steps ---
    STEP_TIMEOUT_SECONDS = Setting(
        limit(seconds()), 60,
        "cap on every task step's start-to-close timeout (see \"Step limits\" below); a step still running at "
        "its limit is killed and fails with `step.timeout`; a node or workflow timeout above it gets the "
        "`step.timeout_capped` warning in the editor and the API; `0` turns the cap off")
    STEP_MAX_MEMORY_MB = Setting(
        limit(count(0)), 512,
        "memory (address space) one task step may add to its idle step process; beyond it the step fails with "
        "`step.memory` and its process is replaced; `0`: no limit")
    STEP_MAX_RESULT_BYTES = Setting(
        limit(count(0)), 2 * 1024 * 1024,
        "size of a task step's result as compact JSON; a larger result fails the step with "
        "`step.result_too_large`; `0`: no limit", shown_default="`2097152` (2 MiB)")
    STEP_PROCESSES = Setting(
        count(1), 4,
        "step processes per worker, i.e. how many task steps of one run execute at once")
    STEP_IN_WORKER_MAX_INPUT_BYTES = Setting(
        count(0), 65_536,
        "the built-ins `math`, `compare`, `length`, `set_value` and `collect` run in the worker itself, without a "
        "step process, when their input is at most this many bytes as JSON (see \"Step limits\"); `0`: every "
        "step in a step process")
    # --- documents and tasks ---
    MAX_DOCUMENT_NODES = Setting(count(1), 2000, "nodes a workflow document may have")
    LIVE_WAIT_SECONDS = Setting(
        seconds(), 10,
        "seconds the editor's live feed (others' changes and presence) holds a request open waiting for news; at "
        "most half of a web process's threads wait at once, the others answer at once; `0`: answer at once "
        "(editors then poll about once a second); keep it under `TRELLIS_WEB_TIMEOUT`")
    MAX_UPLOAD_BYTES = Setting(
        optional(count(1)), None,
        "largest multipart request body (file uploads) accepted; bigger ones are refused before they are read",
        shown_default="twice `DATA_UPLOAD_MAX_MEMORY_SIZE` (4 MiB)")
    TASK_MODULES = Setting(
        names_list(), [], "comma-separated extra modules whose `registry` joins the task catalogue")
    HTTP_ALLOWED_HOSTS = Setting(
        names_list(), [],
        "hosts the `http_request` task may reach although they resolve to loopback/private addresses (`*` for "
        "all)", read_by_runtime=True)
    # --- the web server (manage.py serve, make run) ---
    WEB_THREADS = Setting(
        count(1), 8, "threads per web server process (`manage.py serve`; processes: gunicorn's `WEB_CONCURRENCY`, "
        "default 2)", read_by_web_server=True)
    WEB_BACKLOG = Setting(
        count(1), 2048, "connections the kernel queues while every thread of the web server is busy; a burst "
        "beyond the threads waits instead of being reset", read_by_web_server=True)
    WEB_TIMEOUT = Setting(
        count(1), 60, "seconds a web request may take before gunicorn restarts its process", read_by_web_server=True)
    # --- people ---
    LOGIN_MAX_FAILURES = Setting(
        count(1), 5,
        "sign-in attempts judged for one username from one client address before further attempts of that pair are "
        "refused unjudged (HTTP 429, \"try again in N minutes\"); other addresses may still sign in as that user")
    LOGIN_MAX_ADDRESS_FAILURES = Setting(
        count(1), 20,
        "sign-in attempts judged from one client address, whatever the usernames, before that address is refused "
        "(it locks the address, never an account)")
    LOGIN_LOCKOUT_SECONDS = Setting(
        count(1), 900,
        "the window those attempts are counted in; a locked username-and-address pair or address stays refused "
        "until it ends; a successful sign-in clears the pair's count")
    INVITATION_DAYS = Setting(count(1), 14, "how long a team invitation (and its emailed link) stays open")
    INVITATIONS_PER_INVITER = Setting(
        count(1), 20, "invitations one person may send in an hour, over all their teams; more are refused (HTTP "
        "429 with Retry-After) until the oldest of them is an hour old")
    INVITATIONS_PER_ADDRESS = Setting(
        count(1), 3, "invitations one username or email address may receive in a day, from anyone; more are refused "
        "(HTTP 429), so nobody can flood someone's mailbox through Trellis")
    # --- secrets ---
    SECRET_KEYS = Setting(
        names_list(), [], "Fernet keys (comma-separated, each `Fernet.generate_key()`) that encrypt teams' secrets: "
        "the first encrypts, every one decrypts, so a new key goes first and the old one stays until `manage.py "
        "rotate_secret_keys` has re-encrypted everything; empty: one key derived from Django's SECRET_KEY (fine "
        "for development; set your own in production, where `manage.py check --deploy` warns without it)",
        shown_default="empty (derived from SECRET_KEY)")
    SCHEDULE_GRACE_SECONDS = Setting(
        seconds(), 60,
        "how late a schedule's tick may fire and still count as on time; a later one is missed (its "
        "missed-tick policy decides)")

    # --- the operator's toolbox (designer/monitoring/) ---
    WORKER_SEEN_SECONDS = Setting(
        limit(seconds()), 60,
        "`/readyz` answers 503 unless a worker (`manage.py run_worker`) renewed its heartbeat within this many "
        "seconds (workers beat every third of it, at most every 10 s); `0`: `/readyz` does not ask for a worker")
    METRICS_TOKEN = Setting(
        text(), "",
        "bearer token Prometheus must send to scrape `/metrics` on the web process (`Authorization: Bearer ...`); "
        "empty: `/metrics` is off (404), since its figures name every team",
        shown_default="empty (off)")
    WORKER_METRICS_PORT = Setting(
        port(), 0,
        "port on 127.0.0.1 where each `run_worker` process serves its own Prometheus metrics (step durations, "
        "foreach items, runs started and finished); `0`: not served",
        shown_default="`0` (off)")
    TRACES = Setting(
        trace_exporter(), "",
        "where OpenTelemetry spans go (a span per run execution, a child per step, the web request that started "
        "the run as their parent): `otlp` (OTLP over HTTP, configured by the standard `OTEL_EXPORTER_OTLP_*` "
        "variables), `console`, `file:<path>` (one JSON object a line), `off`; empty: `otlp` when "
        "`OTEL_EXPORTER_OTLP_ENDPOINT` (or `..._TRACES_ENDPOINT`) is set, else off",
        shown_default="empty (off unless `OTEL_EXPORTER_OTLP_ENDPOINT` is set)")

trellis = TrellisSettings()

#: Every setting, in declaration (and README) order.
SETTINGS: tuple[Setting[Any], ...] = tuple(
    value for value in vars(TrellisSettings).values() if isinstance(value, Setting))


def from_environ(environ: Mapping[str, str]) -> dict[str, Any]:
    """The settings the environment sets, for ``designer/settings.py`` to define: the environment's text as
    the value a settings module would give (lists split at commas), checked now, so a bad value stops start-up
    naming the variable. A variable set to nothing (``VAR=``) counts as not set."""
    found: dict[str, Any] = {}
    for setting in SETTINGS:
        text = environ.get(setting.name)
        if text is None or not text.strip():
            continue
        found[setting.name] = setting.kind.from_text(text)
        setting.clean(found[setting.name], source="environment")
    return found


def environ_value[T](setting: Setting[T], environ: Mapping[str, str]) -> T:
    """One setting as the environment gives it (else its default), for settings that shape other settings."""
    text = environ.get(setting.name)
    if text is None or not text.strip():
        return setting.clean(setting.default, source="defaults")
    return setting.clean(setting.kind.from_text(text), source="environment")


def check_all(settings: Iterable[Setting[Any]] = SETTINGS) -> None:
    """Read every setting once: the first bad one raises ``ImproperlyConfigured`` naming it."""
    for setting in settings:
        setting.value()


def markdown_table() -> str:
    """The README's table of ``TRELLIS_*`` settings."""
    rows = ["| variable | default | meaning |", "| --- | --- | --- |"]
    rows += [f"| `{setting.name}` | {setting.default_text()} | {setting.doc}"
             f"{' (environment only: the engine reads it)' if setting.read_by_runtime else ''}"
             f"{' (environment only: gunicorn reads it)' if setting.read_by_web_server else ''} |"
             for setting in SETTINGS]
    return "\n".join(rows) + "\n"


README = Path(__file__).resolve().parent.parent / "README.md"
TABLE_START = "<!-- trellis-settings: generated by `manage.py trellis_settings --write` from designer/conf.py -->\n"
TABLE_END = "<!-- /trellis-settings -->\n"


def readme_table(text: str) -> str:
    """The generated table inside the README's text (between the markers)."""
    start = text.index(TABLE_START) + len(TABLE_START)
    return text[start:text.index(TABLE_END, start)]


def write_readme_table(path: Path = README) -> None:
    text = path.read_text()
    start = text.index(TABLE_START) + len(TABLE_START)
    path.write_text(text[:start] + markdown_table() + text[text.index(TABLE_END, start):])

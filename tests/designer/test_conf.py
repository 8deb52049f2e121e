"""designer/conf.py owns every TRELLIS_* setting: the README's table is its output, every name the code uses is
declared there, no other module reads one itself, and a bad value stops start-up naming the setting."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from designer import conf
from designer.conf import trellis
from runtime.checkpoint import HistoryPolicy

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_table_is_the_one_conf_generates() -> None:
    assert conf.readme_table((ROOT / "README.md").read_text()) == conf.markdown_table(), (
        "README.md's settings table is out of date: run `python manage.py trellis_settings --write`")


def _code_files() -> list[Path]:
    return [path for folder in ("designer", "runtime") for path in (ROOT / folder).rglob("*.py")
            if "migrations" not in path.parts]


def test_every_trellis_name_in_the_code_is_declared_in_conf() -> None:
    declared = {setting.name for setting in conf.SETTINGS}
    used = {name for path in _code_files() for name in re.findall(r"\bTRELLIS_[A-Z0-9_]*[A-Z0-9]", path.read_text())}
    assert used - declared == set()
    assert len(declared) == len(conf.SETTINGS) >= 20


def test_only_conf_reads_trellis_settings() -> None:
    readers = re.compile(r"""(getattr\(settings,\s*|environ(\.get)?[(\[]\s*|getenv\(\s*)["']TRELLIS_""")
    offenders = {str(path.relative_to(ROOT)) for path in _code_files() if readers.search(path.read_text())}
    # The framework-free engine reads its one setting from the environment (declared as read_by_runtime).
    runtime_read = {setting.name for setting in conf.SETTINGS if setting.read_by_runtime}
    assert runtime_read == {"TRELLIS_HTTP_ALLOWED_HOSTS"}
    assert offenders == set()
    assert 'ALLOWED_HOSTS_ENV = "TRELLIS_HTTP_ALLOWED_HOSTS"' in (ROOT / "runtime/builtins/_net.py").read_text()


def test_defaults_environment_text_and_settings_values_read_the_same() -> None:
    assert trellis.STEP_PROCESSES == 4 and trellis.RUN_LEASE_SECONDS == 30.0
    assert trellis.STEP_TIMEOUT_SECONDS == 60.0 and trellis.RECOVERY_INTERVAL_SECONDS is None
    assert trellis.CHECKPOINT_HISTORY == HistoryPolicy(None, False)
    from_env = conf.from_environ({"TRELLIS_TASK_MODULES": " a.b , c ,", "TRELLIS_STEP_TIMEOUT_SECONDS": "0",
                                  "TRELLIS_STEP_PROCESSES": "2", "TRELLIS_CHECKPOINT_HISTORY": "3-until-end",
                                  "TRELLIS_RUN_MAX_STEPS": " ", "UNRELATED": "x"})
    # Set to nothing (VAR=) counts as not set.
    assert set(from_env) == {"TRELLIS_TASK_MODULES", "TRELLIS_STEP_TIMEOUT_SECONDS", "TRELLIS_STEP_PROCESSES",
                             "TRELLIS_CHECKPOINT_HISTORY"}
    with override_settings(**from_env):
        assert trellis.TASK_MODULES == ["a.b", "c"]
        assert trellis.STEP_TIMEOUT_SECONDS is None  # 0 turns the cap off
        assert trellis.STEP_PROCESSES == 2
        assert trellis.CHECKPOINT_HISTORY == HistoryPolicy(3, True)
    assert trellis.DB_PREPARED_STATEMENTS is True
    for text, value in [("off", False), (" No ", False), ("0", False), ("ON", True), ("yes", True), ("1", True)]:
        with override_settings(**conf.from_environ({"TRELLIS_DB_PREPARED_STATEMENTS": text})):
            assert trellis.DB_PREPARED_STATEMENTS is value
    with override_settings(TRELLIS_STEP_PROCESSES=3, TRELLIS_STEP_MAX_MEMORY_MB=0, TRELLIS_RUN_LEASE_SECONDS=2):
        assert (trellis.STEP_PROCESSES, trellis.STEP_MAX_MEMORY_MB, trellis.RUN_LEASE_SECONDS) == (3, None, 2.0)


@pytest.mark.parametrize(("name", "text", "problem"), [
    ("TRELLIS_STEP_TIMEOUT_SECONDS", "-1", "below 0"),
    ("TRELLIS_RUN_MAX_ATTEMPTS", "five", "not an integer"),
    ("TRELLIS_RUN_MAX_ATTEMPTS", "0", "below 1"),
    ("TRELLIS_RUN_LEASE_SECONDS", "0", "not above 0"),
    ("TRELLIS_BATCH_COMMIT_SECONDS", "nan", "not a finite number"),
    ("TRELLIS_STEP_PROCESSES", "2.5", "not an integer"),
    ("TRELLIS_CHECKPOINT_HISTORY", "some", "checkpoint history"),
    ("TRELLIS_DB_PREPARED_STATEMENTS", "maybe", "on or off .*'maybe' is neither on nor off"),
])
def test_a_bad_environment_value_is_refused_naming_the_setting(name: str, text: str, problem: str) -> None:
    with pytest.raises(ImproperlyConfigured, match=rf"^{name} \(from the environment\) must be .*{problem}"):
        conf.from_environ({name: text})


def test_a_bad_settings_value_is_refused_naming_the_setting() -> None:
    with override_settings(TRELLIS_INVITATION_DAYS=-3):
        with pytest.raises(ImproperlyConfigured, match=r"^TRELLIS_INVITATION_DAYS \(from the settings\) must be"):
            conf.check_all()
    with override_settings(TRELLIS_STEP_PROCESSES=True):
        with pytest.raises(ImproperlyConfigured, match="TRELLIS_STEP_PROCESSES .*a boolean is not a number"):
            _ = trellis.STEP_PROCESSES
    conf.check_all()  # the test run's own settings are good


def test_a_bad_value_stops_start_up_with_a_message_naming_it() -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "TRELLIS_"))}
    env |= {"DJANGO_SETTINGS_MODULE": "designer.settings", "TRELLIS_STEP_TIMEOUT_SECONDS": "-5"}
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode != 0
    assert "TRELLIS_STEP_TIMEOUT_SECONDS (from the environment) must be a number of seconds >= 0" in result.stderr
    assert "'-5'" in result.stderr or "-5.0" in result.stderr


def test_the_command_writes_the_table_between_the_markers_only(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# Title\n\nbefore\n{conf.TABLE_START}| stale | table |\n{conf.TABLE_END}after\n")
    conf.write_readme_table(readme)
    text = readme.read_text()
    assert conf.readme_table(text) == conf.markdown_table()
    assert text.startswith("# Title\n\nbefore\n") and text.endswith(f"{conf.TABLE_END}after\n")
    assert "stale" not in text


def test_a_setting_is_checked_once_and_again_after_django_says_it_changed(settings: Any) -> None:
    """The checked value is kept (a worker read some twenty-five settings a run, each checked again: issue 33)
    until ``setting_changed``: ``override_settings`` and pytest-django's ``settings`` fixture still take effect
    at once, on and off, and a value read as a list is the caller's to change."""
    checks: list[object] = []

    def clean(value: object) -> int:
        checks.append(value)
        return conf.count(1).clean(value)

    class Probe:
        PROBE_SETTING = conf.Setting(conf.Kind("a whole number >= 1", clean), 3, "a setting of this test")

    probe = Probe()
    assert (probe.PROBE_SETTING, probe.PROBE_SETTING, probe.PROBE_SETTING) == (3, 3, 3)
    assert checks == [3]  # checked at the first read only
    with override_settings(TRELLIS_PROBE_SETTING=5):
        assert (probe.PROBE_SETTING, probe.PROBE_SETTING) == (5, 5)
    assert probe.PROBE_SETTING == 3 and checks == [3, 5, 3]
    settings.TRELLIS_PROBE_SETTING = 7
    assert probe.PROBE_SETTING == 7
    with override_settings(TRELLIS_PROBE_SETTING=0), pytest.raises(ImproperlyConfigured, match="PROBE_SETTING"):
        _ = probe.PROBE_SETTING  # a bad value is refused at every read, never kept
    settings.TRELLIS_TASK_MODULES = ["a.b"]
    modules = trellis.TASK_MODULES
    modules.append("mine")
    assert trellis.TASK_MODULES == ["a.b"]
    settings.TRELLIS_STEP_PROCESSES = 2
    assert trellis.STEP_PROCESSES == 2

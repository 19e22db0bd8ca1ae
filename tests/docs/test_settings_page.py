"""The Settings page, project/settings.py and the table of project/environment.py cannot
drift apart: the settings read the environment only through the table's readers, every row
is read (by the settings, or by the Makefile and the Procfile's process lines), and the
page is written from the rows."""

from __future__ import annotations

import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from project import environment
from project.environment import VARIABLES, flag, integer, number, optional_text, text
from tests.docs.examples import ROOT

SETTINGS = ROOT / "project" / "settings.py"
SCRIPT = ROOT / "scripts" / "settings_reference.py"
# A read of the environment by any means but the table's readers.
DIRECT_READ = re.compile(r"\benviron\b|\bgetenv\b|\bputenv\b")
# ${NAME:-default} in a Procfile or recipe line, NAME ?= default in the Makefile.
SHELL_DEFAULT = re.compile(r"\$\{([A-Z][A-Z0-9_]*):-([^}]*)\}")
MAKE_DEFAULT = re.compile(r"^([A-Z][A-Z0-9_]*) \?= (.*)$", re.M)


class RecordingEnviron(dict):
    """os.environ that remembers every name looked up in it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.read: set[str] = set()

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        self.read.add(key)
        return super().__contains__(key)


def process_defaults() -> dict[str, str]:
    """Each variable the Makefile and the Procfile read, with the default they give it."""
    procfile, makefile = (ROOT / "Procfile").read_text(), (ROOT / "Makefile").read_text()
    found = dict(SHELL_DEFAULT.findall(procfile + makefile))
    found.update(MAKE_DEFAULT.findall(makefile))
    return found


def settings_module_reads(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The names project/settings.py looks up when it runs, its conditional branches taken
    (PostgreSQL, an S3 bucket for files)."""
    recording = RecordingEnviron(os.environ)
    recording.update(DATABASE_URL="postgres://user:pass@db.invalid:5432/name", FILES_S3_BUCKET="bucket")
    monkeypatch.setattr(os, "environ", recording)
    runpy.run_path(str(SETTINGS))
    return recording.read


def test_the_settings_read_the_environment_only_through_the_table():
    source = SETTINGS.read_text()
    assert "from project.environment import" in source
    assert DIRECT_READ.findall(source) == []
    assert re.search(r"^import os\b|^from os\b", source, re.M) is None
    # Nor does any other module of project/ read a variable past the table (asgi.py and its
    # siblings only default DJANGO_SETTINGS_MODULE, with setdefault).
    for module in sorted((ROOT / "project").rglob("*.py")):
        if module.name != "environment.py":
            assert re.findall(r"environ\.get\(|environ\[|getenv\(", module.read_text()) == [], module


def test_every_row_is_read_and_only_the_rows_flagged_for_the_settings_are_read_by_them(monkeypatch):
    read = settings_module_reads(monkeypatch)
    rows = {variable.name: variable for variable in VARIABLES}
    assert len(rows) > 100
    assert sorted(name for name, variable in rows.items() if variable.read_by == "settings" and name not in read) == []
    assert sorted(name for name, variable in rows.items() if variable.read_by != "settings" and name in read) == []


def test_every_row_flagged_for_the_processes_is_read_there_with_the_tables_default():
    found = process_defaults()
    for variable in VARIABLES:
        if variable.read_by == "processes":
            assert variable.name in found, f"{variable.name}: no ${{{variable.name}:-...}} or ?= in Procfile/Makefile"
        if variable.name in found:
            assert found[variable.name] == variable.default, variable.name


def test_the_page_is_the_scripts_and_has_a_row_for_every_variable_in_the_tables_order(tmp_path: Path):
    page = tmp_path / "settings.md"
    subprocess.run([sys.executable, str(SCRIPT), "--output", str(page)], check=True, cwd=ROOT, capture_output=True)
    written = page.read_text()
    assert written == runpy.run_path(str(SCRIPT))["page"]()
    rows = re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \| (.+?) \| (.+) \|$", written, re.M)
    assert [name for name, _, _ in rows] == [variable.name for variable in VARIABLES]
    for (name, default, meaning), variable in zip(rows, VARIABLES, strict=True):
        assert meaning == variable.meaning, name
        shown = variable.documented_default or (f"`{variable.default}`" if variable.default else "—")
        assert default == shown, name
    # The prose of the page, and the processes' table after the settings' one.
    for line in ("# Settings\n", "## Configuration\n", "`project/settings.py`", "`project/environment.py`",
                 "Beat's periods are whole seconds (the database scheduler keeps intervals as integers).",
                 "Used by `make run` and the `Procfile` only:"):
        assert line in written
    assert written.index("Used by `make run`") < written.index("| `PORT` |")


def test_a_meaning_is_one_table_cell():
    for variable in VARIABLES:
        assert "\n" not in variable.meaning and "|" not in variable.meaning, variable.name
        assert re.fullmatch(r"[A-Z][A-Z0-9_]*", variable.name)


@pytest.mark.parametrize("reader", [text, optional_text, integer, number, flag])
def test_a_reader_refuses_a_name_without_a_row(reader, monkeypatch):
    monkeypatch.setenv("NOT_A_DOCUMENTED_SETTING", "1")
    with pytest.raises(KeyError):
        reader("NOT_A_DOCUMENTED_SETTING")


# What project/settings.py parsed with before the table: the readers keep it.
def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    return float(value) if value not in (None, "") else default


@pytest.mark.parametrize("value", [None, "", "1", "true", "TRUE", " yes ", "on", "0", "false", "no", "off", "2"])
@pytest.mark.parametrize("name, default", [("DJANGO_DEBUG", False), ("MERGE_STREAM_DELTAS", True)])
def test_flag_parses_as_env_bool_did(name, default, value, monkeypatch):
    if value is None:
        monkeypatch.delenv(name, raising=False)
    else:
        monkeypatch.setenv(name, value)
    assert flag(name) is env_bool(name, default)


@pytest.mark.parametrize("value", [None, "", "2.5", "0", "1e3", " 7 "])
@pytest.mark.parametrize("name, default", [("API_KEY_CACHE_S", 60.0), ("EVENT_FLUSH_INTERVAL_S", 0.05)])
def test_number_parses_as_env_float_did(name, default, value, monkeypatch):
    if value is None:
        monkeypatch.delenv(name, raising=False)
    else:
        monkeypatch.setenv(name, value)
    assert number(name) == env_float(name, default)


def test_number_with_a_computed_default(monkeypatch):
    monkeypatch.delenv("WORKER_CONCURRENCY", raising=False)
    assert number("WORKER_CONCURRENCY", computed=264) == 264.0
    monkeypatch.setenv("WORKER_CONCURRENCY", "12")
    assert number("WORKER_CONCURRENCY", computed=264) == 12.0
    with pytest.raises(ValueError):  # a row with a default of its own takes no computed one
        number("API_KEY_CACHE_S", computed=1)
    monkeypatch.delenv("WORKER_CONCURRENCY")
    with pytest.raises(ValueError):  # nor may a row without one go without
        number("WORKER_CONCURRENCY")


def test_integer_is_int_of_the_text_as_before(monkeypatch):
    monkeypatch.delenv("MAX_TOOL_TURNS", raising=False)
    assert integer("MAX_TOOL_TURNS") == 64
    monkeypatch.setenv("MAX_TOOL_TURNS", "7")
    assert integer("MAX_TOOL_TURNS") == 7
    for bad in ("3.5", ""):
        monkeypatch.setenv("MAX_TOOL_TURNS", bad)
        with pytest.raises(ValueError):
            integer("MAX_TOOL_TURNS")


def test_text_is_the_value_as_set_else_the_default_else_the_computed_one(monkeypatch):
    monkeypatch.delenv("REDIS_URL", raising=False)
    assert text("REDIS_URL") == "redis://127.0.0.1:6379/0"
    monkeypatch.setenv("REDIS_URL", "")
    assert text("REDIS_URL") == ""  # set, if empty: os.environ.get's answer, as before
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    assert text("CELERY_BROKER_URL", computed="redis://elsewhere/1") == "redis://elsewhere/1"
    with pytest.raises(ValueError):
        text("CELERY_BROKER_URL")
    with pytest.raises(ValueError):
        text("REDIS_URL", computed="redis://elsewhere/1")
    monkeypatch.delenv("MODEL_REGISTRY_FILE", raising=False)
    assert optional_text("MODEL_REGISTRY_FILE") is None
    monkeypatch.setenv("MODEL_REGISTRY_FILE", "/etc/models.json")
    assert optional_text("MODEL_REGISTRY_FILE") == "/etc/models.json"
    assert environment.variable("MODEL_REGISTRY_FILE").default is None

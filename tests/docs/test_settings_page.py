"""The Settings page and project/settings.py cannot drift apart: every variable the
settings read from the environment has its row on the page, and every row names a variable
that the settings (or the Procfile's processes) read."""

from __future__ import annotations

import re

from tests.docs.examples import ROOT

READ = re.compile(r'(?:os\.environ\.get|os\.environ\[|env_float|env_bool)\(?\s*"([A-Z][A-Z0-9_]+)"')
# Read by the Makefile and the Procfile's processes, not by Django's settings.
PROCESS_VARIABLES = {"PORT", "WORKER_QUEUES", "WEBHOOK_CONCURRENCY"}


def test_every_setting_read_from_the_environment_is_on_the_settings_page_and_no_other():
    settings = (ROOT / "project" / "settings.py").read_text()
    page = (ROOT / "docs" / "settings.md").read_text()
    read = set(READ.findall(settings))
    assert len(read) > 90
    assert sorted(name for name in read if f"`{name}`" not in page) == []
    rows = set(re.findall(r"^\| `([A-Z][A-Z0-9_]+)`", page, re.M))
    assert sorted(rows - read - PROCESS_VARIABLES) == []
    process_text = (ROOT / "Procfile").read_text() + (ROOT / "Makefile").read_text()
    assert all(name in process_text for name in PROCESS_VARIABLES)

"""scripts/keep_running.py, the Procfile's wrapper: an exit is reported and the process
started again; honcho's SIGTERM to the process group ends both."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# First run: print and exit 3. Later runs: say so and wait to be stopped.
CHILD = """
import pathlib, sys, time
marker = pathlib.Path(sys.argv[1])
if not marker.exists():
    marker.write_text("ran")
    print("loading the model failed: out of memory", flush=True)
    sys.exit(3)
print("second run up", flush=True)
time.sleep(60)
"""


def test_an_exited_process_is_reported_with_its_last_lines_and_started_again_until_stopped(tmp_path):
    wrapper = subprocess.Popen(
        [sys.executable, str(ROOT / "scripts" / "keep_running.py"), "worker", "--", sys.executable, "-c", CHILD,
         str(tmp_path / "marker")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)  # as honcho does
    lines: list[str] = []
    assert wrapper.stdout is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and "second run up" not in lines:
        lines.append(wrapper.stdout.readline().rstrip())
    os.killpg(wrapper.pid, signal.SIGTERM)
    rest, _ = wrapper.communicate(timeout=10)

    assert lines[:4] == ["loading the model failed: out of memory",
                         "keep_running: worker exited with status 3; its last lines:",
                         "  | loading the model failed: out of memory",
                         "keep_running: starting worker again in 1 s"]
    assert lines[-1] == "second run up"
    assert wrapper.returncode == 128 + signal.SIGTERM  # the child's: killed by the group's SIGTERM
    assert "starting worker again" not in rest  # stopped, not restarted


def test_a_wrapper_without_a_command_explains_its_usage():
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "keep_running.py"), "web"], capture_output=True,
                          text=True)
    assert done.returncode == 2 and "keep_running.py NAME -- COMMAND" in done.stderr

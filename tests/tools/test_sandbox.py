"""The python tool's sandbox with the real bubblewrap: every escape is contained, reported
as an error, and followed by a call in the same container that works; the session behaves
like a notebook."""

from __future__ import annotations

import os
import secrets
import socket
import sys
import threading
import time
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from tools_app.sandbox import ExecutionResult, Workspace, run_code

pytestmark = pytest.mark.core

PROJECT_SETTINGS = Path(django_settings.BASE_DIR) / "project" / "settings.py"


@pytest.fixture
def workspace(settings, tmp_path) -> Workspace:
    settings.CONTAINERS_DIR = tmp_path / "containers"
    return Workspace.for_container(f"cntr_{secrets.token_hex(8)}")


def sandbox_processes(uid: int | None) -> list[int]:
    """Host pids running as the sandbox's uid (none may outlive a call)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        uid_line = next(line for line in status.splitlines() if line.startswith("Uid:"))
        if int(uid_line.split()[1]) == uid:
            pids.append(int(entry))
    return pids


def assert_contained(workspace: Workspace, result: ExecutionResult) -> None:
    """The call failed with an error, left no process behind, and the container still works."""
    assert result.error, result
    deadline = time.monotonic() + 5
    while sandbox_processes(workspace.uid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sandbox_processes(workspace.uid) == []
    after = run_code(workspace, "print('still here')")
    assert after == ExecutionResult(logs="still here\n", error=None, files=[])


# --- isolation ----------------------------------------------------------------------------


def test_it_runs_as_an_unprivileged_uid_of_its_own(workspace):
    result = run_code(workspace, "import os\nprint(os.getuid(), os.geteuid(), os.getgid())\nos.setuid(0)")
    assert result.logs.splitlines()[0] == f"{workspace.uid} {workspace.uid} {workspace.uid}"
    assert workspace.uid != 0
    assert "PermissionError" in result.error
    assert_contained(workspace, result)


def test_it_cannot_reach_a_server_on_the_hosts_loopback(workspace):
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        server.settimeout(0.5)
        result = run_code(workspace, f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=3)")
        with pytest.raises(TimeoutError):
            server.accept()
    assert "ConnectionRefusedError" in result.error or "unreachable" in result.error
    assert_contained(workspace, result)


@pytest.mark.parametrize("path", [str(PROJECT_SETTINGS), "/etc/shadow", "/etc/passwd", "/root/.bashrc"])
def test_it_cannot_read_host_files(workspace, path):
    assert Path(path).exists() or path == "/root/.bashrc"
    result = run_code(workspace, f"print(open({path!r}).read())")
    assert "FileNotFoundError" in result.error
    assert "SECRET_KEY" not in result.logs and "root:" not in result.logs
    assert_contained(workspace, result)


@pytest.mark.parametrize("path", ["/usr/sandbox-escape", str(PROJECT_SETTINGS.parent / "sandbox-escape.py"),
                                  str(PROJECT_SETTINGS.parent.parent / "sandbox-escape.py"),
                                  f"{os.path.realpath(sys.base_prefix)}/sandbox-escape", "/sandbox-escape"])
def test_it_cannot_write_host_files(workspace, path):
    result = run_code(workspace, f"open({path!r}, 'w').write('x')")
    assert any(reason in result.error for reason in ("PermissionError", "Read-only file system", "FileNotFoundError"))
    assert not Path(path).exists()
    assert_contained(workspace, result)


def test_its_tmp_is_its_own(workspace):
    name = f"sandbox-escape-{secrets.token_hex(4)}"
    result = run_code(workspace, f"open('/tmp/{name}', 'w').write('x')\nimport os\nos.listdir('/tmp')")
    assert result.error is None and name in result.logs
    assert not (Path("/tmp") / name).exists()


def test_the_project_and_home_dirs_are_invisible_but_numpy_imports(workspace):
    code = ("import os, numpy\n"
            f"print([os.path.exists(path) for path in ({str(PROJECT_SETTINGS.parent)!r}, '/etc', '/home')])\n"
            "int(numpy.arange(4).sum())")
    assert run_code(workspace, code) == ExecutionResult(logs="[False, False, False]\n6\n", error=None, files=[])


# --- limits -------------------------------------------------------------------------------


def test_a_fork_bomb_is_contained(workspace):
    code = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    started = time.monotonic()
    result = run_code(workspace, code, timeout_s=3)
    assert time.monotonic() - started < 10
    assert "timed out after 3 s" in result.error
    assert_contained(workspace, result)


def test_the_process_limit_counts_only_the_sandboxs_processes(settings, workspace):
    settings.SANDBOX_MAX_PROCESSES = 10
    # The worker's own threads (uid 0) must not use up the sandbox's allowance.
    stop = threading.Event()
    threads = [threading.Thread(target=stop.wait) for _ in range(50)]
    for thread in threads:
        thread.start()
    try:
        ordinary = run_code(workspace, "import subprocess\nsubprocess.run(['true'], check=True).returncode")
        bomb = run_code(workspace, (
            "import os, time\nforked = 0\ntry:\n    for _ in range(100):\n        if os.fork() == 0:\n"
            "            time.sleep(60)\n            os._exit(0)\n        forked += 1\nfinally:\n    print(forked)"))
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert ordinary.error is None and ordinary.logs == "0\n"
    forked = int(bomb.logs.splitlines()[0])
    assert 5 <= forked < 10
    assert bomb.error.startswith("Process limit reached (10 processes and threads).")
    assert_contained(workspace, bomb)


def test_allocating_10_gb_fails_inside(workspace):
    result = run_code(workspace, "block = bytearray(10 * 1024 ** 3)")
    assert result.error.startswith(f"Memory limit ({django_settings.SANDBOX_MEMORY_MB} MB) exceeded.")
    assert "MemoryError" in result.error
    assert_contained(workspace, result)


def test_a_loop_forever_times_out(workspace):
    started = time.monotonic()
    result = run_code(workspace, "while True:\n    pass", timeout_s=2)
    assert 2 <= time.monotonic() - started < 5
    assert result.error == "Execution timed out after 2 s. Variables from this call were not saved."
    assert_contained(workspace, result)


def test_cpu_time_is_limited(settings, workspace):
    settings.SANDBOX_CPU_S = 1
    result = run_code(workspace, "while True:\n    pass", timeout_s=20)
    assert result.error.startswith("CPU time limit (1 s) exceeded.")
    assert_contained(workspace, result)


def test_printing_100_mb_is_cut_off(settings, workspace):
    started = time.monotonic()
    result = run_code(workspace, "for _ in range(100):\n    print('x' * 1_000_000)")
    assert time.monotonic() - started < 10
    limit = settings.SANDBOX_MAX_OUTPUT_BYTES
    assert result.logs.endswith(f"\n[output truncated: more than {limit} bytes]")
    assert len(result.logs.encode()) < limit + 100
    assert result.error.startswith("Output limit exceeded")
    assert_contained(workspace, result)


def test_files_are_limited_in_size(settings, workspace):
    settings.SANDBOX_MAX_DISK_MB = 1
    result = run_code(workspace, "open('big.bin', 'wb').write(b'x' * 2 * 1024 * 1024)")
    assert result.error.startswith("Disk limit exceeded: a file may hold at most 1 MB.")
    assert (workspace.data_dir / "big.bin").stat().st_size <= 1024 * 1024
    assert_contained(workspace, result)


# --- the session --------------------------------------------------------------------------


def test_the_final_expression_is_printed_like_a_notebook(workspace):
    assert run_code(workspace, "x = 2\nx * 21").logs == "42\n"
    assert run_code(workspace, "x = None\nx").logs == ""


def test_variables_functions_and_imports_persist_across_calls(workspace):
    first = run_code(workspace, "import math\nbase = 40\ndef plus(n):\n    return base + n")
    assert first.error is None
    assert run_code(workspace, "plus(2), math.sqrt(16)").logs == "(42, 4.0)\n"


def test_values_that_cannot_be_pickled_are_dropped_with_a_note(workspace):
    result = run_code(workspace, "import threading\nlock = threading.Lock()\ngen = (i for i in range(3))\nkept = 1")
    assert result.error is None
    assert "[note: not kept for the next call, cannot be saved: " in result.logs
    assert "gen (generator)" in result.logs
    assert run_code(workspace, "kept, 'gen' in globals()").logs == "(1, False)\n"


def test_an_error_keeps_the_earlier_session(workspace):
    run_code(workspace, "kept = 'yes'")
    failed = run_code(workspace, "kept = 'changed'\nraise ValueError('boom')")
    assert failed.error.endswith("ValueError: boom")
    assert "ValueError: boom" in failed.logs
    assert run_code(workspace, "kept").logs == "'changed'\n"


def test_files_written_in_the_work_dir_are_listed(workspace):
    result = run_code(workspace, "import os\nos.makedirs('out', exist_ok=True)\n"
                                 "open('out/a.txt', 'w').write('a')\nopen('b.csv', 'w').write('b')\nos.getcwd()")
    assert result == ExecutionResult(logs="'/mnt/data'\n", error=None, files=["b.csv", "out/a.txt"])
    assert (workspace.data_dir / "out" / "a.txt").read_text() == "a"
    assert run_code(workspace, "open('b.csv', 'a').write('c')").files == ["b.csv"]
    assert run_code(workspace, "print(sorted(os.listdir('.')))").files == []


def test_a_syntax_error_is_reported_without_runner_frames(workspace):
    result = run_code(workspace, "x = (")
    assert result.error.endswith("SyntaxError: '(' was never closed")
    assert "runner.py" not in result.logs


def test_exit_and_odd_exceptions_are_reported_not_fatal(workspace):
    odd = run_code(workspace, "class Odd(Exception):\n    errno = object()\nraise Odd('strange')")
    assert odd.error.endswith("Odd: strange")
    exited = run_code(workspace, "import os\nos._exit(3)")
    assert exited.error.startswith("The process exited with status 3")
    assert_contained(workspace, exited)


def test_a_closed_stdout_does_not_outlive_the_timeout(workspace):
    result = run_code(workspace, "import os, time\nos.close(1)\nos.close(2)\ntime.sleep(60)", timeout_s=2)
    assert result.error.startswith("Execution timed out after 2 s")
    assert_contained(workspace, result)


def test_shared_memory_and_threads_work(workspace):
    code = ("import multiprocessing.shared_memory as shm, threading\nblock = shm.SharedMemory(create=True, size=1024)\n"
            "block.close()\nblock.unlink()\nthreads = [threading.Thread(target=sum, args=([1],)) for _ in range(8)]\n"
            "[t.start() for t in threads]\n[t.join() for t in threads]\nlen(threads)")
    result = run_code(workspace, code)
    assert (result.error, result.logs.splitlines()[-1]) == (None, "8"), result

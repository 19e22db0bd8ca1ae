"""Run one cell of Python for a container in a fresh process under bubblewrap.

Why bwrap is started by root without a user namespace: root is exempt from RLIMIT_NPROC,
and in a user namespace that root creates, the sandbox's uid maps back to root outside. So
when the worker is root, bwrap makes every namespace but the user one, keeps only
CAP_SETUID/CAP_SETGID, and the runner's first act is to become the container's own uid: the
process limit then counts exactly that container's processes, never the worker's threads.
A worker that is not root gets bwrap's ordinary unprivileged user namespace instead.
"""

from __future__ import annotations

import json
import logging
import os
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from tools_app.sandbox.files import changed_files, snapshot
from tools_app.sandbox.workspace import Workspace

logger = logging.getLogger(__name__)

RUNNER_SOURCE = Path(__file__).with_name("runner.py")
RUNNER_PATH = "/opt/sandbox/runner.py"
DATA_MOUNT = "/mnt/data"
SESSION_MOUNT = "/mnt/session"
TMP_BYTES = 64 * 1024 * 1024
RESULT_BYTES = 64 * 1024
READ_CHUNK = 64 * 1024
# Namespaces of --unshare-all except the user namespace (see the module docstring).
ROOT_NAMESPACES = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
SANDBOX_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/tmp",
    "LANG": "C.UTF-8",
    "MPLBACKEND": "Agg",
    "MPLCONFIGDIR": "/tmp",
    # Thread pools sized by core count would exhaust the process limit on a big machine.
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
NOT_SAVED = "Variables from this call were not saved."


@dataclass(frozen=True)
class ExecutionResult:
    logs: str
    error: str | None
    files: list[str]  # created or changed by the call
    # Every regular file of /mnt/data after the call, with its size (the container's files).
    sizes: dict[str, int] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Limits:
    memory_mb: int
    cpu_s: int
    max_processes: int
    max_output_bytes: int
    max_disk_mb: int

    @classmethod
    def from_settings(cls) -> Limits:
        return cls(memory_mb=settings.SANDBOX_MEMORY_MB, cpu_s=settings.SANDBOX_CPU_S,
                   max_processes=settings.SANDBOX_MAX_PROCESSES, max_output_bytes=settings.SANDBOX_MAX_OUTPUT_BYTES,
                   max_disk_mb=settings.SANDBOX_MAX_DISK_MB)


def run_code(workspace: Workspace, code: str, timeout_s: float | None = None) -> ExecutionResult:
    """Run `code` in the workspace's saved session; never raises for anything the code does.

    The caller serialises calls on one workspace. Whatever the code does (time, memory,
    processes, output, disk), the sandbox is gone when this returns."""
    timeout = float(timeout_s if timeout_s is not None else settings.TOOL_CALL_TIMEOUT_S)
    limits = Limits.from_settings()
    workspace.create()
    before = snapshot(workspace.data_dir)
    code_fd = _memfd("cell", code.encode())
    result_fd = _memfd("result", b"")
    try:
        process = subprocess.Popen(
            _bwrap_command(workspace, limits, result_fd), stdin=code_fd, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, pass_fds=(result_fd,), env=SANDBOX_ENV, start_new_session=True)
        output, stopped = _collect(process, limits.max_output_bytes, time.monotonic() + timeout)
        outcome = _read_outcome(result_fd)
    finally:
        os.close(code_fd)
        os.close(result_fd)
    logs = output[: limits.max_output_bytes].decode("utf-8", "replace")
    if stopped == "output":
        logs += f"\n[output truncated: more than {limits.max_output_bytes} bytes]"
    error = _describe(stopped, outcome, process.returncode, logs, timeout, limits)
    after = snapshot(workspace.data_dir)
    return ExecutionResult(logs=logs, error=error, files=changed_files(before, after),
                           sizes={path: signature[1] for path, signature in after.items()})


def _memfd(name: str, content: bytes) -> int:
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    os.write(fd, content)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _bwrap_command(workspace: Workspace, limits: Limits, result_fd: int) -> list[str]:
    command = ["bwrap", "--die-with-parent", "--new-session"]
    if workspace.uid is not None:
        command += ROOT_NAMESPACES + ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        command += ["--unshare-all", "--uid", "65534", "--gid", "65534"]
    command += ["--hostname", "sandbox", "--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64"):
        host = Path("/") / name
        if host.is_symlink():
            command += ["--symlink", os.readlink(host), str(host)]
        elif host.is_dir():
            command += ["--ro-bind", str(host), str(host)]
    command += ["--proc", "/proc", "--dev", "/dev"]
    for scratch in ("/tmp", "/dev/shm"):
        command += ["--perms", "1777", "--size", str(TMP_BYTES), "--tmpfs", scratch]
    made: set[str] = {"/", "/usr", "/tmp", "/dev", "/dev/shm"}
    binds = [(prefix, prefix, "--ro-bind") for prefix in _python_prefixes()]
    binds += [(str(RUNNER_SOURCE), RUNNER_PATH, "--ro-bind"), (str(workspace.data_dir), DATA_MOUNT, "--bind"),
              (str(workspace.session_dir), SESSION_MOUNT, "--bind")]
    for source, destination, kind in binds:
        # bwrap would copy the host's modes for the dirs above a mount point (/root is 0700);
        # the sandbox's uid must be able to walk down to every mount.
        for parent in reversed(Path(destination).parents):
            if str(parent) not in made:
                command += ["--perms", "0755", "--dir", str(parent)]
                made.add(str(parent))
        command += [kind, source, destination]
    config = {"uid": workspace.uid, "memory_bytes": limits.memory_mb * 1024 * 1024, "cpu_s": limits.cpu_s,
              "max_processes": limits.max_processes, "file_bytes": limits.max_disk_mb * 1024 * 1024,
              "result_fd": result_fd, "session_path": f"{SESSION_MOUNT}/session.pkl",
              "cell_name": f"<cell {os.urandom(4).hex()}>", "work_dir": DATA_MOUNT}
    # No --chdir: bwrap runs as root without capabilities, and only the sandbox's uid may
    # enter the work dir; the runner changes into it after dropping privileges.
    command += ["--chdir", "/", "--", sys.executable, "-I", "-u", "-B", RUNNER_PATH, json.dumps(config)]
    return command


def _python_prefixes() -> list[str]:
    """The installation that runs the worker (a venv and its base), so that whatever the
    worker can import (numpy, ...) the sandbox can too. Never the project dir itself."""
    candidates = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    candidates |= {os.path.realpath(path) for path in candidates}
    prefixes: list[str] = []
    for path in sorted(candidates, key=len):
        if any(path == kept or path.startswith(kept + "/") for kept in prefixes + ["/usr"]):
            continue
        prefixes.append(path)
    return prefixes


def _collect(process: subprocess.Popen[bytes], limit: int, deadline: float) -> tuple[bytes, str | None]:
    """Read the sandbox's output until it exits; kill it at the deadline or past `limit`
    bytes. Returns the output (at most limit + one chunk) and why it was stopped, if it was."""
    assert process.stdout is not None
    chunks: list[bytes] = []
    size = 0
    stopped: str | None = None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                stopped = "timeout"
                break
            if not selector.select(timeout=remaining):
                continue
            chunk = os.read(process.stdout.fileno(), READ_CHUNK)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                stopped = "output"
                break
    process.stdout.close()
    if stopped is None:
        try:
            # Output closed, but the code may go on without it (os.close(1)).
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            stopped = "timeout"
    if stopped is not None:
        _kill(process)
    return b"".join(chunks), stopped


def _kill(process: subprocess.Popen[bytes]) -> None:
    # bwrap leads its own session; killing it makes the sandbox's pid 1 die (--die-with-parent),
    # and the kernel then kills everything left in the sandbox's pid namespace.
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def _read_outcome(result_fd: int) -> dict | None:
    os.lseek(result_fd, 0, os.SEEK_SET)
    raw = os.read(result_fd, RESULT_BYTES)
    try:
        outcome = json.loads(raw)
    except ValueError:
        return None
    return outcome if isinstance(outcome, dict) else None


def _describe(stopped: str | None, outcome: dict | None, returncode: int, logs: str, timeout: float,
              limits: Limits) -> str | None:
    """A short, model-readable account of what went wrong, or None on success."""
    if stopped == "timeout":
        return f"Execution timed out after {timeout:g} s. {NOT_SAVED}"
    if stopped == "output":
        return f"Output limit exceeded: more than {limits.max_output_bytes} bytes were printed. {NOT_SAVED}"
    if outcome is not None:
        exception = outcome.get("exception")
        if exception is None:
            return None
        tail = str(outcome.get("traceback") or exception).strip()
        if exception == "MemoryError":
            return f"Memory limit ({limits.memory_mb} MB) exceeded.\n{tail}"
        if outcome.get("errno") == 11 or "can't start new thread" in tail:
            return f"Process limit reached ({limits.max_processes} processes and threads).\n{tail}"
        if outcome.get("errno") == 27:
            return f"Disk limit exceeded: a file may hold at most {limits.max_disk_mb} MB.\n{tail}"
        return tail
    if logs.startswith("bwrap:"):
        logger.error("The sandbox failed to start: %s", logs[:500])
        return "The sandbox failed to start; this is a server error."
    if returncode == 128 + signal.SIGXCPU:
        return f"CPU time limit ({limits.cpu_s} s) exceeded. {NOT_SAVED}"
    if returncode == 128 + signal.SIGKILL:
        return (f"The process was killed, most likely for exceeding the memory limit ({limits.memory_mb} MB). "
                f"{NOT_SAVED}")
    if returncode > 128:
        name = signal.Signals(returncode - 128).name if returncode - 128 in signal.valid_signals() else "?"
        return f"The process died from signal {returncode - 128} ({name}). {NOT_SAVED}"
    return f"The process exited with status {returncode} before the cell finished. {NOT_SAVED}"

"""What the benchmarks share: their own PostgreSQL and Redis (scripts/test-services.sh in a
folder of their own, so that a concurrent ``make test`` is left alone), and the CPU time
of the processes they measure."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SERVICES_SCRIPT = ROOT / "scripts" / "test-services.sh"

# A component whose CPU time is counted: (label, pid, "self" | "children" | "tree").
CpuSpec = list[tuple[str, int, str]]


def services(directory: Path, command: str, pg_port: int | None = None, redis_port: int | None = None) -> str:
    """Run ``test-services.sh <command>`` for the services in ``directory``; its output."""
    env = {**os.environ, "TEST_SERVICES_DIR": str(directory)}
    if pg_port is not None:
        # Random free ports: the script's default (first free from 55432) could race a `make test`.
        env.update(TEST_PG_PORT=str(pg_port), TEST_REDIS_PORT=str(redis_port))
    done = subprocess.run(["bash", str(SERVICES_SCRIPT), command], env=env, cwd=ROOT, capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"test-services.sh {command} failed:\n{done.stderr}")
    return done.stdout


def service_urls(env_lines: str) -> dict[str, str]:
    """DATABASE_URL, REDIS_URL, ... from the ``export NAME=value`` lines of ``services(..., "env")``."""
    return dict(line.removeprefix("export ").split("=", 1) for line in env_lines.splitlines() if "=" in line)


def per_database(directory: Path, databases: list[str], script: str,
                 args: list[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Start the services of ``directory``; for each of ``databases`` (postgresql: those
    services' own; sqlite: a fresh file in ``directory``) run ``script`` with ``args`` and
    ``--child DATABASE_URL REDIS_URL`` in a process of its own (settings are read at import),
    and yield the database with the JSON of the child's last line; stop the services."""
    from tests.live.stack import free_port

    try:
        services(directory, "start", free_port(), free_port())
        urls = service_urls(services(directory, "env"))
        for database in databases:
            database_url = urls["DATABASE_URL"]
            if database == "sqlite":
                for stale in directory.glob("bench.sqlite3*"):
                    stale.unlink()
                database_url = f"sqlite:///{directory / 'bench.sqlite3'}"
            done = subprocess.run([sys.executable, script, *args, "--child", database_url, urls["REDIS_URL"]],
                                  cwd=ROOT, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise RuntimeError(f"{database}: the measuring process failed:\n{done.stderr[-4000:]}")
            yield database, json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        services(directory, "stop")


def service_pids(directory: Path) -> CpuSpec:
    """The PostgreSQL and Redis of ``directory``, as CPU components (with their children)."""
    spec: CpuSpec = []
    for label, pid_file in (("postgres", directory / "pg" / "data" / "postmaster.pid"),
                            ("redis", directory / "redis" / "redis.pid")):
        try:
            spec.append((label, int(pid_file.read_text().split()[0]), "tree"))
        except (OSError, ValueError, IndexError):
            pass
    return spec


def cpu_seconds(spec: CpuSpec) -> dict[str, float]:
    """User + system CPU seconds so far of each component (processes that exited are not counted)."""
    import psutil

    totals: dict[str, float] = {}
    for label, pid, mode in spec:
        try:
            root = psutil.Process(pid)
            processes = ([root] if mode != "children" else []) + (root.children(recursive=True) if mode != "self"
                                                                  else [])
        except psutil.Error:
            continue
        for process in processes:
            try:
                times = process.cpu_times()
            except psutil.Error:
                continue
            totals[label] = totals.get(label, 0.0) + times.user + times.system
    return totals


def cpu_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {label: after[label] - before.get(label, 0.0) for label in after}


@contextmanager
def django_on_services(directory: Path, database: bool = False) -> Iterator[dict[str, str]]:
    """PostgreSQL and Redis of ``directory`` on free ports, Django set up on that Redis (a
    stack's readiness check asks its workers over Celery's broker), their URLs; stopped after.
    With ``database``, Django is on that PostgreSQL too, migrated: for a bench that makes
    API keys and reads rows in its own process."""
    from tests.live.stack import LOG_DIR, free_port

    LOG_DIR.mkdir(parents=True, exist_ok=True)
    try:
        services(directory, "start", free_port(), free_port())
        urls = service_urls(services(directory, "env"))
        # Before django.setup(): the settings read them.
        os.environ.update(REDIS_URL=urls["REDIS_URL"], CELERY_BROKER_URL=urls["REDIS_URL"],
                          DJANGO_SETTINGS_MODULE="project.settings")
        if database:
            os.environ["DATABASE_URL"] = urls["DATABASE_URL"]
        import django

        django.setup()
        if database:
            subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, check=True)
        for name in ("httpx", "httpx2", "openai"):  # the settings log requests at INFO; the report is the output
            logging.getLogger(name).setLevel(logging.WARNING)
        yield urls
    finally:
        services(directory, "stop")

"""The live stack for end-to-end tests: Daphne, a Celery worker (threads pool) and Celery
beat as real subprocesses, on the test database and the test Redis.

Processes can be killed and restarted by tests (Daphne mid-stream, the worker with
SIGKILL); ``ensure_running`` puts the stack back for the next test.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
LOG_DIR = ROOT / "test-artifacts" / "live"
# The Files API's bytes, one directory per pytest-xdist worker, which the worker's live stack
# and its in-process tests (tests/api/conftest.py) share: they share the worker's database
# too, so the live stack's beat takes up the in-process tests' stalled batches and
# ingestions, and the bytes it writes or reads must be where the tests' API finds them.
FILES_DIR = LOG_DIR / f"files-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"

# Short leases and intervals so that recovery paths run within a test's patience.
STACK_ENV = {
    "RESPONSE_LEASE_TTL_S": "5",
    "RESPONSE_LEASE_RENEW_S": "1",
    "REAPER_INTERVAL_S": "2",
    "PURGE_INTERVAL_S": "2",
    # No packing sweep: it would pack the logs that tests/stream/test_event_log.py leaves
    # unpacked in the database it shares with this stack, and counts the packing of.
    "PACK_INTERVAL_S": "86400",
    "UNSTORED_RETENTION_S": "2",
    "SSE_KEEPALIVE_S": "1",
    "ECHO_TOKEN_DELAY_MS": "0",
    "LOG_LEVEL": "INFO",
    # The tool tests' MCP servers listen on 127.0.0.1; other private addresses stay refused.
    "TOOLS_ALLOWED_PRIVATE_HOSTS": "127.0.0.1",
    "TOOL_CALL_TIMEOUT_S": "6",
    # Background jobs within a test's patience: webhook retries after about a second,
    # a "2h" completion window of 20 s with promotion 10 s before its deadline.
    "WEBHOOK_SWEEP_INTERVAL_S": "1",
    "WEBHOOK_RETRY_BASE_S": "1",
    "WEBHOOK_TIMEOUT_S": "8",
    "DEFERRED_DISPATCH_INTERVAL_S": "1",
    "COMPLETION_WINDOW_2H_S": "20",
    "DEFERRED_PROMOTE_BEFORE_S": "10",
    "BEAT_MAX_LOOP_INTERVAL_S": "1",
    # A foreground WebSocket response whose socket is gone is cancelled 3 s on.
    "WS_RESUME_GRACE_S": "3",
    # A refused socket waits for the client's first message longer than a crowded CI
    # machine may take to read one sent half a second after the handshake.
    "WS_REFUSAL_WAIT_S": "10",
    # containers.files.create refuses a file above 64 KiB here (the test of the cap).
    "CONTAINER_FILE_MAX_BYTES": "65536",
    # files.create refuses a body above 4 MiB (plus the multipart framing) here.
    "FILE_MAX_BYTES": str(4 * 2**20),
    "FILE_PURGE_INTERVAL_S": "1",
    "VECTOR_STORE_SWEEP_INTERVAL_S": "1",
    "VECTOR_STORE_INGEST_STALL_S": "8",
    "DETACHED_SWEEP_INTERVAL_S": "1",
    # Batches: beat's tick every second takes up a batch quiet for 3 s; at most 4 batch
    # responses of a model in flight.
    "BATCH_TICK_INTERVAL_S": "1",
    "BATCH_STALL_S": "3",
    "BATCH_MAX_IN_FLIGHT": "4",
}


NODE_MODEL = "tiny-node"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def database_url(settings_dict: dict) -> str:
    """The URL of the (already created) test database, for the subprocesses."""
    name = settings_dict["NAME"]
    if settings_dict["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{name}"
    user = settings_dict.get("USER") or ""
    password = f":{settings_dict['PASSWORD']}" if settings_dict.get("PASSWORD") else ""
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = f":{settings_dict['PORT']}" if settings_dict.get("PORT") else ""
    return f"postgresql://{user}{password}@{host}{port}/{name}"


def model_registry(tiny_models: dict[str, Path]) -> dict[str, dict]:
    """echo, plus the tiny gpt-oss models served by real vLLM when they exist."""
    # echo-short: a context small enough for truncation "auto" to act on a few turns.
    registry: dict[str, dict] = {"echo": {"engine": "echo", "max_model_len": 131072},
                                 "echo-short": {"engine": "echo", "max_model_len": 400},
                                 # Summarizes its reasoning unless a request says otherwise.
                                 "echo-summarized": {"engine": "echo", "max_model_len": 131072,
                                                     "reasoning_summary": "auto"}}
    for model, path in tiny_models.items():
        registry[model] = {
            "engine": "vllm",
            "path": str(path),
            "max_model_len": 2048,
            # A small fixed KV cache: on CPU, gpu_memory_utilization is a share of the RAM.
            "engine_args": {"kv_cache_memory_bytes": 256 * 2**20, "enforce_eager": True, "dtype": "float32"},
        }
    if "tiny-trained" in tiny_models:
        # The trained model again, served only by a GPU node's worker processes sharing one
        # engine core (tests/live/test_gpu_node.py), never by the stack's vllm-worker.
        registry[NODE_MODEL] = {**registry["tiny-trained"], "worker_processes": 2}
    return registry


class LiveStack:
    def __init__(self, db_url: str, redis_url: str, tiny_models: dict[str, Path]) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.transport: httpx.BaseTransport | None = None  # httpx's own: over the network
        self.registry = model_registry(tiny_models)
        self.search_index_path = LOG_DIR / f"search-index-{self.port}.sqlite3"
        self.env = {**os.environ, **STACK_ENV, "DATABASE_URL": db_url, "REDIS_URL": redis_url,
                    "CELERY_BROKER_URL": redis_url, "PYTHONUNBUFFERED": "1",
                    "MODEL_REGISTRY": json.dumps(self.registry),
                    "PUBLIC_BASE_URL": f"http://127.0.0.1:{self.port}",
                    "CONTAINERS_DIR": str(LOG_DIR / f"containers-{self.port}"),
                    "FILES_DIR": str(FILES_DIR),
                    "WEB_SEARCH_INDEX_PATH": str(self.search_index_path)}
        self.queue = f"test-{self.port}"
        self.processes: dict[str, subprocess.Popen] = {}
        LOG_DIR.mkdir(parents=True, exist_ok=True)

    # --- processes -------------------------------------------------------------------------

    def commands(self) -> dict[str, list[str]]:
        bin_dir = Path(sys.executable).parent
        # Worker and beat get a node name of their own so that several stacks (or a
        # developer's `make run`) on one Redis never answer each other's inspections.
        return {
            "web": [str(bin_dir / "daphne"), "-e", f"tcp:port={self.port}:interface=127.0.0.1:backlog=1024",
                    "project.asgi:application"],
            "worker": [str(bin_dir / "celery"), "-A", "project", "worker", "--pool", "threads", "--concurrency",
                       "16", "--queues", "celery,model.echo,model.echo-short,model.echo-summarized,webhooks",
                       "--hostname", f"worker-{self.port}@%h",
                       "--loglevel", "INFO", "--without-gossip", "--without-mingle"],
            "beat": [str(bin_dir / "celery"), "-A", "project", "beat", "--loglevel", "INFO", "--scheduler",
                     "django_celery_beat.schedulers:DatabaseScheduler"],
            # The GPU-node worker: only the vLLM models' queues; it is ready once they are loaded.
            "vllm-worker": self.vllm_worker("vllm-worker"),
            # A second vLLM node (a NODE_ID of its own): dispatch between two nodes of one model.
            "vllm-worker2": self.vllm_worker("vllm-worker2"),
        }

    def vllm_worker(self, name: str) -> list[str]:
        return [str(Path(sys.executable).parent / "celery"), "-A", "project", "worker", "--pool", "threads",
                "--concurrency", "16", "--queues", ",".join(self.vllm_queues()),
                "--hostname", f"{name}-{self.port}@%h", "--loglevel", "INFO", "--without-gossip", "--without-mingle"]

    def vllm_queues(self) -> list[str]:
        return [f"model.{model}" for model, entry in self.registry.items()
                if entry["engine"] == "vllm" and model != NODE_MODEL]

    def start(self, name: str) -> None:
        log = open(LOG_DIR / f"{name}-{self.port}.log", "ab")  # noqa: SIM115 - owned by the process
        self.processes[name] = subprocess.Popen(self.commands()[name], cwd=ROOT, env=self.process_env(name),
                                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        if name == "web":
            self.wait_for_web()
        if "worker" in name:
            self.wait_for_worker(name, timeout=420 if name.startswith("vllm-worker") else 60)

    def restart_in_background(self, name: str, on_failure: Callable[[], None]) -> Restart:
        """Start ``name`` again from a thread while the test reads a stream; should it not
        start, ``on_failure`` runs (the test closes its stream) and ``Restart.wait`` raises why."""
        restart = Restart(self, name, on_failure)
        restart.start()
        return restart

    def process_env(self, name: str) -> dict[str, str]:
        if name.startswith("vllm-worker"):
            # The trained tiny model learned the python tool's description with this timeout
            # (devtools/transcripts.PYTHON_TIMEOUT_S); the echo worker keeps the short one.
            return {**self.env, "TOOL_CALL_TIMEOUT_S": "30", "NODE_ID": f"{name}-{self.port}"}
        return self.env

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        process = self.processes.pop(name, None)
        if process is None:
            return
        try:
            os.killpg(process.pid, sig)
            process.wait(timeout=30)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:  # a worker still stopping its engines
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)

    def ensure_running(self) -> list[str]:
        """Start web, worker and beat where one is not running; the names it started."""
        started = []
        for name in ("web", "worker", "beat"):
            process = self.processes.get(name)
            if process is None or process.poll() is not None:
                self.start(name)
                started.append(name)
        return started

    def stop(self) -> None:
        for name in list(self.processes):
            self.kill(name, signal.SIGTERM)

    def wait_for_web(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{self.base_url}/models", timeout=1)
                return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise RuntimeError("daphne did not start; see " + str(LOG_DIR))

    def wait_for_worker(self, name: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.processes[name].poll() is not None:
                raise RuntimeError(f"the {name} exited; the end of its log:\n{self.log_tail(name)}")
            if self.inspect("ping", name):
                return
            time.sleep(0.5)
        raise RuntimeError(f"the {name} did not start in {timeout:.0f} s; the end of its log:\n{self.log_tail(name)}")

    def log_tail(self, name: str, lines: int = 30) -> str:
        log = LOG_DIR / f"{name}-{self.port}.log"
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else "(no log)"

    # --- inspection ----------------------------------------------------------------------------

    def inspect(self, method: str, worker: str = "worker") -> dict:
        from project.celery import app

        replies = app.control.broadcast(method, reply=True, timeout=2,
                                        destination=[f"{worker}-{self.port}@{socket.gethostname()}"])
        return {name: body for reply in replies or [] for name, body in reply.items()}

    def engine_report(self, model: str, worker: str = "vllm-worker") -> dict:
        """What the worker's engine for ``model`` reports (running, aborted, scheduler)."""
        return next(iter(self.inspect("engine_requests", worker).values()), {}).get(model, {})

    def engine_requests(self, model: str = "echo") -> dict[str, list[str]]:
        replies = self.inspect("engine_requests")
        merged: dict[str, list[str]] = {"running": [], "aborted": []}
        for reply in replies.values():
            for key in merged:
                merged[key] += reply.get(model, {}).get(key, [])
        return merged


class Restart(threading.Thread):
    """A stack process started again in the background (LiveStack.restart_in_background)."""

    def __init__(self, stack: LiveStack, name: str, on_failure: Callable[[], None]) -> None:
        super().__init__(name=f"restart-{name}", daemon=True)
        self.stack, self.process, self.on_failure = stack, name, on_failure
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.stack.start(self.process)
        except BaseException as error:  # noqa: BLE001 - kept for the test's thread to raise
            self.error = error
            self.on_failure()

    def wait(self) -> None:
        """Until the process is ready; its error if it did not start."""
        self.join()
        if self.error is not None:
            raise self.error

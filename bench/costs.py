"""CPU time per unit of work, on the real code paths in one process, with the echo engine.

Wall-clock figures move with whatever else a shared machine runs; CPU time per unit does
not. This bench runs the server's own code in process (no Daphne, Celery or HTTP client in
between) and reads thread CPU clocks:

- worker: CPU µs per streamed token of the worker's threads that run ``run_response``
  (the task threads, the engine loop, the committer and the database threads), less the
  echo engine's own share, measured apart at the same pace (on a GPU node that is vLLM's
  share), for a plain answer, a reasoning + answer, and a function call; split into harmony parsing,
  event building, persistence (the batch transactions and the end, packing included), the
  doorbell (Redis PUBLISH) and the rest (claim, prompt, queue hand-off);
- web: CPU ms per create, streaming and background (the ASGI application called directly:
  its loop thread up to the first frame, plus its database threads), split into
  authentication, validation, the prompt length check, the inserts and the enqueue; and,
  beside it, the least any request costs: an authenticated ``GET /v1/models/echo``;
- serve: CPU ms per 1,000 events to a live SSE reader (following a response while the
  worker writes it) and to a replay of a finished one.

Phases are timed by wrapping the named functions (exclusive time: a phase inside another is
charged to itself only); the product code is unchanged. Each round also times a fixed
calibration workload (``calibration_ms``) before and after its work, and each figure is
given scaled by how fast the machine ran that round, as measured: the scaled figure of the
median round is the headline, printed with the range of the rounds. Each database runs in a child
process of its own (settings are read at import):

    .venv/bin/python bench/costs.py [--databases postgresql,sqlite] [--responses 24] [--creates 100]
                                    [--rounds 3]

It starts its own PostgreSQL and Redis (scripts/test-services.sh in .run/bench-costs) and
stops them. The last line is ``costs: worker <x> us/token, create <y> ms, serve <z> ms/1000
events`` (the first database's figures; the create is the streaming one, the serve the
live reader).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script, only bench/ would be on sys.path
    sys.path.insert(0, str(ROOT))

from bench.harness import per_database  # noqa: E402

SERVICES_DIR = ROOT / ".run" / "bench-costs"
WORKER_PHASES = ("parsing", "building", "persistence", "doorbell", "other")
CREATE_PHASES = ("authentication", "validation", "prompt check", "inserts", "enqueue", "other")
WORDS = 400  # the answer of each worker case: about 800 output tokens
WORKER_THREADS = 4
TOKEN_DELAY_MS = "1"  # batches of about 50 events, as with a real engine (sleeping costs no CPU)


# --- exclusive CPU time per phase ------------------------------------------------------------


class PhaseClock:
    """CPU time (time.thread_time) of each thread by phase: a wrapped function's time is
    charged to its phase, less the time of wrapped functions it calls."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._lock = threading.Lock()
        self.totals: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)  # by wrapped function

    def wrap(self, owner: Any, name: str, phase: str) -> None:
        function = getattr(owner, name)

        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self.calls[name] += 1
            self._enter(phase)
            try:
                return function(*args, **kwargs)
            finally:
                self._exit()

        setattr(owner, name, timed)

    def reset(self) -> None:
        with self._lock:
            self.totals.clear()
            self.calls.clear()

    def _stack(self) -> list[list[Any]]:
        if not hasattr(self._local, "stack"):
            self._local.stack = []
        return self._local.stack

    def _enter(self, phase: str) -> None:
        now, stack = time.thread_time(), self._stack()
        if stack:
            self._add(stack[-1][0], now - stack[-1][1])
        stack.append([phase, now])

    def _exit(self) -> None:
        now, stack = time.thread_time(), self._stack()
        phase, since = stack.pop()
        self._add(phase, now - since)
        if stack:
            stack[-1][1] = now

    def _add(self, phase: str, seconds: float) -> None:
        with self._lock:
            self.totals[phase] += seconds


def thread_cpu(prefixes: tuple[str, ...]) -> float:
    """CPU seconds so far of the live threads whose names start with one of ``prefixes``."""
    total = 0.0
    for thread in threading.enumerate():
        if thread.name.startswith(prefixes) and thread.ident is not None:
            try:
                total += time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
            except OSError:
                pass  # ended meanwhile
    return total


# --- a yardstick for the machine's speed in each round ----------------------------------------

# The calibration's CPU time on this development machine at its usual speed; every figure is
# also given scaled by REFERENCE / the calibration timed in its own round.
CALIBRATION_REFERENCE_MS = 16.0


def calibration_ms() -> float:
    """Thread CPU ms of a fixed piece of the kind of work the server does (JSON text, dicts,
    strings, SQLite statements in memory), the median of 5 runs: how fast this machine runs
    Python right now. Thread CPU time on a shared virtual machine moves by 10-30% with its
    neighbours; the same work timed beside the figures moves with it."""
    import sqlite3

    event = {"type": "response.output_text.delta", "sequence_number": 0, "item_id": "msg_" + "0" * 48,
             "output_index": 0, "content_index": 0, "delta": " word", "logprobs": [], "obfuscation": "abcd"}
    runs = []
    for _ in range(5):
        started = time.thread_time()
        database = sqlite3.connect(":memory:")
        database.execute("CREATE TABLE e (n INTEGER PRIMARY KEY, kind TEXT, data TEXT)")
        for n in range(2000):
            text = json.dumps({**event, "sequence_number": n}, separators=(",", ":"))
            database.execute("INSERT INTO e VALUES (?, ?, ?)", (n, event["type"], text))
            json.loads(text)
            f"event: {event['type']}\ndata: {text}\n\n".encode()
        database.close()
        runs.append((time.thread_time() - started) * 1e3)
    return sorted(runs)[2]


def scaled(value: float, calibration: float) -> float:
    return value * CALIBRATION_REFERENCE_MS / calibration


# --- the child: one database ---------------------------------------------------------------


def child(database_url: str, redis_url: str, args: argparse.Namespace) -> dict[str, Any]:
    os.environ.update(DATABASE_URL=database_url, REDIS_URL=redis_url, CELERY_BROKER_URL=redis_url,
                      DJANGO_SETTINGS_MODULE="project.settings", LOG_LEVEL="WARNING", ECHO_TOKEN_DELAY_MS="0")
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    call_command("migrate", "--noinput", verbosity=0)
    settings.TENANT_MAX_CONCURRENT_FOREGROUND = 0  # creates pile up queued here: no worker takes them
    from responses_app.lib.redis_client import shared_client
    from responses_app.tenancy.api_keys import create_api_key

    # Creates send their task to the broker as in production; no worker consumes it (the
    # bench runs each response itself), and the bench's own Redis is emptied at the end.
    _, key = create_api_key(f"bench-costs-{os.getpid()}")
    if args.node and args.node_peer is None and args.node_processes > 1:
        try:
            return {"node": node_of_processes(database_url, redis_url, args)}
        finally:
            shared_client().flushdb()
    if args.node:
        lag = CommitLag()
        lag.install()
        barrier = NodeBarrier(Path(args.node_barrier), args.node_processes, args.node_peer) if args.node_peer else None
        try:
            return {"node": measure_node(lag, key, args.node_rates, args.node_responses, barrier)}
        finally:
            if args.node_peer is None:
                shared_client().flushdb()
    clock = PhaseClock()
    _wrap_phases(clock)
    web = WebLoop()
    try:
        worker = {case: measure_worker(clock, key, case, args.responses, args.rounds) for case in WORKER_CASES}
        creates = {kind: measure_creates(clock, web, key, kind, args.creates, args.rounds)
                   for kind in ("streaming", "background")}
        least = measure_least_request(web, key, args.creates, args.rounds)
        serve = measure_serving(web, key)
    finally:
        web.close()
        shared_client().flushdb()
    return {"worker": worker, "creates": creates, "least_request": least, "serve": serve}


def _wrap_phases(clock: PhaseClock) -> None:
    from responses_app.api import views
    from responses_app.harmony.parser import OutputParser
    from responses_app.http import authentication
    from responses_app.services import create
    from responses_app.stream import doorbell
    from responses_app.stream.builder import EventBuilder
    from responses_app.worker import batch_writer, group_commit

    for owner, name, phase in (
        (OutputParser, "feed", "parsing"), (OutputParser, "close", "parsing"),
        (EventBuilder, "apply", "building"), (EventBuilder, "lifecycle", "building"),
        (EventBuilder, "close_open_item", "building"),
        (group_commit, "save_group", "persistence"), (batch_writer.BatchWriter, "settle", "other"),
        (group_commit, "save_events", "persistence"), (batch_writer, "end_response", "persistence"),
        (doorbell, "ring", "doorbell"), (doorbell, "ring_many", "doorbell"),
        (authentication.ApiKeyAuthentication, "authenticate", "authentication"),
        (views, "json_body", "validation"), (views, "parse_create_request", "validation"),
        (create, "check_prompt", "prompt check"),
        (views, "create_response", "inserts"),
        (create, "try_send", "enqueue"),
    ):
        clock.wrap(owner, name, phase)


# --- worker ----------------------------------------------------------------------------------


def _plain(words: int) -> str:
    answer = " ".join(f"w{i % 97}" for i in range(words))
    return f"<|channel|>final<|message|>{answer}<|return|>"


def _reasoning(words: int) -> str:
    half = " ".join(f"r{i % 89}" for i in range(words // 2))
    return f"<|channel|>analysis<|message|>{half}<|end|><|start|>assistant{_plain(words // 2)}"


def _function_call(words: int) -> str:
    arguments = json.dumps({"items": [f"a{i % 83}" for i in range(words)]})
    return (f"<|channel|>commentary to=functions.record <|constrain|>json<|message|>{arguments}<|call|>")


WORKER_CASES: dict[str, tuple[Callable[[int], str], list[dict[str, Any]]]] = {
    "plain answer": (_plain, []),
    "reasoning + answer": (_reasoning, []),
    "function call": (_function_call, [{"type": "function", "name": "record", "parameters": {"type": "object"}}]),
}


def median_round(rounds: list[dict[str, Any]], figure: str) -> dict[str, Any]:
    """The round whose ``figure`` is the median (its phases add up), with the rounds' range."""
    ordered = sorted(rounds, key=lambda round_: round_[figure])
    return {**ordered[len(ordered) // 2], "range": [ordered[0][figure], ordered[-1][figure]]}


WORKER_THREAD_NAMES = ("bench-task", "node-task", "engine-loop", "group-commit", "worker-db", "worker-tool")


def echo_alone(response_ids: list[str], times: int) -> float:
    """CPU seconds of the echo engine alone on a loop of its own: the outputs of
    ``response_ids`` (their prompts and pace), at once, ``times`` outputs in all. It shares
    the engine loop's thread with the responses, so its share is measured apart and taken
    off the worker's CPU."""
    from responses_app.context.history import response_prompt
    from responses_app.engines.base import SamplingParams
    from responses_app.engines.echo import EchoEngine
    from responses_app.harmony.encoding import stop_token_ids
    from responses_app.models import Response

    engine = EchoEngine()
    requests = []
    for response in Response.objects.filter(pk__in=response_ids):
        prompt, _ = response_prompt(response)
        requests.append((prompt, SamplingParams(stop_token_ids=stop_token_ids(),
                                                metadata=response.request.get("metadata") or {})))

    async def drain(prompt: list[int], params: Any, request_id: str) -> None:
        async for _ in engine.generate(prompt, params, request_id):
            pass

    async def all_of_them() -> None:
        for start in range(0, times, len(requests)):
            batch = requests[:min(len(requests), times - start)]
            await asyncio.gather(*(drain(prompt, params, f"alone-{start}-{index}")
                                   for index, (prompt, params) in enumerate(batch)))

    cpu = {}

    def target() -> None:
        started = time.thread_time()
        asyncio.run(all_of_them())
        cpu["seconds"] = time.thread_time() - started

    thread = threading.Thread(target=target, name="bench-echo-alone")
    thread.start()
    thread.join()
    return cpu["seconds"]


def measure_worker(clock: PhaseClock, key: str, case: str, count: int, rounds: int) -> dict[str, Any]:
    return median_round([_worker_round(clock, key, case, count) for _ in range(rounds)], "scaled_us_per_token")


def _worker_round(clock: PhaseClock, key: str, case: str, count: int) -> dict[str, Any]:
    """``count`` responses of the case, WORKER_THREADS at a time on task threads of this process."""
    from responses_app.models import Response
    from responses_app.services.create import create_response
    from responses_app.tenancy.api_keys import authenticate_bearer
    from responses_app.validation.create import parse_create_request
    from responses_app.worker.run import run_response

    script, tools = WORKER_CASES[case]
    tenant = authenticate_bearer(f"Bearer {key}").tenant
    body = {"model": "echo", "input": script(WORDS), "tools": tools, "background": True,
            "metadata": {"echo_token_delay_ms": TOKEN_DELAY_MS}}
    ids = [create_response(tenant, parse_create_request(body)).pk for _ in range(count + 2)]
    warm, ids = ids[:2], ids[2:]
    for response_id in warm:
        run_response(response_id)
    clock.reset()
    task_cpu = [0.0]

    def run(response_id: str) -> None:
        run_response(response_id)

    calibration = calibration_ms()
    # The responses run on the engine loop; their batches are committed on the committer
    # thread, their ends in the worker's database threads (worker/off_loop.py).
    worker_before = thread_cpu(WORKER_THREAD_NAMES)
    with ThreadPoolExecutor(WORKER_THREADS, thread_name_prefix="bench-task") as pool:
        list(pool.map(run, ids))
    task_cpu[0] = thread_cpu(WORKER_THREAD_NAMES) - worker_before
    engine = echo_alone(ids[:WORKER_THREADS], len(ids))
    task_cpu[0] -= engine
    calibration = (calibration + calibration_ms()) / 2
    rows = list(Response.objects.filter(pk__in=ids).values_list("status", "usage", "last_sequence_number"))
    if {status for status, _, _ in rows} != {"completed"}:
        raise RuntimeError(f"{case}: responses ended {sorted({status for status, _, _ in rows})}")
    tokens = sum(usage["output_tokens"] for _, usage, _ in rows)
    events = sum(last + 1 for _, _, last in rows)
    phases = {phase: clock.totals.get(phase, 0.0) for phase in WORKER_PHASES[:-1]}
    phases["other"] = task_cpu[0] - sum(phases.values())
    return {"tokens": tokens, "events": events, "batches": clock.calls["settle"],
            "calibration_ms": calibration, "task_us_per_token": task_cpu[0] / tokens * 1e6,
            "scaled_us_per_token": scaled(task_cpu[0] / tokens * 1e6, calibration),
            "engine_us_per_token": engine / tokens * 1e6,
            "phases_us_per_token": {phase: seconds / tokens * 1e6 for phase, seconds in phases.items()}}


# --- web -------------------------------------------------------------------------------------


class WebLoop:
    """The ASGI application on an event loop thread of its own, as in a Daphne process."""

    def __init__(self) -> None:
        from project.asgi import application

        self.app = application
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="web-loop", daemon=True)
        self.thread.start()

    def run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=600)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)

    async def request(self, method: str, path: str, key: str, body: dict | None = None, query: str = "",
                      first_frame_only: bool = False) -> tuple[int, int, float]:
        """(status, SSE frames or body bytes, this loop thread's CPU seconds until the answer
        ended, or until its first frame)."""
        started = time.thread_time()
        raw = json.dumps(body).encode() if body is not None else b""
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
                 "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query.encode(),
                 "root_path": "", "client": ("127.0.0.1", 40000), "server": ("bench", 80),
                 "headers": [(b"host", b"bench"), (b"authorization", f"Bearer {key}".encode()),
                             (b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]}
        sent_body = False
        hung_up = asyncio.Event()
        done = asyncio.Event()
        answer = {"status": 0, "frames": 0, "bytes": 0, "cpu": 0.0}

        async def receive() -> dict[str, Any]:
            nonlocal sent_body
            if not sent_body:
                sent_body = True
                return {"type": "http.request", "body": raw, "more_body": False}
            await hung_up.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                answer["status"] = message["status"]
            elif message["type"] == "http.response.body":
                chunk = message.get("body", b"").replace(b": keep-alive\n\n", b"")
                answer["frames"] += chunk.count(b"\n\n")
                answer["bytes"] += len(chunk)
                if not message.get("more_body") or (first_frame_only and answer["frames"]):
                    if not done.is_set():
                        answer["cpu"] = time.thread_time() - started
                    done.set()

        task = asyncio.ensure_future(self.app(scope, receive, send))
        await done.wait()
        hung_up.set()
        await task
        return answer["status"], answer["frames"] or answer["bytes"], answer["cpu"]


def measure_creates(clock: PhaseClock, web: WebLoop, key: str, kind: str, count: int, rounds: int,
                    ) -> dict[str, Any]:
    return median_round([_creates_round(clock, web, key, kind, count) for _ in range(rounds)], "scaled_ms_per_create")


def _creates_round(clock: PhaseClock, web: WebLoop, key: str, kind: str, count: int) -> dict[str, Any]:
    """``count`` creates, one after another: the loop thread's CPU to the first frame (streaming)
    or the JSON answer (background), and the database threads' CPU."""
    body = {"model": "echo", "input": "What is the capital of France?", "background": True}
    if kind == "streaming":
        body["stream"] = True
    for _ in range(5):  # warm-up: connections, the doorbell's hub, caches
        web.run(web.request("POST", "/v1/responses", key, body, first_frame_only=True))
    clock.reset()
    loop_cpu, db_cpu, calibration = _requests_in_turn(web, key, "POST", "/v1/responses", body, count)
    phases = {phase: clock.totals.get(phase, 0.0) for phase in CREATE_PHASES[:-1]}
    phases["other"] = loop_cpu + db_cpu - sum(phases.values())
    return {"ms_per_create": (loop_cpu + db_cpu) / count * 1e3, "calibration_ms": calibration,
            "scaled_ms_per_create": scaled((loop_cpu + db_cpu) / count * 1e3, calibration),
            "loop_ms": loop_cpu / count * 1e3,
            "db_threads_ms": db_cpu / count * 1e3,
            "phases_ms": {phase: seconds / count * 1e3 for phase, seconds in phases.items()}}


def measure_least_request(web: WebLoop, key: str, count: int, rounds: int) -> dict[str, Any]:
    return median_round([_least_request_round(web, key, count) for _ in range(rounds)], "scaled_ms_per_request")


def _least_request_round(web: WebLoop, key: str, count: int) -> dict[str, Any]:
    """What a create costs before any of its own work: ``count`` authenticated
    ``GET /v1/models/echo`` (Django's and DRF's request handling, the key from its cache, a
    small JSON answer), the loop thread's and the database threads' CPU."""
    for _ in range(5):
        web.run(web.request("GET", "/v1/models/echo", key))
    loop_cpu, db_cpu, calibration = _requests_in_turn(web, key, "GET", "/v1/models/echo", None, count)
    cpu = loop_cpu + db_cpu
    return {"ms_per_request": cpu / count * 1e3, "calibration_ms": calibration,
            "scaled_ms_per_request": scaled(cpu / count * 1e3, calibration)}


def _requests_in_turn(web: WebLoop, key: str, method: str, path: str, body: dict | None, count: int,
                      ) -> tuple[float, float, float]:
    """``count`` requests, one after another: the loop thread's CPU seconds (to a stream's
    first frame, or the whole answer), the database threads' CPU seconds, and the
    calibration taken before and after them."""
    calibration = calibration_ms()
    db_before = thread_cpu(("db-",))
    loop_cpu = 0.0
    for _ in range(count):
        status, _, cpu = web.run(web.request(method, path, key, body, first_frame_only=True))
        if status != 200:
            raise RuntimeError(f"{method} {path} answered {status}")
        loop_cpu += cpu
    db_cpu = thread_cpu(("db-",)) - db_before
    return loop_cpu, db_cpu, (calibration + calibration_ms()) / 2


def measure_serving(web: WebLoop, key: str) -> dict[str, Any]:
    """A live reader following a response while a task thread writes it, then replays of it."""
    from responses_app.worker.run import run_response

    body = {"model": "echo", "input": _plain(1500), "background": True, "stream": True,
            "metadata": {"echo_token_delay_ms": TOKEN_DELAY_MS}}
    status, _, _ = web.run(web.request("POST", "/v1/responses", key, body, first_frame_only=True))
    response_id = _newest_response_id()
    with _cpu_of(("web-loop", "db-")) as live:
        worker = threading.Thread(target=run_response, args=(response_id,), name="bench-task")
        worker.start()
        _, live_frames, _ = web.run(web.request("GET", f"/v1/responses/{response_id}", key,
                                                query="stream=true&starting_after=-1"))
        worker.join()
    # Per token as well: with MERGE_STREAM_DELTAS an event carries a commit's tokens.
    tokens = _output_tokens(response_id)
    calibration = calibration_ms()
    replays, replay_frames = 5, 0
    web.run(web.request("GET", f"/v1/responses/{response_id}", key, query="stream=true"))  # packs, caches
    with _cpu_of(("web-loop", "db-")) as replay:
        for _ in range(replays):
            replay_frames += web.run(web.request("GET", f"/v1/responses/{response_id}", key,
                                                 query="stream=true"))[1]
    calibration = (calibration + calibration_ms()) / 2
    live_ms, replay_ms = live["cpu"] / live_frames * 1e6, replay["cpu"] / replay_frames * 1e6
    live_token_ms, replay_token_ms = live["cpu"] / tokens * 1e6, replay["cpu"] / (tokens * replays) * 1e6
    return {"events": live_frames, "tokens": tokens, "calibration_ms": calibration, "live_ms_per_1000": live_ms,
            "replay_ms_per_1000": replay_ms, "scaled_live_ms_per_1000": scaled(live_ms, calibration),
            "scaled_replay_ms_per_1000": scaled(replay_ms, calibration),
            "scaled_live_ms_per_1000_tokens": scaled(live_token_ms, calibration),
            "scaled_replay_ms_per_1000_tokens": scaled(replay_token_ms, calibration)}


def _newest_response_id() -> str:
    from responses_app.models import Response

    return Response.objects.order_by("-created_at").values_list("pk", flat=True).first()


def _output_tokens(response_id: str) -> int:
    from responses_app.models import Response

    return Response.objects.get(pk=response_id).usage["output_tokens"]


@contextmanager
def _cpu_of(prefixes: tuple[str, ...]) -> Iterator[dict[str, float]]:
    result = {"cpu": 0.0}
    before = thread_cpu(prefixes)
    yield result
    result["cpu"] = thread_cpu(prefixes) - before


# --- a GPU node: a synthetic engine at set aggregate token rates -------------------------------

NODE_SECONDS = 12.0  # how long each response streams at the offered rate
KEEP_UP_SHARE = 0.95  # of the offered rate, achieved while all responses stream
KEEP_UP_LAG_S = 0.100  # p99 from a token's emission to its event's commit


class CommitLag:
    """When the engine emitted each token, and how long each waited for its event's commit.

    The echo engine's ``generate`` stamps each token as it yields it (on the engine loop);
    each response counts the tokens it took from the engine host's stream; the flusher's
    draining of a response's builder (``take_batch``) marks the tokens taken so far, and
    the commit of that batch (``settle``), or the response's end, settles them; tokens
    whose parsing made no event are settled at the writer's next tick."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.emitted: dict[str, list[float]] = defaultdict(list)  # response id -> each token's emission
        self._taken: dict[str, int] = defaultdict(int)
        self._drained: dict[str, int] = defaultdict(int)
        self._settled: dict[str, int] = defaultdict(int)
        self.lags: list[tuple[float, float]] = []  # (emission, wait until committed)

    def reset(self) -> None:
        with self._lock:
            for table in (self.emitted, self._taken, self._drained, self._settled):
                table.clear()
            self.lags.clear()

    def install(self) -> None:
        from responses_app.engines.echo import EchoEngine
        from responses_app.engines.host import EngineHost
        from responses_app.worker.batch_writer import BatchWriter

        lag, generate, stream = self, EchoEngine.generate, EngineHost.stream
        take_batch, settle, end, tick = BatchWriter.take_batch, BatchWriter.settle, BatchWriter.end, BatchWriter.tick

        async def stamped(engine: Any, prompt: list[int], params: Any, request_id: str) -> Any:
            async for chunk in generate(engine, prompt, params, request_id):
                now = time.monotonic()
                with lag._lock:
                    lag.emitted[request_id.split(":")[0]].extend([now] * len(chunk.token_ids))
                yield chunk

        async def counted(host: Any, model: str, prompt: list[int], params: Any, request_id: str,
                          **kwargs: Any) -> Any:
            inner = stream(host, model, prompt, params, request_id, **kwargs)
            response_id = request_id.split(":")[0]
            try:
                async for chunk in inner:
                    if chunk is not None:
                        lag._taken[response_id] += len(chunk.token_ids)
                    yield chunk
            finally:
                await inner.aclose()  # the caller closing this stream aborts the engine request

        def drained(writer: Any) -> Any:
            if writer._unsaved is None:  # a new batch: the tokens taken so far are in it
                lag._drained[writer.response.pk] = lag._taken[writer.response.pk]
            return take_batch(writer)

        def settled(writer: Any, outcome: Any) -> None:
            settle(writer, outcome)
            if isinstance(outcome, bool):
                lag._settle(writer.response.pk, lag._drained[writer.response.pk])

        async def ticked(writer: Any) -> None:
            await tick(writer)
            if not writer.builder.has_pending_events and writer._unsaved is None:
                # Nothing of the tokens taken so far waits for a commit (a token that made
                # no event of its own, a header's, is not held to the next one's).
                lag._settle(writer.response.pk, lag._taken[writer.response.pk])

        async def ended(writer: Any, *args: Any, **kwargs: Any) -> None:
            await end(writer, *args, **kwargs)
            lag._settle(writer.response.pk, lag._taken[writer.response.pk])

        EchoEngine.generate, EngineHost.stream = stamped, counted
        BatchWriter.take_batch, BatchWriter.settle, BatchWriter.end, BatchWriter.tick = drained, settled, ended, ticked

    def _settle(self, response_id: str, upto: int) -> None:
        now = time.monotonic()
        with self._lock:
            stamps = self.emitted[response_id][self._settled[response_id]:upto]
            self._settled[response_id] = max(upto, self._settled[response_id])
            self.lags.extend((stamp, now - stamp) for stamp in stamps)

    def steady(self) -> tuple[float, float, int, list[float]]:
        """While every response streamed (from the last first token to the first last token:
        not the burst of starts nor the ends): its start and end, the tokens emitted in it,
        and their commit lags, sorted."""
        with self._lock:
            streams = [stamps for stamps in self.emitted.values() if stamps]
            lags = list(self.lags)
        start, end = max(stamps[0] for stamps in streams), min(stamps[-1] for stamps in streams)
        if end <= start:
            raise RuntimeError("the responses never all streamed at once: raise --node-rates or NODE_SECONDS")
        tokens = sum(1 for stamps in streams for stamp in stamps if start <= stamp <= end)
        return start, end, tokens, sorted(wait for stamp, wait in lags if start <= stamp <= end)


class CpuSamples:
    """The process's CPU, sampled every 50 ms on a thread of its own, to read the CPU of a
    window known only afterwards (CommitLag.steady)."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float]] = []  # (monotonic, process CPU)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-cpu-samples", daemon=True)

    def __enter__(self) -> CpuSamples:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.samples.append((time.monotonic(), time.process_time()))

    def between(self, start: float, end: float) -> float:
        """The process's CPU seconds from ``start`` to ``end`` (between the samples around them)."""
        inside = [sample for sample in self.samples if start <= sample[0] <= end]
        first, last = inside[0], inside[-1]
        return (last[1] - first[1]) * (end - start) / (last[0] - first[0])


def measure_node(lag: CommitLag, key: str, rates: list[int], count: int,
                 barrier: NodeBarrier | None = None) -> dict[str, Any]:
    """``count`` plain answers streaming at once in this process (each taken by a task thread,
    as a worker's, then run on the engine loop), the echo engine spacing each one's tokens so
    that together they come at each offered rate: the achieved rate, the commit lag, the
    process's CPU per token (less the echo engine's own, measured apart at the same pace)."""
    from responses_app.models import Response
    from responses_app.services.create import create_response
    from responses_app.tenancy.api_keys import authenticate_bearer
    from responses_app.validation.create import parse_create_request

    tenant = authenticate_bearer(f"Bearer {key}").tenant
    levels = {}
    for rate in rates:
        delay_ms = count / rate * 1e3
        words = max(int(NODE_SECONDS * rate / count / 2), 10)  # about two tokens a word
        body = {"model": "echo", "input": _plain(words), "background": True,
                "metadata": {"echo_token_delay_ms": f"{delay_ms:.3f}"}}
        ids = [create_response(tenant, parse_create_request(body)).pk for _ in range(count)]
        if barrier is not None:
            barrier.wait(f"{rate}")  # the node's processes stream their shares at once
        lag.reset()
        calibration = calibration_ms()
        process_before, wall_before = time.process_time(), time.monotonic()
        with CpuSamples() as samples, ThreadPoolExecutor(count, thread_name_prefix="node-task") as pool:
            list(pool.map(_run_and_disconnect, ids))
        wall = time.monotonic() - wall_before
        process = time.process_time() - process_before
        start, end, window_tokens, lags = lag.steady()
        # The echo engine alone, at the same pace (its tokens stamped as in the run).
        engine = echo_alone(ids, count)
        calibration = (calibration + calibration_ms()) / 2
        rows = list(Response.objects.filter(pk__in=ids).values_list("status", "usage"))
        if {status for status, _ in rows} != {"completed"}:
            raise RuntimeError(f"node at {rate}/s: responses ended {sorted({status for status, _ in rows})}")
        tokens = sum(usage["output_tokens"] for _, usage in rows)
        steady_process = samples.between(start, end)
        steady_us = (steady_process / window_tokens - engine / tokens) * 1e6
        levels[rate] = {
            "achieved": window_tokens / (end - start), "window_tokens": window_tokens, "tokens": tokens,
            "wall_s": wall, "lag_p50_ms": lags[len(lags) // 2] * 1e3, "lag_p99_ms": lags[int(len(lags) * 0.99)] * 1e3,
            "calibration_ms": calibration, "steady_us_per_token": steady_us,
            "scaled_steady_us_per_token": scaled(steady_us, calibration),
            "whole_us_per_token": (process - engine) / tokens * 1e6, "engine_us_per_token": engine / tokens * 1e6,
            "process_cpu_share": steady_process / (end - start),
        }
        if barrier is not None:  # the node's parent merges its processes' waits
            levels[rate]["lags_ms"] = [round(wait * 1e3, 2) for wait in lags]
        levels[rate]["keeps_up"] = keeps_up(rate, levels[rate])
    return levels


class NodeBarrier:
    """Where the processes of a node (--node-processes) wait for one another before each
    rate, so that their responses stream at once: a file per process and rate."""

    def __init__(self, directory: Path, processes: int, peer: int) -> None:
        self.directory, self.processes, self.peer = directory, processes, peer

    def wait(self, name: str, timeout: float = 600) -> None:
        (self.directory / f"{name}-{self.peer}").touch()
        deadline = time.monotonic() + timeout
        while len(list(self.directory.glob(f"{name}-*"))) < self.processes:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the node's other processes never reached {name}")
            time.sleep(0.01)


def node_of_processes(database_url: str, redis_url: str, args: argparse.Namespace) -> dict[str, Any]:
    """--node with several worker processes: each runs its share of the responses at its
    share of each rate, all at once (NodeBarrier); the node's figures are their sum (the
    rate, the CPU) and the waits of all their tokens together (the lag)."""
    import subprocess
    import tempfile

    processes = args.node_processes
    with tempfile.TemporaryDirectory(prefix="bench-node-") as barrier:
        command = [sys.executable, __file__, "--node", "--node-rates",
                   ",".join(str(rate // processes) for rate in args.node_rates),
                   "--node-responses", str(args.node_responses // processes), "--node-processes", str(processes),
                   "--node-barrier", barrier, "--child", database_url, redis_url]
        peers = [subprocess.Popen([*command, "--node-peer", str(peer)], cwd=ROOT, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for peer in range(1, processes + 1)]
        outputs = [peer.communicate() for peer in peers]
    for peer, (_, stderr) in zip(peers, outputs, strict=True):
        if peer.returncode != 0:
            raise RuntimeError(f"a node process failed:\n{stderr[-4000:]}")
    shares = [json.loads(stdout.strip().splitlines()[-1])["node"] for stdout, _ in outputs]
    levels = {}
    for rate, share_rate in zip(args.node_rates, (rate // processes for rate in args.node_rates), strict=True):
        parts = [share[str(share_rate)] for share in shares]
        lags = sorted(wait for part in parts for wait in part["lags_ms"])
        tokens = sum(part["tokens"] for part in parts)
        levels[rate] = {
            "achieved": sum(part["achieved"] for part in parts),
            "window_tokens": sum(part["window_tokens"] for part in parts), "tokens": tokens,
            "lag_p50_ms": lags[len(lags) // 2], "lag_p99_ms": lags[int(len(lags) * 0.99)],
            "calibration_ms": sum(part["calibration_ms"] for part in parts) / processes,
            **{figure: sum(part[figure] * part["tokens"] for part in parts) / tokens
               for figure in ("steady_us_per_token", "scaled_steady_us_per_token", "whole_us_per_token",
                              "engine_us_per_token")},
            "process_cpu_share": sum(part["process_cpu_share"] for part in parts),
            "processes": processes,
        }
        levels[rate]["keeps_up"] = keeps_up(rate, levels[rate])
    return levels


def _run_and_disconnect(response_id: str) -> None:
    """run_response on a thread of its own, whose database connection is closed after it (a
    level's threads end with it)."""
    from django.db import connection

    from responses_app.worker.run import run_response

    try:
        run_response(response_id)
    finally:
        connection.close()


def keeps_up(rate: int, level: dict[str, Any]) -> bool:
    return level["achieved"] >= KEEP_UP_SHARE * rate and level["lag_p99_ms"] <= KEEP_UP_LAG_S * 1e3


# --- the parent: both databases, the report ----------------------------------------------------


def _processes(level: dict[str, Any]) -> str:
    return f"{level['processes']} processes together" if level.get("processes", 1) > 1 else "process"


def report(database: str, figures: dict[str, Any]) -> None:
    """Each figure scaled to the reference speed (the headline), then as measured, with the
    calibration of its round; phases as measured."""
    print(f"{database}:")
    if "node" in figures:
        for rate, level in figures["node"].items():
            print(f"  node, {rate} tokens/s offered: achieved {level['achieved']:.0f} "
                  f"({level['window_tokens']} tokens while all streamed), commit lag p50 {level['lag_p50_ms']:.0f} ms "
                  f"p99 {level['lag_p99_ms']:.0f} ms; worker CPU while all streamed "
                  f"{level['scaled_steady_us_per_token']:.1f} us/token (measured {level['steady_us_per_token']:.1f}, "
                  f"calibration {level['calibration_ms']:.1f} ms), {level['whole_us_per_token']:.1f} with the starts "
                  f"and ends; echo engine {level['engine_us_per_token']:.1f}; "
                  f"{_processes(level)} at {level['process_cpu_share']:.0%} of a core; "
                  f"{'keeps up' if level['keeps_up'] else 'falls behind'}",
                  flush=True)
        return
    for case, worker in figures["worker"].items():
        phases = ", ".join(f"{phase} {value:.1f}" for phase, value in worker["phases_us_per_token"].items())
        low, high = worker["range"]
        print(f"  worker, {case}: {worker['scaled_us_per_token']:.1f} us/token [rounds {low:.1f}-{high:.1f}]; "
              f"measured {worker['task_us_per_token']:.1f} ({phases}), calibration {worker['calibration_ms']:.1f} ms; "
              f"{worker['tokens']} tokens, {worker['events']} events in {worker['batches']} batches; "
              f"echo engine {worker['engine_us_per_token']:.1f}")
    for kind, create in figures["creates"].items():
        phases = ", ".join(f"{phase} {value:.2f}" for phase, value in create["phases_ms"].items())
        low, high = create["range"]
        print(f"  web, {kind} create: {create['scaled_ms_per_create']:.2f} ms [rounds {low:.2f}-{high:.2f}]; "
              f"measured {create['ms_per_create']:.2f} ({phases}), calibration {create['calibration_ms']:.1f} ms; "
              f"loop thread {create['loop_ms']:.2f}, database threads {create['db_threads_ms']:.2f}")
    least = figures["least_request"]
    low, high = least["range"]
    print(f"  web, the least request (GET /v1/models/echo): {least['scaled_ms_per_request']:.2f} ms [rounds "
          f"{low:.2f}-{high:.2f}]; measured {least['ms_per_request']:.2f}, "
          f"calibration {least['calibration_ms']:.1f} ms")
    serve = figures["serve"]
    print(f"  web, serving {serve['events']} events: live reader {serve['scaled_live_ms_per_1000']:.1f} ms/1000 "
          f"events, replay {serve['scaled_replay_ms_per_1000']:.1f}; measured {serve['live_ms_per_1000']:.1f} and "
          f"{serve['replay_ms_per_1000']:.1f}, calibration {serve['calibration_ms']:.1f} ms; per 1000 of its "
          f"{serve['tokens']} tokens: live reader {serve['scaled_live_ms_per_1000_tokens']:.1f} ms, replay "
          f"{serve['scaled_replay_ms_per_1000_tokens']:.1f}", flush=True)


def node_ceiling(levels: dict[Any, dict[str, Any]]) -> int:
    """The highest offered rate that one worker process kept up with (0: none)."""
    return max((int(rate) for rate, level in levels.items() if level["keeps_up"]), default=0)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--databases", default="postgresql,sqlite", type=lambda s: s.split(","))
    parser.add_argument("--responses", type=int, default=24, help="responses per worker case and round")
    parser.add_argument("--creates", type=int, default=100, help="creates per kind and round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each; the median round is reported")
    parser.add_argument("--node", action="store_true",
                        help="only the GPU-node mode: --node-responses plain answers at each of --node-rates")
    parser.add_argument("--node-rates", default="1000,2000,4000,8000,16000",
                        type=lambda s: [int(rate) for rate in s.split(",")], help="aggregate tokens/s offered")
    parser.add_argument("--node-responses", type=int, default=256, help="responses streaming at once")
    parser.add_argument("--node-processes", type=int, default=1,
                        help="worker processes of the node, each with its share of the responses and the rate")
    parser.add_argument("--node-peer", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--node-barrier", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child", nargs=2, metavar=("DATABASE_URL", "REDIS_URL"), help=argparse.SUPPRESS)
    return parser.parse_args()


def main() -> str:
    args = parse_args()
    if args.child:
        print(json.dumps(child(*args.child, args)))
        return ""
    node = ["--node", "--node-rates", ",".join(map(str, args.node_rates)), "--node-responses",
            str(args.node_responses), "--node-processes", str(args.node_processes)] if args.node else []
    results: dict[str, dict[str, Any]] = {}
    for database, figures in per_database(SERVICES_DIR, args.databases, __file__, [
            "--responses", str(args.responses), "--creates", str(args.creates), "--rounds", str(args.rounds), *node]):
        results[database] = figures
        report(database, figures)
    if args.node:
        processes = f" with {args.node_processes} worker processes" if args.node_processes > 1 else ""
        return f"node{processes}: " + ", ".join(f"{database} keeps up with {node_ceiling(figures['node'])} tokens/s"
                                                for database, figures in results.items())
    first = next(iter(results.values()))
    tokens = sum(case["tokens"] for case in first["worker"].values())
    worker = sum(case["scaled_us_per_token"] * case["tokens"] for case in first["worker"].values()) / tokens
    return (f"costs: worker {worker:.1f} us/token, create {first['creates']['streaming']['scaled_ms_per_create']:.2f} "
            f"ms, serve {first['serve']['scaled_live_ms_per_1000']:.1f} ms/1000 events")


if __name__ == "__main__":
    line = main()
    if line:
        print(line, flush=True)

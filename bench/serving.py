"""Serving at scale: the stack against the limit of its serving layer, side by side.

"stack" is ``make run``'s stack (Daphne, a Celery worker and beat, the echo engine at
zero delay, Redis) on PostgreSQL and then, in a second pass, on the SQLite default.
"limit" is bench/limit_server.py: Daphne and the same SSE framing serving one recorded
stream of the same script from memory, with no database, queue or worker. A light
client (httpx, counting frames, no JSON parsing) runs 1, 8, 32 and 128 concurrent
streaming creates of a 1,263-event echo script; the two sides take turns round by round
(3 rounds per level by default), which goes first alternating.

Per level it prints events/s (all frames / (last end - first submit), the median of the
rounds) and time to first event p50/p99 (submit to the first frame, over all rounds'
streams) for each side, and stack/limit. Then, per database, the replay of a finished
13,000-event response to one reader; with ``--fanout``, 1,000 readers of one running
response (echo at 5 ms per token) beside 128 concurrent streaming creates, with the
memory of the Daphne process.

    .venv/bin/python bench/serving.py [--levels 1,8,32,128] [--rounds 3] [--databases postgresql,sqlite]
                                      [--fanout]

It starts its own PostgreSQL and Redis (scripts/test-services.sh in .run/bench-serving)
and stops everything it started, also on Ctrl-C. Figures are printed, never asserted.
The last line is ``serving at 32 concurrent: events/s stack/limit <r>, ttfe p50 stack/limit
<t>`` (the first database's pass).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script, only bench/ would be on sys.path
    sys.path.insert(0, str(ROOT))

from bench.harness import (  # noqa: E402
    CpuSpec,
    cpu_delta,
    cpu_seconds,
    django_on_services,  # noqa: E402
    service_pids,
)

SERVICES_DIR = ROOT / ".run" / "bench-serving"
# Production timings, not the live tests' short ones: the bench measures what a deployment pays.
TEST_ONLY_ENV = ("RESPONSE_LEASE_TTL_S", "RESPONSE_LEASE_RENEW_S", "REAPER_INTERVAL_S", "PURGE_INTERVAL_S",
                 "UNSTORED_RETENTION_S", "SSE_KEEPALIVE_S", "ECHO_TOKEN_DELAY_MS", "TOOL_CALL_TIMEOUT_S")
SETTLE_S = 1.0
EVENTS = 1263
# Words of the script's answer that give EVENTS events at zero delay (bench checks the count).
SCRIPT_WORDS = 621
REPLAY_WORDS = 6490  # ~13,000 events
SIZE_WORDS = 500  # ~1,000 output tokens
SIZE_RESPONSES = 20
FANOUT_READERS = 1000
FANOUT_CREATES = 128
FANOUT_DELAY_MS = 5
FANOUT_WORDS = 1500  # ~15 s of tokens at FANOUT_DELAY_MS: the readers join while it runs
KEEPALIVE = b": keep-alive\n\n"


def script(words: int, tag: str = "of 1263 events") -> str:
    """Harmony markup the echo engine outputs verbatim: a short analysis, then a final answer."""
    answer = " ".join(f"w{i % 97}" for i in range(words))
    return (f"<|channel|>analysis<|message|>Serving benchmark {tag}.<|end|>"
            f"<|start|>assistant<|channel|>final<|message|>{answer}<|return|>")


# --- the client --------------------------------------------------------------------------------


@dataclass
class Stream:
    submitted: float
    first: float
    end: float
    frames: int
    digest: str  # sha256 of the bytes, keep-alives left out
    head: bytes
    last_type: bytes  # the type of the last event

    @property
    def ttfe(self) -> float:
        return self.first - self.submitted


async def read_stream(client: Any, method: str, url: str, body: dict | None = None) -> Stream:
    """Count the frames of one SSE response (a frame ends with a blank line; JSON has no raw
    newline), keep-alive comments left out."""
    submitted = time.perf_counter()
    first = 0.0
    frames = 0
    previous = head = last_type = b""
    digest = hashlib.sha256()
    async with client.stream(method, url, json=body) as response:
        if response.status_code != 200:
            raise RuntimeError(f"{method} {url}: {response.status_code} {(await response.aread())[:300]!r}")
        async for chunk in response.aiter_raw():
            chunk = chunk.replace(KEEPALIVE, b"")  # a keep-alive is a write of its own
            if not chunk:
                continue
            frames += chunk.count(b"\n\n") + (previous.endswith(b"\n") and chunk.startswith(b"\n"))
            if not first and frames:
                first = time.perf_counter()
            digest.update(chunk)
            head = head or chunk[:400]
            last_type = last_event_type(chunk) or last_type
            previous = chunk
    end = time.perf_counter()
    return Stream(submitted, first, end, frames, digest.hexdigest(), head, last_type)


def last_event_type(chunk: bytes) -> bytes:
    """The type on the chunk's last ``event:`` line (b"" if it has none)."""
    start = chunk.rfind(b"\nevent: ") + 1
    if start == 0 and not chunk.startswith(b"event: "):
        return b""
    return chunk[start + len(b"event: "):chunk.find(b"\n", start)]


def response_id_of(stream: Stream) -> str:
    """The id in the stream's first event (response.created)."""
    match = re.search(rb'"id":"(resp_[^"]+)"', stream.head)
    if match is None:
        raise RuntimeError(f"no response id in {stream.head[:200]!r}")
    return match.group(1).decode()


def client(base_url: str, api_key: str, connections: int) -> Any:
    import httpx

    return httpx.AsyncClient(base_url=base_url, headers={"Authorization": f"Bearer {api_key}"}, timeout=600,
                             limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections))


@dataclass
class Round:
    streams: list[Stream]
    cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds per component during the round

    @property
    def events_per_s(self) -> float:
        wall = max(s.end for s in self.streams) - min(s.submitted for s in self.streams)
        return sum(s.frames for s in self.streams) / wall


async def burst(base_url: str, api_key: str, body: dict, concurrency: int, events: int | None = EVENTS) -> Round:
    """``concurrency`` streaming creates at once, each checked to end completed with ``events``
    events (None: as many as its commits made, with merged deltas)."""
    async with client(base_url, api_key, concurrency) as http:
        streams = await asyncio.gather(*(read_stream(http, "POST", "/responses", body) for _ in range(concurrency)))
    for stream in streams:
        if (events is not None and stream.frames != events) or stream.last_type != b"response.completed":
            raise RuntimeError(f"a stream of {base_url} had {stream.frames} frames, the last {stream.last_type!r}")
    return Round(list(streams))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# --- processes ---------------------------------------------------------------------------------


def make_stack(db_url: str, redis_url: str, worker_concurrency: int) -> Any:
    from tests.live.stack import LiveStack

    class ServingStack(LiveStack):
        """The live tests' stack with a deployment's timings and the Procfile's worker threads."""

        def __init__(self) -> None:
            super().__init__(db_url, redis_url, {})
            for name in TEST_ONLY_ENV:
                self.env.pop(name, None)
            self.env["LOG_LEVEL"] = "WARNING"
            # The workload is EVENTS events a stream, one a token as the limit server replays
            # them: merged deltas would make it a few dozen, as many as commits.
            self.env["MERGE_STREAM_DELTAS"] = "false"

        def commands(self) -> dict[str, list[str]]:
            commands = super().commands()
            argv = commands["worker"]
            argv[argv.index("--concurrency") + 1] = str(worker_concurrency)
            return commands

    return ServingStack()


def manage(env: dict[str, str], *argv: str) -> str:
    done = subprocess.run([sys.executable, "manage.py", *argv], cwd=ROOT, env=env, capture_output=True, text=True,
                          check=True)
    return done.stdout


def start_limit_server(frames_file: Path, paced: bool = False) -> tuple[subprocess.Popen, str]:
    """bench/limit_server.py under Daphne (``paced``: its frames each at their offset)."""
    from tests.live.stack import LOG_DIR, free_port

    LOG_DIR.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = open(LOG_DIR / f"limit-{port}.log", "ab")  # noqa: SIM115 - owned by the process
    # The stack's Daphne's listen backlog (the Procfile's): hundreds of clients connect at once.
    process = subprocess.Popen([str(Path(sys.executable).parent / "daphne"), "-e",
                                f"tcp:port={port}:interface=127.0.0.1:backlog=1024", "bench.limit_server:application"],
                               cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                               env={**os.environ, "LIMIT_SERVER_FRAMES": str(frames_file),
                                    "LIMIT_SERVER_PACED": "1" if paced else "0"})
    base_url = f"http://127.0.0.1:{port}/v1"
    wait_for(f"{base_url}/models", process)
    return process, base_url


def wait_for(url: str, process: subprocess.Popen, timeout: float = 60) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{url}: the server exited")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer")


def stop(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=20)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def rss_mib(pid: int) -> float:
    import psutil

    return psutil.Process(pid).memory_info().rss / 2**20


# --- the passes --------------------------------------------------------------------------------


@dataclass
class LevelFigures:
    concurrency: int
    stack: list[Round]
    limit: list[Round]

    def ttfe(self, side: str, q: float) -> float:
        return percentile([s.ttfe for r in getattr(self, side) for s in r.streams], q)

    def events_per_s(self, side: str) -> float:
        return statistics.median(r.events_per_s for r in getattr(self, side))

    def cpu_per_1000_events(self, side: str) -> str:
        """CPU ms per 1,000 events of each component, over all the side's rounds."""
        rounds: list[Round] = getattr(self, side)
        events = sum(s.frames for r in rounds for s in r.streams) / 1000
        totals: dict[str, float] = {}
        for r in rounds:
            for label, seconds in r.cpu.items():
                totals[label] = totals.get(label, 0.0) + seconds
        return ", ".join(f"{label} {seconds * 1000 / events:.0f}"
                         for label, seconds in sorted(totals.items(), key=lambda item: -item[1]))


def cpu_specs(stack: Any, limit: subprocess.Popen) -> dict[str, CpuSpec]:
    """What each side's CPU time is counted of: its server processes and this client."""
    client_spec = ("client", os.getpid(), "self")
    stack_spec: CpuSpec = [client_spec] + [(name, process.pid, "self") for name, process in stack.processes.items()]
    stack_spec += service_pids(SERVICES_DIR)
    return {"stack": stack_spec, "limit": [client_spec, ("limit server", limit.pid, "self")]}


def run_levels(stack_url: str, limit_url: str, api_key: str, levels: list[int], rounds: int,
               specs: dict[str, CpuSpec]) -> list[LevelFigures]:
    body = {"model": "echo", "input": script(SCRIPT_WORDS), "stream": True}
    figures = []
    for level in levels:
        figure = LevelFigures(level, [], [])
        for number in range(rounds):
            for side in (("stack", "limit") if number % 2 == 0 else ("limit", "stack")):
                time.sleep(SETTLE_S)
                url = stack_url if side == "stack" else limit_url
                before = cpu_seconds(specs[side])
                result = asyncio.run(burst(url, api_key, body, level))
                result.cpu = cpu_delta(before, cpu_seconds(specs[side]))
                getattr(figure, side).append(result)
                print(f"  {side:5} x{level:<3} {result.events_per_s:8.0f} events/s, ttfe p50 "
                      f"{statistics.median(s.ttfe for s in result.streams) * 1000:7.1f} ms", flush=True)
        figures.append(figure)
    return figures


async def replay(stack_url: str, api_key: str, times: int) -> tuple[int, list[Stream]]:
    """A finished ~13,000-event response, replayed to one reader ``times`` times."""
    async with client(stack_url, api_key, 4) as http:
        created = await http.post("/responses", json={"model": "echo", "input": script(REPLAY_WORDS, "replay"),
                                                      "background": True})
        response_id = created.json()["id"]
        while (await http.get(f"/responses/{response_id}")).json()["status"] not in ("completed", "failed"):
            await asyncio.sleep(0.5)
        await asyncio.sleep(2)  # the finished response's event log is settled (packed, where it is)
        streams = [await read_stream(http, "GET", f"/responses/{response_id}?stream=true") for _ in range(times)]
    if len({s.digest for s in streams}) != 1:
        raise RuntimeError("replays of one finished response differ")
    return streams[0].frames, streams


async def fanout(stack_url: str, api_key: str) -> dict[str, Any]:
    """FANOUT_READERS readers of one running response beside FANOUT_CREATES streaming creates,
    echo at FANOUT_DELAY_MS per token; every stream is compared with its replay."""
    knob = {"echo_token_delay_ms": str(FANOUT_DELAY_MS)}
    async with client(stack_url, api_key, FANOUT_READERS + FANOUT_CREATES + 8) as http:
        created = await http.post("/responses", json={"model": "echo", "input": script(FANOUT_WORDS, "fanout"),
                                                      "background": True, "metadata": knob})
        followed = created.json()["id"]
        body = {"model": "echo", "input": script(400, "create"), "stream": True, "metadata": knob}
        readers = [read_stream(http, "GET", f"/responses/{followed}?stream=true") for _ in range(FANOUT_READERS)]
        creates = [read_stream(http, "POST", "/responses", body) for _ in range(FANOUT_CREATES)]
        started = time.perf_counter()
        results = await asyncio.gather(*readers, *creates, return_exceptions=True)
        wall = time.perf_counter() - started
        errors = [r for r in results if isinstance(r, BaseException)]
        read = [r for r in results[:FANOUT_READERS] if isinstance(r, Stream)]
        made = [r for r in results[FANOUT_READERS:] if isinstance(r, Stream)]
        # Every stream equals a replay of its response read afterwards.
        reference = await read_stream(http, "GET", f"/responses/{followed}?stream=true")
        mismatched = sum(s.digest != reference.digest for s in read)
        for stream in made:
            again = await read_stream(http, "GET", f"/responses/{response_id_of(stream)}?stream=true")
            mismatched += again.digest != stream.digest
    return {"errors": errors, "readers": len(read), "creates": len(made), "mismatched": mismatched, "wall": wall,
            "reader_frames": reference.frames, "joined_within": max(s.first - started for s in read),
            "followed_for": max(s.end for s in read) - started}


async def finished_responses(stack_url: str, api_key: str, words: int, count: int) -> tuple[list[str], int]:
    """``count`` finished background responses of the script with ``words`` words, and the
    output tokens of one."""
    async with client(stack_url, api_key, count) as http:
        ids = []
        for index in range(count):
            created = await http.post("/responses", json={"model": "echo", "input": script(words, f"size {index}"),
                                                          "background": True})
            ids.append(created.json()["id"])
        for response_id in ids:
            while (body := (await http.get(f"/responses/{response_id}")).json())["status"] != "completed":
                await asyncio.sleep(0.2)
        return ids, body["usage"]["output_tokens"]


def event_log_bytes(db_url: str, response_ids: list[str]) -> tuple[int, float, float]:
    """(events, bytes per event as rows, bytes per event packed) on PostgreSQL, table +
    indexes + TOAST: the packed logs are copied into a scratch EventLog table, and their
    events, unpacked, into a scratch ResponseEvent table (the same columns, indexes and
    JSONB), as the rows were before packing."""
    import psycopg

    from responses_app.stream.event_log import parse_frame, unpack

    with psycopg.connect(db_url, autocommit=True) as connection:
        time.sleep(1)  # packing runs right after each response's terminal commit
        rows = connection.execute("SELECT response_id, frames, frame_lengths FROM responses_app_eventlog "
                                  "WHERE response_id = ANY(%s)", [response_ids]).fetchall()
        if len(rows) != len(response_ids):
            raise RuntimeError(f"only {len(rows)} of {len(response_ids)} responses were packed")
        connection.execute("DROP TABLE IF EXISTS bench_rows, bench_packed")
        connection.execute("CREATE TABLE bench_packed (LIKE responses_app_eventlog INCLUDING ALL)")
        connection.execute("INSERT INTO bench_packed SELECT * FROM responses_app_eventlog WHERE response_id = ANY(%s)",
                           [response_ids])
        connection.execute("CREATE TABLE bench_rows (LIKE responses_app_responseevent INCLUDING ALL)")
        events = 0
        with connection.cursor() as cursor:
            for response_id, frames, lengths in rows:
                packed = unpack(bytes(frames), bytes(lengths))
                values = []
                for number, frame in enumerate(packed.frames(-1, packed.last_sequence_number)):
                    kind, data = parse_frame(frame)
                    values.append((response_id, number, kind, json.dumps(data)))
                cursor.executemany("INSERT INTO bench_rows (response_id, sequence_number, type, data, created_at) "
                                   "VALUES (%s, %s, %s, %s::jsonb, now())", values)
                events += len(values)
        connection.execute("VACUUM ANALYZE bench_rows")
        connection.execute("VACUUM ANALYZE bench_packed")
        sizes = connection.execute("SELECT pg_total_relation_size('bench_rows'), "
                                   "pg_total_relation_size('bench_packed')").fetchone()
        connection.execute("DROP TABLE bench_rows, bench_packed")
    return events, sizes[0] / events, sizes[1] / events


def run_pass(database: str, urls: dict[str, str], args: argparse.Namespace) -> list[LevelFigures]:
    from tests.live.stack import LOG_DIR

    if database == "sqlite":
        path = SERVICES_DIR / "db.sqlite3"
        for stale in SERVICES_DIR.glob("db.sqlite3*"):
            stale.unlink()
        db_url = f"sqlite:///{path}"
    else:
        db_url = urls["DATABASE_URL"]
    env = {**os.environ, "DATABASE_URL": db_url, "REDIS_URL": urls["REDIS_URL"], "CELERY_BROKER_URL": urls["REDIS_URL"]}
    manage(env, "migrate", "--noinput", "-v", "0")
    api_key = manage(env, "create_api_key", "--tenant", "bench").strip().splitlines()[-1]
    stack = make_stack(db_url, urls["REDIS_URL"], args.worker_concurrency)
    limit = None
    frames_dir = Path(tempfile.mkdtemp(prefix="serving-"))
    try:
        for name in ("web", "worker", "beat"):
            stack.start(name)
        print(f"{database}: stack up (logs: {LOG_DIR.relative_to(ROOT)}/*-{stack.port}.log)", flush=True)
        # Warm-up: the worker's threads and connections; and the stream the limit server serves.
        asyncio.run(burst(stack.base_url, api_key, {"model": "echo", "input": script(SCRIPT_WORDS), "stream": True},
                          8))
        recorded = asyncio.run(record(stack.base_url, api_key))
        (frames_dir / "frames").write_bytes(recorded)
        limit, limit_url = start_limit_server(frames_dir / "frames")
        asyncio.run(burst(limit_url, api_key, {"model": "echo", "input": "warm-up", "stream": True}, 8))
        figures = run_levels(stack.base_url, limit_url, api_key, args.levels, args.rounds, cpu_specs(stack, limit))
        report_levels(database, figures)
        frames, streams = asyncio.run(replay(stack.base_url, api_key, args.replays))
        print(f"  replay of a finished {frames}-event response, {len(streams)} times to one reader: ttfe p50 "
              f"{statistics.median(s.ttfe for s in streams) * 1000:.1f} ms, "
              f"{statistics.median(s.frames / (s.end - s.submitted) for s in streams):,.0f} events/s (median)",
              flush=True)
        if database == "postgresql":
            ids, tokens = asyncio.run(finished_responses(stack.base_url, api_key, SIZE_WORDS, SIZE_RESPONSES))
            events, as_rows, as_packed = event_log_bytes(db_url, ids)
            print(f"  event log of {len(ids)} responses of {tokens} output tokens ({events // len(ids)} events "
                  f"each), PostgreSQL table + indexes + TOAST: {as_rows:.0f} bytes per event as rows, "
                  f"{as_packed:.1f} packed ({as_rows / as_packed:.1f}x smaller)", flush=True)
        if args.fanout:
            report_fanout(stack, api_key)
        return figures
    finally:
        if limit is not None:
            stop(limit)
        stack.stop()
        shutil.rmtree(frames_dir, ignore_errors=True)


async def record(stack_url: str, api_key: str, words: int = SCRIPT_WORDS) -> bytes:
    """One stream of the script as the stack sends it, keep-alives left out."""
    async with client(stack_url, api_key, 1) as http:
        body = {"model": "echo", "input": script(words), "stream": True}
        async with http.stream("POST", "/responses", json=body) as response:
            data = await response.aread()
    return data.replace(KEEPALIVE, b"")


def report_fanout(stack: Any, api_key: str) -> None:
    import threading

    peak = [rss_mib(stack.processes["web"].pid)]
    before = peak[0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.2):
            peak[0] = max(peak[0], rss_mib(stack.processes["web"].pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        result = asyncio.run(fanout(stack.base_url, api_key))
    finally:
        done.set()
        sampler.join()
    print(f"  fanout: {result['readers']} readers of one running response ({result['reader_frames']} events, echo "
          f"{FANOUT_DELAY_MS} ms/token; every reader's first event within {result['joined_within']:.1f} s, the "
          f"response ended after {result['followed_for']:.1f} s) + {result['creates']} streaming creates in "
          f"{result['wall']:.1f} s: "
          f"{len(result['errors'])} errors, {result['mismatched']} streams differ from their replay; Daphne RSS "
          f"{before:.0f} MiB before, {peak[0]:.0f} MiB at peak", flush=True)
    for error in sorted({f"{type(e).__name__}: {e}"[:300] for e in result["errors"]}):
        print(f"    error: {error}", flush=True)


def report_levels(database: str, figures: list[LevelFigures]) -> None:
    print(f"\n{database}: events/s (median of rounds) and time to first event p50 / p99 (ms, all rounds' streams)")
    header = (f"{'conc':>4} | {'stack ev/s':>10} | {'limit ev/s':>10} | {'ratio':>5} | {'stack ttfe p50/p99':>18} | "
              f"{'limit ttfe p50/p99':>18} | {'ratio p50/p99':>13}")
    print(header)
    print("-" * len(header))
    for f in figures:
        stack_ttfe = (f.ttfe("stack", 0.5) * 1000, f.ttfe("stack", 0.99) * 1000)
        limit_ttfe = (f.ttfe("limit", 0.5) * 1000, f.ttfe("limit", 0.99) * 1000)
        print(f"{f.concurrency:>4} | {f.events_per_s('stack'):>10.0f} | {f.events_per_s('limit'):>10.0f} | "
              f"{f.events_per_s('stack') / f.events_per_s('limit'):>5.2f} | "
              f"{stack_ttfe[0]:>8.1f} / {stack_ttfe[1]:>7.1f} | {limit_ttfe[0]:>8.1f} / {limit_ttfe[1]:>7.1f} | "
              f"{stack_ttfe[0] / limit_ttfe[0]:>5.2f} / {stack_ttfe[1] / limit_ttfe[1]:>5.2f}", flush=True)
    print(f"CPU ms per 1,000 events ({os.cpu_count()} CPUs):")
    for f in figures:
        print(f"{f.concurrency:>4} | stack: {f.cpu_per_1000_events('stack')} | limit: {f.cpu_per_1000_events('limit')}")
    print()


# --- main ---------------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", default="1,8,32,128", type=lambda s: [int(x) for x in s.split(",")])
    parser.add_argument("--rounds", type=int, default=3, help="rounds per level and side")
    parser.add_argument("--databases", default="postgresql,sqlite", type=lambda s: s.split(","))
    parser.add_argument("--replays", type=int, default=5, help="replays of the finished 13,000-event response")
    parser.add_argument("--fanout", action="store_true", help=f"also {FANOUT_READERS} readers of one response")
    parser.add_argument("--worker-concurrency", type=int, default=264,
                        help="the worker's threads (a deployment's default: 256 response slots, and 8)")
    return parser.parse_args()


def interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main() -> str:
    args = parse_args()
    signal.signal(signal.SIGTERM, interrupt)
    results: dict[str, list[LevelFigures]] = {}
    with django_on_services(SERVICES_DIR) as urls:
        for database in args.databases:
            results[database] = run_pass(database, urls, args)
    first = next(iter(results.values()), [])
    at_32 = next((f for f in first if f.concurrency == 32), None)
    if at_32 is None:
        return "serving at 32 concurrent: n/a"
    ratio = at_32.events_per_s("stack") / at_32.events_per_s("limit")
    ttfe = at_32.ttfe("stack", 0.5) / at_32.ttfe("limit", 0.5)
    return f"serving at 32 concurrent: events/s stack/limit {ratio:.2f}, ttfe p50 stack/limit {ttfe:.2f}"


if __name__ == "__main__":
    print(main(), flush=True)

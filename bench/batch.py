"""A batch of echo requests on a fresh stack, and what it does to interactive traffic.

It starts ``make run``'s processes (Daphne, a Celery worker and beat, the echo engine at
zero delay, Redis) on a fresh database (SQLite by default, as ``make run``; or PostgreSQL),
uploads a batch file of ``--requests`` echo requests (50,000: OpenAI's most), runs the batch
and, all along, sends one interactive streaming create every ``--interval`` seconds. Before
the batch, the same interactive creates run alone. It prints:

- the batch: validation time, run time (in_progress to completed), requests/s;
- the peak RSS of each process (web, worker, beat, and the database and Redis);
- the first-event latency (submit to the first SSE frame) of the interactive creates
  without and during the batch, p50 and p90, and their ratio (the issue's target: at most
  1.5 at p50).

    .venv/bin/python bench/batch.py [--requests 50000] [--database sqlite|postgresql]
                                    [--interactive 40] [--interval 0.5] [--worker-concurrency 264]

It starts its own PostgreSQL and Redis (scripts/test-services.sh in .run/bench-batch) and
stops everything it started. Figures are printed, never asserted. The last line is
``batch: <n> requests in <s> s (<r>/s), interactive ttfe p50 during/without <ratio>``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script, only bench/ would be on sys.path
    sys.path.insert(0, str(ROOT))

from bench.harness import django_on_services, service_pids  # noqa: E402
from bench.serving import client, make_stack, manage, percentile, read_stream, rss_mib  # noqa: E402

SERVICES_DIR = ROOT / ".run" / "bench-batch"
TEST_ONLY_ENV = ("FILE_MAX_BYTES", "FILE_PURGE_INTERVAL_S", "BATCH_TICK_INTERVAL_S", "BATCH_STALL_S")
INTERACTIVE_BODY = {"model": "echo", "input": "An interactive question, streamed while a batch runs.", "stream": True}


def batch_file(requests: int) -> bytes:
    return b"".join(json.dumps({"custom_id": f"r{n}", "method": "POST", "url": "/v1/responses",
                                "body": {"model": "echo", "input": f"Label item number {n} of the batch."}},
                               separators=(",", ":")).encode() + b"\n" for n in range(requests))


class PeakRss:
    """The peak RSS (MiB) of each process, sampled every 0.5 s on a thread."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids, self.peak = pids, dict.fromkeys(pids, 0.0)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.wait(0.5):
            for name, pid in self.pids.items():
                try:
                    self.peak[name] = max(self.peak[name], rss_mib(pid))
                except Exception:  # noqa: BLE001 - a process that is gone keeps its last peak
                    pass

    def stop(self) -> dict[str, float]:
        self._done.set()
        self._thread.join()
        return self.peak


async def interactive(base_url: str, api_key: str, count: int, interval: float,
                      until: threading.Event | None = None) -> list[float]:
    """First-event latencies of ``count`` streaming creates, one every ``interval`` seconds
    (or until ``until`` is set)."""
    latencies = []
    async with client(base_url, api_key, 4) as http:
        for _ in range(count):
            if until is not None and until.is_set():
                break
            stream = await read_stream(http, "POST", "/responses", INTERACTIVE_BODY)
            latencies.append(stream.ttfe)
            await asyncio.sleep(interval)
    return latencies


def run(args: argparse.Namespace, urls: dict[str, str]) -> str:
    import openai

    db_url = urls["DATABASE_URL"]
    if args.database == "sqlite":
        for stale in SERVICES_DIR.glob("db.sqlite3*"):
            stale.unlink()
        db_url = f"sqlite:///{SERVICES_DIR / 'db.sqlite3'}"
    env = {**os.environ, "DATABASE_URL": db_url, "REDIS_URL": urls["REDIS_URL"], "CELERY_BROKER_URL": urls["REDIS_URL"]}
    manage(env, "migrate", "--noinput", "-v", "0")
    manage(env, "create_tenant", "bench", "--max-concurrent-background", "none", "--requests-per-minute", "none")
    api_key = manage(env, "create_api_key", "--tenant", "bench").strip().splitlines()[-1].split()[-1]
    stack = make_stack(db_url, urls["REDIS_URL"], args.worker_concurrency)
    for name in TEST_ONLY_ENV:  # the live tests' small caps and fast ticks
        stack.env.pop(name, None)
    stack.env["BATCH_MAX_IN_FLIGHT"] = str(args.in_flight)
    try:
        for name in ("web", "worker", "beat"):
            stack.start(name)
        sdk = openai.OpenAI(base_url=stack.base_url, api_key=api_key, max_retries=2, timeout=600)
        asyncio.run(interactive(stack.base_url, api_key, 5, 0))  # warm-up
        alone = asyncio.run(interactive(stack.base_url, api_key, args.interactive, args.interval))
        print(f"{args.database}: interactive alone: ttfe p50 {statistics.median(alone) * 1000:.0f} ms, "
              f"p90 {percentile(alone, 0.9) * 1000:.0f} ms ({len(alone)} creates)", flush=True)

        pids = {name: process.pid for name, process in stack.processes.items()}
        pids.update({label: pid for label, pid, _ in service_pids(SERVICES_DIR)
                     if args.database == "postgresql" or label == "redis"})
        rss = PeakRss(pids)
        upload_started = time.perf_counter()
        input_file = sdk.files.create(file=("batch.jsonl", batch_file(args.requests)), purpose="batch")
        created = time.perf_counter()
        batch = sdk.batches.create(input_file_id=input_file.id, endpoint="/v1/responses", completion_window="24h")
        ended = threading.Event()
        during: list[float] = []

        def send_interactive() -> None:
            during.extend(asyncio.run(interactive(stack.base_url, api_key, 10**9, args.interval, until=ended)))

        sender = threading.Thread(target=send_interactive, daemon=True)
        in_progress = None
        while True:
            batch = sdk.batches.retrieve(batch.id)
            if in_progress is None and batch.status != "validating":
                in_progress = time.perf_counter()
                sender.start()
            if batch.status in ("completed", "failed", "expired", "cancelled"):
                break
            time.sleep(1)
        done = time.perf_counter()
        ended.set()
        sender.join()
        peaks = rss.stop()
        counts = batch.request_counts
        run_s = done - (in_progress or done)
        print(f"  batch {batch.status}: {counts.total} requests ({counts.completed} completed, {counts.failed} "
              f"failed); upload {created - upload_started:.1f} s, validation {(in_progress or done) - created:.1f} s, "
              f"run {run_s:.1f} s: {counts.completed / run_s:.1f} requests/s", flush=True)
        print("  peak RSS (MiB): " + ", ".join(f"{name} {mib:.0f}" for name, mib in peaks.items()), flush=True)
        ratio = statistics.median(during) / statistics.median(alone) if during else float("nan")
        print(f"  interactive during the batch: ttfe p50 {statistics.median(during) * 1000:.0f} ms, "
              f"p90 {percentile(during, 0.9) * 1000:.0f} ms ({len(during)} creates); p50 during/without "
              f"{ratio:.2f}", flush=True)
        return (f"batch: {counts.completed} requests in {run_s:.0f} s ({counts.completed / run_s:.1f}/s), "
                f"interactive ttfe p50 during/without {ratio:.2f}")
    finally:
        stack.stop()


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=50_000)
    parser.add_argument("--database", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--interactive", type=int, default=40, help="interactive creates measured alone")
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between interactive creates")
    parser.add_argument("--in-flight", type=int, default=4, help="BATCH_MAX_IN_FLIGHT")
    parser.add_argument("--worker-concurrency", type=int, default=264,
                        help="the worker's threads (a deployment's default: 256 response slots, and 8)")
    return parser.parse_args()


def main() -> str:
    args = parse_args()
    with django_on_services(SERVICES_DIR) as urls:
        return run(args, urls)


if __name__ == "__main__":
    print(main(), flush=True)

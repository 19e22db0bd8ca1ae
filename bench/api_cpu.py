"""What the web process costs per streamed response: Daphne's CPU time for bursts of
concurrent streaming creates on the echo model (no engine work worth the name).

    .venv/bin/python bench/api_cpu.py [--concurrency 32] [--rounds 8]

Each round sends ``concurrency`` streaming creates at once through the openai SDK, reads
every stream to its end, and divides the CPU time that Daphne's process used in the round
by the number of responses; it also prints the median time from create() to the first
event. It starts its own PostgreSQL, Redis and stack (Daphne, a
Celery worker, beat) under .run/bench and stops them at the end. Figures are printed,
never asserted; the last line is ``daphne CPU per streamed response: <median> ms``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Run as a script, only bench/ would be on sys.path; the project and tests.live live at the root.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.engine_overhead import SERVICES_DIR, make_stack_class  # noqa: E402
from bench.harness import django_on_services  # noqa: E402

INPUT = "Tell me about the harbour at dawn, in a few words."


def stream_one(client, index: int) -> tuple[int, float]:
    """Events of one streamed response, read to the end, and the seconds to the first one."""
    events, first = 0, 0.0
    started = time.perf_counter()
    for _event in client.responses.create(model="echo", input=f"{INPUT} ({index})", stream=True):
        if events == 0:
            first = time.perf_counter() - started
        events += 1
    return events, first


def main() -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()

    import psutil

    base_env = dict(os.environ)
    stack = None
    per_response_ms: list[float] = []
    with django_on_services(SERVICES_DIR, database=True) as urls:
        import openai

        from responses_app.tenancy.api_keys import create_api_key

        api_key = create_api_key("bench-api")[1]
        stack = make_stack_class()(urls["DATABASE_URL"], urls["REDIS_URL"], {}, 64, base_env)
        try:
            for name in ("web", "worker", "beat"):
                stack.start(name)
            daphne = psutil.Process(stack.processes["web"].pid)
            client = openai.OpenAI(base_url=stack.base_url, api_key=api_key, max_retries=0, timeout=120)
            with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
                list(pool.map(lambda i: stream_one(client, i), range(args.concurrency)))  # warm-up
                for round_number in range(args.rounds):
                    time.sleep(1.0)
                    before = sum(daphne.cpu_times()[:2])
                    started = time.perf_counter()
                    results = list(pool.map(lambda i: stream_one(client, i), range(args.concurrency)))
                    wall = time.perf_counter() - started
                    cpu = sum(daphne.cpu_times()[:2]) - before
                    per_response_ms.append(1000 * cpu / args.concurrency)
                    first = statistics.median(seconds for _, seconds in results)
                    print(f"round {round_number}: {args.concurrency} responses, {sum(n for n, _ in results)} "
                          f"events in {wall:.2f} s, first event median {first:.3f} s; "
                          f"daphne {cpu:.2f} CPU-s = {per_response_ms[-1]:.1f} ms per response", flush=True)
        finally:
            stack.stop()
    return statistics.median(per_response_ms)


if __name__ == "__main__":
    median = main()
    print(f"daphne CPU per streamed response: {median:.1f} ms", flush=True)

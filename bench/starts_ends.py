"""What a response's start and end cost a worker process: CPU ms per short response.

A GPU node starts and ends a few dozen responses a second (256 at once, each a few seconds
long); each one's claim, history, prompt and end are paid beside the tokens of all the
others. This bench runs short responses (a five-word answer, so that the start and the end
are nearly all of the work) through the worker's own code in this process (worker/run.py,
on task threads, many at once, as Celery's pool runs them) and reads the CPU time of the
whole process, which is the worker process's: its task threads, its engine loop, its
committer and database threads. The echo engine's share is part of it (a few per cent).
Each figure is also given scaled by the round's calibration (bench/costs.py).

    .venv/bin/python bench/starts_ends.py [--databases postgresql,sqlite] [--responses 300]
                                          [--threads 64] [--rounds 3]

It starts its own PostgreSQL and Redis (scripts/test-services.sh in .run/bench-starts)
and stops them. The last line is ``starts_ends: <database> <x> ms/response, ...`` (the
median round of each database, scaled).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script, only bench/ would be on sys.path
    sys.path.insert(0, str(ROOT))

from bench.costs import calibration_ms, scaled  # noqa: E402
from bench.harness import per_database  # noqa: E402

SERVICES_DIR = ROOT / ".run" / "bench-starts"
INPUT = "one two three four five"  # the echo engine answers with it


def child(database_url: str, redis_url: str, args: argparse.Namespace) -> dict[str, Any]:
    os.environ.update(DATABASE_URL=database_url, REDIS_URL=redis_url, CELERY_BROKER_URL=redis_url,
                      DJANGO_SETTINGS_MODULE="project.settings", LOG_LEVEL="WARNING", ECHO_TOKEN_DELAY_MS="0")
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from responses_app.lib.redis_client import shared_client
    from responses_app.tenancy.api_keys import create_api_key

    call_command("migrate", "--noinput", verbosity=0)
    settings.TENANT_MAX_CONCURRENT_FOREGROUND = 0
    _, key = create_api_key(f"bench-starts-{os.getpid()}")
    try:
        rounds = [one_round(key, args.responses, args.threads) for _ in range(args.rounds)]
    finally:
        shared_client().flushdb()
    rounds.sort(key=lambda one: one["scaled_ms_per_response"])
    median = rounds[len(rounds) // 2]
    return {**median, "range": [rounds[0]["scaled_ms_per_response"], rounds[-1]["scaled_ms_per_response"]]}


def one_round(key: str, count: int, threads: int) -> dict[str, Any]:
    from responses_app.models import Response
    from responses_app.services.create import create_response
    from responses_app.tenancy.api_keys import authenticate_bearer
    from responses_app.validation.create import parse_create_request
    from responses_app.worker.run import run_response

    tenant = authenticate_bearer(f"Bearer {key}").tenant
    body = {"model": "echo", "input": INPUT, "background": True}
    ids = [create_response(tenant, parse_create_request(body)).pk for _ in range(count + 2)]
    for warm in ids[:2]:
        run_response(warm)
    ids = ids[2:]
    calibration = calibration_ms()
    cpu_before, wall_before = time.process_time(), time.monotonic()
    with ThreadPoolExecutor(threads, thread_name_prefix="bench-task") as pool:
        list(pool.map(run_response, ids))
    cpu, wall = time.process_time() - cpu_before, time.monotonic() - wall_before
    calibration = (calibration + calibration_ms()) / 2
    statuses = set(Response.objects.filter(pk__in=ids).values_list("status", flat=True))
    if statuses != {"completed"}:
        raise RuntimeError(f"responses ended {sorted(statuses)}")
    ms = cpu / count * 1e3
    return {"ms_per_response": ms, "scaled_ms_per_response": scaled(ms, calibration), "calibration_ms": calibration,
            "responses_per_s": count / wall}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--databases", default="postgresql,sqlite", type=lambda s: s.split(","))
    parser.add_argument("--responses", type=int, default=300, help="responses per round")
    parser.add_argument("--threads", type=int, default=64, help="task threads running them at once")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; the median round is reported")
    parser.add_argument("--child", nargs=2, metavar=("DATABASE_URL", "REDIS_URL"), help=argparse.SUPPRESS)
    return parser.parse_args()


def main() -> str:
    args = parse_args()
    if args.child:
        print(json.dumps(child(*args.child, args)))
        return ""
    figures: dict[str, dict[str, Any]] = {}
    for database, one in per_database(SERVICES_DIR, args.databases, __file__, [
            "--responses", str(args.responses), "--threads", str(args.threads), "--rounds", str(args.rounds)]):
        figures[database] = one
        low, high = one["range"]
        print(f"{database}: {one['scaled_ms_per_response']:.2f} ms of worker CPU per response [rounds "
              f"{low:.2f}-{high:.2f}]; measured {one['ms_per_response']:.2f}, calibration "
              f"{one['calibration_ms']:.1f} ms; {one['responses_per_s']:.0f} responses/s", flush=True)
    return "starts_ends: " + ", ".join(f"{database} {one['scaled_ms_per_response']:.2f} ms/response"
                                       for database, one in figures.items())


if __name__ == "__main__":
    print(main())

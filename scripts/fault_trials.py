"""Run the fault suite's trials many times and print a table (docs/faults.md shows one run).

    .venv/bin/python scripts/fault_trials.py [--trials 20] [--postgres-trials 5] [--fault NAME ...]

It starts its own PostgreSQL, Redis and stack under .run/fault-trials (tests/faults/harness.py)
and stops them at the end. Each trial sends 12 background echo responses (4 followed as SSE
streams) to a worker with 8 task threads, injects the fault, and checks that every
response ends (completed, or failed with an error; every one completes after a worker
SIGKILL), every stream ends, stored sequence
numbers are dense and what the streams delivered equals the stored events.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

import django  # noqa: E402

django.setup()

from tests.faults import harness  # noqa: E402

COLUMNS = ("trials", "responses", "ended", "completed", "failed with error", "lost events", "duplicated events",
           "max time to terminal (s)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--postgres-trials", type=int, default=5)
    parser.add_argument("--fault", action="append", choices=list(harness.FAULTS), help="only these faults")
    args = parser.parse_args()
    stack = harness.FaultStack("fault-trials", worker_concurrency=8)
    rows: dict[str, dict[str, object]] = {}
    failures: list[str] = []
    started = time.monotonic()
    try:
        stack.up()
        expected = harness.expected_text(stack)
        for fault in args.fault or list(harness.FAULTS):
            trials = args.postgres_trials if fault == "postgres restart" else args.trials
            results = []
            for trial in range(trials):
                harness.prepare(stack, fault)
                result = harness.run_trial(stack, fault, harness.FAULTS[fault], count=12, followed=4,
                                           expected=expected)
                results.append(result)
                if not result.ok:
                    failures.append(harness.describe(result))
                print(f"{fault} trial {trial + 1}/{trials}: {'ok' if result.ok else 'PROBLEMS'}, "
                      f"{result.ended}/{result.responses} ended, {result.max_time_to_terminal_s:.1f} s", flush=True)
            rows[fault] = harness.summary(results)
    finally:
        stack.down()
    print()
    print("| fault | " + " | ".join(COLUMNS) + " |")
    print("| --- " * (len(COLUMNS) + 1) + "|")
    for fault, row in rows.items():
        print(f"| {fault} | " + " | ".join(str(row[column]) for column in COLUMNS) + " |")
    print(f"\n{sum(int(row['trials']) for row in rows.values())} trials in {time.monotonic() - started:.0f} s; "
          f"{len(failures)} with problems")
    for failure in failures:
        print(failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

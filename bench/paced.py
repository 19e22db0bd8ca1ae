"""Paced streams as a user sees them: N streaming creates at once against a running stack.

Each stream is an answer of about ``--tokens`` output tokens that the echo engine paces at
``--delay-ms`` a token (``metadata.echo_token_delay_ms``), as a GPU's batch paces its
sequences: N streams offer N * 1000 / delay tokens/s. A light client (httpx, one
connection a stream, reading lines and parsing only the terminal event's JSON) times every
``response.output_text.delta`` and prints, per run:

- tokens/s delivered / offered: all streams' output tokens over the run's span (first
  submit to last terminal event), divided by what the streams offer together;
- first text p50 / p99: submit to the first text delta;
- gap between deltas p99: between consecutive text deltas of a stream (deltas merge
  per commit, EVENT_FLUSH_INTERVAL_S, so 50 ms is the floor at 20 ms a token);
- duration / ideal p50: submit to terminal event, over the stream's tokens * delay;
- streams that ended without their terminal event (a connection closed, an HTTP error).

Beside the stack, in the same run and taking turns with it (which goes first alternates),
the same load goes to its ceiling: bench/limit_server.py, the same Daphne and SSE framing
with nothing behind it, sending every stream the frames of one stream recorded from the
stack at the start, each at the offset from its request at which the stack sent it to that
one stream alone. Each run prints both sides, and the end stack/ceiling for delivered, first
text p50/p99 and the gap p99 (the medians of the runs).

    make run &     # or any stack; the demo key is read from .run/demo-api-key
    .venv/bin/python bench/paced.py [--streams 256] [--tokens 300] [--delay-ms 20] [--runs 3]
                                    [--base-url http://127.0.0.1:8000/v1] [--api-key KEY] [--no-ceiling]

Figures are printed, never asserted. The last line is ``paced <N> streams: delivered/offered
<r> (<x> of the ceiling), first text p99 <t> s (ceiling <c> s), gap p99 <g> ms (ceiling <c>
ms), unanswered <u>`` (the medians of the runs; unanswered is the sum over the stack's runs).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script, only bench/ would be on sys.path
    sys.path.insert(0, str(ROOT))
TEXT_DELTA = b"event: response.output_text.delta"
TERMINAL = (b"event: response.completed", b"event: response.incomplete", b"event: response.failed",
            b"event: response.cancelled")
TOKENS_PER_WORD = 2  # "w12": " w" and "12" (the bench reads the true count from usage)


@dataclass
class Stream:
    submitted: float
    deltas: list[float] = field(default_factory=list)
    ended: float | None = None
    output_tokens: int = 0
    error: str | None = None


def script(tokens: int) -> str:
    """Harmony markup the echo engine outputs verbatim: a short analysis, then the answer."""
    answer = " ".join(f"w{i % 97}" for i in range(max(tokens // TOKENS_PER_WORD, 1)))
    return (f"<|channel|>analysis<|message|>Paced.<|end|>"
            f"<|start|>assistant<|channel|>final<|message|>{answer}<|return|>")


async def read_stream(client: httpx.AsyncClient, body: dict) -> Stream:
    stream = Stream(submitted=time.monotonic())
    event = b""
    try:
        async with client.stream("POST", "/responses", json=body) as response:
            if response.status_code != 200:
                stream.error = f"HTTP {response.status_code}"
                return stream
            async for line in response.aiter_lines():
                raw = line.encode()
                if raw.startswith(b"event: "):
                    event = raw
                    if event == TEXT_DELTA:
                        stream.deltas.append(time.monotonic())
                elif raw.startswith(b"data: ") and event in TERMINAL:
                    stream.ended = time.monotonic()
                    usage = json.loads(raw[6:])["response"].get("usage") or {}
                    stream.output_tokens = usage.get("output_tokens", 0)
                    return stream
        stream.error = "closed without a terminal event"
    except httpx.HTTPError as error:
        stream.error = f"{type(error).__name__}: {error}"
    return stream


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(len(ordered) * q), len(ordered) - 1)] if ordered else float("nan")


def request_body(tokens: int, delay_ms: float) -> dict:
    return {"model": "echo", "input": script(tokens), "stream": True,
            "metadata": {"echo_token_delay_ms": f"{delay_ms:g}"}}


async def record_schedule(base_url: str, api_key: str, body: dict) -> list[tuple[float, str]]:
    """One stream alone on the stack: each frame, with its offset from the request."""
    schedule: list[tuple[float, str]] = []
    async with httpx.AsyncClient(base_url=base_url, headers={"Authorization": f"Bearer {api_key}"},
                                 timeout=120) as client:
        started = time.monotonic()
        async with client.stream("POST", "/responses", json=body) as response:
            response.raise_for_status()
            buffer = ""
            async for text in response.aiter_text():
                buffer += text
                *frames, buffer = buffer.split("\n\n")
                schedule += [(time.monotonic() - started, frame) for frame in frames
                             if frame.startswith("event: ")]  # not the keep-alive comments
    if not schedule or not any(frame.startswith(TERMINAL_TEXT) for _, frame in schedule[-1:]):
        raise RuntimeError("the recorded stream did not end with its terminal event")
    return schedule


TERMINAL_TEXT = tuple(event.decode() for event in TERMINAL)


async def one_run(base_url: str, api_key: str, streams: int, tokens: int, delay_ms: float) -> dict[str, float]:
    body = request_body(tokens, delay_ms)
    limits = httpx.Limits(max_connections=streams, max_keepalive_connections=streams)
    timeout = httpx.Timeout(connect=60, read=120, write=60, pool=120)
    async with httpx.AsyncClient(base_url=base_url, headers={"Authorization": f"Bearer {api_key}"},
                                 limits=limits, timeout=timeout) as client:
        started = time.monotonic()
        results = await asyncio.gather(*(read_stream(client, body) for _ in range(streams)))
    answered = [stream for stream in results if stream.error is None and stream.deltas]
    if not answered:
        raise RuntimeError(f"no stream was answered: {results[0].error}")
    span = max(stream.ended for stream in answered) - started
    delivered = sum(stream.output_tokens for stream in answered) / span
    offered = streams * 1000.0 / delay_ms
    gaps = [later - earlier for stream in answered
            for earlier, later in zip(stream.deltas, stream.deltas[1:], strict=False)]
    durations = [(stream.ended - stream.submitted) / (stream.output_tokens * delay_ms / 1000.0)
                 for stream in answered]
    return {
        "ratio": delivered / offered, "delivered": delivered, "offered": offered,
        "first_p50": percentile([s.deltas[0] - s.submitted for s in answered], 0.5),
        "first_p99": percentile([s.deltas[0] - s.submitted for s in answered], 0.99),
        "gap_p99_ms": percentile(gaps, 0.99) * 1e3,
        "duration_ideal_p50": statistics.median(durations),
        "tokens_p50": statistics.median(stream.output_tokens for stream in answered),
        "unanswered": len(results) - len(answered),
        "errors": sorted({stream.error for stream in results if stream.error}),
    }


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=256)
    parser.add_argument("--tokens", type=int, default=300, help="output tokens of each answer (about)")
    parser.add_argument("--delay-ms", type=float, default=20.0, help="the engine's pace, per token and stream")
    parser.add_argument("--runs", type=int, default=3, help="of each side")
    parser.add_argument("--pause-s", type=float, default=3.0, help="between runs")
    parser.add_argument("--base-url", default="http://127.0.0.1:8000/v1")
    parser.add_argument("--api-key", default=None, help="default: .run/demo-api-key (make run's)")
    parser.add_argument("--no-ceiling", action="store_true", help="only the stack, without its in-memory ceiling")
    return parser.parse_args()


ROW = "{side:8} {number:3}  {ratio:17.2f}  {first_p50:6.2f} / {first_p99:5.2f} s  {gap_p99_ms:5.0f} ms  " \
      "{duration_ideal_p50:18.2f}  {tokens_p50:6.0f}  {unanswered:10d}"


def start_ceiling(base_url: str, api_key: str, body: dict, directory: Path) -> tuple[object, str]:
    """The limit server, paced with one stream recorded from the stack."""
    from bench.serving import start_limit_server

    schedule = asyncio.run(record_schedule(base_url, api_key, body))
    frames = directory / "paced-frames.jsonl"
    frames.write_text("".join(json.dumps(entry) + "\n" for entry in schedule))
    return start_limit_server(frames, paced=True)


def median_of(runs: list[dict], figure: str) -> float:
    return statistics.median(run[figure] for run in runs)


def main() -> str:
    args = parse_args()
    api_key = args.api_key or (ROOT / ".run" / "demo-api-key").read_text().strip()
    print(f"{args.streams} streams of about {args.tokens} tokens at {args.delay_ms:g} ms a token "
          f"({args.streams * 1000 / args.delay_ms:,.0f} tokens/s offered), {args.runs} runs against {args.base_url}"
          + ("" if args.no_ceiling else ", taking turns with its in-memory ceiling"))
    print("side     run  delivered/offered  first text p50 / p99  gap p99  duration/ideal p50  tokens  unanswered")
    runs: dict[str, list[dict]] = {"stack": [], "ceiling": []}
    with tempfile.TemporaryDirectory(prefix="bench-paced-") as directory:
        ceiling = None if args.no_ceiling else start_ceiling(args.base_url, api_key,
                                                             request_body(args.tokens, args.delay_ms), Path(directory))
        try:
            for number in range(1, args.runs + 1):
                sides = [("stack", args.base_url)] + ([("ceiling", ceiling[1])] if ceiling else [])
                for side, url in sides if number % 2 else reversed(sides):
                    run = asyncio.run(one_run(url, api_key, args.streams, args.tokens, args.delay_ms))
                    runs[side].append(run)
                    print(ROW.format(side=side, number=number, **run)
                          + (f"  ({'; '.join(run['errors'])})" if run["errors"] else ""), flush=True)
                    time.sleep(args.pause_s)
        finally:
            if ceiling is not None:
                from bench.serving import stop

                stop(ceiling[0])
    stack = runs["stack"]
    line = (f"paced {args.streams} streams: delivered/offered {median_of(stack, 'ratio'):.2f}")
    if not runs["ceiling"]:
        return (line + f", first text p99 {median_of(stack, 'first_p99'):.2f} s, gap p99 "
                f"{median_of(stack, 'gap_p99_ms'):.0f} ms, unanswered {sum(run['unanswered'] for run in stack)}")
    top = runs["ceiling"]
    print(f"stack/ceiling (medians): delivered {median_of(stack, 'delivered') / median_of(top, 'delivered'):.2f}, "
          f"first text p50 {median_of(stack, 'first_p50') / median_of(top, 'first_p50'):.1f}x, "
          f"p99 {median_of(stack, 'first_p99') / median_of(top, 'first_p99'):.1f}x, "
          f"gap p99 {median_of(stack, 'gap_p99_ms') / median_of(top, 'gap_p99_ms'):.1f}x")
    return (line + f" ({median_of(stack, 'delivered') / median_of(top, 'delivered'):.2f} of the ceiling's "
            f"{median_of(top, 'ratio'):.2f}), first text p99 {median_of(stack, 'first_p99'):.2f} s (ceiling "
            f"{median_of(top, 'first_p99'):.2f} s), gap p99 {median_of(stack, 'gap_p99_ms'):.0f} ms (ceiling "
            f"{median_of(top, 'gap_p99_ms'):.0f} ms), unanswered {sum(run['unanswered'] for run in stack)}")


if __name__ == "__main__":
    print(main(), flush=True)

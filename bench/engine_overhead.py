"""What the whole stack costs on top of vLLM: tokens/s and time to first event, side by side.

"raw" runs the tiny random gpt-oss on a bare AsyncLLM in this process; "stack" sends the
same load through the whole stack (HTTP create -> Celery -> vLLM -> events in PostgreSQL
-> SSE -> the openai SDK). Both run 1, 8, 32, 128 and 256 concurrent responses of exactly N tokens:
the random model never finishes its first harmony header, so greedy decoding with
``max_output_tokens=N`` always runs N tokens and ends ``incomplete``. Both engines stay up
and the two take turns, round by round (5 rounds per level by default); the report gives
the median tokens/s of each side, and stack/raw as the median of the rounds' own ratios.

    .venv/bin/python bench/engine_overhead.py [--tokens 512] [--levels 1,8,32,128,256] [--rounds 5]
                                              [--node-processes 2] [--chat]

With ``--chat`` each round also sends a load of the same size through Chat Completions
(``client.chat.completions.create``, streamed, the usage chunk included) to the same stack,
with inputs of its own (the same prompt twice would hit the stack engine's prefix cache the
second time): the report adds chat/raw beside stack/raw, and their difference.

With ``--node-processes N`` the stack's vLLM side is a GPU node (``manage.py run_gpu_node``):
N worker processes sharing one engine core, against the same raw AsyncLLM. (vLLM turns its
scheduler statistics off for a shared core: the stack's "engine max running" is then 0.)

It starts its own PostgreSQL and Redis (scripts/test-services.sh in .run/bench, so a
concurrent ``make test`` in .run/test is left alone) and stops everything it started, also
on Ctrl-C. Speeds are printed, never asserted: the machine is shared and noisy. The last
line is ``stack/raw tokens/s at 32 concurrent: <ratio>`` (the target is >= 0.9).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import gc
import logging
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# Run as a script, only bench/ would be on sys.path; the project and tests.live live at the root.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.harness import CpuSpec, cpu_delta, cpu_seconds, service_pids, service_urls, services  # noqa: E402

MODEL = "tiny-random"
SERVICES_DIR = ROOT / ".run" / "bench"
# Production settings, not the live tests' short leases: the bench measures what a deployment pays.
TEST_ONLY_ENV = ("RESPONSE_LEASE_TTL_S", "RESPONSE_LEASE_RENEW_S", "REAPER_INTERVAL_S", "PURGE_INTERVAL_S",
                 "UNSTORED_RETENTION_S", "SSE_KEEPALIVE_S", "ECHO_TOKEN_DELAY_MS")
SETTLE_S = 2.0
TERMINAL_TYPES = ("response.completed", "response.incomplete", "response.failed", "response.cancelled")


# --- results ---------------------------------------------------------------------------------


@dataclass
class RequestResult:
    tokens: int
    submitted: float
    end: float
    first: float | None  # raw: first token; stack: first SSE event (response.created)
    in_progress: float | None = None  # stack only: response.in_progress (a worker claimed it)
    outcome: str = ""  # raw: finish_reason; stack: status/incomplete reason

    def since_submit(self, moment: float | None) -> float:
        return float("nan") if moment is None else moment - self.submitted


@dataclass
class LevelResult:
    concurrency: int
    requests: list[RequestResult]
    max_running: int = 0  # the most requests vLLM's scheduler ran in one step during this level
    steps: int = 0  # engine steps during this level
    prompt_tokens: list[int] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds per component during this level

    @property
    def tokens(self) -> int:
        return sum(r.tokens for r in self.requests)

    @property
    def wall(self) -> float:
        # From the first submit to the last completion: the load as a client sees it.
        return max(r.end for r in self.requests) - min(r.submitted for r in self.requests)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.wall

    def first(self, attribute: str = "first") -> tuple[float, float]:
        delays = [r.since_submit(getattr(r, attribute)) for r in self.requests]
        return statistics.median(delays), max(delays)

    def outcomes(self) -> str:
        counts: dict[str, int] = {}
        for r in self.requests:
            counts[r.outcome] = counts.get(r.outcome, 0) + 1
        return ", ".join(f"{n}x {name}" for name, n in sorted(counts.items()))


def texts(count: int, kind: str = "load") -> list[str]:
    """Distinct inputs, the same in both phases: identical prompts would hit vLLM's prefix cache
    in one phase and not the other."""
    return [f"Benchmark {kind} {i}: describe the number {i * 7919 % 1000} in a few words." for i in range(count)]


def plan_rounds(valid: list[str], levels: list[int], rounds: int) -> dict[int, list[list[str]]]:
    """Texts for each round of each level; no prompt is repeated across rounds or levels
    (each engine's prefix cache would serve a repeated one)."""
    needed = sum(levels) * rounds
    if len(valid) < needed:
        raise RuntimeError(f"only {len(valid)} candidate inputs keep the random model inside its first header "
                           f"for N tokens; {needed} are needed (try a smaller --tokens)")
    plan: dict[int, list[list[str]]] = {}
    start = 0
    for level in levels:
        plan[level] = []
        for _ in range(rounds):
            plan[level].append(valid[start:start + level])
            start += level
    return plan


def steps_since(history: list, steps_before: int) -> tuple[int, int]:
    """(max running, steps) over the scheduler history entries (step, running) after steps_before."""
    recent = [running for step, running in history if step > steps_before]
    return (max(recent) if recent else 0), len(recent)


def harmony_check(token_ids: list[int]) -> str:
    """Where the worker's harmony parser would end this output early (a failed response in the
    stack, so a shorter load than the raw one), as an outcome suffix; "" when it would not."""
    from responses_app.harmony.parser import HarmonyOutputError, OutputParser

    parser = OutputParser()
    for index, token_id in enumerate(token_ids):
        try:
            parser.feed(token_id)
        except HarmonyOutputError as error:
            return f", invalid harmony at token {index + 1}: {str(error)[:80]}"
    return ""


def describe(phase: str, level: LevelResult, n: int) -> str:
    wrong = [r for r in level.requests if r.tokens != n]
    cpu = ", ".join(f"{label} {seconds:.1f}" for label, seconds in sorted(level.cpu.items(), key=lambda x: -x[1]))
    line = (f"  {phase:5} x{level.concurrency:<3} {level.tokens:6d} tokens in {level.wall:6.2f} s = "
            f"{level.tokens_per_s:7.1f} tokens/s | engine: max {level.max_running} running, {level.steps} steps | "
            f"{level.outcomes()}")
    if wrong:
        line += f" | WARNING: {len(wrong)} responses did not run exactly {n} tokens"
    return line + f"\n        CPU seconds in {level.wall:.1f} s x {os.cpu_count()} CPUs: {cpu}"


# --- phase "raw": AsyncLLM alone ---------------------------------------------------------------


class RawEngine:
    """The tiny model on a bare AsyncLLM in this process, on a loop thread of its own, so
    that its rounds can alternate with the stack's."""

    def __init__(self, entry: dict[str, Any], prompts: dict[str, list[int]]) -> None:
        self.entry = entry
        self.prompts = prompts
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="raw-engine", daemon=True).start()
        self.engine: Any = None
        self.cpu_spec: CpuSpec = []

    def run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def start(self) -> None:
        import psutil

        from responses_app.engines.vllm_engine import VllmEngine

        # The server's own engine wrapper builds the AsyncLLM (DEFAULT_ENGINE_ARGS + the
        # registry's engine_args, its scheduler-statistics logger, its executor and OpenMP
        # threads on the CPU) and the vLLM SamplingParams, so both sides run the same engine
        # and sampling; the requests below then go to AsyncLLM.generate directly.
        self.engine = VllmEngine(MODEL, self.entry)
        started = time.perf_counter()
        self.run(self.engine.start())
        print(f"  AsyncLLM up in {time.perf_counter() - started:.1f} s", flush=True)
        # Its engine core (and, with vLLM's mp executor, that process's worker) are this
        # process's only children until the stack starts.
        self.cpu_spec = [("bench (AsyncLLM frontend)", os.getpid(), "self")] + [
            ("engine core+worker", child.pid, "tree") for child in psutil.Process().children()]

    def load(self, batch: list[str], tokens: int, tag: str) -> LevelResult:
        return self.run(self._load(batch, tokens, tag))

    async def _load(self, batch: list[str], tokens: int, tag: str) -> LevelResult:
        steps_before = self.engine.scheduler.steps
        cpu_before = cpu_seconds(self.cpu_spec)
        requests = await asyncio.gather(*(self._one(text, tokens, f"{tag}-{i}") for i, text in enumerate(batch)))
        cpu = cpu_delta(cpu_before, cpu_seconds(self.cpu_spec))
        max_running, steps = steps_since(list(self.engine.scheduler.history), steps_before)
        return LevelResult(len(batch), list(requests), max_running, steps, [len(self.prompts[t]) for t in batch], cpu)

    async def _one(self, text: str, tokens: int, request_id: str) -> RequestResult:
        from vllm.inputs import TokensPrompt

        from responses_app.engines.base import SamplingParams
        from responses_app.harmony.encoding import stop_token_ids

        # What runner.Generation sends for {max_output_tokens, temperature: 0}.
        params = self.engine._sampling_params(SamplingParams(max_tokens=tokens, temperature=0.0,
                                                             stop_token_ids=stop_token_ids()))
        submitted = time.perf_counter()
        first = None
        generated: list[int] = []
        finish = ""
        outputs = self.engine._llm.generate(TokensPrompt(prompt_token_ids=self.prompts[text]), params, request_id)
        async for output in outputs:
            completion = output.outputs[0]
            if completion.token_ids and first is None:
                first = time.perf_counter()
            generated += completion.token_ids
            finish = completion.finish_reason or finish
        end = time.perf_counter()
        return RequestResult(tokens=len(generated), submitted=submitted, end=end, first=first,
                             outcome=finish + harmony_check(generated))

    def shutdown(self) -> None:
        if self.engine is not None:
            self.run(self.engine.shutdown())
            # Drop the AsyncLLM while the interpreter is intact (its __del__ complains at exit otherwise).
            self.engine._llm = None
            gc.collect()
        self.loop.call_soon_threadsafe(self.loop.stop)


# --- phase "stack": the whole stack ----------------------------------------------------------------------


def make_stack_class() -> type:
    from tests.live.stack import LiveStack

    class BenchStack(LiveStack):
        """LiveStack with a deployment's settings: the Procfile's worker concurrency (the live
        tests' 16 task threads would cap 32 concurrent responses at 16 in the engine) and the
        default lease/flush timings instead of the tests' short ones."""

        def __init__(self, db_url: str, redis_url: str, models: dict[str, Path], worker_concurrency: int,
                     base_env: dict[str, str], node_processes: int = 1) -> None:
            super().__init__(db_url, redis_url, models)
            self.worker_concurrency = worker_concurrency
            self.node_processes = node_processes
            # The caller's environment as it was before the bench changed its own logging.
            for name in (*TEST_ONLY_ENV, "VLLM_LOGGING_LEVEL"):
                if name in base_env:
                    self.env[name] = base_env[name]
                else:
                    self.env.pop(name, None)

        def commands(self) -> dict[str, list[str]]:
            commands = super().commands()
            for name in ("worker", "vllm-worker"):
                argv = commands[name]
                argv[argv.index("--concurrency") + 1] = str(self.worker_concurrency)
            if self.node_processes > 1:
                # A GPU node: its supervisor, the engine core and the worker processes (their
                # threads pools by default, one per response slot and 8).
                commands["vllm-worker"] = [sys.executable, "manage.py", "run_gpu_node", "--model", MODEL,
                                           "--processes", str(self.node_processes),
                                           "--run-dir", str(ROOT / ".run" / f"bench-node-{self.port}"),
                                           "--hostname", self.node_worker(), "--loglevel", "INFO"]
            return commands

        def node_worker(self, slot: int | str = "{slot}") -> str:
            return f"vllm-worker-{self.port}-{slot}@%h"

        def wait_for_worker(self, name: str, timeout: float) -> None:
            if name != "vllm-worker" or self.node_processes == 1:
                super().wait_for_worker(name, timeout)
                return
            from project.celery import app

            names = [self.node_worker(slot).replace("%h", socket.gethostname()) for slot in range(self.node_processes)]
            deadline = time.monotonic() + timeout
            while not all(app.control.ping(destination=[name], timeout=1) for name in names):
                if self.processes[name].poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the GPU node did not start; see test-artifacts/live")
                time.sleep(1)

        def stop(self) -> None:
            # SIGTERM lets the vllm-worker shut its engine down; the process group (engine core
            # included) is killed if that takes too long, e.g. after Ctrl-C mid-load.
            for name in list(self.processes):
                process = self.processes.pop(name)
                kill_group(process, signal.SIGTERM)
                try:
                    process.wait(timeout=90)  # a node's supervisor stops its workers, then its core
                except subprocess.TimeoutExpired:
                    pass
                kill_group(process, signal.SIGKILL)
                process.wait(timeout=10)

    return BenchStack


def kill_group(process: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def scheduler_stats(stack: Any) -> dict[str, Any]:
    """The vllm-worker engine's scheduler snapshot (VllmEngine.scheduler_stats), via Celery inspect."""
    return stack.engine_report(MODEL).get("scheduler") or {}


def stack_cpu_spec(stack: Any) -> CpuSpec:
    spec: CpuSpec = [("bench (SDK client)", os.getpid(), "self")]
    labels = {"web": "daphne", "worker": "celery worker", "beat": "beat",
              "vllm-worker": "vllm-worker (celery+frontend)"}
    for name, process in stack.processes.items():
        spec.append((labels[name], process.pid, "self"))
        if name == "vllm-worker":
            spec.append(("engine core+worker" if stack.node_processes == 1 else
                         "engine core+worker processes", process.pid, "children"))
    return spec + service_pids(SERVICES_DIR)


class StackLoad:
    """The same loads through the whole stack, one SDK stream per response (``chat``: per chat
    completion)."""

    def __init__(self, stack: Any, api_key: str, prompts: dict[str, list[int]], chat: bool = False) -> None:
        import openai

        self.stack = stack
        self.prompts = prompts
        self.chat = chat
        self.client = openai.OpenAI(base_url=stack.base_url, api_key=api_key, max_retries=0, timeout=600)

    def load(self, batch: list[str], tokens: int) -> LevelResult:
        steps_before = scheduler_stats(self.stack).get("steps", 0)
        spec = stack_cpu_spec(self.stack)
        cpu_before = cpu_seconds(spec)
        go = threading.Event()
        results: list[Any] = [None] * len(batch)
        # One thread per response, all released at once: the SDK client is synchronous.
        threads = [threading.Thread(target=self._one, args=(text, tokens, go, results, i), daemon=True)
                   for i, text in enumerate(batch)]
        for thread in threads:
            thread.start()
        go.set()
        for thread in threads:
            thread.join()
        cpu = cpu_delta(cpu_before, cpu_seconds(spec))
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            raise RuntimeError(f"{len(errors)} of {len(batch)} streams failed") from errors[0]
        max_running, steps = steps_since(scheduler_stats(self.stack).get("history", []), steps_before)
        return LevelResult(len(batch), results, max_running, steps, [len(self.prompts[t]) for t in batch], cpu)

    def _one(self, text: str, tokens: int, go: threading.Event, results: list[RequestResult | BaseException],
             index: int) -> None:
        go.wait()
        if self.chat:
            self._one_completion(text, tokens, results, index)
            return
        submitted = time.perf_counter()
        first = in_progress = None
        final: Any = None
        try:
            stream = self.client.responses.create(model=MODEL, input=text, stream=True, max_output_tokens=tokens,
                                                  temperature=0)
            with stream:
                for event in stream:  # every event, to the end, as a client would
                    now = time.perf_counter()
                    if first is None:
                        first = now
                    if event.type == "response.in_progress" and in_progress is None:
                        in_progress = now
                    if event.type in TERMINAL_TYPES:
                        final = event.response
            end = time.perf_counter()
        except BaseException as error:  # reported by the main thread
            results[index] = error
            return
        usage = final.usage if final is not None else None
        outcome = "no terminal event" if final is None else final.status
        if final is not None and final.incomplete_details is not None:
            outcome += f" ({final.incomplete_details.reason})"
        if final is not None and final.error is not None:
            outcome += f" ({final.error.message[:100]})"
        results[index] = RequestResult(tokens=usage.output_tokens if usage else 0, submitted=submitted, end=end,
                                       first=first, in_progress=in_progress, outcome=outcome)
        if usage is not None and usage.input_tokens != len(self.prompts[text]):
            print(f"  WARNING: the stack's prompt has {usage.input_tokens} tokens, the raw one "
                  f"{len(self.prompts[text])}", flush=True)


    def _one_completion(self, text: str, tokens: int, results: list[RequestResult | BaseException],
                        index: int) -> None:
        submitted = time.perf_counter()
        first = usage = finish_reason = None
        try:
            stream = self.client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": text}], stream=True, max_completion_tokens=tokens,
                temperature=0, stream_options={"include_usage": True})
            with stream:
                for chunk in stream:  # every chunk, to [DONE], as a client would
                    first = first or time.perf_counter()
                    if chunk.choices and chunk.choices[0].finish_reason:
                        finish_reason = chunk.choices[0].finish_reason
                    usage = chunk.usage or usage
            end = time.perf_counter()
        except BaseException as error:  # reported by the main thread
            results[index] = error
            return
        results[index] = RequestResult(tokens=usage.completion_tokens if usage else 0, submitted=submitted, end=end,
                                       first=first, outcome=f"chat {finish_reason}")
        if usage is not None and usage.prompt_tokens != len(self.prompts[text]):
            print(f"  WARNING: the completion's prompt has {usage.prompt_tokens} tokens, the raw one "
                  f"{len(self.prompts[text])}", flush=True)


# --- services --------------------------------------------------------------------------------------


def kill_descendants() -> None:
    """The safety net: whatever this process started and is still alive (engine cores, vLLM's
    resource tracker, stack processes after an interrupted stop)."""
    import psutil

    children = psutil.Process().children(recursive=True)
    for child in children:
        try:
            child.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(children, timeout=10)


# --- report ------------------------------------------------------------------------------------------


def pair(values: tuple[float, float]) -> str:
    return f"{values[0]:.3f} / {values[1]:.3f}"


def report(raw: dict[int, list[LevelResult]], stack: dict[int, list[LevelResult]], n: int,
           args: argparse.Namespace) -> float | None:
    import psutil

    print()
    print(f"machine: {os.cpu_count()} CPUs ({len(os.sched_getaffinity(0))} usable), "
          f"{psutil.virtual_memory().total / 2**30:.0f} GiB RAM; model {MODEL}; N = {n} tokens per response; "
          f"{args.rounds} rounds per level, raw and stack alternating; "
          + (f"vllm-worker --concurrency {args.worker_concurrency}" if args.node_processes == 1 else
             f"a GPU node of {args.node_processes} worker processes on one engine core"))
    print("tokens/s: all generated tokens / (last completion - first submit), the median of the rounds. "
          "stack/raw: the median of the rounds' own ratios (each in brackets), since a round's two runs share "
          "the machine's load of that minute; the ratio of the two medians follows it.")
    print("first event, raw: time to the first token. stack: time from create() to response.created (the first "
          "SSE event) | to response.in_progress (a worker claimed it). Median / max over all the rounds' "
          "responses, in seconds.")
    header = (f"{'conc':>4} | {'raw tok/s':>9} | {'stack tok/s':>11} | {'stack/raw (each round)':>36} | "
              f"{'of medians':>10} | {'raw 1st token':>15} | "
              f"{'stack created':>15} | {'stack in_progress':>17} | {'engine max running raw/stack':>28}")
    print(header)
    print("-" * len(header))
    ratio_at_top = None
    for level in raw:
        raw_speed = statistics.median(r.tokens_per_s for r in raw[level])
        stack_speed = statistics.median(r.tokens_per_s for r in stack[level])
        rounds = [s.tokens_per_s / r.tokens_per_s for r, s in zip(raw[level], stack[level], strict=True)]
        ratio = statistics.median(rounds)
        if level == 32:
            ratio_at_top = ratio
        each = ", ".join(f"{r:.2f}" for r in rounds)
        raw_all, stack_all = pooled(raw[level]), pooled(stack[level])
        running = f"{max(r.max_running for r in raw[level])} / {max(r.max_running for r in stack[level])}"
        print(f"{level:>4} | {raw_speed:>9.1f} | {stack_speed:>11.1f} | {f'{ratio:.2f} ({each})':>36} | "
              f"{stack_speed / raw_speed:>10.2f} | "
              f"{pair(raw_all.first()):>15} | {pair(stack_all.first()):>15} | "
              f"{pair(stack_all.first('in_progress')):>17} | {running:>28}")
    return ratio_at_top


def report_chat(raw: dict[int, list[LevelResult]], stack: dict[int, list[LevelResult]],
                chat: dict[int, list[LevelResult]]) -> None:
    """Chat Completions beside the Responses path: each against the same round's raw run."""
    print()
    print("Chat Completions: the same load (inputs of its own) through client.chat.completions.create, streamed. "
          "chat/raw and stack/raw: the medians of the rounds' own ratios.")
    header = (f"{'conc':>4} | {'chat tok/s':>10} | {'chat/raw (each round)':>36} | {'stack/raw':>9} | "
              f"{'difference':>10} | {'chat 1st chunk':>15}")
    print(header)
    print("-" * len(header))
    for level in raw:
        chat_ratios = [c.tokens_per_s / r.tokens_per_s for r, c in zip(raw[level], chat[level], strict=True)]
        stack_ratio = statistics.median(s.tokens_per_s / r.tokens_per_s for r, s in zip(raw[level], stack[level],
                                                                                           strict=True))
        chat_ratio = statistics.median(chat_ratios)
        each = f"{chat_ratio:.2f} ({', '.join(f'{ratio:.2f}' for ratio in chat_ratios)})"
        print(f"{level:>4} | {statistics.median(c.tokens_per_s for c in chat[level]):>10.1f} | {each:>36} | "
              f"{stack_ratio:>9.2f} | {chat_ratio - stack_ratio:>+10.2f} | {pair(pooled(chat[level]).first()):>15}")


def pooled(results: list[LevelResult]) -> LevelResult:
    return LevelResult(results[0].concurrency, [r for result in results for r in result.requests])


# --- main --------------------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # 512: long enough that the 1-concurrent run lasts seconds, short enough for a few minutes in all.
    parser.add_argument("--tokens", type=int, default=512, help="tokens per response (N)")
    parser.add_argument("--levels", default="1,8,32,128,256", help="concurrency levels, comma-separated")
    # Several short rounds, raw and stack taking turns: the machine's background load drifts
    # over minutes, and one raw phase followed by one stack phase measured that drift too.
    parser.add_argument("--rounds", type=int, default=5, help="rounds per level and phase")
    parser.add_argument("--node-processes", type=int, default=1,
                        help="the stack's vLLM side as a GPU node: this many worker processes on one engine core")
    parser.add_argument("--chat", action="store_true",
                        help="each round also runs the load through Chat Completions (report_chat)")
    parser.add_argument("--worker-concurrency", type=int, default=264,
                        help="the vllm-worker's Celery threads (a deployment's default: one for each of its "
                             "256 response slots, and 8)")
    return parser.parse_args()


def interrupt(signum: int, frame: Any) -> None:
    """SIGTERM ends the run like Ctrl-C: through the finally blocks that stop what was started."""
    raise KeyboardInterrupt


def main() -> float | None:
    args = parse_args()
    levels = [int(level) for level in args.levels.split(",")]
    n = args.tokens
    if 32 not in levels:
        print("note: 32 is not among the levels; the last line reports nothing", flush=True)

    signal.signal(signal.SIGTERM, interrupt)
    base_env = dict(os.environ)
    from tests.live.stack import free_port

    stack = None
    raw_engine = None
    raw: dict[int, list[LevelResult]] = {level: [] for level in levels}
    staged: dict[int, list[LevelResult]] = {level: [] for level in levels}
    chatted: dict[int, list[LevelResult]] = {level: [] for level in levels}
    try:
        print(f"services: PostgreSQL + Redis in {SERVICES_DIR.relative_to(ROOT)}", flush=True)
        services(SERVICES_DIR, "start", free_port(), free_port())
        urls = service_urls(services(SERVICES_DIR, "env"))
        # Before django.setup(): settings (and Celery's broker, used to inspect the workers) read them.
        os.environ.update(DATABASE_URL=urls["DATABASE_URL"], REDIS_URL=urls["REDIS_URL"],
                          CELERY_BROKER_URL=urls["REDIS_URL"])
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
        # The bench's own engine logs only warnings: its output is the report. The stack logs as deployed.
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")

        import django

        django.setup()
        # Settings log INFO to the console; the SDK's per-request lines would bury the report.
        for name in ("httpx", "httpx2", "openai"):
            logging.getLogger(name).setLevel(logging.WARNING)
        from django.conf import settings

        from responses_app.devtools.tiny_models import ensure_model
        from responses_app.harmony.prompt import PromptRequest, render_prompt
        from tests.live.stack import model_registry

        path = ensure_model("random", settings.BASE_DIR / ".cache" / "models")
        registry = model_registry({MODEL: path})
        # The stack renders the prompt with the response's creation date (UTC); so does the bench.
        today = dt.datetime.now(dt.UTC).date().isoformat()
        # A third more candidates than the rounds need, for the screening below.
        needed = sum(levels) * args.rounds * (2 if args.chat else 1)
        candidates = texts(needed + needed // 3 + 4)
        warmup = texts(max(levels), "warmup")
        prompts = {text: render_prompt(PromptRequest(
            history=[{"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}],
            conversation_date=today)) for text in candidates + warmup}
        lengths = sorted(len(p) for p in prompts.values())
        print(f"prompts: {lengths[0]}-{lengths[-1]} tokens; N = {n}; levels {levels}; {args.rounds} rounds",
              flush=True)

        print("raw: AsyncLLM in this process", flush=True)
        raw_engine = RawEngine(registry[MODEL], prompts)
        raw_engine.start()
        # The screening (also the raw engine's warm-up) keeps only inputs that run N clean
        # tokens: for a few prompts the random model's greedy output turns into invalid
        # harmony, which fails the response in the stack after fewer tokens.
        screening = raw_engine.load(candidates, n, "screen")
        valid = [text for text, r in zip(candidates, screening.requests, strict=True)
                 if r.tokens == n and r.outcome == "length"]
        print(f"  screened {len(candidates)} inputs: {len(valid)} run {n} tokens inside the first header", flush=True)
        plan = plan_rounds(valid, levels, args.rounds)
        # Chat Completions' own inputs, after those of the Responses path.
        chat_plan = plan_rounds(valid[sum(levels) * args.rounds:], levels, args.rounds) if args.chat else {}

        print("stack: Daphne, Celery worker + beat, vllm-worker, PostgreSQL, Redis", flush=True)
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, check=True,
                       env={**os.environ})
        from responses_app.tenancy.api_keys import create_api_key

        api_key = create_api_key("bench")[1]
        stack = make_stack_class()(urls["DATABASE_URL"], urls["REDIS_URL"], {MODEL: path},
                                   args.worker_concurrency, base_env, args.node_processes)
        started = time.perf_counter()
        for name in ("web", "worker", "beat", "vllm-worker"):
            stack.start(name)
        print(f"  stack up in {time.perf_counter() - started:.1f} s (logs: test-artifacts/live/*-{stack.port}.log)",
              flush=True)
        stack_load = StackLoad(stack, api_key, prompts)
        stack_load.load(warmup, 16)  # task threads' DB connections, the SDK's connection pool
        chat_load = StackLoad(stack, api_key, prompts, chat=True)
        if args.chat:
            chat_load.load(warmup, 16)

        # Both engines are up (each idle while the other runs); each round runs the same texts
        # through both, and which goes first alternates from round to round.
        for level in levels:
            for round_number, batch in enumerate(plan[level]):
                phases = ["raw", "stack", *(["chat"] if args.chat else [])]
                # Who goes first turns from round to round.
                phases = phases[round_number % len(phases):] + phases[:round_number % len(phases)]
                for phase in phases:
                    # Let the previous run's tail (the stack's last writes, an mp executor's
                    # spin after its last step) go quiet first.
                    time.sleep(SETTLE_S)
                    if phase == "raw":
                        result = raw_engine.load(batch, n, f"raw-{level}-{round_number}")
                        raw[level].append(result)
                    elif phase == "chat":
                        result = chat_load.load(chat_plan[level][round_number], n)
                        chatted[level].append(result)
                    else:
                        result = stack_load.load(batch, n)
                        staged[level].append(result)
                    print(describe(phase, result, n), flush=True)
    finally:
        # Everything stops before the report, so that the ratio really is the last line.
        if raw_engine is not None:
            raw_engine.shutdown()
        if stack is not None:
            stack.stop()
        try:
            services(SERVICES_DIR, "stop")
        finally:
            kill_descendants()
    if not all(staged.values()):
        return None  # interrupted
    ratio = report(raw, staged, n, args)
    if args.chat and all(chatted.values()):
        report_chat(raw, staged, chatted)
    return ratio


if __name__ == "__main__":  # required: vLLM starts its engine core with multiprocessing "spawn"
    ratio = main()
    print(f"stack/raw tokens/s at 32 concurrent: {'n/a' if ratio is None else f'{ratio:.2f}'}", flush=True)
    # AsyncLLM leaves objects whose finalizers print tracebacks at interpreter exit; nothing is
    # left to clean up here, and the line above must stay the last one.
    sys.stdout.flush()
    os._exit(0)

"""Dispatch across a fleet of worker nodes: agent sessions whose context grows every turn.

N echo worker nodes (one Celery worker process each, NODE_ID node0..) behind one Daphne, on
this machine. Each node's echo engine has a prefix cache of 1.5x the working set of the
sessions it would own under perfect affinity (sessions / nodes x the last turn's context),
so that a cache as big as everything cannot pass, and prefills at ``--prefill`` tokens/s
(30,000 stands for gpt-oss-20b on an H100), one prefill after another per node as on a GPU.

S sessions of T turns, spread over several tenants: a session's first turn sends
``--first-tokens`` of context, each later turn adds input so that the last turn's prompt is
about ``--last-tokens``, chained by previous_response_id, with a think time between turns
drawn from ``--think``. Each turn is a streamed create read by a light client (httpx, lines
parsed by hand); its first token is its first reasoning or text delta.

The three dispatches (settings.DISPATCH) run one after another in one run, each on a fresh
stack (empty caches) with the same sessions: today's per-model queue, least-loaded, and
prefix. For each it prints, of the prompt tokens of turns 2 and later, the fraction
recomputed (the previous turn's prompt, computed once already, that the cache did not
serve) and the fraction not served from cache (that and the new input),
first-token p50/p99 (every turn), each node's share of the prefill seconds and the
dispatch decisions. ``--long-tenant`` gives one tenant's sessions twice the context of the
others' and prints its p99 apart; ``--kill-node-at S`` kills node0 S seconds into each run.

    .venv/bin/python bench/fleet.py [--nodes 4] [--sessions 64] [--turns 8] [--first-tokens 20000]
        [--last-tokens 60000] [--think 5,30] [--prefill 30000] [--dispatch model_queue,least_loaded,prefix]
        [--long-tenant] [--kill-node-at SECONDS]

It starts its own PostgreSQL and Redis (in .run/bench-fleet) and stops all it started.
Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.harness import django_on_services  # noqa: E402
from bench.paced import percentile  # noqa: E402

SERVICES_DIR = ROOT / ".run" / "bench-fleet"
ARTIFACTS = ROOT / "test-artifacts"  # each run's turns, one JSON file per dispatch
TENANTS = 8
# Words whose tokens a session's context is made of: seeded per session, so sessions share
# no prefix beyond the harmony system message.
WORDS = ("harbour boat gull net fog water ferry market bell light hill rope tide sail anchor pier crane "
         "lantern storm keel mast cargo chart compass reef buoy dock wave salt shell").split()
# What the deployment would set, not the live tests' short leases.
TEST_ONLY_ENV = ("RESPONSE_LEASE_TTL_S", "RESPONSE_LEASE_RENEW_S", "REAPER_INTERVAL_S", "PURGE_INTERVAL_S",
                 "UNSTORED_RETENTION_S", "SSE_KEEPALIVE_S")


@dataclass
class Turn:
    session: int
    turn: int
    tenant: int
    first_token_s: float = float("nan")
    created_s: float = float("nan")  # response.created: the web stored it
    started_s: float = float("nan")  # response.in_progress: a worker claimed it
    input_tokens: int = 0
    cached_tokens: int = 0
    status: str = ""
    response_id: str = ""


@dataclass
class Session:
    index: int
    tenant: int
    chunks: list[str]  # each turn's new context
    thinks: list[float]
    start_s: float
    turns: list[Turn] = field(default_factory=list)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--first-tokens", type=int, default=20_000)
    parser.add_argument("--last-tokens", type=int, default=60_000)
    parser.add_argument("--think", default="5,30", help="think time between turns: min,max seconds")
    parser.add_argument("--prefill", type=float, default=30_000.0, help="prefill tokens/s of each node")
    parser.add_argument("--dispatch", default="model_queue,least_loaded,prefix")
    parser.add_argument("--long-tenant", action="store_true", help="tenant 0's sessions have twice the context")
    parser.add_argument("--kill-node-at", type=float, default=None, help="kill node0 this many seconds in")
    parser.add_argument("--seed", type=int, default=7)
    return parser.parse_args()


def tokens_per_word() -> float:
    from responses_app.harmony.encoding import get_encoding

    sample = " ".join(random.Random(0).choice(WORDS) for _ in range(5000))
    return len(get_encoding().encode(sample, disallowed_special=())) / 5000


def plan_sessions(args: argparse.Namespace) -> list[Session]:
    rng = random.Random(args.seed)
    per_word = tokens_per_word()
    think_min, think_max = (float(part) for part in args.think.split(","))
    sessions = []
    for index in range(args.sessions):
        tenant = index % TENANTS
        scale = 2 if args.long_tenant and tenant == 0 else 1
        first, last = args.first_tokens * scale, args.last_tokens * scale
        step = (last - first) / max(args.turns - 1, 1)
        words = random.Random(args.seed * 1000 + index)
        chunks = []
        for turn in range(args.turns):
            tokens = first if turn == 0 else step
            chunks.append(" ".join(words.choice(WORDS) for _ in range(int(tokens / per_word))))
        thinks = [rng.uniform(think_min, think_max) for _ in range(args.turns - 1)]
        sessions.append(Session(index, tenant, chunks, thinks, start_s=rng.uniform(0, think_max)))
    return sessions


async def run_turn(client, session: Session, turn: int, previous: str | None, key: str) -> Turn:  # noqa: ANN001
    result = Turn(session.index, turn, session.tenant)
    body = {"model": "echo", "stream": True, "max_output_tokens": 64,
            "input": [{"role": "user", "content": session.chunks[turn]},
                      {"role": "user", "content": f"Turn {turn}: go on."}]}
    if previous is not None:
        body["previous_response_id"] = previous
    started = time.monotonic()
    async with client.stream("POST", "/v1/responses", json=body, headers={"Authorization": f"Bearer {key}"}) as reply:
        async for line in reply.aiter_lines():
            if not line.startswith("data: "):
                continue
            event = json.loads(line[6:])
            kind = event["type"]
            if kind == "response.created":
                result.created_s = time.monotonic() - started
            elif kind == "response.in_progress":
                result.started_s = time.monotonic() - started
            if kind.endswith(".delta") and math.isnan(result.first_token_s):
                result.first_token_s = time.monotonic() - started
            if kind in ("response.completed", "response.incomplete", "response.failed"):
                response = event["response"]
                result.status, result.response_id = response["status"], response["id"]
                usage = response.get("usage") or {}
                result.input_tokens = usage.get("input_tokens", 0)
                result.cached_tokens = (usage.get("input_tokens_details") or {}).get("cached_tokens", 0)
    return result


async def run_session(client, session: Session, key: str, t0: float) -> None:  # noqa: ANN001
    await asyncio.sleep(max(0.0, t0 + session.start_s - time.monotonic()))
    previous = None
    for turn in range(len(session.chunks)):
        try:
            result = await run_turn(client, session, turn, previous, key)
        except Exception as error:  # noqa: BLE001 - a broken stream is a figure, not the end of the run
            result = Turn(session.index, turn, session.tenant, status=f"error: {type(error).__name__}")
        session.turns.append(result)
        if not result.response_id:
            return
        previous = result.response_id
        if turn < len(session.thinks):
            await asyncio.sleep(session.thinks[turn])


def make_stack(urls: dict[str, str], args: argparse.Namespace, dispatch: str, capacity: int):  # noqa: ANN201
    from tests.live.stack import LiveStack

    class FleetStack(LiveStack):
        def __init__(self) -> None:
            super().__init__(urls["DATABASE_URL"], urls["REDIS_URL"], {})
            for name in TEST_ONLY_ENV:
                self.env.pop(name, None)
            self.env.update(DISPATCH=dispatch, FLEET_PREFILL_TOKENS_PER_S=str(args.prefill),
                            ECHO_PREFILL_TOKENS_PER_S=str(args.prefill), ECHO_PREFIX_CACHE_TOKENS=str(capacity),
                            ECHO_TOKEN_DELAY_MS="5", LOG_LEVEL="WARNING")

        def commands(self) -> dict[str, list[str]]:
            commands = super().commands()
            base = commands["worker"]
            for node in range(args.nodes):
                argv = list(base)
                argv[argv.index("--queues") + 1] = "celery,model.echo"
                argv[argv.index("--concurrency") + 1] = "72"
                argv[argv.index("--hostname") + 1] = f"node{node}-{self.port}@%h"
                commands[f"node{node}"] = argv
            return commands

        def process_env(self, name: str) -> dict[str, str]:
            env = dict(super().process_env(name))
            if name.startswith("node"):
                env.update(NODE_ID=name, WORKER_RESPONSE_SLOTS="64")
            return env

    return FleetStack()


def wait_for_heartbeats(nodes: int, timeout: float = 120) -> None:
    """Until every node's worker is up (its heartbeat: it consumes its queues)."""
    from responses_app.dispatch import fleet

    deadline = time.monotonic() + timeout
    while len(fleet.live_nodes("model.echo")) < nodes:
        if time.monotonic() > deadline:
            raise RuntimeError("the nodes did not start; see test-artifacts/live")
        time.sleep(0.5)


def dispatch_decisions(metrics_url: str) -> dict[str, int]:
    """The web's dispatch decisions (and the workers' spills), summed over nodes."""
    import httpx
    from prometheus_client.parser import text_string_to_metric_families

    counts: dict[str, int] = {}
    for family in text_string_to_metric_families(httpx.get(metrics_url, timeout=10).text):
        if family.name == "responses_dispatch_decisions":
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    decision = sample.labels["decision"]
                    counts[decision] = counts.get(decision, 0) + int(sample.value)
    return counts


def p50_p99(values: list[float]) -> tuple[float, float]:
    return (statistics.median(values) if values else float("nan")), percentile(values, 0.99)


def run_dispatch(urls: dict[str, str], args: argparse.Namespace, dispatch: str, keys: list[str],
                 warmup_key: str) -> dict:
    import httpx
    import redis

    from responses_app.models import Response

    redis.Redis.from_url(urls["REDIS_URL"]).flushdb()  # no preference or queue of the run before
    per_node_sessions = args.sessions / args.nodes
    capacity = int(1.5 * per_node_sessions * args.last_tokens)
    stack = make_stack(urls, args, dispatch, capacity)
    sessions = plan_sessions(args)
    try:
        for name in ("web", *(f"node{node}" for node in range(args.nodes))):
            stack.start(name)
        wait_for_heartbeats(args.nodes)

        async def main() -> None:
            limits = httpx.Limits(max_connections=args.sessions + 8)
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{stack.port}", timeout=600,
                                         limits=limits) as client:
                # Warm every process (its first create and first prompt load code and vocabularies).
                await asyncio.gather(*(client.post("/v1/responses", json={"model": "echo", "input": "Warm up."},
                                                   headers={"Authorization": f"Bearer {warmup_key}"})
                                       for _ in range(4 * args.nodes)))
                t0 = time.monotonic()
                tasks = [asyncio.create_task(run_session(client, session, keys[session.tenant], t0))
                         for session in sessions]
                if args.kill_node_at is not None:
                    await asyncio.sleep(args.kill_node_at)
                    stack.kill("node0")
                    print(f"  node0 killed at {args.kill_node_at:g} s", flush=True)
                await asyncio.gather(*tasks)

        started = time.monotonic()
        asyncio.run(main())
        wall = time.monotonic() - started
        time.sleep(1.5)  # the processes' last observations reach Redis
        decisions = dispatch_decisions(f"http://127.0.0.1:{stack.port}/metrics")
    finally:
        stack.stop()
    turns = [turn for session in sessions for turn in session.turns]
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / f"fleet-{dispatch}.json").write_text(json.dumps([turn.__dict__ for turn in turns]))
    # Of a later turn's prompt, what its node computed again: the previous turn's prompt
    # (computed once already) less what the cache served. The new input is computed anyway.
    later = [(earlier, turn) for session in sessions
             for earlier, turn in zip(session.turns, session.turns[1:], strict=False) if turn.input_tokens]
    later_input = max(sum(turn.input_tokens for _, turn in later), 1)
    prefill_by_node: dict[str, float] = {}
    for response in Response.objects.filter(pk__in=[turn.response_id for turn in turns if turn.response_id]):
        usage = response.usage or {}
        computed = usage.get("input_tokens", 0) - (usage.get("input_tokens_details") or {}).get("cached_tokens", 0)
        prefill_by_node[response.node] = prefill_by_node.get(response.node, 0.0) + computed / args.prefill
    timed = [turn for turn in turns if not math.isnan(turn.first_token_s)]
    firsts = [turn.first_token_s for turn in timed]
    long_firsts = [turn.first_token_s for turn in timed if turn.tenant == 0]
    total_prefill = sum(prefill_by_node.values()) or 1.0
    mean_share = 1 / max(len(prefill_by_node), 1)
    return {
        "dispatch": dispatch,
        "turns": len(turns),
        "completed": sum(turn.status == "completed" or turn.status == "incomplete" for turn in turns),
        "wall_s": wall,
        "recomputed": sum(max(0, earlier.input_tokens - turn.cached_tokens) for earlier, turn in later) / later_input,
        "uncached": sum(turn.input_tokens - turn.cached_tokens for _, turn in later) / later_input,
        "first_token_p50": statistics.median(firsts) if firsts else float("nan"),
        "first_token_p99": percentile(firsts, 0.99),
        "tenant0_p99": percentile(long_firsts, 0.99),
        # Where a first token's time goes, at the median and the 99th percentile: the web's
        # create, the wait for a worker's claim, and the rest (the prompt, the prefill).
        "created_p50_p99": p50_p99([turn.created_s for turn in timed]),
        "claimed_p50_p99": p50_p99([turn.started_s for turn in timed]),
        "later_turns_p50_p99": p50_p99([turn.first_token_s for turn in timed if turn.turn > 0]),
        "prefill_share": {node: seconds / total_prefill for node, seconds in sorted(prefill_by_node.items())},
        "max_over_mean": max(prefill_by_node.values(), default=0) / total_prefill / mean_share,
        "decisions": decisions,
        "failures": sorted({turn.status for turn in turns} - {"completed", "incomplete"}),
    }


def report(results: list[dict], args: argparse.Namespace) -> None:
    print(f"\n{args.nodes} nodes, {args.sessions} sessions x {args.turns} turns, context {args.first_tokens:,} -> "
          f"{args.last_tokens:,} tokens, think {args.think} s, prefill {args.prefill:,.0f} tokens/s"
          + (", tenant 0's sessions twice as long" if args.long_tenant else "")
          + (f", node0 killed at {args.kill_node_at:g} s" if args.kill_node_at is not None else ""))
    print(f"{'dispatch':<13} {'turns ok':>9} {'recomputed':>11} {'uncached':>9} {'first p50':>10} {'first p99':>10} "
          f"{'tenant0 p99':>12} {'max/mean':>9}  prefill share by node")
    for result in results:
        shares = " ".join(f"{node}={share:.2f}" for node, share in result["prefill_share"].items())
        print(f"{result['dispatch']:<13} {result['completed']:>4}/{result['turns']:<4} {result['recomputed']:>11.1%} "
              f"{result['uncached']:>9.1%} "
              f"{result['first_token_p50']:>9.2f}s {result['first_token_p99']:>9.2f}s "
              f"{result['tenant0_p99']:>11.2f}s {result['max_over_mean']:>9.2f}  {shares}"
              + (f"  failures: {result['failures']}" if result["failures"] else ""))
        print(f"{'':<13} decisions: " + ", ".join(f"{name} {count}" for name, count in
                                                   sorted(result["decisions"].items())))
    by_name = {result["dispatch"]: result for result in results}
    if "prefix" in by_name and "model_queue" in by_name:
        print(f"first-token p99, model_queue/prefix: "
              f"{by_name['model_queue']['first_token_p99'] / by_name['prefix']['first_token_p99']:.1f}x")


def main() -> None:
    args = parse_args()
    with django_on_services(SERVICES_DIR, database=True) as urls:
        from responses_app.tenancy.api_keys import create_api_key

        keys = [create_api_key(f"fleet-{tenant}-{int(time.time())}")[1] for tenant in range(TENANTS)]
        warmup_key = create_api_key(f"fleet-warmup-{int(time.time())}")[1]
        results = []
        for dispatch in args.dispatch.split(","):
            print(f"dispatch {dispatch}: {args.nodes} nodes up", flush=True)
            results.append(run_dispatch(urls, args, dispatch, keys, warmup_key))
            print(f"  {json.dumps(results[-1])}", flush=True)
        report(results, args)


if __name__ == "__main__":
    main()

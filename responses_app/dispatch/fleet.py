"""What the fleet of worker nodes tells the dispatcher, kept in Redis (REDIS_URL).

- **Heartbeats.** Every worker process that serves a model writes its entry to one hash
  (``fleet:processes``) every FLEET_HEARTBEAT_S: its node (settings.NODE_ID), Celery
  hostname, model queues, responses running, response slots and engine prefill backlog.
  A node is live while one of its processes wrote within FLEET_NODE_TTL_S; a node that
  stops writing is forgotten (a reader deletes the entries FORGET_AFTER_S old).
- **Waiting responses.** A response sent to one node's queue (``<model queue>@<NODE_ID>``)
  waits there for that node: it is in ``fleet:waiting:<node queue>`` and in ``fleet:spill``
  (scored by the time it may wait until). The claim takes it out of both; past its time, a
  worker's spill pass takes it out and sends it to its model's queue, where any node takes
  it. Its expected prefill is booked on the node (``fleet:booked:<node queue>``: when the
  prefills dispatch sent there will have run), so that the next dispatch sees it at once.
- **Affinity.** A response's dispatch record (``fleet:dispatch:<id>``) names the keys its
  prefix is known by (itself, its conversation, its prompt_cache_key, its leading
  input). When it ends, the worker writes each key as "node tokens": where the prefix was
  computed and how many tokens of it are likely cached there. Every key is tenant-scoped.

Redis is not the truth here: losing it loses preferences (turns then go where there is
room, as with one model queue), never a response.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from responses_app.lib.redis_client import shared_client

PROCESSES_KEY = "fleet:processes"
# Dispatch decisions by model, node and decision: a counter /metrics exports.
DECISIONS_KEY = "fleet:decisions"
SPILL_KEY = "fleet:spill"
DISPATCH_RECORD_TTL_S = 24 * 3600
# A process that has not beaten for this long is deleted from the heartbeats.
FORGET_AFTER_S = 600
SPILL_BATCH = 200


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def node_queue(model_queue: str, node: str) -> str:
    """The queue of one node's processes that consume ``model_queue``."""
    return f"{model_queue}@{node}"


def _waiting_key(queue: str) -> str:
    return f"fleet:waiting:{queue}"


def _affinity_key(key: str) -> str:
    return f"fleet:affinity:{key}"


def _booked_key(queue: str) -> str:
    return f"fleet:booked:{queue}"


def _dispatch_key(response_id: str) -> str:
    return f"fleet:dispatch:{response_id}"


@dataclass(frozen=True)
class Heartbeat:
    """One worker process's entry."""

    node: str
    worker: str  # its Celery hostname
    queues: tuple[str, ...]  # the model queues it consumes
    running: int
    slots: int
    slot_pool: str  # processes that share one engine's batch (a node file) share their slots
    prefill_backlog_s: float
    at: float = field(default_factory=time.time)


@dataclass
class NodeLoad:
    """A live node, from its processes' heartbeats and the responses waiting for it."""

    node: str
    queues: set[str] = field(default_factory=set)
    workers: list[str] = field(default_factory=list)
    running: int = 0
    slots: int = 0
    prefill_backlog_s: float = 0.0
    waiting: int = 0
    booked_s: float = 0.0  # the prefill dispatch sent it that has not run yet, as dispatch reckons

    @property
    def full(self) -> bool:
        return self.running >= self.slots

    @property
    def busy_s(self) -> float:
        """Prefill seconds ahead of a response sent to this node now: what its engine last
        reported, or what dispatch sent it since, whichever is more (a heartbeat is up to
        FLEET_HEARTBEAT_S old; a booking counts from the moment of the send)."""
        return max(self.prefill_backlog_s, self.booked_s)


def beat(process: str, heartbeat: Heartbeat) -> None:
    shared_client().hset(PROCESSES_KEY, process, json.dumps(heartbeat.__dict__))


def leave(process: str) -> None:
    shared_client().hdel(PROCESSES_KEY, process)


def live_nodes(queue: str | None = None) -> dict[str, NodeLoad]:
    """The live nodes; given a model ``queue``, those consuming it, with the load of their
    processes that do and what waits in their node queue for it."""
    client = shared_client()
    now = time.time()
    nodes: dict[str, NodeLoad] = {}
    stale = []
    pools: dict[str, set[str]] = {}
    for process, raw in client.hgetall(PROCESSES_KEY).items():
        entry = json.loads(raw)
        if now - entry["at"] > settings.FLEET_NODE_TTL_S:
            if now - entry["at"] > FORGET_AFTER_S:  # long dead (a fresh beat is never deleted)
                stale.append(process)
            continue
        if queue is not None and queue not in entry["queues"]:
            continue
        load = nodes.setdefault(entry["node"], NodeLoad(entry["node"]))
        load.queues.update(entry["queues"])
        load.workers.append(entry["worker"])
        load.running += entry["running"]
        if entry["slot_pool"] not in pools.setdefault(entry["node"], set()):
            pools[entry["node"]].add(entry["slot_pool"])
            load.slots += entry["slots"]
        load.prefill_backlog_s = max(load.prefill_backlog_s, entry["prefill_backlog_s"])
    if stale:
        client.hdel(PROCESSES_KEY, *stale)
    if queue is not None and nodes:
        pipe = client.pipeline(transaction=False)
        for name in nodes:
            pipe.zcard(_waiting_key(node_queue(queue, name)))
            pipe.get(_booked_key(node_queue(queue, name)))
        replies = pipe.execute()
        for load, waiting, booked in zip(nodes.values(), replies[::2], replies[1::2], strict=True):
            load.waiting = waiting
            load.booked_s = max(0.0, float(booked or 0) - now)
    return nodes


def lookup(keys: Iterable[str]) -> list[tuple[str, int] | None]:
    """Each key's last node and the tokens it likely holds there (None: not known)."""
    keys = list(keys)
    if not keys:
        return []
    found: list[tuple[str, int] | None] = []
    for raw in shared_client().mget([_affinity_key(key) for key in keys]):
        if raw is None:
            found.append(None)
            continue
        node, tokens = _text(raw).rsplit(" ", 1)
        found.append((node, int(tokens)))
    return found


# A node's prefills run one after another: its booking ends ``cost`` after the later of now
# and the end of the bookings before it.
_BOOK = """
local free = tonumber(redis.call('GET', KEYS[1]) or '0')
local now = tonumber(ARGV[1])
if free < now then free = now end
redis.call('SET', KEYS[1], tostring(free + tonumber(ARGV[2])), 'EX', 3600)
"""


def decision_field(model: str, node: str, decision: str) -> str:
    return json.dumps([model, node, decision])


def count_decision(model: str, node: str, decision: str) -> None:
    shared_client().hincrby(DECISIONS_KEY, decision_field(model, node, decision), 1)


def record_dispatch(response_id: str, keys: list[str], queue: str | None, prefill_s: float, wait_s: float,
                    decision: tuple[str, str, str]) -> None:
    """Count the ``decision`` (model, node, name) and remember the response's keys; when it
    is sent to a node's ``queue``, that it waits there until ``wait_s`` from now, and books
    ``prefill_s`` of the node's prefill."""
    client = shared_client()
    pipe = client.pipeline(transaction=False)
    pipe.hincrby(DECISIONS_KEY, decision_field(*decision), 1)
    pipe.set(_dispatch_key(response_id), json.dumps({"keys": keys, "queue": queue}), ex=DISPATCH_RECORD_TTL_S)
    if queue is not None:
        now = time.time()
        pipe.zadd(_waiting_key(queue), {response_id: now})
        pipe.zadd(SPILL_KEY, {f"{queue} {response_id}": now + wait_s})
        pipe.eval(_BOOK, 1, _booked_key(queue), now, prefill_s)
    pipe.execute()


def claimed(response_id: str) -> list[str]:
    """The claim took the response: it waits for no node any more. Returns its keys."""
    client = shared_client()
    raw = client.get(_dispatch_key(response_id))
    if raw is None:
        return []
    record = json.loads(raw)
    if record["queue"] is not None:
        pipe = client.pipeline(transaction=False)
        pipe.zrem(_waiting_key(record["queue"]), response_id)
        pipe.zrem(SPILL_KEY, f"{record['queue']} {response_id}")
        pipe.execute()
    return list(record["keys"])


def remember(keys: list[str], node: str, tokens: int) -> None:
    """A response ended on ``node`` with ``tokens`` of prompt and output in its cache."""
    if not keys:
        return
    pipe = shared_client().pipeline(transaction=False)
    for key in keys:
        pipe.set(_affinity_key(key), f"{node} {tokens}", ex=int(settings.FLEET_AFFINITY_TTL_S))
    pipe.execute()


def due_spills(now: float | None = None) -> list[tuple[str, str]]:
    """The (node, response id) pairs whose wait is over, each taken by one caller only."""
    client = shared_client()
    members = client.zrangebyscore(SPILL_KEY, "-inf", now or time.time(), start=0, num=SPILL_BATCH)
    taken = []
    for member in map(_text, members):
        if client.zrem(SPILL_KEY, member):  # another process's pass may have taken it
            queue, response_id = member.split(" ", 1)
            client.zrem(_waiting_key(queue), response_id)
            taken.append((queue.rsplit("@", 1)[1], response_id))
    return taken

"""Which queue a response is sent to: its model's, or one node's (settings.DISPATCH).

``prefix`` (the default) sends a response to the node whose expected time to its first
token is least: the prefill seconds already ahead of it there (its engine's backlog, or
what dispatch booked there since, whichever is more) plus the prefill of the prompt
tokens it does not hold. The
node where the response's chain last ran (its previous response, its conversation, its
prompt_cache_key, or the same leading input from the same tenant) likely holds all but
the new input, so it wins unless it is that much busier. A response sent to its preferred
node waits for it at most as long as the prefill it saves there; then any node of the
model takes it (fleet.due_spills). A full node is never chosen.

``least_loaded`` sends each response to the node with the fewest responses running and
waiting, and ``model_queue`` to the model's queue, which every node takes from (as before
nodes had queues of their own): the two baselines that bench/fleet.py compares with.

With no live node (no heartbeats yet, or Redis down), every response goes to its model's
queue: dispatch never holds a response back.
"""

from __future__ import annotations

import hashlib
import logging
import random
from dataclasses import dataclass
from typing import Any

import orjson
from django.conf import settings

from responses_app.dispatch import fleet
from responses_app.models import Response

log = logging.getLogger(__name__)
# A response sent to a node that was not chosen for its prefix waits this long at most
# before any node may take it: long enough for a live node's claim, short for a lost one.
MIN_WAIT_S = 1.0
# Characters per prompt token, to size a new input without tokenizing it.
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class Hint:
    """What only the create knows: its new input's size and its leading input's key."""

    new_tokens: int
    leading_key: str | None  # None: no input of its own (a continuation's new turn may have none)


@dataclass(frozen=True)
class Placement:
    queue: str
    node: str | None  # the node whose queue it is, when one
    decision: str  # preferred, moved (its node was busier), balanced (no known prefix), model_queue
    wait_s: float = 0.0
    prefill_s: float = 0.0


def hint_for(response: Response, instructions: str | None, input_items: list[dict[str, Any]]) -> Hint:
    new_tokens = len(orjson.dumps(input_items)) // CHARS_PER_TOKEN
    if not input_items:
        return Hint(new_tokens, None)
    leading = hashlib.sha256(orjson.dumps([response.model, instructions or "", input_items[0]])).hexdigest()
    return Hint(new_tokens, f"lead:{response.tenant_id}:{leading}")


def affinity_keys(response: Response, hint: Hint | None) -> tuple[list[str], list[str]]:
    """(the keys a prefix of this response may be known by, most precise first; the keys it
    is remembered by once it ends)."""
    cache_key = response.params.prompt_cache_key
    shared = []
    if response.conversation_id:
        shared.append(f"conv:{response.conversation_id}")
    if cache_key:
        shared.append(f"pck:{response.tenant_id}:{hashlib.sha256(cache_key.encode()).hexdigest()}")
    if hint is not None and hint.leading_key is not None:
        shared.append(hint.leading_key)
    looked_up = ([f"resp:{response.previous_response_id}"] if response.previous_response_id else []) + shared
    return looked_up, [f"resp:{response.pk}", *shared]


def place(model_queue: str, looked_up: list[str], hint: Hint | None = None) -> Placement:
    """Where to send a response of ``model_queue`` whose prefix may be known by ``looked_up``
    (affinity_keys' first list)."""
    mode = settings.DISPATCH
    live = fleet.live_nodes(model_queue) if mode != "model_queue" else {}
    nodes = [load for load in live.values() if not load.full]
    if not nodes:
        return Placement(model_queue, None, "model_queue")
    new_tokens = hint.new_tokens if hint is not None else 0
    rate = settings.FLEET_PREFILL_TOKENS_PER_S
    if mode == "least_loaded":
        least = min(nodes, key=lambda load: (load.running + load.waiting, load.busy_s, random.random()))
        return Placement(fleet.node_queue(model_queue, least.node), least.node, "balanced", MIN_WAIT_S,
                         new_tokens / rate)
    # The first key whose node is live: the most precise one where the prefix may still be.
    known = [found for found in fleet.lookup(looked_up) if found is not None and found[0] in live]
    held_node, held_tokens = known[0] if known else (None, 0)

    def uncached_tokens(load: fleet.NodeLoad) -> int:
        return new_tokens + (0 if load.node == held_node else held_tokens)

    # Ties (idle nodes) are broken at random, so that new sessions spread over the nodes.
    best = min(nodes, key=lambda load: (load.busy_s + uncached_tokens(load) / rate, load.running + load.waiting,
                                        random.random()))
    queue, prefill_s = fleet.node_queue(model_queue, best.node), uncached_tokens(best) / rate
    if held_node is None:
        return Placement(queue, best.node, "balanced", MIN_WAIT_S, prefill_s)
    if best.node != held_node:  # busier (or full) by more than its prefix saves
        return Placement(queue, best.node, "moved", MIN_WAIT_S, prefill_s)
    wait_s = min(max(held_tokens / rate, MIN_WAIT_S), settings.FLEET_MAX_WAIT_S)
    return Placement(queue, best.node, "preferred", wait_s, prefill_s)

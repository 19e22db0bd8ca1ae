"""A worker process's place in the fleet (dispatch/fleet.py): its node's queue, its
heartbeat, and the spill pass.

A worker that serves a model also consumes its node's queue of it (``<model queue>@<NODE_ID>``), where
dispatch sends the responses that prefer this node. Once it is ready, a thread writes its
heartbeat every FLEET_HEARTBEAT_S (responses running, slots, the engines' prefill backlog)
and sends to their model's queue the responses whose wait for their node is over (any
worker's pass takes each once). A claim takes the response out of its node's waiting set;
its end remembers where its prefix is cached.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from typing import Any

import redis
from celery.signals import worker_init, worker_ready, worker_shutdown
from django.conf import settings
from django.db import close_old_connections

from responses_app.dispatch import fleet
from responses_app.dispatch.task_queue import try_enqueue
from responses_app.engines.host import engine_host
from responses_app.engines.startup import served_models
from responses_app.models import Response, ResponseStatus
from responses_app.worker.admission import running_responses

log = logging.getLogger(__name__)


class Membership:
    def __init__(self, worker: str, queues: list[str]) -> None:
        self.worker = worker
        self.queues = queues  # the model queues this process consumes
        self.process = f"{settings.NODE_ID}|{socket.gethostname()}:{os.getpid()}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fleet-heartbeat", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        try:
            fleet.leave(self.process)
        except redis.RedisError as error:
            log.warning("fleet: could not leave: %s", error)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.beat()
                spill_due()
            except Exception as error:  # Redis or the database away: the next beat tries again
                log.warning("fleet heartbeat: %s: %s", type(error).__name__, error)
            finally:
                close_old_connections()
            self._stop.wait(settings.FLEET_HEARTBEAT_S)

    def beat(self) -> None:
        backlog = max((engine.prefill_backlog_s() for engine in engine_host().engines().values()), default=0.0)
        fleet.beat(self.process, fleet.Heartbeat(
            node=settings.NODE_ID, worker=self.worker, queues=tuple(self.queues), running=running_responses(),
            slots=settings.WORKER_RESPONSE_SLOTS, slot_pool=settings.NODE_ADMISSION_FILE or self.process,
            prefill_backlog_s=backlog))


def spill_due() -> int:
    """Send to their model's queue the responses that waited their time for a node."""
    return sum(spill(response_id, node) for node, response_id in fleet.due_spills())


def spill(response_id: str, node: str) -> bool:
    """Send the response to its model's queue, unless a node has claimed it (or it ended)."""
    response = Response.objects.filter(pk=response_id, status=ResponseStatus.QUEUED).first()
    return response is not None and try_enqueue(response, spilled_from=node)


def claimed(response_id: str) -> list[str]:
    """The keys its prefix is remembered by (nothing when Redis is away)."""
    try:
        return fleet.claimed(response_id)
    except redis.RedisError as error:
        log.warning("fleet: claim of %s not recorded: %s", response_id, error)
        return []


def remember(keys: list[str], held_tokens: int) -> None:
    try:
        fleet.remember(keys, settings.NODE_ID, held_tokens)
    except redis.RedisError as error:
        log.warning("fleet: prefix not remembered: %s", error)


_membership: Membership | None = None


def join_node_queue(sender: Any, **kwargs: Any) -> None:
    global _membership
    queues = sender.app.amqp.queues
    consumed = set(queues.consume_from or queues)
    models = served_models(consumed)
    if not models:
        return  # not a model worker (maintenance, webhooks)
    model_queues = sorted({settings.MODEL_REGISTRY[model]["queue"] for model in models})
    for queue in model_queues:
        queues.select_add(fleet.node_queue(queue, settings.NODE_ID))
    _membership = Membership(sender.hostname, model_queues)


def start_heartbeat(sender: Any, **kwargs: Any) -> None:
    if _membership is not None:
        _membership.start()


def leave_fleet(sender: Any, **kwargs: Any) -> None:
    if _membership is not None:
        _membership.stop()


worker_init.connect(join_node_queue)
worker_ready.connect(start_heartbeat)
worker_shutdown.connect(leave_fleet)

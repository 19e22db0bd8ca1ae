"""``GET /healthz``: can this deployment serve a response right now?

Four checks run at once, each bounded by CHECK_TIMEOUT_S: the database, the doorbell Redis,
the Celery broker, and at least one live worker consuming each configured model's queue.
A failing check is reported, never raised. Errors name only the exception's class (the
details, which may name hosts and users, go to the log): the endpoint is unauthenticated.

The worker check reads the workers' heartbeats (dispatch/fleet.py): one Redis read, whatever
a scraper's rate, and no broadcast to wait for (a broadcast waits its whole timeout for
answers, which a loaded machine could overrun).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import redis
from celery import current_app
from django.conf import settings
from django.db import close_old_connections, connection

from responses_app.dispatch import fleet

log = logging.getLogger(__name__)
CHECK_TIMEOUT_S = 2.0
REDIS_TIMEOUT_S = 1.0
BROKER_TIMEOUT_S = 1.0

# Checks block (sockets, a broadcast that waits for replies), so they run in threads of
# their own: a hung dependency can exhaust this pool, and make health checks time out,
# but never the pool that serves the API's database calls.
_executor = ThreadPoolExecutor(max_workers=8, thread_name_prefix="healthz")

Check = dict[str, Any]


def _failure(error: BaseException) -> Check:
    return {"ok": False, "error": type(error).__name__}


def check_database() -> Check:
    close_old_connections()  # a pool thread may hold a connection that broke since
    started = time.monotonic()
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return {"ok": True, "latency_ms": round((time.monotonic() - started) * 1000, 1)}


def check_redis() -> Check:
    started = time.monotonic()
    with redis.Redis.from_url(settings.REDIS_URL, socket_timeout=REDIS_TIMEOUT_S,
                              socket_connect_timeout=REDIS_TIMEOUT_S) as client:
        client.ping()
    return {"ok": True, "latency_ms": round((time.monotonic() - started) * 1000, 1)}


def check_broker() -> Check:
    started = time.monotonic()
    with current_app.connection_for_write(connect_timeout=BROKER_TIMEOUT_S) as broker:
        broker.ensure_connection(max_retries=0, timeout=BROKER_TIMEOUT_S)
    return {"ok": True, "latency_ms": round((time.monotonic() - started) * 1000, 1)}




def check_workers() -> dict[str, Check]:
    """Per model: ok when at least one live worker (its heartbeat: dispatch/fleet.py)
    consumes the model's queue."""
    workers_by_queue: dict[str, set[str]] = {}
    for load in fleet.live_nodes().values():
        for queue in load.queues:
            workers_by_queue.setdefault(queue, set()).update(load.workers)
    return {
        model: {
            "ok": bool(workers_by_queue.get(entry["queue"])),
            "queue": entry["queue"],
            "workers": sorted(workers_by_queue.get(entry["queue"], ())),
        }
        for model, entry in settings.MODEL_REGISTRY.items()
    }


async def _bounded(check: Callable[[], Any]) -> tuple[Any, BaseException | None]:
    loop = asyncio.get_running_loop()
    try:
        return await asyncio.wait_for(loop.run_in_executor(_executor, check), CHECK_TIMEOUT_S), None
    except Exception as error:  # TimeoutError included
        log.warning("healthz: %s failed: %r", check.__name__, error)
        return None, error


async def health_report() -> dict[str, Any]:
    """``{"status": "ok"|"unavailable", "checks": {...}}``; ok only when every check passed."""
    (database, database_error), (redis_, redis_error), (broker, broker_error), (workers, workers_error) = (
        await asyncio.gather(_bounded(check_database), _bounded(check_redis), _bounded(check_broker),
                             _bounded(check_workers)))
    if workers_error is not None:
        workers = {model: {**_failure(workers_error), "queue": entry["queue"], "workers": []}
                   for model, entry in settings.MODEL_REGISTRY.items()}
    checks = {
        "database": database if database_error is None else _failure(database_error),
        "redis": redis_ if redis_error is None else _failure(redis_error),
        "broker": broker if broker_error is None else _failure(broker_error),
        "workers": workers,
    }
    healthy = all(checks[name]["ok"] for name in ("database", "redis", "broker")) and all(
        entry["ok"] for entry in workers.values())
    return {"status": "ok" if healthy else "unavailable", "checks": checks}

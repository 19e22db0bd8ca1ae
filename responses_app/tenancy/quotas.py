"""Per-tenant limits on creating responses (the Tenant row's fields; empty: no limit).

- ``max_output_tokens``: a request may not ask for more (400), and one that does not ask
  gets the limit as its budget, so the Response object echoes what it was allowed.
- ``requests_per_minute``: a sliding one-minute window in Redis (429 + Retry-After),
  counted for each create request by the API's throttle (http/throttling.py).
- ``max_concurrent_background``: background responses queued or in progress at once
  (429 + Retry-After), checked inside the create transaction so that two concurrent
  creates cannot both take the last slot.

The other two are applied by services/create.create_response, whoever creates (the API, an
operator's re-run). Defaults for every tenant, from settings: TENANT_MAX_CONCURRENT_FOREGROUND
foreground responses at once (429), TENANT_MAX_SCHEDULES schedules and
TENANT_MAX_WEBHOOK_ENDPOINTS webhook endpoints (400 on the create past them).

Each limit only ever reads and writes the calling tenant's own counters.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import replace

import redis
from django.conf import settings
from django.db.models import QuerySet

from responses_app.lib.redis_client import shared_client
from responses_app.models import ACTIVE_STATUSES, Response, Tenant
from responses_app.models.response_params import ResponseParams
from responses_app.wire.errors import InvalidRequest, RateLimited

log = logging.getLogger(__name__)

WINDOW_MS = 60_000
# A background slot frees whenever one of the tenant's responses ends; there is no window
# to count down, so this only spaces out the SDK's automatic retries.
CONCURRENCY_RETRY_AFTER_S = 5

# Atomic in Redis: drop entries older than the window, admit if fewer than the limit
# remain, else answer the milliseconds until the oldest leaves the window. Redis's own
# clock (TIME) keeps several web servers with drifting clocks on one timeline.
_SLIDING_WINDOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  return 0
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return math.max(1, tonumber(oldest[2]) + window - now)
"""


def apply_output_token_limit(tenant: Tenant, params: ResponseParams) -> ResponseParams:
    """The request parameters to store: with the tenant's ``max_output_tokens`` as the
    budget when the request sets none. Raises InvalidRequest (400) when it asks for more."""
    limit = tenant.max_output_tokens
    if limit is None:
        return params
    asked = params.max_output_tokens
    if asked is None:
        return replace(params, max_output_tokens=limit)
    if asked > limit:
        # A 400, not a 429: the same request can never succeed, and the SDKs retry 429s.
        raise InvalidRequest(
            f"'max_output_tokens' is {asked}, above this organization's limit of {limit}.",
            param="max_output_tokens",
            code="integer_above_max_value",
        )
    return params


def check_requests_per_minute(tenant: Tenant) -> None:
    """Count one create in the tenant's sliding minute; RateLimited (429) past the limit."""
    limit = tenant.requests_per_minute
    if limit is None:
        return
    if limit == 0:
        raise RateLimited("This organization may not create responses (its requests per minute limit is 0).",
                          retry_after=WINDOW_MS // 1000)
    try:
        wait_ms = int(shared_client().eval(_SLIDING_WINDOW, 1, _window_key(tenant), limit, WINDOW_MS, uuid.uuid4().hex))
    except redis.RedisError as error:
        # Fail open: the database, not Redis, is what a create needs, and a limiter
        # outage should not become an API outage.
        log.warning("requests_per_minute check for tenant %s skipped: %s", tenant.pk, error)
        return
    if wait_ms > 0:
        raise RateLimited(
            f"Rate limit reached: {limit} requests per minute for this organization. "
            f"Try again in {-(-wait_ms // 1000)} s.",
            retry_after=-(-wait_ms // 1000),
            code="rate_limit_exceeded",
        )


def _window_key(tenant: Tenant) -> str:
    # The creation time as well as the id: a database recreated next to a running Redis
    # (a test run, a restore) hands out the same ids to new tenants within the minute.
    return f"quota:rpm:{tenant.pk}:{tenant.created_at.timestamp():.6f}"


def check_foreground_concurrency(tenant: Tenant, background: bool) -> None:
    """Raise RateLimited (429) if the tenant already has TENANT_MAX_CONCURRENT_FOREGROUND
    foreground responses queued or in progress: a default cap for every tenant, so that
    one tenant's burst of streams cannot take every worker. Counted without a lock (a
    burst may pass it by a few), since every create of a tenant would queue on one."""
    limit = settings.TENANT_MAX_CONCURRENT_FOREGROUND
    if background or not limit:
        return
    active = Response.objects.filter(status__in=ACTIVE_STATUSES, tenant=tenant, background=False)
    if len(active.values_list("pk", flat=True)[:limit]) >= limit:
        raise RateLimited(
            f"Too many responses in progress: this organization may run {limit} foreground responses at once.",
            retry_after=CONCURRENCY_RETRY_AFTER_S, code="concurrency_limit_exceeded")


def check_object_count(rows: QuerySet, limit: int, what: str, setting: str) -> None:
    """A 400 when the tenant already has ``limit`` of these objects (``rows``, its own):
    another create can only succeed after a delete."""
    if limit and len(rows.values_list("pk", flat=True)[:limit]) >= limit:
        raise InvalidRequest(f"This organization already has {limit} {what}, the most it may have ({setting}). "
                             "Delete one first.", code="object_limit_reached")


def reserve_background_slot(tenant: Tenant, background: bool) -> None:
    """Raise RateLimited (429) if the tenant already has ``max_concurrent_background``
    background responses queued or in progress.

    Call inside the transaction that inserts the response. On PostgreSQL the tenant row
    is locked, so concurrent creates of one tenant queue here and each one counts the
    others' committed rows; SQLite's IMMEDIATE transactions serialize all writers anyway.
    """
    if not background or tenant.max_concurrent_background is None:
        return
    limit = Tenant.objects.select_for_update().filter(pk=tenant.pk).values_list(
        "max_concurrent_background", flat=True).first()
    if limit is None:
        return
    # Active responses are a small slice of the table, reached through the
    # (status, lease_expires_at) index; at most ``limit`` rows are read, never counted.
    active = Response.objects.filter(status__in=ACTIVE_STATUSES, tenant=tenant, background=True)
    if len(active.values_list("pk", flat=True)[:limit]) >= limit:
        raise RateLimited(
            f"Too many background responses in progress: this organization may run {limit} at once. "
            "Wait for one to finish or cancel one.",
            retry_after=CONCURRENCY_RETRY_AFTER_S,
            code="concurrency_limit_exceeded",
        )

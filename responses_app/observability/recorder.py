"""Observations of this process, summed in memory and pushed to Redis in the background.

The worker commits a batch every 50 ms; an observation there only updates a dict under a
lock, and a daemon thread adds the sums to Redis once a second in one MULTI/EXEC, however
many observations there were. When Redis fails, the sums stay here and go with the next
push, so an outage delays metrics but neither loses them nor slows or breaks a response.
Every public function here swallows and logs its own errors for the same reason.
"""

from __future__ import annotations

import atexit
import logging
import os
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import redis
from django.conf import settings
from django.utils import timezone

from responses_app.models import ResponseStatus
from responses_app.observability import metrics
from responses_app.wire.usage import Usage

log = logging.getLogger(__name__)
PUSH_INTERVAL_S = 1.0
# Stream count changes wake the pusher at once, but never more often than this.
MIN_PUSH_GAP_S = 0.1
# A web process refreshes its stream count this often; the key outlives a refresh by a
# wide margin, and a process that died stops counting after SSE_KEY_TTL_S.
SSE_REFRESH_S = 5.0
SSE_KEY_TTL_S = 15
FINISHED_WITH_OUTPUT = (ResponseStatus.COMPLETED, ResponseStatus.INCOMPLETE)


@dataclass
class _Series:
    buckets: Counter[str] = field(default_factory=Counter)
    count: int = 0
    total: float = 0.0

    def merge(self, other: _Series) -> None:
        self.buckets.update(other.buckets)
        self.count += other.count
        self.total += other.total


class Recorder:
    """One per process. Thread-safe; starts its pusher thread on first use (after a fork too)."""

    def __init__(self, client: Callable[[], redis.Redis] = metrics.redis_client) -> None:
        self._client = client
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self.process_id = f"{socket.gethostname()}:{self._pid}"
        self._lock = threading.Lock()
        # One push at a time: a push holds what it took until Redis answers, and a second
        # push meanwhile would report success without it (the pusher thread beside an
        # explicit push, or the push at exit).
        self._push_lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._pending: dict[tuple[metrics.HistogramSpec, tuple[str, ...]], _Series] = {}
        self._open_streams = 0
        self._counts_streams = False  # only processes that served a stream publish a count
        self._streams_changed = False
        self._streams_pushed_at = 0.0
        self._failing = False

    def observe(self, histogram: metrics.HistogramSpec, label_values: tuple[str, ...], value: float) -> None:
        self._started()
        with self._lock:
            series = self._pending.setdefault((histogram, label_values), _Series())
            series.buckets[histogram.bucket_for(value)] += 1
            series.count += 1
            series.total += value

    def stream_opened(self) -> None:
        self._change_streams(+1)

    def stream_closed(self) -> None:
        self._change_streams(-1)

    def _change_streams(self, delta: int) -> None:
        self._started()
        with self._lock:
            self._open_streams += delta
            self._counts_streams = self._streams_changed = True
        self._wake.set()

    @property
    def open_streams(self) -> int:
        return self._open_streams

    def push(self) -> bool:
        """Add what was observed since the last push to Redis, in one transaction.

        Returns False (and keeps the observations for the next push) when Redis failed.
        """
        with self._push_lock:
            return self._push()

    def _push(self) -> bool:
        with self._lock:
            pending, self._pending = self._pending, {}
            streams_due = self._counts_streams and (
                self._streams_changed or time.monotonic() - self._streams_pushed_at >= SSE_REFRESH_S)
            self._streams_changed = False
            open_streams = self._open_streams
        if not pending and not streams_due:
            return True
        try:
            pipe = self._client().pipeline(transaction=True)
            for (histogram, label_values), series in pending.items():
                for bound, count in series.buckets.items():
                    pipe.hincrby(histogram.key, metrics.series_field(label_values, f"le={bound}"), count)
                pipe.hincrby(histogram.key, metrics.series_field(label_values, "count"), series.count)
                pipe.hincrbyfloat(histogram.key, metrics.series_field(label_values, "sum"), series.total)
            if streams_due:
                pipe.set(metrics.sse_streams_key(self.process_id), open_streams, ex=SSE_KEY_TTL_S)
                pipe.sadd(metrics.SSE_STREAMS_INDEX, self.process_id)
            pipe.execute()
        except Exception as error:
            with self._lock:
                for key, series in pending.items():
                    self._pending.setdefault(key, _Series()).merge(series)
                self._streams_changed = self._streams_changed or streams_due
            if not self._failing:  # once per outage, not once a second
                log.warning("metrics push to Redis failed (kept for the next push): %s", error)
            self._failing = True
            return False
        if streams_due:
            self._streams_pushed_at = time.monotonic()
        if self._failing:
            log.info("metrics push to Redis works again")
        self._failing = False
        return True

    def _started(self) -> None:
        if self._pid != os.getpid():
            self._reset()  # a forked child: the parent's sums and thread are not ours
        if self._thread is not None:
            return
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="metrics-pusher", daemon=True)
                self._thread.start()
                atexit.register(self._stop)

    def _stop(self) -> None:
        """At exit: end the pusher, then push the last observations (a worker's warm
        shutdown keeps its last second). A daemon thread frozen by the interpreter in the
        middle of a push would hold the Redis pool's lock, and the client's finalizer,
        which takes that lock, would hang the process's exit."""
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * metrics.REDIS_TIMEOUT_S + MIN_PUSH_GAP_S)  # a push in flight ends by then
        self.push()

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait(PUSH_INTERVAL_S)
            self._wake.clear()
            if self._stopping.is_set():
                return
            try:
                self.push()
            except Exception:  # the pusher must outlive any surprise
                log.exception("metrics pusher")
            time.sleep(MIN_PUSH_GAP_S)


RECORDER = Recorder()


# --- hooks: one call from each instrumented place; none of them can raise --------------------

def batch_committed(response: Any, events: list[dict[str, Any]], seconds: float) -> None:
    """A worker committed a batch of ``events`` in ``seconds``. The batch holding the first
    output event (the first item's ``output_item.added``: items are added in order, and a
    retried response starts over only while it has none) also gives the time to first event."""
    try:
        RECORDER.observe(metrics.EVENT_BATCH_WRITE, (), seconds)
        if any(event["type"] == "response.output_item.added" and event.get("output_index") == 0
               for event in events):
            waited = (timezone.now() - response.created_at).total_seconds()
            RECORDER.observe(metrics.TIME_TO_FIRST_EVENT, (response.model,), max(waited, 0.0))
    except Exception:
        log.exception("metrics: batch_committed")


def response_finished(model: str, status: str, usage: Usage, seconds: float) -> None:
    """A worker ended a response; completed and incomplete ones with output give tokens/s.
    Its prompt tokens count by where they came from (this node's prefix cache, or prefill)."""
    try:
        if status in FINISHED_WITH_OUTPUT and usage.output_tokens > 0 and seconds > 0:
            RECORDER.observe(metrics.OUTPUT_TOKENS_PER_SECOND, (model,), usage.output_tokens / seconds)
        if usage.input_tokens:
            RECORDER.observe(metrics.PROMPT_TOKENS, (model, settings.NODE_ID, "cached"), usage.cached_tokens)
            RECORDER.observe(metrics.PROMPT_TOKENS, (model, settings.NODE_ID, "computed"),
                             usage.input_tokens - usage.cached_tokens)
    except Exception:
        log.exception("metrics: response_finished")


def vector_store_searched(source: str, seconds: float) -> None:
    """A search of vector stores took ``seconds`` (source: api or file_search)."""
    try:
        RECORDER.observe(metrics.VECTOR_STORE_SEARCH, (source,), seconds)
    except Exception:
        log.exception("metrics: vector_store_searched")


def chat_completion_ended(model: str, streamed: bool, seconds: float) -> None:
    """A chat completion was answered (its stream ended) ``seconds`` after its create."""
    try:
        RECORDER.observe(metrics.CHAT_COMPLETION, (model, "true" if streamed else "false"), seconds)
    except Exception:
        log.exception("metrics: chat_completion_ended")


def sse_stream_opened() -> None:
    try:
        RECORDER.stream_opened()
    except Exception:
        log.exception("metrics: sse_stream_opened")


def sse_stream_closed() -> None:
    try:
        RECORDER.stream_closed()
    except Exception:
        log.exception("metrics: sse_stream_closed")

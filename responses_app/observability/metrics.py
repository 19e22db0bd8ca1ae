"""The metrics contract shared by the processes that observe and the one that exports.

Histograms live in Redis, one hash per metric. A field is ``<label values as JSON>|<part>``
where part is ``le=<bound>`` (observations that fell into that bucket, not cumulative),
``count`` or ``sum``. Storing plain bucket counts rather than cumulative ones keeps every
observation a single HINCRBY per bucket, and lets the exporter cumulate over whatever bounds
are stored, so that a change of buckets in a new release never corrupts old data.

Active SSE streams are counted per web process, in a key that expires unless the process
keeps refreshing it, so that a crashed process stops counting by itself.
"""

from __future__ import annotations

import json
import threading
from bisect import bisect_left
from dataclasses import dataclass

import redis
from django.conf import settings
from prometheus_client.utils import floatToGoString

KEY_PREFIX = "metrics:"
SSE_STREAMS_INDEX = f"{KEY_PREFIX}sse_streams:processes"
REDIS_TIMEOUT_S = 1.0


@dataclass(frozen=True)
class HistogramSpec:
    name: str
    documentation: str
    labels: tuple[str, ...]
    buckets: tuple[float, ...]

    @property
    def key(self) -> str:
        return f"{KEY_PREFIX}histogram:{self.name}"

    def bucket_for(self, value: float) -> str:
        """The upper bound (as Prometheus writes it) of the bucket that ``value`` falls into."""
        index = bisect_left(self.buckets, value)
        return floatToGoString(self.buckets[index]) if index < len(self.buckets) else "+Inf"


TIME_TO_FIRST_EVENT = HistogramSpec(
    "responses_time_to_first_event_seconds",
    "From a response's creation to the commit of its first output event (queueing included).",
    ("model",),
    (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0),
)
OUTPUT_TOKENS_PER_SECOND = HistogramSpec(
    "responses_output_tokens_per_second",
    "Output tokens of a completed or incomplete response divided by the worker's time on it "
    "(claim to terminal commit: prefill and tool calls included).",
    ("model",),
    (1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0),
)
EVENT_BATCH_WRITE = HistogramSpec(
    "responses_event_batch_write_seconds",
    "Duration of one committed batch of stream events (one transaction: events, items, lease).",
    (),
    (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
)
VECTOR_STORE_SEARCH = HistogramSpec(
    "responses_vector_store_search_seconds",
    "Duration of one search of vector stores: by vector_stores.search (source api) or by a response's "
    "file_search tool (source file_search).",
    ("source",),
    (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
)
CHAT_COMPLETION = HistogramSpec(
    "responses_chat_completion_seconds",
    "From a chat completion's create to the end of its answer (whole, or its stream's end; every choice's), "
    "by model and whether it streamed: its count counts the chat completions served.",
    ("model", "stream"),
    (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0),
)
PROMPT_TOKENS = HistogramSpec(
    "responses_prompt_tokens",
    "Prompt tokens of an ended response (all its engine calls), by model, worker node (NODE_ID) and source: "
    "cached (served from the engine's prefix cache) or computed (prefilled): its sum counts the tokens.",
    ("model", "node", "source"),
    (100.0, 1000.0, 4000.0, 16000.0, 32000.0, 64000.0, 128000.0, 256000.0, 1000000.0),
)
HISTOGRAMS = (TIME_TO_FIRST_EVENT, OUTPUT_TOKENS_PER_SECOND, EVENT_BATCH_WRITE, VECTOR_STORE_SEARCH, CHAT_COMPLETION,
              PROMPT_TOKENS)


def series_field(label_values: tuple[str, ...], part: str) -> str:
    return f"{json.dumps(list(label_values))}|{part}"


def parse_series_field(field: str) -> tuple[tuple[str, ...], str]:
    labels, part = field.rsplit("|", 1)
    return tuple(json.loads(labels)), part


def sse_streams_key(process_id: str) -> str:
    return f"{KEY_PREFIX}sse_streams:{process_id}"


_clients: dict[str, redis.Redis] = {}
_clients_lock = threading.Lock()


def redis_client() -> redis.Redis:
    """The metrics' Redis (settings.REDIS_URL), with short timeouts: metrics never wait long."""
    url = settings.REDIS_URL
    with _clients_lock:
        if url not in _clients:
            _clients[url] = redis.Redis.from_url(url, socket_timeout=REDIS_TIMEOUT_S,
                                                 socket_connect_timeout=REDIS_TIMEOUT_S, decode_responses=True)
        return _clients[url]

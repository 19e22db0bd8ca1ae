"""What ``GET /metrics`` exports, computed at scrape time from three sources.

- the database: responses by model and status, one GROUP BY over the responses table
  (never a count over the events table, which is orders of magnitude larger);
- the metrics Redis: the histograms that workers pushed, the live web processes' SSE
  stream counts, and the dispatch decisions (dispatch/fleet.py);
- the broker: the length of each model's Celery queue.

A source that fails is logged and left out, and ``responses_metrics_source_up`` says which
one, so that a scrape never fails and a missing series is never mistaken for a zero.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Iterator

import redis
from django.conf import settings
from django.db.models import Count
from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from responses_app.dispatch import broker, fleet
from responses_app.models import (
    BatchRequest,
    BatchRequestState,
    Response,
    ResponseStatus,
    VectorStoreFile,
    VectorStoreFileStatus,
)
from responses_app.observability import metrics

log = logging.getLogger(__name__)


class ResponsesCollector(Collector):
    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("responses_metrics_source_up",
                               "1 if this scrape could read the source, 0 if its series are missing.",
                               labels=["source"])
        for source, read in (("database", responses_by_status), ("redis", from_metrics_redis),
                             ("broker", queue_depths)):
            try:
                families = list(read())
            except Exception as error:
                log.warning("metrics: reading the %s failed: %s", source, error)
                up.add_metric([source], 0)
                continue
            up.add_metric([source], 1)
            yield from families
        yield up


def responses_by_status() -> Iterator[Metric]:
    gauge = GaugeMetricFamily("responses_by_status", "Responses in the database by model and status.",
                              labels=["model", "status"])
    counts = dict.fromkeys(((model, status) for model in settings.MODEL_REGISTRY
                            for status in ResponseStatus.values), 0)
    # Zeros for every configured model and status, so that a series drops to 0 rather than vanishing.
    for model, status, count in Response.objects.order_by().values_list("model", "status").annotate(n=Count("pk")):
        counts[(model, status)] = count
    for (model, status), count in sorted(counts.items()):
        gauge.add_metric([model, status], count)
    yield gauge
    yield batch_requests()
    yield vector_store_files()


def batch_requests() -> GaugeMetricFamily:
    """Batch requests by model and state: queued (waiting for a slot), running, and each end."""
    gauge = GaugeMetricFamily("responses_batch_requests", "Batch requests in the database by model and state.",
                              labels=["model", "state"])
    counts = dict.fromkeys(((model, state) for model in settings.MODEL_REGISTRY
                            for state in BatchRequestState.values), 0)
    for model, state, count in BatchRequest.objects.order_by().values_list("batch__model", "state").annotate(
            n=Count("pk")):
        counts[(model, state)] = count
    for (model, state), count in sorted(counts.items()):
        gauge.add_metric([model, state], count)
    return gauge


def vector_store_files() -> GaugeMetricFamily:
    """Vector store files by status: in_progress is ingestion's backlog (queued or being read)."""
    gauge = GaugeMetricFamily("responses_vector_store_files",
                              "Files of vector stores in the database by status (in_progress: being ingested).",
                              labels=["status"])
    counts = dict.fromkeys(VectorStoreFileStatus.values, 0)
    counts.update(VectorStoreFile.objects.order_by().values_list("status").annotate(n=Count("pk")))
    for status, count in sorted(counts.items()):
        gauge.add_metric([status], count)
    return gauge


def from_metrics_redis() -> Iterator[Metric]:
    client = metrics.redis_client()
    pipe = client.pipeline(transaction=False)
    for histogram in metrics.HISTOGRAMS:
        pipe.hgetall(histogram.key)
    pipe.smembers(metrics.SSE_STREAMS_INDEX)
    pipe.hgetall(fleet.DECISIONS_KEY)
    *stored, processes, decisions = pipe.execute()
    for histogram, fields in zip(metrics.HISTOGRAMS, stored, strict=True):
        yield histogram_family(histogram, fields)
    yield sse_streams(client, sorted(processes))
    yield dispatch_decisions(decisions)


def dispatch_decisions(fields: dict[str, str]) -> CounterMetricFamily:
    counter = CounterMetricFamily(
        "responses_dispatch_decisions",
        "Responses sent by dispatch (settings.DISPATCH), by model, node and decision: preferred (to the node that "
        "holds its prompt's prefix), moved (that node was busier than the prefix saves), balanced (no prefix "
        "known: to the node first to start it), model_queue (to the model's queue: no live node, or dispatch by "
        "model queue), spilled (waited its time for the node, then sent to the model's queue).",
        labels=["model", "node", "decision"])
    for field, count in sorted(fields.items()):
        counter.add_metric(json.loads(field), float(count))
    return counter


def histogram_family(histogram: metrics.HistogramSpec, fields: dict[str, str]) -> HistogramMetricFamily:
    family = HistogramMetricFamily(histogram.name, histogram.documentation, labels=list(histogram.labels))
    series: dict[tuple[str, ...], dict[str, float]] = defaultdict(dict)
    for name, value in fields.items():
        label_values, part = metrics.parse_series_field(name)
        series[label_values][part] = float(value)
    for label_values, parts in sorted(series.items()):
        stored_buckets = sorted((float(part[3:]), count) for part, count in parts.items() if part.startswith("le="))
        buckets = [(floatToGoString(bound), sum(count for stored, count in stored_buckets if stored <= bound))
                   for bound in histogram.buckets]
        buckets.append(("+Inf", parts.get("count", 0.0)))
        family.add_metric(list(label_values), buckets, parts.get("sum", 0.0))
    return family


def sse_streams(client: redis.Redis, processes: list[str]) -> GaugeMetricFamily:
    """The sum over live web processes; a process whose key expired (it died) is forgotten."""
    gauge = GaugeMetricFamily("responses_sse_streams_active", "SSE streams open on all web processes.")
    counts = client.mget([metrics.sse_streams_key(process) for process in processes]) if processes else []
    dead = [process for process, count in zip(processes, counts, strict=True) if count is None]
    if dead:
        client.srem(metrics.SSE_STREAMS_INDEX, *dead)
    gauge.add_metric([], sum(int(count) for count in counts if count is not None))
    return gauge


def queue_depths() -> Iterator[Metric]:
    """Messages waiting in each model's queue."""
    gauge = GaugeMetricFamily("responses_queue_depth", "Tasks waiting in each model's Celery queue.",
                              labels=["model", "queue"])
    models = sorted(settings.MODEL_REGISTRY.items())
    depths = broker.queue_depths([entry["queue"] for _, entry in models])
    for model, entry in models:
        gauge.add_metric([model, entry["queue"]], depths[entry["queue"]])
    yield gauge


REGISTRY = CollectorRegistry(auto_describe=False)
REGISTRY.register(ResponsesCollector())

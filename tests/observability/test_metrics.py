"""The metrics contract: bucket choice, Redis field names, and the export of stored buckets."""

from __future__ import annotations

from responses_app.observability.collector import histogram_family
from responses_app.observability.metrics import HistogramSpec, parse_series_field, series_field

LATENCY = HistogramSpec("test_latency_seconds", "test", ("model",), (0.1, 1.0, 10.0))


def test_a_value_on_a_bound_falls_into_that_bucket_and_one_above_every_bound_into_inf():
    assert [LATENCY.bucket_for(v) for v in (0.0, 0.1, 0.2, 1.0, 10.0, 10.5)] == [
        "0.1", "0.1", "1.0", "1.0", "10.0", "+Inf"]


def test_series_fields_round_trip_label_values_that_contain_the_separator():
    assert parse_series_field(series_field(("a|b", 'quote"'), "le=+Inf")) == (("a|b", 'quote"'), "le=+Inf")
    assert parse_series_field(series_field((), "sum")) == ((), "sum")


def test_export_cumulates_stored_buckets_including_bounds_of_an_older_release():
    stored = {
        series_field(("echo",), "le=0.1"): "2",
        series_field(("echo",), "le=0.5"): "1",  # a bound this release no longer has
        series_field(("echo",), "le=10.0"): "4",
        series_field(("echo",), "le=+Inf"): "1",
        series_field(("echo",), "count"): "8",
        series_field(("echo",), "sum"): "30.5",
    }
    samples = {(s.name, s.labels.get("le")): s.value for s in histogram_family(LATENCY, stored).samples}
    assert samples == {
        ("test_latency_seconds_bucket", "0.1"): 2, ("test_latency_seconds_bucket", "1.0"): 3,
        ("test_latency_seconds_bucket", "10.0"): 7, ("test_latency_seconds_bucket", "+Inf"): 8,
        ("test_latency_seconds_count", None): 8, ("test_latency_seconds_sum", None): 30.5,
    }

"""docs/grafana-dashboard.json asks only for what the server exports: every metric name and
label in every panel's PromQL (and in the dashboard's variables) is one that ``GET /metrics``
answers with, read in-process through Django's request path (as
tests/live/test_health_and_metrics.py reads it), never from a list kept here."""

from __future__ import annotations

import json
import re

import pytest
from prometheus_client.parser import text_string_to_metric_families

from responses_app.observability import metrics
from tests.docs.examples import ROOT
from tests.live.test_health_and_metrics import in_process_get

DASHBOARD = ROOT / "docs" / "grafana-dashboard.json"
# The labels that Prometheus itself puts on every series it scrapes.
TARGET_LABELS = {"job", "instance"}
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool", "and", "or",
            "unless", "inf", "nan"}
STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
RANGE = re.compile(r"\[[^\]]*\]")
VARIABLE = re.compile(r"\$(?:\{[^}]*\}|\w+)")  # Grafana's: $model, ${model}, $__rate_interval
MATCHERS = re.compile(r"\{([^}]*)\}")
MATCHER_LABEL = re.compile(r"([A-Za-z_]\w*)\s*(?:=~|!~|!=|=)")
GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
IDENTIFIER = re.compile(r"(?<![\w.:])[A-Za-z_:][\w:]*")
LABEL_VALUES = re.compile(r"label_values\(\s*([A-Za-z_:][\w:]*)\s*,\s*([A-Za-z_]\w*)\s*\)")


def used(expr: str) -> tuple[set[str], set[str]]:
    """The metric names and the label names that a PromQL expression names."""
    text = RANGE.sub(" ", STRING.sub('""', expr))
    text = VARIABLE.sub(" ", text)
    labels = {label for body in MATCHERS.findall(text) for label in MATCHER_LABEL.findall(body)}
    text = MATCHERS.sub(" ", text)
    labels |= {label.strip() for clause in GROUPING.findall(text) for label in clause.split(",") if label.strip()}
    text = GROUPING.sub(" ", text)
    names = set()
    for match in IDENTIFIER.finditer(text):
        followed_by = text[match.end():].lstrip()
        if match.group() in KEYWORDS or followed_by.startswith("("):  # a function or an aggregation
            continue
        names.add(match.group())
    return names, labels


def exported_series(exposition: str) -> dict[str, set[str]]:
    """Every series name the exposition holds, with its label names. A histogram is named
    with its _bucket, _count and _sum series even before its first observation (when the
    exposition has its TYPE line but no sample); its labels are then those that the
    metrics contract declares for it."""
    declared = {histogram.name: set(histogram.labels) for histogram in metrics.HISTOGRAMS}
    series: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(exposition):
        if family.type == "histogram":
            labels = declared.get(family.name, set())
            series.update({f"{family.name}_bucket": labels | {"le"}, f"{family.name}_count": set(labels),
                           f"{family.name}_sum": set(labels)})
        elif family.type in ("gauge", "untyped"):
            series.setdefault(family.name, set())
        for sample in family.samples:
            series.setdefault(sample.name, set()).update(sample.labels)
    return series


def dashboard_queries(dashboard: dict) -> list[tuple[str, str]]:
    """(where, expr) of every panel target, rows' panels included."""
    queries = []

    def walk(panels: list[dict]) -> None:
        for panel in panels:
            for target in panel.get("targets", []):
                queries.append((f"panel {panel['title']!r} target {target['refId']}", target["expr"]))
            walk(panel.get("panels", []))

    walk(dashboard["panels"])
    return queries


@pytest.fixture(scope="module")
def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


@pytest.fixture
def series(django_db_setup, db_access) -> dict[str, set[str]]:
    status, text = in_process_get("/metrics")
    assert status == 200
    exported = exported_series(text)
    # A source that could not be read leaves its series out: say so rather than blame the dashboard.
    up = {tuple(sorted(s.labels.items())): s.value for family in text_string_to_metric_families(text)
          if family.name == "responses_metrics_source_up" for s in family.samples}
    assert up and all(value == 1 for value in up.values()), up
    return exported


def test_the_expression_parser_finds_names_and_labels():
    assert used('histogram_quantile(0.9, max by (model, le) (rate(foo_bucket{model=~"$model"}[$__rate_interval])))'
                ) == ({"foo_bucket"}, {"model", "le"})
    assert used('sum(a{x="by (y)"}) by (z) / on(z) group_left b offset 5m > bool 1e3') == ({"a", "b"}, {"x", "z"})
    assert used("vllm:num_requests_running") == ({"vllm:num_requests_running"}, set())


def test_every_panel_of_the_dashboard_names_only_exported_metrics_and_labels(dashboard, series):
    queries = dashboard_queries(dashboard)
    assert len(queries) >= 10
    problems = []
    for where, expr in queries:
        names, labels = used(expr)
        if not names:
            problems.append(f"{where}: no metric in {expr!r}")
        for name in sorted(names):
            if name not in series:
                problems.append(f"{where}: {name} is not exported by /metrics")
            elif missing := labels - series[name] - TARGET_LABELS:
                problems.append(f"{where}: {name} has no label {sorted(missing)}")
    assert problems == [], "\n".join(problems)


def test_the_dashboards_variables_name_exported_metrics_and_labels(dashboard, series):
    variables = [v for v in dashboard["templating"]["list"] if v["type"] == "query"]
    assert variables
    for variable in variables:
        query = variable["query"]["query"] if isinstance(variable["query"], dict) else variable["query"]
        metric, label = LABEL_VALUES.fullmatch(query.strip()).groups()
        assert metric in series, variable["name"]
        assert label in series[metric], variable["name"]


def test_the_dashboard_is_an_import_with_a_prometheus_input(dashboard):
    assert [(i["name"], i["type"], i["pluginId"]) for i in dashboard["__inputs"]] == [
        ("DS_PROMETHEUS", "datasource", "prometheus")]
    assert dashboard["schemaVersion"] >= 36 and dashboard["id"] is None

    def datasources(panels: list[dict]) -> list[dict]:
        found = []
        for panel in panels:
            if panel["type"] != "row":
                found += [panel["datasource"], *(target["datasource"] for target in panel["targets"])]
            found += datasources(panel.get("panels", []))
        return found

    assert {json.dumps(ds, sort_keys=True) for ds in datasources(dashboard["panels"])} == {
        json.dumps({"type": "prometheus", "uid": "${DS_PROMETHEUS}"}, sort_keys=True)}

"""Metrics: naming conventions, a parseable exposition, every required family, per-instance registries."""

from __future__ import annotations

import math
import re
from pathlib import Path

import prometheus_client
import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families

import reassignd
import reassignd.cluster
import reassignd.daemon.mqtt_auth
from reassignd.daemon.metrics import (
    API_REFUSALS,
    CLUSTER_APIS,
    METRIC_NAMES,
    MQTT_REFUSALS,
    PARTITION_STATES,
    PLAN_STATES,
    SPECS,
    DaemonMetrics,
    MetricSpec,
    sample_names,
)

#: What the daemon issue asks to be measured, as the family that measures it.
REQUIRED = {
    "plans by state": "reassignd_plans",
    "partitions by state": "reassignd_partitions",
    "in-flight movements per broker and direction": "reassignd_inflight_replica_movements",
    "leader movements in flight": "reassignd_inflight_leader_movements",
    "bytes total": "reassignd_plan_total_bytes",
    "bytes remaining": "reassignd_plan_remaining_bytes",
    "bytes moved": "reassignd_plan_moved_bytes",
    "ETA seconds": "reassignd_plan_eta_seconds",
    "throttle rate per broker and direction": "reassignd_throttle_rate_bytes_per_second",
    "stalled moves": "reassignd_stalled_movements",
    "foreign reassignments": "reassignd_foreign_reassignments",
    "step duration histogram": "reassignd_step_duration_seconds",
    "cycle duration histogram": "reassignd_cycle_duration_seconds",
    "cluster call errors by API": "reassignd_cluster_call_errors_total",
    "last successful cluster contact": "reassignd_cluster_last_success_timestamp_seconds",
    "build info": "reassignd_build_info",
    "HA leadership": "reassignd_ha_is_leader",
    "MQTT queue drops": "reassignd_mqtt_dropped_events_total",
    "rejected commands": "reassignd_rejected_commands_total",
}


def exercised() -> DaemonMetrics:
    metrics = DaemonMetrics()
    metrics.observe_cycle(0.042)
    metrics.observe_cycle(3.0, ok=False)
    metrics.cluster_call("alter_partition_reassignments", ok=True, at=1_700_000_000.0)
    metrics.cluster_call("describe_configs", ok=False)
    metrics.set_plan_counts({"running": 1, "queued": 2}, states=("completed",))
    metrics.set_partition_counts({"pending": 150, "in_flight": 10, "completed": 40})
    metrics.set_progress("plan-1", total_bytes=1000, remaining_bytes=900, moved_bytes=100, eta_seconds=300.0)
    metrics.set_progress("plan-1", total_bytes=1000, remaining_bytes=400, moved_bytes=600, eta_seconds=120.0)
    metrics.step_started(3)
    metrics.step_completed(seconds=42.0)
    metrics.set_inflight({4: 2, 5: 1}, {1: 3}, leader_movements=1)
    metrics.set_throttle_rates({4: 10_000_000}, {1: 20_000_000})
    metrics.throttle_config_written("set", 2)
    metrics.set_stalled(1)
    metrics.stall_detected()
    metrics.auto_throttle_raised(4)
    metrics.set_foreign_reassignments(2)
    metrics.set_leader(True)
    metrics.mqtt_dropped(5)
    metrics.command_rejected("mqtt", "bad_signature")
    metrics.config_reloaded(ok=False)
    return metrics


def samples(metrics: DaemonMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = metrics.exposition()[0].decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_every_required_metric_is_declared() -> None:
    assert set(REQUIRED.values()) <= METRIC_NAMES


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_naming_conventions(spec: MetricSpec) -> None:
    name, kind, labels = spec.name, spec.kind, spec.labels
    assert re.fullmatch(r"reassignd_[a-z0-9_]+", name)
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", label) and not label.startswith("__") for label in labels)
    assert name.endswith("_total") == (kind == "counter"), "counters, and only counters, end in _total"
    assert name.endswith("_info") == (kind == "info")
    if kind == "histogram":
        assert name.endswith("_seconds")
    for unit_word, suffix in (
        ("bytes", ("_bytes", "_bytes_total", "_bytes_per_second")),
        ("seconds", ("_seconds",)),
    ):
        if unit_word in name and kind != "counter":
            assert name.endswith(suffix), f"{name}: unit must be the suffix"
    assert "milliseconds" not in name and "_kb" not in name and "_mb" not in name, "base units only"
    assert spec.doc.strip()


def test_exposition_parses_and_carries_the_values() -> None:
    found = samples(exercised())
    exposed = {name for name, _ in found}
    for spec in SPECS:
        if spec.kind in ("gauge", "info") and not spec.labels:
            assert spec.name in exposed, spec.name
    assert found[("reassignd_plans", (("state", "completed"),))] == 0
    assert found[("reassignd_plans", (("state", "queued"),))] == 2
    assert found[("reassignd_plan_remaining_bytes", (("plan", "plan-1"),))] == 400
    assert found[("reassignd_plan_eta_seconds", (("plan", "plan-1"),))] == 120
    assert found[("reassignd_inflight_replica_movements", (("broker", "4"), ("direction", "incoming")))] == 2
    assert found[("reassignd_inflight_replica_movements", (("broker", "1"), ("direction", "outgoing")))] == 3
    assert found[
        ("reassignd_throttle_rate_bytes_per_second", (("broker", "1"), ("direction", "outgoing")))
    ] == (20_000_000)
    assert found[("reassignd_cluster_call_errors_total", (("api", "describe_configs"),))] == 1
    assert found[("reassignd_cluster_call_errors_total", (("api", "alter_partition_reassignments"),))] == 0
    assert found[("reassignd_cluster_last_success_timestamp_seconds", ())] == 1_700_000_000.0
    assert found[("reassignd_cycle_duration_seconds_count", ())] == 2
    assert found[("reassignd_cycles_total", (("outcome", "error"),))] == 1
    assert found[("reassignd_step_duration_seconds_bucket", (("le", "60.0"),))] == 1
    assert found[("reassignd_moved_bytes_total", ())] == 500, "what the plan's figure grew by"
    assert found[("reassignd_ha_is_leader", ())] == 1
    assert found[("reassignd_mqtt_dropped_events_total", ())] == 5
    assert (
        found[("reassignd_rejected_commands_total", (("channel", "mqtt"), ("reason", "bad_signature")))] == 1
    )
    build = [labels for name, labels in found if name == "reassignd_build_info"]
    assert dict(build[0])["version"]
    # every exposed series belongs to a declared family
    declared = set().union(*(sample_names(s) for s in SPECS))
    assert exposed - declared == set()


def test_gauges_drop_children_that_are_gone() -> None:
    metrics = exercised()
    metrics.set_inflight({5: 1}, {}, leader_movements=0)
    metrics.set_throttle_rates({}, {})
    metrics.set_progress(None, 0, 0, 0, None)
    found = samples(metrics)
    movement = {labels for name, labels in found if name == "reassignd_inflight_replica_movements"}
    assert movement == {(("broker", "5"), ("direction", "incoming"))}
    assert not any(name == "reassignd_throttle_rate_bytes_per_second" for name, _ in found)
    assert not any(name.startswith("reassignd_plan_") for name, _ in found)


def test_unknown_eta_is_nan() -> None:
    metrics = DaemonMetrics()
    metrics.set_progress("p", 10, 10, 0, None)
    assert math.isnan(samples(metrics)[("reassignd_plan_eta_seconds", (("plan", "p"),))])


def test_instances_are_independent_and_never_global() -> None:
    first, second = DaemonMetrics(), DaemonMetrics()
    first.set_leader(True)
    assert samples(first)[("reassignd_ha_is_leader", ())] == 1
    assert samples(second)[("reassignd_ha_is_leader", ())] == 0
    global_names = {f.name for f in prometheus_client.REGISTRY.collect()}
    assert not any(name.startswith("reassignd") for name in global_names)


def test_openmetrics_negotiation() -> None:
    body, content_type = exercised().exposition("application/openmetrics-text; version=1.0.0")
    assert content_type.startswith("application/openmetrics-text")
    families = {f.name for f in parse_openmetrics(body.decode())}  # type: ignore[no-untyped-call]
    assert "reassignd_build" in families and "reassignd_cycles" in families
    body, content_type = exercised().exposition(None)
    assert content_type.startswith("text/plain")


# --- what an operator's queries need from a scrape --------------------------------------------------------


def test_labelled_counters_exist_at_zero_before_their_first_event() -> None:
    """`increase()` needs a sample before the first event: every known label value is there from the start
    (the ConfigReloadFailed alert missed the first failed reload without it)."""
    metrics = DaemonMetrics()
    metrics.auto_throttle_brokers([4, 5])
    found = samples(metrics)
    for outcome in ("ok", "error"):
        assert found[("reassignd_config_reloads_total", (("outcome", outcome),))] == 0
        assert found[("reassignd_cycles_total", (("outcome", outcome),))] == 0
    for action in ("set", "restored"):
        assert found[("reassignd_throttle_config_writes_total", (("action", action),))] == 0
    for api in CLUSTER_APIS:
        assert found[("reassignd_cluster_call_errors_total", (("api", api),))] == 0
        assert found[("reassignd_cluster_calls_total", (("api", api),))] == 0
    for channel, reasons in (("api", API_REFUSALS), ("mqtt", MQTT_REFUSALS)):
        for reason in reasons:
            assert (
                found[("reassignd_rejected_commands_total", (("channel", channel), ("reason", reason)))] == 0
            )
    for broker in ("4", "5"):
        assert found[("reassignd_auto_throttle_raises_total", (("broker", broker),))] == 0
    assert found[("reassignd_plans", (("state", "running"),))] == 0
    assert found[("reassignd_partitions", (("state", "in_flight"),))] == 0


def test_known_label_values_cover_what_the_code_can_emit() -> None:
    """The lists in metrics.py against the sources of the values: API codes, MQTT reasons, cluster calls,
    plan and partition states."""
    from reassignd.daemon.api import STATUS_BY_CODE
    from reassignd.engine.state import Status
    from reassignd.store.base import PlanStatus

    assert set(API_REFUSALS) == set(STATUS_BY_CODE)
    source = Path(reassignd.daemon.mqtt_auth.__file__).read_text()
    mqtt_reasons = set(re.findall(r'CommandRejected\(\s*"(\w+)"', source))
    assert mqtt_reasons and mqtt_reasons <= set(MQTT_REFUSALS)
    cluster_dir = Path(reassignd.cluster.__file__).parent
    apis = {
        name
        for path in cluster_dir.glob("*.py")
        for name in re.findall(r'(?:_call|_each_broker|_written)\(\s*"(\w+)"', path.read_text())
    }
    assert apis == set(CLUSTER_APIS)
    assert set(PARTITION_STATES) == {s.value for s in Status}
    assert set(PLAN_STATES) == {s.value for s in PlanStatus} - {"failed"}
    package = Path(reassignd.__file__).parent
    # a plan set FAILED (not Kafka's *_FAILED error names, which the cluster adapter speaks)
    setters = [
        p
        for p in package.rglob("*.py")
        if re.search(r"\bPlanStatus\.FAILED\b", p.read_text()) and p.parent.name != "store"
    ]
    assert not setters, "a plan can fail now: export reassignd_plans{state='failed'} (PLAN_STATES)"


@pytest.mark.parametrize("accept", [None, "application/openmetrics-text; version=1.0.0"])
def test_every_series_carries_the_cluster_label_and_none_is_created(accept: str | None) -> None:
    metrics = exercised()
    metrics.cluster = "prod-eu"
    body, _ = metrics.exposition(accept)
    text = body.decode()
    assert "_created" not in text
    parse = text_string_to_metric_families if accept is None else parse_openmetrics
    series = [s for family in parse(text) for s in family.samples]
    assert series and all(s.labels.get("cluster") == "prod-eu" for s in series)
    unlabelled = DaemonMetrics().exposition()[0].decode()
    assert 'cluster="' not in unlabelled, "no cluster label until the daemon knows it"


def test_moved_bytes_counter_follows_each_cycle_and_a_restart_does_not_count_twice() -> None:
    def moved(metrics: DaemonMetrics) -> float:
        return samples(metrics)[("reassignd_moved_bytes_total", ())]

    metrics = DaemonMetrics()
    for figure, expected in ((0, 0), (10, 10), (25, 25), (20, 25), (30, 35)):  # 25 -> 20: a copy restarted
        metrics.set_progress("p", 100, 100 - figure, figure, None)
        assert moved(metrics) == expected
    metrics.set_progress(None, 0, 0, 0, None)
    metrics.set_progress("q", 100, 50, 50, None)  # another plan, first seen half done (a failover)
    assert moved(metrics) == 35
    metrics.set_progress("q", 100, 40, 60, None)
    assert moved(metrics) == 45
    restarted = DaemonMetrics()
    restarted.set_progress("q", 100, 40, 60, None)
    assert moved(restarted) == 0, "what was copied before this process watched is not counted again"

"""The alert rules evaluated by `promtool test rules` on synthetic series: each fires when it should, only
after its `for`, and stays quiet in the healthy case next to it. Annotations are left out (their wording is
not what is tested), so the rules are checked from a copy without them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.deploy import yaml_files
from tests.deploy.test_monitoring import promtool

A = 'job="reassignd", cluster="c", instance="a:8080"'
B = 'job="reassignd", cluster="c", instance="b:8080"'


def series(name: str, labels: str, values: str) -> dict[str, str]:
    return {"series": f"{name}{{{labels}}}", "values": values}


def fires(alert: str, at: str, *labels: dict[str, str]) -> dict[str, Any]:
    return {"eval_time": at, "alertname": alert, "exp_alerts": [{"exp_labels": dict(lb)} for lb in labels]}


def quiet(alert: str, at: str) -> dict[str, Any]:
    return {"eval_time": at, "alertname": alert, "exp_alerts": []}


INSTANCE_A = {"cluster": "c", "instance": "a:8080", "job": "reassignd"}
CASES: list[tuple[str, list[dict[str, str]], list[dict[str, Any]]]] = [
    (
        "both daemons up, neither leads",
        [
            series("up", A, "1x10"),
            series("up", B, "1x10"),
            series("reassignd_ha_is_leader", A, "0x10"),
            series("reassignd_ha_is_leader", B, "0x10"),
        ],
        [
            quiet("ReassigndNoLeader", "1m"),
            fires("ReassigndNoLeader", "5m", {"cluster": "c", "severity": "critical"}),
            quiet("ReassigndSeveralLeaders", "5m"),
        ],
    ),
    (
        "every daemon down",
        [series("up", A, "0x10"), series("up", B, "0x10")],
        [
            fires("ReassigndNoLeader", "5m", {"cluster": "c", "severity": "critical"}),
            fires(
                "ReassigndDown",
                "5m",
                {**INSTANCE_A, "severity": "warning"},
                {**INSTANCE_A, "instance": "b:8080", "severity": "warning"},
            ),
        ],
    ),
    (
        "one leader, one standby: healthy",
        [
            series("up", A, "1x40"),
            series("up", B, "1x40"),
            series("reassignd_ha_is_leader", A, "1x40"),
            series("reassignd_ha_is_leader", B, "0x40"),
            series("reassignd_cluster_last_success_timestamp_seconds", A, "0+60x40"),
            series("reassignd_cluster_last_success_timestamp_seconds", B, "0x40"),
            series(
                "reassignd_throttle_rate_bytes_per_second", f'{A}, broker="1", direction="incoming"', "5e6x40"
            ),
            series("reassignd_plans", f'{A}, state="running"', "1x40"),
            series("reassignd_plans", f'{A}, state="cancelling"', "0x40"),
            series("reassignd_stalled_movements", A, "0x40"),
            series("reassignd_steps_completed_total", A, "0+1x40"),
            series("reassignd_cycles_total", f'{A}, outcome="ok"', "0+12x40"),
            series("reassignd_cycles_total", f'{A}, outcome="error"', "0+1x40"),
        ],
        [
            quiet(alert, "35m")
            for alert in (
                "ReassigndNoLeader",
                "ReassigndSeveralLeaders",
                "ReassigndDown",
                "ReassigndNoClusterContact",
                "ReassigndThrottleWithoutPlan",
                "ReassigndPlanStalled",
                "ReassigndPlanNotProgressing",
                "ReassigndCycleErrors",
            )
        ],
    ),
    (
        "two leaders",
        [series("reassignd_ha_is_leader", A, "1x10"), series("reassignd_ha_is_leader", B, "1x10")],
        [fires("ReassigndSeveralLeaders", "3m", {"cluster": "c", "severity": "critical"})],
    ),
    (
        "the leader has not reached Kafka since it started; the standby never tries",
        [
            series("reassignd_ha_is_leader", A, "1x10"),
            series("reassignd_ha_is_leader", B, "0x10"),
            series("reassignd_cluster_last_success_timestamp_seconds", A, "0x10"),
            series("reassignd_cluster_last_success_timestamp_seconds", B, "0x10"),
        ],
        [
            quiet("ReassigndNoClusterContact", "4m"),
            fires("ReassigndNoClusterContact", "7m", {**INSTANCE_A, "severity": "critical"}),
        ],
    ),
    (
        "moves stalled for 20 minutes",
        [series("reassignd_stalled_movements", A, "2x20")],
        [
            quiet("ReassigndPlanStalled", "10m"),
            fires(
                "ReassigndPlanStalled", "16m", {"cluster": "c", "instance": "a:8080", "severity": "warning"}
            ),
        ],
    ),
    (
        "partitions under min.insync.replicas while a plan runs, then after it ended",
        [
            series("reassignd_under_min_isr_partitions", A, "3x12 3x12"),
            series("reassignd_plans", f'{A}, state="running"', "1x12 0x12"),
        ],
        [
            quiet("ReassigndUnderMinInsyncDuringMove", "3m"),
            fires(
                "ReassigndUnderMinInsyncDuringMove",
                "7m",
                {"cluster": "c", "instance": "a:8080", "severity": "critical"},
            ),
            quiet("ReassigndUnderMinInsyncDuringMove", "20m"),
        ],
    ),
    (
        "throttles left in force after the plan finished",
        [
            series(
                "reassignd_throttle_rate_bytes_per_second", f'{A}, broker="1", direction="incoming"', "5e6x20"
            ),
            series(
                "reassignd_throttle_rate_bytes_per_second", f'{A}, broker="2", direction="outgoing"', "5e6x20"
            ),
            series("reassignd_plans", f'{A}, state="running"', "0x20"),
            series("reassignd_plans", f'{A}, state="completed"', "1x20"),
        ],
        [
            quiet("ReassigndThrottleWithoutPlan", "10m"),
            fires(
                "ReassigndThrottleWithoutPlan",
                "16m",
                {"cluster": "c", "instance": "a:8080", "severity": "warning"},
            ),
        ],
    ),
    (
        "the leader cannot reach the cluster; a standby never counts",
        [
            series("reassignd_ha_is_leader", A, "1x20"),
            series("reassignd_cluster_reachable", A, "1x5 0x15"),
            series("reassignd_ha_is_leader", B, "0x20"),
            series("reassignd_cluster_reachable", B, "0x20"),
        ],
        [
            quiet("ReassigndClusterUnreachable", "6m"),
            fires(
                "ReassigndClusterUnreachable",
                "9m",
                {"cluster": "c", "instance": "a:8080", "severity": "critical"},
            ),
        ],
    ),
    (
        "a running plan whose steps stopped completing",
        [
            series("reassignd_ha_is_leader", A, "1x70"),
            series("reassignd_plans", f'{A}, state="running"', "1x70"),
            series("reassignd_steps_completed_total", A, "0+1x5 5x65"),
        ],
        [
            quiet("ReassigndPlanNotProgressing", "40m"),
            fires(
                "ReassigndPlanNotProgressing",
                "70m",
                {"cluster": "c", "instance": "a:8080", "severity": "warning"},
            ),
        ],
    ),
    (
        "most cycles fail",
        [
            series("reassignd_cycles_total", f'{A}, outcome="ok"', "0+1x30"),
            series("reassignd_cycles_total", f'{A}, outcome="error"', "0+11x30"),
        ],
        [
            quiet("ReassigndCycleErrors", "5m"),
            fires(
                "ReassigndCycleErrors", "25m", {"cluster": "c", "instance": "a:8080", "severity": "warning"}
            ),
        ],
    ),
    (
        "a rejected reload",
        [series("reassignd_config_reloads_total", f'{A}, outcome="error"', "0x5 1x10")],
        [
            quiet("ReassigndConfigReloadFailed", "4m"),
            fires(
                "ReassigndConfigReloadFailed", "8m", {**INSTANCE_A, "outcome": "error", "severity": "info"}
            ),
        ],
    ),
]


def test_alert_rules_fire_when_they_should_and_only_then(tmp_path: Path) -> None:
    rules = yaml_files.load("deploy/prometheus/alerts.yml")
    for group in rules["groups"]:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    (tmp_path / "alerts.json").write_text(json.dumps(rules))  # JSON is YAML: promtool reads it
    tested = {case["alertname"] for _, _, cases in CASES for case in cases if case["exp_alerts"]}
    assert tested == {rule["alert"] for group in rules["groups"] for rule in group["rules"]}, (
        "an untested alert"
    )
    tests = [
        {"name": name, "interval": "1m", "input_series": inputs, "alert_rule_test": cases}
        for name, inputs, cases in CASES
    ]
    spec = {"rule_files": ["alerts.json"], "evaluation_interval": "1m", "tests": tests}
    (tmp_path / "alerts_test.json").write_text(json.dumps(spec))
    result = subprocess.run(
        [promtool(), "test", "rules", "alerts_test.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr

"""Debian's Prometheus scraping a live daemon while a plan copies data, with the real alert rules loaded:
what the dashboard and the alerts read is there, the bytes panel follows the copies scrape by scrape, and a
rejected SIGHUP reload fires ReassigndConfigReloadFailed (the daemon exports its counters at 0 from the
start, so the first failure is an increase)."""

from __future__ import annotations

import itertools
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.test_e2e import fill_plan, scenario
from tests.deploy.test_monitoring import ALERTS, dashboard_exprs
from tests.services.daemon import DaemonProcess
from tests.services.prometheus import PrometheusServer, prometheus_binary
from tests.services.simulator import SimProcess

pytestmark = pytest.mark.skipif(
    prometheus_binary() is None, reason="prometheus not installed (Debian package; `make setup` installs it)"
)

CLUSTER = "live"
SCRAPE = "500ms"
RATE_WINDOW = "3s"  # Grafana's $__rate_interval: at least four scrapes
WINDOW = "2400ms"  # five scrapes
# Slow copies: 10 MB partitions, two moves per receiving broker sharing 2 MB/s, so each step spans many
# scrapes (about 10 s) and the plan is still copying when the test ends.
SETTINGS = {
    "cluster.id": CLUSTER,
    "follower.reassignment.throttled.rate": 2_000_000,
    "leader.reassignment.throttled.rate": 50_000_000,
    "reassignment.max.incoming.replica.movements.per.broker": 2,
}


def grafana(expr: str, instance: str) -> str:
    for variable, value in (
        ("$__rate_interval", RATE_WINDOW),
        ("$__interval", SCRAPE),
        ("$cluster", CLUSTER),
        ("$instance", instance),
    ):
        expr = expr.replace(variable, value)
    assert "$" not in expr, expr
    return expr


def samples(prom: PrometheusServer, selector: str, window: str) -> list[tuple[float, float]]:
    (series,) = prom.query(f"{selector}[{window}]")
    return [(float(t), float(v)) for t, v in series["values"]]


def test_prometheus_sees_the_running_plan_the_dashboard_and_a_rejected_reload(tmp_path: Path) -> None:
    daemon = DaemonProcess(tmp_path / "daemon", "", SETTINGS)
    target = f"127.0.0.1:{daemon.port}"
    # Prometheus first: it hands new targets to its scrapers only every 5 s; the rest starts meanwhile
    with (
        PrometheusServer(
            tmp_path / "prometheus", [target], [ALERTS], daemon.token_file, interval=SCRAPE
        ) as prom,
        SimProcess(scenario(8), tmp_path / "sim", time_scale=1) as sim,
    ):
        daemon.settings["cluster.bootstrap.servers"] = sim.bootstrap_servers
        try:
            daemon.start()
            daemon.submit(fill_plan(8))
            follows_the_copies(prom)
            every_dashboard_query_returns_data(prom, target)
            every_rule_evaluates(prom)
            a_bad_sighup_fires_the_reload_alert(prom, daemon, target)
        finally:
            daemon.stop()


def follows_the_copies(prom: PrometheusServer) -> None:
    """Five scrapes of a plan copying data: the counter behind "Bytes moved per second" grows with the plan's
    own moved-bytes figure, by as much, between every two scrapes (before, it grew only when a step
    finished). The figure moves once per cycle, and under load a cycle can outlast the 0.5 s scrape (or a
    scrape fall between its gauge and its counter): a flat pair is allowed, a fall is not, and most pairs
    grow."""
    gauge = f'reassignd_plan_moved_bytes{{cluster="{CLUSTER}"}}'
    counter = f'reassignd_moved_bytes_total{{cluster="{CLUSTER}"}}'

    def copying() -> bool:
        found = prom.query(f"{gauge} > 0")
        return bool(found) and len(samples(prom, gauge, WINDOW)) >= 5

    prom.wait_for("five scrapes of a plan copying data", copying, timeout=60)
    at = time.time()
    plan = samples(prom, gauge, WINDOW)[-5:]
    total = dict(samples(prom, counter, WINDOW))
    assert [t for t, _ in plan] == sorted(total)[-5:], "both series come from the same scrapes"
    for (t0, v0), (t1, v1) in itertools.pairwise(plan):
        assert v1 >= v0, f"the moved figure fell: {plan}"
        assert total[t1] - total[t0] == pytest.approx(v1 - v0, rel=1e-6), (t0, t1)
    grew = sum(v1 > v0 for (_, v0), (_, v1) in itertools.pairwise(plan))
    assert grew >= 2, f"the plan copied between only {grew} of 4 pairs of scrapes: {plan}"
    (rate,) = prom.query(f"sum(rate({counter}[{RATE_WINDOW}]))", at)
    assert float(rate["value"][1]) > 0


def every_dashboard_query_returns_data(prom: PrometheusServer, instance: str) -> None:
    """Every expression of the dashboard (panels and variables), with its variables as Grafana fills them
    for this cluster, returns series: no "No data" panel while a plan runs."""
    empty: list[tuple[str, str]] = []
    for title, expr in dashboard_exprs():
        query = grafana(expr, instance)
        if not prom.query(query):
            empty.append((title, query))
    assert not empty, empty
    (info,) = prom.query("reassignd_build_info")
    assert info["metric"]["cluster"] == CLUSTER, "the $cluster variable's values come from here"


def every_rule_evaluates(prom: PrometheusServer) -> None:
    def evaluated() -> list[dict[str, Any]]:
        rules = [r for group in prom.api("rules")["groups"] for r in group["rules"]]
        return rules if all(r.get("lastEvaluation", "").startswith("2") for r in rules) else []

    rules = prom.wait_for("every rule evaluated", evaluated, timeout=20)
    assert {r["name"] for r in rules} >= {"ReassigndConfigReloadFailed", "ReassigndNoLeader"}
    broken = [(r["name"], r.get("lastError")) for r in rules if r["health"] != "ok"]
    assert not broken, broken
    firing = [r["name"] for r in rules if r["state"] != "inactive"]
    assert not firing, f"a healthy daemon with a running plan raises no alert: {firing}"


def a_bad_sighup_fires_the_reload_alert(prom: PrometheusServer, daemon: DaemonProcess, target: str) -> None:
    assert daemon.proc is not None
    daemon.settings["controller.cycle.interval.seconds"] = -1  # refused: the old config stays in force
    daemon.write_config()
    os.kill(daemon.proc.pid, signal.SIGHUP)

    def fired() -> list[dict[str, Any]]:
        return [
            a
            for a in prom.alerts()
            if a["labels"]["alertname"] == "ReassigndConfigReloadFailed" and a["state"] == "firing"
        ]

    (alert,) = prom.wait_for("ReassigndConfigReloadFailed firing", fired, timeout=20)
    assert alert["labels"]["cluster"] == CLUSTER and alert["labels"]["instance"] == target
    assert "was rejected" in alert["annotations"]["summary"]
    assert "config reload rejected" in daemon.log_tail(20_000)

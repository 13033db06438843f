"""The compose stack's two daemons, run here as processes: compose.toml's HA settings with a real ZooKeeper
and the simulated cluster must give one leader and one standby, as Prometheus sees them."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from reassignd.config import load_config
from tests.daemon.test_e2e import scenario
from tests.deploy.conftest import REPO
from tests.services.daemon import DaemonProcess
from tests.services.scrape import sample
from tests.services.simulator import SimProcess
from tests.services.zookeeper import ZooKeeperServer

HA_KEYS = ("state.store", "ha.enable", "ha.zookeeper.path", "ha.session.timeout.seconds")


def leader_gauge(daemon: DaemonProcess) -> float | None:
    code, body = daemon.request("GET", "/metrics", token=None)
    assert code == 200
    return sample(body, "reassignd_ha_is_leader")


@pytest.mark.zookeeper
def test_compose_daemons_elect_exactly_one_leader(zookeeper: ZooKeeperServer, tmp_path: Path) -> None:
    compose = load_config(REPO / "config/compose.toml", {})
    ha = {key: compose[key] for key in HA_KEYS}
    ha["ha.zookeeper.connect"] = zookeeper.hosts + f"/deploy-test-{time.monotonic_ns()}"
    ha["api.read.open"] = compose["api.read.open"]  # Prometheus scrapes without a token, as in the stack
    with SimProcess(scenario(4), tmp_path / "sim", time_scale=2) as sim:
        daemons = [
            DaemonProcess(tmp_path / name, sim.bootstrap_servers, {**ha, "ha.node.id": name})
            for name in ("reassignd-a", "reassignd-b")
        ]
        try:
            for daemon in daemons:
                daemon.settings["ha.advertised.url"] = daemon.url
                daemon.start()
            deadline = time.monotonic() + 30
            gauges: list[float | None] = []
            while time.monotonic() < deadline:
                gauges = [leader_gauge(daemon) for daemon in daemons]
                if sorted(gauges, key=str) == [0.0, 1.0]:
                    break
                time.sleep(0.3)
            assert sorted(gauges, key=str) == [0.0, 1.0], f"leader gauges {gauges}"
            # The leader stops (a rolling restart): the standby takes over, so ReassigndNoLeader stays quiet.
            leader, standby = (daemons[0], daemons[1]) if gauges[0] == 1.0 else (daemons[1], daemons[0])
            assert leader.terminate() == 0
            deadline = time.monotonic() + 2 * float(compose["ha.session.timeout.seconds"]) + 10
            while time.monotonic() < deadline and leader_gauge(standby) != 1.0:
                time.sleep(0.3)
            assert leader_gauge(standby) == 1.0
        finally:
            for daemon in daemons:
                daemon.stop()

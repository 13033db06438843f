"""A live daemon against the simulated cluster, with a plan running, scraped once for the whole module."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.daemon.test_e2e import fill_plan, scenario
from tests.services.daemon import DaemonProcess
from tests.services.simulator import SimProcess

REPO = Path(__file__).resolve().parents[2]
THROTTLED = {
    "cluster.id": "live",
    "leader.reassignment.throttled.rate": 20_000_000,
    "follower.reassignment.throttled.rate": 20_000_000,
    "reassignment.max.incoming.replica.movements.per.broker": 2,
}


@dataclass(frozen=True)
class LiveScrape:
    daemon: DaemonProcess
    text: str  # Prometheus text format 0.0.4, taken while a plan moves data


def _scrape(daemon: DaemonProcess) -> str:
    code, body = daemon.request("GET", "/metrics")  # a read: the token is needed
    assert code == 200, body
    return body.decode() if isinstance(body, bytes) else str(body)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveScrape]:
    workdir = tmp_path_factory.mktemp("live")
    with SimProcess(scenario(8), workdir / "sim", time_scale=2) as sim:
        daemon = DaemonProcess(workdir / "daemon", sim.bootstrap_servers, THROTTLED).start()
        try:
            code, body = daemon.request("POST", "/v1/plans", fill_plan(8))
            assert code == 201, body
            deadline = time.monotonic() + 90
            text = _scrape(daemon)
            # Wait until the plan is moving data, so the scrape carries per-broker and per-plan series (the
            # copy rates need two reads of the copies). Seconds on a quiet machine; a loaded fresh-clone run
            # once had none after 30 s, and every test of the module failed on the scrape, not on this.
            moving = ("reassignd_throttle_rate_bytes_per_second{", "reassignd_reassignment_bytes_per_second{")
            while not all(m in text for m in moving) and time.monotonic() < deadline:
                time.sleep(0.2)
                text = _scrape(daemon)
            assert all(m in text for m in moving), (
                f"no plan moving after 90 s; daemon log: {daemon.log_tail()}"
            )
            yield LiveScrape(daemon, text)
        finally:
            daemon.stop()

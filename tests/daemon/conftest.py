"""A real daemon against `reassignd sim`, shared by the hostile-input tests and the schemathesis run.

Daemons on one simulated cluster: `plain_daemon` uses only long-standing configuration keys (so its tests
reproduce the reported defects on any version), `guarded_daemon` sets the read token and short HTTP timeouts
so slow clients are measured in seconds, `fuzz_daemon` is schemathesis's own. All are module-scoped: they
stop with the test module that used them, so they do not load the machine during the rest of the suite.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.inprocess import KAFKA_MODES
from tests.daemon.test_e2e import scenario
from tests.services.daemon import DaemonProcess
from tests.services.simulator import SimProcess

READ_TOKEN = "read-token-0123456789abcdef0123456789"
QUIET = {"controller.cycle.interval.seconds": 1.0}  # these daemons idle: no need to poll 5 times a second


@pytest.fixture(scope="module")
def hostile_sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    with SimProcess(scenario(4), tmp_path_factory.mktemp("hostile-sim"), time_scale=1) as sim:
        yield sim


@pytest.fixture(scope="module")
def plain_daemon(
    hostile_sim: SimProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DaemonProcess]:
    daemon = DaemonProcess(tmp_path_factory.mktemp("plain-daemon"), hostile_sim.bootstrap_servers, QUIET)
    daemon.start()
    try:
        yield daemon
    finally:
        daemon.stop()


@pytest.fixture(scope="module")
def guarded_daemon(
    hostile_sim: SimProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DaemonProcess]:
    workdir: Path = tmp_path_factory.mktemp("guarded-daemon")
    read_token = workdir / "read-token"
    read_token.write_text(READ_TOKEN + "\n")
    read_token.chmod(0o600)
    daemon = DaemonProcess(
        workdir,
        hostile_sim.bootstrap_servers,
        {
            **QUIET,
            "api.read.token.file": str(read_token),
            "api.max.connections": 16,
            "api.header.timeout.seconds": 1.0,
            "api.body.timeout.seconds": 1.0,
            "api.idle.timeout.seconds": 1.5,
        },
    )
    daemon.start()
    try:
        yield daemon
    finally:
        daemon.stop()


@pytest.fixture(scope="module")
def fuzz_daemon(hostile_sim: SimProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    """A daemon of its own for schemathesis, whose random (valid) limit changes no other test sees."""
    daemon = DaemonProcess(tmp_path_factory.mktemp("fuzz-daemon"), hostile_sim.bootstrap_servers, QUIET)
    daemon.start()
    try:
        yield daemon
    finally:
        daemon.stop()


@pytest.fixture(params=sorted(KAFKA_MODES))
def kafka_mode(request: pytest.FixtureRequest) -> str:
    """Each controller mode the daemon must handle (tests/daemon/inprocess.py KAFKA_MODES)."""
    return str(request.param)

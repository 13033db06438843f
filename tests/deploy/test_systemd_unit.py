"""The systemd unit as systemd reads it, and the notify protocol as a real `reassignd run` speaks it."""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reassignd.config import load_config
from tests.daemon.test_e2e import scenario
from tests.deploy.conftest import REPO
from tests.services.daemon import DaemonProcess
from tests.services.simulator import SimProcess

pytestmark = pytest.mark.slow

UNIT = REPO / "deploy/systemd/reassignd.service"
EXAMPLE_CONFIG = REPO / "config/reassignd.toml"  # what the unit's comment installs as its config
INSTALLED_BINARY = "/usr/local/bin/reassignd"


def unit_settings() -> dict[str, dict[str, list[str]]]:
    """Section -> key -> every value, in order (systemd keys repeat: Environment=, SystemCallFilter=)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] = {}
    for raw in UNIT.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
            continue
        key, _, value = line.partition("=")
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def seconds(value: str) -> float:
    units = {"ms": 0.001, "s": 1, "min": 60, "m": 60, "h": 3600}
    for suffix, factor in sorted(units.items(), key=lambda kv: -len(kv[0])):
        if value.endswith(suffix):
            return float(value[: -len(suffix)]) * factor
    return float(value)


def test_systemd_analyze_verify_accepts_the_unit(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip(
            "systemd-analyze is not installed; Debian's `systemd` package provides it (not added to "
            "`make setup`: it is a large package and a container rarely runs systemd)"
        )
    # The unit names the installed binary; verify checks it exists, so point it at this checkout's.
    binary = shutil.which("reassignd", path=str(Path(sys.executable).parent))
    assert binary, "reassignd console script not found next to the interpreter"
    text = UNIT.read_text()
    assert INSTALLED_BINARY in text
    unit = tmp_path / "reassignd.service"
    unit.write_text(text.replace(INSTALLED_BINARY, binary))
    result = subprocess.run(
        [analyze, "verify", str(unit)], capture_output=True, text=True, timeout=120, check=False
    )
    complaints = [
        line for line in (result.stdout + result.stderr).splitlines() if "reassignd.service" in line
    ]
    assert result.returncode == 0 and not complaints, result.stdout + result.stderr


def test_the_unit_notifies_reloads_restarts_and_is_hardened(tmp_path: Path) -> None:
    unit = unit_settings()
    service = {key: values[-1] for key, values in unit["Service"].items()}
    assert service["Type"] == "notify" and service["NotifyAccess"] == "main"
    assert service["ExecReload"] == "/bin/kill -HUP $MAINPID"
    assert service["ExecStart"] == f"{INSTALLED_BINARY} run --config /etc/reassignd/reassignd.toml"
    assert service["Restart"] == "on-failure"
    assert service["DynamicUser"] == "yes" and service["StateDirectory"] == "reassignd"
    for key in ("NoNewPrivileges", "PrivateTmp", "ProtectHome", "PrivateDevices", "RestrictSUIDSGID"):
        assert service[key] == "yes", key
    # strict leaves only StateDirectory= writable; nothing else is opened up.
    assert service["ProtectSystem"] == "strict" and "ReadWritePaths" not in service
    assert service["CapabilityBoundingSet"] == ""
    assert "AF_UNIX" in service["RestrictAddressFamilies"].split(), "sd_notify needs AF_UNIX"
    assert "@system-service" in unit["Service"]["SystemCallFilter"]
    environment = dict(value.split("=", 1) for value in unit["Service"]["Environment"])
    assert environment["REASSIGND_STATE_DIR"] == "%S/reassignd"
    assert environment["REASSIGND_API_TOKEN_FILE"] == "%d/api-token"
    assert "api-token:/etc/reassignd/api-token" in unit["Service"]["LoadCredential"]
    # With the example config, the unit's REASSIGND_* settings are valid config keys (the daemon warns about
    # unknown ones); the credential is a file systemd provides, stood in for here.
    credential = tmp_path / "api-token"
    credential.write_text("x" * 64)
    credential.chmod(0o400)  # systemd gives the service its credential readable by the service alone
    config = load_config(EXAMPLE_CONFIG, {**environment, "REASSIGND_API_TOKEN_FILE": str(credential)})
    assert not config.ignored_env
    assert config["state.dir"] == "%S/reassignd"


def test_the_stop_timeout_outlasts_the_daemons_graceful_shutdown() -> None:
    service = {key: values[-1] for key, values in unit_settings()["Service"].items()}
    config = load_config(EXAMPLE_CONFIG, {})
    assert seconds(service["TimeoutStopSec"]) > float(config["controller.shutdown.timeout.seconds"])
    cycle = float(config["controller.cycle.interval.seconds"])
    assert seconds(service["WatchdogSec"]) >= 6 * cycle, "pings stop after 3 missed cycles at most"


# --- sd_notify from a real daemon -------------------------------------------------------------------------


class NotifySocket:
    """What systemd listens on: an AF_UNIX datagram socket; collects every message."""

    def __init__(self, abstract: bool = False) -> None:
        # A short directory: socket paths are limited to 107 bytes.
        self.directory = Path(tempfile.mkdtemp(prefix="notify-", dir="/tmp"))
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        if abstract:  # systemd may hand out an abstract socket, written with a leading '@'
            name = f"reassignd-notify-{os.getpid()}-{time.monotonic_ns()}"
            self.sock.bind("\0" + name)
            self.address = "@" + name
        else:
            self.sock.bind(str(self.directory / "notify.sock"))
            self.address = str(self.directory / "notify.sock")
        self.messages: list[tuple[float, dict[str, str]]] = []
        self.cursor = 0  # wait_for continues after its previous match

    def collect(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (remaining := deadline - time.monotonic()) > 0:
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(4096)
            except TimeoutError:
                return
            fields = dict(line.split("=", 1) for line in data.decode().split("\n") if "=" in line)
            self.messages.append((time.monotonic(), fields))

    def wait_for(self, key: str, value: str, timeout: float) -> dict[str, str]:
        """The next such message after the one the previous wait_for matched (messages come in bursts)."""
        deadline = time.monotonic() + timeout
        seen = self.cursor
        while time.monotonic() < deadline:
            for index in range(seen, len(self.messages)):
                fields = self.messages[index][1]
                if fields.get(key) == value:
                    self.cursor = index + 1
                    return fields
            seen = len(self.messages)
            self.collect(min(0.2, max(0.0, deadline - time.monotonic())))
        raise AssertionError(f"no {key}={value} within {timeout}s; got {[f for _, f in self.messages]}")

    def close(self) -> None:
        self.sock.close()
        shutil.rmtree(self.directory, ignore_errors=True)


@pytest.fixture
def notify_socket() -> Iterator[NotifySocket]:
    listener = NotifySocket()
    try:
        yield listener
    finally:
        listener.close()


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[SimProcess]:
    with SimProcess(scenario(4), tmp_path / "sim", time_scale=2) as process:
        yield process


def start_notifying_daemon(
    monkeypatch: pytest.MonkeyPatch, notify: NotifySocket, sim: SimProcess, workdir: Path, watchdog_usec: int
) -> DaemonProcess:
    """DaemonProcess passes os.environ on: NOTIFY_SOCKET and WATCHDOG_USEC as systemd would set them."""
    monkeypatch.setenv("NOTIFY_SOCKET", notify.address)
    monkeypatch.setenv("WATCHDOG_USEC", str(watchdog_usec))
    monkeypatch.delenv("WATCHDOG_PID", raising=False)
    return DaemonProcess(workdir, sim.bootstrap_servers).start()


def test_ready_then_watchdog_pings_then_stopping(
    monkeypatch: pytest.MonkeyPatch, notify_socket: NotifySocket, sim: SimProcess, tmp_path: Path
) -> None:
    daemon = start_notifying_daemon(monkeypatch, notify_socket, sim, tmp_path / "daemon", 1_000_000)
    try:
        assert daemon.proc is not None
        ready = notify_socket.wait_for("READY", "1", timeout=10)
        assert ready["MAINPID"] == str(daemon.proc.pid)
        assert ready["STATUS"].startswith("serving on 127.0.0.1:")
        # Nothing before READY=1 but status lines: systemd must not see a watchdog ping before readiness.
        first_ready = next(i for i, (_, f) in enumerate(notify_socket.messages) if f.get("READY") == "1")
        assert all("WATCHDOG" not in f for _, f in notify_socket.messages[:first_ready])
        notify_socket.collect(2.5)
        pings = [at for at, fields in notify_socket.messages if fields.get("WATCHDOG") == "1"]
        assert len(pings) >= 3, notify_socket.messages
        gaps = [b - a for a, b in itertools.pairwise(pings)]
        assert max(gaps) < 1.0, f"WatchdogSec=1s needs a ping within a second: gaps {gaps}"
        os.kill(daemon.proc.pid, signal.SIGTERM)
        notify_socket.wait_for("STOPPING", "1", timeout=10)
        assert daemon.wait_exit(timeout=60) == 0
    finally:
        daemon.stop()


def test_no_watchdog_pings_without_watchdog_usec_and_an_abstract_socket_works(
    monkeypatch: pytest.MonkeyPatch, sim: SimProcess, tmp_path: Path
) -> None:
    abstract = NotifySocket(abstract=True)
    monkeypatch.delenv("WATCHDOG_USEC", raising=False)
    monkeypatch.setenv("NOTIFY_SOCKET", abstract.address)
    daemon = DaemonProcess(tmp_path / "daemon", sim.bootstrap_servers).start()
    try:
        assert abstract.address.startswith("@")
        abstract.wait_for("READY", "1", timeout=10)
        abstract.collect(1.5)
        assert not [f for _, f in abstract.messages if "WATCHDOG" in f]
    finally:
        daemon.stop()
        abstract.close()


def test_sighup_reload_is_announced_and_completed(
    monkeypatch: pytest.MonkeyPatch, notify_socket: NotifySocket, sim: SimProcess, tmp_path: Path
) -> None:
    daemon = start_notifying_daemon(monkeypatch, notify_socket, sim, tmp_path / "daemon", 10_000_000)
    try:
        assert daemon.proc is not None
        notify_socket.wait_for("READY", "1", timeout=10)
        os.kill(daemon.proc.pid, signal.SIGHUP)
        notify_socket.wait_for("RELOADING", "1", timeout=10)
        notify_socket.wait_for("READY", "1", timeout=5)
    finally:
        daemon.stop()

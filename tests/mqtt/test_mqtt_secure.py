"""TLS, user names and the documented ACL (docs/mqtt.md) against a real Mosquitto configured for them."""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from reassignd.daemon.mqtt_auth import sign
from tests.daemon.test_e2e import LIMITS, scenario
from tests.mqtt.subscriber import Subscriber
from tests.mqtt.test_mqtt_e2e import SECRET, command, kinds
from tests.services.daemon import DaemonProcess
from tests.services.procs import free_port, port_open, stop_pid, wait_until
from tests.services.simulator import SimProcess

pytestmark = [pytest.mark.mosquitto, pytest.mark.slow]

ACL = """\
user reassignd
topic write test/+/events
topic write test/+/status
topic write test/+/daemons/#
topic read test/+/commands

user reassignd-operator
topic write test/+/commands
topic read test/#
"""


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_certificates(directory: Path) -> None:
    """A throwaway CA and a server certificate for 127.0.0.1."""
    openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=test-ca",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        cwd=directory,
    )
    openssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=127.0.0.1",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        cwd=directory,
    )
    (directory / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl(
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "san.ext",
        "-out",
        "server.pem",
        cwd=directory,
    )


@pytest.fixture
def secure_broker(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    directory = tmp_path / "broker"
    directory.mkdir()
    make_certificates(directory)
    passwords = directory / "passwd"
    for user in ("reassignd", "reassignd-operator"):
        subprocess.run(
            [
                "mosquitto_passwd",
                *(["-c"] if user == "reassignd" else []),
                "-b",
                str(passwords),
                user,
                f"{user}-pw",
            ],
            check=True,
            capture_output=True,
        )
    (directory / "acl").write_text(ACL)
    port = free_port()
    config = directory / "mosquitto.conf"
    lines = [
        f"listener {port} 127.0.0.1",
        f"cafile {directory}/ca.pem",
        f"certfile {directory}/server.pem",
        f"keyfile {directory}/server.key",
        "allow_anonymous false",
        f"password_file {passwords}",
        f"acl_file {directory}/acl",
        "persistence false",
        "log_dest stderr",
        "user root",  # read the files in pytest's private tmp dir (no effect when not started as root)
    ]
    config.write_text("\n".join(lines) + "\n")
    with (directory / "mosquitto.log").open("ab") as log:
        proc = subprocess.Popen(
            ["/usr/sbin/mosquitto", "-c", str(config)], stdout=log, stderr=subprocess.STDOUT
        )
    try:
        wait_until(lambda: port_open(port), 15, "Mosquitto with TLS", proc)
        yield port, directory
    finally:
        stop_pid(proc)


def test_tls_and_password_with_the_documented_acl(secure_broker: tuple[int, Path], tmp_path: Path) -> None:
    port, certs = secure_broker
    cluster = f"c{uuid.uuid4().hex[:8]}"
    base = f"test/{cluster}"
    operator = Subscriber(
        port,
        f"{base}/events",
        f"{base}/daemons/#",
        ca_file=str(certs / "ca.pem"),
        username="reassignd-operator",
        password="reassignd-operator-pw",
    )
    secret_file = tmp_path / "secret"
    secret_file.write_bytes(SECRET)
    secret_file.chmod(0o600)
    password_file = tmp_path / "mqtt-password"
    settings = {
        **LIMITS,
        "cluster.id": cluster,
        "mqtt.enable": True,
        "mqtt.host": "127.0.0.1",
        "mqtt.port": port,
        "mqtt.topic.prefix": "test",
        "mqtt.tls.enable": True,
        "mqtt.tls.ca.file": str(certs / "ca.pem"),
        "mqtt.username": "reassignd",
        "mqtt.password.file": str(password_file),
        "mqtt.command.hmac.secret.file": str(secret_file),
        "ha.node.id": "n1",
    }
    with SimProcess(scenario(5), tmp_path / "sim", time_scale=5) as sim:
        password_file.write_text("wrong-password")
        password_file.chmod(0o600)
        refused = DaemonProcess(tmp_path / "refused", sim.bootstrap_servers, settings).start()
        try:
            time.sleep(2)
            assert refused.proc is not None and refused.proc.poll() is None, "runs on without the broker"
            assert "MQTT connection lost; retrying" in refused.log_tail(20_000)
            assert "wrong-password" not in refused.log_tail(100_000)
        finally:
            refused.stop()
        password_file.write_text("reassignd-pw")
        daemon = DaemonProcess(tmp_path / "d", sim.bootstrap_servers, settings).start()
        try:
            operator.wait(
                # online, and the writer (a daemon takes the cluster's writer group a few seconds after
                # its start; before that it acts on no command, as a standby does not)
                lambda: any(m.json()["online"] and m.json()["leader"] for m in operator.on("/daemons/n1")),
                20,
                "daemon connected over TLS with its password, holding the writer right",
            )
            operator.publish(f"{base}/commands", sign(SECRET, command("pause")))
            operator.wait(lambda: "command.failed" in kinds(operator), 20, "command judged over TLS")
            failed = [m.json() for m in operator.on("/events") if m.json()["event"] == "command.failed"]
            assert failed[0]["code"] == "conflict"  # authenticated and executed: nothing to pause
        finally:
            daemon.stop()
            operator.close()

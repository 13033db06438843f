"""reassignd against a secured real cluster (KRaft, StandardAuthorizer): TLS with a client certificate,
SASL/SCRAM-SHA-512, and a principal that holds only the ACLs docs/deployment.md lists (reassignd/cluster/
acls.py); and every way of getting the security settings wrong, each one line within seconds (issue 27).

One cluster for the module (tests/services/kafka_security.py): its PLAINTEXT listener is the test's own
(probe, producers; User:ANONYMOUS is a super user there), the TLS and SCRAM listeners are reassignd's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from reassignd.cluster.acls import NEEDS, WRITER_GROUP_PREFIX, Acl
from reassignd.cluster.api import BROKER_THROTTLE_KEYS, TOPIC_THROTTLE_KEYS, ConfigOp
from reassignd.cluster.errors import ClusterCallError, error_for_code
from reassignd.cluster.kafka import AdminSettings, KafkaClusterAdmin
from reassignd.cluster.retry import RetryPolicy
from reassignd.localkafka.cluster import REPO, KafkaCluster
from reassignd.localkafka.load import RateProducer, fill
from reassignd.localkafka.probe import ClusterProbe, ReassignmentSampler
from reassignd.model import TopicPartition
from tests.realkafka.conftest import _failed_modules, _finish, create_topic, wait_for
from tests.realkafka.test_drain import (
    LIMITS,
    MIN_INSYNC_ERRORS,
    OPERATOR_BROKER,
    OPERATOR_TOPIC_LIST,
    drain_plan,
    initial_assignment,
    plan_targets,
)
from tests.services.daemon import DaemonProcess
from tests.services.kafka_security import CLUSTER_RESOURCE, ClusterSecurity, grant, kafka_acls, listed, revoke
from tests.services.kafka_security import Acl as Grant

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

DAEMON_USER, DAEMON_PASSWORD = "reassignd", "daemon-Secret-4711"
ACL_USER, ACL_PASSWORD = "acl-probe", "probe-Secret-0815"
WRONG_PASSWORD = "wrong-Pa55word-xyz"
PARTITIONS = 12
PARTITION_BYTES = 1024 * 1024  # the point is the security path: 12 MiB, each partition on three brokers
DEADLINE = 15.0  # seconds from the command (or the daemon's start) to the one line naming the cause


@dataclass
class Secured:
    cluster: KafkaCluster
    security: ClusterSecurity

    @property
    def plaintext(self) -> str:
        return self.cluster.bootstrap_servers

    def tls(self, **overrides: str) -> dict[str, str]:
        return {"bootstrap.servers": self.cluster.bootstrap("TLS"), **self.security.tls_client(), **overrides}

    def scram(self, user: str = DAEMON_USER, password: str | None = None) -> dict[str, str]:
        client = self.security.scram_client(user, password)
        return {"bootstrap.servers": self.cluster.bootstrap("SCRAM"), **client}


def documented_acls(principal: str) -> list[Grant]:
    """Every ACL of docs/deployment.md's table for `principal`, topics by the literal wildcard `*`."""
    grants = []
    for need in NEEDS:
        name, pattern = _granted_on(need.acl.resource)
        grants.append(Grant(principal, need.acl.resource, name, need.acl.operation, pattern))
    return grants


def _granted_on(resource_type: str) -> tuple[str, str]:
    """The resource name and pattern the docs grant a type's ACLs on (topics: the literal wildcard `*`;
    the writer group: its prefix)."""
    if resource_type == "GROUP":
        return WRITER_GROUP_PREFIX, "PREFIXED"
    return (CLUSTER_RESOURCE if resource_type == "CLUSTER" else "*"), "LITERAL"


def documented_commands() -> list[str]:
    """The `kafka-acls.sh` commands of docs/deployment.md's ACL section, one per line."""
    text = (REPO / "docs" / "deployment.md").read_text()
    section = text[text.index("### ACLs") :]
    block = section[section.index("```sh\n") + len("```sh\n") :]
    block = block[: block.index("```")].replace("\\\n", " ")
    return [line.strip() for line in block.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def secured(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    workdir = tmp_path_factory.mktemp("secured")
    security = ClusterSecurity.create(
        workdir / "certs", users={DAEMON_USER: DAEMON_PASSWORD, ACL_USER: ACL_PASSWORD}
    )
    cluster = KafkaCluster(workdir / "kafka", security=security)
    with cluster:
        try:
            # the docs' own commands, run with Kafka's AclCommand, for both principals of the drains
            tls = security.certificates.client_principal
            for command in documented_commands():
                both = command.replace(f"User:{DAEMON_USER}", f"User:{DAEMON_USER} --allow-principal {tls}")
                kafka_acls(cluster.bootstrap_servers, both)
            granted = {*documented_acls(f"User:{DAEMON_USER}"), *documented_acls(tls)}
            assert listed(cluster.bootstrap_servers) == granted, "the docs' commands grant the table's ACLs"
            yield Secured(cluster, security)
        finally:
            _finish(cluster, request.node.nodeid in _failed_modules, request.node.nodeid)


def daemon_settings(client: dict[str, str], workdir: Path) -> dict[str, Any]:
    """reassignd's cluster.* keys for librdkafka-style client settings; a password goes into a 0600 file."""
    settings: dict[str, Any] = {}
    for key, value in client.items():
        if key == "bootstrap.servers":
            continue
        if key == "sasl.password":
            secret = workdir / "sasl-password"
            workdir.mkdir(parents=True, exist_ok=True)
            secret.write_text(value)
            secret.chmod(0o600)
            settings["cluster.sasl.password.file"] = str(secret)
        else:
            settings[f"cluster.{key}"] = value
    return settings


# -- the drain, through each secured listener -----------------------------------------------------------


def drain_through(secured: Secured, client: dict[str, str], topic: str, tmp_path: Path) -> DaemonProcess:
    """test_drain's drain of broker 4, with the daemon on `client`'s listener and principal; judged from the
    brokers' side as there. Returns the stopped daemon for its log."""
    probe = ClusterProbe(secured.plaintext)
    try:
        assignment = initial_assignment()
        create_topic(probe, topic, assignment, {"min.insync.replicas": "2"})
        fill(secured.plaintext, topic, range(PARTITIONS), PARTITION_BYTES)
        broker, key, value = OPERATOR_BROKER
        probe.set_broker_config(broker, key, value)
        probe.set_topic_config(topic, *OPERATOR_TOPIC_LIST)
        throttles_before = probe.throttle_configs([topic])

        plan = drain_plan(topic, assignment, broker=4)
        settings = {**LIMITS, **daemon_settings(client, tmp_path / "daemon")}
        daemon = DaemonProcess(tmp_path / "daemon", client["bootstrap.servers"], settings).start()
        try:
            with (
                RateProducer(secured.plaintext, topic, range(PARTITIONS), 256 * 1024) as producer,
                ReassignmentSampler(probe) as sampler,
            ):
                plan_id = daemon.submit(plan)
                status = daemon.wait_for_state(plan_id, {"completed", "cancelled", "failed"}, timeout=180)
            assert status["state"] == "completed", status
        finally:
            daemon.stop()

        replicas = probe.replicas(topic)
        assert {p: replicas[p] for p in plan_targets(plan)} == plan_targets(plan)
        assert all(4 not in r for r in replicas.values()), replicas
        assert probe.leaders(topic) == {p: r[0] for p, r in replicas.items()}, (
            "leaders on the preferred replica"
        )
        assert producer.report.acked_records > 0
        assert not MIN_INSYNC_ERRORS & set(producer.report.errors), producer.report.errors
        assert sampler.samples >= 2 and not sampler.errors, (sampler.samples, sampler.errors)
        assert max(sampler.peak_incoming.values(), default=0) <= 2, sampler.peak_incoming
        assert max(sampler.peak_outgoing.values(), default=0) <= 2, sampler.peak_outgoing
        assert probe.throttle_configs([topic]) == throttles_before
        probe.set_broker_config(broker, key, None)  # the next drain starts from no operator throttle
        return daemon
    finally:
        probe.close()


def assert_clean_log(daemon: DaemonProcess, *secrets: str) -> None:
    """No error line, no call refused for want of an ACL (a refused throttle write is only a warning, and
    the steps it throttles wait: see test_a_step_waits_while_its_throttle_cannot_be_written), nothing but
    the daemon's own JSON lines (no raw librdkafka `%3|` lines), no secret."""
    assert daemon.log_records("error") == []
    text = daemon.log_path.read_text()
    assert "AUTHORIZATION_FAILED" not in text, [r for r in daemon.log_records("warning") if "AUTH" in str(r)][
        :3
    ]
    raw = [line for line in text.splitlines() if not line.startswith("{")]
    assert raw == [], raw[:10]
    for secret in secrets:
        assert secret not in text


def test_drain_through_tls_with_a_client_certificate_and_only_the_documented_acls(
    secured: Secured, tmp_path: Path
) -> None:
    daemon = drain_through(secured, secured.tls(), "tls-orders", tmp_path)
    assert_clean_log(daemon)


def test_drain_through_scram_with_only_the_documented_acls(secured: Secured, tmp_path: Path) -> None:
    daemon = drain_through(secured, secured.scram(), "scram-orders", tmp_path)
    assert_clean_log(daemon, DAEMON_PASSWORD)


def test_a_step_waits_while_its_throttle_cannot_be_written(secured: Secured, tmp_path: Path) -> None:
    """docs/engine.md: the throttles for everything starting are written before any step starts. Without
    ALTER_CONFIGS on the topic the daemon cannot add the moving replicas to its throttled-replica lists;
    its steps must wait rather than copy unthrottled."""
    topic = "unthrottled-orders"
    probe = ClusterProbe(secured.plaintext)
    missing = [Grant(f"User:{DAEMON_USER}", "TOPIC", "*", "ALTER_CONFIGS")]
    daemon: DaemonProcess | None = None
    try:
        assignment = initial_assignment()
        create_topic(probe, topic, assignment)
        fill(secured.plaintext, topic, range(PARTITIONS), 64 * 1024)
        revoke(secured.plaintext, missing)
        settings = {**LIMITS, **daemon_settings(secured.scram(), tmp_path / "daemon")}
        daemon = DaemonProcess(tmp_path / "daemon", secured.cluster.bootstrap("SCRAM"), settings).start()
        with ReassignmentSampler(probe, interval=0.5) as sampler:
            plan_id = daemon.submit(drain_plan(topic, assignment, broker=4))
            time.sleep(8)
        status = daemon.status(plan_id)
        assert sampler.peak_partitions == 0, f"steps started unthrottled: {status['progress']}"
        held = [w for w in status["waiting"] if w["reason"] == "throttle"]
        assert held and "TOPIC_AUTHORIZATION_FAILED" in held[0]["detail"], status["waiting"][:3]
    finally:
        if daemon is not None:
            daemon.stop()
        grant(secured.plaintext, missing)
        probe.close()


# -- each documented ACL is needed ----------------------------------------------------------------------

Probe = Callable[[KafkaClusterAdmin], Awaitable[str | None]]


async def _raised(call: Awaitable[Any]) -> str | None:
    try:
        await call
    except ClusterCallError as exc:
        return exc.error.name
    return None


def _probes(topic: str) -> dict[tuple[str, str], Probe]:
    """(api, resource type) -> a call through reassignd's adapter: the Kafka error name it got, or None."""
    tp = TopicPartition(topic, 0)

    async def log_dirs(admin: KafkaClusterAdmin) -> str | None:
        found = await admin.describe_log_dirs([1], [tp])
        return found.errors[1].name if 1 in found.errors else None

    async def broker_configs(admin: KafkaClusterAdmin) -> str | None:
        error = (await admin.describe_broker_configs([1], BROKER_THROTTLE_KEYS))[1].error
        return None if error is None else error.name

    async def topic_configs(admin: KafkaClusterAdmin) -> str | None:
        error = (await admin.describe_topic_configs([topic], TOPIC_THROTTLE_KEYS))[topic].error
        return None if error is None else error.name

    async def metadata(admin: KafkaClusterAdmin) -> str | None:
        _, errors = await admin.topic_partitions([topic])
        return errors[0].error.name if errors else None

    async def dir_move(admin: KafkaClusterAdmin) -> str | None:
        found = await admin.describe_log_dirs([1], [tp])
        here = found.replicas[(tp, 1)].log_dir if (tp, 1) in found.replicas else ""
        there = next((d for d in found.dirs.get(1, ()) if d != here), "/nowhere")
        error = (await admin.alter_replica_log_dirs({(tp, 1): there}))[(tp, 1)]
        return None if error is None else error.name

    async def coordinator(admin: KafkaClusterAdmin) -> str | None:
        transport = admin.group_transport()
        try:
            code, _ = await asyncio.to_thread(transport.find_coordinator, f"{WRITER_GROUP_PREFIX}probe", 5.0)
        finally:
            transport.close()
        return None if code == 0 else error_for_code(code).name

    async def elect(admin: KafkaClusterAdmin) -> str | None:
        errors = await admin.elect_preferred_leaders([tp])
        return next((e.name for e in errors.values() if e is not None), None)

    async def reassign(admin: KafkaClusterAdmin) -> str | None:
        errors = await admin.alter_partition_reassignments({tp: [1, 2, 3]})  # its own list: a no-op move
        return next((e.name for e in errors.values() if e is not None), None)

    rate = ConfigOp.set("follower.replication.throttled.rate", "99000000")
    throttled = ConfigOp.set("follower.replication.throttled.replicas", "0:2")
    return {
        ("list_partition_reassignments", "CLUSTER"): lambda a: _raised(a.list_partition_reassignments(None)),
        ("describe_log_dirs", "CLUSTER"): log_dirs,
        ("describe_configs", "CLUSTER"): broker_configs,
        ("incremental_alter_configs", "CLUSTER"): lambda a: _raised(a.alter_broker_configs(1, [rate])),
        ("alter_partition_reassignments", "CLUSTER"): lambda a: _raised(reassign(a)),
        ("elect_leaders", "CLUSTER"): lambda a: _raised(elect(a)),
        ("alter_replica_log_dirs", "CLUSTER"): dir_move,
        ("list_topics", "TOPIC"): metadata,
        ("describe_configs", "TOPIC"): topic_configs,
        ("incremental_alter_configs", "TOPIC"): lambda a: _raised(a.alter_topic_configs(topic, [throttled])),
        ("find_coordinator", "GROUP"): coordinator,
    }


def test_each_documented_acl_is_needed_by_the_calls_it_names(secured: Secured) -> None:
    """With every ACL of the table each call succeeds; without one (and the ACLs Kafka implies it from),
    each call the table names for it is refused as not authorized."""
    topic = "acl-probe"
    probe = ClusterProbe(secured.plaintext)
    try:
        create_topic(probe, topic, {0: [1, 2, 3]})
    finally:
        probe.close()
    principal = f"User:{ACL_USER}"
    every = documented_acls(principal)
    probes = _probes(topic)
    assert {(api, n.acl.resource) for n in NEEDS for api in n.apis} == set(probes), "a probe per (call, ACL)"

    def grants(acls: tuple[Acl, ...]) -> list[Grant]:
        return [g for g in every if Acl(g.operation, g.resource_type) in acls]

    async def outcomes(keys: list[tuple[str, str]]) -> dict[tuple[str, str], str | None]:
        settings = AdminSettings(secured.scram(ACL_USER), request_timeout=5, retry=RetryPolicy(attempts=1))
        admin = KafkaClusterAdmin(settings)
        try:
            return {key: await probes[key](admin) for key in keys}
        finally:
            await admin.close()

    def settle(keys: list[tuple[str, str]], refused: bool) -> dict[tuple[str, str], str | None]:
        """ACL changes reach the brokers through the metadata log, a moment later: ask until they show."""
        seen: dict[tuple[str, str], str | None] = {}

        def shown() -> bool:
            seen.update(asyncio.run(outcomes(keys)))
            return all((seen[k] is not None) == refused for k in keys)

        with contextlib.suppress(TimeoutError):  # the caller's assertion shows what was seen
            wait_for(shown, 20, f"ACL change {'refusing' if refused else 'allowing'} {keys}", interval=0.5)
        return seen

    grant(secured.plaintext, every)
    try:
        allowed = settle(list(probes), refused=False)
        assert allowed == dict.fromkeys(probes), allowed
        for need in NEEDS:
            removed = grants((need.acl, *need.acl.implied_by))
            keys = [(api, need.acl.resource) for api in need.apis]
            revoke(secured.plaintext, removed)
            try:
                seen = settle(keys, refused=True)
            finally:
                grant(secured.plaintext, removed)
            expected = f"{need.acl.resource}_AUTHORIZATION_FAILED"
            assert seen == dict.fromkeys(keys, expected), f"without {need.acl}: {seen}"
            settle(keys, refused=False)
    finally:
        revoke(secured.plaintext, every)
        probe = ClusterProbe(secured.plaintext)
        try:
            probe.set_broker_config(1, "follower.replication.throttled.rate", None)
        finally:
            probe.close()


# -- wrong settings: one line, within seconds, no secret -----------------------------------------------


def wrong_settings(secured: Secured, case: str) -> dict[str, str]:
    certs = secured.security.certificates
    return {
        "wrong password": secured.scram(password=WRONG_PASSWORD),
        "untrusted CA": secured.tls(**{"ssl.ca.location": str(certs.other_ca)}),
        "TLS to the PLAINTEXT listener": {
            **secured.tls(),
            "bootstrap.servers": secured.cluster.bootstrap("PLAINTEXT"),
        },
        "no client certificate": {
            "bootstrap.servers": secured.cluster.bootstrap("TLS"),
            "security.protocol": "SSL",
            "ssl.ca.location": str(certs.ca),
        },
    }[case]


EXPECTED = {
    "wrong password": ("SASL authentication failed", "cluster.sasl.username / cluster.sasl.password"),
    "untrusted CA": ("is not trusted", "cluster.ssl.ca.location"),
    "TLS to the PLAINTEXT listener": ("TLS handshake refused", "is the listener PLAINTEXT?"),
    "no client certificate": ("refused the client certificate", "cluster.ssl.certificate.location"),
}


def write_config(client: dict[str, str], folder: Path) -> Path:
    settings = {"cluster.bootstrap.servers": client["bootstrap.servers"], **daemon_settings(client, folder)}
    path = folder / "reassignd.toml"
    path.write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in settings.items()))
    return path


@pytest.mark.parametrize("case", list(EXPECTED))
def test_a_wrong_security_setting_is_one_line_within_seconds_from_snapshot(
    secured: Secured, case: str, tmp_path: Path
) -> None:
    config = write_config(wrong_settings(secured, case), tmp_path)
    started = time.monotonic()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "reassignd",
            "snapshot",
            "--config",
            str(config),
            "--out",
            str(tmp_path / "s"),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    took = time.monotonic() - started
    assert result.returncode == 3, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("reassignd: cannot read the cluster: "), result.stderr[
        :3000
    ]
    for text in EXPECTED[case]:
        assert text in lines[0], lines[0]
    assert took < DEADLINE, (took, lines[0])


def test_no_secret_in_the_debug_output_of_a_wrong_password(secured: Secured, tmp_path: Path) -> None:
    config = write_config(wrong_settings(secured, "wrong password"), tmp_path)
    command = ["--log-level", "debug", "snapshot", "--config", str(config), "--out", str(tmp_path / "s")]
    result = subprocess.run(
        [sys.executable, "-m", "reassignd", *command],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 3, result
    assert "librdkafka" in result.stderr, "debug shows librdkafka's own lines, through the structured log"
    assert WRONG_PASSWORD not in result.stderr + result.stdout


@pytest.mark.parametrize("case", ["wrong password", "untrusted CA", "TLS to the PLAINTEXT listener"])
def test_a_daemon_with_a_wrong_security_setting_says_why_within_seconds(
    secured: Secured, case: str, tmp_path: Path
) -> None:
    client = wrong_settings(secured, case)
    settings = {**daemon_settings(client, tmp_path / "daemon"), "log.level": "debug"}
    started = time.monotonic()
    daemon = DaemonProcess(tmp_path / "daemon", client["bootstrap.servers"], settings).start()
    try:
        ready: dict[str, Any] = {}
        while time.monotonic() - started < DEADLINE + 30:
            code, ready = daemon.request("GET", "/readyz")
            if code == 503 and ready.get("reason") == "cluster unreachable":
                break
            time.sleep(0.2)
        took = time.monotonic() - started
        message = ready["error"]["message"]
        for text in EXPECTED[case]:
            assert text in message, ready
        assert took < DEADLINE, (took, message)
        plan = drain_plan("any", initial_assignment(), broker=4)
        code, refused = daemon.request("POST", "/v1/plans", plan)
        assert code == 503 and EXPECTED[case][0] in refused["error"]["message"], refused
    finally:
        daemon.stop()
    errors = daemon.log_records("error")
    assert [e["event"] for e in errors] == ["the cluster cannot be reached"], errors
    assert EXPECTED[case][0] in errors[0]["error"]
    text = daemon.log_path.read_text()
    assert [line for line in text.splitlines() if not line.startswith("{")] == []
    assert WRONG_PASSWORD not in text and DAEMON_PASSWORD not in text

"""Real Apache Kafka on loopback, from the jars `make setup` fetched into .cache/kafka/ (scripts/kafka/).

Two shapes, both as plain JVM processes we start and stop by PID:

* KRaft (Kafka 4.x): one controller (node id 1000) and N brokers (ids 1..N);
* ZooKeeper mode (Kafka 3.9): N brokers on a ZooKeeper server the caller started, under a chroot of their own.

Each broker has racks as `/dc/rack` paths and two log dirs (JBOD). Nodes start in parallel; `start()`
returns once every broker is registered and unfenced (Metadata lists it). Any broker can be stopped
(SIGTERM: Kafka's controlled shutdown), killed (SIGKILL) and started again on the same ports and dirs.
`close()` kills every process we started by its PID. Docs: docs/real-kafka.md.

    with KafkaCluster(tmp_path / "kafka") as cluster:
        cluster.bootstrap_servers  # "127.0.0.1:P1,127.0.0.1:P2,..."
        cluster.kill_broker(3); cluster.start_broker(3); cluster.wait_registered()
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Literal, Protocol

from reassignd.children import free_port

REPO = Path(__file__).resolve().parents[2]
# What `make setup` fetched (scripts/fetch-kafka.sh); REASSIGND_KAFKA_JARS names another copy of that folder.
JARS = Path(os.environ.get("REASSIGND_KAFKA_JARS") or REPO / ".cache" / "kafka")
CONTROLLER_ID = 1000
Mode = Literal["kraft", "zookeeper"]

# Two data centres of two racks each, as KIP-879 paths; broker i takes RACKS[(i - 1) % 4].
RACKS = ("/dc1/rack1", "/dc2/rack1", "/dc1/rack2", "/dc2/rack2")

# Small and fast on two shared cores, and closer to production where it matters to reassignments: a lagging
# follower leaves the ISR after 10 s (Kafka's default is 30 s), a killed broker is fenced after 6 s.
BROKER_DEFAULTS: dict[str, str] = {
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "4",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "4",
    "group.initial.rebalance.delay.ms": "0",
    "auto.create.topics.enable": "false",
    "auto.leader.rebalance.enable": "false",
    "replica.lag.time.max.ms": "10000",
    "log.segment.bytes": "1048576",
    "log.cleaner.dedupe.buffer.size": "2097152",
    "log.cleaner.threads": "1",
    "num.network.threads": "2",
    "num.io.threads": "2",
    "num.recovery.threads.per.data.dir": "1",
    "background.threads": "2",
    "num.replica.alter.log.dirs.threads": "1",
    "log.flush.offset.checkpoint.interval.ms": "1000",
}
CONTROLLER_DEFAULTS: dict[str, str] = {
    "num.partitions": "1",
    "default.replication.factor": "1",
    "auto.leader.rebalance.enable": "false",
    "broker.session.timeout.ms": "6000",
    "broker.heartbeat.interval.ms": "1000",
}
# C1 only and the serial collector: start-up CPU is what a test waits for on two cores. Heap from measurement
# (docs/real-kafka.md): a broker of these tests peaks well under it.
JVM_OPTIONS = ("-Xms64m", "-Xmx384m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-XX:-UsePerfData")
LOG4J2 = """status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = ${sys:kafka.logs.dir}/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.kafka.name = org.apache.kafka
logger.kafka.level = INFO
"""
LOG4J1 = """log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=${kafka.logs.dir}/server.log
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.zookeeper=WARN
"""


def jars(dist: str) -> Path:
    """The folder of one fetched distribution (scripts/kafka/DIST.pom.xml); a clear error when missing."""
    folder = JARS / dist
    if not (folder / ".pom-sha256").is_file():
        raise RuntimeError(f"Kafka jars not fetched: {folder} is missing; run `make setup`")
    return folder


def kafka_version(dist: str) -> str:
    """The Kafka release of a fetched distribution, read off its kafka_2.13 (or kafka-tools) jar."""
    for prefix in ("kafka_2.13-", "kafka-tools-"):
        for jar in jars(dist).glob(f"{prefix}[0-9]*.jar"):
            return jar.name.removeprefix(prefix).removesuffix(".jar")
    raise RuntimeError(f"no kafka_2.13 jar in {jars(dist)}")


def _die_with_parent() -> None:
    """Runs in the child before exec: the kernel kills it when the process that started it dies, so a test
    run killed with -9 leaves no broker behind."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def class_archive(dist: str) -> Path:
    """The JVM class-data archive of a distribution (`make setup` writes it): a node started with it loads
    Kafka's classes mapped from one file instead of from 90 jars, and needs about half the start-up CPU."""
    return JARS / f"{dist}.jsa"


def _archive_options(dist: str) -> list[str]:
    archive = class_archive(dist)
    return (
        [f"-XX:SharedArchiveFile={archive}", "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]
        if archive.exists()
        else []
    )


def java_command(dist: str, main: str, *args: str, logs_dir: Path, log_config: Path) -> list[str]:
    log_flag = "-Dlog4j2.configurationFile=" if dist != "zookeeper" else "-Dlog4j.configuration=file:"
    return [
        "java",
        *JVM_OPTIONS,
        *_archive_options(dist),
        f"-Dkafka.logs.dir={logs_dir}",
        f"{log_flag}{log_config}",
        "-cp",
        f"{jars(dist)}/*",
        main,
        *args,
    ]


def _properties(values: Mapping[str, str]) -> str:
    return "".join(f"{key}={value}\n" for key, value in values.items())


@dataclass
class KafkaNode:
    """One JVM: a KRaft controller, a KRaft broker or a ZooKeeper-mode broker, with its dirs and ports."""

    node_id: int
    role: Literal["broker", "controller"]
    dist: str
    workdir: Path
    ports: dict[str, int]
    log_dirs: tuple[Path, ...]
    rack: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def config_path(self) -> Path:
        return self.workdir / "node.properties"

    @property
    def logs_dir(self) -> Path:
        return self.workdir / "logs"

    @property
    def server_log(self) -> Path:
        return self.logs_dir / "server.log"

    @property
    def log_config(self) -> Path:
        return self.workdir / ("log4j2.properties" if self.dist != "zookeeper" else "log4j.properties")

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def write_config(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.logs_dir.mkdir(exist_ok=True)
        self.config_path.write_text(_properties(self.properties))
        self.log_config.write_text(LOG4J1 if self.dist == "zookeeper" else LOG4J2)

    def command(self, main: str, *args: str) -> list[str]:
        return java_command(self.dist, main, *args, logs_dir=self.logs_dir, log_config=self.log_config)

    def format(self, cluster_id: str, extra: Iterable[str] = ()) -> None:
        """KRaft's `kafka-storage.sh format`: every node, brokers too, with the same cluster id."""
        args = ["format", "-t", cluster_id, "-c", str(self.config_path), *extra]
        done = subprocess.run(
            self.command("kafka.tools.StorageTool", *args), capture_output=True, timeout=120, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"formatting node {self.node_id} failed: {done.stdout!r} {done.stderr!r}")

    def write_meta_properties(self, cluster_id: str) -> None:
        """What `kafka-storage.sh format` writes into each log dir of a KRaft broker (Kafka's MetaProperties,
        version 1): the controller's bootstrap records are the controller's own, so a broker needs no more."""
        for log_dir in self.log_dirs:
            log_dir.mkdir(parents=True, exist_ok=True)
            (log_dir / "meta.properties").write_text(
                _properties(
                    {
                        "version": "1",
                        "cluster.id": cluster_id,
                        "node.id": str(self.node_id),
                        "directory.id": _random_cluster_id(),
                    }
                )
            )

    def start(self) -> None:
        """Starts the JVM; readiness is the cluster's business (a broker is ready when registered)."""
        if self.running:
            return
        out = (self.workdir / "node.out").open("ab")
        try:
            self.proc = subprocess.Popen(
                self.command("kafka.Kafka", str(self.config_path)),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,  # noqa: PLW1509 - one libc call, no Python state touched
            )
        finally:
            out.close()

    def signal(self, signum: int, timeout: float) -> None:
        """Sends `signum` to exactly our process and waits for it to end; SIGKILL after `timeout`."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signum)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)
        self.proc = None

    def server_started(self) -> bool:
        """The line Kafka logs once its listeners accept requests (KRaft and ZooKeeper mode)."""
        try:
            text = self.server_log.read_text(errors="replace")
        except FileNotFoundError:
            return False
        return "Kafka Server started" in text or "] started (kafka.server.KafkaServer)" in text


class ClusterSecurity(Protocol):
    """Secured listeners for a KRaft cluster (tests/services/kafka_security.py makes TLS, SCRAM and ACLs)."""

    @property
    def listeners(self) -> Mapping[str, str]: ...

    def broker_properties(self) -> Mapping[str, str]: ...

    def controller_properties(self) -> Mapping[str, str]: ...

    def format_args(self) -> Iterable[str]: ...


class KafkaCluster:
    """A real cluster on loopback. KRaft by default; `mode="zookeeper"` needs `zookeeper_hosts`.

    `listeners` maps extra listener names to their security protocol (e.g. {"SSL": "SSL"}); PLAINTEXT is
    always there and carries inter-broker traffic. `broker_properties` and `controller_properties` are
    added to (or override) the defaults above; a broker-specific override goes in `per_broker`.
    `security` (KRaft only; tests/services/kafka_security.py) adds a TLS listener, a SASL/SCRAM listener
    with its users, and the StandardAuthorizer; the options given here still override its properties.
    """

    def __init__(
        self,
        workdir: Path,
        brokers: int = 4,
        *,
        mode: Mode = "kraft",
        zookeeper_hosts: str | None = None,
        racks: Mapping[int, str] | None = None,
        log_dirs_per_broker: int = 2,
        listeners: Mapping[str, str] | None = None,
        broker_properties: Mapping[str, str] | None = None,
        controller_properties: Mapping[str, str] | None = None,
        per_broker: Mapping[int, Mapping[str, str]] | None = None,
        format_args: Iterable[str] = (),
        security: ClusterSecurity | None = None,
    ) -> None:
        if mode == "zookeeper" and not zookeeper_hosts:
            raise ValueError("mode='zookeeper' needs zookeeper_hosts")
        if security is not None:
            if mode != "kraft":
                raise ValueError("security= is for KRaft clusters (SCRAM users are made at format time)")
            listeners = {**security.listeners, **(listeners or {})}
            broker_properties = {**security.broker_properties(), **(broker_properties or {})}
            controller_properties = {**security.controller_properties(), **(controller_properties or {})}
            format_args = [*security.format_args(), *format_args]
        self.security = security
        self.workdir = Path(workdir)
        self.mode: Mode = mode
        self.dist = "kraft" if mode == "kraft" else "zookeeper"
        self.cluster_id = _random_cluster_id()
        self.zookeeper_connect = f"{zookeeper_hosts}/kafka-{self.cluster_id}" if zookeeper_hosts else None
        self.listeners = {"PLAINTEXT": "PLAINTEXT", **(listeners or {})}
        self.format_args = tuple(format_args)
        self.controller: KafkaNode | None = None
        if mode == "kraft":
            self.controller = self._controller_node(controller_properties or {})
        self.brokers: dict[int, KafkaNode] = {}
        for broker_id in range(1, brokers + 1):
            rack = (racks or {}).get(broker_id, RACKS[(broker_id - 1) % len(RACKS)])
            extra = {**(broker_properties or {}), **(per_broker or {}).get(broker_id, {})}
            self.brokers[broker_id] = self._broker_node(broker_id, rack, log_dirs_per_broker, extra)

    # -- configuration -------------------------------------------------------------------------------------

    def _controller_node(self, extra: Mapping[str, str]) -> KafkaNode:
        workdir = self.workdir / f"controller-{CONTROLLER_ID}"
        port = free_port()
        node = KafkaNode(
            CONTROLLER_ID, "controller", self.dist, workdir, {"CONTROLLER": port}, (workdir / "metadata",)
        )
        node.properties = {
            "process.roles": "controller",
            "node.id": str(CONTROLLER_ID),
            "listeners": f"CONTROLLER://127.0.0.1:{port}",
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.voters": f"{CONTROLLER_ID}@127.0.0.1:{port}",
            "log.dirs": str(workdir / "metadata"),
            **CONTROLLER_DEFAULTS,
            **extra,
        }
        return node

    def _broker_node(self, broker_id: int, rack: str, dirs: int, extra: Mapping[str, str]) -> KafkaNode:
        workdir = self.workdir / f"broker-{broker_id}"
        ports = {name: free_port() for name in self.listeners}
        log_dirs = tuple(workdir / f"data-{i}" for i in range(dirs))
        node = KafkaNode(broker_id, "broker", self.dist, workdir, ports, log_dirs, rack)
        protocol_map = {**self.listeners}
        listeners = ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items())
        node.properties = {
            "broker.id" if self.mode == "zookeeper" else "node.id": str(broker_id),
            "listeners": listeners,
            "advertised.listeners": listeners,
            "inter.broker.listener.name": "PLAINTEXT",
            "broker.rack": rack,
            "log.dirs": ",".join(str(d) for d in log_dirs),
            **BROKER_DEFAULTS,
        }
        if self.mode == "kraft":
            assert self.controller is not None
            protocol_map["CONTROLLER"] = "PLAINTEXT"
            node.properties |= {
                "process.roles": "broker",
                "controller.listener.names": "CONTROLLER",
                "controller.quorum.voters": self.controller.properties["controller.quorum.voters"],
            }
        else:
            assert self.zookeeper_connect is not None
            node.properties |= {
                "zookeeper.connect": self.zookeeper_connect,
                "zookeeper.session.timeout.ms": "6000",
                "controlled.shutdown.enable": "true",
            }
        node.properties["listener.security.protocol.map"] = ",".join(
            f"{k}:{v}" for k, v in protocol_map.items()
        )
        node.properties |= extra
        return node

    # -- addresses -----------------------------------------------------------------------------------------

    @property
    def nodes(self) -> list[KafkaNode]:
        return ([self.controller] if self.controller else []) + list(self.brokers.values())

    def bootstrap(self, listener: str = "PLAINTEXT", brokers: Iterable[int] | None = None) -> str:
        ids = sorted(self.brokers) if brokers is None else sorted(brokers)
        return ",".join(f"127.0.0.1:{self.brokers[b].ports[listener]}" for b in ids)

    @property
    def bootstrap_servers(self) -> str:
        return self.bootstrap()

    @property
    def version(self) -> str:
        return kafka_version(self.dist)

    # -- lifecycle -----------------------------------------------------------------------------------------

    def start(self, timeout: float = 90.0) -> KafkaCluster:
        """Starts every node; returns once every broker is registered. Brokers start while the controller is
        formatted (they wait for it), and only the controller runs Kafka's format tool: a broker's log dirs
        get the meta.properties that tool would write (see write_meta_properties)."""
        started = time.monotonic()
        for node in self.nodes:
            node.write_config()
        for node in self.brokers.values():
            if self.mode == "kraft":
                node.write_meta_properties(self.cluster_id)
            node.start()  # from this thread: the children die with the process that started them
        if self.controller is not None:
            self.controller.format(self.cluster_id, self.format_args)
            self.controller.start()
        self.wait_registered(timeout=timeout)
        self.start_seconds = time.monotonic() - started
        return self

    def wait_registered(self, brokers: Iterable[int] | None = None, timeout: float = 60.0) -> None:
        """Until Metadata lists every running broker (registered and, in KRaft, unfenced)."""
        want = set(self.brokers if brokers is None else brokers)
        deadline = time.monotonic() + timeout
        seen: set[int] = set()
        while time.monotonic() < deadline:
            self._raise_if_exited()
            if all(self.brokers[b].server_started() for b in want):
                seen = self.registered_brokers()
                if want <= seen:
                    return
            time.sleep(0.2)
        raise TimeoutError(
            f"brokers {sorted(want - seen)} not registered after {timeout}s; {self.log_hint()}"
        )

    def registered_brokers(self) -> set[int]:
        """The broker ids a Metadata request to any running broker lists now."""
        from confluent_kafka.admin import AdminClient

        running = [b for b, node in self.brokers.items() if node.running]
        if not running:
            return set()
        admin = AdminClient(
            {"bootstrap.servers": self.bootstrap(brokers=running), "log_level": 0, "socket.timeout.ms": 2000}
        )
        try:
            return set(admin.list_topics(timeout=3).brokers)
        except Exception:
            return set()

    def _raise_if_exited(self) -> None:
        for node in self.nodes:
            if node.proc is not None and node.proc.poll() is not None:
                code = node.proc.returncode
                raise RuntimeError(f"Kafka node {node.node_id} exited with {code}; {self.log_hint()}")

    def log_hint(self) -> str:
        return f"node logs under {self.workdir}/*/logs/server.log"

    def stop_broker(self, broker_id: int, timeout: float = 60.0) -> None:
        """SIGTERM: Kafka's controlled shutdown (leaders moved away first), waited for."""
        self.brokers[broker_id].signal(signal.SIGTERM, timeout)

    def kill_broker(self, broker_id: int) -> None:
        """SIGKILL: a crash, as an operator's broker sees one."""
        self.brokers[broker_id].signal(signal.SIGKILL, 30.0)

    def start_broker(self, broker_id: int, wait: bool = True, timeout: float = 90.0) -> None:
        node = self.brokers[broker_id]
        with contextlib.suppress(FileNotFoundError):  # "started" must be this start's line
            node.server_log.rename(node.server_log.with_suffix(f".{time.monotonic_ns()}.log"))
        node.start()
        if wait:
            self.wait_registered([broker_id], timeout=timeout)

    def close(self) -> None:
        """Kills every node by its PID: brokers first, the controller last. Data and logs stay in workdir."""
        for node in reversed(self.nodes):
            node.signal(signal.SIGKILL, 30.0)

    def keep_logs(self, destination: Path) -> Path:
        """Copies every node's logs (not its data) to `destination`, for a failed test to be read later."""
        for node in self.nodes:
            target = destination / node.workdir.name
            target.mkdir(parents=True, exist_ok=True)
            for log in [*node.logs_dir.glob("*.log"), node.workdir / "node.out", node.config_path]:
                if log.exists():
                    shutil.copy2(log, target / log.name)
        return destination

    def remove_data(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> KafkaCluster:
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _random_cluster_id() -> str:
    """What `kafka-storage.sh random-uuid` prints: a random UUID in URL-safe base64, without padding."""
    import base64

    while True:  # Kafka's own generator skips ids that start with "-" (they read as a command-line flag)
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def build_class_archive(dist: str = "kraft") -> None:
    """Writes class_archive(dist) from one real start of a combined broker-and-controller node, so the archive
    holds the classes of both roles. Idempotent: kept while the jars it was made from are the same."""
    archive = class_archive(dist)
    stamp = archive.with_suffix(".pom-sha256")
    jars_stamp = (jars(dist) / ".pom-sha256").read_text()
    if archive.exists() and stamp.exists() and stamp.read_text() == jars_stamp:
        return
    archive.unlink(missing_ok=True)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kafka-cds-") as tmp:
        workdir = Path(tmp)
        ports = {"PLAINTEXT": free_port(), "CONTROLLER": free_port()}
        node = KafkaNode(CONTROLLER_ID, "broker", dist, workdir, ports, (workdir / "data",))
        node.properties = {
            "process.roles": "broker,controller",
            "node.id": str(CONTROLLER_ID),
            "listeners": f"PLAINTEXT://127.0.0.1:{ports['PLAINTEXT']},CONTROLLER://127.0.0.1:{ports['CONTROLLER']}",
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.voters": f"{CONTROLLER_ID}@127.0.0.1:{ports['CONTROLLER']}",
            "log.dirs": str(workdir / "data"),
            **BROKER_DEFAULTS,
        }
        node.write_config()
        node.format(_random_cluster_id())
        training = workdir / "training.jsa"
        command = node.command("kafka.Kafka", str(node.config_path))
        command.insert(1, f"-XX:ArchiveClassesAtExit={training}")
        with (workdir / "node.out").open("ab") as out:
            node.proc = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        deadline = time.monotonic() + 120
        while not node.server_started():
            if node.proc.poll() is not None or time.monotonic() > deadline:
                node.signal(signal.SIGKILL, 10)
                raise RuntimeError(f"the class-archive run of Kafka did not start: {workdir}/logs/server.log")
            time.sleep(0.2)
        node.signal(signal.SIGTERM, 60)  # the archive is written at a normal exit
        if not training.exists():
            raise RuntimeError("the JVM wrote no class archive")
        shutil.move(training, archive)
    stamp.write_text(jars_stamp)


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["class-archive"]:
        raise SystemExit("usage: python -m reassignd.localkafka.cluster class-archive")
    build_class_archive()

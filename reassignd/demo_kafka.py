"""`reassignd demo --kafka`: the demo on a real Apache Kafka cluster on loopback, with real records.

The cluster is the one the real-Kafka tests start (reassignd/localkafka): a KRaft controller and four
brokers in two data centres, from the jars `make setup` fetched. A topic of RF 3 and min.insync.replicas 2
is filled with incompressible records, a producer writes into it with acks=all for the whole move, and the
daemon (`reassignd run`, a child process) drains the last broker under a reassignment throttle. At the end
the demo checks the move from the cluster's side, as an operator would: every replica list the plan's,
leaders preferred, the throttle configs as before, and what the producer was answered. Everything it
started is stopped by its PID, also on Ctrl-C.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from reassignd import config_keys
from reassignd.demo import DaemonProcess, drain_plan
from reassignd.model import ClusterSnapshot, ReassignmentPlan

TOPIC = "orders"
THROTTLE_KEYS = (
    config_keys.LEADER_REPLICATION_THROTTLED_RATE,
    config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE,
)
TOPIC_THROTTLE_KEYS = (
    config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS,
    config_keys.FOLLOWER_REPLICATION_THROTTLED_REPLICAS,
)
MIB = 1024 * 1024


@dataclass
class KafkaDemoOptions:
    brokers: int = 4
    partitions: int = 12
    partition_bytes: int = 8 * MIB
    produce_bytes_per_second: int = 256 * 1024
    rate: int = 2_000_000  # the reassignment throttle, bytes/s per broker and direction
    limits: Mapping[str, Any] = field(default_factory=dict)
    keep_dir: bool = False


def run_kafka_demo(options: KafkaDemoOptions, out: TextIO) -> int:
    """0 when the plan completed and the cluster shows it exactly; 1 otherwise. Ctrl-C propagates after
    everything started is stopped."""
    from reassignd.localkafka.cluster import KafkaCluster, jars, kafka_version

    jars("kraft")  # a clear error, before anything starts, when `make setup` has not fetched Kafka
    workdir = Path(tempfile.mkdtemp(prefix="reassignd-demo-kafka-"))
    cluster = KafkaCluster(workdir / "kafka", options.brokers)
    daemons: list[DaemonProcess] = []  # what _move started, stopped here whatever happens
    try:
        _say(out, f"reassignd demo --kafka: Apache Kafka {kafka_version('kraft')} (KRaft) on loopback")
        _say(out, f"  files in {workdir}")
        cluster.start()
        pids = ", ".join(f"{n.node_id}={n.proc.pid}" for n in cluster.nodes if n.proc is not None)
        _say(
            out,
            f"  cluster: brokers {sorted(cluster.brokers)} and a controller up in "
            f"{cluster.start_seconds:.1f} s; bootstrap {cluster.bootstrap_servers}",
        )
        _say(out, f"  JVM pids (node=pid): {pids}")
        return 0 if _move(cluster.bootstrap_servers, workdir, options, daemons, out) else 1
    finally:
        for daemon in daemons:
            daemon.stop()
        cluster.close()
        if options.keep_dir:
            _say(out, f"files kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def _move(
    bootstrap: str, workdir: Path, options: KafkaDemoOptions, daemons: list[DaemonProcess], out: TextIO
) -> bool:
    """The topic, the plan, the daemon (added to `daemons`) and the producer; whether the move ended
    exactly."""
    from reassignd.cli.watch import format_duration, watch
    from reassignd.client import ApiClient
    from reassignd.localkafka.load import MIN_INSYNC_ERRORS, RateProducer, fill
    from reassignd.units import format_bytes

    partitions = range(options.partitions)
    _create_topic(bootstrap, options)
    started = time.monotonic()
    written = sum(fill(bootstrap, TOPIC, [p], options.partition_bytes) for p in partitions)
    _say(
        out,
        f"  topic {TOPIC}: {options.partitions} partitions, RF 3, min.insync.replicas 2; "
        f"{format_bytes(written)} of records written in {time.monotonic() - started:.1f} s",
    )
    before = asyncio.run(_read(bootstrap))
    drained = max(before.brokers)
    plan = drain_plan(before, [drained])
    limits = {
        config_keys.REASSIGNMENT_MAX_INCOMING_REPLICA_MOVEMENTS_PER_BROKER: 2,
        config_keys.REASSIGNMENT_MAX_OUTGOING_REPLICA_MOVEMENTS_PER_BROKER: 2,
        config_keys.LEADER_REASSIGNMENT_THROTTLED_RATE: options.rate,
        config_keys.FOLLOWER_REASSIGNMENT_THROTTLED_RATE: options.rate,
        **options.limits,
    }
    predicted = _rehearsed(before, plan, limits, options.produce_bytes_per_second / options.partitions)
    _say(
        out,
        f"  plan: drain broker {drained}: {len(plan)} partitions; throttle {format_bytes(options.rate)}/s "
        f"per broker; rehearsal predicts {format_duration(predicted)}",
    )
    daemon = DaemonProcess(workdir, bootstrap, {**limits, config_keys.CONTROLLER_CYCLE_INTERVAL_SECONDS: 1.0})
    daemons.append(daemon)
    daemon.start(timeout=120)
    pid = daemon.proc.pid if daemon.proc else "?"
    _say(out, f"  daemon: API {daemon.api_url}, pid {pid}, log {daemon.log_path}")
    _say(out, f"    try: reassignd status --api {daemon.api_url} --token-file {daemon.token_file}")
    rate = format_bytes(options.produce_bytes_per_second)
    _say(out, f"  a producer writes {rate}/s into {TOPIC} with acks=all throughout (Ctrl-C stops all):")
    _say(out)
    client = ApiClient(daemon.api_url, token=daemon.token, timeout=10.0)
    with RateProducer(bootstrap, TOPIC, list(partitions), options.produce_bytes_per_second) as producer:
        plan_id = str(client.submit_plan(plan.to_dict())["plan_id"])
        moving_since = time.monotonic()
        code = watch(lambda: client.status(plan_id), interval=1.0, out=out)
        took = time.monotonic() - moving_since
    after = asyncio.run(_read(bootstrap))
    report = producer.report
    _say(out)
    _say(out, f"done in {format_duration(took)} (wall); the rehearsal predicted {format_duration(predicted)}")
    problems = _judged(plan, before, after)
    below_min_isr = sum(n for name, n in report.errors.items() if name in MIN_INSYNC_ERRORS)
    _say(
        out,
        f"  producer: {report.acked_records} records acknowledged, p99 latency "
        f"{(report.latency_quantile(0.99) or 0) * 1000:.0f} ms, {sum(report.errors.values())} errors "
        f"({below_min_isr} NOT_ENOUGH_REPLICAS)",
    )
    for line in problems or ["every replica list is the plan's, leaders preferred, throttles as before"]:
        _say(out, f"  cluster: {line}")
    return code == 0 and not problems


def _create_topic(bootstrap: str, options: KafkaDemoOptions) -> None:
    """RF 3, each partition's replicas on three consecutive brokers (so the drained one holds 3 in 4)."""
    from confluent_kafka import admin as kafka_admin

    NewTopic = kafka_admin.NewTopic  # type: ignore[attr-defined]  # not in the stubs' exports
    AdminClient = kafka_admin.AdminClient

    brokers = options.brokers
    assignment = [[(p + i) % brokers + 1 for i in range(3)] for p in range(options.partitions)]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = NewTopic(
        TOPIC, len(assignment), replica_assignment=assignment, config={config_keys.MIN_INSYNC_REPLICAS: "2"}
    )
    admin.create_topics([topic])[TOPIC].result(30)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        partitions = asyncio.run(_read(bootstrap)).partitions
        if len(partitions) == options.partitions and all(
            set(p.isr) == set(p.replicas) and p.leader == p.replicas[0] for p in partitions.values()
        ):
            return
        time.sleep(0.5)
    raise TimeoutError(f"topic {TOPIC} not settled (every ISR full, leaders preferred) within 60 s")


async def _read(bootstrap: str) -> ClusterSnapshot:
    """The topic's partitions with sizes and every throttle config, through reassignd's own adapter."""
    from reassignd.cluster.kafka import AdminSettings, KafkaClusterAdmin

    admin = KafkaClusterAdmin(AdminSettings(client={"bootstrap.servers": bootstrap}))
    try:
        return await admin.snapshot(
            None,
            with_sizes=True,
            broker_config_keys=THROTTLE_KEYS,
            topic_config_keys=(config_keys.MIN_INSYNC_REPLICAS, *TOPIC_THROTTLE_KEYS),
        )
    finally:
        await admin.close()


def _rehearsed(
    snapshot: ClusterSnapshot, plan: ReassignmentPlan, limits: Mapping[str, Any], produce_rate: float
) -> float:
    from reassignd.engine import Limits
    from reassignd.rehearsal import cluster_from_snapshot, rehearse

    sim = cluster_from_snapshot(snapshot, produce_rate=produce_rate)
    return rehearse(sim, plan, Limits.from_mapping(dict(limits)), cycle_interval=1.0).duration_seconds


def _judged(plan: ReassignmentPlan, before: ClusterSnapshot, after: ClusterSnapshot) -> list[str]:
    """What an operator would check after the move, read from the cluster: empty when all is as it should."""
    problems = []
    for tp, target in sorted(plan.targets.items()):
        state = after.partitions.get(tp)
        if state is None or state.replicas != target or state.is_reassigning:
            problems.append(
                f"{tp}: replicas {state.replicas if state else None}, the plan says {list(target)}"
            )
        elif state.leader != target[0]:
            problems.append(f"{tp}: leader {state.leader}, preferred {target[0]}")
    for broker in sorted(before.brokers):
        for key in THROTTLE_KEYS:
            was, now = before.broker_config(broker, key), after.broker_config(broker, key)
            if was != now:
                problems.append(f"broker {broker} {key}: {now!r}, before the plan {was!r}")
    for key in TOPIC_THROTTLE_KEYS:
        was, now = before.topic_config(TOPIC, key), after.topic_config(TOPIC, key)
        if was != now:
            problems.append(f"topic {TOPIC} {key}: {now!r}, before the plan {was!r}")
    return problems


def _say(out: TextIO, text: str = "") -> None:
    out.write(text + "\n")
    out.flush()

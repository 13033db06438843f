"""The real-Kafka test cluster's own cost on this machine: start-up time and memory per JVM.

What `make test` pays for each real cluster it starts (reassignd/localkafka/cluster.py): a KRaft
controller with four brokers (Kafka 4.x, with and without the class-data archive `make setup` builds),
and three ZooKeeper-mode brokers (Kafka 3.9) on a ZooKeeper server. Start-up is from the first process
launched to every broker listed by Metadata; memory is each JVM's resident set right after, and its peak
(VmHWM).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from reassignd.localkafka import cluster as kafka
from reassignd.localkafka.cluster import KafkaCluster
from tests.services.zookeeper import ZooKeeperServer


def _memory(cluster: KafkaCluster) -> dict[str, float]:
    """Resident and peak MiB per node, read from /proc (node id -> figures)."""
    figures: dict[str, float] = {}
    for node in cluster.nodes:
        assert node.proc is not None
        status = Path(f"/proc/{node.proc.pid}/status").read_text()
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        figures[f"{node.role}-{node.node_id}-rss_mib"] = int(fields["VmRSS"].split()[0]) / 1024
        figures[f"{node.role}-{node.node_id}-peak_mib"] = int(fields["VmHWM"].split()[0]) / 1024
    return figures


def _start(workdir: Path, **options: Any) -> tuple[float, dict[str, float]]:
    cluster = KafkaCluster(workdir, **options)
    try:
        started = time.monotonic()
        cluster.start()
        seconds = time.monotonic() - started
        time.sleep(2)  # settled: the JVMs' start-up allocations are done
        return seconds, _memory(cluster)
    finally:
        cluster.close()
        cluster.remove_data()


def _measure(runs: int, **options: Any) -> dict[str, Any]:
    seconds: list[float] = []
    memory: dict[str, float] = {}
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="bench-kafka-") as tmp:
            took, memory = _start(Path(tmp), **options)
            seconds.append(took)
    rss = [v for k, v in memory.items() if k.endswith("rss_mib")]
    return {
        "runs": runs,
        "start_seconds_median": round(statistics.median(seconds), 2),
        "start_seconds": [round(s, 2) for s in seconds],
        "rss_mib_per_jvm_max": round(max(rss), 1),
        "rss_mib_total": round(sum(rss), 1),
        "per_node": {k: round(v, 1) for k, v in memory.items()},
    }


def run(quick: bool = False) -> dict[str, Any]:
    runs = 1 if quick else 3
    figures: dict[str, Any] = {"kafka_version": kafka.kafka_version("kraft")}
    figures["kraft_4_brokers"] = _measure(runs, brokers=4)
    archive = kafka.class_archive("kraft")
    hidden = archive.with_suffix(".bench-hidden")
    if archive.exists():  # the same cluster without the archive, to show what it saves
        archive.rename(hidden)
        try:
            figures["kraft_4_brokers_without_class_archive"] = _measure(runs, brokers=4)
        finally:
            hidden.rename(archive)
    with tempfile.TemporaryDirectory(prefix="bench-zk-") as tmp:
        zookeeper = ZooKeeperServer(Path(tmp))
        zookeeper.start()
        try:
            figures["zookeeper_mode_version"] = kafka.kafka_version("zookeeper")
            figures["zookeeper_mode_3_brokers"] = _measure(
                runs, brokers=3, mode="zookeeper", zookeeper_hosts=zookeeper.hosts
            )
        finally:
            zookeeper.stop()
    for name, value in figures.items():
        if isinstance(value, dict):
            print(
                f"   {name}: start {value['start_seconds_median']} s (median of {value['runs']}), "
                f"RSS {value['rss_mib_total']} MiB in all, at most {value['rss_mib_per_jvm_max']} MiB per JVM"
            )
    return figures

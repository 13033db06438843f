"""librdkafka's Metadata reads on a real KRaft cluster: `python -m bench.metadata_reads [TOPICS PER]`.

Starts a 3-broker cluster (reassignd/localkafka), creates TOPICS topics of PER partitions with one replica
each, then, each from a new AdminClient, reads the topics by name (16 in parallel, as the adapter does)
twice and all topics twice, printing the wall and CPU time of each read. The first by-name read of a
topic builds librdkafka's per-partition state, which an all-topics read does not (cluster/kafka.py,
metadata_for_all_topics). Default: 100 topics of 1,000 partitions.
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import admin as kafka_admin
from confluent_kafka.admin import AdminClient

from reassignd.localkafka.cluster import KafkaCluster


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _timed(label: str, read: Callable[[], int]) -> None:
    wall, cpu = time.perf_counter(), _cpu()
    partitions = read()
    took = f"{time.perf_counter() - wall:.2f} s wall, {_cpu() - cpu:.2f} s CPU"
    print(f"{label}: {took}, {partitions} partitions", flush=True)


def _created(admin: AdminClient, names: list[str], per_topic: int) -> None:
    for name in names:  # one at a time: KRaft refuses one batch of too many partitions
        new = kafka_admin.NewTopic(name, per_topic, 1)  # type: ignore[attr-defined]  # not in the stubs' exports
        for future in admin.create_topics([new]).values():
            future.result()
    wanted = len(names) * per_topic
    while sum(len(admin.list_topics(topic=n, timeout=60).topics[n].partitions) for n in names) < wanted:
        time.sleep(1)


def main() -> None:
    topics, per_topic = (int(a) for a in sys.argv[1:3]) if len(sys.argv) > 2 else (100, 1000)
    names = [f"md-{i:03}" for i in range(topics)]
    with tempfile.TemporaryDirectory() as workdir:
        cluster = KafkaCluster(Path(workdir), brokers=3).start(timeout=180)
        try:
            bootstrap = cluster.bootstrap_servers
            _created(AdminClient({"bootstrap.servers": bootstrap}), names, per_topic)
            by_name = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})

            def read_by_name() -> int:
                with ThreadPoolExecutor(16) as pool:
                    answers = pool.map(lambda n: by_name.list_topics(topic=n, timeout=60), names)
                    return sum(len(a.topics[n].partitions) for n, a in zip(names, answers, strict=True))

            for when in ("first", "again"):
                _timed(f"{topics} topics by name, {when}", read_by_name)
            every = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
            for when in ("first", "again"):
                _timed(
                    f"all topics, {when}",
                    lambda: sum(len(t.partitions) for t in every.list_topics(timeout=60).topics.values()),
                )
        finally:
            cluster.close()


if __name__ == "__main__":
    main()

"""Cluster adapter latency: one filtered snapshot of a plan's partitions on a big simulated cluster, over TCP.

The daemon polls only the partitions its plan touches each cycle; its target is one cycle under 1 s median
for a 10,000-partition plan on a 100,000-partition cluster. Metadata is per topic in Kafka, so what a
filtered snapshot costs depends on how many topics the plan spans: `concentrated` takes whole topics
(10 of 100), `spread` takes 100 partitions of every topic (Metadata then carries all 100,000 partitions
and the adapter drops the rest). Each is timed as a daemon cycle would read: metadata + reassignments, then
also with DescribeLogDirs sizes (of every partition, and of the tenth of them a daemon has in flight) and the
throttle configs. The simulator shares this machine's CPU with the
client, so the figures are pessimistic and noisy.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from reassignd import config_keys
from reassignd.cluster.api import BROKER_THROTTLE_KEYS, TOPIC_THROTTLE_KEYS
from reassignd.cluster.kafka import AdminSettings, KafkaClusterAdmin
from reassignd.model import TopicPartition
from tests.services.simulator import SimProcess


def _scenario(brokers: int, topics: int, partitions_per_topic: int) -> dict[str, Any]:
    return {
        "brokers": [{"id": b, "rack": f"r{b % 4}"} for b in range(1, brokers + 1)],
        "topics": [
            {
                "name": f"topic-{t:03d}",
                "partitions": partitions_per_topic,
                "replication_factor": 3,
                "partition_bytes": 1_000_000,
                "produce_bytes_per_sec": 0,
            }
            for t in range(topics)
        ],
    }


async def _time(
    admin: KafkaClusterAdmin, wanted: list[TopicPartition], runs: int, **kwargs: Any
) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = await admin.snapshot_with_errors(wanted, **kwargs)
        times.append(time.perf_counter() - start)
        if len(result.snapshot.partitions) != len(wanted) or result.errors:
            raise AssertionError(
                f"filtered snapshot returned {len(result.snapshot.partitions)} of {len(wanted)} partitions, "
                f"errors {[str(e) for e in result.errors]}"
            )
    return times


async def _measure(bootstrap: str, plans: dict[str, list[TopicPartition]], runs: int) -> dict[str, Any]:
    admin = KafkaClusterAdmin(AdminSettings(client={"bootstrap.servers": bootstrap}, request_timeout=60.0))
    figures: dict[str, Any] = {}
    try:
        await admin.cluster_id()  # connect both clients before timing
        await admin.list_partition_reassignments([])
        for name, wanted in plans.items():
            in_flight = wanted[: len(wanted) // 10]
            variants: dict[str, dict[str, Any]] = {
                "metadata": {},
                "metadata+sizes": {"with_sizes": True},
                "metadata+sizes(10% in flight)+configs": {
                    "with_sizes": in_flight,
                    "broker_config_keys": BROKER_THROTTLE_KEYS,
                    "topic_config_keys": (*TOPIC_THROTTLE_KEYS, config_keys.MIN_INSYNC_REPLICAS),
                },
                "metadata+sizes+configs": {
                    "with_sizes": True,
                    "broker_config_keys": BROKER_THROTTLE_KEYS,
                    "topic_config_keys": (*TOPIC_THROTTLE_KEYS, config_keys.MIN_INSYNC_REPLICAS),
                },
            }
            for variant, kwargs in variants.items():
                times = await _time(admin, wanted, runs, **kwargs)
                key = f"{name}/{variant}"
                figures[key] = {
                    "partitions": len(wanted),
                    "topics": len({tp.topic for tp in wanted}),
                    "median_s": round(statistics.median(times), 3),
                    "max_s": round(max(times), 3),
                    "runs": runs,
                }
                print(
                    f"   {key:50s} {len(wanted):6d} partitions  median {statistics.median(times):.3f} s  "
                    f"max {max(times):.3f} s",
                    flush=True,
                )
    finally:
        await admin.close()
    return figures


def run(quick: bool) -> dict[str, Any]:
    brokers, topics, per_topic = (10, 10, 1000) if quick else (100, 100, 1000)
    plan_size = 1000 if quick else 10_000
    runs = 3 if quick else 5
    whole_topics = plan_size // per_topic
    plans = {
        "concentrated": [
            TopicPartition(f"topic-{t:03d}", p) for t in range(whole_topics) for p in range(per_topic)
        ],
        "spread": [
            TopicPartition(f"topic-{t:03d}", p) for t in range(topics) for p in range(plan_size // topics)
        ],
    }
    print(
        f"   cluster: {brokers} brokers, {topics * per_topic} partitions (rf 3); plan {plan_size} partitions"
    )
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as workdir:
        start = time.perf_counter()
        with SimProcess(_scenario(brokers, topics, per_topic), workdir=Path(workdir), time_scale=0) as sim:
            print(f"   simulator ready in {time.perf_counter() - start:.1f} s", flush=True)
            figures = asyncio.run(_measure(sim.bootstrap_servers, plans, runs))
    figures["cluster"] = {"brokers": brokers, "partitions": topics * per_topic, "plan_partitions": plan_size}
    return figures

"""Metadata of named topics on a real KRaft cluster: the adapter's by-name read (a plan's topics) against
its all-topics read, and the by-name read again after a broker is killed."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from reassignd.cluster.kafka import AdminSettings, KafkaClusterAdmin
from reassignd.cluster.retry import RetryPolicy
from reassignd.localkafka.cluster import KafkaCluster
from reassignd.model import TopicPartition
from tests.realkafka.conftest import create_topic

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

TIMEOUT = 5.0
FENCED_WITHIN = 6.0  # broker.session.timeout.ms of reassignd.localkafka's brokers
TOPICS = {
    "named-a": {0: [1, 2], 1: [2, 3], 2: [3, 1]},
    "named-b": {0: [2, 1]},
    "named-c": {0: [3, 2], 1: [1, 3]},
}
WANTED = [TopicPartition(t, p) for t, assignment in TOPICS.items() for p in assignment]


def test_named_topics_read_as_the_all_topics_answer_and_past_a_killed_broker(
    fresh_kafka_cluster: Callable[..., KafkaCluster], probe_of: Any
) -> None:
    cluster = fresh_kafka_cluster(brokers=3)
    for topic, assignment in TOPICS.items():
        create_topic(probe_of(cluster), topic, assignment)

    def admin(**settings: Any) -> KafkaClusterAdmin:
        retry = RetryPolicy(attempts=4, base_delay=0.2, max_delay=1.0)
        return KafkaClusterAdmin(
            AdminSettings(
                {"bootstrap.servers": cluster.bootstrap_servers},
                request_timeout=TIMEOUT,
                retry=retry,
                **settings,
            )
        )

    async def scenario() -> float:
        named, everything = admin(), admin(per_topic_metadata_up_to=0)
        try:
            by_name = await named.snapshot_with_errors([*WANTED, TopicPartition("gone", 0)])
            by_all = await everything.snapshot_with_errors([*WANTED, TopicPartition("gone", 0)])
            assert by_name.snapshot == replace(by_all.snapshot, controller_id=by_name.snapshot.controller_id)
            assert set(by_name.snapshot.partitions) == set(WANTED)
            for tp, assignment in ((tp, TOPICS[tp.topic][tp.partition]) for tp in WANTED):
                assert by_name.snapshot.partitions[tp].replicas == tuple(assignment)
            expected = [("topic gone", "UNKNOWN_TOPIC_OR_PARTITION")]
            assert [(e.item, e.error.name) for e in by_name.errors] == expected
            assert [(e.item, e.error.name) for e in by_all.errors] == expected

            cluster.kill_broker(1)  # the first bootstrap server
            killed = time.monotonic()
            after = await named.snapshot_with_errors(WANTED)
            took = time.monotonic() - killed
            assert set(after.snapshot.partitions) == set(WANTED) and not after.errors
            return took
        finally:
            await named.close()
            await everything.close()

    took = asyncio.run(scenario())
    print(f"\nnamed topics read {took:.1f} s after broker 1 was killed")
    assert took < FENCED_WITHIN + 3 * TIMEOUT, took

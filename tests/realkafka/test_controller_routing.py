"""The broker librdkafka takes for the controller is killed, on a real KRaft cluster.

Clients cannot reach a KRaft controller: a broker's Metadata answer names a random live broker as the
controller (KafkaApis.handleTopicMetadataRequest, MetadataCache.getRandomAliveBrokerId), and every broker
forwards controller requests to the real one. librdkafka sends DescribeCluster, ElectLeaders and its other
controller requests to the broker its last Metadata named, and waits for it while it is down ("Timed out
waiting for controller") without asking Metadata again: a killed broker stopped every such call, the
reachability probe's included, until it came back (a 30 s outage read as the whole cluster unreachable,
tests/realkafka/test_failures.py in a loaded run).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
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


def test_calls_move_off_the_named_controller_once_it_is_killed(
    fresh_kafka_cluster: Callable[..., KafkaCluster], probe_of: Any
) -> None:
    cluster = fresh_kafka_cluster(brokers=3)
    create_topic(probe_of(cluster), "routing", {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})
    settings = AdminSettings(
        {"bootstrap.servers": cluster.bootstrap_servers},
        request_timeout=TIMEOUT,
        retry=RetryPolicy(attempts=4, base_delay=0.2, max_delay=1.0),
    )

    async def scenario() -> dict[str, float]:
        admin = KafkaClusterAdmin(settings)
        took: dict[str, float] = {}
        try:
            await admin.snapshot()
            named = admin._ck.list_topics(timeout=TIMEOUT).controller_id
            assert named in cluster.brokers, named
            cluster.kill_broker(named)
            killed = time.monotonic()
            snapshot = await admin.snapshot()  # DescribeCluster: a controller request for librdkafka
            took["snapshot"] = time.monotonic() - killed
            assert not snapshot.brokers[named].online or took["snapshot"] < FENCED_WITHIN
            await admin.elect_preferred_leaders([TopicPartition("routing", p) for p in range(3)])
            took["elect"] = time.monotonic() - killed
            await admin.list_partition_reassignments()
            took["list"] = time.monotonic() - killed
            probed = time.monotonic()
            await admin.cluster_id()
            took["probe"] = time.monotonic() - probed
        finally:
            await admin.close()
        return took

    took = asyncio.run(scenario())
    print(f"\nafter the named controller was killed (s): {took}")
    # controller requests once the dead broker is fenced, plus a timed-out attempt or two; the probe at once
    assert max(took.values()) < FENCED_WITHIN + 3 * TIMEOUT, took
    assert took["probe"] < 3.0, took

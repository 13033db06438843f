"""The ZooKeeper store with large plans: compression keeps a 10,000-partition plan far below jute.maxbuffer,
and a commit too large for ZooKeeper is refused up front (ZooKeeper would drop the connection instead)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from reassignd.model import TopicPartition
from reassignd.store.base import StoreError, WriteBatch
from reassignd.store.zookeeper import ZooKeeperStore
from tests.services.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.zookeeper


@pytest.fixture
def store(zookeeper: ZooKeeperServer) -> Iterator[ZooKeeperStore]:
    client = KazooClient(hosts=zookeeper.hosts)
    client.start(timeout=15)
    opened = ZooKeeperStore(client, f"/size-test/{uuid.uuid4().hex}", owns_client=True)
    yield opened
    opened.close()


def test_a_10000_partition_plan_and_all_its_states_commit_at_once(store: ZooKeeperStore) -> None:
    partitions = [
        {
            "topic": f"topic-{i // 100:03d}",
            "partition": i % 100,
            "replicas": [i % 7, (i + 1) % 7, (i + 2) % 7],
        }
        for i in range(10_000)
    ]
    plan = {"version": 1, "partitions": partitions}
    batch = WriteBatch().submit_plan("big", plan, {})
    for entry in partitions:
        tp = TopicPartition(str(entry["topic"]), int(entry["partition"]))
        state = {
            "topic": tp.topic,
            "partition": tp.partition,
            "status": "in_flight",
            "step": 1,
            "target": entry["replicas"],
            "adding": [5],
            "removing": [1],
        }
        batch.put_partition_state("big", tp, state)
    store.commit(batch)
    assert store.get_plan("big").plan == plan  # type: ignore[union-attr]
    states = store.partition_states("big")
    assert len(states) == 10_000
    assert states[TopicPartition("topic-042", 7)]["target"] == partitions[4207]["replicas"]


def test_an_oversized_commit_is_refused_and_writes_nothing(store: ZooKeeperStore) -> None:
    noise = os.urandom(1_000_000).hex()  # about 1 MB even compressed
    with pytest.raises(StoreError, match="exceeds ZooKeeper's request limit"):
        store.submit_plan("huge", {"version": 1, "partitions": [], "comment": noise})
    assert store.get_plan("huge") is None
    assert store.journal() == []

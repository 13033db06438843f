"""The ZooKeeper store beyond the contract: large plans (compression keeps a 10,000-partition plan far below
jute.maxbuffer; a commit too large is refused up front, ZooKeeper would drop the connection instead) and
concurrent committers."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from kazoo.client import KazooClient

from reassignd.model import TopicPartition
from reassignd.store.base import Event, EventKind, StoreError, WriteBatch
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


def test_concurrent_committers_keep_the_journal_gap_free(zookeeper: ZooKeeperServer) -> None:
    """Two clients committing at once: the head's version check serialises them; no seq lost or reused."""
    root = f"/race-test/{uuid.uuid4().hex}"
    stores = []
    for _ in range(2):
        client = KazooClient(hosts=zookeeper.hosts)
        client.start(timeout=15)
        stores.append(ZooKeeperStore(client, root, owns_client=True))
    try:
        stores[0].submit_plan("p", {"version": 1, "partitions": []})

        def writer(store: ZooKeeperStore, name: str) -> list[int]:
            seqs: list[int] = []
            for i in range(40):
                seqs += store.append(Event(EventKind.ERROR, "p", data={"by": name, "i": i}))
            return seqs

        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(writer, stores, ["a", "b"]))
        entries = stores[1].journal()
        assert [e.seq for e in entries] == list(range(1, 82))
        assert sorted(results[0] + results[1]) == list(range(2, 82))
        for name, seqs in zip(["a", "b"], results, strict=True):
            mine = [e.data["i"] for e in entries if e.data.get("by") == name]
            assert mine == list(range(40)), "each writer's entries in its own order"
            assert seqs == sorted(seqs)
    finally:
        for store in stores:
            store.close()

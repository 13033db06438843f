"""The throttle keeper against a real (simulated) cluster: its own writes are never someone else's change."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from reassignd.cluster.kafka import AdminSettings, KafkaClusterAdmin
from reassignd.daemon.throttles import ThrottleKeeper
from reassignd.engine import Limits
from reassignd.engine.throttle import BROKER_KEYS, FOLLOWER_REPLICAS, TOPIC_KEYS, Move
from reassignd.model import TopicPartition
from reassignd.store.aio import AsyncStore
from reassignd.store.base import EventKind
from reassignd.store.sqlite import SqliteStore
from tests.services.simulator import SimProcess

pytestmark = pytest.mark.slow

SCENARIO = {
    "brokers": [{"id": b} for b in (1, 2, 3, 4)],
    "topics": [
        {
            "name": "t",
            "partitions": 2,
            "replication_factor": 3,
            "partition_bytes": 1000,
            "assignment": [[1, 2, 3], [2, 3, 1]],
        }
    ],
}
LIMITS = Limits.from_mapping(
    {"leader.reassignment.throttled.rate": 1_000_000, "follower.reassignment.throttled.rate": 1_000_000}
)
OWNED = {"t": frozenset({0, 1})}
MOVE = Move(TopicPartition("t", 0), source=(1, 2, 3), adding=(4,))


async def test_a_second_sync_on_the_same_snapshot_sees_its_own_writes(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    with SimProcess(SCENARIO, tmp_path / "sim") as sim:
        admin = KafkaClusterAdmin(AdminSettings(client={"bootstrap.servers": sim.bootstrap_servers}))
        store = AsyncStore(SqliteStore(tmp_path / "state"))
        try:
            keeper = ThrottleKeeper(admin, store, plan_id="p")
            tps = [TopicPartition("t", 0), TopicPartition("t", 1)]

            async def read():  # type: ignore[no-untyped-def]
                return await admin.snapshot(tps, broker_config_keys=BROKER_KEYS, topic_config_keys=TOPIC_KEYS)

            snapshot = await read()
            first = await keeper.sync(snapshot, [MOVE], LIMITS, OWNED)
            assert first.writes and not first.foreign
            again = await keeper.sync(snapshot, [MOVE], LIMITS, OWNED)  # same cycle, same (older) read
            assert again.foreign == () and again.writes == (), "our own writes are not a foreign change"
            assert keeper.originals.topics["t"][FOLLOWER_REPLICAS] is None, "nothing of ours adopted"
            done = await keeper.sync(await read(), [], LIMITS, OWNED)
            assert done.restored
            after = await read()
            assert all(after.topic_config("t", key) is None for key in TOPIC_KEYS)
            assert all(after.broker_config(b, key) is None for b in (1, 2, 3, 4) for key in BROKER_KEYS)
            assert not await store.journal(kinds=[EventKind.FOREIGN_CHANGE])
        finally:
            await admin.close()
            await store.close()


async def test_a_deleted_topics_throttles_are_forgotten_not_reported(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    scenario = {**SCENARIO, "topics": [*SCENARIO["topics"], {**SCENARIO["topics"][0], "name": "u"}]}  # type: ignore[list-item]
    with SimProcess(scenario, tmp_path / "sim") as sim:
        admin = KafkaClusterAdmin(AdminSettings(client={"bootstrap.servers": sim.bootstrap_servers}))
        store = AsyncStore(SqliteStore(tmp_path / "state"))
        owned = {"t": frozenset({0}), "u": frozenset({0})}
        moves = [MOVE, Move(TopicPartition("u", 0), source=(1, 2, 3), adding=(4,))]
        tps = [TopicPartition("t", 0), TopicPartition("u", 0)]
        try:
            keeper = ThrottleKeeper(admin, store, plan_id="p")

            async def read():  # type: ignore[no-untyped-def]
                return await admin.snapshot(tps, broker_config_keys=BROKER_KEYS, topic_config_keys=TOPIC_KEYS)

            await keeper.sync(await read(), moves, LIMITS, owned)
            assert {r.name for r, _ in await store.original_configs() if r.type == "topic"} == {"t", "u"}
            other_tool = AdminClient({"bootstrap.servers": sim.bootstrap_servers})
            await asyncio.to_thread(other_tool.delete_topics(["u"])["u"].result, 10)
            snapshot = await read()
            assert snapshot.deleted_topics == {"u"}
            result = await keeper.sync(snapshot, [MOVE], LIMITS, owned)
            assert result.foreign == () and not result.errors
            assert {r.name for r, _ in await store.original_configs() if r.type == "topic"} == {"t"}
            done = await keeper.sync(await read(), [], LIMITS, owned)
            assert done.restored and not done.errors
            assert not await store.journal(kinds=[EventKind.FOREIGN_CHANGE])
        finally:
            await admin.close()
            await store.close()

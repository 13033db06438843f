"""The throttle keeper against a real (simulated) cluster: its own writes are never someone else's change."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from reassignd.cluster.kafka import AdminSettings, KafkaClusterAdmin
from reassignd.daemon.throttles import ThrottleKeeper
from reassignd.engine import Limits
from reassignd.engine.throttle import BROKER_KEYS, FOLLOWER_REPLICAS, TOPIC_KEYS, Move
from reassignd.model import ClusterSnapshot, TopicPartition
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


@dataclass
class KeeperBed:
    """A keeper on a simulated cluster, with the store it records originals in."""

    sim: SimProcess
    admin: KafkaClusterAdmin
    store: AsyncStore
    keeper: ThrottleKeeper
    tps: list[TopicPartition]

    async def read(self) -> ClusterSnapshot:
        return await self.admin.snapshot(
            self.tps, broker_config_keys=BROKER_KEYS, topic_config_keys=TOPIC_KEYS
        )


@contextlib.asynccontextmanager
async def keeper_bed(
    scenario: dict[str, Any], tmp_path: Path, tps: list[TopicPartition]
) -> AsyncIterator[KeeperBed]:
    (tmp_path / "state").mkdir()
    with SimProcess(scenario, tmp_path / "sim") as sim:
        admin = KafkaClusterAdmin(AdminSettings(client={"bootstrap.servers": sim.bootstrap_servers}))
        store = AsyncStore(SqliteStore(tmp_path / "state"))
        try:
            yield KeeperBed(sim, admin, store, ThrottleKeeper(admin, store, plan_id="p"), tps)
        finally:
            await admin.close()
            await store.close()


async def test_a_second_sync_on_the_same_snapshot_sees_its_own_writes(tmp_path: Path) -> None:
    async with keeper_bed(SCENARIO, tmp_path, [TopicPartition("t", 0), TopicPartition("t", 1)]) as bed:
        keeper = bed.keeper
        snapshot = await bed.read()
        first = await keeper.sync(snapshot, [MOVE], LIMITS, OWNED)
        assert first.writes and not first.foreign
        again = await keeper.sync(snapshot, [MOVE], LIMITS, OWNED)  # same cycle, same (older) read
        assert again.foreign == () and again.writes == (), "our own writes are not a foreign change"
        assert keeper.originals.topics["t"][FOLLOWER_REPLICAS] is None, "nothing of ours adopted"
        done = await keeper.sync(await bed.read(), [], LIMITS, OWNED)
        assert done.restored
        after = await bed.read()
        assert all(after.topic_config("t", key) is None for key in TOPIC_KEYS)
        assert all(after.broker_config(b, key) is None for b in (1, 2, 3, 4) for key in BROKER_KEYS)
        assert not await bed.store.journal(kinds=[EventKind.FOREIGN_CHANGE])


async def test_a_deleted_topics_throttles_are_forgotten_not_reported(tmp_path: Path) -> None:
    scenario = {**SCENARIO, "topics": [*SCENARIO["topics"], {**SCENARIO["topics"][0], "name": "u"}]}  # type: ignore[list-item]
    owned = {"t": frozenset({0}), "u": frozenset({0})}
    moves = [MOVE, Move(TopicPartition("u", 0), source=(1, 2, 3), adding=(4,))]
    async with keeper_bed(scenario, tmp_path, [TopicPartition("t", 0), TopicPartition("u", 0)]) as bed:
        keeper, store = bed.keeper, bed.store
        await keeper.sync(await bed.read(), moves, LIMITS, owned)
        assert {r.name for r, _ in await store.original_configs() if r.type == "topic"} == {"t", "u"}
        other_tool = AdminClient({"bootstrap.servers": bed.sim.bootstrap_servers})
        await asyncio.to_thread(other_tool.delete_topics(["u"])["u"].result, 10)
        snapshot = await bed.read()
        assert snapshot.deleted_topics == {"u"}
        result = await keeper.sync(snapshot, [MOVE], LIMITS, owned)
        assert result.foreign == () and not result.errors
        assert {r.name for r, _ in await store.original_configs() if r.type == "topic"} == {"t"}
        done = await keeper.sync(await bed.read(), [], LIMITS, owned)
        assert done.restored and not done.errors
        assert not await store.journal(kinds=[EventKind.FOREIGN_CHANGE])

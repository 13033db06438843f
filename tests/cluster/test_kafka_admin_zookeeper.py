"""KafkaClusterAdmin against a ZooKeeper-mode simulator (Kafka 3.9): controller routing and its rules.

Only what ZooKeeper mode changes for the adapter: controller requests must reach the controller (another
broker answers NOT_CONTROLLER), including after the controller stops; a new target replaces a running one
from the original replicas; a target adding a stopped broker is refused.
"""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from reassignd import config_keys
from reassignd.cluster.api import ConfigOp, Reassignment
from reassignd.cluster.kafka import KafkaClusterAdmin
from reassignd.model import TopicPartition
from tests.cluster.conftest import SCENARIO, make_admin
from tests.services.simulator import SimProcess

pytestmark = pytest.mark.filterwarnings(
    "ignore:Exception ignored in. <socket.socket:pytest.PytestUnraisableExceptionWarning"
)


@pytest.fixture
def zk_sim(tmp_path: Path) -> Iterator[SimProcess]:
    scenario: dict[str, Any] = {**SCENARIO, "kafka": {"version": "3.9", "mode": "zookeeper"}}
    with SimProcess(scenario, workdir=tmp_path / "sim", time_scale=0) as sim:
        yield sim


@pytest.fixture
async def zk_admin(zk_sim: SimProcess) -> AsyncIterator[KafkaClusterAdmin]:
    client = make_admin(zk_sim)
    try:
        yield client
    finally:
        await client.close()
        gc.collect()


async def test_reassign_list_and_cancel_follow_zookeeper_rules(
    zk_admin: KafkaClusterAdmin, zk_sim: SimProcess
) -> None:
    tp = TopicPartition("orders", 2)  # [3, 4, 1]
    assert await zk_admin.alter_partition_reassignments({tp: [2, 4, 1]}) == {tp: None}
    assert await zk_admin.alter_partition_reassignments({tp: [2, 3, 1]}) == {tp: None}
    # from the original [3, 4, 1], not from the running [2, 4, 1, 3]
    listed = await zk_admin.list_partition_reassignments([tp])
    assert listed == {tp: Reassignment(replicas=(2, 3, 1, 4), adding=(2,), removing=(4,))}
    assert await zk_admin.alter_partition_reassignments({tp: None}) == {tp: None}
    assert await zk_admin.list_partition_reassignments([tp]) == {}
    zk_sim.advance(1)  # brokers' Metadata shows the controller's change a moment later (docs/simulator.md)
    snapshot = await zk_admin.snapshot([tp])
    # the original set, in the order of the last replica list (reassignTo(originReplicas)): not [3, 4, 1]
    assert snapshot.partitions[tp].replicas == (3, 1, 4)


async def test_a_target_adding_a_stopped_broker_is_refused(
    zk_admin: KafkaClusterAdmin, zk_sim: SimProcess
) -> None:
    zk_sim.stop_broker(2)
    tp = TopicPartition("orders", 2)
    results = await zk_admin.alter_partition_reassignments({tp: [2, 4, 1]})
    error = results[tp]
    # kafka-python hands per-partition errors over without their message ("... brokers that are not alive")
    assert error is not None and error.name == "INVALID_REPLICA_ASSIGNMENT"


async def test_controller_requests_follow_the_controller_when_it_stops(
    zk_admin: KafkaClusterAdmin, zk_sim: SimProcess
) -> None:
    tp = TopicPartition("orders", 0)  # [1, 2, 3]
    assert zk_sim.state()["controller_id"] == 1
    assert await zk_admin.list_partition_reassignments([tp]) == {}  # the client learns controller 1
    zk_sim.stop_broker(1)
    assert zk_sim.state()["controller_id"] == 2
    assert await zk_admin.alter_partition_reassignments({tp: [2, 3, 4]}) == {tp: None}
    assert await zk_admin.list_partition_reassignments([tp]) == {
        tp: Reassignment(replicas=(2, 3, 4, 1), adding=(4,), removing=(1,))
    }
    zk_sim.advance(10)
    assert await zk_admin.list_partition_reassignments([tp]) == {}
    await zk_admin.alter_broker_configs(
        3, [ConfigOp.set(config_keys.LEADER_REPLICATION_THROTTLED_RATE, "100")]
    )
    configs = await zk_admin.describe_broker_configs([3], [config_keys.LEADER_REPLICATION_THROTTLED_RATE])
    assert configs[3].values[config_keys.LEADER_REPLICATION_THROTTLED_RATE].value == "100"

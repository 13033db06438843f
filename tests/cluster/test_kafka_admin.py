"""KafkaClusterAdmin against the simulated cluster over TCP, checked from the simulator's side."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from reassignd import config_keys
from reassignd.cluster.api import ConfigOp, ConfigSource, Reassignment
from reassignd.cluster.errors import ClusterCallError, WriteFenced
from reassignd.cluster.kafka import (
    ALL_TOPICS_WHILE_UNKNOWN_FROM,
    KafkaClusterAdmin,
    metadata_for_all_topics,
)
from reassignd.model import NO_LEADER, Broker, InvalidInputError, TopicPartition
from tests.cluster.conftest import TEST_TIMEOUT, make_admin
from tests.services.simulator import SimProcess

# kafka-python 3.0.12 leaks the socket of a refused connection (kafka/net/inet.py sock_connect raises
# KafkaConnectionError without closing it); tests that stop brokers provoke that. The conftest fixtures
# collect garbage at teardown so the warning lands on the test that caused it, and only that one is ignored.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings(
        "ignore:Exception ignored in. <socket.socket:pytest.PytestUnraisableExceptionWarning"
    ),
]


def _sim_partitions(sim: SimProcess) -> dict[TopicPartition, dict[str, Any]]:
    """Partitions as the simulator's GET /state reports them (its own view, not through Kafka's APIs)."""
    return {TopicPartition(p["topic"], p["partition"]): p for p in sim.state()["partitions"]}


async def test_full_snapshot_matches_the_simulator(admin: KafkaClusterAdmin, shared_sim: SimProcess) -> None:
    result = await admin.snapshot_with_errors(
        with_sizes=True,
        broker_config_keys=(
            config_keys.LEADER_REPLICATION_THROTTLED_RATE,
            config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE,
        ),
        topic_config_keys=(
            config_keys.FOLLOWER_REPLICATION_THROTTLED_REPLICAS,
            config_keys.MIN_INSYNC_REPLICAS,
        ),
    )
    assert result.errors == ()
    snapshot = result.snapshot
    expected = _sim_partitions(shared_sim)
    assert set(snapshot.partitions) == set(expected)
    for tp, want in expected.items():
        got = snapshot.partitions[tp]
        assert list(got.replicas) == want["replicas"], tp
        assert sorted(got.isr) == sorted(want["isr"]), tp
        assert got.leader == want["leader"], tp
        assert (list(got.adding), list(got.removing)) == (want["adding"], want["removing"]), tp
        assert got.size_bytes == want["size_bytes"], tp
        assert {str(b): s for b, s in got.replica_sizes.items()} == want.get("replica_sizes", {}), tp
    assert snapshot.brokers == {
        1: Broker(1, "r1"),
        2: Broker(2, "r2"),
        3: Broker(3, "r1"),
        4: Broker(4, "r2"),
    }
    state = shared_sim.state()
    assert snapshot.cluster_id == state["cluster_id"] == "adapter-test-cluster"
    # KRaft: Metadata names a random unfenced broker as the controller (getRandomAliveBrokerId)
    assert snapshot.controller_id in {b["id"] for b in state["brokers"] if b["online"]}
    asked = {config_keys.LEADER_REPLICATION_THROTTLED_RATE, config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE}
    for broker in state["brokers"]:
        want = {k: v for k, v in broker["configs"].items() if k in asked}
        assert snapshot.broker_configs[broker["id"]] == want
    assert snapshot.broker_configs[1] == {config_keys.LEADER_REPLICATION_THROTTLED_RATE: "1000000"}
    assert (
        snapshot.cluster_configs
        == state["cluster_broker_configs"]
        == {config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE: "5000000"}
    )
    for topic in state["topics"]:
        assert snapshot.topics[topic["name"]].configs == topic["configs"]
    assert snapshot.min_insync_replicas("orders") == 2


async def test_filtered_snapshot_reads_only_the_given_partitions(admin: KafkaClusterAdmin) -> None:
    wanted = {TopicPartition("orders", 1), TopicPartition("orders", 4)}
    snapshot = await admin.snapshot(
        wanted, with_sizes=True, topic_config_keys=(config_keys.MIN_INSYNC_REPLICAS,)
    )
    assert set(snapshot.partitions) == wanted
    assert set(snapshot.topics) == {"orders"}
    assert snapshot.partitions[TopicPartition("orders", 1)].replicas == (2, 3, 4)
    assert dict(snapshot.partitions[TopicPartition("orders", 4)].replica_sizes) == {1: 5000, 3: 5000, 2: 5000}
    # Sizes for a subset only: the other partition's replica sizes stay unknown.
    subset = await admin.snapshot(wanted, with_sizes=[TopicPartition("orders", 1)])
    assert set(subset.partitions[TopicPartition("orders", 1)].replica_sizes) == {2, 3, 4}
    assert subset.partitions[TopicPartition("orders", 4)].replica_sizes == {}
    # Log dirs asked only for the wanted partitions: nothing else came back.
    sizes = await admin.describe_log_dirs([1], [TopicPartition("orders", 0)])
    assert set(sizes.replicas) == {(TopicPartition("orders", 0), 1)}


async def test_filtered_snapshot_reports_an_unknown_topic_as_an_item_error(admin: KafkaClusterAdmin) -> None:
    result = await admin.snapshot_with_errors([TopicPartition("orders", 0), TopicPartition("nope", 0)])
    assert set(result.snapshot.partitions) == {TopicPartition("orders", 0)}
    assert [(e.item, e.error.name) for e in result.errors] == [("topic nope", "UNKNOWN_TOPIC_OR_PARTITION")]
    assert result.snapshot.deleted_topics == {"nope"}  # Kafka's answer: gone, so a plan drops it


async def test_many_topics_take_one_metadata_request_with_the_same_result(shared_sim: SimProcess) -> None:
    wanted = [TopicPartition("orders", 2), TopicPartition("events", 3), TopicPartition("gone", 0)]
    per_topic = make_admin(shared_sim)
    all_at_once = make_admin(shared_sim, per_topic_metadata_up_to=1)
    try:
        first = await per_topic.snapshot_with_errors(wanted, with_sizes=True)
        second = await all_at_once.snapshot_with_errors(wanted, with_sizes=True)
    finally:
        await per_topic.close()
        await all_at_once.close()
    # the same but for the controller each Metadata names (KRaft: a random unfenced broker)
    assert first.snapshot == replace(second.snapshot, controller_id=first.snapshot.controller_id)
    assert set(first.snapshot.partitions) == set(wanted[:2])
    assert [(e.item, e.error.name) for e in first.errors] == [("topic gone", "UNKNOWN_TOPIC_OR_PARTITION")]
    assert [(e.item, e.error.name) for e in second.errors] == [("topic gone", "UNKNOWN_TOPIC_OR_PARTITION")]
    assert first.snapshot.deleted_topics == second.snapshot.deleted_topics == {"gone"}


@pytest.mark.parametrize(
    ("topics", "partitions", "cluster", "up_to", "all_topics"),
    [
        (1001, 1, 5000, 1000, True),  # many topics: one request, whatever their size
        (1000, 1, 5000, 1000, False),
        (3, None, 5000, 1000, False),  # whole topics asked (their size unknown): by name
        (3, 2500, 5000, 1000, True),  # half the cluster's partitions
        (3, 2499, 5000, 1000, False),
        (100, 100_000, 1_000_000, 1000, False),  # a tenth of the largest cluster: by name
        (100, ALL_TOPICS_WHILE_UNKNOWN_FROM, None, 1000, True),  # the cluster's size not known yet
        (100, ALL_TOPICS_WHILE_UNKNOWN_FROM - 1, None, 1000, False),
    ],
)
def test_metadata_goes_to_all_topics_when_that_is_the_cheaper_read(
    topics: int, partitions: int | None, cluster: int | None, up_to: int, all_topics: bool
) -> None:
    assert metadata_for_all_topics(topics, partitions, cluster, up_to) is all_topics


async def test_the_clusters_size_read_at_start_sends_half_of_it_to_one_all_topics_read(
    admin: KafkaClusterAdmin, shared_sim: SimProcess
) -> None:
    other = make_admin(shared_sim)  # the whole cluster read by another client: this one knows nothing
    try:
        whole = await other.snapshot()
    finally:
        await other.close()
    reads: list[str] = []
    for name in ("_list_all_topics", "_list_one_topic"):
        original = getattr(admin, name)

        async def counted(*args: Any, _original: Any = original, _name: str = name) -> Any:
            reads.append(_name)
            return await _original(*args)

        setattr(admin, name, counted)
    await admin.learn_cluster_size()
    assert reads == ["_list_all_topics"]
    reads.clear()
    events = sorted(tp for tp in whole.partitions if tp.topic == "events")
    assert 2 * len(events) < len(whole.partitions)
    await admin.snapshot(events)  # less than half the cluster: by name
    assert reads == ["_list_one_topic"]
    reads.clear()
    most = sorted(whole.partitions)[: len(whole.partitions) // 2 + 1]
    half = await admin.snapshot(most)
    assert reads == ["_list_all_topics"]
    assert set(half.partitions) == set(most)
    assert all(half.partitions[tp] == whole.partitions[tp] for tp in most)


async def test_config_sources_tell_operator_set_from_default(admin: KafkaClusterAdmin) -> None:
    keys = (config_keys.LEADER_REPLICATION_THROTTLED_RATE, config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE)
    configs = await admin.describe_broker_configs([1, 2], keys)
    assert configs[1].error is None
    assert (
        configs[1].values[config_keys.LEADER_REPLICATION_THROTTLED_RATE].source is ConfigSource.DYNAMIC_BROKER
    )
    assert configs[1].values[config_keys.LEADER_REPLICATION_THROTTLED_RATE].value == "1000000"
    assert (
        configs[2].values[config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE].source
        is ConfigSource.DYNAMIC_DEFAULT_BROKER
    )
    # a throttle rate no level sets is not listed at all (measured on Kafka 4.4: docs/simulator.md)
    assert config_keys.LEADER_REPLICATION_THROTTLED_RATE not in configs[2].values
    topics = await admin.describe_topic_configs(
        ["events", "orders", "nope"], [config_keys.FOLLOWER_REPLICATION_THROTTLED_REPLICAS]
    )
    assert topics["nope"].error is not None and topics["nope"].error.name == "UNKNOWN_TOPIC_OR_PARTITION"
    assert topics["nope"].values == {}
    assert (
        topics["events"].values[config_keys.FOLLOWER_REPLICATION_THROTTLED_REPLICAS].source
        is ConfigSource.DYNAMIC_TOPIC
    )
    assert not topics["orders"].values[config_keys.FOLLOWER_REPLICATION_THROTTLED_REPLICAS].source.is_dynamic


async def test_the_cluster_default_is_read_under_every_brokers_own_value(tmp_path: Path) -> None:
    """Kafka lists a broker config's synonyms from the highest level down, all under the same name.
    librdkafka keys them by name, so under a broker's own rate only the last (Kafka's default) survived and
    the cluster-wide default vanished. Once every broker carries its own rate (ours, mid-move), the
    snapshot lost the operator's cluster default, which the `add` rate policy adds ours to."""
    scenario = {
        "cluster_id": "synonyms",
        "brokers": [{"id": 1, "rack": "r1"}, {"id": 2, "rack": "r2"}],
        "topics": [{"name": "t", "partitions": 1, "replication_factor": 2, "assignment": [[1, 2]]}],
        "broker_configs": {
            "1": {config_keys.LEADER_REPLICATION_THROTTLED_RATE: "1000000"},
            "2": {
                config_keys.LEADER_REPLICATION_THROTTLED_RATE: "2000000",
                config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE: "3000000",
            },
        },
        "cluster_broker_configs": {config_keys.LEADER_REPLICATION_THROTTLED_RATE: "7000000"},
    }
    keys = (config_keys.LEADER_REPLICATION_THROTTLED_RATE, config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE)
    with SimProcess(scenario, workdir=tmp_path / "sim", time_scale=0) as sim:
        admin = make_admin(sim)
        try:
            described = await admin.describe_broker_configs([1, 2], keys)
            read = await admin.snapshot_with_errors(broker_config_keys=keys)
        finally:
            await admin.close()
            gc.collect()
    leader = described[1].values[config_keys.LEADER_REPLICATION_THROTTLED_RATE]
    assert (leader.value, leader.source) == ("1000000", ConfigSource.DYNAMIC_BROKER)
    assert leader.value_from(ConfigSource.DYNAMIC_DEFAULT_BROKER) == "7000000"
    # Kafka 4.4 lists a throttle rate only where a level sets it, with no DEFAULT synonym (docs/simulator.md)
    assert leader.value_from(ConfigSource.DEFAULT) is None
    assert set(described[1].values) == {config_keys.LEADER_REPLICATION_THROTTLED_RATE}  # asked for and set
    assert not read.errors
    assert read.snapshot.cluster_configs == {config_keys.LEADER_REPLICATION_THROTTLED_RATE: "7000000"}
    assert read.snapshot.broker_configs == {
        1: {config_keys.LEADER_REPLICATION_THROTTLED_RATE: "1000000"},
        2: {
            config_keys.LEADER_REPLICATION_THROTTLED_RATE: "2000000",
            config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE: "3000000",
        },
    }


async def test_broker_config_set_and_delete_round_trip(
    admin: KafkaClusterAdmin, shared_sim: SimProcess
) -> None:
    await admin.alter_broker_configs(2, [ConfigOp.set(config_keys.LEADER_REPLICATION_THROTTLED_RATE, "777")])
    try:
        described = await admin.describe_broker_configs([2], [config_keys.LEADER_REPLICATION_THROTTLED_RATE])
        assert described[2].values[config_keys.LEADER_REPLICATION_THROTTLED_RATE].value == "777"
        assert (
            described[2].values[config_keys.LEADER_REPLICATION_THROTTLED_RATE].source
            is ConfigSource.DYNAMIC_BROKER
        )
        assert _sim_broker_config(shared_sim, 2, config_keys.LEADER_REPLICATION_THROTTLED_RATE) == "777"
    finally:
        await admin.alter_broker_configs(2, [ConfigOp.delete(config_keys.LEADER_REPLICATION_THROTTLED_RATE)])
    described = await admin.describe_broker_configs([2], [config_keys.LEADER_REPLICATION_THROTTLED_RATE])
    # deleted and set at no other level: not listed at all, as Kafka 4.4 answers (docs/simulator.md)
    assert config_keys.LEADER_REPLICATION_THROTTLED_RATE not in described[2].values
    assert _sim_broker_config(shared_sim, 2, config_keys.LEADER_REPLICATION_THROTTLED_RATE) is None


async def test_writes_issued_together_ask_the_live_brokers_once(own_admin: KafkaClusterAdmin) -> None:
    """A cycle writes the throttles of every broker of its moves at once; each write checks its broker is
    live, and with the last DescribeCluster answer too old, every one of them asked it again (16 of 17
    DescribeCluster requests of bench_daemon's first cycle)."""
    await own_admin._live_brokers()  # contact made: a new adapter's first call checks it (DescribeCluster)
    asked = []
    describe = own_admin._ck.describe_cluster

    def counted(**kwargs: Any) -> Any:
        asked.append(time.monotonic())
        return describe(**kwargs)

    own_admin._ck.describe_cluster = counted  # type: ignore[method-assign]
    own_admin._live_at = None  # the last answer too old: the next write asks again
    key = config_keys.LEADER_REPLICATION_THROTTLED_RATE
    writes = [own_admin.alter_broker_configs(b, [ConfigOp.delete(key)]) for b in (1, 2, 3, 4) * 5]
    await asyncio.gather(*writes)
    assert len(asked) == 1


async def test_throttled_replica_lists_append_and_subtract(
    admin: KafkaClusterAdmin, shared_sim: SimProcess
) -> None:
    key = config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS
    await admin.alter_topic_configs("orders", [ConfigOp.append(key, "0:1,3:4")])
    try:
        assert _items(await _topic_value(admin, "orders", key)) == {"0:1", "3:4"}
        assert _items(_sim_topic_config(shared_sim, "orders", key)) == {"0:1", "3:4"}
        # APPEND of an entry already present leaves the list as it is (Kafka's list semantics).
        await admin.alter_topic_configs("orders", [ConfigOp.append(key, "0:1")])
        assert _items(await _topic_value(admin, "orders", key)) == {"0:1", "3:4"}
        await admin.alter_topic_configs("orders", [ConfigOp.subtract(key, "0:1")])
        assert _items(await _topic_value(admin, "orders", key)) == {"3:4"}
    finally:
        await admin.alter_topic_configs("orders", [ConfigOp.delete(key)])
    assert not _items(_sim_topic_config(shared_sim, "orders", key))


async def test_appends_of_one_key_in_one_call_are_merged(admin: KafkaClusterAdmin) -> None:
    key = config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS
    await admin.alter_topic_configs("orders", [ConfigOp.append(key, "0:1"), ConfigOp.append(key, "1:2")])
    try:
        assert _items(await _topic_value(admin, "orders", key)) == {"0:1", "1:2"}
    finally:
        await admin.alter_topic_configs("orders", [ConfigOp.delete(key)])
    with pytest.raises(InvalidInputError) as info:
        await admin.alter_topic_configs(
            "orders", [ConfigOp.append(key, "0:1"), ConfigOp.subtract(key, "1:2")]
        )
    assert [p.field for p in info.value.problems] == [key]


async def test_bad_config_value_is_a_typed_non_retriable_error(admin: KafkaClusterAdmin) -> None:
    with pytest.raises(ClusterCallError) as info:
        await admin.alter_broker_configs(
            1, [ConfigOp.set(config_keys.LEADER_REPLICATION_THROTTLED_RATE, "fast")]
        )
    # the broker validates its own config values and answers INVALID_REQUEST (ConfigAdminManager, KAFKA-13609)
    assert info.value.name == "INVALID_REQUEST"
    assert not info.value.retriable
    configs = await admin.describe_broker_configs([1], [config_keys.LEADER_REPLICATION_THROTTLED_RATE])
    assert configs[1].values[config_keys.LEADER_REPLICATION_THROTTLED_RATE].value == "1000000"


async def test_reassignment_start_list_and_cancel(own_admin: KafkaClusterAdmin, own_sim: SimProcess) -> None:
    tp = TopicPartition("orders", 0)  # [1, 2, 3] -> [4, 1, 2]: adds 4, removes 3
    results = await own_admin.alter_partition_reassignments({tp: [4, 1, 2]})
    assert results == {tp: None}
    listed = await own_admin.list_partition_reassignments([tp, TopicPartition("orders", 1)])
    assert listed == {tp: Reassignment(replicas=(4, 1, 2, 3), adding=(4,), removing=(3,))}
    assert await own_admin.list_partition_reassignments() == listed
    snapshot = await own_admin.snapshot([tp])
    moving = snapshot.partitions[tp]
    assert (moving.replicas, moving.adding, moving.removing) == ((4, 1, 2, 3), (4,), (3,))
    assert _sim_partitions(own_sim)[tp]["replicas"] == [4, 1, 2, 3]

    assert await own_admin.alter_partition_reassignments({tp: None}) == {tp: None}
    assert await own_admin.list_partition_reassignments() == {}
    assert _sim_partitions(own_sim)[tp]["replicas"] == [1, 2, 3]


async def test_reassignment_errors_are_per_partition(own_admin: KafkaClusterAdmin) -> None:
    ok, unknown_broker, not_moving = (TopicPartition("orders", p) for p in (1, 2, 3))
    results = await own_admin.alter_partition_reassignments(
        {ok: [2, 3, 1], unknown_broker: [3, 4, 99], not_moving: None}
    )
    names = {tp: None if error is None else error.name for tp, error in results.items()}
    assert names == {
        ok: None,
        unknown_broker: "INVALID_REPLICA_ASSIGNMENT",
        not_moving: "NO_REASSIGNMENT_IN_PROGRESS",
    }


async def test_preferred_leader_election(own_admin: KafkaClusterAdmin, own_sim: SimProcess) -> None:
    tp = TopicPartition("orders", 0)  # preferred leader 1
    own_sim.stop_broker(1)
    own_sim.advance(1)
    own_sim.start_broker(1)
    own_sim.advance(5)
    before = _sim_partitions(own_sim)[tp]
    assert before["leader"] != 1 and 1 in before["isr"], before
    results = await own_admin.elect_preferred_leaders([tp, TopicPartition("orders", 1)])
    # orders-1 is already led by its preferred replica: ELECTION_NOT_NEEDED is success.
    assert results == {tp: None, TopicPartition("orders", 1): None}
    assert _sim_partitions(own_sim)[tp]["leader"] == 1


async def test_log_dir_sizes_follow_a_catching_up_replica(
    own_admin: KafkaClusterAdmin, own_sim: SimProcess
) -> None:
    tp = TopicPartition("orders", 5)  # 6000 bytes on [2, 4, 3]
    sizes = await own_admin.describe_log_dirs([2, 3, 4], [tp])
    assert {b: r.size for (_, b), r in sizes.replicas.items()} == {2: 6000, 3: 6000, 4: 6000}
    assert all(r.offset_lag == 0 and r.log_dir for r in sizes.replicas.values())
    await own_admin.alter_partition_reassignments({tp: [2, 4, 1]})
    during = await own_admin.describe_log_dirs([1], [tp])
    assert during.replicas[(tp, 1)].size < 6000  # 6000 - size bytes behind its leader
    assert during.replicas[(tp, 1)].offset_lag == 0  # Kafka's lag is against the replica's own HW
    every = await own_admin.snapshot([tp], with_sizes=[tp])
    # every replica the read shows (brokers' Metadata may not show the adding one yet: it trails the
    # controller, docs/simulator.md)
    assert set(every.partitions[tp].replica_sizes) == set(every.partitions[tp].replicas) >= {2, 3, 4}
    # a mapping asks the leader (2) and the named adding replica only, not the staying or removing ones
    moving = await own_admin.snapshot([tp], with_sizes={tp: [1]})
    assert set(moving.partitions[tp].replica_sizes) == {1, 2}
    assert moving.partitions[tp].size_bytes == 6000
    own_sim.advance(60)
    after = await own_admin.snapshot([tp], with_sizes=True)
    assert after.partitions[tp].replicas == (2, 4, 1)
    assert after.partitions[tp].replica_sizes[1] == 6000


async def test_stopped_broker_is_offline_and_its_configs_are_skipped(
    own_admin: KafkaClusterAdmin, own_sim: SimProcess
) -> None:
    own_sim.stop_broker(4)
    own_sim.advance(1)
    result = await own_admin.snapshot_with_errors(
        with_sizes=True,
        broker_config_keys=(config_keys.LEADER_REPLICATION_THROTTLED_RATE,),
        topic_config_keys=(config_keys.MIN_INSYNC_REPLICAS,),
    )
    snapshot = result.snapshot
    assert snapshot.brokers[4] == Broker(4, None, online=False)
    assert 4 not in snapshot.broker_configs
    assert snapshot.broker_configs[1] == {config_keys.LEADER_REPLICATION_THROTTLED_RATE: "1000000"}
    assert result.errors == ()
    p1 = snapshot.partitions[TopicPartition("orders", 1)]
    assert 4 in p1.replicas and 4 not in p1.isr and 4 not in p1.replica_sizes
    assert all(p.leader != 4 for p in snapshot.partitions.values())
    # Asking an offline broker directly: an error for it at once, values for the others.
    started = time.monotonic()
    described = await own_admin.describe_broker_configs(
        [1, 4], [config_keys.LEADER_REPLICATION_THROTTLED_RATE]
    )
    assert (
        described[1].error is None
        and described[1].values[config_keys.LEADER_REPLICATION_THROTTLED_RATE].value == "1000000"
    )
    assert described[4].error is not None
    assert (described[4].error.name, described[4].error.retriable) == ("BROKER_NOT_AVAILABLE", True)
    offline_sizes = await own_admin.describe_log_dirs([3, 4], [TopicPartition("orders", 2)])
    assert {b: e.name for b, e in offline_sizes.errors.items()} == {4: "BROKER_NOT_AVAILABLE"}
    assert set(offline_sizes.replicas) == {(TopicPartition("orders", 2), 3)}
    with pytest.raises(ClusterCallError) as info:
        await own_admin.alter_broker_configs(
            4, [ConfigOp.set(config_keys.LEADER_REPLICATION_THROTTLED_RATE, "5")]
        )
    assert (info.value.name, info.value.retriable) == ("BROKER_NOT_AVAILABLE", True)
    assert time.monotonic() - started < TEST_TIMEOUT  # none of it waited for a request timeout
    own_sim.start_broker(4)
    own_sim.advance(5)
    back = await own_admin.snapshot([TopicPartition("orders", 1)])
    assert back.brokers[4].online and back.brokers[4].rack == "r2"


async def test_reassignments_follow_the_controller_when_it_stops(
    own_admin: KafkaClusterAdmin, own_sim: SimProcess
) -> None:
    assert await own_admin.list_partition_reassignments() == {}  # kafka-python now knows controller 1
    old = own_sim.state()["controller_id"]
    own_sim.stop_broker(old)
    own_sim.advance(1)
    assert own_sim.state()["controller_id"] != old
    tp = TopicPartition("orders", 1)  # [2, 3, 4], not on the stopped controller
    assert await own_admin.alter_partition_reassignments({tp: [3, 4, 2]}) == {tp: None}
    assert await own_admin.list_partition_reassignments() == {}  # a reorder completes at once
    assert _sim_partitions(own_sim)[tp]["replicas"] == [3, 4, 2]


async def test_partition_without_a_live_replica_has_no_leader(own_sim: SimProcess) -> None:
    admin = make_admin(own_sim)
    try:
        for broker in (3, 4):
            own_sim.stop_broker(broker)
        own_sim.advance(1)
        snapshot = await admin.snapshot([TopicPartition("events", 2)])
        assert snapshot.partitions[TopicPartition("events", 2)].leader == NO_LEADER
        assert {b for b, info in snapshot.brokers.items() if not info.online} == {3, 4}
    finally:
        await admin.close()
        gc.collect()


async def test_cluster_id_and_create_topic(own_admin: KafkaClusterAdmin) -> None:
    assert await own_admin.cluster_id() == "adapter-test-cluster"
    await own_admin.create_topic(
        "fresh", assignment={0: [1, 2], 1: [3, 4]}, configs={"min.insync.replicas": "1"}
    )
    snapshot = await own_admin.snapshot([TopicPartition("fresh", 0), TopicPartition("fresh", 1)])
    assert [snapshot.partitions[TopicPartition("fresh", p)].replicas for p in (0, 1)] == [(1, 2), (3, 4)]
    with pytest.raises(ClusterCallError) as info:
        await own_admin.create_topic("fresh", num_partitions=1, replication_factor=1)
    assert info.value.name == "TOPIC_ALREADY_EXISTS"


class RecordingObserver:
    def __init__(self) -> None:
        self.failed: list[tuple[str, str]] = []
        self.succeeded: list[str] = []

    def call_failed(self, api: str, error: Any) -> None:
        self.failed.append((api, error.name))

    def call_succeeded(self, api: str, wall_time: float) -> None:
        self.succeeded.append(api)


async def test_observer_sees_successes_and_failures(shared_sim: SimProcess) -> None:
    observer = RecordingObserver()
    admin = KafkaClusterAdmin(make_admin(shared_sim)._settings, observer=observer)
    try:
        await admin.snapshot([TopicPartition("orders", 0)])
        with pytest.raises(ClusterCallError):
            await admin.alter_topic_configs("orders", [ConfigOp.set(config_keys.MIN_INSYNC_REPLICAS, "many")])
    finally:
        await admin.close()
        gc.collect()
    assert {"describe_cluster", "list_topics", "list_partition_reassignments"} <= set(observer.succeeded)
    assert observer.failed == [("incremental_alter_configs", "INVALID_CONFIG")]


def _items(value: str | None) -> set[str]:
    return {item for item in (value or "").split(",") if item}


async def _topic_value(admin: KafkaClusterAdmin, topic: str, key: str) -> str | None:
    described = await admin.describe_topic_configs([topic], [key])
    return described[topic].values[key].value


def _sim_broker_config(sim: SimProcess, broker: int, key: str) -> str | None:
    brokers = {b["id"]: b for b in sim.state()["brokers"]}
    value = brokers[broker]["configs"].get(key)
    return None if value is None else str(value)


def _sim_topic_config(sim: SimProcess, topic: str, key: str) -> str | None:
    topics = {t["name"]: t for t in sim.state()["topics"]}
    value = topics[topic]["configs"].get(key)
    return None if value is None else str(value)


async def test_a_refusing_write_fence_stops_every_write_before_it_is_sent(own_sim: SimProcess) -> None:
    """The fence's own exception comes out unchanged (no retry, no ClusterCallError); the simulator's request
    log shows nothing was sent; reads are not fenced; lifting the fence lets the same writes through."""

    class Refused(WriteFenced):
        pass

    calls: list[str] = []

    def refuse() -> None:
        calls.append("fence")
        raise Refused("lease expired")

    admin = make_admin(own_sim, client={"client.id": "fenced"})
    admin.write_fence = refuse
    tp = TopicPartition("orders", 0)
    try:
        await admin.snapshot([tp])  # reads pass
        with pytest.raises(Refused):
            await admin.alter_partition_reassignments({tp: [2, 3, 4]})
        with pytest.raises(Refused):
            await admin.alter_topic_configs(
                "orders", [ConfigOp.set(config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS, "0:1")]
            )
        with pytest.raises(Refused):
            await admin.alter_broker_configs(
                2, [ConfigOp.set(config_keys.LEADER_REPLICATION_THROTTLED_RATE, "1000")]
            )
        with pytest.raises(Refused):
            await admin.elect_preferred_leaders([tp])
        assert calls == ["fence"] * 4  # once each: a fenced write is never retried
        assert [r for r in own_sim.write_requests() if r["client_id"] == "fenced"] == []

        admin.write_fence = lambda: None
        assert await admin.alter_partition_reassignments({tp: [2, 3, 4]}) == {tp: None}
        sent = [r["api"] for r in own_sim.write_requests() if r["client_id"] == "fenced"]
        assert sent == ["AlterPartitionReassignments"]
    finally:
        await admin.close()
        gc.collect()


async def test_alter_replica_log_dirs_and_the_snapshot_s_dirs(tmp_path: Path) -> None:
    scenario = {
        "brokers": [{"id": b, "rack": "r1", "log_dirs": ["/data/a", "/data/b"]} for b in (1, 2)],
        "topics": [
            {
                "name": "t",
                "partitions": 1,
                "replication_factor": 2,
                "partition_bytes": 50_000_000,
                "produce_bytes_per_sec": 0,
                "assignment": [[1, 2]],
                "log_dirs": [["/data/a", "/data/a"]],
            }
        ],
        "broker_configs": {"1": {"replica.alter.log.dirs.io.max.bytes.per.second": "1000000"}},
    }
    tp = TopicPartition("t", 0)
    with SimProcess(scenario, workdir=tmp_path / "sim", time_scale=0) as sim:
        admin = make_admin(sim)
        try:
            results = await admin.alter_replica_log_dirs({(tp, 1): "/data/b", (tp, 2): "/data/z"})
            names = {key: None if e is None else e.name for key, e in results.items()}
            assert names == {(tp, 1): None, (tp, 2): "LOG_DIR_NOT_FOUND"}
            sim.advance(5)  # 5 MB of 50 at 1 MB/s: still copying
            during = await admin.snapshot([tp], with_sizes=True)
            assert during.replica_dirs == {(tp, 1): "/data/a", (tp, 2): "/data/a"}
            assert during.future_dirs == {(tp, 1): "/data/b"}
            assert during.broker_dirs == {1: ("/data/a", "/data/b"), 2: ("/data/a", "/data/b")}
            listing = await admin.describe_log_dirs([1, 2], [])  # no partition asked: the dirs alone
            assert listing.dirs == {1: ("/data/a", "/data/b"), 2: ("/data/a", "/data/b")}
            assert not listing.replicas and not listing.errors
            sim.advance(60)
            after = await admin.snapshot([tp], with_sizes=True)
            assert after.replica_dirs[(tp, 1)] == "/data/b"
            assert not after.future_dirs
        finally:
            await admin.close()
            gc.collect()


async def test_a_broker_that_comes_back_reports_its_log_dirs_again(
    own_admin: KafkaClusterAdmin, own_sim: SimProcess
) -> None:
    """kafka-python's metadata forgets a broker that stopped; asked for its log dirs once it is back, the
    client answered UnknownBrokerIdError until its next metadata refresh (5 minutes), so copies into it
    looked stalled. The adapter replaces the client then, as it does for the controller."""
    plan = [TopicPartition("orders", i) for i in range(6)]
    own_sim.stop_broker(2)
    own_sim.advance(1)
    await own_admin.snapshot_with_errors(plan, with_sizes={})
    own_sim.start_broker(2)
    own_sim.advance(5)
    for _ in range(3):
        result = await own_admin.snapshot_with_errors(plan, with_sizes=True)
        assert result.errors == ()
    assert result.snapshot.partitions[TopicPartition("orders", 0)].replica_sizes[2] == 1000


def _librdkafka_pollers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "reassignd-librdkafka" and t.is_alive()]


@pytest.mark.parametrize("wait", [True, False])
async def test_close_ends_the_librdkafka_poller_before_it_returns(shared_sim: SimProcess, wait: bool) -> None:
    """A poller still in librdkafka's poll() when the interpreter finalises calls back into a dying Python:
    one-shot commands exited -11 after their one line (test_security, CI stop 33 under load)."""
    before = set(_librdkafka_pollers())
    admin = make_admin(shared_sim)
    await admin.snapshot([TopicPartition("orders", 0)])
    await admin.close(wait=wait)
    assert set(_librdkafka_pollers()) - before == set()


def _librdkafka_threads() -> set[int]:
    """The process's librdkafka threads (named rdk:main, rdk:broker..., by librdkafka), by thread id."""
    found = set()
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(OSError):
            if (task / "comm").read_text().startswith("rdk:"):
                found.add(int(task.name))
    return found


async def test_close_destroys_the_librdkafka_handle_while_python_runs(shared_sim: SimProcess) -> None:
    """Left to the interpreter's exit, the handle's destruction logged into a finalising Python: a one-shot
    command refused by TLS printed its one line, then exited -11 (test_security, a fresh-clone run)."""
    before = _librdkafka_threads()
    admin = make_admin(shared_sim)
    await admin.snapshot([TopicPartition("orders", 0)])
    assert _librdkafka_threads() - before, "the admin's librdkafka threads, seen while it is open"
    await admin.close()
    assert _librdkafka_threads() - before == set()  # the admin is still referenced: destroyed by close()
    with pytest.raises(ClusterCallError):
        await admin.snapshot([TopicPartition("orders", 0)])

"""Snapshot assembly from raw client results: offline brokers, filtering, sizes, config levels."""

from __future__ import annotations

from typing import Any

from reassignd.cluster._kafka_python import DescribeLogDirsResponse
from reassignd.cluster.api import ConfigDescription, ConfigSource, ConfigValue, Reassignment, ReplicaLogDir
from reassignd.cluster.convert import (
    ClusterView,
    RawPartition,
    RawTopic,
    build_snapshot,
    log_dir_listing,
    log_dir_volumes,
    offline_log_dirs,
)
from reassignd.model import NO_LEADER, Broker, TopicPartition

CLUSTER = ClusterView(cluster_id="c1", controller_id=1, racks={1: "r1", 2: "r2", 3: None})
TOPICS = {
    "t": RawTopic(
        "t",
        "id-t",
        (
            RawPartition(0, 1, (1, 2, 4), (1, 2)),  # broker 4 is not in the cluster: offline
            RawPartition(1, -1, (3, 2), ()),
            RawPartition(2, 2, (2, 3, 1), (2, 3, 1)),
        ),
    )
}


def _build(**kwargs: object) -> object:
    defaults: dict[str, object] = {
        "wanted": None,
        "reassignments": {},
        "sizes": {},
        "broker_configs": {},
        "topic_configs": {},
    }
    defaults.update(kwargs)
    return build_snapshot(CLUSTER, TOPICS, **defaults)  # type: ignore[arg-type]


def test_brokers_missing_from_metadata_are_offline() -> None:
    snapshot = _build()
    assert snapshot.brokers == {  # type: ignore[attr-defined]
        1: Broker(1, "r1", True),
        2: Broker(2, "r2", True),
        3: Broker(3, None, True),
        4: Broker(4, None, False),
    }
    assert snapshot.cluster_id == "c1"  # type: ignore[attr-defined]
    assert snapshot.partitions[TopicPartition("t", 1)].leader == NO_LEADER  # type: ignore[attr-defined]


def test_filter_keeps_only_wanted_partitions_and_their_offline_brokers() -> None:
    wanted = {TopicPartition("t", 1), TopicPartition("t", 2)}
    snapshot = _build(wanted=wanted)
    assert set(snapshot.partitions) == wanted  # type: ignore[attr-defined]
    assert 4 not in snapshot.brokers  # type: ignore[attr-defined]


def test_sizes_reassignments_and_leader_size() -> None:
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    sizes = {
        (tp0, 1): ReplicaLogDir(100, 0, "/d"),
        (tp0, 2): ReplicaLogDir(60, 40, "/d"),
        (tp1, 3): ReplicaLogDir(70, 0, "/d"),
        (tp1, 2): ReplicaLogDir(90, 0, "/d"),
    }
    moving = {tp0: Reassignment((1, 2, 4), adding=(4,), removing=())}
    snapshot = _build(sizes=sizes, reassignments=moving)
    p0 = snapshot.partitions[tp0]  # type: ignore[attr-defined]
    assert (p0.size_bytes, dict(p0.replica_sizes), p0.adding) == (100, {1: 100, 2: 60}, (4,))
    # No leader: the largest replica stands for the partition's size.
    assert snapshot.partitions[tp1].size_bytes == 90  # type: ignore[attr-defined]


def test_a_move_the_metadata_does_not_show_yet_takes_the_controllers_replica_list() -> None:
    """Real KRaft: a broker's Metadata lags the controller by up to a metadata round trip, so a snapshot read
    just after an AlterPartitionReassignments shows the old replicas beside the controller's listing of the
    move. The listing (read after the metadata, from the controller) is the newer: the state is the move's.
    Seen on Kafka 4.4: the engine took such a partition for one reassigned by someone else."""
    tp2 = TopicPartition("t", 2)
    # metadata: [2, 3, 1], not moving; the controller: [2, 3, 4, 1] adding 4, removing 1
    moving = {tp2: Reassignment((2, 3, 4, 1), adding=(4,), removing=(1,))}
    p2 = _build(reassignments=moving).partitions[tp2]  # type: ignore[attr-defined]
    assert (p2.replicas, p2.adding, p2.removing) == ((2, 3, 4, 1), (4,), (1,))
    assert p2.target_replicas == (2, 3, 4)
    assert (p2.leader, p2.isr) == (2, (2, 3, 1))


def test_a_partition_that_reads_as_before_gets_its_earlier_state_back() -> None:
    """Identity is what lets the engine skip unchanged partitions; anything read differently is new."""
    tp0, tp1, tp2 = (TopicPartition("t", i) for i in range(3))
    first = _build().partitions  # type: ignore[attr-defined]
    again = _build(previous=first).partitions  # type: ignore[attr-defined]
    assert all(again[tp] is first[tp] for tp in (tp0, tp1, tp2))  # leaderless and offline ones too
    # a reassignment, a size read or a changed ISR each make a new state, equal to a fresh build
    moving = {tp2: Reassignment((2, 3, 1), adding=(1,), removing=())}
    sizes = {(tp2, 2): ReplicaLogDir(10, 0, "/d")}
    changed_isr = {
        "t": RawTopic("t", "id-t", (*TOPICS["t"].partitions[:2], RawPartition(2, 2, (2, 3, 1), (2, 3))))
    }
    for kwargs in ({"reassignments": moving}, {"sizes": sizes}):
        assert _build(previous=first, **kwargs).partitions[tp2] == _build(**kwargs).partitions[tp2]  # type: ignore[attr-defined]
        assert _build(previous=first, **kwargs).partitions[tp2] is not first[tp2]  # type: ignore[attr-defined]
    fresh = build_snapshot(
        CLUSTER,
        changed_isr,
        wanted=None,
        reassignments={},
        sizes={},
        broker_configs={},
        topic_configs={},
        previous=first,
    )
    assert fresh.partitions[tp2].isr == (2, 3)
    assert fresh.partitions[tp0] is first[tp0]


def test_config_levels_go_where_they_belong() -> None:
    def value(name: str, v: str, source: ConfigSource, *syn: tuple[ConfigSource, str]) -> ConfigValue:
        return ConfigValue(name, v, source, synonyms=tuple(syn))

    rate = "leader.replication.throttled.rate"
    brokers = {
        1: ConfigDescription(
            {rate: value(rate, "10", ConfigSource.DYNAMIC_BROKER, (ConfigSource.DYNAMIC_DEFAULT_BROKER, "5"))}
        ),
        2: ConfigDescription({rate: value(rate, "5", ConfigSource.DYNAMIC_DEFAULT_BROKER)}),
        3: ConfigDescription({rate: value(rate, "9", ConfigSource.STATIC_BROKER)}),
    }
    key = "follower.replication.throttled.replicas"
    topics = {"t": ConfigDescription({key: value(key, "0:1", ConfigSource.DYNAMIC_TOPIC)})}
    snapshot = _build(broker_configs=brokers, topic_configs=topics)
    assert snapshot.broker_configs == {1: {rate: "10"}, 2: {}, 3: {}}  # type: ignore[attr-defined]
    assert snapshot.cluster_configs == {rate: "5"}  # type: ignore[attr-defined]
    assert snapshot.topics["t"].configs == {key: "0:1"}  # type: ignore[attr-defined]
    assert snapshot.topics["t"].topic_id == "id-t"  # type: ignore[attr-defined]


def test_log_dirs_prefer_the_current_replica_over_a_future_one() -> None:
    result, topic, part = _log_dir_classes()
    results = [
        result(
            error_code=0,
            log_dir="/a",
            topics=[
                topic(name="t", partitions=[part(partition_index=0, partition_size=5, is_future_key=True)])
            ],
        ),
        result(
            error_code=0,
            log_dir="/b",
            topics=[
                topic(
                    name="t",
                    partitions=[
                        part(partition_index=0, partition_size=50, offset_lag=2),
                        part(partition_index=9, partition_size=1),
                    ],
                )
            ],
        ),
        result(error_code=56, log_dir="/broken", topics=[]),  # KAFKA_STORAGE_ERROR (56): an offline dir
    ]
    replicas, futures, dirs = log_dir_listing(1, results, [TopicPartition("t", 0)])
    assert replicas == {(TopicPartition("t", 0), 1): ReplicaLogDir(50, 2, "/b", False)}
    assert futures == {(TopicPartition("t", 0), 1): "/a"}
    assert dirs == ["/a", "/b"]
    everything, _, _ = log_dir_listing(1, results)
    assert set(everything) == {(TopicPartition("t", 0), 1), (TopicPartition("t", 9), 1)}


def _log_dir_classes() -> tuple[Any, Any, Any]:
    """kafka-python's DescribeLogDirs result classes: what the adapter reads, field by field."""
    result = DescribeLogDirsResponse.DescribeLogDirsResult
    return result, result.DescribeLogDirsTopic, result.DescribeLogDirsTopic.DescribeLogDirsPartition


def test_log_dir_volumes_are_the_total_and_usable_bytes_each_dir_said() -> None:
    """KIP-827 (DescribeLogDirs v4, Kafka 3.3): each dir's volume; -1 (an older broker, or a field it
    cannot fill) and a dir in error are not known, so not judged."""
    result, _, _ = _log_dir_classes()
    results = [
        result(error_code=0, log_dir="/a", topics=[], total_bytes=1000, usable_bytes=250),
        result(error_code=0, log_dir="/b", topics=[], total_bytes=-1, usable_bytes=-1),
        result(error_code=56, log_dir="/broken", topics=[], total_bytes=1000, usable_bytes=0),
    ]
    assert log_dir_volumes(3, results) == {(3, "/a"): (1000, 250)}


def test_offline_log_dirs_are_the_dirs_answered_with_a_storage_error() -> None:
    """ReplicaManager.describeLogDirs answers a failed dir KAFKA_STORAGE_ERROR (56), with no partitions;
    another error (a dir that could not be described for another reason) is not a failed dir."""
    result, _, _ = _log_dir_classes()
    results = [
        result(error_code=0, log_dir="/a", topics=[]),
        result(error_code=56, log_dir="/broken", topics=[]),
        result(error_code=57, log_dir="/missing", topics=[]),
    ]
    assert offline_log_dirs(3, results) == {(3, "/broken")}

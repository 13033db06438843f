"""A log dir that fails (sim/log_dirs.py has Kafka's rules): its replicas offline, out of the ISR, their
leadership moved; DescribeLogDirs answers it KAFKA_STORAGE_ERROR; nothing is created or moved into it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from reassignd.model import TopicPartition
from reassignd.sim import KafkaError, SimCluster, load_scenario
from reassignd.sim import errors as e
from reassignd.sim.admin import SimClusterAdmin
from reassignd.sim.protocol_metadata import topic_row

MB = 1_000_000
MODES = {"kraft": {"version": "4.1", "mode": "kraft"}, "zookeeper": {"version": "3.9", "mode": "zookeeper"}}


def _cluster(mode: str = "kraft", **overrides: Any) -> SimCluster:
    """Broker 1 has /a (its first dir: KRaft's metadata log dir) and /b; t-0 and t-1 live in /b on it
    (t-0 led by it), t-2 in /a; `solo` has one replica, in /b."""
    scenario: dict[str, Any] = {
        "kafka": MODES[mode],
        "brokers": [{"id": 1, "log_dirs": ["/a", "/b"]}, {"id": 2}, {"id": 3}, {"id": 4}],
        "topics": [
            {
                "name": "t",
                "assignment": [[1, 2, 3], [2, 1, 3], [1, 3, 2]],
                "partition_bytes": 10 * MB,
                "produce_bytes_per_sec": 1000.0,
                "log_dirs": [["/b", "any", "any"], ["any", "/b", "any"], ["/a", "any", "any"]],
            },
            {"name": "solo", "assignment": [[1]], "partition_bytes": MB, "log_dirs": [["/b"]]},
        ],
    }
    scenario.update(overrides)
    return SimCluster.from_scenario(load_scenario(scenario))


def _state(sim: SimCluster, topic: str, index: int) -> tuple[list[int], list[int], int]:
    p = sim.topics[topic].partitions[index]
    return list(p.replicas), list(p.isr), p.leader


@pytest.mark.parametrize("mode", list(MODES))
def test_a_failed_dir_takes_its_replicas_out_of_the_isr_and_moves_their_leadership(mode: str) -> None:
    sim = _cluster(mode)
    sim.fail_log_dir(1, "/b")
    assert sim.brokers[1].online  # another dir is live, and /b is not the metadata dir
    assert _state(sim, "t", 0) == ([1, 2, 3], [2, 3], 2)
    assert _state(sim, "t", 1) == ([2, 1, 3], [2, 3], 2)
    assert _state(sim, "t", 2) == ([1, 3, 2], [1, 3, 2], 1)  # in /a: untouched
    solo = sim.topics["solo"].partitions[0]
    assert solo.leader == -1 and solo.isr == [1]  # no other replica: offline, its last ISR member kept
    sim.advance(600)
    assert _state(sim, "t", 0)[1:] == ([2, 3], 2)  # the replica in /b never catches up


@pytest.mark.parametrize("mode", list(MODES))
def test_a_replica_in_a_failed_dir_is_never_elected_not_even_uncleanly(mode: str) -> None:
    """KRaft: ReplicationControlManager's LeaderAcceptor (ClusterControlManager.hasOnlineDir); ZooKeeper: the
    controller holds the replica offline (KafkaController.onReplicasBecomeOffline). Broker 1 is up, but its
    replica of t-0 is in the failed dir: when the ISR's last broker stops, t-0 has no leader."""
    sim = _cluster(mode)
    sim.incremental_alter_configs(2, "t", [("unclean.leader.election.enable", 0, "true")])
    sim.fail_log_dir(1, "/b")
    sim.stop_broker(2)
    sim.stop_broker(3)
    assert sim.topics["t"].partitions[0].leader == -1
    assert sim.topics["t"].partitions[2].leader == 1  # its replica on broker 1 is in /a


def test_describe_log_dirs_answers_a_failed_dir_with_a_storage_error_and_no_partitions() -> None:
    sim = _cluster()
    sim.fail_log_dir(1, "/b")
    a, b = sim.log_dir_descriptions(1)
    assert (b.path, b.error_code, b.replicas, b.total_bytes, b.usable_bytes) == ("/b", 56, (), -1, -1)
    assert (a.error_code, [(r.topic, r.partition) for r in a.replicas]) == (0, [("t", 2)])
    assert [path for path, _ in sim.describe_log_dirs(1)] == ["/a"]  # as the cluster adapter reads it


def test_metadata_lists_the_replicas_of_a_failed_dir_as_offline() -> None:
    """KRaftMetadataCache.getOfflineReplicas: a replica whose dir is offline is an offline replica."""
    sim = _cluster()
    sim.fail_log_dir(1, "/b")
    online = {b for b, broker in sim.brokers.items() if broker.online}
    row = topic_row(sim.topics["t"], online, 12, sim.published, replica_online=sim.replica_online)
    assert [list(p.offline) for p in row.partitions] == [[1], [1], []]


def test_the_cluster_adapter_reads_the_failed_dir_and_no_replica_in_it() -> None:
    sim = _cluster()
    sim.fail_log_dir(1, "/b")
    snapshot = asyncio.run(SimClusterAdmin(sim).snapshot(with_sizes=True))
    assert snapshot.offline_dirs == frozenset({(1, "/b")})
    assert (TopicPartition("t", 0), 1) not in snapshot.replica_dirs
    assert snapshot.replica_dirs[(TopicPartition("t", 2), 1)] == "/a"
    assert snapshot.broker_dirs[1] == ("/a",)
    assert asyncio.run(SimClusterAdmin(sim).snapshot()).offline_dirs == frozenset()  # DescribeLogDirs only


@pytest.mark.parametrize(("mode", "halts"), [("kraft", True), ("zookeeper", False)])
def test_the_metadata_log_dir_halts_a_kraft_broker(mode: str, halts: bool) -> None:
    """ReplicaManager.handleLogDirFailure: a KRaft broker halts when its metadata log dir (the first of
    log.dirs by default) fails; a ZooKeeper-mode broker goes on with /b."""
    sim = _cluster(mode)
    sim.fail_log_dir(1, "/a")
    assert sim.brokers[1].online is not halts
    assert not sim.brokers[1].log_dirs[0].online


@pytest.mark.parametrize("mode", list(MODES))
def test_the_last_live_dir_halts_the_broker(mode: str) -> None:
    """LogManager.handleLogDirFailure: no live dir left, the broker shuts down."""
    sim = _cluster(mode, brokers=[{"id": 1, "log_dirs": ["/b", "/a"]}, {"id": 2}, {"id": 3}])
    sim.fail_log_dir(1, "/a")
    assert sim.brokers[1].online
    sim.fail_log_dir(1, "/b")
    assert not sim.brokers[1].online


def test_nothing_moves_into_or_out_of_a_failed_dir() -> None:
    sim = _cluster()
    sim.fail_log_dir(1, "/b")
    with pytest.raises(KafkaError) as into:
        sim.alter_replica_log_dir(1, "t", 2, "/b")
    with pytest.raises(KafkaError) as out_of:
        sim.alter_replica_log_dir(1, "t", 0, "/a")
    assert (into.value.code, out_of.value.code) == (e.KAFKA_STORAGE_ERROR, e.KAFKA_STORAGE_ERROR)


def test_a_new_replica_goes_to_a_live_dir_and_one_made_for_the_failed_dir_never_completes() -> None:
    """LogManager.nextLogDirs picks among live dirs; a replica whose dir was chosen before the dir failed
    (AlterReplicaLogDirs' preferred dir) cannot be created there: its reassignment never completes."""
    sim = _cluster(
        topics=[
            {"name": "u", "assignment": [[2], [3]], "partition_bytes": MB},
            {"name": "v", "assignment": [[1]], "partition_bytes": MB, "log_dirs": [["/a"]]},
        ]
    )  # /b has fewer logs than /a: the dir a new replica would go to, were it live
    with pytest.raises(KafkaError):
        sim.alter_replica_log_dir(1, "u", 1, "/b")  # REPLICA_NOT_AVAILABLE, /b remembered
    sim.fail_log_dir(1, "/b")
    sim.alter_partition_reassignment("u", 0, [2, 1])
    sim.alter_partition_reassignment("u", 1, [3, 1])
    sim.advance(3600)
    assert _state(sim, "u", 0) == ([2, 1], [2, 1], 2)  # created in /a, caught up, done
    assert sim.dir_of(sim.topics["u"].partitions[0], 1) == "/a"
    assert sim.topics["u"].partitions[1].is_reassigning  # placed in /b: offline, never in the ISR
    assert _state(sim, "u", 1)[1] == [3]


@pytest.mark.parametrize("mode", list(MODES))
def test_a_restored_dir_catches_up_and_leads_again_where_nobody_else_can(mode: str) -> None:
    sim = _cluster(mode)
    sim.fail_log_dir(1, "/b")
    sim.advance(60)
    sim.restore_log_dir(1, "/b")
    assert sim.topics["solo"].partitions[0].leader == 1
    sim.advance(600)
    assert sorted(_state(sim, "t", 0)[1]) == [1, 2, 3]
    assert [d.error_code for d in sim.log_dir_descriptions(1)] == [0, 0]


@pytest.mark.parametrize("mode", list(MODES))
def test_a_reassignment_moving_the_replica_off_the_failed_dir_completes(mode: str) -> None:
    """What the log_dir_offline fix does: the replica in the failed dir replaced by another broker's."""
    sim = _cluster(mode)
    assert sim._logs_in_dir[(1, "/b")] == 3
    sim.fail_log_dir(1, "/b")
    sim.alter_partition_reassignment("t", 0, [4, 2, 3])
    sim.advance(3600)
    assert _state(sim, "t", 0)[0] == [4, 2, 3] and sorted(_state(sim, "t", 0)[1]) == [2, 3, 4]
    assert sim._logs_in_dir[(1, "/b")] == 2  # t-1 and solo-0 left in it; t-0 gone from the books

"""Rules a real Kafka 4.4 cluster settled (tests/realkafka/test_fidelity.py), on the pure model.

docs/simulator.md, "Settled against real Kafka", lists each with its Kafka source:
- throttle quotas let data through grant by grant (quota.py): a follower or alter-log-dirs rate of 0
  trickles, a leader rate of 0 stops a move, and in-sync replication of throttled partitions uses the quota;
- an in-sync follower slower than its leader's log leaves the ISR after replica.lag.time.max.ms;
- acks=all producers are refused while the ISR is below min.insync.replicas: the log stops growing.
"""

from __future__ import annotations

from typing import Any

import pytest

from reassignd.sim import SimCluster, load_scenario

MB = 1_000_000
MIB = 1024 * 1024


def _cluster(
    *,
    size: float = 5 * MIB,
    produce: float = 0.0,
    acks: str = "all",
    assignment: list[list[int]] | None = None,
    topic_configs: dict[str, str] | None = None,
    broker_configs: dict[str, dict[str, str]] | None = None,
    static: dict[str, str] | None = None,
    log_dirs: bool = False,
) -> SimCluster:
    assignment = assignment or [[1, 2, 3]]
    dirs = {"log_dirs": ["/data/a", "/data/b"]} if log_dirs else {}
    scenario: dict[str, Any] = {
        "brokers": [{"id": i, **dirs} for i in range(1, 6)],
        "topics": [
            {
                "name": "t",
                "partitions": len(assignment),
                "replication_factor": len(assignment[0]),
                "partition_bytes": size,
                "produce_bytes_per_sec": produce,
                "produce_acks": acks,
                "assignment": assignment,
                "configs": topic_configs or {},
            }
        ],
        "broker_configs": broker_configs or {},
        "static_broker_configs": static or {},
    }
    return SimCluster.from_scenario(load_scenario(scenario))


def _sizes_until_done(sim: SimCluster, broker: int, seconds: float, step: float = 0.5) -> list[int]:
    """The replica's size on `broker` every `step` seconds, until its move is done or time runs out."""
    p = sim.topics["t"].partitions[0]
    seen = []
    while sim.now < seconds and p.is_reassigning:
        seen.append(p.position(broker))
        sim.advance(step)
    return seen


# ---------------------------------------------------------------------------------------------------------
# Throttle quotas, grant by grant


def test_a_follower_rate_of_zero_lets_one_fetch_through_each_time_the_window_empties() -> None:
    sim = _cluster(
        topic_configs={"follower.replication.throttled.replicas": "0:4"},
        broker_configs={"4": {"follower.replication.throttled.rate": "0"}},
    )
    sim.alter_partition_reassignment("t", 0, [4, 2, 3])
    sim.advance(0.0)
    p = sim.topics["t"].partitions[0]
    assert p.position(4) == MIB  # the first fetch finds the window empty
    sim.advance(10.9)
    assert p.position(4) == MIB
    sim.advance(0.2)
    assert p.position(4) == 2 * MIB  # 11 samples of 1 s after the last record
    sim.advance(40.0)
    assert not p.is_reassigning and p.replicas == [4, 2, 3]
    assert sim.fetch_rates() == []


def test_a_leader_rate_of_zero_stops_the_move() -> None:
    sim = _cluster(
        topic_configs={"leader.replication.throttled.replicas": "*"},
        broker_configs={"1": {"leader.replication.throttled.rate": "0"}},
    )
    sim.alter_partition_reassignment("t", 0, [4, 2, 3])
    sim.advance(600.0)
    p = sim.topics["t"].partitions[0]
    assert p.is_reassigning and p.position(4) == 0
    ((row),) = sim.fetch_limits()
    assert (row["resource"], row["broker"], row["rate"]) == ("leader_throttle", 1, 0.0)
    assert sim.next_event_time() is None


@pytest.mark.parametrize(
    ("produce", "rate"),
    [
        # two in-sync followers record 2 x 0.5 MB/s on the leader's 3 MB/s: 2 MB/s left for the new one
        (0.5 * MB, 2 * MB),
        # they record 4 MB/s: more than the quota, which never opens for the new replica
        (2 * MB, 0.0),
    ],
)
def test_in_sync_replication_of_a_throttled_partition_uses_the_leader_quota(
    produce: float, rate: float
) -> None:
    sim = _cluster(
        size=30 * MB,
        produce=produce,
        acks="1",
        topic_configs={"leader.replication.throttled.replicas": "*"},
        broker_configs={"1": {"leader.replication.throttled.rate": str(3 * MB)}},
    )
    sim.alter_partition_reassignment("t", 0, [4, 2, 3])
    assert sim.fetch_rates() == [("t", 0, 4, 1, pytest.approx(rate, abs=200))]


def test_in_sync_replication_uses_the_follower_quota_of_the_broker_it_names() -> None:
    sim = _cluster(
        size=30 * MB,
        produce=0.5 * MB,
        acks="1",
        assignment=[[1, 2, 3], [2, 4, 3]],
        topic_configs={"follower.replication.throttled.replicas": "0:4,1:4"},
        broker_configs={"4": {"follower.replication.throttled.rate": str(3 * MB)}},
    )
    sim.alter_partition_reassignment("t", 0, [4, 2, 3])
    # broker 4 follows partition 1 in sync (0.5 MB/s recorded): 2.5 MB/s left for partition 0's copy
    assert sim.fetch_rates() == [("t", 0, 4, 1, pytest.approx(2.5 * MB))]


def test_a_copy_between_log_dirs_at_rate_zero_trickles_too() -> None:
    sim = _cluster(
        size=3 * MIB,
        log_dirs=True,
        broker_configs={"1": {"replica.alter.log.dirs.io.max.bytes.per.second": "0"}},
    )
    current = sim.dir_of(sim.topics["t"].partitions[0], 1)
    other = "/data/b" if current == "/data/a" else "/data/a"
    sim.alter_replica_log_dir(1, "t", 0, other)
    sim.advance(0.0)
    ((_, rows_a), (_, rows_b)) = sim.describe_log_dirs(1, [("t", 0)])
    future = next(r for r in rows_a + rows_b if r[4])
    assert future[2] == MIB
    sim.advance(21.9)
    assert sim.dir_of(sim.topics["t"].partitions[0], 1) == current
    sim.advance(0.2)  # the third grant, at 22 s, completes the copy
    assert sim.dir_of(sim.topics["t"].partitions[0], 1) == other


def test_a_quota_keeps_what_went_through_for_its_window_when_its_rate_drops() -> None:
    sim = _cluster(
        size=100 * MB,
        topic_configs={"follower.replication.throttled.replicas": "0:4"},
        broker_configs={"4": {"follower.replication.throttled.rate": str(10 * MB)}},
    )
    sim.alter_partition_reassignment("t", 0, [4, 2, 3])
    sim.advance(5.0)
    p = sim.topics["t"].partitions[0]
    # a fresh window counts one sample long: 10 MB at once pay for the first second, then 10 MB/s
    assert p.position(4) == pytest.approx(50 * MB, abs=MIB)
    sim.incremental_alter_configs(4, "4", [("follower.replication.throttled.rate", 0, "0")], False)
    sim.advance(0.0)
    stopped = p.position(4)
    sim.advance(10.5)  # what went through in the last 11 s keeps the measured rate above 0
    assert p.position(4) == stopped
    sim.advance(1.0)  # the last sample written before the change has expired: one fetch
    assert p.position(4) == stopped + MIB


# ---------------------------------------------------------------------------------------------------------
# In-sync followers that fall behind


def test_a_follower_slower_than_the_log_leaves_the_isr_after_replica_lag_time_max_ms() -> None:
    sim = _cluster(size=10 * MB, produce=MB, acks="1", static={"replica.lag.time.max.ms": "10000"})
    p = sim.topics["t"].partitions[0]
    sim.set_network(3, 0.4 * MB, None)  # it can fetch 0.4 MB/s of the 1 MB/s its leader takes
    sim.advance(9.9)
    assert p.isr == [1, 2, 3]
    sim.advance(0.2)
    assert p.isr == [1, 2]
    assert p.position(3) == pytest.approx(p.log_end - 0.6 * MB * 10, abs=0.1 * MB)
    sim.set_network(3, 125 * MB, None)
    sim.advance(1.0)
    assert p.isr == [1, 2, 3], "fast again, it catches up and rejoins"


def test_a_follower_that_is_fast_again_in_time_stays_in_the_isr() -> None:
    sim = _cluster(size=10 * MB, produce=MB, acks="1", static={"replica.lag.time.max.ms": "10000"})
    p = sim.topics["t"].partitions[0]
    sim.set_network(3, 0.4 * MB, None)
    sim.advance(5.0)
    sim.set_network(3, 125 * MB, None)
    sim.advance(60.0)
    assert p.isr == [1, 2, 3]


# ---------------------------------------------------------------------------------------------------------
# acks=all below min.insync.replicas


@pytest.mark.parametrize(("acks", "grows"), [("all", False), ("1", True)])
def test_acks_all_producers_are_refused_below_min_insync_replicas(acks: str, grows: bool) -> None:
    sim = _cluster(
        size=10 * MB,
        produce=MB,
        acks=acks,
        assignment=[[1, 2]],
        topic_configs={"min.insync.replicas": "2"},
    )
    p = sim.topics["t"].partitions[0]
    sim.advance(1.0)
    assert p.log_end == 11 * MB
    sim.stop_broker(2)
    sim.advance(5.0)
    assert p.log_end == (16 * MB if grows else 11 * MB)
    sim.start_broker(2)
    sim.advance(5.0)
    assert p.isr == [1, 2]
    assert p.log_end > (16 * MB if grows else 11 * MB), "back to min.insync.replicas, it grows again"


def test_a_slow_follower_dropped_below_min_insync_stops_acks_all_writes_until_it_is_back() -> None:
    sim = _cluster(
        size=10 * MB,
        produce=MB,
        assignment=[[1, 2]],
        topic_configs={"min.insync.replicas": "2"},
        static={"replica.lag.time.max.ms": "4000"},
    )
    p = sim.topics["t"].partitions[0]
    sim.set_network(2, 0.5 * MB, None)
    sim.advance(4.1)
    assert p.isr == [1]
    stopped_at = p.log_end
    # refused writes: the log holds still, so the slow follower catches up at its 0.5 MB/s and rejoins
    sim.advance(2.0 / 0.5 - 0.2)
    assert p.log_end == stopped_at and p.isr == [1]
    sim.advance(0.4)
    assert p.isr == [1, 2]
    sim.advance(1.0)
    assert p.log_end > stopped_at


def test_produce_acks_is_checked() -> None:
    with pytest.raises(ValueError, match="acks"):
        _cluster().set_produce_rate("t", 0, MB, acks="0")
    with pytest.raises(ValueError, match="network"):
        _cluster().set_network(1, -1.0, None)


def test_kraft_metadata_names_a_random_unfenced_broker_as_the_controller() -> None:
    """KRaft: clients cannot reach the quorum, so Metadata and DescribeCluster name a random live broker
    (KafkaApis.handleTopicMetadataRequest, KRaftMetadataCache.getRandomAliveBrokerId; measured on 4.4 in
    tests/realkafka/test_controller_routing.py); ZooKeeper mode names the controller."""
    from reassignd.sim.kafka_version import KafkaVersion
    from reassignd.sim.model import SimCluster
    from reassignd.sim.scenario import load_scenario

    scenario = load_scenario({"brokers": [{"id": i} for i in range(1, 5)], "topics": []})
    kraft = SimCluster.from_scenario(scenario, seed=3)
    kraft.stop_broker(2)
    named = {kraft.advertised_controller() for _ in range(200)}
    assert named == {1, 3, 4}
    zookeeper = SimCluster.from_scenario(scenario, seed=3, kafka=KafkaVersion("3.9", "zookeeper"))
    assert {zookeeper.advertised_controller() for _ in range(50)} == {zookeeper.controller_id}

"""Replication and reassignment semantics of the simulated cluster, checked in virtual time."""

from __future__ import annotations

import pytest

from reassignd.sim import SimCluster, load_scenario

MB = 1_000_000
MIB = 1024 * 1024  # replica.fetch.max.bytes: what one fetch brings


def _cluster(
    *,
    brokers: int = 6,
    size: int = 100 * MB,
    produce: float = 0.0,
    assignment: list[list[int]] | None = None,
    topic_configs: dict[str, str] | None = None,
    cluster_configs: dict[str, str] | None = None,
) -> SimCluster:
    assignment = assignment or [[1, 2, 3]]
    scenario = load_scenario(
        {
            "brokers": [{"id": i} for i in range(1, brokers + 1)],
            "topics": [
                {
                    "name": "t",
                    "partitions": len(assignment),
                    "replication_factor": len(assignment[0]),
                    "partition_bytes": size,
                    "produce_bytes_per_sec": produce,
                    "assignment": assignment,
                    "configs": topic_configs or {},
                }
            ],
            "cluster_broker_configs": cluster_configs or {},
        }
    )
    return SimCluster.from_scenario(scenario)


def _run_until_done(sim: SimCluster, step: float = 0.01, limit: float = 10_000.0) -> float:
    while sim.list_partition_reassignments(None):
        sim.advance(step)
        assert sim.now < limit, "reassignment never finished"
    return sim.now


@pytest.mark.parametrize(
    ("size", "throttle", "produce"),
    [
        (100 * MB, 10 * MB, 0.0),
        (100 * MB, 10 * MB, 2 * MB),
        (50 * MB, 3 * MB, 2.5 * MB),
        (10 * MB, 1 * MB, 0.1),
    ],
)
def test_one_move_finishes_at_size_over_throttle_minus_produce(
    size: int, throttle: float, produce: float
) -> None:
    sim = _cluster(
        size=size,
        produce=produce,
        topic_configs={"follower.replication.throttled.replicas": "*"},
        cluster_configs={"follower.replication.throttled.rate": str(int(throttle))},
    )
    sim.alter_partition_reassignment("t", 0, [4, 2, 3])
    expected = size / (throttle - produce)
    finished = _run_until_done(sim, step=expected / 1000)
    # the quota lets whole fetches through (quota.py): up to one fetch's worth sooner
    assert finished == pytest.approx(expected, rel=0.02, abs=MIB / (throttle - produce))
    p = sim.topics["t"].partitions[0]
    assert p.replicas == [4, 2, 3]
    assert p.leader == 4  # the old leader 1 left; first of the target in the ISR (PartitionChangeBuilder)


@pytest.mark.parametrize(("throttle", "produce"), [(2 * MB, 2 * MB), (1 * MB, 2 * MB)])
def test_no_progress_when_throttle_does_not_exceed_produce(throttle: float, produce: float) -> None:
    sim = _cluster(
        size=10 * MB,
        produce=produce,
        topic_configs={"follower.replication.throttled.replicas": "0:4"},
        cluster_configs={"follower.replication.throttled.rate": str(int(throttle))},
    )
    sim.alter_partition_reassignment("t", 0, [4, 2, 3])
    p = sim.topics["t"].partitions[0]
    sim.advance(10)
    lag_before = p.log_end - p.position(4)
    sim.advance(10_000)
    assert p.adding == [4]
    assert 4 not in p.isr
    assert p.log_end - p.position(4) >= lag_before  # the lag never shrinks
    ((_, [(_, _, size, offset_lag, _)]),) = sim.describe_log_dirs(4, [("t", 0)])
    assert (p.log_end - size, offset_lag) == (p.log_end - p.position(4), 0)


def test_two_moves_into_one_follower_share_its_throttle() -> None:
    sim = _cluster(
        size=60 * MB,
        assignment=[[1, 2, 3], [2, 3, 1]],
        topic_configs={"follower.replication.throttled.replicas": "*"},
        cluster_configs={"follower.replication.throttled.rate": str(6 * MB)},
    )
    sim.alter_partition_reassignment("t", 0, [4, 2, 3])
    sim.alter_partition_reassignment("t", 1, [4, 3, 1])
    sim.advance(1.0)
    first, second = sim.topics["t"].partitions
    assert first.position(4) == second.position(4) == pytest.approx(3 * MB, abs=MIB)  # whole fetches
    assert [r[4] for r in sim.fetch_rates()] == [pytest.approx(3 * MB), pytest.approx(3 * MB)]
    assert sim.observed()["brokers"][3]["incoming"] == 2
    assert _run_until_done(sim, step=0.1) == pytest.approx(20.0, rel=0.02)  # 120 MB at 6 MB/s in total


def test_leader_throttle_is_shared_among_the_fetches_it_serves() -> None:
    sim = _cluster(
        size=40 * MB,
        assignment=[[1, 2, 3], [1, 3, 2]],
        topic_configs={"leader.replication.throttled.replicas": "0:1,1:1"},
        cluster_configs={"leader.replication.throttled.rate": str(4 * MB)},
    )
    sim.alter_partition_reassignment("t", 0, [1, 2, 4])
    sim.alter_partition_reassignment("t", 1, [1, 3, 5])
    sim.advance(1.0)
    first, second = sim.topics["t"].partitions
    # in the long run 2 MB/s each; at first the leader's window (always 11-12 s long, quota.py) lets 4 MB/s
    # x 11 s through at once, shared alike
    assert [r[4] for r in sim.fetch_rates()] == [
        pytest.approx(2 * MB, abs=100),
        pytest.approx(2 * MB, abs=100),
    ]
    assert first.position(4) == second.position(5)
    assert first.position(4) + second.position(5) == pytest.approx(4 * MB * 11.5, abs=3 * MB)
    assert sim.observed()["brokers"][0]["outgoing"] == 2


def test_unthrottled_move_is_limited_by_network_capacity_shared_by_fetches() -> None:
    scenario = load_scenario(
        {
            "brokers": [{"id": i, "network_in_bytes_per_sec": 10 * MB} for i in range(1, 5)],
            "topics": [
                {"name": "t", "partition_bytes": 100 * MB, "assignment": [[1, 2], [2, 3]]},
            ],
        }
    )
    sim = SimCluster.from_scenario(scenario)
    sim.alter_partition_reassignment("t", 0, [4, 2])
    sim.alter_partition_reassignment("t", 1, [4, 3])
    sim.advance(1.0)
    assert [p.position(4) for p in sim.topics["t"].partitions] == [5 * MB, 5 * MB]


def test_in_sync_replicas_are_never_throttled() -> None:
    sim = _cluster(
        size=10 * MB,
        produce=5 * MB,
        topic_configs={
            "follower.replication.throttled.replicas": "*",
            "leader.replication.throttled.replicas": "*",
        },
        cluster_configs={
            "follower.replication.throttled.rate": "1",
            "leader.replication.throttled.rate": "1",
        },
    )
    sim.advance(100)
    p = sim.topics["t"].partitions[0]
    assert p.isr == [1, 2, 3]
    assert p.position(3) == p.log_end == 10 * MB + 500 * MB


def test_replica_list_sequence_of_a_full_move_matches_kraft() -> None:
    sim = _cluster(
        size=10 * MB,
        topic_configs={"follower.replication.throttled.replicas": "0:4,0:5,0:6"},
        cluster_configs={"follower.replication.throttled.rate": str(MB)},
    )
    p = sim.topics["t"].partitions[0]
    sim.incremental_alter_configs(4, "5", [("follower.replication.throttled.rate", 0, str(2 * MB))], False)
    sim.incremental_alter_configs(4, "6", [("follower.replication.throttled.rate", 0, str(4 * MB))], False)
    sim.alter_partition_reassignment("t", 0, [4, 5, 6])
    states = [(list(p.replicas), list(p.isr), p.leader, list(p.adding), list(p.removing))]
    while p.is_reassigning:
        sim.advance(0.25)
        state = (list(p.replicas), list(p.isr), p.leader, list(p.adding), list(p.removing))
        if state != states[-1]:
            states.append(state)
    assert states == [
        ([4, 5, 6, 1, 2, 3], [1, 2, 3], 1, [4, 5, 6], [1, 2, 3]),
        ([4, 5, 6, 1, 2, 3], [1, 2, 3, 6], 1, [4, 5, 6], [1, 2, 3]),
        ([4, 5, 6, 1, 2, 3], [1, 2, 3, 6, 5], 1, [4, 5, 6], [1, 2, 3]),
        ([4, 5, 6], [6, 5, 4], 4, [], []),
    ]
    assert (p.leader_epoch, p.partition_epoch) == (1, 4)


def test_cancel_reverts_to_the_original_replicas() -> None:
    sim = _cluster(
        size=10 * MB,
        cluster_configs={"follower.replication.throttled.rate": str(MB)},
        topic_configs={"follower.replication.throttled.replicas": "*"},
    )
    p = sim.topics["t"].partitions[0]
    sim.alter_partition_reassignment("t", 0, [4, 5, 6])
    sim.advance(3)
    sim.alter_partition_reassignment("t", 0, None)
    assert (p.replicas, p.isr, p.leader, p.adding, p.removing) == ([1, 2, 3], [1, 2, 3], 1, [], [])
    assert sim.list_partition_reassignments(None) == []
    assert sim.describe_log_dirs(4, None) == [("/var/lib/kafka/data", [])]
    assert sim.observed()["brokers"][3]["incoming"] == 0


def test_stopped_target_broker_blocks_its_move_until_restarted_while_others_go_on() -> None:
    sim = _cluster(
        size=10 * MB,
        assignment=[[1, 2, 3], [1, 2, 3]],
        topic_configs={"follower.replication.throttled.replicas": "*"},
        cluster_configs={"follower.replication.throttled.rate": str(MB)},
    )
    first, second = sim.topics["t"].partitions
    sim.alter_partition_reassignment("t", 0, [4, 2, 3])
    sim.alter_partition_reassignment("t", 1, [5, 2, 3])
    sim.advance(2)
    sim.stop_broker(4)
    held = first.position(4)
    assert held == pytest.approx(2 * MB, abs=MIB)  # whole fetches
    sim.advance(20)
    assert second.replicas == [5, 2, 3] and not second.is_reassigning
    assert first.adding == [4] and first.position(4) == held
    sim.start_broker(4)
    restarted = sim.now
    done = _run_until_done(sim, step=0.05)
    assert first.replicas == [4, 2, 3] and 4 in first.isr
    assert done - restarted == pytest.approx((10 * MB - held) / MB, abs=MIB / MB + 0.1)


def test_leader_fails_over_to_the_first_live_isr_replica_in_replica_order() -> None:
    sim = _cluster(size=MB, produce=MB, assignment=[[1, 3, 2]])
    p = sim.topics["t"].partitions[0]
    sim.stop_broker(1)
    assert (p.leader, p.isr, p.leader_epoch) == (3, [3, 2], 1)
    sim.stop_broker(3)
    assert (p.leader, p.isr) == (2, [2])
    sim.stop_broker(2)  # KRaft without ELR never empties the ISR: the last member stays, no leader
    assert (p.leader, p.isr) == (-1, [2])
    frozen = p.log_end
    sim.advance(50)
    assert p.log_end == frozen  # no leader, nothing is produced
    sim.start_broker(1)  # not in the ISR: cannot lead without an unclean election
    assert p.leader == -1
    sim.start_broker(2)
    assert (p.leader, p.isr) == (2, [2])
    sim.advance(1)
    assert 1 in p.isr  # caught up from where it stopped (1 MB behind, fetching at network speed)


def test_restarted_replica_catches_up_from_where_it_stopped() -> None:
    sim = _cluster(
        size=10 * MB,
        produce=MB,
        topic_configs={"follower.replication.throttled.replicas": "*"},
        cluster_configs={"follower.replication.throttled.rate": str(3 * MB)},
    )
    p = sim.topics["t"].partitions[0]
    sim.stop_broker(3)
    sim.advance(10)
    assert p.position(3) == 10 * MB and p.log_end == 20 * MB
    sim.start_broker(3)
    sim.advance(4.5)  # 10 MB behind, closing at 3 - 1 = 2 MB/s: 5 s, in whole fetches
    assert 3 not in p.isr
    sim.advance(1.0)
    assert p.isr == [1, 2, 3]


def test_unclean_election_truncates_to_the_new_leader() -> None:
    sim = _cluster(size=MB, produce=MB)
    p = sim.topics["t"].partitions[0]
    sim.stop_broker(3)
    sim.advance(5)
    sim.stop_broker(2)
    sim.stop_broker(1)
    sim.start_broker(3)
    assert p.leader == -1
    results = sim.elect_leaders(1, [("t", 0)])
    assert results == {("t", 0): None}
    assert (p.leader, p.isr, p.log_end) == (3, [3], MB)


def test_under_min_isr_seconds_are_counted() -> None:
    sim = _cluster(size=MB, topic_configs={"min.insync.replicas": "2"})
    sim.stop_broker(2)
    sim.advance(5)
    sim.stop_broker(3)
    sim.advance(3)
    sim.start_broker(3)
    sim.advance(1)  # 3 catches up at once (nothing was produced) -> ISR [1, 3]
    under = sim.observed()["under_min_isr"]
    assert under == [{"topic": "t", "partition": 0, "seconds": pytest.approx(3.0), "under_now": False}]


def test_reorder_only_completes_at_once_and_shrink_completes_when_isr_allows() -> None:
    sim = _cluster(size=MB)
    p = sim.topics["t"].partitions[0]
    sim.alter_partition_reassignment("t", 0, [3, 1, 2])
    assert (p.replicas, p.adding, p.removing, p.leader) == ([3, 1, 2], [], [], 1)
    sim.alter_partition_reassignment("t", 0, [3, 2])
    assert (p.replicas, p.isr, p.leader) == ([3, 2], [2, 3], 3)


def test_new_target_for_a_moving_partition_starts_from_its_current_replicas() -> None:
    """KRaft changePartitionReassignment uses part.replicas (target + removing), not the original list."""
    sim = _cluster(
        size=10 * MB,
        cluster_configs={"follower.replication.throttled.rate": str(MB)},
        topic_configs={"follower.replication.throttled.replicas": "*"},
    )
    p = sim.topics["t"].partitions[0]
    sim.alter_partition_reassignment("t", 0, [4, 2, 3])
    sim.alter_partition_reassignment("t", 0, [5, 2, 3])
    assert (p.replicas, p.adding, p.removing) == ([5, 2, 3, 1, 4], [5], [1, 4])
    assert sim.list_partition_reassignments([("t", 0)]) == [("t", 0, [5, 2, 3, 1, 4], [5], [1, 4])]


def test_preferred_election() -> None:
    sim = _cluster(size=MB, assignment=[[1, 2, 3], [2, 3, 1]])
    assert sim.elect_leaders(0, [("t", 0)])[("t", 0)].code == 84  # ELECTION_NOT_NEEDED
    sim.stop_broker(1)
    assert sim.elect_leaders(0, [("t", 0)])[("t", 0)].code == 80  # PREFERRED_LEADER_NOT_AVAILABLE
    sim.start_broker(1)
    sim.advance(1)
    assert sim.elect_leaders(0, None) == {("t", 0): None}  # all partitions: not-needed ones are left out
    assert sim.topics["t"].partitions[0].leader == 1
    assert sim.elect_leaders(0, [("nope", 0)])[("nope", 0)].code == 3


def test_in_sync_followers_use_network_and_catching_up_fetches_share_the_rest() -> None:
    scenario = load_scenario(
        {
            "brokers": [{"id": i, "network_in_bytes_per_sec": 10 * MB} for i in range(1, 4)],
            "topics": [
                {
                    "name": "busy",
                    "partition_bytes": 0,
                    "produce_bytes_per_sec": 4 * MB,
                    "assignment": [[1, 3]],
                },
                {"name": "t", "partition_bytes": 60 * MB, "assignment": [[2]]},
            ],
        }
    )
    sim = SimCluster.from_scenario(scenario)
    sim.alter_partition_reassignment("t", 0, [2, 3])
    sim.advance(1.0)
    assert sim.topics["t"].partitions[0].position(3) == 6 * MB  # 10 MB/s in, 4 MB/s replicating "busy"
    sim.set_produce_rate("busy", None, 0)
    sim.advance(1.0)
    assert sim.topics["t"].partitions[0].position(3) == 16 * MB


@pytest.mark.parametrize("steps", [1, 7, 100])
def test_advancing_in_steps_or_at_once_gives_the_same_state(steps: int) -> None:
    def run(chunks: int) -> list[tuple[object, ...]]:
        sim = _cluster(
            size=30 * MB,
            produce=MB,
            assignment=[[1, 2, 3], [2, 3, 1], [3, 1, 2]],
            topic_configs={"follower.replication.throttled.replicas": "*"},
            cluster_configs={"follower.replication.throttled.rate": str(4 * MB)},
        )
        for index, target in enumerate(([4, 2, 3], [4, 5, 1], [6, 1, 2])):
            sim.alter_partition_reassignment("t", index, target)
        for _ in range(chunks):
            sim.advance(40.0 / chunks)
        return [
            (
                p.replicas,
                p.isr,
                p.leader,
                p.leader_epoch,
                p.partition_epoch,
                [p.position(b) for b in p.replicas],
            )
            for p in sim.topics["t"].partitions
        ]

    reference = run(1)
    assert run(steps) == reference


def test_rehearsal_helpers_jump_to_completion_and_expose_rates() -> None:
    sim = _cluster(
        size=20 * MB,
        produce=MB,
        topic_configs={"follower.replication.throttled.replicas": "*"},
        cluster_configs={"follower.replication.throttled.rate": str(5 * MB)},
    )
    sim.alter_partition_reassignment("t", 0, [4, 2, 3])
    assert sim.fetch_rates() == [("t", 0, 4, 1, 5 * MB)]  # the quota's long-run rate
    upcoming = sim.next_event_time()  # the quota shuts once its window is full, then opens again
    assert upcoming is not None and upcoming < 5.0
    assert not sim.advance_until_settled(4.0)
    assert sim.now == pytest.approx(4.0)
    assert sim.advance_until_settled(100.0)
    assert sim.now == pytest.approx(5.0, abs=MIB / (4 * MB))  # 20 MB at 5 - 1 MB/s, in whole fetches
    assert sim.fetch_rates() == [] and sim.next_event_time() is None


def test_min_isr_falls_back_to_the_leader_brokers_value() -> None:
    sim = _cluster(size=MB)
    sim.incremental_alter_configs(4, "1", [("min.insync.replicas", 0, "3")], False)
    sim.stop_broker(3)
    sim.advance(2)
    (entry,) = sim.observed()["under_min_isr"]
    assert entry["seconds"] == pytest.approx(2.0) and entry["under_now"]
    sim.incremental_alter_configs(4, "1", [("min.insync.replicas", 1, None)], False)
    sim.advance(5)
    (entry,) = sim.observed()["under_min_isr"]
    assert entry["seconds"] == pytest.approx(2.0) and not entry["under_now"]


def test_retarget_that_adds_and_removes_nothing_keeps_the_running_lists_as_kraft_does() -> None:
    """changePartitionReassignment sets targetAdding/targetRemoving only when non-empty: the old ones stay."""
    sim = _cluster(
        size=10 * MB,
        assignment=[[3, 4]],
        topic_configs={"follower.replication.throttled.replicas": "*"},
        cluster_configs={"follower.replication.throttled.rate": str(MB)},
    )
    p = sim.topics["t"].partitions[0]
    sim.alter_partition_reassignment("t", 0, [5])
    assert (p.replicas, p.adding, p.removing) == ([5, 3, 4], [5], [3, 4])
    sim.alter_partition_reassignment("t", 0, [3, 4, 5])
    assert (p.replicas, p.adding, p.removing) == ([3, 4, 5], [5], [3, 4])
    sim.advance(11)
    assert (p.replicas, p.isr, p.leader) == ([5], [5], 5)


def test_log_dirs_show_the_new_replica_growing_with_kafkas_offset_lag() -> None:
    """A replica's offset lag is against its own high watermark (ReplicaManager.getLogEndOffsetLag): 0;
    how far it is behind is the leader's size minus its size."""
    sim = _cluster(
        size=10 * MB,
        produce=MB,
        topic_configs={"follower.replication.throttled.replicas": "*"},
        cluster_configs={"follower.replication.throttled.rate": str(3 * MB)},
    )
    sim.alter_partition_reassignment("t", 0, [4, 2, 3])
    rows = []
    for _ in range(4):
        sim.advance(1)
        ((_, [(topic, partition, size, lag, future)]),) = sim.describe_log_dirs(4, None)
        ((_, [leader]),) = sim.describe_log_dirs(1, None)
        assert (topic, partition, future, lag) == ("t", 0, False, 0)
        rows.append((size, leader[2] - size))
    expected = [(3 * MB, 8 * MB), (6 * MB, 6 * MB), (9 * MB, 4 * MB), (12 * MB, 2 * MB)]
    assert rows == [(pytest.approx(s, abs=MIB), pytest.approx(b, abs=MIB)) for s, b in expected]  # fetches
    sim.advance(1.5)
    ((_, [(_, _, size, lag, future)]),) = sim.describe_log_dirs(4, None)
    assert (size, lag, future) == (pytest.approx(15.5 * MB, abs=MIB), 0, False)
    assert sim.describe_log_dirs(1, None)[0][1] == []  # the old replica is gone

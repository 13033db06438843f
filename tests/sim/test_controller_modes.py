"""The controller rules that differ between KRaft and ZooKeeper mode, side by side (docs/simulator.md).

Every expectation quotes the rule's source: KRaft ReplicationControlManager / PartitionReassignmentReplicas,
ZooKeeper-mode KafkaController.validateReplicas / ReplicaAssignment.reassignTo (apache/kafka 3.9).
"""

from __future__ import annotations

from typing import Any

import pytest

from reassignd.model import InvalidInputError
from reassignd.sim import KafkaError, SimCluster, load_scenario
from reassignd.sim import errors as e
from reassignd.sim.kafka_version import KafkaVersion, KafkaVersionError
from reassignd.sim.zk_controller import scala_int_set

MB = 1_000_000
KRAFT = {"version": "3.9", "mode": "kraft"}
ZK = {"version": "3.9", "mode": "zookeeper"}
MODES = [pytest.param(KRAFT, id="kraft"), pytest.param(ZK, id="zookeeper")]


def _cluster(kafka: dict[str, str], assignment: list[list[int]] | None = None, **topic: Any) -> SimCluster:
    return SimCluster.from_scenario(
        load_scenario(
            {
                "kafka": kafka,
                "brokers": [{"id": b} for b in range(1, 8)],
                "topics": [
                    {
                        "name": "t",
                        "assignment": assignment or [[3, 1, 2]],
                        "partition_bytes": 10 * MB,
                        **topic,
                    }
                ],
            }
        )
    )


def _error(call: Any) -> KafkaError:
    with pytest.raises(KafkaError) as info:
        call()
    return info.value


def _state(sim: SimCluster) -> tuple[list[int], list[int], list[int], list[int], int]:
    p = sim.topics["t"].partitions[0]
    return p.replicas, p.isr, p.adding, p.removing, p.leader


# ---------------------------------------------------------------------------------------------------------
# The scenario field


def test_default_is_the_newest_kraft_release() -> None:
    sim = _cluster({})
    assert sim.kafka == KafkaVersion("4.4", "kraft")
    assert not sim.kafka.zookeeper


@pytest.mark.parametrize(
    ("kafka", "field", "text"),
    [
        ({"version": "4.0", "mode": "zookeeper"}, "mode", "has no ZooKeeper mode"),
        ({"version": "2.8"}, "version", "unknown Kafka release '2.8'"),
        ({"version": 3.9}, "version", "must be a string"),
        ({"mode": "kraft-ish"}, "mode", "must be one of"),
        ({"release": "3.9"}, "release", "unknown field"),
    ],
)
def test_bad_kafka_field_names_the_problem(kafka: dict[str, Any], field: str, text: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        load_scenario({"kafka": kafka, "brokers": [{"id": 1}]})
    (problem,) = info.value.problems
    assert (problem.field, text in problem.message) == (field, True), problem


def test_a_patch_release_means_its_minor_release() -> None:
    scenario = load_scenario({"kafka": {"version": "3.9.1", "mode": "zookeeper"}, "brokers": [{"id": 1}]})
    assert scenario.kafka == KafkaVersion("3.9", "zookeeper")
    with pytest.raises(KafkaVersionError):
        KafkaVersion("4.1", "zookeeper")


# ---------------------------------------------------------------------------------------------------------
# Starting and replacing a reassignment


@pytest.mark.parametrize(
    ("kafka", "expected"),
    [
        # PartitionReassignmentReplicas: adding and removing sorted (TreeSet), replicas = target + removing
        (KRAFT, ([4, 5, 6, 1, 2, 3], [3, 1, 2], [4, 5, 6], [1, 2, 3], 3)),
        # ReplicaAssignment.reassignTo: (target ++ origin).distinct, in that order
        (ZK, ([4, 5, 6, 3, 1, 2], [3, 1, 2], [4, 5, 6], [3, 1, 2], 3)),
    ],
)
def test_a_new_reassignment_lists_replicas_in_each_controllers_order(
    kafka: dict[str, str], expected: tuple[Any, ...]
) -> None:
    sim = _cluster(kafka)
    sim.alter_partition_reassignment("t", 0, [4, 5, 6])
    assert _state(sim) == expected


def _in_flight_with_4_caught_up(kafka: dict[str, str]) -> SimCluster:
    """[3,1,2] -> [4,5,6] with broker 4 throttled less than 5 and 6, so 4 alone joins the ISR."""
    sim = _cluster(kafka, configs={"follower.replication.throttled.replicas": "0:5,0:6"})
    sim.incremental_alter_configs(4, "", [("follower.replication.throttled.rate", 0, "1")], False)
    sim.alter_partition_reassignment("t", 0, [4, 5, 6])
    sim.advance(1)  # 10 MB at 125 MB/s: 4 is in the ISR, 5 and 6 crawl at 1 byte/s
    assert sim.topics["t"].partitions[0].isr == [3, 1, 2, 4]
    return sim


def test_kraft_retarget_starts_from_the_current_replicas_and_keeps_copying_to_the_dropped_one() -> None:
    sim = _in_flight_with_4_caught_up(KRAFT)
    sim.alter_partition_reassignment("t", 0, [7, 5, 6])
    # target + (current - target) sorted; 4 stays a replica (removing) until the move completes
    assert _state(sim) == ([7, 5, 6, 1, 2, 3, 4], [3, 1, 2, 4], [7], [1, 2, 3, 4], 3)


def test_zookeeper_retarget_starts_from_the_original_replicas_and_stops_the_dropped_one() -> None:
    sim = _in_flight_with_4_caught_up(ZK)
    p = sim.topics["t"].partitions[0]
    epoch = p.leader_epoch
    sim.alter_partition_reassignment("t", 0, [7, 5, 6])
    # reassignTo from the origin [3, 1, 2]; 4 is no longer needed: OfflineReplica takes it out of the ISR
    assert _state(sim) == ([7, 5, 6, 3, 1, 2], [3, 1, 2], [7, 5, 6], [3, 1, 2], 3)
    assert 4 not in sim.describe_log_dirs(4, None)[0][1]  # and its log is deleted
    assert p.leader_epoch == epoch + 2  # the ISR shrink, then the A1 leader-epoch bump


def test_zookeeper_retarget_away_from_a_leading_adding_replica_leaves_the_partition_leaderless() -> None:
    """doRemoveReplicasFromIsr sets the leader to -1 when it removes the leader; nothing re-elects it until
    an election (ElectLeaders, or any broker failure: onReplicasBecomeOffline)."""
    sim = _cluster(ZK, configs={"follower.replication.throttled.replicas": "0:5,0:6"})
    sim.incremental_alter_configs(4, "", [("follower.replication.throttled.rate", 0, "1")], False)
    sim.alter_partition_reassignment("t", 0, [4, 5, 6])
    sim.advance(1)
    assert sim.elect_leaders(0, [("t", 0)]) == {("t", 0): None}  # 4 is preferred and in sync: it leads
    sim.stop_broker(2)
    sim.alter_partition_reassignment("t", 0, [7, 5, 6])
    assert _state(sim) == ([7, 5, 6, 3, 1, 2], [3, 1], [7, 5, 6], [3, 1, 2], -1)
    sim.start_broker(2)  # a start elects only OfflinePartitions; this one is still Online to the controller
    assert _state(sim)[4] == -1
    assert sim.elect_leaders(1, [("t", 0)]) == {("t", 0): None}  # unclean type, clean result: 3 is in sync
    assert _state(sim)[4] == 3


@pytest.mark.parametrize(
    ("kafka", "target", "message"),
    [
        (KRAFT, [], "The manual partition assignment includes an empty replica list."),
        (ZK, [], "Empty replica list specified in partition reassignment."),
        (KRAFT, [4, 4, 5], "The manual partition assignment includes the broker 4 more than once."),
        (ZK, [4, 4, 5], "Duplicate replica ids in partition reassignment replica list: ArrayBuffer(4, 4, 5)"),
        (
            KRAFT,
            [4, -1, 5],
            "The manual partition assignment includes broker -1, but no such broker is registered.",
        ),
        (ZK, [4, -1, 5], "Invalid broker id in replica list: ArrayBuffer(4, -1, 5)"),
        (
            KRAFT,
            [4, 99, 5],
            "The manual partition assignment includes broker 99, but no such broker is registered.",
        ),
        (
            ZK,
            [4, 99, 5],
            "Replica assignment has brokers that are not alive. Replica list: ArrayBuffer(4, 99, 5), "
            "live broker list: HashSet(5, 1, 6, 2, 7, 3, 4)",
        ),
    ],
)
def test_invalid_targets_get_each_controllers_message(
    kafka: dict[str, str], target: list[int], message: str
) -> None:
    sim = _cluster(kafka)
    error = _error(lambda: sim.alter_partition_reassignment("t", 0, target))
    assert (error.code, error.message) == (e.INVALID_REPLICA_ASSIGNMENT, message)
    assert _state(sim) == ([3, 1, 2], [3, 1, 2], [], [], 3)


def test_a_stopped_broker_as_a_new_replica_waits_in_kraft_and_is_refused_in_zookeeper_mode() -> None:
    kraft, zk = _cluster(KRAFT), _cluster(ZK)
    for sim in (kraft, zk):
        sim.stop_broker(5)
    kraft.alter_partition_reassignment("t", 0, [4, 5, 6])  # registered: accepted, 5 copies once started
    assert _state(kraft)[2] == [4, 5, 6]
    error = _error(lambda: zk.alter_partition_reassignment("t", 0, [4, 5, 6]))
    assert error.message == (
        "Replica assignment has brokers that are not alive. Replica list: ArrayBuffer(4, 5, 6), "
        "live broker list: HashSet(1, 6, 2, 7, 3, 4)"
    )
    zk.stop_broker(1)  # only the replicas a target adds must be alive: 1 may stay
    zk.alter_partition_reassignment("t", 0, [1, 4])
    assert _state(zk)[:4] == ([1, 4, 3, 2], [3, 2], [4], [3, 2])


def test_scala_sets_print_in_scalas_order() -> None:
    """Up to four: the live-broker HashMap's bucket order; beyond: immutable.HashSet's CHAMP order, by the
    5-bit fragments of Hashing.improve(id) (improve(1) = 0xff83cee7: slot 7; improve(5): slot 1)."""
    assert scala_int_set([3, 1, 2]) == "Set(1, 2, 3)"
    assert scala_int_set([17, 1]) == "Set(1, 17)"  # both in bucket 1 of 16: id order within it
    assert scala_int_set(range(1, 8)) == "HashSet(5, 1, 6, 2, 7, 3, 4)"


@pytest.mark.parametrize(
    ("kafka", "code", "message"),
    [
        (KRAFT, e.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find a topic named nope."),
        (ZK, e.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."),
    ],
)
def test_unknown_partition(kafka: dict[str, str], code: int, message: str) -> None:
    error = _error(lambda: _cluster(kafka).alter_partition_reassignment("nope", 0, [1]))
    assert (error.code, error.message) == (code, message)


# ---------------------------------------------------------------------------------------------------------
# Cancelling


@pytest.mark.parametrize(
    ("kafka", "replicas"),
    [
        (KRAFT, [1, 2, 3]),  # PartitionReassignmentRevert: the replicas minus adding, removing was sorted
        (ZK, [3, 1, 2]),  # reassignTo(origin): removing kept the original order
    ],
)
def test_cancel_returns_to_the_original_replicas(kafka: dict[str, str], replicas: list[int]) -> None:
    sim = _in_flight_with_4_caught_up(kafka)
    sim.alter_partition_reassignment("t", 0, None)
    assert _state(sim) == (replicas, [3, 1, 2], [], [], 3)
    error = _error(lambda: sim.alter_partition_reassignment("t", 0, None))
    assert error.code == e.NO_REASSIGNMENT_IN_PROGRESS


@pytest.mark.parametrize("kafka", MODES)
def test_cancel_after_a_new_target_keeps_the_order_of_the_last_list(kafka: dict[str, str]) -> None:
    """Neither controller remembers the original order: both revert to the current list minus the adding
    replicas (KRaft: PartitionReassignmentRevert, its adding list still the first move's [2] since the new
    target adds nothing; ZooKeeper: reassignTo(originReplicas))."""
    sim = _cluster(kafka, assignment=[[3, 4, 1]])
    sim.alter_partition_reassignment("t", 0, [2, 4, 1])
    sim.alter_partition_reassignment("t", 0, [2, 3, 1])
    sim.alter_partition_reassignment("t", 0, None)
    assert _state(sim)[:4] == ([3, 1, 4], [3, 4, 1], [], [])


def test_cancel_that_needs_an_unclean_election_is_refused_in_kraft_and_leaves_zookeeper_offline() -> None:
    """KRaft: PartitionReassignmentRevert needs an unclean election, refused unless enabled. ZooKeeper:
    the adding replicas leave the ISR one by one (never the last), and the reassignment election finds no
    original replica in sync: the partition is left without a leader, its ISR an ex-adding replica."""
    results: dict[str, Any] = {}
    for name, kafka in (("kraft", KRAFT), ("zookeeper", ZK)):
        sim = _cluster(kafka, assignment=[[1, 2]], configs={"follower.replication.throttled.replicas": "0:4"})
        sim.incremental_alter_configs(4, "", [("follower.replication.throttled.rate", 0, "1")], False)
        sim.alter_partition_reassignment("t", 0, [3, 4])
        sim.advance(1)  # 3 joins the ISR, 4 crawls
        sim.stop_broker(1)
        sim.stop_broker(2)  # the ISR is [3] alone: no original replica in sync
        try:
            sim.alter_partition_reassignment("t", 0, None)
            results[name] = _state(sim)
        except KafkaError as exc:
            results[name] = exc.code
    assert results == {"kraft": e.INVALID_REPLICA_ASSIGNMENT, "zookeeper": ([1, 2], [3], [], [], -1)}


# ---------------------------------------------------------------------------------------------------------
# Completion, elections and failures


@pytest.mark.parametrize("kafka", MODES)
def test_a_move_completes_alike_in_both_modes(kafka: dict[str, str]) -> None:
    sim = _cluster(kafka)
    sim.alter_partition_reassignment("t", 0, [4, 5, 6])
    sim.advance(5)
    assert _state(sim) == ([4, 5, 6], [4, 5, 6], [], [], 4)


@pytest.mark.parametrize(
    ("kafka", "message"),
    [
        (KRAFT, e.DEFAULT_MESSAGES[e.PREFERRED_LEADER_NOT_AVAILABLE]),
        (
            ZK,
            "Failed to elect leader for partition t-0 under strategy "
            "PreferredReplicaPartitionLeaderElectionStrategy",
        ),
    ],
)
def test_preferred_election_that_cannot_happen(kafka: dict[str, str], message: str) -> None:
    sim = _cluster(kafka)
    sim.stop_broker(3)
    sim.start_broker(3)  # 3 is back but out of sync: 1 leads, the preferred 3 cannot
    (error,) = sim.elect_leaders(0, [("t", 0)]).values()
    assert error is not None and (error.code, error.message) == (e.PREFERRED_LEADER_NOT_AVAILABLE, message)


@pytest.mark.parametrize(
    ("kafka", "message"),
    [(KRAFT, "No such topic as nope"), (ZK, "The partition does not exist.")],
)
def test_election_of_an_unknown_partition(kafka: dict[str, str], message: str) -> None:
    (error,) = _cluster(kafka).elect_leaders(0, [("nope", 0)]).values()
    assert error is not None and (error.code, error.message) == (e.UNKNOWN_TOPIC_OR_PARTITION, message)


@pytest.mark.parametrize("kafka", MODES)
def test_failover_and_the_last_in_sync_replica(kafka: dict[str, str]) -> None:
    sim = _cluster(kafka)
    sim.stop_broker(3)
    assert _state(sim)[1:] == ([1, 2], [], [], 1)
    sim.stop_broker(1)
    sim.stop_broker(2)
    assert _state(sim)[1:] == ([2], [], [], -1)  # the ISR is never emptied; no leader
    sim.start_broker(1)
    assert _state(sim)[4] == -1  # 1 is not in the ISR: no clean leader
    sim.start_broker(2)
    assert _state(sim)[1:] == ([2], [], [], 2)


def test_zookeeper_brokers_have_no_kraft_roles() -> None:
    zk, kraft = _cluster(ZK), _cluster(KRAFT)
    assert "process.roles" not in zk.brokers[1].static_configs
    assert kraft.brokers[1].static_configs["process.roles"] == "broker,controller"


def test_zookeeper_mode_queues_the_deletion_of_a_moving_topic_until_its_moves_end() -> None:
    """TopicDeletionManager: a topic with a reassignment in progress (or a replica on a stopped broker) is
    ineligible; it is deleted when that is over. Meanwhile its partitions cannot be reassigned, not even
    cancelled (maybeTriggerPartitionReassignment), nor elected (processReplicaLeaderElection)."""
    sim = _cluster(ZK)
    sim.alter_partition_reassignment("t", 0, [4, 5, 6])
    assert _error(lambda: sim.delete_topic("t")).code == e.REQUEST_TIMED_OUT
    assert "t" in sim.topics and sim.topics_to_delete == {"t"}
    cancel = _error(lambda: sim.alter_partition_reassignment("t", 0, None))
    assert (cancel.code, cancel.message) == (e.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
    (error,) = sim.elect_leaders(0, [("t", 0)]).values()
    assert error == KafkaError(e.INVALID_TOPIC_EXCEPTION, "The topic is being deleted")
    sim.advance(5)  # the move completes, the deletion resumes
    assert "t" not in sim.topics and sim.topics_to_delete == set()


def test_zookeeper_mode_waits_for_a_stopped_replica_before_deleting() -> None:
    kraft, zk = _cluster(KRAFT), _cluster(ZK)
    for sim in (kraft, zk):
        sim.stop_broker(2)
    kraft.delete_topic("t")
    assert "t" not in kraft.topics
    assert _error(lambda: zk.delete_topic("t")).code == e.REQUEST_TIMED_OUT
    zk.start_broker(2)
    assert "t" not in zk.topics


# ---------------------------------------------------------------------------------------------------------
# Config writes


TOPIC, BROKER = 2, 4
SET, APPEND, SUBTRACT = 0, 2, 3
THROTTLED = "leader.replication.throttled.replicas"


@pytest.mark.parametrize("kafka", MODES)
def test_subtracting_the_last_item_leaves_the_key_set_to_empty_in_both_modes(kafka: dict[str, str]) -> None:
    """ConfigurationControlManager (KRaft) and ConfigAdminManager.prepareIncrementalConfigs (ZooKeeper mode)
    both write the remaining list joined by ",": the empty string, not a deletion."""
    sim = _cluster(kafka)
    sim.incremental_alter_configs(TOPIC, "t", [(THROTTLED, SET, "0:1")])
    sim.incremental_alter_configs(TOPIC, "t", [(THROTTLED, SUBTRACT, "0:1")])
    assert sim.topics["t"].configs == {THROTTLED: ""}
    (entry,) = sim.describe_configs(TOPIC, "t", [THROTTLED])
    assert (entry.value, entry.source) == ("", 1)


@pytest.mark.parametrize(
    ("kafka", "ops", "code", "message"),
    [
        (
            KRAFT,
            [("retention.ms", APPEND, "1")],
            e.INVALID_CONFIG,
            "Can't APPEND to key retention.ms because its type is not LIST.",
        ),
        (
            ZK,
            [("retention.ms", APPEND, "1")],
            e.INVALID_CONFIG,
            "Config value append is not allowed for config key: retention.ms",
        ),
        (
            KRAFT,
            [("retention.ms", SET, "soon")],
            e.INVALID_CONFIG,
            "Invalid value soon for configuration retention.ms: Not a number of type LONG",
        ),
        (
            ZK,
            [("retention.ms", SET, "soon")],
            e.INVALID_CONFIG,
            "Invalid config value for resource ConfigResource(type=TOPIC, name='t'): "
            "Invalid value soon for configuration retention.ms: Not a number of type LONG",
        ),
        (KRAFT, [("no.such", SET, "1")], e.INVALID_CONFIG, "Unknown topic config name: no.such"),
        (ZK, [("no.such", SET, "1")], e.INVALID_CONFIG, "Unknown topic config name: no.such"),
        (ZK, [("no.such", APPEND, "1")], e.UNKNOWN_SERVER_ERROR, None),  # NoSuchElementException
    ],
)
def test_topic_config_errors_per_mode(kafka: dict[str, str], ops: list[Any], code: int, message: str) -> None:
    sim = _cluster(kafka)
    error = _error(lambda: sim.incremental_alter_configs(TOPIC, "t", ops))
    assert (error.code, error.message) == (code, message)
    assert sim.topics["t"].configs == {}


@pytest.mark.parametrize("kafka", MODES)
@pytest.mark.parametrize("value", ["-5", "abc"])
def test_invalid_broker_values_are_invalid_request_in_both_modes(kafka: dict[str, str], value: str) -> None:
    """The receiving broker validates BROKER resources in both modes (ConfigAdminManager.preprocess, 3.2+),
    wrapping the ConfigException as InvalidRequestException (KAFKA-13609)."""
    sim = _cluster(kafka)
    rate = "follower.replication.throttled.rate"
    error = _error(lambda: sim.incremental_alter_configs(BROKER, "2", [(rate, SET, value)]))
    reason = "Value must be at least 0" if value == "-5" else "Not a number of type LONG"
    assert (error.code, error.message) == (
        e.INVALID_REQUEST,
        f"Invalid value {value} for configuration {rate}: {reason}",
    )
    error = _error(lambda: sim.alter_configs(BROKER, "2", [(rate, value)]))
    assert error.code == e.INVALID_REQUEST


@pytest.mark.parametrize("kafka", MODES)
def test_legacy_alter_configs_replaces_the_whole_set(kafka: dict[str, str]) -> None:
    sim = _cluster(kafka)
    sim.incremental_alter_configs(TOPIC, "t", [("retention.ms", SET, "1000"), (THROTTLED, SET, "*")])
    sim.alter_configs(TOPIC, "t", [(THROTTLED, "0:1")])
    assert sim.topics["t"].configs == {THROTTLED: "0:1"}
    sim.alter_configs(BROKER, "2", [("leader.replication.throttled.rate", "10")], validate_only=True)
    assert sim.brokers[2].configs == {}
    for bad in ([(THROTTLED, None)], [(THROTTLED, "*"), (THROTTLED, "0:1")]):
        assert _error(lambda bad=bad: sim.alter_configs(TOPIC, "t", bad)).code == e.INVALID_REQUEST
    assert _error(lambda: sim.alter_configs(TOPIC, "nope", [])).code == e.UNKNOWN_TOPIC_OR_PARTITION

"""Admin operations of the simulated cluster: every error path and config operation, table-driven."""

from __future__ import annotations

from typing import Any

import pytest

from reassignd.sim import KafkaError, SimCluster, load_scenario
from reassignd.sim import errors as e

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
TOPIC, BROKER = 2, 4


@pytest.fixture
def sim() -> SimCluster:
    scenario = load_scenario(
        {
            "brokers": [{"id": i, "rack": f"/dc1/rack{i % 2}"} for i in range(1, 5)],
            "topics": [
                {"name": "t", "partitions": 2, "replication_factor": 3, "partition_bytes": 1000},
                {
                    "name": "u",
                    "partitions": 1,
                    "replication_factor": 1,
                    "configs": {"min.insync.replicas": "1"},
                },
            ],
            "broker_configs": {"1": {"leader.replication.throttled.rate": "1000"}},
            "cluster_broker_configs": {"follower.replication.throttled.rate": "2000"},
            "seed": 7,
        }
    )
    return SimCluster.from_scenario(scenario)


def _code(call: Any) -> int:
    with pytest.raises(KafkaError) as info:
        call()
    return info.value.code


@pytest.mark.parametrize(
    ("topic", "partition", "replicas", "code"),
    [
        ("nope", 0, [1, 2, 3], e.UNKNOWN_TOPIC_OR_PARTITION),
        ("t", 5, [1, 2, 3], e.UNKNOWN_TOPIC_OR_PARTITION),
        ("t", -1, [1, 2, 3], e.UNKNOWN_TOPIC_OR_PARTITION),
        ("t", 0, [], e.INVALID_REPLICA_ASSIGNMENT),
        ("t", 0, [1, 1, 2], e.INVALID_REPLICA_ASSIGNMENT),
        ("t", 0, [1, -2, 3], e.INVALID_REPLICA_ASSIGNMENT),
        ("t", 0, [1, 2, 99], e.INVALID_REPLICA_ASSIGNMENT),
        ("t", 0, None, e.NO_REASSIGNMENT_IN_PROGRESS),
    ],
)
def test_reassignment_errors(
    sim: SimCluster, topic: str, partition: int, replicas: list[int] | None, code: int
) -> None:
    before = [(p.replicas, p.isr, p.partition_epoch) for p in sim.topics["t"].partitions]
    assert _code(lambda: sim.alter_partition_reassignment(topic, partition, replicas)) == code
    assert [(p.replicas, p.isr, p.partition_epoch) for p in sim.topics["t"].partitions] == before


def test_reassignment_to_a_stopped_but_registered_broker_is_accepted(sim: SimCluster) -> None:
    sim.stop_broker(4)
    current = sim.topics["t"].partitions[0].replicas
    target = [4, *current[1:]] if 4 not in current else current[::-1]
    sim.alter_partition_reassignment("t", 0, target)


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("t", 1, 1, None, {}), e.TOPIC_ALREADY_EXISTS),
        (("bad name", 1, 1, None, {}), e.INVALID_TOPIC_EXCEPTION),
        (("..", 1, 1, None, {}), e.INVALID_TOPIC_EXCEPTION),
        (("x" * 250, 1, 1, None, {}), e.INVALID_TOPIC_EXCEPTION),
        (("n", 0, 1, None, {}), e.INVALID_PARTITIONS),
        (("n", 1, 0, None, {}), e.INVALID_REPLICATION_FACTOR),
        (("n", 1, 5, None, {}), e.INVALID_REPLICATION_FACTOR),
        (("n", -1, -1, {0: [1, 9]}, {}), e.INVALID_REPLICA_ASSIGNMENT),
        (("n", -1, -1, {0: [1, 2], 1: [3]}, {}), e.INVALID_REPLICA_ASSIGNMENT),
        (("n", -1, -1, {0: [1, 2], 2: [3, 4]}, {}), e.INVALID_REPLICA_ASSIGNMENT),
        (("n", -1, -1, {0: [1, 1]}, {}), e.INVALID_REPLICA_ASSIGNMENT),
        (("n", 2, -1, {0: [1, 2]}, {}), e.INVALID_REQUEST),
        (("n", 1, 1, None, {"no.such.config": "1"}), e.INVALID_CONFIG),
        (("n", 1, 1, None, {"min.insync.replicas": "zero"}), e.INVALID_CONFIG),
        (("n", 1, 1, None, {"min.insync.replicas": "0"}), e.INVALID_CONFIG),
        (("n", 1, 1, None, {"cleanup.policy": "shred"}), e.INVALID_CONFIG),
        (("n", 1, 1, None, {"follower.replication.throttled.replicas": "x:1"}), e.INVALID_CONFIG),
    ],
)
def test_create_topic_errors(sim: SimCluster, args: tuple[Any, ...], code: int) -> None:
    topics = set(sim.topics)
    assert _code(lambda: sim.create_topic(*args)) == code
    assert set(sim.topics) == topics


def test_create_topic_default_placement_is_rack_aware_and_deterministic(sim: SimCluster) -> None:
    topic = sim.create_topic("n", 8, 2, None, {"retention.ms": "1000"})
    racks = {b.id: b.rack for b in sim.brokers.values()}
    for p in topic.partitions:
        assert len({racks[r] for r in p.replicas}) == 2
        assert p.isr == p.replicas and p.leader == p.replicas[0]
    leaders = [p.leader for p in topic.partitions]
    assert sorted(set(leaders)) == [1, 2, 3, 4]
    again = SimCluster.from_scenario(load_scenario(_scenario_dict()), seed=7)
    assert [p.replicas for p in again.create_topic("n", 8, 2, None, {}).partitions] == [
        p.replicas for p in topic.partitions
    ]


def _scenario_dict() -> dict[str, Any]:
    return {
        "brokers": [{"id": i, "rack": f"/dc1/rack{i % 2}"} for i in range(1, 5)],
        "topics": [
            {"name": "t", "partitions": 2, "replication_factor": 3, "partition_bytes": 1000},
            {"name": "u", "partitions": 1, "replication_factor": 1, "configs": {"min.insync.replicas": "1"}},
        ],
        "seed": 7,
    }


def test_create_topic_validate_only_and_manual_assignment(sim: SimCluster) -> None:
    preview = sim.create_topic("n", -1, -1, {0: [1, 2], 1: [2, 3]}, {}, validate_only=True)
    assert [p.replicas for p in preview.partitions] == [[1, 2], [2, 3]]
    assert "n" not in sim.topics
    sim.stop_broker(3)
    created = sim.create_topic("n", -1, -1, {0: [1, 2], 1: [3, 2]}, {})
    assert (created.partitions[1].isr, created.partitions[1].leader) == ([2], 2)
    assert sim.topic_by_id(created.topic_id) is created
    sim.delete_topic("n")
    assert "n" not in sim.topics
    assert _code(lambda: sim.delete_topic("n")) == e.UNKNOWN_TOPIC_OR_PARTITION


R = "leader.replication.throttled.rate"
L = "leader.replication.throttled.replicas"


@pytest.mark.parametrize(
    ("resource", "name", "ops", "expected"),
    [
        (BROKER, "2", [(R, SET, "5000")], {R: "5000"}),
        (BROKER, "2", [(R, SET, " 5000 ")], {R: " 5000 "}),
        (BROKER, "2", [(R, SET, "0")], {R: "0"}),
        (BROKER, "1", [(R, DELETE, None)], {}),
        (BROKER, "1", [(R, DELETE, None), ("follower.replication.throttled.rate", DELETE, None)], {}),
        (BROKER, "", [(R, SET, "7")], {"follower.replication.throttled.rate": "2000", R: "7"}),
        (TOPIC, "t", [(L, SET, "0:1,1:2")], {L: "0:1,1:2"}),
        (TOPIC, "t", [(L, SET, "*")], {L: "*"}),
        (TOPIC, "t", [(L, SET, "")], {L: ""}),
        (TOPIC, "t", [(L, APPEND, "0:1,1:2")], {L: "0:1,1:2"}),
        (
            TOPIC,
            "u",
            [("cleanup.policy", APPEND, "compact")],
            {"min.insync.replicas": "1", "cleanup.policy": "delete,compact"},
        ),
        (
            TOPIC,
            "u",
            [("cleanup.policy", SUBTRACT, "delete")],
            {"min.insync.replicas": "1", "cleanup.policy": ""},
        ),
        (TOPIC, "u", [("min.insync.replicas", DELETE, None)], {}),
    ],
)
def test_config_ops(
    sim: SimCluster, resource: int, name: str, ops: list[Any], expected: dict[str, str]
) -> None:
    sim.incremental_alter_configs(resource, name, ops, False)
    if resource == TOPIC:
        assert sim.topics[name].configs == expected
    elif name == "":
        assert sim.cluster_configs == expected
    else:
        assert sim.brokers[int(name)].configs == expected


def test_append_and_subtract_on_throttled_replicas(sim: SimCluster) -> None:
    sim.incremental_alter_configs(TOPIC, "t", [(L, SET, "0:1")], False)
    sim.incremental_alter_configs(TOPIC, "t", [(L, APPEND, "0:1,1:2,0:3")], False)
    assert sim.topics["t"].configs[L] == "0:1,1:2,0:3"
    sim.incremental_alter_configs(TOPIC, "t", [(L, SUBTRACT, "1:2,9:9")], False)
    assert sim.topics["t"].configs[L] == "0:1,0:3"
    sim.incremental_alter_configs(TOPIC, "t", [(L, SUBTRACT, "0:1,0:3")], False)
    assert sim.topics["t"].configs[L] == ""  # KRaft keeps the key, empty
    sim.incremental_alter_configs(TOPIC, "t", [(L, APPEND, "1:1,1:1")], False)
    assert sim.topics["t"].configs[L] == "1:1"


@pytest.mark.parametrize(
    ("resource", "name", "ops", "code"),
    [
        # broker values are validated by the broker: INVALID_REQUEST (ConfigAdminManager, KAFKA-13609)
        (BROKER, "2", [(R, SET, "abc")], e.INVALID_REQUEST),
        (BROKER, "2", [(R, SET, "-1")], e.INVALID_REQUEST),
        (BROKER, "2", [(R, SET, "1.5")], e.INVALID_REQUEST),
        (BROKER, "2", [(R, SET, "9223372036854775808")], e.INVALID_REQUEST),
        (BROKER, "2", [("min.insync.replicas", SET, "0")], e.INVALID_REQUEST),
        (BROKER, "2", [(R, SET, None)], e.INVALID_REQUEST),
        # the rates are not KafkaConfig keys: prepareIncrementalConfigs fails to look them up
        (BROKER, "2", [(R, APPEND, "1")], e.UNKNOWN_SERVER_ERROR),
        (BROKER, "2", [(R, SUBTRACT, "1")], e.UNKNOWN_SERVER_ERROR),
        (BROKER, "2", [("min.insync.replicas", APPEND, "2")], e.INVALID_CONFIG),
        (BROKER, "2", [(R, 9, "1")], e.INVALID_REQUEST),
        (BROKER, "2", [("broker.rack", SET, "x")], e.INVALID_REQUEST),
        (BROKER, "2", [(R, SET, "1"), (R, DELETE, None)], e.INVALID_REQUEST),
        (BROKER, "9", [(R, SET, "1")], e.INVALID_REQUEST),
        (BROKER, "x", [(R, SET, "1")], e.INVALID_REQUEST),
        (TOPIC, "nope", [(L, SET, "*")], e.UNKNOWN_TOPIC_OR_PARTITION),
        (TOPIC, "t", [(L, SET, "0:1,*")], e.INVALID_CONFIG),
        (TOPIC, "t", [(L, SET, "a:b")], e.INVALID_CONFIG),
        (TOPIC, "t", [(L, SET, "0-1")], e.INVALID_CONFIG),
        (TOPIC, "t", [(L, APPEND, "x")], e.INVALID_CONFIG),
        (TOPIC, "t", [("min.insync.replicas", SET, "0")], e.INVALID_CONFIG),
        (TOPIC, "t", [("min.insync.replicas", APPEND, "2")], e.INVALID_CONFIG),
        (TOPIC, "t", [("unclean.leader.election.enable", SET, "yes")], e.INVALID_CONFIG),
        (TOPIC, "t", [(L, SET, "*"), ("retention.ms", SET, "soon")], e.INVALID_CONFIG),
        (7, "t", [(L, SET, "*")], e.INVALID_REQUEST),
    ],
)
def test_config_op_errors_change_nothing(
    sim: SimCluster, resource: int, name: str, ops: list[Any], code: int
) -> None:
    before = (dict(sim.topics["t"].configs), dict(sim.brokers[2].configs), dict(sim.cluster_configs))
    assert _code(lambda: sim.incremental_alter_configs(resource, name, ops, False)) == code
    assert (dict(sim.topics["t"].configs), dict(sim.brokers[2].configs), dict(sim.cluster_configs)) == before


def test_unknown_broker_keys_are_custom_configs_kafka_accepts_and_hides(sim: SimCluster) -> None:
    """DynamicConfig.Broker.validate allows custom properties; ConfigHelper treats an unknown type as
    possibly sensitive (KafkaConfig.maybeSensitive): listed without its value, read-only, type UNKNOWN."""
    sim.incremental_alter_configs(BROKER, "2", [("follower.replication.throttle.rate", SET, "5")], False)
    assert sim.brokers[2].configs == {"follower.replication.throttle.rate": "5"}
    entry = _entry(sim, BROKER, "2", "follower.replication.throttle.rate")
    assert (entry.value, entry.is_sensitive, entry.read_only, entry.source) == (None, True, True, 2)
    assert entry.synonyms == (("follower.replication.throttle.rate", None, 2),)
    assert sim.broker_config(2, "follower.replication.throttled.rate") == "2000"  # the typo changed nothing
    assert _code(lambda: sim.incremental_alter_configs(BROKER, "2", [("x.y", APPEND, "1")], False)) == (
        e.UNKNOWN_SERVER_ERROR
    )


def test_validate_only_changes_nothing(sim: SimCluster) -> None:
    sim.incremental_alter_configs(BROKER, "2", [(R, SET, "5")], True)
    sim.incremental_alter_configs(TOPIC, "t", [(L, SET, "*")], True)
    assert sim.brokers[2].configs == {} and sim.topics["t"].configs == {}


def _entry(sim: SimCluster, resource: int, name: str, key: str) -> Any:
    (entry,) = sim.describe_configs(resource, name, [key])
    return entry


@pytest.mark.parametrize(
    "case",
    [
        (BROKER, "1", R, "1000", 2, False),
        (BROKER, "1", "follower.replication.throttled.rate", "2000", 3, False),
        (BROKER, "2", "broker.rack", "/dc1/rack0", 4, True),
        (BROKER, "2", "log.dirs", "/var/lib/kafka/data", 4, True),
        (BROKER, "2", "num.partitions", "1", 5, True),
        (BROKER, "2", "default.replication.factor", "1", 5, True),
        (BROKER, "2", "min.insync.replicas", "1", 5, False),
        (BROKER, "", "follower.replication.throttled.rate", "2000", 3, False),
        (TOPIC, "u", "min.insync.replicas", "1", 1, False),
        (TOPIC, "t", "min.insync.replicas", "1", 5, False),
        (TOPIC, "t", L, "", 5, False),
        (TOPIC, "t", "retention.ms", "604800000", 5, False),
    ],
)
def test_describe_config_sources(sim: SimCluster, case: tuple[int, str, str, str, int, bool]) -> None:
    resource, name, key, value, source, read_only = case
    entry = _entry(sim, resource, name, key)
    assert (entry.name, entry.value, entry.source, entry.read_only) == (key, value, source, read_only)
    assert entry.synonyms[0] == (key if resource == BROKER else entry.synonyms[0][0], value, source)


@pytest.mark.parametrize(
    "key", [R, "follower.replication.throttled.rate", "replica.alter.log.dirs.io.max.bytes.per.second"]
)
def test_a_throttle_rate_is_listed_only_where_set_and_without_a_default(sim: SimCluster, key: str) -> None:
    """Kafka 4.4 (measured, tests/realkafka/test_fidelity.py): the rates are QuotaConfigs keys, not
    KafkaConfig ones, so ConfigHelper lists them only when a level sets them, and their synonyms end at
    that level."""
    unset = [("follower.replication.throttled.rate", DELETE, None)]
    sim.incremental_alter_configs(BROKER, "", unset, False)
    assert sim.describe_configs(BROKER, "2", [key]) == []
    assert key not in {c.name for c in sim.describe_configs(BROKER, "2", None)}
    sim.incremental_alter_configs(BROKER, "2", [(key, SET, "7")], False)
    sim.incremental_alter_configs(BROKER, "", [(key, SET, "9")], False)
    entry = _entry(sim, BROKER, "2", key)
    assert (entry.value, entry.source, entry.read_only, entry.type) == ("7", 2, False, "LONG")
    assert entry.synonyms == ((key, "7", 2), (key, "9", 3))
    assert _entry(sim, BROKER, "", key).synonyms == ((key, "9", 3),)


def test_describe_configs_lists_all_and_follows_changes(sim: SimCluster) -> None:
    names = {c.name for c in sim.describe_configs(BROKER, "3", None)}
    assert {"follower.replication.throttled.rate", "broker.rack", "log.dirs", "num.partitions"} <= names
    assert R not in names, "no level sets it on broker 3"
    assert [c.name for c in sim.describe_configs(BROKER, "", None)] == ["follower.replication.throttled.rate"]
    sim.incremental_alter_configs(BROKER, "", [("min.insync.replicas", SET, "2")], False)
    entry = _entry(sim, TOPIC, "t", "min.insync.replicas")
    assert (entry.value, entry.source) == ("2", 3)
    assert entry.synonyms[0] == ("min.insync.replicas", "2", 3)
    assert _code(lambda: sim.describe_configs(TOPIC, "nope", None)) == e.UNKNOWN_TOPIC_OR_PARTITION
    assert _code(lambda: sim.describe_configs(BROKER, "42", None)) == e.INVALID_REQUEST


def test_describe_log_dirs(sim: SimCluster) -> None:
    ((log_dir, rows),) = sim.describe_log_dirs(1, None)
    assert log_dir == "/var/lib/kafka/data"
    assert all(size in (0, 1000) and lag == 0 and not future for _, _, size, lag, future in rows)
    hosted = [(topic, index) for topic, index, *_ in rows]
    # asking for named partitions answers the hosted ones among them, in the same order, and skips
    # partitions the broker does not host, unknown partitions and unknown topics, as Kafka does
    asked = [
        *reversed(hosted),
        ("nope", 0),
        (hosted[0][0], 999),
        *[(t.name, p.index) for t in sim.topics.values() for p in t.partitions if 1 not in p.replicas],
    ]
    ((_, named),) = sim.describe_log_dirs(1, asked)
    assert named == rows
    sim.stop_broker(1)
    assert _code(lambda: sim.describe_log_dirs(1, None)) == e.BROKER_NOT_AVAILABLE

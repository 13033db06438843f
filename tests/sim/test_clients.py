"""Real Kafka clients against `reassignd sim` over TCP: confluent-kafka (librdkafka) and kafka-python.

One simulator process serves the whole module with its clock paused (time scale 0), so reassignments stay
in progress until a test advances time; each test works on its own topics so the order does not matter.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import ElectionType as CkElectionType
from confluent_kafka import KafkaError, KafkaException, TopicCollection, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)
from kafka import errors as kerrors
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType, KafkaAdminClient
from kafka.structs import TopicPartition as KpTopicPartition

from tests.services.simulator import SimProcess

SCENARIO: dict[str, Any] = {
    "cluster_id": "sim-cluster-test",
    "brokers": [
        {"id": 1, "rack": "r1"},
        {"id": 2, "rack": "r2"},
        {"id": 3, "rack": "r1"},
        {"id": 4, "rack": "r2"},
    ],
    "topics": [
        {
            "name": "orders",
            "partitions": 3,
            "replication_factor": 3,
            "partition_bytes": 1_000_000,
            "assignment": [[1, 2, 3], [2, 3, 4], [3, 4, 1]],
            "configs": {"min.insync.replicas": "2"},
        },
        {
            "name": "moves",
            "partitions": 3,
            "replication_factor": 2,
            "partition_bytes": 5_000_000,
            "assignment": [[1, 2], [2, 3], [3, 4]],
        },
        {"name": "configs", "partitions": 1, "replication_factor": 2, "partition_bytes": 0},
        {
            "name": "logs",
            "partitions": 2,
            "replication_factor": 2,
            "partition_bytes": [1000, 2000],
            "assignment": [[1, 2], [2, 1]],
        },
    ],
    "broker_configs": {"1": {"leader.replication.throttled.rate": "1000000"}},
}


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    with SimProcess(SCENARIO, tmp_path_factory.mktemp("sim-clients"), time_scale=0, seed=7) as process:
        yield process


@pytest.fixture(scope="module")
def ck(sim: SimProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": sim.bootstrap_servers, "socket.timeout.ms": 10000})


@pytest.fixture(scope="module")
def kp(sim: SimProcess) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=sim.bootstrap_servers, request_timeout_ms=10000)
    try:
        yield client
    finally:
        client.close()


def _kafka_code(exc: BaseException | KafkaError) -> int:
    """The Kafka error code of a failed future (KafkaException) or a per-partition result (KafkaError)."""
    error = exc.args[0] if isinstance(exc, KafkaException) else exc
    assert isinstance(error, KafkaError), exc
    return int(error.code())


# ---------------------------------------------------------------------------------------------------------
# Ready lines


def test_ready_lines_have_the_exact_format(sim: SimProcess) -> None:
    bootstrap, control = sim.ready_lines
    assert re.fullmatch(r"bootstrap\.servers=127\.0\.0\.1:\d+(,127\.0\.0\.1:\d+){3}", bootstrap)
    assert re.fullmatch(r"control=http://127\.0\.0\.1:\d+", control)
    ports = [int(p.rsplit(":", 1)[1]) for p in sim.bootstrap_servers.split(",")]
    assert ports == [sim.broker_ports[b] for b in (1, 2, 3, 4)]


# ---------------------------------------------------------------------------------------------------------
# confluent-kafka (librdkafka)


def test_ck_list_topics(ck: AdminClient) -> None:
    metadata = ck.list_topics(timeout=10)
    assert metadata.cluster_id == "sim-cluster-test"
    assert sorted(metadata.brokers) == [1, 2, 3, 4]
    assert metadata.controller_id in metadata.brokers
    orders = metadata.topics["orders"]
    assert orders.error is None
    assert [orders.partitions[i].replicas for i in range(3)] == [[1, 2, 3], [2, 3, 4], [3, 4, 1]]
    assert [orders.partitions[i].leader for i in range(3)] == [1, 2, 3]
    assert sorted(orders.partitions[0].isrs) == [1, 2, 3]


def test_ck_list_topics_unknown_topic(ck: AdminClient) -> None:
    metadata = ck.list_topics(topic="no-such-topic", timeout=10)
    error = metadata.topics["no-such-topic"].error
    assert error is not None and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_ck_describe_topics(ck: AdminClient) -> None:
    futures = ck.describe_topics(TopicCollection(["orders", "no-such-topic"]), request_timeout=10)
    orders = futures["orders"].result()
    assert orders.name == "orders"
    assert str(orders.topic_id) != "AAAAAAAAAAAAAAAAAAAAAA"  # a real topic id, not the zero UUID
    parts = sorted(orders.partitions, key=lambda p: p.id)
    assert [[n.id for n in p.replicas] for p in parts] == [[1, 2, 3], [2, 3, 4], [3, 4, 1]]
    assert [p.leader.id for p in parts] == [1, 2, 3]
    assert parts[1].leader.rack == "r2"
    with pytest.raises(KafkaException) as info:
        futures["no-such-topic"].result()
    assert _kafka_code(info.value) == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_ck_describe_cluster(ck: AdminClient) -> None:
    cluster = ck.describe_cluster(request_timeout=10).result()
    assert cluster.cluster_id == "sim-cluster-test"
    assert sorted(n.id for n in cluster.nodes) == [1, 2, 3, 4]
    assert {n.id: n.rack for n in cluster.nodes} == {1: "r1", 2: "r2", 3: "r1", 4: "r2"}
    assert cluster.controller is not None and cluster.controller.id in (1, 2, 3, 4)


def test_ck_describe_configs_topic_and_broker(ck: AdminClient) -> None:
    topic = ConfigResource(ConfigResource.Type.TOPIC, "orders")
    broker = ConfigResource(ConfigResource.Type.BROKER, "1")
    results = ck.describe_configs([topic, broker], request_timeout=10)
    topic_configs = results[topic].result()
    assert topic_configs["min.insync.replicas"].value == "2"
    assert topic_configs["min.insync.replicas"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert (
        topic_configs["follower.replication.throttled.replicas"].source == ConfigSource.DEFAULT_CONFIG.value
    )
    broker_configs = results[broker].result()
    rate = broker_configs["leader.replication.throttled.rate"]
    assert (rate.value, rate.source) == ("1000000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)


def test_ck_describe_configs_unknown_topic(ck: AdminClient) -> None:
    resource = ConfigResource(ConfigResource.Type.TOPIC, "no-such-topic")
    with pytest.raises(KafkaException) as info:
        ck.describe_configs([resource], request_timeout=10)[resource].result()
    assert _kafka_code(info.value) == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_ck_incremental_alter_configs_ops(ck: AdminClient) -> None:
    topic = ConfigResource(
        ConfigResource.Type.TOPIC,
        "configs",
        incremental_configs=[
            ConfigEntry(
                "follower.replication.throttled.replicas", "0:1", incremental_operation=AlterConfigOpType.SET
            ),
            ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET),
        ],
    )
    ck.incremental_alter_configs([topic], request_timeout=10)[topic].result()
    append = ConfigResource(
        ConfigResource.Type.TOPIC,
        "configs",
        incremental_configs=[
            ConfigEntry(
                "follower.replication.throttled.replicas",
                "0:2",
                incremental_operation=AlterConfigOpType.APPEND,
            ),
            ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
        ],
    )
    ck.incremental_alter_configs([append], request_timeout=10)[append].result()
    described = ck.describe_configs(
        [ConfigResource(ConfigResource.Type.TOPIC, "configs")], request_timeout=10
    )
    configs = next(iter(described.values())).result()
    assert configs["follower.replication.throttled.replicas"].value == "0:1,0:2"
    assert configs["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    subtract = ConfigResource(
        ConfigResource.Type.TOPIC,
        "configs",
        incremental_configs=[
            ConfigEntry(
                "follower.replication.throttled.replicas",
                "0:1",
                incremental_operation=AlterConfigOpType.SUBTRACT,
            )
        ],
    )
    ck.incremental_alter_configs([subtract], request_timeout=10)[subtract].result()
    described = ck.describe_configs(
        [ConfigResource(ConfigResource.Type.TOPIC, "configs")], request_timeout=10
    )
    assert next(iter(described.values())).result()["follower.replication.throttled.replicas"].value == "0:2"


def test_ck_incremental_alter_broker_config(ck: AdminClient, sim: SimProcess) -> None:
    broker = ConfigResource(
        ConfigResource.Type.BROKER,
        "2",
        incremental_configs=[
            ConfigEntry(
                "follower.replication.throttled.rate", "5000000", incremental_operation=AlterConfigOpType.SET
            )
        ],
    )
    ck.incremental_alter_configs([broker], request_timeout=10)[broker].result()
    state = sim.state()
    assert "5000000" in str(state)


@pytest.mark.parametrize(
    ("resource_type", "name", "key", "value", "code"),
    [
        (
            ConfigResource.Type.TOPIC,
            "configs",
            "min.insync.replicas",
            "not-a-number",
            KafkaError.INVALID_CONFIG,
        ),
        (ConfigResource.Type.TOPIC, "configs", "min.insync.replicas", "0", KafkaError.INVALID_CONFIG),
        (
            ConfigResource.Type.TOPIC,
            "configs",
            "leader.replication.throttled.replicas",
            "zero:one",
            KafkaError.INVALID_CONFIG,
        ),
        # a broker validates its own configs and answers INVALID_REQUEST (KAFKA-13609)
        (
            ConfigResource.Type.BROKER,
            "3",
            "leader.replication.throttled.rate",
            "-5",
            KafkaError.INVALID_REQUEST,
        ),
    ],
)
def test_ck_incremental_alter_configs_invalid_values(  # noqa: PLR0917 - one parameter per table column
    ck: AdminClient, resource_type: Any, name: str, key: str, value: str, code: int
) -> None:
    resource = ConfigResource(
        resource_type,
        name,
        incremental_configs=[ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)],
    )
    with pytest.raises(KafkaException) as info:
        ck.incremental_alter_configs([resource], request_timeout=10)[resource].result()
    assert _kafka_code(info.value) == code
    assert value in str(info.value)


def test_ck_incremental_alter_configs_unknown_topic(ck: AdminClient) -> None:
    resource = ConfigResource(
        ConfigResource.Type.TOPIC,
        "no-such-topic",
        incremental_configs=[ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.SET)],
    )
    with pytest.raises(KafkaException) as info:
        ck.incremental_alter_configs([resource], request_timeout=10)[resource].result()
    assert _kafka_code(info.value) == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_ck_elect_leaders_not_needed(ck: AdminClient) -> None:
    # Every leader of "logs" is already its preferred replica.
    result = ck.elect_leaders(
        CkElectionType.PREFERRED, [TopicPartition("logs", 0), TopicPartition("logs", 1)]
    )
    errors = result.result(timeout=20)
    assert {tp.partition for tp in errors} == {0, 1}
    for error in errors.values():
        assert error is not None
        assert _kafka_code(error) == KafkaError.ELECTION_NOT_NEEDED


def test_ck_create_topics(ck: AdminClient, sim: SimProcess) -> None:
    explicit = NewTopic(
        "created-explicit", 2, replica_assignment=[[4, 1], [1, 2]], config={"min.insync.replicas": "1"}
    )
    default = NewTopic("created-default", num_partitions=4, replication_factor=3)
    futures = ck.create_topics([explicit, default], request_timeout=10)
    for future in futures.values():
        assert future.result() is None
    metadata = ck.list_topics(timeout=10)
    created = metadata.topics["created-explicit"]
    assert [created.partitions[i].replicas for i in range(2)] == [[4, 1], [1, 2]]
    placed = metadata.topics["created-default"]
    assert len(placed.partitions) == 4
    for p in placed.partitions.values():
        assert len(set(p.replicas)) == 3
        assert {1, 2, 3, 4} >= set(p.replicas)
    partitions = sim.state()["partitions"]
    assert any("created-default" in str(p) for p in partitions)


def test_ck_create_topics_validate_only_creates_nothing(ck: AdminClient) -> None:
    futures = ck.create_topics([NewTopic("validated-only", 2, 2)], validate_only=True, request_timeout=10)
    assert futures["validated-only"].result() is None
    assert "validated-only" not in ck.list_topics(timeout=10).topics


@pytest.mark.parametrize(
    ("topic", "code"),
    [
        (NewTopic("bad-assignment", 1, replica_assignment=[[1, 99]]), KafkaError.INVALID_REPLICA_ASSIGNMENT),
        (NewTopic("bad-rf", num_partitions=1, replication_factor=9), KafkaError.INVALID_REPLICATION_FACTOR),
        (NewTopic("orders", num_partitions=1, replication_factor=1), KafkaError.TOPIC_ALREADY_EXISTS),
        (
            NewTopic("bad-config", 1, 1, config={"min.insync.replicas": "x"}),
            KafkaError.INVALID_CONFIG,
        ),
    ],
)
def test_ck_create_topics_errors(ck: AdminClient, topic: NewTopic, code: int) -> None:
    future = ck.create_topics([topic], request_timeout=10)[topic.topic]
    with pytest.raises(KafkaException) as info:
        future.result()
    assert _kafka_code(info.value) == code


# ---------------------------------------------------------------------------------------------------------
# kafka-python


def test_kp_describe_cluster(kp: KafkaAdminClient) -> None:
    cluster = kp.describe_cluster()
    assert cluster["cluster_id"] == "sim-cluster-test"
    assert sorted(b["broker_id"] for b in cluster["brokers"]) == [1, 2, 3, 4]
    assert cluster["controller_id"] in (1, 2, 3, 4)


def test_kp_describe_configs_all(kp: KafkaAdminClient) -> None:
    result = kp.describe_configs(
        [KpConfigResource(ConfigResourceType.TOPIC, "orders")], include_synonyms=True, config_filter="all"
    )
    configs = result["topic"]["orders"]
    assert configs["min.insync.replicas"]["value"] == "2"
    assert configs["min.insync.replicas"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert configs["min.insync.replicas"]["config_type"] == "INT"
    retention = configs["retention.ms"]  # a default: listed only with config_filter='all'
    assert (retention["config_source"], retention["synonyms"][-1]["source"]) == (
        "DEFAULT_CONFIG",
        "DEFAULT_CONFIG",
    )


def test_kp_describe_configs_modified_hides_defaults(kp: KafkaAdminClient) -> None:
    result = kp.describe_configs([KpConfigResource(ConfigResourceType.TOPIC, "orders")])
    assert set(result["topic"]["orders"]) == {"min.insync.replicas"}


def test_kp_describe_broker_configs_routed_to_that_broker(kp: KafkaAdminClient) -> None:
    result = kp.describe_configs(
        [KpConfigResource(ConfigResourceType.BROKER, "1"), KpConfigResource(ConfigResourceType.BROKER, "3")],
        include_synonyms=True,
        config_filter="all",
    )
    assert result["broker"]["1"]["leader.replication.throttled.rate"]["value"] == "1000000"
    assert result["broker"]["1"]["broker.id"]["value"] == "1"  # answered by broker 1 itself
    assert result["broker"]["3"]["broker.id"]["value"] == "3"
    assert result["broker"]["3"]["broker.id"]["read_only"] is True


def test_kp_reassign_list_cancel(kp: KafkaAdminClient, sim: SimProcess) -> None:
    tp = KpTopicPartition("moves", 0)
    assert kp.alter_partition_reassignments({tp: [3, 4]}) == {tp: None}
    ongoing = kp.list_partition_reassignments()
    assert ongoing[tp] == {"replicas": [3, 4, 1, 2], "adding_replicas": [3, 4], "removing_replicas": [1, 2]}
    assert kp.list_partition_reassignments({"moves": [0]}) == {tp: ongoing[tp]}
    assert kp.alter_partition_reassignments({tp: None}) == {tp: None}
    assert tp not in kp.list_partition_reassignments()
    snapshot = sim.snapshot()
    assert "moves" in str(snapshot)


def test_kp_reassignment_completes_in_virtual_time(kp: KafkaAdminClient, sim: SimProcess) -> None:
    tp = KpTopicPartition("moves", 1)
    assert kp.alter_partition_reassignments({tp: [1, 2]}) == {tp: None}
    assert tp in kp.list_partition_reassignments()
    sim.advance(600)  # 5 MB at 125 MB/s: long done
    assert tp not in kp.list_partition_reassignments()
    metadata = kp.describe_topics(["moves"])
    (topic,) = metadata
    partition = next(p for p in topic["partitions"] if p["partition_index"] == 1)
    assert partition["replica_nodes"] == [1, 2]


def test_kp_reassignment_errors(kp: KafkaAdminClient) -> None:
    cases = {
        KpTopicPartition("moves", 2): [1, 1],  # duplicate broker
        KpTopicPartition("orders", 2): [1, 99],  # unknown broker
        KpTopicPartition("no-such-topic", 0): [1, 2],
        KpTopicPartition("orders", 7): [1, 2],  # unknown partition
    }
    results = kp.alter_partition_reassignments(cases)
    assert results[KpTopicPartition("moves", 2)] is kerrors.InvalidReplicationAssignmentError
    assert results[KpTopicPartition("orders", 2)] is kerrors.InvalidReplicationAssignmentError
    assert results[KpTopicPartition("no-such-topic", 0)] is kerrors.UnknownTopicOrPartitionError
    assert results[KpTopicPartition("orders", 7)] is kerrors.UnknownTopicOrPartitionError
    assert kp.list_partition_reassignments({"orders": [1, 2], "moves": [2]}) == {}


def test_kp_cancel_without_reassignment(kp: KafkaAdminClient) -> None:
    tp = KpTopicPartition("orders", 0)
    assert kp.alter_partition_reassignments({tp: None}) == {tp: kerrors.NoReassignmentInProgressError}


def test_kp_describe_log_dirs(kp: KafkaAdminClient) -> None:
    results = {r["broker"]: r["log_dirs"] for r in kp.describe_log_dirs()}
    assert sorted(results) == [1, 2, 3, 4]
    on_broker_1 = {
        (t["name"], p["partition_index"]): p["partition_size"]
        for log_dir in results[1]
        for t in log_dir["topics"]
        for p in t["partitions"]
    }
    assert on_broker_1[("logs", 0)] == 1000
    assert on_broker_1[("logs", 1)] == 2000
    assert ("orders", 0) in on_broker_1 and ("orders", 1) not in on_broker_1  # only broker 1's replicas
    filtered = kp.describe_log_dirs({"logs": [1]}, brokers=[2])
    (only,) = filtered
    topics = [t for d in only["log_dirs"] for t in d["topics"]]
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in topics] == [("logs", [1])]


def test_module_process_still_healthy(sim: SimProcess) -> None:
    assert sim.proc is not None and sim.proc.poll() is None
    assert Path(sim.log_path).exists()


# ---------------------------------------------------------------------------------------------------------
# The request log of writes


def test_request_log_records_writes_with_client_id_and_time(sim: SimProcess) -> None:
    before = time.time()
    writer = KafkaAdminClient(
        bootstrap_servers=sim.bootstrap_servers, request_timeout_ms=10000, client_id="log-writer"
    )
    try:
        tp = KpTopicPartition("moves", 1)
        assert writer.alter_partition_reassignments({tp: None})[tp] is not None  # nothing to cancel
        writer.describe_configs([KpConfigResource(ConfigResourceType.TOPIC, "moves")])  # a read: not logged
    finally:
        writer.close()
    ours = [r for r in sim.write_requests() if r["client_id"] == "log-writer"]
    assert [r["api"] for r in ours] == ["AlterPartitionReassignments"]
    assert before <= ours[0]["time"] <= time.time()
    assert ours[0]["broker"] in (1, 2, 3, 4)

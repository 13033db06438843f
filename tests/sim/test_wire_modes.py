"""The simulator through clients that do not share its protocol classes, in KRaft and ZooKeeper mode.

librdkafka (confluent-kafka) where it has the call; otherwise tests/services/kafka_wire.py, an encoder written
from Kafka's JSON message schemas. One paused simulator per mode serves the module; each test works on its
own topic. The rules and their sources are in docs/simulator.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import ElectionType, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
)

from reassignd.sim import SimCluster
from reassignd.sim.kafka_version import KafkaVersion
from reassignd.sim.protocol import Endpoint
from reassignd.sim.runner import kafka_protocol
from tests.services.kafka_wire import Reader, WireClient, Writer
from tests.services.simulator import SimProcess

INVALID_REPLICA_ASSIGNMENT, NOT_CONTROLLER, INVALID_REQUEST = 39, 41, 42
BROKER, TOPIC = 4, 2
MOVES = [f"m{i}" for i in range(6)]


def _scenario(kafka: dict[str, str]) -> dict[str, Any]:
    return {
        "kafka": kafka,
        "brokers": [
            {
                "id": 1,
                "log_dirs": [
                    {"path": "/data/a", "total_bytes": 10**12, "usable_bytes": 4 * 10**11},
                    {"path": "/data/b", "total_bytes": 2 * 10**12},
                ],
            },
            *({"id": b} for b in range(2, 7)),
        ],
        "topics": [
            *({"name": name, "assignment": [[3, 1, 2]], "partition_bytes": 10_000_000} for name in MOVES),
            {
                "name": "logs",
                "assignment": [[1, 2], [1, 2], [2, 1]],
                "partition_bytes": [1000, 2000, 3000],
                "log_dirs": [["/data/a", "any"], ["/data/b", "any"], ["any", "/data/b"]],
            },
        ],
    }


@pytest.fixture(scope="module", params=["kraft", "zookeeper"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def sim(mode: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    kafka = {"version": "3.9", "mode": mode}
    with SimProcess(_scenario(kafka), tmp_path_factory.mktemp(f"wire-{mode}"), time_scale=0) as process:
        yield process


@pytest.fixture(scope="module")
def ck(sim: SimProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": sim.bootstrap_servers, "socket.timeout.ms": 10000})


def _client(sim: SimProcess, broker: int) -> WireClient:
    return WireClient("127.0.0.1", sim.broker_ports[broker])


def _controller(sim: SimProcess) -> int:
    return int(sim.state()["controller_id"])


def _other_than_controller(sim: SimProcess) -> int:
    return next(b for b in sim.broker_ports if b != _controller(sim))


def _partition(sim: SimProcess, topic: str) -> dict[str, Any]:
    return next(p for p in sim.state()["partitions"] if (p["topic"], p["partition"]) == (topic, 0))


# ---------------------------------------------------------------------------------------------------------
# ApiVersions per release: the encoder's bytes through the server's dispatcher, decoded by the encoder


def _api_versions(kafka: KafkaVersion, version: int) -> dict[int, tuple[int, int]]:
    w = Writer(version >= 3)
    if version >= 3:
        w.string("t").string("1").tags()
    header = Writer(False).int16(18).int16(version).int32(7).string("c")
    if version >= 3:
        header.uvarint(0)
    frame = kafka_protocol(kafka).handle(
        header.bytes() + w.bytes(), SimCluster(kafka=kafka), 1, {1: Endpoint(1, "127.0.0.1", 1)}
    )
    r = Reader(frame[4:], version >= 3)
    assert r.int32() == 7  # ApiVersions answers with a v0 header even when flexible
    assert r.int16() == 0

    def api() -> tuple[int, int, int]:
        key, low, high = r.int16(), r.int16(), r.int16()
        r.tags()
        return key, low, high

    return {k: (lo, hi) for k, lo, hi in r.array(api) or []}


# Expected tables, from the JSON schemas' validVersions at each release (see reassignd/sim/kafka_version.py).
KAFKA_3_7 = {3: (0, 12), 18: (0, 3), 19: (0, 7), 20: (0, 6), 32: (0, 4), 33: (0, 2), 34: (0, 2), 35: (0, 4)}
KAFKA_3_7 |= {43: (0, 2), 44: (0, 1), 45: (0, 0), 46: (0, 0), 60: (0, 1)}
# group coordination (the one-writer lease): FindCoordinator, JoinGroup, Heartbeat, LeaveGroup, SyncGroup
KAFKA_3_7 |= {10: (0, 4), 11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5)}
# the ownership marker's OffsetCommit, OffsetFetch: the versions kafka-python decodes (kafka_version.py)
KAFKA_3_7 |= {8: (2, 9), 9: (1, 7)}
KAFKA_4_1 = {3: (0, 13), 18: (0, 4), 19: (2, 7), 20: (1, 6), 32: (1, 4), 33: (0, 2), 34: (1, 2), 35: (1, 4)}
KAFKA_4_1 |= {43: (0, 2), 44: (0, 1), 45: (0, 1), 46: (0, 0), 60: (0, 2)}
KAFKA_4_1 |= {10: (0, 6), 11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5)}  # JoinGroup v0-1 back: KAFKA-19444
KAFKA_4_1 |= {8: (2, 9), 9: (1, 7)}


@pytest.mark.parametrize(
    ("release", "mode", "expected"),
    [
        ("3.7", "zookeeper", KAFKA_3_7),
        ("3.9", "zookeeper", KAFKA_3_7 | {18: (0, 4), 10: (0, 6)}),
        ("3.9", "kraft", KAFKA_3_7 | {18: (0, 4), 10: (0, 6)}),
        ("4.0", "kraft", KAFKA_4_1 | {45: (0, 0), 11: (2, 9)}),  # 4.0.0: without JoinGroup v0-1 (KIP-896)
        ("4.1", "kraft", KAFKA_4_1),
        # a real 4.4.0 broker's list for these APIs (test_fidelity.py), ApiVersions capped at v4
        ("4.4", "kraft", KAFKA_4_1 | {35: (1, 5)}),
    ],
)
def test_advertised_api_versions_follow_the_release(
    release: str, mode: str, expected: dict[int, Any]
) -> None:
    assert _api_versions(KafkaVersion(release, mode), 3) == expected
    assert _api_versions(KafkaVersion(release, mode), 0) == expected  # the v0 body carries the same list


# ---------------------------------------------------------------------------------------------------------
# KIP-455 through the independent encoder


def test_reassignments_go_to_the_controller_in_zookeeper_mode_and_to_any_broker_in_kraft(
    sim: SimProcess, mode: str
) -> None:
    with _client(sim, _other_than_controller(sim)) as client:
        altered = client.alter_partition_reassignments({("m0", 0): [4, 5, 6]})
        listed = client.list_partition_reassignments()
    if mode == "zookeeper":  # KafkaController.processApiPartitionReassignment: !isActive
        assert (
            altered["error"] == (NOT_CONTROLLER, "This is not the correct controller for this cluster.")
            and altered["partitions"] == {}
        )
        assert listed["error"] == (NOT_CONTROLLER, "This is not the correct controller for this cluster.")
        assert _partition(sim, "m0")["adding"] == []
    else:  # a KRaft broker forwards to the controller
        assert altered["error"] == (0, None) and altered["partitions"] == {("m0", 0): (0, None)}
        assert listed["ongoing"][("m0", 0)] == ([4, 5, 6, 1, 2, 3], [4, 5, 6], [1, 2, 3])
        with _client(sim, 1) as client:
            client.alter_partition_reassignments({("m0", 0): None})


def test_a_stopped_broker_in_the_target(sim: SimProcess, mode: str) -> None:
    sim.stop_broker(5)
    try:
        with _client(sim, _controller(sim)) as client:
            result = client.alter_partition_reassignments({("m1", 0): [4, 5, 6]})
            if mode == "kraft":
                client.alter_partition_reassignments({("m1", 0): None})
    finally:
        sim.start_broker(5)
    if mode == "zookeeper":
        code, message = result["partitions"][("m1", 0)]
        assert code == INVALID_REPLICA_ASSIGNMENT
        assert message == (
            "Replica assignment has brokers that are not alive. Replica list: ArrayBuffer(4, 5, 6), "
            "live broker list: HashSet(1, 6, 2, 3, 4)"
        )
    else:
        assert result["partitions"][("m1", 0)] == (0, None)


def test_replacing_an_in_flight_target(sim: SimProcess, mode: str) -> None:
    with _client(sim, _controller(sim)) as client:
        client.alter_partition_reassignments({("m2", 0): [4, 5, 6]})
        client.alter_partition_reassignments({("m2", 0): [4, 5]})
        ongoing = client.list_partition_reassignments({"m2": [0]})["ongoing"]
        client.alter_partition_reassignments({("m2", 0): None})
    if mode == "zookeeper":  # reassignTo from the original [3, 1, 2]; 6 is stopped and deleted
        assert ongoing == {("m2", 0): ([4, 5, 3, 1, 2], [4, 5], [3, 1, 2])}
    else:  # from the current [4, 5, 6, 1, 2, 3]; 6 keeps copying until the move ends
        assert ongoing == {("m2", 0): ([4, 5, 1, 2, 3, 6], [4, 5, 6], [1, 2, 3, 6])}


@pytest.mark.parametrize(
    ("target", "kraft", "zookeeper"),
    [
        (
            [],
            "The manual partition assignment includes an empty replica list.",
            "Empty replica list specified in partition reassignment.",
        ),
        (
            [4, 4],
            "The manual partition assignment includes the broker 4 more than once.",
            "Duplicate replica ids in partition reassignment replica list: ArrayBuffer(4, 4)",
        ),
        (
            [-3, 4],
            "The manual partition assignment includes broker -3, but no such broker is registered.",
            "Invalid broker id in replica list: ArrayBuffer(-3, 4)",
        ),
    ],
)
def test_invalid_target_texts(
    sim: SimProcess, mode: str, target: list[int], kraft: str, zookeeper: str
) -> None:
    with _client(sim, _controller(sim)) as client:
        result = client.alter_partition_reassignments({("m3", 0): target})
    expected = zookeeper if mode == "zookeeper" else kraft
    assert result["partitions"] == {("m3", 0): (INVALID_REPLICA_ASSIGNMENT, expected)}


def test_allow_replication_factor_change_is_4_1_only(sim: SimProcess) -> None:
    with _client(sim, 1) as client:
        assert client.api_versions()["api_keys"][45] == (0, 0)  # both simulators here are 3.9


# ---------------------------------------------------------------------------------------------------------
# Broker config resources


@pytest.mark.parametrize("legacy", [False, True], ids=["incremental", "legacy"])
def test_a_broker_resource_sent_to_another_broker_is_refused(sim: SimProcess, legacy: bool) -> None:
    """ConfigAdminManager.validateResourceNameIsCurrentNodeId, on the receiving broker, both modes."""
    rate = "follower.replication.throttled.rate"
    with _client(sim, 1) as client:
        if legacy:
            result = client.alter_configs([(BROKER, "2", [(rate, "100")]), (BROKER, "x", [(rate, "1")])])
        else:
            result = client.incremental_alter_configs(
                [(BROKER, "2", [(rate, 0, "100")]), (BROKER, "x", [(rate, 0, "1")])]
            )
    assert result == {
        (BROKER, "2"): (INVALID_REQUEST, "Unexpected broker id, expected 1, but received 2"),
        (BROKER, "x"): (INVALID_REQUEST, "Node id must be an integer, but it is: x"),
    }
    assert sim.state()["brokers"][1]["configs"] == {}


def test_a_resource_named_twice_is_refused(sim: SimProcess) -> None:
    with _client(sim, 1) as client:
        result = client.incremental_alter_configs([(TOPIC, "logs", []), (TOPIC, "logs", [])])
    assert result == {(TOPIC, "logs"): (INVALID_REQUEST, "Each resource must appear at most once.")}


def _broker_resource(broker: str, key: str, value: str | None, op: AlterConfigOpType) -> ConfigResource:
    return ConfigResource(
        ConfigResource.Type.BROKER,
        broker,
        incremental_configs=[ConfigEntry(key, value, incremental_operation=op)],
    )


@pytest.mark.parametrize(
    ("value", "reason"), [("-5", "Value must be at least 0"), ("abc", "Not a number of type LONG")]
)
def test_invalid_broker_values_are_invalid_request(ck: AdminClient, value: str, reason: str) -> None:
    """KAFKA-13609, in both modes: the receiving broker validates (ConfigAdminManager, Kafka 3.2+)."""
    resource = _broker_resource("3", "leader.replication.throttled.rate", value, AlterConfigOpType.SET)
    with pytest.raises(KafkaException) as info:
        ck.incremental_alter_configs([resource], request_timeout=10)[resource].result()
    error = info.value.args[0]
    assert (error.code(), error.str()) == (
        KafkaError.INVALID_REQUEST,
        f"Invalid value {value} for configuration leader.replication.throttled.rate: {reason}",
    )


def test_an_unknown_broker_key_is_accepted_and_its_value_hidden(ck: AdminClient, sim: SimProcess) -> None:
    resource = _broker_resource("4", "leader.replication.throttle.rate", "1000", AlterConfigOpType.SET)
    ck.incremental_alter_configs([resource], request_timeout=10)[resource].result()
    assert sim.state()["brokers"][3]["configs"] == {"leader.replication.throttle.rate": "1000"}
    described = ck.describe_configs([ConfigResource(ConfigResource.Type.BROKER, "4")], request_timeout=10)
    entry = next(iter(described.values())).result()["leader.replication.throttle.rate"]
    assert (entry.value, entry.is_sensitive, entry.is_read_only) == (None, True, True)
    delete = _broker_resource("4", "leader.replication.throttle.rate", None, AlterConfigOpType.DELETE)
    ck.incremental_alter_configs([delete], request_timeout=10)[delete].result()


def test_legacy_alter_configs_through_librdkafka(ck: AdminClient, sim: SimProcess) -> None:
    """confluent-kafka's (deprecated) alter_configs sends AlterConfigs, API 33: the whole set is replaced."""
    rates = {"leader.replication.throttled.rate": "7000", "follower.replication.throttled.rate": "8000"}
    resource = ConfigResource(ConfigResource.Type.BROKER, "5", set_config=rates)
    with pytest.warns(DeprecationWarning):
        ck.alter_configs([resource], request_timeout=10)[resource].result()
    assert sim.state()["brokers"][4]["configs"] == rates
    resource = ConfigResource(
        ConfigResource.Type.BROKER, "5", set_config={"leader.replication.throttled.rate": "1"}
    )
    with pytest.warns(DeprecationWarning):
        ck.alter_configs([resource], request_timeout=10)[resource].result()
    assert sim.state()["brokers"][4]["configs"] == {"leader.replication.throttled.rate": "1"}
    assert [r["api"] for r in sim.write_requests()][-1] == "AlterConfigs"


# ---------------------------------------------------------------------------------------------------------
# DescribeLogDirs


@pytest.mark.parametrize("version", [1, 4])
def test_describe_log_dirs_reports_every_dir_with_its_volume(sim: SimProcess, version: int) -> None:
    with _client(sim, 1) as client:
        result = client.describe_log_dirs(version=version)
    dirs = result["dirs"]
    assert set(dirs) == {"/data/a", "/data/b"}
    logs = {path: {k: v for k, v in d["logs"].items() if k[0] == "logs"} for path, d in dirs.items()}
    assert logs == {
        "/data/a": {("logs", 0, False): (1000, 0)},
        "/data/b": {("logs", 1, False): (2000, 0), ("logs", 2, False): (3000, 0)},
    }
    if version >= 4:  # /data/a had 400 GB usable at the start, as the scenario says; /data/b all but its logs
        assert (dirs["/data/a"]["total_bytes"], dirs["/data/a"]["usable_bytes"]) == (10**12, 4 * 10**11)
        used_b = sum(size for size, _ in dirs["/data/b"]["logs"].values())
        assert (dirs["/data/b"]["total_bytes"], dirs["/data/b"]["usable_bytes"]) == (
            2 * 10**12,
            2 * 10**12 - used_b,
        )
    else:
        assert dirs["/data/a"]["total_bytes"] == -1  # not in v1


def test_a_catching_up_replica_has_no_offset_lag(sim: SimProcess) -> None:
    """ReplicaManager.getLogEndOffsetLag: a current log's lag is max(HW - LEO, 0), 0 for a follower too."""
    with _client(sim, _controller(sim)) as client:
        client.alter_partition_reassignments({("m4", 0): [6, 1, 2]})
    sim.advance(0.02)  # 2.5 MB of 10 MB copied
    with _client(sim, 6) as client:
        (info,) = client.describe_log_dirs({"m4": [0]})["dirs"].values()
    ((size, lag),) = info["logs"].values()
    assert 0 < size < 10_000_000 and lag == 0
    sim.advance(60)
    assert _partition(sim, "m4")["replicas"] == [6, 1, 2]


def test_alter_replica_log_dirs_moves_a_replica_between_dirs(sim: SimProcess) -> None:
    with _client(sim, 1) as client:
        errors = client.alter_replica_log_dirs(
            {"/data/b": {"logs": [0]}, "/data/x": {"logs": [1]}, "/data/a": {"logs": [2], "nope": [0]}}
        )
        # 57 LOG_DIR_NOT_FOUND, 3 UNKNOWN_TOPIC_OR_PARTITION; logs-0 and logs-2 get future logs
        assert errors == {("logs", 0): 0, ("logs", 1): 57, ("logs", 2): 0, ("nope", 0): 3}
        during = client.describe_log_dirs({"logs": [0, 2]})["dirs"]
        assert during["/data/b"]["logs"][("logs", 0, True)] == (
            0,
            1000,
        )  # future: nothing copied, 1000 behind
        sim.advance(1)
        after = client.describe_log_dirs({"logs": [0, 2]})["dirs"]
    assert after["/data/b"]["logs"] == {("logs", 0, False): (1000, 0)}
    assert after["/data/a"]["logs"] == {("logs", 2, False): (3000, 0)}
    with _client(sim, 3) as client:  # broker 3 hosts no replica of "logs": REPLICA_NOT_AVAILABLE
        assert client.alter_replica_log_dirs({"/var/lib/kafka/data": {"logs": [0]}}) == {("logs", 0): 9}


def test_subtracting_the_last_item_leaves_an_empty_value(ck: AdminClient) -> None:
    """Both modes write the joined remainder, "" (ConfigurationControlManager; prepareIncrementalConfigs)."""
    key = "follower.replication.throttled.replicas"
    for value, op in (("0:2", AlterConfigOpType.SET), ("0:2", AlterConfigOpType.SUBTRACT)):
        resource = ConfigResource(
            ConfigResource.Type.TOPIC,
            "m5",
            incremental_configs=[ConfigEntry(key, value, incremental_operation=op)],
        )
        ck.incremental_alter_configs([resource], request_timeout=10)[resource].result()
    described = ck.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, "m5")], request_timeout=10)
    entry = next(iter(described.values())).result()[key]
    assert (entry.value, entry.source) == ("", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)


def test_preferred_election_that_cannot_happen_through_librdkafka(
    ck: AdminClient, sim: SimProcess, mode: str
) -> None:
    sim.stop_broker(3)
    sim.start_broker(3)  # back, but out of sync while the clock is paused: its preferred partitions stay on 1
    try:
        errors = ck.elect_leaders(ElectionType.PREFERRED, [TopicPartition("m5", 0)]).result(timeout=20)
    finally:
        sim.advance(1)
    error = errors[TopicPartition("m5", 0)]
    assert error is not None and error.code() == KafkaError.PREFERRED_LEADER_NOT_AVAILABLE
    if mode == "zookeeper":
        assert error.str() == (
            "Failed to elect leader for partition m5-0 under strategy "
            "PreferredReplicaPartitionLeaderElectionStrategy"
        )
    else:
        assert error.str() == "The preferred leader was not available."

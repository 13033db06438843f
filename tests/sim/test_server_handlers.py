"""Handlers against a real model, with hand-built requests: what the clients never send but Kafka defines."""

from __future__ import annotations

import asyncio
import struct
import uuid
from typing import Any

import pytest
from kafka.protocol.admin import (
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from kafka.protocol.metadata import MetadataRequest, MetadataResponse

from reassignd.sim.model import SimCluster
from reassignd.sim.protocol import Endpoint
from reassignd.sim.runner import SimRuntime, kafka_protocol
from reassignd.sim.scenario import load_scenario

SCENARIO: dict[str, Any] = {
    "brokers": [{"id": 1, "rack": "a"}, {"id": 2, "rack": "b"}, {"id": 3, "rack": "a"}],
    "topics": [
        {
            "name": "t",
            "partitions": 2,
            "replication_factor": 2,
            "partition_bytes": 1000,
            "assignment": [[1, 2], [2, 3]],
        },
        {"name": "u", "partitions": 1, "replication_factor": 1, "partition_bytes": 10, "assignment": [[3]]},
    ],
}


@pytest.fixture
def cluster() -> SimCluster:
    return SimCluster.from_scenario(load_scenario(SCENARIO), seed=1)


def _call(cluster: SimCluster, request: Any, response_class: Any, broker: int = 1) -> Any:
    request.with_header(correlation_id=5, client_id="test")
    endpoints = {b: Endpoint(b, "127.0.0.1", 9000 + b) for b in cluster.brokers}
    frame = kafka_protocol().handle(bytes(request.encode(header=True)), cluster, broker, endpoints)
    return response_class.decode(frame[4:], version=request.API_VERSION, header=True)


def test_metadata_empty_list_is_no_topics_and_null_is_all(cluster: SimCluster) -> None:
    none = _call(cluster, MetadataRequest(version=12, topics=[]), MetadataResponse)
    assert none.topics == []
    everything = _call(cluster, MetadataRequest(version=12, topics=None), MetadataResponse)
    assert [t.name for t in everything.topics] == ["t", "u"]
    v0_all = _call(cluster, MetadataRequest(version=0, topics=[]), MetadataResponse)
    assert [t.name for t in v0_all.topics] == ["t", "u"]


def test_metadata_by_topic_id_and_unknown_id(cluster: SimCluster) -> None:
    topic_class = MetadataRequest.MetadataRequestTopic
    known = cluster.topics["u"].topic_id
    unknown = uuid.UUID(int=12345)
    request = MetadataRequest(
        version=12, topics=[topic_class(topic_id=known, name=None), topic_class(topic_id=unknown, name=None)]
    )
    response = _call(cluster, request, MetadataResponse)
    by_code = {t.error_code: t for t in response.topics}
    assert by_code[0].name == "u" and by_code[0].topic_id == known
    assert by_code[100].name is None and by_code[100].topic_id == unknown


def test_metadata_unknown_name_and_leaderless_partition(cluster: SimCluster) -> None:
    cluster.stop_broker(3)  # "u" has its only replica there
    request = MetadataRequest(
        version=9, topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in ("u", "x")]
    )
    response = _call(cluster, request, MetadataResponse)
    u, x = response.topics
    assert x.error_code == 3 and x.partitions == []
    (p,) = u.partitions
    assert (p.error_code, p.leader_id, p.offline_replicas) == (5, -1, [3])


def _describe(resource_type: int, name: str) -> Any:
    resource = DescribeConfigsRequest.DescribeConfigsResource
    return DescribeConfigsRequest(
        version=4,
        resources=[resource(resource_type=resource_type, resource_name=name, configuration_keys=None)],
        include_synonyms=True,
    )


@pytest.mark.parametrize(
    ("name", "code", "message"),
    [
        ("1", 0, ""),  # ConfigHelper sets only the code: the schema default "" (Kafka 4.4, measured)
        ("", 0, ""),
        ("2", 42, "Unexpected broker id, expected 1 or empty string, but received 2"),
        ("one", 42, "Broker id must be an integer, but it is: one"),
    ],
)
def test_broker_configs_are_described_by_that_broker_only(
    cluster: SimCluster, name: str, code: int, message: str
) -> None:
    (result,) = _call(cluster, _describe(4, name), DescribeConfigsResponse, broker=1).results
    assert (result.error_code, result.error_message) == (code, message)
    # A broker lists all its configs; the cluster default "" only the dynamic defaults set (none here).
    assert (result.configs != []) == (name == "1")


def test_describe_configs_unsupported_resource_type(cluster: SimCluster) -> None:
    (result,) = _call(cluster, _describe(8, "1"), DescribeConfigsResponse).results
    assert result.error_code == 42


def _alter(name: str, configs: list[tuple[str, int, str | None]], validate_only: bool) -> Any:
    resource = IncrementalAlterConfigsRequest.AlterConfigsResource
    op = resource.AlterableConfig
    return IncrementalAlterConfigsRequest(
        version=1,
        resources=[
            resource(
                resource_type=2,
                resource_name=name,
                configs=[op(name=k, config_operation=o, value=v) for k, o, v in configs],
            )
        ],
        validate_only=validate_only,
    )


def test_incremental_alter_validate_only_changes_nothing(cluster: SimCluster) -> None:
    request = _alter("t", [("retention.ms", 0, "1000")], validate_only=True)
    (result,) = _call(cluster, request, IncrementalAlterConfigsResponse).responses
    assert result.error_code == 0
    assert "retention.ms" not in cluster.topics["t"].configs
    (result,) = _call(
        cluster, _alter("t", [("retention.ms", 0, "1000")], False), IncrementalAlterConfigsResponse
    ).responses
    assert result.error_code == 0
    assert cluster.topics["t"].configs["retention.ms"] == "1000"


def test_incremental_alter_all_or_nothing_per_resource(cluster: SimCluster) -> None:
    request = _alter("t", [("retention.ms", 0, "1000"), ("min.insync.replicas", 0, "x")], validate_only=False)
    (result,) = _call(cluster, request, IncrementalAlterConfigsResponse).responses
    assert result.error_code == 40
    assert "x" in result.error_message
    assert "retention.ms" not in cluster.topics["t"].configs


def test_delete_topics_by_name_and_by_id(cluster: SimCluster) -> None:
    state = DeleteTopicsRequest.DeleteTopicState
    u_id = cluster.topics["u"].topic_id
    request = DeleteTopicsRequest(
        version=6,
        topics=[state(name=None, topic_id=u_id), state(name="nope", topic_id=uuid.UUID(int=0))],
        timeout_ms=1000,
    )
    results = {r.name: r for r in _call(cluster, request, DeleteTopicsResponse).responses}
    assert results["u"].error_code == 0 and results["u"].topic_id == u_id
    assert results["nope"].error_code == 3
    assert "u" not in cluster.topics
    old = _call(
        cluster, DeleteTopicsRequest(version=4, topic_names=["t"], timeout_ms=1000), DeleteTopicsResponse
    )
    assert [(r.name, r.error_code) for r in old.responses] == [("t", 0)]


def test_describe_log_dirs_answers_for_the_connected_broker(cluster: SimCluster) -> None:
    response = _call(
        cluster, DescribeLogDirsRequest(version=4, topics=None), DescribeLogDirsResponse, broker=3
    )
    placed = {(t.name, p.partition_index) for d in response.results for t in d.topics for p in t.partitions}
    assert placed == {("t", 1), ("u", 0)}


async def test_pipelined_requests_are_answered_in_order() -> None:
    runtime = SimRuntime(SimCluster.from_scenario(load_scenario(SCENARIO), seed=1), time_scale=0)
    await runtime.start()
    try:
        port = runtime.listeners.endpoints[2].port
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        frames = b""
        for correlation_id in range(1, 21):
            request = MetadataRequest(version=12, topics=None if correlation_id % 2 else [])
            request.with_header(correlation_id=correlation_id, client_id="pipeline")
            frames += bytes(request.encode(header=True, framed=True))
        writer.write(frames)  # all at once, before reading anything
        await writer.drain()
        seen = []
        for _ in range(20):
            (size,) = struct.unpack(">i", await reader.readexactly(4))
            payload = await reader.readexactly(size)
            seen.append(struct.unpack_from(">i", payload)[0])
        assert seen == list(range(1, 21))
        writer.close()
        await writer.wait_closed()
    finally:
        await runtime.stop()


@pytest.mark.parametrize(
    ("endpoint_type", "code", "message"),
    [
        (1, 0, None),
        (
            2,
            114,
            "The request was sent to an endpoint of type BROKER, "
            "but we wanted an endpoint of type CONTROLLER",
        ),
        (3, 115, "Unsupported endpoint type 3"),
    ],
)
def test_describe_cluster_endpoint_types(
    cluster: SimCluster, endpoint_type: int, code: int, message: str | None
) -> None:
    from kafka.protocol.admin import DescribeClusterRequest, DescribeClusterResponse

    request = DescribeClusterRequest(version=2, endpoint_type=endpoint_type, include_fenced_brokers=True)
    cluster.stop_broker(2)
    response = _call(cluster, request, DescribeClusterResponse)
    assert (response.error_code, response.error_message) == (code, message)
    if code == 0:
        assert {b.broker_id: b.is_fenced for b in response.brokers} == {1: False, 2: True, 3: False}
        assert response.cluster_id == cluster.cluster_id
    else:
        assert response.brokers == [] and response.cluster_id == ""

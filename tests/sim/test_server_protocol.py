"""The wire layer on its own: framing, ApiVersions (KIP-511), and the fast Metadata encoder's equality."""

from __future__ import annotations

import struct
import uuid
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest

from reassignd.sim.protocol import Endpoint, ProtocolError, schema_versions
from reassignd.sim.protocol_metadata import (
    METADATA_MAX_VERSION,
    BrokerRow,
    PartitionRow,
    TopicRow,
    encode_metadata_body,
    metadata_response,
)
from reassignd.sim.runner import kafka_protocol

ENDPOINTS = {1: Endpoint(1, "127.0.0.1", 9092)}


def _request_frame(request: object, correlation_id: int = 7) -> bytes:
    request.with_header(correlation_id=correlation_id, client_id="test")  # type: ignore[attr-defined]
    return bytes(request.encode(header=True))  # type: ignore[attr-defined]


def _unframe(frame: bytes) -> bytes:
    (size,) = struct.unpack_from(">i", frame)
    assert size == len(frame) - 4
    return frame[4:]


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_api_versions_lists_only_schema_versions(version: int) -> None:
    protocol = kafka_protocol()
    frame = protocol.handle(_request_frame(ApiVersionsRequest(version=version)), None, 1, ENDPOINTS)
    payload = _unframe(frame)
    assert struct.unpack_from(">i", payload)[0] == 7  # response header v0: correlation id, no tagged fields
    response = ApiVersionsResponse.decode(payload, version=version, header=True)
    assert response.error_code == 0
    advertised = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    for key, spec in protocol.specs.items():
        low, high = schema_versions(spec.request_class)
        assert advertised[key][0] >= low and advertised[key][1] <= high
    assert advertised[MetadataRequest.API_KEY] == (0, METADATA_MAX_VERSION)
    assert {3, 18, 19, 20, 32, 35, 43, 44, 45, 46, 60} <= set(advertised)


def test_unsupported_api_versions_version_gets_v0_error_with_list() -> None:
    protocol = kafka_protocol()
    # A version from the future: header as a v2 request header would be, body irrelevant.
    payload = struct.pack(">hhih", 18, 99, 42, 4) + b"test" + b"\x00"
    response = ApiVersionsResponse.decode(_unframe(protocol.handle(payload, None, 1, ENDPOINTS)), header=True)
    assert response.header.correlation_id == 42
    assert response.error_code == 35
    assert any(k.api_key == 3 for k in response.api_keys)


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (struct.pack(">hhih", 0, 9, 1, -1), "unsupported api key 0"),  # Produce is not served
        (struct.pack(">hhih", 3, 14, 1, -1), "unsupported version 14"),
        (b"\x00\x03", "shorter than a request header"),
        (struct.pack(">hhih", 3, 12, 1, -1) + b"\xff", "cannot decode"),
    ],
)
def test_requests_we_cannot_answer_close_the_connection(payload: bytes, reason: str) -> None:
    with pytest.raises(ProtocolError, match=reason):
        kafka_protocol().handle(payload, None, 1, ENDPOINTS)


_ids = st.integers(min_value=-1, max_value=2**31 - 1)
_lists = st.lists(_ids, max_size=5)
_partitions = st.builds(PartitionRow, st.sampled_from([0, 5, 9]), _ids, _ids, _ids, _lists, _lists, _lists)
_text = st.text(max_size=20)


@settings(max_examples=60, deadline=None)
@given(
    version=st.integers(min_value=0, max_value=METADATA_MAX_VERSION),
    brokers=st.lists(st.builds(BrokerRow, _ids, _text, _ids, st.none() | _text), max_size=4),
    cluster_id=st.none() | _text,
    controller=_ids,
    topics=st.lists(
        st.builds(
            TopicRow,
            st.sampled_from([0, 3, 100]),
            _text,
            st.uuids(),
            st.lists(_partitions, max_size=4) | st.lists(_partitions, min_size=130, max_size=140),
        ),
        max_size=4,
    ),
)
def test_fast_metadata_encoder_is_byte_identical_to_the_schema_encoder(
    version: int,
    brokers: list[BrokerRow],
    cluster_id: str | None,
    controller: int,
    topics: list[TopicRow],
) -> None:
    if version < 2:
        cluster_id = None  # not in the schema before v2
    expected = bytes(metadata_response(version, brokers, cluster_id, controller, topics).encode())
    assert encode_metadata_body(version, brokers, cluster_id, controller, topics) == expected


def test_fast_metadata_encoder_null_topic_name_v12() -> None:
    topics = [TopicRow(100, None, uuid.uuid4(), [])]
    expected = bytes(metadata_response(12, [], "c", 1, topics).encode())
    assert encode_metadata_body(12, [], "c", 1, topics) == expected


def test_metadata_request_goes_through_the_fast_path_and_decodes() -> None:
    from kafka.protocol.metadata import MetadataResponse

    topic = SimpleNamespace(
        name="t",
        topic_id=uuid.uuid4(),
        partitions=[SimpleNamespace(index=0, replicas=[1, 2], isr=[1], leader=1, leader_epoch=4)],
    )
    cluster = SimpleNamespace(
        cluster_id="cid",
        controller_id=1,
        advertised_controller=lambda: 1,
        brokers={1: SimpleNamespace(online=True, rack="r1"), 2: SimpleNamespace(online=False, rack=None)},
        topics={"t": topic},
        published=lambda p: (p.replicas, p.isr, p.leader, p.leader_epoch),
    )
    endpoints = {1: Endpoint(1, "127.0.0.1", 9001), 2: Endpoint(2, "127.0.0.1", 9002)}
    request = MetadataRequest(version=12, topics=None, allow_auto_topic_creation=False)
    frame = kafka_protocol().handle(_request_frame(request, 3), cluster, 1, endpoints)
    response = MetadataResponse.decode(_unframe(frame), version=12, header=True)
    assert response.header.correlation_id == 3
    assert [b.node_id for b in response.brokers] == [1]  # a stopped broker is not listed
    (t,) = response.topics
    assert (t.name, t.topic_id) == ("t", topic.topic_id)
    (p,) = t.partitions
    assert (p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes, p.offline_replicas) == (
        1,
        4,
        [1, 2],
        [1],
        [2],
    )


@pytest.mark.parametrize("version", [4, 9, 12])
def test_fast_metadata_encoder_long_replica_lists(version: int) -> None:
    """Lists of 127+ entries need a multi-byte compact length: the encoder's general path."""
    many = list(range(200))
    rows = [TopicRow(0, "wide", uuid.UUID(int=7), [PartitionRow(0, 0, 1, 2, many, many[:130], many[:127])])]
    brokers = [BrokerRow(1, "h", 1, None)]
    expected = bytes(metadata_response(version, brokers, "c", 1, rows).encode())
    assert encode_metadata_body(version, brokers, "c", 1, rows) == expected


@pytest.mark.parametrize("version", [0, 1, 5, 9, 10, 12])
def test_metadata_handler_matches_schema_encoding_on_a_real_model(version: int) -> None:
    from reassignd.sim.model import SimCluster
    from reassignd.sim.protocol import RequestContext
    from reassignd.sim.protocol_metadata import broker_rows, requested_topics
    from reassignd.sim.scenario import load_scenario

    scenario = {
        "brokers": [{"id": i, "rack": f"r{i % 2}"} for i in range(1, 5)],
        "topics": [{"name": "a", "partitions": 6, "replication_factor": 3, "partition_bytes": 100}],
    }
    cluster = SimCluster.from_scenario(load_scenario(scenario), seed=5)
    cluster.stop_broker(2)
    cluster.alter_partition_reassignment("a", 0, [4, 3, 1])
    endpoints = {b: Endpoint(b, "127.0.0.1", 9000 + b) for b in cluster.brokers}
    request = MetadataRequest(version=version, topics=[] if version == 0 else None)
    frame = kafka_protocol().handle(_request_frame(request, 11), cluster, 1, endpoints)
    ctx = RequestContext(cluster, 1, version, "test", endpoints)
    decoded = MetadataRequest.decode(_request_frame(request, 11), version=version, header=True)
    rows = requested_topics(ctx, decoded)
    cluster_id = cluster.cluster_id if version >= 2 else None
    # KRaft: each answer names a random unfenced broker as the controller (getRandomAliveBrokerId)
    named = {
        b: bytes(metadata_response(version, broker_rows(ctx), cluster_id, b, rows).encode())
        for b in (1, 3, 4)
    }
    assert any(_unframe(frame).endswith(body) for body in named.values())
    assert [b.node_id for b in broker_rows(ctx)] == [1, 3, 4]
    if version >= 5:
        assert any(2 in p.offline for p in rows[0].partitions)

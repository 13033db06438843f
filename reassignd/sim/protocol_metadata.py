"""Metadata and DescribeCluster: what the brokers and partitions look like from a client.

Follows Kafka's KRaftMetadataCache (core/src/main/scala/kafka/server/metadata/KRaftMetadataCache.scala):
only registered, unfenced brokers are listed; a partition whose leader is not alive reports
LEADER_NOT_AVAILABLE with leader -1; replicas and ISR are not filtered for v1+ (`errorUnavailableEndpoints`
is only set for v0, where unavailable replicas are dropped and REPLICA_NOT_AVAILABLE reported); an unknown
topic name is UNKNOWN_TOPIC_OR_PARTITION and an unknown id UNKNOWN_TOPIC_ID. Topics are never created by
Metadata (the simulator behaves as `auto.create.topics.enable=false`).

Metadata for every topic of a large cluster is the hot path (the daemon polls it), so its body is encoded by
`encode_metadata_body`, a direct encoder kept byte-identical to kafka-python's schema encoding
(`metadata_response`, checked by tests/sim/test_server_protocol.py).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from kafka.protocol.admin import DescribeClusterRequest, DescribeClusterResponse
from kafka.protocol.metadata import MetadataRequest, MetadataResponse

from reassignd.sim.errors import (
    LEADER_NOT_AVAILABLE,
    NONE,
    REPLICA_NOT_AVAILABLE,
    UNKNOWN_TOPIC_ID,
    UNKNOWN_TOPIC_OR_PARTITION,
)
from reassignd.sim.protocol import ApiSpec, RequestContext, api_spec

ZERO_UUID = uuid.UUID(int=0)
METADATA_MAX_VERSION = 13  # v13 (Kafka 4.0, KIP-1102) only adds a top-level error code

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I32x2 = struct.Struct(">ii")


class PartitionRow(NamedTuple):
    error_code: int
    partition_index: int
    leader: int
    leader_epoch: int
    replicas: Sequence[int]
    isr: Sequence[int]
    offline: Sequence[int]


class TopicRow(NamedTuple):
    error_code: int
    name: str | None
    topic_id: uuid.UUID
    partitions: Sequence[PartitionRow]


class BrokerRow(NamedTuple):
    node_id: int
    host: str
    port: int
    rack: str | None


# ---------------------------------------------------------------------------------------------------------
# What the cluster looks like


def broker_rows(ctx: RequestContext) -> list[BrokerRow]:
    rows = []
    for broker_id, endpoint in sorted(ctx.endpoints.items()):
        broker = ctx.cluster.brokers.get(broker_id)
        if broker is not None and broker.online:
            rows.append(BrokerRow(broker_id, endpoint.host, endpoint.port, broker.rack))
    return rows


def topic_row(
    topic: Any,
    online: set[int],
    version: int,
    published: Any,
    any_offline: bool = True,
    *,
    replica_online: Any = None,
) -> TopicRow:
    """One topic as this broker's Metadata shows it: each partition as `published` (the cluster's view
    that trails the controller by its metadata delay) gives it. `replica_online(p, broker)`, while a log
    dir has failed: a replica in it is offline too (KRaftMetadataCache.getOfflineReplicas)."""
    partitions = []
    for p in topic.partitions:
        replicas, isr, leader, leader_epoch = published(p)
        offline = [r for r in replicas if r not in online] if any_offline else ()
        if replica_online is not None:
            offline = [r for r in replicas if r not in online or not replica_online(p, r)]
        error = NONE
        if leader not in online:
            error, leader = LEADER_NOT_AVAILABLE, -1
        elif version == 0 and offline:
            error = REPLICA_NOT_AVAILABLE
            replicas = [r for r in replicas if r in online]
            isr = [r for r in isr if r in online]
        partitions.append(PartitionRow(error, p.index, leader, leader_epoch, replicas, isr, offline))
    return TopicRow(NONE, topic.name, topic.topic_id, partitions)


def requested_topics(ctx: RequestContext, request: Any) -> list[TopicRow]:
    cluster, version = ctx.cluster, ctx.api_version
    online = {b for b, broker in cluster.brokers.items() if broker.online}
    any_offline = len(online) < len(cluster.brokers)
    wanted = request.topics
    if wanted is None or (version == 0 and not wanted):
        return [
            topic_row(
                t, online, version, cluster.published, any_offline, replica_online=_replica_online(cluster)
            )
            for _, t in sorted(cluster.topics.items())
        ]
    by_id = None
    rows = []
    for item in wanted:
        name = item.name
        if name is None and version >= 10:
            if by_id is None:
                by_id = {t.topic_id: t for t in cluster.topics.values()}
            topic = by_id.get(item.topic_id)
            if topic is None:
                rows.append(TopicRow(UNKNOWN_TOPIC_ID, None, item.topic_id or ZERO_UUID, []))
                continue
        else:
            topic = cluster.topics.get(name)
            if topic is None:
                rows.append(TopicRow(UNKNOWN_TOPIC_OR_PARTITION, name, ZERO_UUID, []))
                continue
        rows.append(
            topic_row(topic, online, version, cluster.published, replica_online=_replica_online(cluster))
        )
    return rows


def _replica_online(cluster: Any) -> Any:
    """The per-replica test while a log dir has failed, else None (no cost on the usual path)."""
    return cluster.replica_online if getattr(cluster, "_failed_dirs", None) else None


def handle_metadata(ctx: RequestContext, request: Any) -> bytes:
    return encode_metadata_body(
        ctx.api_version,
        broker_rows(ctx),
        ctx.cluster.cluster_id,
        _controller(ctx),
        requested_topics(ctx, request),
    )


def _controller(ctx: RequestContext) -> int:
    return int(ctx.cluster.advertised_controller())


ENDPOINT_BROKER, ENDPOINT_CONTROLLER = 1, 2
MISMATCHED_ENDPOINT_TYPE, UNSUPPORTED_ENDPOINT_TYPE = 114, 115


def _endpoint_refusal(ctx: RequestContext, request: Any) -> tuple[int, str] | None:
    """KIP-919 (AuthHelper.computeDescribeClusterResponse): a broker listener serves endpoint type BROKER."""
    endpoint_type = request.endpoint_type if ctx.api_version >= 1 else ENDPOINT_BROKER
    if endpoint_type not in (ENDPOINT_BROKER, ENDPOINT_CONTROLLER):
        return UNSUPPORTED_ENDPOINT_TYPE, f"Unsupported endpoint type {endpoint_type}"
    if endpoint_type == ENDPOINT_CONTROLLER:
        return (
            MISMATCHED_ENDPOINT_TYPE,
            "The request was sent to an endpoint of type BROKER, "
            "but we wanted an endpoint of type CONTROLLER",
        )
    return None


def handle_describe_cluster(ctx: RequestContext, request: Any) -> Any:
    response = DescribeClusterResponse
    refusal = _endpoint_refusal(ctx, request)
    if refusal is not None:  # the code and the message alone, as Kafka answers it
        return response(
            version=ctx.api_version,
            throttle_time_ms=0,
            error_code=refusal[0],
            error_message=refusal[1],
            endpoint_type=ENDPOINT_BROKER,
            cluster_id="",
            controller_id=-1,
            brokers=[],
            authorized_operations=None,
        )
    include_fenced = ctx.api_version >= 2 and request.include_fenced_brokers
    brokers = []
    for broker_id, endpoint in sorted(ctx.endpoints.items()):
        broker = ctx.cluster.brokers.get(broker_id)
        if broker is None or (not broker.online and not include_fenced):
            continue
        brokers.append(
            response.DescribeClusterBroker(
                broker_id=broker_id,
                host=endpoint.host,
                port=endpoint.port,
                rack=broker.rack,
                is_fenced=not broker.online,
            )
        )
    return response(
        version=ctx.api_version,
        throttle_time_ms=0,
        error_code=NONE,
        error_message=None,
        endpoint_type=ENDPOINT_BROKER,
        cluster_id=ctx.cluster.cluster_id,
        controller_id=_controller(ctx),
        brokers=brokers,
        authorized_operations=None,
    )


def specs() -> list[ApiSpec]:
    return [
        api_spec(MetadataRequest, MetadataResponse, handle_metadata, cap=METADATA_MAX_VERSION),
        api_spec(DescribeClusterRequest, DescribeClusterResponse, handle_describe_cluster),
    ]


# ---------------------------------------------------------------------------------------------------------
# The schema encoding (reference) and the direct encoding (hot path)


def metadata_response(
    version: int,
    brokers: Iterable[BrokerRow],
    cluster_id: str | None,
    controller_id: int,
    topics: Iterable[TopicRow],
) -> Any:
    r = MetadataResponse
    return r(
        version=version,
        throttle_time_ms=0,
        brokers=[
            r.MetadataResponseBroker(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
            for b in brokers
        ],
        cluster_id=cluster_id,
        controller_id=controller_id,
        topics=[
            r.MetadataResponseTopic(
                error_code=t.error_code,
                name=t.name,
                topic_id=t.topic_id,
                is_internal=False,
                partitions=[
                    r.MetadataResponseTopic.MetadataResponsePartition(
                        error_code=p.error_code,
                        partition_index=p.partition_index,
                        leader_id=p.leader,
                        leader_epoch=p.leader_epoch,
                        replica_nodes=list(p.replicas),
                        isr_nodes=list(p.isr),
                        offline_replicas=list(p.offline),
                    )
                    for p in t.partitions
                ],
                authorized_operations=None,
            )
            for t in topics
        ],
        authorized_operations=None,
        error_code=NONE,
    )


def _uvarint(n: int) -> bytes:
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_SMALL_UVARINT = [bytes((n,)) for n in range(0x80)]
_AUTH_OPS_NONE = _I32.pack(-(2**31))
_TAGS_NONE = b"\x00"


_PARTITION_STRUCTS: dict[tuple[int, bool, int, int, int], struct.Struct] = {}


def _partition_struct(version: int, flexible: bool, n: int, m: int, k: int) -> struct.Struct:
    """One struct for a whole partition entry of this shape, so encoding it is a single pack call."""
    key = (version, flexible, n, m, k)
    found = _PARTITION_STRUCTS.get(key)
    if found is None:
        length = "B" if flexible else "i"  # flexible: uvarint(count + 1), one byte while count < 127
        fmt = ">hii" + ("i" if version >= 7 else "")
        fmt += f"{length}{n}i{length}{m}i"
        if version >= 5:
            fmt += f"{length}{k}i"
        if flexible:
            fmt += "B"  # empty tagged fields
        found = _PARTITION_STRUCTS[key] = struct.Struct(fmt)
    return found


def _encode_partition(version: int, flexible: bool, p: PartitionRow) -> bytes:
    replicas, isr, offline = p.replicas, p.isr, p.offline
    n, m, k = len(replicas), len(isr), len(offline) if version >= 5 else 0
    if flexible and max(n, m, k) >= 0x7F:
        return _encode_partition_slow(version, flexible, p)
    shift = 1 if flexible else 0
    values: list[int] = [p.error_code, p.partition_index, p.leader]
    if version >= 7:
        values.append(p.leader_epoch)
    values.append(n + shift)
    values.extend(replicas)
    values.append(m + shift)
    values.extend(isr)
    if version >= 5:
        values.append(k + shift)
        values.extend(offline)
    if flexible:
        values.append(0)
    return _partition_struct(version, flexible, n, m, k).pack(*values)


def _encode_partition_slow(version: int, flexible: bool, p: PartitionRow) -> bytes:
    def int_array(values: Sequence[int]) -> bytes:
        count = _uvarint(len(values) + 1) if flexible else _I32.pack(len(values))
        return count + struct.pack(f">{len(values)}i", *values)

    out = _I16.pack(p.error_code) + _I32x2.pack(p.partition_index, p.leader)
    if version >= 7:
        out += _I32.pack(p.leader_epoch)
    out += int_array(p.replicas) + int_array(p.isr)
    if version >= 5:
        out += int_array(p.offline)
    return out + (_TAGS_NONE if flexible else b"")


def encode_metadata_body(
    version: int,
    brokers: Sequence[BrokerRow],
    cluster_id: str | None,
    controller_id: int,
    topics: Sequence[TopicRow],
) -> bytes:
    """The response body (no header), byte-identical to `metadata_response(...).encode()`."""
    flexible = version >= 9

    def length(n: int) -> bytes:
        if flexible:
            return _SMALL_UVARINT[n + 1] if n + 1 < 0x80 else _uvarint(n + 1)
        return _I32.pack(n)

    def string(s: str | None) -> bytes:
        if s is None:
            return b"\x00" if flexible else b"\xff\xff"
        raw = s.encode()
        return (_uvarint(len(raw) + 1) if flexible else _I16.pack(len(raw))) + raw

    tags = _TAGS_NONE if flexible else b""

    out: list[bytes] = []
    if version >= 3:
        out.append(_I32.pack(0))
    out.append(length(len(brokers)))
    for b in brokers:
        out.append(_I32.pack(b.node_id) + string(b.host) + _I32.pack(b.port))
        if version >= 1:
            out.append(string(b.rack))
        out.append(tags)
    if version >= 2:
        out.append(string(cluster_id))
    if version >= 1:
        out.append(_I32.pack(controller_id))
    out.append(length(len(topics)))
    for t in topics:
        out.append(_I16.pack(t.error_code) + string(t.name))
        if version >= 10:
            out.append(t.topic_id.bytes)
        if version >= 1:
            out.append(b"\x00")  # is_internal
        out.append(length(len(t.partitions)))
        for p in t.partitions:
            out.append(_encode_partition(version, flexible, p))
        if version >= 8:
            out.append(_AUTH_OPS_NONE)
        out.append(tags)
    if 8 <= version <= 10:
        out.append(_AUTH_OPS_NONE)
    if version >= 13:
        out.append(_I16.pack(NONE))
    out.append(tags)
    return b"".join(out)

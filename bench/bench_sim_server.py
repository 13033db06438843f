"""Simulator wire server: Metadata for every topic of a large cluster (target: under 2 s at 100k partitions).

Figures:
- `metadata_handler_s`: decode a Metadata v12 request for all topics, build the rows from the model and encode
  the response (the in-process cost of one poll);
- `metadata_schema_encode_s`: the same response through kafka-python's generic encoder, for comparison;
- `metadata_tcp_s`: the same request over a loopback TCP connection to a running `SimRuntime`, until the
  last response byte is read.
The fast encoder's output is checked byte for byte against the schema encoder (AssertionError otherwise).
"""

from __future__ import annotations

import asyncio
import socket
import struct
import time
import warnings
from typing import Any

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.protocol.metadata import MetadataRequest

from reassignd.sim.model import SimCluster
from reassignd.sim.protocol_metadata import (
    broker_rows,
    encode_metadata_body,
    metadata_response,
    requested_topics,
)
from reassignd.sim.runner import SimRuntime, kafka_protocol
from reassignd.sim.scenario import load_scenario


def _cluster(brokers: int, topics: int, partitions_per_topic: int) -> SimCluster:
    racks = ["r1", "r2", "r3"]
    scenario = {
        "brokers": [{"id": i, "rack": racks[i % 3]} for i in range(1, brokers + 1)],
        "topics": [
            {
                "name": f"topic-{t:05d}",
                "partitions": partitions_per_topic,
                "replication_factor": 3,
                "partition_bytes": 1_000_000,
            }
            for t in range(topics)
        ],
        "seed": 1,
    }
    return SimCluster.from_scenario(load_scenario(scenario), seed=1)


def _request_frame(correlation_id: int) -> bytes:
    request = MetadataRequest(version=12, topics=None, allow_auto_topic_creation=False)
    request.with_header(correlation_id=correlation_id, client_id="bench")
    return bytes(request.encode(header=True, framed=True))


def _tcp_roundtrip(port: int, frame: bytes) -> tuple[float, int]:
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        start = time.perf_counter()
        sock.sendall(frame)
        header = b""
        while len(header) < 4:
            header += sock.recv(4 - len(header))
        (size,) = struct.unpack(">i", header)
        remaining = size
        while remaining:
            chunk = sock.recv(min(remaining, 1 << 20))
            if not chunk:
                raise ConnectionError("simulator closed the connection")
            remaining -= len(chunk)
        return time.perf_counter() - start, size


async def _over_tcp(cluster: SimCluster, frame: bytes) -> tuple[float, int]:
    runtime = SimRuntime(cluster, time_scale=0)
    await runtime.start()
    try:
        port = runtime.listeners.endpoints[min(cluster.brokers)].port
        return await asyncio.to_thread(_tcp_roundtrip, port, frame)
    finally:
        await runtime.stop()


def run(quick: bool) -> dict[str, Any]:
    brokers, topics, per_topic = (10, 50, 100) if quick else (100, 1000, 100)
    start = time.perf_counter()
    cluster = _cluster(brokers, topics, per_topic)
    build_s = time.perf_counter() - start
    protocol = kafka_protocol()
    frame = _request_frame(1)
    from reassignd.sim.protocol import Endpoint

    endpoints = {b: Endpoint(b, "127.0.0.1", 9000 + b) for b in cluster.brokers}

    start = time.perf_counter()
    response = protocol.handle(frame[4:], cluster, min(cluster.brokers), endpoints)
    handler_s = time.perf_counter() - start

    from reassignd.sim.protocol import RequestContext

    ctx = RequestContext(cluster, min(cluster.brokers), 12, "bench", endpoints)
    request = MetadataRequest.decode(frame[4:], version=12, header=True)
    rows = requested_topics(ctx, request)
    brokers_rows = broker_rows(ctx)
    start = time.perf_counter()
    reference = bytes(
        metadata_response(12, brokers_rows, cluster.cluster_id, cluster.controller_id, rows).encode()
    )
    schema_s = time.perf_counter() - start
    fast = encode_metadata_body(12, brokers_rows, cluster.cluster_id, cluster.controller_id, rows)
    if fast != reference:
        raise AssertionError("fast Metadata encoder differs from kafka-python's schema encoding")
    if not response.endswith(fast):
        raise AssertionError("handler response body differs from the encoder's")

    tcp_s, size = asyncio.run(_over_tcp(cluster, _request_frame(2)))
    figures = {
        "brokers": brokers,
        "partitions": topics * per_topic,
        "cluster_build_s": round(build_s, 3),
        "metadata_handler_s": round(handler_s, 3),
        "metadata_schema_encode_s": round(schema_s, 3),
        "metadata_tcp_s": round(tcp_s, 3),
        "metadata_response_bytes": size,
        "note": "2 shared cores, other jobs running: figures are noisy",
    }
    for key, value in figures.items():
        print(f"   {key}: {value}")
    return figures

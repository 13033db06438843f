"""A minimal Kafka wire client, written from Kafka's JSON message schemas, independent of the simulator.

The simulator decodes requests and encodes responses with kafka-python's schema classes; a test that used
the same classes on the client side could not catch a disagreement with Kafka, since both ends would share
it. This module shares nothing with them: the layouts below were written by hand from apache/kafka
clients/src/main/resources/common/message/{ApiVersions,AlterPartitionReassignments,
ListPartitionReassignments,IncrementalAlterConfigs,AlterConfigs,DescribeLogDirs,AlterReplicaLogDirs}
{Request,Response}.json, and the framing from the protocol guide: request header v1 (api key, version,
correlation id, nullable client id) or v2 with tagged fields for flexible versions; response header v0, or
v1 with tagged fields for flexible versions except ApiVersions (always v0, KIP-511).

Only what the tests need is here: the fields of those messages, at the versions the simulator serves.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

API_VERSIONS = 18
ALTER_CONFIGS = 33
ALTER_REPLICA_LOG_DIRS = 34
DESCRIBE_LOG_DIRS = 35
INCREMENTAL_ALTER_CONFIGS = 44
ALTER_PARTITION_REASSIGNMENTS = 45
LIST_PARTITION_REASSIGNMENTS = 46

# First flexible version per API ("flexibleVersions" in each schema).
FLEXIBLE_FROM = {
    API_VERSIONS: 3,
    ALTER_CONFIGS: 2,
    ALTER_REPLICA_LOG_DIRS: 2,
    DESCRIBE_LOG_DIRS: 2,
    INCREMENTAL_ALTER_CONFIGS: 1,
    ALTER_PARTITION_REASSIGNMENTS: 0,
    LIST_PARTITION_REASSIGNMENTS: 0,
}


class Writer:
    """Kafka's primitive types; `flexible` picks the compact forms (KIP-482)."""

    def __init__(self, flexible: bool) -> None:
        self.flexible = flexible
        self.parts: list[bytes] = []

    def int8(self, v: int) -> Writer:
        self.parts.append(struct.pack(">b", v))
        return self

    def int16(self, v: int) -> Writer:
        self.parts.append(struct.pack(">h", v))
        return self

    def int32(self, v: int) -> Writer:
        self.parts.append(struct.pack(">i", v))
        return self

    def boolean(self, v: bool) -> Writer:
        return self.int8(1 if v else 0)

    def uvarint(self, v: int) -> Writer:
        out = bytearray()
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)
        self.parts.append(bytes(out))
        return self

    def length(self, n: int | None) -> Writer:
        """An array or string length; None is null (-1, or 0 in the compact form)."""
        if self.flexible:
            return self.uvarint(0 if n is None else n + 1)
        return self.int32(-1 if n is None else n)

    def string(self, s: str | None) -> Writer:
        if s is None:
            return self.uvarint(0) if self.flexible else self.int16(-1)
        raw = s.encode()
        if self.flexible:
            self.uvarint(len(raw) + 1)
        else:
            self.int16(len(raw))
        self.parts.append(raw)
        return self

    def int32_array(self, values: Sequence[int] | None) -> Writer:
        self.length(None if values is None else len(values))
        for v in values or ():
            self.int32(v)
        return self

    def tags(self) -> Writer:
        """An empty tagged-field section (flexible versions only)."""
        if self.flexible:
            self.uvarint(0)
        return self

    def bytes(self) -> bytes:
        return b"".join(self.parts)


class Reader:
    def __init__(self, data: bytes, flexible: bool) -> None:
        self.data, self.pos, self.flexible = data, 0, flexible

    def _take(self, fmt: str) -> Any:
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return value

    def int8(self) -> int:
        return int(self._take(">b"))

    def int16(self) -> int:
        return int(self._take(">h"))

    def int32(self) -> int:
        return int(self._take(">i"))

    def int64(self) -> int:
        return int(self._take(">q"))

    def boolean(self) -> bool:
        return self.int8() != 0

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            byte = self.data[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7

    def length(self) -> int | None:
        if self.flexible:
            n = self.uvarint()
            return None if n == 0 else n - 1
        n = self.int32()
        return None if n < 0 else n

    def string(self) -> str | None:
        n = self.uvarint() - 1 if self.flexible else self.int16()
        if n < 0:
            return None
        raw = self.data[self.pos : self.pos + n]
        self.pos += n
        return raw.decode()

    def array(self, item: Any) -> list[Any] | None:
        n = self.length()
        return None if n is None else [item() for _ in range(n)]

    def int32_array(self) -> list[int]:
        return self.array(self.int32) or []

    def tags(self) -> dict[int, bytes]:
        if not self.flexible:
            return {}
        tagged = {}
        for _ in range(self.uvarint()):
            tag, size = self.uvarint(), self.uvarint()
            tagged[tag] = self.data[self.pos : self.pos + size]
            self.pos += size
        return tagged

    def done(self) -> bool:
        return self.pos == len(self.data)


@dataclass
class WireClient:
    """One blocking connection to one broker."""

    host: str
    port: int
    client_id: str = "kafka-wire-test"
    timeout: float = 10.0

    def __post_init__(self) -> None:
        self._sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        self._correlation = 0

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def call(self, api_key: int, version: int, body: bytes) -> Reader:
        """Send one request; the response body, positioned after its header."""
        self._correlation += 1
        flexible = version >= FLEXIBLE_FROM[api_key]
        header = Writer(flexible=False).int16(api_key).int16(version).int32(self._correlation)
        header.string(self.client_id)  # the header's client id is never a compact string
        if flexible:
            header.uvarint(0)
        frame = header.bytes() + body
        self._sock.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", self._recv(4))[0]
        reader = Reader(self._recv(size), flexible)
        assert reader.int32() == self._correlation
        if flexible and api_key != API_VERSIONS:
            reader.tags()
        return reader

    def _recv(self, n: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < n:
            chunk = self._sock.recv(n - len(chunks))
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            chunks += chunk
        return bytes(chunks)

    # -- ApiVersions -----------------------------------------------------------------------------------

    def api_versions(self, version: int = 3) -> dict[str, Any]:
        w = Writer(version >= 3)
        if version >= 3:
            w.string("kafka-wire-test").string("1.0").tags()
        r = self.call(API_VERSIONS, version, w.bytes())
        error = r.int16()

        def api() -> tuple[int, int, int]:
            key, low, high = r.int16(), r.int16(), r.int16()
            r.tags()
            return key, low, high

        keys = r.array(api) or []
        throttle = r.int32() if version >= 1 else 0
        r.tags()
        return {"error_code": error, "api_keys": {k: (lo, hi) for k, lo, hi in keys}, "throttle": throttle}

    # -- KIP-455 ------------------------------------------------------------------------------------------

    def alter_partition_reassignments(
        self,
        targets: dict[tuple[str, int], Sequence[int] | None],
        version: int = 0,
        allow_replication_factor_change: bool = True,
    ) -> dict[str, Any]:
        w = Writer(True).int32(30_000)
        if version >= 1:
            w.boolean(allow_replication_factor_change)
        by_topic: dict[str, list[tuple[int, Sequence[int] | None]]] = {}
        for (topic, partition), replicas in targets.items():
            by_topic.setdefault(topic, []).append((partition, replicas))
        w.length(len(by_topic))
        for topic, partitions in by_topic.items():
            w.string(topic).length(len(partitions))
            for partition, replicas in partitions:
                w.int32(partition).int32_array(None if replicas is None else list(replicas)).tags()
            w.tags()
        w.tags()
        r = self.call(ALTER_PARTITION_REASSIGNMENTS, version, w.bytes())
        throttle = r.int32()
        allow = r.boolean() if version >= 1 else True
        error, message = r.int16(), r.string()
        results: dict[tuple[str, int], tuple[int, str | None]] = {}

        def topic_result() -> None:
            name = r.string() or ""

            def partition_result() -> None:
                index, code, text = r.int32(), r.int16(), r.string()
                r.tags()
                results[(name, index)] = (code, text)

            r.array(partition_result)
            r.tags()

        r.array(topic_result)
        r.tags()
        return {"throttle": throttle, "allow": allow, "error": (error, message), "partitions": results}

    def list_partition_reassignments(self, wanted: dict[str, list[int]] | None = None) -> dict[str, Any]:
        w = Writer(True).int32(30_000)
        if wanted is None:
            w.length(None)
        else:
            w.length(len(wanted))
            for topic, partitions in wanted.items():
                w.string(topic).int32_array(partitions).tags()
        w.tags()
        r = self.call(LIST_PARTITION_REASSIGNMENTS, 0, w.bytes())
        r.int32()
        error, message = r.int16(), r.string()
        ongoing: dict[tuple[str, int], tuple[list[int], list[int], list[int]]] = {}

        def topic() -> None:
            name = r.string() or ""

            def partition() -> None:
                index = r.int32()
                ongoing[(name, index)] = (r.int32_array(), r.int32_array(), r.int32_array())
                r.tags()

            r.array(partition)
            r.tags()

        r.array(topic)
        r.tags()
        return {"error": (error, message), "ongoing": ongoing}

    # -- configs ------------------------------------------------------------------------------------------

    def _alter_configs(
        self,
        api_key: int,
        version: int,
        resources: Iterable[tuple[int, str, Sequence[tuple[Any, ...]]]],
        validate_only: bool,
    ) -> dict[tuple[int, str], tuple[int, str | None]]:
        flexible = version >= FLEXIBLE_FROM[api_key]
        w = Writer(flexible)
        items = list(resources)
        w.length(len(items))
        for resource_type, name, configs in items:
            w.int8(resource_type).string(name).length(len(configs))
            for config in configs:
                if api_key == INCREMENTAL_ALTER_CONFIGS:  # (name, operation, value)
                    w.string(config[0]).int8(config[1]).string(config[2]).tags()
                else:  # (name, value)
                    w.string(config[0]).string(config[1]).tags()
            w.tags()
        w.boolean(validate_only).tags()
        r = self.call(api_key, version, w.bytes())
        r.int32()
        out: dict[tuple[int, str], tuple[int, str | None]] = {}

        def response() -> None:
            code, message = r.int16(), r.string()
            resource_type, name = r.int8(), r.string() or ""
            r.tags()
            out[(resource_type, name)] = (code, message)

        r.array(response)
        r.tags()
        return out

    def incremental_alter_configs(
        self,
        resources: Iterable[tuple[int, str, Sequence[tuple[str, int, str | None]]]],
        version: int = 1,
        validate_only: bool = False,
    ) -> dict[tuple[int, str], tuple[int, str | None]]:
        return self._alter_configs(INCREMENTAL_ALTER_CONFIGS, version, resources, validate_only)

    def alter_configs(
        self,
        resources: Iterable[tuple[int, str, Sequence[tuple[str, str | None]]]],
        version: int = 2,
        validate_only: bool = False,
    ) -> dict[tuple[int, str], tuple[int, str | None]]:
        return self._alter_configs(ALTER_CONFIGS, version, resources, validate_only)

    # -- log dirs -----------------------------------------------------------------------------------------

    def describe_log_dirs(
        self, wanted: dict[str, list[int]] | None = None, version: int = 4
    ) -> dict[str, Any]:
        w = Writer(version >= FLEXIBLE_FROM[DESCRIBE_LOG_DIRS])
        if wanted is None:
            w.length(None)
        else:
            w.length(len(wanted))
            for topic, partitions in wanted.items():
                w.string(topic).int32_array(partitions).tags()
        w.tags()
        r = self.call(DESCRIBE_LOG_DIRS, version, w.bytes())
        r.int32()
        error = r.int16() if version >= 3 else 0
        dirs: dict[str, dict[str, Any]] = {}

        def result() -> None:
            code, path = r.int16(), r.string() or ""
            logs: dict[tuple[str, int, bool], tuple[int, int]] = {}  # (topic, partition, is_future)

            def topic() -> None:
                name = r.string() or ""

                def partition() -> None:
                    index, size, lag, future = r.int32(), r.int64(), r.int64(), r.boolean()
                    r.tags()
                    logs[(name, index, future)] = (size, lag)

                r.array(partition)
                r.tags()

            r.array(topic)
            total, usable = (r.int64(), r.int64()) if version >= 4 else (-1, -1)
            r.tags()
            dirs[path] = {"error": code, "logs": logs, "total_bytes": total, "usable_bytes": usable}

        r.array(result)
        r.tags()
        return {"error": error, "dirs": dirs}

    def alter_replica_log_dirs(
        self, moves: dict[str, dict[str, list[int]]], version: int = 2
    ) -> dict[tuple[str, int], int]:
        """`moves`: log dir -> topic -> partitions. Returns the error code per partition."""
        w = Writer(version >= FLEXIBLE_FROM[ALTER_REPLICA_LOG_DIRS])
        w.length(len(moves))
        for path, topics in moves.items():
            w.string(path).length(len(topics))
            for topic, partitions in topics.items():
                w.string(topic).int32_array(partitions).tags()
            w.tags()
        w.tags()
        r = self.call(ALTER_REPLICA_LOG_DIRS, version, w.bytes())
        r.int32()
        out: dict[tuple[str, int], int] = {}

        def topic() -> None:
            name = r.string() or ""

            def partition() -> None:
                index, code = r.int32(), r.int16()
                r.tags()
                out[(name, index)] = code

            r.array(partition)
            r.tags()

        r.array(topic)
        r.tags()
        return out

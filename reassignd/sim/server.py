"""One loopback Kafka listener per simulated broker.

Each connection reads size-prefixed request frames and answers them one at a time, so responses leave in
request order even when a client pipelines (kafka-python does). A stopped broker's listener is closed and its
open connections are dropped, like a broker process going away; starting it again listens on the same port,
so the bootstrap list printed at start stays valid.

Every request that changes the cluster is also written to a bounded request log (wall-clock receive time,
API, client.id, broker), like the log Kafka's `kafka.request.logger` keeps: tests use it to see who wrote
what and when, e.g. that a fenced daemon sent nothing after it woke.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import time
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

import structlog

from reassignd.sim.protocol import Endpoint, KafkaProtocol, ProtocolError

log = structlog.get_logger(__name__)

MAX_FRAME_BYTES = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes default
_SIZE = struct.Struct(">i")
_HEADER = struct.Struct(">hhih")  # api key, version, correlation id, client.id length (-1: null)
REQUEST_LOG_SIZE = 10_000
GROUP_TIMER_SECONDS = 0.05

# The APIs that change the cluster (Kafka's ApiKeys names).
WRITE_APIS = {
    19: "CreateTopics",
    20: "DeleteTopics",
    33: "AlterConfigs",
    37: "CreatePartitions",
    43: "ElectLeaders",
    44: "IncrementalAlterConfigs",
    45: "AlterPartitionReassignments",
}


def write_request_entry(payload: bytes, broker_id: int, received: float) -> dict[str, Any] | None:
    """The request-log entry of one request frame, or None when it is not a write."""
    if len(payload) < _HEADER.size:
        return None
    api_key, version, _, id_length = _HEADER.unpack_from(payload)
    api = WRITE_APIS.get(api_key)
    if api is None:
        return None
    raw = payload[_HEADER.size : _HEADER.size + max(id_length, 0)]
    client_id = None if id_length < 0 else raw.decode("utf-8", "replace")
    return {"time": received, "api": api, "version": version, "client_id": client_id, "broker": broker_id}


class BrokerListeners:
    """The listening sockets of every broker, and the connections each one accepted."""

    def __init__(self, protocol: KafkaProtocol, cluster: Any, host: str = "127.0.0.1") -> None:
        self.protocol = protocol
        self.cluster = cluster
        self.host = host
        self._endpoints: dict[int, Endpoint] = {}
        self._servers: dict[int, asyncio.Server] = {}
        self._connections: dict[int, set[asyncio.StreamWriter]] = {}
        self.request_log: deque[dict[str, Any]] = deque(maxlen=REQUEST_LOG_SIZE)
        self._group_timers: asyncio.Task[None] | None = None

    @property
    def endpoints(self) -> Mapping[int, Endpoint]:
        return self._endpoints

    def bootstrap_servers(self) -> str:
        return ",".join(f"{e.host}:{e.port}" for _, e in sorted(self._endpoints.items()))

    async def start(self, broker_ids: Iterable[int], ports: Mapping[int, int] | None = None) -> None:
        """Bind every broker (port 0 picks a free one); brokers offline in the model stay closed."""
        if self.protocol.groups is not None and self._group_timers is None:
            self._group_timers = asyncio.create_task(self._tick_groups(), name="sim-group-timers")
        for broker_id in sorted(broker_ids):
            port = (ports or {}).get(broker_id, 0)
            server = await self._listen(broker_id, port)
            sock_port = server.sockets[0].getsockname()[1]
            self._endpoints[broker_id] = Endpoint(broker_id, self.host, int(sock_port))
            self._servers[broker_id] = server
            broker = self.cluster.brokers.get(broker_id)
            if broker is not None and not broker.online:
                await self.close(broker_id)

    async def open(self, broker_id: int) -> None:
        if broker_id in self._servers:
            return
        self._servers[broker_id] = await self._listen(broker_id, self._endpoints[broker_id].port)
        log.debug("broker listening", broker=broker_id, port=self._endpoints[broker_id].port)

    async def close(self, broker_id: int) -> None:
        server = self._servers.pop(broker_id, None)
        if server is None:
            return
        server.close()
        for writer in list(self._connections.get(broker_id, ())):
            writer.close()
        await server.wait_closed()
        log.debug("broker listener closed", broker=broker_id)

    async def close_all(self) -> None:
        if self._group_timers is not None:
            self._group_timers.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._group_timers
            self._group_timers = None
        for broker_id in list(self._servers):
            await self.close(broker_id)

    async def _tick_groups(self) -> None:
        """The group coordinator's timers (session expiry, rebalance and initial-delay deadlines)."""
        while True:
            await asyncio.sleep(GROUP_TIMER_SECONDS)
            try:
                self.protocol.groups.tick()
            except Exception:
                log.exception("group coordinator timers failed")

    async def _listen(self, broker_id: int, port: int) -> asyncio.Server:
        async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await self._serve(broker_id, reader, writer)

        return await asyncio.start_server(on_connect, self.host, port, reuse_address=True)

    async def _serve(
        self, broker_id: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        connections = self._connections.setdefault(broker_id, set())
        connections.add(writer)
        peer = writer.get_extra_info("peername")
        try:
            while True:
                try:
                    (size,) = _SIZE.unpack(await reader.readexactly(_SIZE.size))
                    if not 0 < size <= MAX_FRAME_BYTES:
                        raise ProtocolError(f"request frame of {size} bytes")
                    payload = await reader.readexactly(size)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                entry = write_request_entry(payload, broker_id, time.time())
                if entry is not None:
                    self.request_log.append(entry)
                response = await self.protocol.handle_async(payload, self.cluster, broker_id, self._endpoints)
                writer.write(response)
                await writer.drain()
        except ProtocolError as exc:
            log.warning("closing connection", broker=broker_id, peer=peer, reason=str(exc))
        except ConnectionError:
            pass
        except Exception:
            log.exception("request handler failed; closing connection", broker=broker_id, peer=peer)
        finally:
            connections.discard(writer)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

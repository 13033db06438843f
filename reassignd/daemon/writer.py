"""One writer per cluster, through Kafka itself: membership of the group `reassignd.<cluster id>`.

Every daemon on a cluster (HA or not; with HA, the ZooKeeper leader only) is a member of one Kafka group of
protocol type `reassignd`, as Kafka Connect workers and Schema Registry instances are. Its member metadata
carries its node id and API address. The group's leader (Kafka's coordinator keeps the leader while it keeps
rejoining) assigns the writer right to itself and tells every member, in the SyncGroup assignments, who holds
it. Only the writer writes; the others refuse plans and changes and name the writer (docs/ha.md).

The lease. The coordinator removes a member no sooner than `session.timeout.ms` after it last heard from it,
and a rebalance that goes on without a member that stopped rejoining completes no sooner than the
rebalance timeout (here: the session timeout) after it began. A successful answer to a request we sent at
`t` (JoinGroup or SyncGroup that keeps us leader, Heartbeat with no error in our generation) therefore
proves no other member can become leader, so writer, before `t` + session timeout, measured on the
coordinator's clock. The daemon writes only within `t` + lease (half the session timeout, on its own
monotonic clock; the other half absorbs clock rate differences and the instant between the fence and the
bytes leaving). A daemon cut off from the brokers stops writing when its lease ends, before any other can
start; `write_fence` (no I/O, on the sending thread, before every write) enforces it, as the ZooKeeper
lease does (reassignd/daemon/ha.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from reassignd.cluster.acls import WRITER_GROUP_PREFIX
from reassignd.cluster.errors import WriteFenced
from reassignd.cluster.group import (
    COORDINATOR_ERRORS,
    FENCING_ERRORS,
    MEMBER_ID_REQUIRED,
    NONE,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
    GroupTransport,
)
from reassignd.cluster.pool import on_own_thread
from reassignd.logs import get_logger

log = get_logger("reassignd.writer")

PROTOCOL_TYPE = "reassignd"
PROTOCOL_NAME = "writer-v1"
_CLOSE_SECONDS = 5.0  # kafka-python's close() of a client; never the stop held longer


class NotTheWriter(WriteFenced):
    """A cluster write refused: this daemon does not hold the cluster's writer right, or its lease ran out."""


@dataclass(frozen=True)
class Writer:
    """Who holds the writer right, as the group's leader announced it."""

    node_id: str
    url: str
    member_id: str

    def to_json(self) -> dict[str, str]:
        return {"node": self.node_id, "url": self.url}


WriterCallback = Callable[[bool, Writer | None], Awaitable[None]]


class _Rejoin(Exception):
    """The group moved on (a rebalance, a new generation, a new coordinator): join again."""


class WriterLease:
    """Takes part in the group until cancelled; `write_fence` and `holding` say whether we may write."""

    def __init__(
        self,
        transport: GroupTransport,
        node_id: str,
        *,
        session_seconds: float = 10.0,
        cluster_id: Callable[[], Awaitable[str]],
        eligible: Callable[[], bool] = lambda: True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.transport = transport
        self.node_id = node_id
        self.session_seconds = float(session_seconds)
        self.lease_seconds = self.session_seconds / 2
        self.heartbeat_seconds = self.session_seconds / 6
        self.cluster_id = cluster_id
        self.eligible = eligible
        self.clock = clock
        self.group = ""
        self.url = ""
        self.writer: Writer | None = None
        self._lock = threading.Lock()
        self._leader = False  # leader (writer) of our current generation
        self._confirmed_at: float | None = None
        self._member_id = ""
        self._generation = -1
        self._coordinator: int | None = None
        self._reported: tuple[bool, Writer | None] | None = None
        self._on_change: WriterCallback | None = None

    # -- the fence -------------------------------------------------------------------------------------

    @property
    def holding(self) -> bool:
        with self._lock:
            return self._holding_locked()

    def _holding_locked(self) -> bool:
        confirmed = self._confirmed_at
        return self._leader and confirmed is not None and self.clock() - confirmed <= self.lease_seconds

    def write_fence(self) -> None:
        """No I/O, any thread: raises NotTheWriter unless we lead the group within the lease."""
        with self._lock:
            if self._holding_locked():
                return
            confirmed, leader = self._confirmed_at, self._leader
        writer = self.writer
        if not leader:
            other = f"{writer.node_id} at {writer.url}" if writer else "no daemon known yet"
            raise NotTheWriter(f"this daemon does not hold the cluster's writer right ({other} does)")
        age = "never" if confirmed is None else f"{self.clock() - confirmed:.2f}s ago"
        raise NotTheWriter(f"writer lease expired: last confirmed {age} (lease {self.lease_seconds:.2f}s)")

    def membership(self) -> tuple[str, int | None, str, int]:
        """(group, coordinator, member id, generation) while we hold the right; outside it the member id is
        empty and the generation -1 (an offset commit Kafka accepts only while the group is empty)."""
        with self._lock:
            if self._holding_locked():
                return self.group, self._coordinator, self._member_id, self._generation
        return self.group, None, "", -1

    def _confirm(self, sent: float) -> None:
        with self._lock:
            if self._leader and (self._confirmed_at is None or sent > self._confirmed_at):
                self._confirmed_at = sent

    def _drop(self) -> None:
        with self._lock:
            self._leader, self._confirmed_at = False, None

    # -- the loop --------------------------------------------------------------------------------------

    async def run(self, on_change: WriterCallback, advertised_url: str) -> None:
        self._on_change, self.url = on_change, advertised_url
        self.group = f"{WRITER_GROUP_PREFIX}{await self.cluster_id()}"
        log.info("taking part in the cluster's writer group", group=self.group, url=advertised_url)
        try:
            while True:
                if not self.eligible():
                    await self._leave()
                    await self._report()
                    await asyncio.sleep(self.heartbeat_seconds)
                    continue
                try:
                    await self._member_once()
                except _Rejoin:
                    continue
                except Exception as exc:  # the brokers out of reach: the lease runs out on its own
                    log.warning("writer group: request failed; retrying", error=repr(exc))
                    self._coordinator = None
                    await self._report()
                    await asyncio.sleep(min(1.0, self.heartbeat_seconds))
        finally:
            self._drop()
            with contextlib.suppress(Exception):
                await asyncio.shield(self._leave())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(on_own_thread(self.transport.close), _CLOSE_SECONDS)

    async def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """On a daemon thread of its own, not the loop's executor: a request to brokers that do not answer
        blocks for its whole timeout (a new client's bootstrap too), and asyncio.run's exit joins the
        executor's threads, so a daemon asked to stop waited 30 s."""
        return await on_own_thread(lambda: fn(*args, **kwargs), "reassignd-writer-group")

    async def _find(self) -> int:
        if self._coordinator is None:
            error, node = await self._call(self.transport.find_coordinator, self.group, self.session_seconds)
            if error != NONE:
                raise RuntimeError(f"FindCoordinator for {self.group}: error {error}")
            self._coordinator = node
        return self._coordinator

    async def _member_once(self) -> None:
        """Join (or rejoin), sync, then heartbeat until the group moves on."""
        node = await self._find()
        metadata = json.dumps({"node_id": self.node_id, "url": self.url}).encode()
        session_ms = int(self.session_seconds * 1000)
        sent = self.clock()
        while True:
            sent = self.clock()
            joined = await self._call(
                self.transport.join,
                node,
                group=self.group,
                member_id=self._member_id,
                protocol_type=PROTOCOL_TYPE,
                protocols=[(PROTOCOL_NAME, metadata)],
                session_ms=session_ms,
                rebalance_ms=session_ms,  # >= the session timeout: see the module's docstring
                timeout_seconds=self.session_seconds * 2 + 5,
            )
            error = int(joined.error_code)
            if error == MEMBER_ID_REQUIRED:
                self._member_id = str(joined.member_id)
                continue
            self._check(error)
            break
        self._member_id, self._generation = str(joined.member_id), int(joined.generation_id)
        leading = str(joined.leader) == self._member_id
        with self._lock:
            self._leader = leading
            if not leading:
                self._confirmed_at = None
        if leading:
            self._confirm(sent)
        assignments: dict[str, bytes] = {}
        if leading:
            announced = {"member_id": self._member_id, "node_id": self.node_id, "url": self.url}
            body = json.dumps({"writer": announced}).encode()
            assignments = {str(m.member_id): body for m in joined.members}
        sent = self.clock()
        synced = await self._call(
            self.transport.sync,
            node,
            group=self.group,
            generation=self._generation,
            member_id=self._member_id,
            protocol_type=PROTOCOL_TYPE,
            protocol_name=PROTOCOL_NAME,
            assignments=assignments,
            timeout_seconds=self.session_seconds * 2 + 5,
        )
        self._check(int(synced.error_code))
        self._confirm(sent)
        self.writer = _writer_of(bytes(synced.assignment))
        await self._report()
        await self._heartbeats(node)

    async def _heartbeats(self, node: int) -> None:
        while self.eligible():
            await asyncio.sleep(self.heartbeat_seconds)
            sent = self.clock()
            error = await self._call(
                self.transport.heartbeat,
                node,
                self.group,
                self._generation,
                self._member_id,
                self.lease_seconds,
            )
            if error == NONE:
                self._confirm(sent)
            elif error == REBALANCE_IN_PROGRESS:
                raise _Rejoin()  # the lease is not renewed; the rejoin keeps us leader if we were
            else:
                self._check(error)
            await self._report()

    def _check(self, error: int) -> None:
        if error == NONE:
            return
        if error in COORDINATOR_ERRORS:
            self._coordinator = None
        elif error in FENCING_ERRORS:
            self._drop()
            if error == UNKNOWN_MEMBER_ID:
                self._member_id = ""
        elif error != REBALANCE_IN_PROGRESS:
            raise RuntimeError(f"writer group {self.group}: error {error}")
        raise _Rejoin()

    async def _leave(self) -> None:
        """A graceful stop, or no longer eligible: out of the group, so the next member leads at once."""
        self._drop()
        self.writer = None
        member, node = self._member_id, self._coordinator
        self._member_id, self._generation = "", -1
        if member and node is not None:
            with contextlib.suppress(Exception):
                await self._call(self.transport.leave, node, self.group, member, self.lease_seconds)

    def _ours(self, writer: Writer) -> bool:
        """The writer announced is this daemon (this membership, or one it had before a rejoin)."""
        return writer.member_id == self._member_id or (writer.node_id, writer.url) == (self.node_id, self.url)

    async def _report(self) -> None:
        holding = self.holding
        writer = self.writer
        if not holding and writer is not None and self._ours(writer):
            # our own right, its lease run out unrenewed (the coordinator does not answer): nobody is
            # known to hold it, not "another daemon" at our own address
            writer = None
        state = (holding, writer)
        if state == self._reported or self._on_change is None:
            return
        self._reported = state
        if holding:
            log.info("this daemon holds the cluster's writer right", group=self.group)
        elif writer is not None:
            log.warning(
                "another reassignd writes to this cluster; this daemon does not write",
                writer=writer.url,
                writer_node=writer.node_id,
                group=self.group,
            )
        try:
            await self._on_change(holding, writer)
        except Exception as exc:
            self._reported = None
            log.warning("writer change not yet taken in; retrying", error=repr(exc))


def _writer_of(assignment: bytes) -> Writer | None:
    try:
        announced = json.loads(assignment)["writer"]
        return Writer(str(announced["node_id"]), str(announced["url"]), str(announced["member_id"]))
    except (ValueError, KeyError, TypeError):
        return None

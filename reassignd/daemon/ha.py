"""Leader election among the daemons of one cluster (ZooKeeper, kazoo), and the fence of the leader's writes.

A hand-written election on ephemeral sequential znodes (the ZooKeeper recipe), rather than kazoo's
Election/Lock: kazoo's Lock keeps reporting `is_acquired` after its session expired, and leadership here
must end the moment the session is in doubt. Each daemon creates `<base>/election/n_<seq>` holding its
node id and advertised API URL; the lowest sequence leads. Sequence numbers only grow, so the leader's
sequence is its fencing epoch: a later leader always has a higher one.

Leadership is lost at once on SUSPENDED (connection lost; the session may expire behind our back) and on
LOST (session expired: the node is gone). The kazoo listener runs in kazoo's thread and clears the flag
there, before anything else, so `Fence.epoch()` and the cluster-write guard refuse immediately; the asyncio
side then tells the controller. Leadership is regained only after reconnecting and finding our node (re-
created if the session expired) lowest again.

Every store commit also carries a `check` of our election node in the same transaction (`checks()`), and
the guard before every cluster write re-reads that node and compares its ephemeral owner with our session:
a paused or partitioned old leader can neither commit nor write to Kafka after losing its session.

Kafka's admin API takes no fencing token, so a pause *between* the guard and the write (a GC or VM stall,
SIGSTOP, a retry's backoff) would otherwise let the write land after a standby took over. Each successful
guard therefore grants a lease of half the session timeout, counted from when the guard's read
was sent: ZooKeeper cannot expire our session, and so no standby can lead, before that read plus the full
timeout. `write_fence` runs on the sending thread right before each write leaves and refuses once the lease
ran out. What stays unfenced is the instant between that check and the bytes leaving the socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError
from kazoo.protocol.states import KazooState

from reassignd import config_keys
from reassignd.cluster.errors import WriteFenced
from reassignd.logs import get_logger
from reassignd.store.base import FencedError
from reassignd.store.zookeeper import ZooKeeperStore

log = get_logger("reassignd.ha")

PREFIX = "n_"
LeadershipCallback = Callable[[bool, str | None], Awaitable[None]]


class LeaseExpired(FencedError, WriteFenced):
    """A cluster write refused by the lease: fenced for the store's callers and the cluster adapter alike."""


@dataclass(frozen=True)
class LeaderInfo:
    node_id: str
    url: str


class HaCoordinator:
    """Runs the election; doubles as the store's Fence (`epoch`, `checks`) and the controller's guard."""

    def __init__(
        self,
        client: KazooClient,
        base: str,
        node_id: str,
        *,
        guard_timeout: float = 5.0,
        poll_seconds: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.election = f"{base.rstrip('/')}/election"
        self.node_id = node_id
        self.advertised_url = ""
        self.on_change: LeadershipCallback | None = None
        self.guard_timeout = guard_timeout
        self.poll_seconds = poll_seconds
        self._state_lock = threading.Lock()
        self._leading = False
        self._my_node: str | None = None
        self._my_seq = -1
        self._reported: tuple[bool, str | None] | None = None
        self._clock = clock
        self._confirmed_at: float | None = None  # when the last successful guard's read was sent
        self._loop: asyncio.AbstractEventLoop | None = None
        self._changed: asyncio.Event | None = None
        self.leader: LeaderInfo | None = None

    # ---------------------------------------------------------------------------------------------------
    # Fence and guard

    @property
    def is_leader(self) -> bool:
        return self._leading

    def epoch(self) -> int:
        with self._state_lock:
            if not self._leading or self.client.state != KazooState.CONNECTED:
                raise FencedError("this daemon does not hold leadership")
            return self._my_seq

    def checks(self) -> Sequence[tuple[str, int]]:
        node = self._my_node
        if node is None:
            raise FencedError("this daemon has no election node")
        return [(node, 0)]  # created with its data, never rewritten: version 0 while it exists

    async def guard(self) -> None:
        """Raises FencedError unless our election node still exists, owned by our live session."""
        self.epoch()
        node = self._my_node
        session = self.client.client_id[0] if self.client.client_id else None
        sent = self._clock()
        try:
            stat = await asyncio.to_thread(
                lambda: self.client.exists_async(node).get(timeout=self.guard_timeout)
            )
        except Exception as exc:
            raise FencedError(f"leadership could not be confirmed: {exc!r}") from None
        if stat is None or stat.owner_session_id != session or not self._leading:
            raise FencedError("leadership lost: our election node is gone or not ours")
        with self._state_lock:
            if self._leading and self._my_node == node:
                self._confirmed_at = sent

    def lease_seconds(self) -> float:
        """Half the session timeout we asked for. kazoo does not keep the one ZooKeeper granted; a server
        grants less only when its maxSessionTimeout (default 20 ticks, 40 s) is lower (docs/ha.md)."""
        return float(self.client._session_timeout) / 1000.0 / 2

    def write_fence(self) -> None:
        """No I/O, any thread: raises LeaseExpired unless a guard confirmed leadership within the lease."""
        with self._state_lock:
            confirmed = self._confirmed_at
            holding = self._leading and self.client.state == KazooState.CONNECTED
            age = math.inf if confirmed is None else self._clock() - confirmed
        lease = self.lease_seconds()
        if not holding or age > lease:
            raise LeaseExpired(
                "leadership lease expired: last confirmed "
                + ("never" if confirmed is None else f"{age:.2f}s ago (lease {lease:.2f}s)")
                + ("" if holding else "; leadership lost")
            )

    # ---------------------------------------------------------------------------------------------------
    # Election loop

    def _listener(self, state: str) -> None:
        """kazoo's thread: drop leadership before anything else can use it."""
        log.info("ZooKeeper session state", state=str(state), was_leader=self._leading)
        if state in (KazooState.SUSPENDED, KazooState.LOST):
            with self._state_lock:
                self._leading = False
                self._confirmed_at = None
                if state == KazooState.LOST:
                    self._my_node = None
        self._poke()

    def _poke(self, *_: Any) -> None:
        loop, changed = self._loop, self._changed
        if loop is not None and changed is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(changed.set)

    async def run(self, on_change: LeadershipCallback, advertised_url: str) -> None:
        """Take part in the election until cancelled, telling `on_change` of every change of leadership;
        `advertised_url`: where the others find this daemon's API (its address once it serves)."""
        self.on_change, self.advertised_url = on_change, advertised_url
        self._loop = asyncio.get_running_loop()
        self._changed = asyncio.Event()
        self.client.add_listener(self._listener)
        try:
            await asyncio.to_thread(self.client.ensure_path, self.election)
            while True:
                self._changed.clear()
                try:
                    await self._elect_once()
                except (KazooException, OSError, TimeoutError) as exc:
                    log.warning("election step failed; retrying", error=repr(exc))
                    await self._report(False, None)
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for swallows a cancellation that
                # arrives as the event fires (CPython gh-86296), and this loop would never stop.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.poll_seconds):
                        await self._changed.wait()
        finally:
            self.client.remove_listener(self._listener)
            with self._state_lock:
                self._leading = False
            await self._resign()

    async def _elect_once(self) -> None:
        if self.client.state != KazooState.CONNECTED:
            await self._report(False, None)
            return
        if self._my_node is None or await asyncio.to_thread(self.client.exists, self._my_node) is None:
            data = json.dumps({"node_id": self.node_id, "url": self.advertised_url}).encode()
            path = await asyncio.to_thread(
                self.client.create, f"{self.election}/{PREFIX}", data, ephemeral=True, sequence=True
            )
            self._my_node, self._my_seq = path, int(path.rsplit("_", 1)[1])
            log.info("joined the election", node=path)
        children = await asyncio.to_thread(self.client.get_children, self.election, self._poke)
        ordered = sorted(
            (c for c in children if c.startswith(PREFIX)), key=lambda c: int(c.rsplit("_", 1)[1])
        )
        if not ordered:
            return
        lowest = f"{self.election}/{ordered[0]}"
        if lowest == self._my_node:
            with self._state_lock:
                winning = self.client.state == KazooState.CONNECTED and self._my_node == lowest
                self._leading = winning
            if winning:
                self.leader = LeaderInfo(self.node_id, self.advertised_url)
                await self._report(True, self.advertised_url)
            return
        with self._state_lock:
            self._leading = False
        try:
            raw, _ = await asyncio.to_thread(self.client.get, lowest, self._poke)
            info = json.loads(raw)
            self.leader = LeaderInfo(str(info.get("node_id", "")), str(info.get("url", "")))
        except NoNodeError:
            self.leader = None
        await self._report(False, self.leader.url if self.leader else None)

    async def _report(self, leading: bool, leader_url: str | None) -> None:
        if self._reported == (leading, leader_url):
            return
        self._reported = (leading, leader_url)
        log.info(
            "leadership changed" if leading else "standing by",
            leader=leader_url,
            node_id=self.node_id,
            epoch=self._my_seq if leading else None,
        )
        try:
            assert self.on_change is not None
            await self.on_change(leading, leader_url)
        except Exception as exc:  # e.g. the store unreadable during a ZooKeeper blip: told again next poll
            self._reported = None
            log.warning("leadership change not yet taken in; retrying", error=repr(exc))

    async def _resign(self) -> None:
        """On a graceful stop: delete our node so a standby takes over at once, not after the timeout."""
        node, self._my_node = self._my_node, None
        if node is not None and self.client.state == KazooState.CONNECTED:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(self.client.delete, node)


# -------------------------------------------------------------------------------------------------------
# wiring into the daemon


@dataclass
class HaParts:
    """What `state.store = zookeeper` opens: the client, the store and (with ha.enable) the election."""

    client: KazooClient
    cluster: str
    store: ZooKeeperStore
    coordinator: HaCoordinator | None

    def close(self) -> None:
        self.store.close()
        self.client.stop()
        self.client.close()


def node_name(config: Any) -> str:
    return str(config[config_keys.HA_NODE_ID]) or socket.gethostname()


async def cluster_label(config: Any, cluster: Any) -> str:
    """`cluster.id`, else the id Kafka reports (retried until the cluster answers)."""
    if config[config_keys.CLUSTER_ID]:
        return str(config[config_keys.CLUSTER_ID])
    while True:
        try:
            reported = await cluster.cluster_id()
        except Exception as exc:
            log.warning("cluster id not available yet; retrying", error=repr(exc))
            await asyncio.sleep(2)
            continue
        if reported:
            return str(reported)
        await asyncio.sleep(2)


def _quiet_kazoo_logger() -> logging.Logger:
    """kazoo warns on every failed reconnect attempt (plain text, several per second while ZooKeeper is
    down); the state changes that matter are logged by the coordinator's listener instead."""
    logger = logging.getLogger("reassignd.kazoo")
    logger.setLevel(logging.ERROR)
    return logger


async def open_ha_store(config: Any, label: str, clock: Callable[[], float] = time.time) -> HaParts:
    """The ZooKeeper client, the store under `label` (the cluster's) and, with ha.enable, the election."""
    session = float(config[config_keys.HA_SESSION_TIMEOUT_SECONDS])
    client = KazooClient(
        hosts=str(config[config_keys.HA_ZOOKEEPER_CONNECT]),
        timeout=session,
        connection_retry={"max_tries": -1, "delay": 0.2, "backoff": 2, "max_delay": 1.0},
        logger=_quiet_kazoo_logger(),
    )
    await asyncio.to_thread(client.start, 30)
    base = f"{str(config['ha.zookeeper.path']).rstrip('/')}/{label}"
    coordinator = None
    if config[config_keys.HA_ENABLE]:
        coordinator = HaCoordinator(client, base, node_name(config), guard_timeout=session / 2)
    store = await asyncio.to_thread(ZooKeeperStore, client, f"{base}/state", fence=coordinator, clock=clock)
    log.info("ZooKeeper state store open", path=f"{base}/state", ha=coordinator is not None)
    return HaParts(client, label, store, coordinator)


async def refresh_while_standby(controller: Any, loop: Any) -> None:
    """A standby's read-only API shows the plans the leader writes: reload them every cycle interval."""
    while True:
        await asyncio.sleep(float(loop.interval))
        if not controller.is_leader:
            try:
                await controller.start()
            except Exception as exc:
                log.warning("standby could not read the store", error=repr(exc))

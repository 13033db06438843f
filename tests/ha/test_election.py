"""The election and its fence against a real ZooKeeper, in-process (no daemons)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from kazoo.client import KazooClient

from reassignd.cluster.errors import WriteFenced
from reassignd.daemon.ha import HaCoordinator, LeaseExpired
from reassignd.store.base import Event, EventKind, FencedError, PlanStatus
from reassignd.store.zookeeper import ZooKeeperStore
from tests.services.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.zookeeper

PLAN = {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2, 3]}]}


class Member:
    def __init__(self, zk: ZooKeeperServer, base: str, name: str) -> None:
        self.client = KazooClient(hosts=zk.hosts, timeout=2.0)
        self.client.start(timeout=15)
        self.changes: list[tuple[bool, str | None]] = []
        self.coordinator = HaCoordinator(self.client, base, name, poll_seconds=0.5)
        self.store = ZooKeeperStore(self.client, f"{base}/state", fence=self.coordinator)
        self.task: asyncio.Task[None] | None = None

    async def _changed(self, leading: bool, leader: str | None) -> None:
        self.changes.append((leading, leader))

    def start(self) -> None:
        self.task = asyncio.create_task(
            self.coordinator.run(self._changed, f"http://{self.coordinator.node_id}")
        )

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            done, _ = await asyncio.wait({self.task}, timeout=10)  # a loop deaf to cancel fails, not hangs
            assert done, f"{self.coordinator.node_id}: the election loop ignored its cancellation"
        await asyncio.to_thread(self.client.stop)
        await asyncio.to_thread(self.client.close)


async def until(predicate: Any, seconds: float, what: str) -> None:
    """Polls: the coordinators change state from kazoo's thread, which has no event to await."""
    for _ in range(int(seconds / 0.05)):
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise TimeoutError(what)


def expire_session(zk: ZooKeeperServer, client: KazooClient) -> None:
    """The standard trick: a second connection with the same session id and password closes the session."""
    twin = KazooClient(hosts=zk.hosts, client_id=client.client_id)
    twin.start(timeout=15)
    twin.stop()
    twin.close()


@pytest.fixture
async def members(zookeeper: ZooKeeperServer) -> AsyncIterator[list[Member]]:
    base = f"/ha-test/{uuid.uuid4().hex}"
    created = [Member(zookeeper, base, f"node{i}") for i in range(3)]
    yield created
    for member in created:
        await member.stop()


def leaders(members: Sequence[Member]) -> list[Member]:
    return [m for m in members if m.coordinator.is_leader]


async def test_one_leader_standbys_know_it_and_a_resignation_hands_over(members: list[Member]) -> None:
    for member in members:
        member.start()
        await until(lambda m=member: m.changes, 10, "joined")
    await until(lambda: len(leaders(members)) == 1, 10, "one leader")
    first = leaders(members)[0]
    assert first is members[0]  # the first to join holds the lowest sequence
    for member in members[1:]:
        await until(lambda m=member: m.changes[-1] == (False, "http://node0"), 10, "standbys name the leader")
    epoch = first.coordinator.epoch()
    await first.stop()  # a graceful stop deletes the node: no waiting for the session timeout
    await until(lambda: len(leaders(members[1:])) == 1, 5, "next leader")
    second = leaders(members[1:])[0]
    assert second.coordinator.epoch() > epoch
    with pytest.raises(FencedError):
        first.coordinator.epoch()


async def test_an_expired_leader_is_fenced_everywhere(
    zookeeper: ZooKeeperServer, members: list[Member]
) -> None:
    old, new = members[0], members[1]
    old.start()
    await until(lambda: old.coordinator.is_leader, 10, "old leads")
    new.start()
    await until(lambda: new.changes, 10, "new stands by")
    await asyncio.to_thread(old.store.submit_plan, "p", PLAN)
    old_epoch = old.coordinator.epoch()
    old_node = old.coordinator.checks()

    class Paused:
        """An old leader that slept through its expiry: it still believes in its epoch and node."""

        def epoch(self) -> int:
            return old_epoch

        def checks(self) -> Sequence[tuple[str, int]]:
            return old_node

    await asyncio.to_thread(expire_session, zookeeper, old.client)
    stale = ZooKeeperStore(new.client, old.store.root, fence=Paused())
    with pytest.raises(FencedError, match="leadership check failed"):  # its node is gone with its session
        stale.append(Event(EventKind.THROTTLE_SET, "p"))
    await until(lambda: not old.coordinator.is_leader, 10, "old leader steps down at once")
    with pytest.raises(FencedError):
        await old.coordinator.guard()
    with pytest.raises(FencedError):
        await asyncio.to_thread(old.store.set_plan_status, "p", PlanStatus.RUNNING)
    await until(lambda: new.coordinator.is_leader, 10, "new leader")
    await asyncio.to_thread(new.store.set_plan_status, "p", PlanStatus.RUNNING)
    await new.coordinator.guard()

    with pytest.raises(FencedError, match="older than epoch"):  # and a newer leader has written
        stale.append(Event(EventKind.THROTTLE_SET, "p"))
    record = await asyncio.to_thread(new.store.get_plan, "p")
    assert record is not None and record.status is PlanStatus.RUNNING
    assert [e.kind for e in new.store.journal(plan_id="p")][-1] is EventKind.PLAN_STARTED


async def test_the_write_lease_runs_from_the_last_guard_and_ends_with_the_session(
    zookeeper: ZooKeeperServer,
) -> None:
    """A write must leave within half the session timeout of the guard's read, and never after SUSPENDED."""
    now = [1000.0]
    client = KazooClient(hosts=zookeeper.hosts, timeout=4.0)
    client.start(timeout=15)

    async def ignore(leading: bool, leader: str | None) -> None:
        return None

    coordinator = HaCoordinator(client, f"/ha-test/{uuid.uuid4().hex}", "n", clock=lambda: now[0])
    task = asyncio.create_task(coordinator.run(ignore, "http://n"))
    try:
        await until(lambda: coordinator.is_leader, 10, "leads")
        assert coordinator.lease_seconds() == 2.0
        with pytest.raises(LeaseExpired, match="never"):  # leading, but no guard has confirmed it yet
            coordinator.write_fence()
        await coordinator.guard()
        now[0] += 1.9
        coordinator.write_fence()
        now[0] += 0.2
        with pytest.raises(LeaseExpired, match=r"2\.10s ago \(lease 2\.00s\)") as refused:
            coordinator.write_fence()
        assert isinstance(refused.value, FencedError) and isinstance(refused.value, WriteFenced)
        await coordinator.guard()  # a fresh confirmation renews it
        coordinator.write_fence()

        await asyncio.to_thread(expire_session, zookeeper, client)
        await until(lambda: not coordinator.is_leader, 10, "steps down")
        with pytest.raises(LeaseExpired):  # well within the lease, but the session is gone
            coordinator.write_fence()
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await asyncio.to_thread(client.stop)
        await asyncio.to_thread(client.close)


async def test_a_cancellation_arriving_with_a_change_is_not_swallowed(members: list[Member]) -> None:
    """Python 3.11's wait_for swallowed a cancel that coincided with the change event (CPython gh-86296):
    the election loop ran on, and stopping the daemon (or this fixture) hung."""
    member = members[0]
    member.start()
    await until(lambda: member.coordinator.is_leader, 10, "leads")
    await asyncio.sleep(0.1)  # back in the loop, waiting for a change or the poll interval
    assert member.task is not None and member.coordinator._changed is not None
    member.coordinator._changed.set()
    await asyncio.sleep(0)
    member.task.cancel()
    done, _ = await asyncio.wait({member.task}, timeout=5)
    assert done, "the election loop ignored its cancellation"

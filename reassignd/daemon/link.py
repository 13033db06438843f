"""The daemon's link to the cluster: the reachability part (engine/run/reachability.py) carried out.

What the cycle's reads find and what the probe finds step one `Reachability`; each change is published at
once (the view the status reads, the `reassignd_cluster_reachable` gauge) and said (log, MQTT), never at
the end of a cycle that may be stuck in client retries for minutes (a timeout of 30 s, 3 retries and their
backoff: over two minutes before a read gives up).

The probe is one Metadata request for no real topic (any broker answers it, no ACL needed; librdkafka sends
DescribeCluster to the broker it takes for the controller and waits for that one alone) under a short
deadline of its own, every few seconds, beside the cycle. A read the cycle has in flight when the probe
finds no broker answering is abandoned (`unless_lost`): reads change nothing, and the cycle then ends at
once instead of holding the controller's lock (commands, limits) through its retries. While the probe
finds none, cycles do not read at all; its first answer wakes the next one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TypeVar

from reassignd.cluster.api import ClusterAdmin
from reassignd.cluster.errors import ClusterCallError
from reassignd.engine.run import reachability
from reassignd.engine.run.effects import Log, Notify
from reassignd.engine.run.reachability import LinkEvent, Reachability, Reached, Unreachable

T = TypeVar("T")


class LinkLost(Exception):
    """A read abandoned because the probe found no broker answering (its cause is the message)."""


class Link:
    """One Reachability, stepped by the cycle's reads (`saw`) and by the probe (`probe`)."""

    def __init__(
        self,
        cluster: ClusterAdmin,
        clock: Callable[[], float],
        *,
        say: Callable[[Log | Notify], None],
        changed: Callable[[Reachability], None],
        back: Callable[[], None],
        probe_timeout: float = 10.0,
        probe_interval: float = 5.0,
    ) -> None:
        """`say` carries out a line or a notification; `changed` publishes a new state; `back` is called
        when the probe finds the cluster again (the controller wakes its loop)."""
        self.cluster = cluster
        self.clock = clock
        self.state = reachability.starting(clock())
        self.probe_timeout = probe_timeout
        self.probe_interval = probe_interval
        self._say, self._changed, self._back = say, changed, back
        self._probe_lost = asyncio.Event()

    @property
    def probe_lost(self) -> bool:
        """The probe's last attempt found no broker answering."""
        return "probe" in self.state.failing

    def saw(self, event: LinkEvent, plan_id: str | None = None) -> None:
        """Step the link; say and publish what changed."""
        before = self.state
        transition = reachability.step(before, event, plan_id)
        self.state = transition.link
        for effect in transition.said:
            self._say(effect)
        if self.probe_lost:
            self._probe_lost.set()
        else:
            self._probe_lost.clear()
        if transition.link != before:
            self._changed(transition.link)

    async def probe(self, plan_id: str | None = None) -> None:
        """One Metadata request (`cluster_id`) under the probe's deadline."""
        try:
            async with asyncio.timeout(self.probe_timeout):
                await self.cluster.cluster_id()
        except TimeoutError:
            error = f"no broker answered within {self.probe_timeout:g} s"
            self.saw(Unreachable(self.clock(), "probe", error), plan_id)
            return
        except ClusterCallError as exc:
            self.saw(Unreachable(self.clock(), "probe", str(exc)), plan_id)
            return
        was_lost = self.probe_lost
        self.saw(Reached(self.clock(), "probe"), plan_id)
        if was_lost:
            self._back()

    async def watch(self, plan_id: Callable[[], str | None], active: Callable[[], bool]) -> None:
        """Probe every `probe_interval` seconds while `active()` (a standby never calls Kafka)."""
        while True:
            if active():
                await self.probe(plan_id())
            await asyncio.sleep(self.probe_interval)

    async def lost(self) -> None:
        """Returns once the probe finds no broker answering (at once while it finds none)."""
        await self._probe_lost.wait()

    async def unless_lost(self, read: Awaitable[T]) -> T:
        """`read`'s result, unless the probe finds no broker answering first: then it is abandoned (a read
        changes nothing) and LinkLost raised. While the probe finds none, no read is made at all."""
        if self.probe_lost:
            close = getattr(read, "close", None)
            if close is not None:
                close()  # a coroutine never awaited
            raise LinkLost(self.state.error or "no broker answers")
        task = asyncio.ensure_future(read)
        lost = asyncio.ensure_future(self._probe_lost.wait())
        try:
            await asyncio.wait((task, lost), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            lost.cancel()
        if task.done():
            return task.result()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        raise LinkLost(self.state.error or "no broker answers")

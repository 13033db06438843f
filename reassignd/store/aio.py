"""The store from asyncio code: each call runs in a worker thread, so an fsync never stalls the loop.

SQLite commits with synchronous=FULL take a few milliseconds (an fsync); a ZooKeeper commit is a network
round trip. The controller awaits these instead of blocking the event loop that also serves the API.

It also keeps the store's health (`StoreHealth`), from the calls themselves: a call that fails with
`StoreUnavailable` (a full disk, a lock held elsewhere, an I/O error) makes the store unavailable since
then, logged once with the storage's own words; a call that has not answered for `stall_after` seconds (a
lock another process holds, a frozen filesystem) makes it unavailable too, as `check_stalls` finds; the
next call that succeeds makes it available again, logged once with how long it was not.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from reassignd.logs import get_logger
from reassignd.model import TopicPartition
from reassignd.store.base import (
    BrokerRole,
    CommitResult,
    ConfigResource,
    EventKind,
    JournalEntry,
    OriginalValue,
    PlanRecord,
    PlanStatus,
    PlanSummary,
    Pruned,
    SettingsRecord,
    StateStore,
    StoreCorrupt,
    StoreError,
    StoreUnavailable,
    WriteBatch,
)

log = get_logger("reassignd.store")
T = TypeVar("T")
_WRITES = frozenset({"commit", "prune"})
STALL_AFTER_SECONDS = 10.0
"""A store call unanswered this long makes the store unavailable (SQLite waits up to 30 s for a lock)."""


@dataclass(frozen=True, slots=True)
class StoreState:
    """What the status, `/readyz` and the metrics show of the store."""

    available: bool = True
    since: float | None = None
    """Wall-clock time it became unavailable."""
    error: str | None = None


class StoreHealth:
    """Availability of the store, from the outcome of its calls; `changed` is told every change."""

    def __init__(
        self,
        *,
        wall: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        stall_after: float = STALL_AFTER_SECONDS,
    ) -> None:
        self.state = StoreState()
        self.changed: Callable[[StoreState], None] = lambda state: None
        self.stall_after = stall_after
        self._wall, self._monotonic = wall, monotonic
        self._calls: dict[int, tuple[str, float]] = {}
        self._ids = itertools.count()
        self._down_at: float | None = None
        self._down_by_write = False

    def began(self, name: str) -> int:
        token = next(self._ids)
        self._calls[token] = (name, self._monotonic())
        return token

    def ended(self, token: int) -> None:
        self._calls.pop(token, None)

    def failed(self, exc: BaseException, *, write: bool = False) -> None:
        self._down_by_write = self._down_by_write or write
        if not self.state.available:
            log.debug("store still unavailable", error=str(exc))
            return
        log.error(
            "the state store is unavailable; nothing is written to it or to the cluster", error=str(exc)
        )
        self._down(str(exc))

    def succeeded(self, *, write: bool = False) -> None:
        """A write ends any episode; a read only one that reads began (a full disk still reads)."""
        if self.state.available or self._stalled() or (self._down_by_write and not write):
            return
        self._down_by_write = False
        down_for = self._monotonic() - self._down_at if self._down_at is not None else None
        log.info(
            "the state store is available again",
            unavailable_seconds=round(down_for, 1) if down_for is not None else None,
        )
        self._down_at = None
        self.state = StoreState()
        self.changed(self.state)

    def check_stalls(self) -> None:
        """A call unanswered for `stall_after` seconds: unavailable (once per episode)."""
        stalled = self._stalled()
        if stalled is None or not self.state.available:
            return
        name, seconds = stalled
        message = (
            f"a store call ({name}) has not answered for {seconds:.0f} s: a lock held by another process, or "
            "a filesystem that does not answer"
        )
        log.error(
            "the state store does not answer; nothing is written to it or to the cluster", error=message
        )
        self._down(message)

    def _stalled(self) -> tuple[str, float] | None:
        now = self._monotonic()
        for name, started in self._calls.values():
            if now - started >= self.stall_after:
                return name, now - started
        return None

    def _down(self, error: str) -> None:
        self._down_at = self._monotonic()
        self.state = StoreState(False, self._wall(), error)
        self.changed(self.state)


class AsyncStore:
    """Awaitable facade over any StateStore (same methods, same errors)."""

    def __init__(self, store: StateStore, health: StoreHealth | None = None) -> None:
        self.store = store
        self.health = health or StoreHealth()
        self.committed: Callable[[WriteBatch, CommitResult], None] | None = None
        """Told of each commit that succeeded (no I/O): the ownership marker (daemon/ownership.py)."""

    @property
    def findings(self) -> tuple[str, ...]:
        """What the store found wrong with itself when it opened (SqliteStore.findings)."""
        return tuple(getattr(self.store, "findings", ()))

    async def _call(self, name: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        write = name in _WRITES
        token = self.health.began(name)
        try:
            result = await self._run(fn, *args, **kwargs)
        except (StoreUnavailable, StoreCorrupt) as exc:
            self.health.failed(exc, write=write)
            raise
        except StoreError:  # refused for what was asked (a fence, a conflict): the storage worked
            self.health.succeeded(write=write)
            raise
        finally:
            self.health.ended(token)
        self.health.succeeded(write=write)
        return result

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Where the blocking call runs: a worker thread."""
        return await asyncio.to_thread(fn, *args, **kwargs)

    async def commit(self, batch: WriteBatch) -> CommitResult:
        result = await self._call("commit", self.store.commit, batch)
        if self.committed is not None:
            self.committed(batch, result)
        return result

    async def get_plan(self, plan_id: str) -> PlanRecord | None:
        return await self._call("get_plan", self.store.get_plan, plan_id)

    async def list_plans(self, statuses: Iterable[PlanStatus] | None = None) -> list[PlanSummary]:
        return await self._call("list_plans", self.store.list_plans, statuses)

    async def settings(self) -> SettingsRecord:
        return await self._call("settings", self.store.settings)

    async def broker_roles(self) -> dict[int, BrokerRole]:
        return await self._call("broker_roles", self.store.broker_roles)

    async def anomalies(self) -> dict[str, Mapping[str, Any]]:
        return await self._call("anomalies", self.store.anomalies)

    async def prune(self, before: float, keep_plans: int, limit: int) -> Pruned:
        return await self._call("prune", self.store.prune, before, keep_plans, limit)

    async def prune_anomalies(self, before: float, limit: int) -> tuple[str, ...]:
        return await self._call("prune_anomalies", self.store.prune_anomalies, before, limit)

    async def active_plan(self) -> PlanRecord | None:
        return await self._call("active_plan", self.store.active_plan)

    async def partition_states(self, plan_id: str) -> dict[TopicPartition, Mapping[str, Any]]:
        return await self._call("partition_states", self.store.partition_states, plan_id)

    async def last_seq(self) -> int:
        return await self._call("last_seq", self.store.last_seq)

    async def original_configs(self) -> dict[tuple[ConfigResource, str], OriginalValue]:
        return await self._call("original_configs", self.store.original_configs)

    async def journal(
        self,
        after_seq: int = 0,
        *,
        plan_id: str | None = None,
        kinds: Iterable[EventKind] | None = None,
        limit: int | None = None,
    ) -> list[JournalEntry]:
        return await self._call(
            "journal", self.store.journal, after_seq, plan_id=plan_id, kinds=kinds, limit=limit
        )

    async def step_entry(
        self, kind: EventKind, plan_id: str, tp: TopicPartition, step_index: int
    ) -> JournalEntry | None:
        return await self._call("step_entry", self.store.step_entry, kind, plan_id, tp, step_index)

    async def close(self) -> None:
        await asyncio.to_thread(self.store.close)

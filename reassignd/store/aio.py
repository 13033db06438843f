"""The store from asyncio code: each call runs in a worker thread, so an fsync never stalls the loop.

SQLite commits with synchronous=FULL take a few milliseconds (an fsync); a ZooKeeper commit is a network
round trip. The controller awaits these instead of blocking the event loop that also serves the API.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

from reassignd.model import TopicPartition
from reassignd.store.base import (
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
    WriteBatch,
)


class AsyncStore:
    """Awaitable facade over any StateStore (same methods, same errors)."""

    def __init__(self, store: StateStore) -> None:
        self.store = store

    async def commit(self, batch: WriteBatch) -> CommitResult:
        return await asyncio.to_thread(self.store.commit, batch)

    async def get_plan(self, plan_id: str) -> PlanRecord | None:
        return await asyncio.to_thread(self.store.get_plan, plan_id)

    async def list_plans(self, statuses: Iterable[PlanStatus] | None = None) -> list[PlanSummary]:
        return await asyncio.to_thread(self.store.list_plans, statuses)

    async def settings(self) -> SettingsRecord:
        return await asyncio.to_thread(self.store.settings)

    async def prune(self, before: float, keep_plans: int, limit: int) -> Pruned:
        return await asyncio.to_thread(self.store.prune, before, keep_plans, limit)

    async def active_plan(self) -> PlanRecord | None:
        return await asyncio.to_thread(self.store.active_plan)

    async def partition_states(self, plan_id: str) -> dict[TopicPartition, Mapping[str, Any]]:
        return await asyncio.to_thread(self.store.partition_states, plan_id)

    async def original_configs(self) -> dict[tuple[ConfigResource, str], OriginalValue]:
        return await asyncio.to_thread(self.store.original_configs)

    async def journal(
        self,
        after_seq: int = 0,
        *,
        plan_id: str | None = None,
        kinds: Iterable[EventKind] | None = None,
        limit: int | None = None,
    ) -> list[JournalEntry]:
        return await asyncio.to_thread(
            self.store.journal, after_seq, plan_id=plan_id, kinds=kinds, limit=limit
        )

    async def step_entry(
        self, kind: EventKind, plan_id: str, tp: TopicPartition, step_index: int
    ) -> JournalEntry | None:
        return await asyncio.to_thread(self.store.step_entry, kind, plan_id, tp, step_index)

    async def close(self) -> None:
        await asyncio.to_thread(self.store.close)

"""The asyncio facade reaches the same store and surfaces its errors."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from reassignd.model import TopicPartition
from reassignd.store import Event, EventKind, PlanStatus, SqliteStore, StepReplayError, WriteBatch
from reassignd.store.aio import AsyncStore

TP = TopicPartition("t", 0)


async def test_async_facade(tmp_path: Path) -> None:
    store = AsyncStore(SqliteStore(tmp_path))
    await store.commit(
        WriteBatch()
        .submit_plan("p", {"version": 1, "partitions": []}, {})
        .set_status("p", PlanStatus.RUNNING)
        .put_partition_state("p", TP, {"step": 0})
    )
    step = Event(EventKind.STEP_STARTED, "p", TP, 0)
    results = await asyncio.gather(
        store.commit(WriteBatch().append(step)),
        store.commit(WriteBatch().append(step)),
        return_exceptions=True,
    )
    assert sorted(type(r).__name__ for r in results) == ["CommitResult", "StepReplayError"]
    assert (await store.active_plan()).id == "p"  # type: ignore[union-attr]
    assert [p.id for p in await store.list_plans([PlanStatus.RUNNING])] == ["p"]
    assert await store.partition_states("p") == {TP: {"step": 0}}
    assert await store.original_configs() == {}
    assert (await store.step_entry(EventKind.STEP_STARTED, "p", TP, 0)) is not None
    assert [e.kind for e in await store.journal(plan_id="p", limit=2)] == [
        EventKind.PLAN_SUBMITTED,
        EventKind.PLAN_STARTED,
    ]
    with pytest.raises(StepReplayError):
        await store.commit(WriteBatch().append(step))
    await store.close()

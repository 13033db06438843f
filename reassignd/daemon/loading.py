"""What the machines start from, read from the store: a plan's run (its rows, figures and the throttle
originals) and the throttles ended plans left behind (engine/run/idle.py)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from reassignd.daemon.service import ServiceError
from reassignd.engine.run import RunState, new_run
from reassignd.engine.run.idle import Leftovers
from reassignd.engine.run.retarget import replayed
from reassignd.engine.throttle import BROKER_KEYS, TOPIC_KEYS, ThrottleOriginals
from reassignd.engine.throttle_book import ThrottleBook
from reassignd.model import ReassignmentPlan
from reassignd.store.aio import AsyncStore
from reassignd.store.base import ConfigResource, EventKind, OriginalValue, PlanRecord, PlanStatus, WriteBatch

Stored = Mapping[tuple[ConfigResource, str], OriginalValue]


async def plan_run(store: AsyncStore, record: PlanRecord, parsed: ReassignmentPlan | None) -> RunState:
    """The run of a started plan as the store has it; `parsed`: its plan when this daemon parsed it at
    submit (parsing a stored plan of 100,000 partitions again, every entry checked as any input is, took
    1.8 s of its first cycle). The journal's re-targets are replayed onto it (engine/run/retarget.py)."""
    plan = parsed if parsed is not None else ReassignmentPlan.from_dict(dict(record.plan))
    retargets = await store.journal(plan_id=record.id, kinds=[EventKind.PLAN_RETARGETED])
    plan, withdraw = replayed(plan, [entry.data for entry in retargets])
    rows = await store.partition_states(record.id)
    stored = await store.original_configs()
    return new_run(
        record.id,
        plan,
        record.status,
        rows=rows,
        summary=record.summary,
        originals=originals_of(stored),
        written=written_of(stored),
        withdraw=withdraw,
    )


async def leftovers(store: AsyncStore) -> Leftovers | None:
    """Throttle originals still in the store while no plan runs (a daemon died after a plan's end), with
    every stored plan's partitions: the throttle entries that may be ours."""
    stored = await store.original_configs()
    if not stored:
        return None
    owned: dict[str, set[int]] = {}
    for summary in await store.list_plans():
        record = None if summary.status is PlanStatus.QUEUED else await store.get_plan(summary.id)
        if record is not None:
            for entry in record.plan.get("partitions", []):
                owned.setdefault(str(entry["topic"]), set()).add(int(entry["partition"]))
    frozen = MappingProxyType({t: frozenset(p) for t, p in owned.items()})
    originals = originals_of(stored)
    book = ThrottleBook(
        ThrottleOriginals(originals.topics, originals.brokers, frozen), MappingProxyType(written_of(stored))
    )
    return Leftovers(book, frozen)


def written_of(stored: Stored) -> dict[tuple[str, str, str], tuple[str | None, ...]]:
    """What our own writes left in each config we changed, as persisted beside its original."""
    return {
        (resource.type, resource.name, key): original.written
        for (resource, key), original in stored.items()
        if original.written is not None
    }


def originals_of(stored: Stored) -> ThrottleOriginals:
    topics: dict[str, dict[str, str | None]] = {}
    brokers: dict[int, dict[str, str | None]] = {}
    for (resource, key), original in stored.items():
        if resource.type == "topic" and key in TOPIC_KEYS:
            topics.setdefault(resource.name, {})[key] = original.value
        elif resource.type == "broker" and key in BROKER_KEYS:
            brokers.setdefault(int(resource.name), {})[key] = original.value
    return ThrottleOriginals(topics=topics, brokers=brokers)


async def commanded(store: AsyncStore, plan_id: str | None, verb: str) -> PlanRecord:
    """The plan a command names; without a name the active one (or, to cancel, the first queued)."""
    record = await (store.get_plan(plan_id) if plan_id else store.active_plan())
    if record is None and plan_id is None and verb == "cancel":
        queued = await store.list_plans([PlanStatus.QUEUED])
        first = min(queued, key=lambda r: (r.submitted_at, r.id)) if queued else None
        record = await store.get_plan(first.id) if first is not None else None
    if record is None:
        if plan_id:
            raise ServiceError("not_found", f"no plan {plan_id}")
        raise ServiceError("conflict", f"no active plan to {verb}")
    return record


async def plan_in_progress(store: AsyncStore) -> tuple[PlanRecord | None, bool]:
    """(the plan in progress, else the first queued one started now, or None; whether it started now).
    The controller starts a queued plan (the lifecycle's `start`): its status is committed first."""
    record = await store.active_plan()
    if record is not None:
        return record, False
    queued = await store.list_plans([PlanStatus.QUEUED])
    if not queued:
        return None, False
    first = min(queued, key=lambda r: (r.submitted_at, r.id))
    await store.commit(WriteBatch().set_status(first.id, PlanStatus.RUNNING))
    return await store.get_plan(first.id), True

"""Carries out the plan-run machine's effects against the cluster and the store, in their order.

Nothing here decides anything: a `Persist` becomes one store commit, `WriteThrottles`, `Reassign`,
`MoveLogDirs` and `Elect` the admin calls (each after the HA guard), `Notify` an event for subscribers,
`Log` a log line. What Kafka answered comes back as one `Answered` for the machine. A whole admin call
that fails is an answer too (every item refused with its error): the machine retries what it must. A
store commit that fails raises: the caller then drops its in-memory run and rebuilds it from the store,
as after a crash.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from reassignd.cluster.api import ClusterAdmin
from reassignd.cluster.errors import ClusterCallError
from reassignd.daemon import failpoints
from reassignd.daemon.metrics import DaemonMetrics
from reassignd.daemon.throttles import write_throttles
from reassignd.engine.run.effects import (
    Answered,
    Answers,
    Effect,
    Elect,
    Log,
    MoveLogDirs,
    Notify,
    Persist,
    Reassign,
    WriteThrottles,
    carrier_of,
)
from reassignd.logs import get_logger
from reassignd.model import TopicPartition
from reassignd.store.aio import AsyncStore
from reassignd.store.base import (
    ConfigResource,
    EventKind,
    StepReplayError,
    WriteBatch,
)

log = get_logger("reassignd.controller")

_THROTTLE_WRITES = {EventKind.THROTTLE_SET: "set", EventKind.THROTTLE_RESTORED: "restored"}

EffectHook = Callable[[Effect], None]
"""Called before each effect (tests use it to crash the daemon at exact effect boundaries)."""


def batch_of(persist: Persist) -> WriteBatch:
    """The store's commit of a Persist: originals forgotten, recorded and noted, then rows, status, figures
    and journal entries."""
    batch = WriteBatch()
    for kind, name, key in persist.forget_originals:
        batch.forget_original(ConfigResource(kind, name), key)
    for kind, name, key, value in persist.record_originals:
        batch.record_original(ConfigResource(kind, name), key, value)
    for kind, name, key, values in persist.written:
        batch.note_written(ConfigResource(kind, name), key, values)
    plan_id = persist.plan_id
    if plan_id is not None:
        for tp, row in persist.rows.items():
            batch.put_partition_state(plan_id, tp, row.to_json())
        if persist.status is not None:
            batch.set_status(plan_id, persist.status)
        if persist.summary is not None:
            batch.set_summary(plan_id, persist.summary)
    for event in persist.events:
        batch.append(event)
    return batch


@dataclass
class Executor:
    cluster: ClusterAdmin
    store: AsyncStore
    metrics: DaemonMetrics
    guard: Callable[[], Awaitable[None]]
    emit: Callable[..., None]
    clock: Callable[[], float]
    hook: EffectHook | None = None

    async def execute(self, effects: tuple[Effect, ...]) -> Answered:
        answers = Answers()
        for effect in effects:
            if self.hook is not None:
                self.hook(effect)
            carry_out = carrier_of(self, effect)
            assert carry_out is not None, effect
            answers.add(effect, await carry_out(effect))
        return answers.answered(self.clock())

    async def notify(self, effect: Notify) -> None:
        self.emit(effect.kind, **dict(effect.data))

    async def log(self, effect: Log) -> None:
        getattr(log, effect.level)(effect.message, **dict(effect.fields))

    async def persist(self, persist: Persist) -> None:
        if not persist:
            return
        batch = batch_of(persist)
        try:
            await self.store.commit(batch)
        except StepReplayError as exc:
            batch = await self._without_replays(batch, exc)
        failpoints.hit("after_state_commit")
        self._count(batch)

    async def _without_replays(self, batch: WriteBatch, exc: StepReplayError) -> WriteBatch:
        """Each step is journaled once by construction (engine/state.py); a replay is a bug. Keep the
        first entry, commit the rest, and say so loudly."""
        log.error("step journaled before (a bug); keeping the first entry", entry=str(exc))
        retry = WriteBatch()
        retry.partition_states.update(batch.partition_states)
        retry.status_changes.extend(batch.status_changes)
        retry.summaries.update(batch.summaries)
        retry.originals_to_record.extend(batch.originals_to_record)
        retry.originals_to_forget.extend(batch.originals_to_forget)
        retry.written.update(batch.written)
        for event in batch.events:
            if (
                event.idempotency_key is None
                or event.plan_id is None
                or event.tp is None
                or event.step_index is None
                or await self.store.step_entry(event.kind, event.plan_id, event.tp, event.step_index) is None
            ):
                retry.append(event)
        await self.store.commit(retry)
        return retry

    def _count(self, batch: WriteBatch) -> None:
        started = sum(1 for e in batch.events if e.kind is EventKind.STEP_STARTED)
        if started:
            self.metrics.step_started(started)
        for event in batch.events:
            if event.kind is EventKind.STEP_FINISHED:
                self.metrics.step_completed(float(event.data.get("seconds") or 0.0))
            elif event.kind is EventKind.STALL_DETECTED:
                self.metrics.stall_detected()
            elif event.kind is EventKind.THROTTLE_SET and event.data.get("auto_throttle"):
                self.metrics.auto_throttle_raised(int(event.data["broker"]))
            elif event.kind in _THROTTLE_WRITES and "op" in event.data:  # a write Kafka accepted
                self.metrics.throttle_config_written(_THROTTLE_WRITES[event.kind])

    async def write_throttles(self, effect: WriteThrottles) -> dict[tuple[str, str], str]:
        return await write_throttles(self.cluster, effect.writes, self.guard)

    async def reassign(self, effect: Reassign) -> dict[TopicPartition, str | None]:
        await self.guard()
        failpoints.hit("before_alter_reassignments")
        try:
            results = await self.cluster.alter_partition_reassignments(dict(effect.targets))
        except ClusterCallError as exc:
            return dict.fromkeys(effect.targets, str(exc))
        failpoints.hit("after_alter_reassignments")
        return {tp: None if error is None else str(error) for tp, error in results.items()}

    async def move_log_dirs(self, effect: MoveLogDirs) -> dict[tuple[TopicPartition, int], str | None]:
        await self.guard()
        try:
            results = await self.cluster.alter_replica_log_dirs(dict(effect.moves))
        except ClusterCallError as exc:
            return dict.fromkeys(effect.moves, str(exc))
        return {key: None if error is None else str(error) for key, error in results.items()}

    async def elect(self, effect: Elect) -> dict[TopicPartition, str | None]:
        await self.guard()
        try:
            results = await self.cluster.elect_preferred_leaders(list(effect.partitions))
        except ClusterCallError as exc:
            return dict.fromkeys(effect.partitions, str(exc))
        return {tp: None if error is None else str(error) for tp, error in results.items()}


def emitted(data: Mapping[str, Any]) -> dict[str, Any]:
    """Event data as subscribers get it: a partition as topic and partition fields."""
    out = dict(data)
    tp = out.pop("tp", None)
    if isinstance(tp, TopicPartition):
        out["topic"], out["partition"] = tp.topic, tp.partition
    return out

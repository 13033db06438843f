"""The writer's ownership marker kept in step with the store, the cross-check at start, and the cleanup of
`reassignd recover --mode cleanup` (the decisions: engine/crosscheck.py; the marker's carrier:
cluster/marker.py).

Keeping it costs one OffsetCommit per store commit that changes a plan's status or the throttle originals
(a plan's start, pause, resume, cancel and end; a throttle config first written or restored), never one per
cycle: the commit marks the marker stale (no I/O, `committed`), and the next cluster write sends it first
(`flush`, awaited in the controller's guard). No cluster write ever goes out before the marker of the store
transaction that precedes it is in Kafka; a marker that cannot be written refuses the write, and the cycle
rebuilds its run as after a failed commit. A principal refused the marker (no `Read` on
`__consumer_offsets`, which docs/deployment.md's ACLs do not grant) is told once, as a warning, and the
daemon goes on without it (the cross-check then sees nothing).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from reassignd.cluster.api import (
    BROKER_THROTTLE_KEYS,
    TOPIC_THROTTLE_KEYS,
    ClusterAdmin,
    ConfigOp,
    ConfigSource,
)
from reassignd.cluster.errors import ClusterCallError, KafkaErrorInfo
from reassignd.cluster.marker import AUTHORIZATION_ERRORS, MarkerError
from reassignd.engine import crosscheck
from reassignd.engine.crosscheck import ClusterSide, ConfigKey, Marker, StoreSide
from reassignd.logs import get_logger
from reassignd.store.aio import AsyncStore
from reassignd.store.base import CommitResult, ConfigResource, Event, EventKind, PlanStatus, WriteBatch

log = get_logger("reassignd.ownership")


class MarkerPort(Protocol):
    """Where the marker is kept: cluster/marker.py's KafkaMarker (blocking calls), or a test's."""

    def write(self, seq: int, text: str) -> None: ...

    def read(self) -> tuple[int, str] | None: ...


class Ownership:
    def __init__(self, port: MarkerPort | None, store: AsyncStore, node: str = "") -> None:
        self.port = port
        self.store = store
        self.node = node
        self.pending = False
        """The store changed what the marker says: sent before the next cluster write."""
        self.due = True
        """The cross-check is due: at start and whenever this daemon gains the writer right."""
        self.marker: Marker | None = None
        """The marker as the last cross-check read it (what cleanup acts on)."""
        self.seen: ClusterSide | None = None
        """What that cross-check read of the cluster."""
        self.found: tuple[str, ...] = ()
        """The last cross-check's findings (a check made again when the writer right comes back replaces
        them, never adds to them)."""
        self.held = False
        """The cross-check found the store older than the marker: the marker is kept as it is (the
        evidence) until an operator decides."""
        self._checking = asyncio.Lock()
        self._last_plan: tuple[str | None, str | None] = (None, None)
        self._refused = False
        store.committed = self.committed

    def committed(self, batch: WriteBatch, _result: CommitResult) -> None:
        """Called by the store after each commit (no I/O)."""
        if batch.status_changes:
            plan_id, status, _ = batch.status_changes[-1]
            self._last_plan = (plan_id, status.value)
        if batch.status_changes or batch.originals_to_record or batch.originals_to_forget:
            self.pending = True

    def guarded(self, guard: Callable[[], Awaitable[None]]) -> Callable[[], Awaitable[None]]:
        async def checked() -> None:
            await guard()
            await self.flush()

        return checked

    async def flush(self, state: str | None = None) -> None:
        """The marker sent if stale (or `state` given: now, saying it); MarkerError when Kafka refused."""
        if ((not self.pending or self.held) and state is None) or self.port is None or self._refused:
            return
        marker = await self.current(state)
        try:
            await asyncio.to_thread(self.port.write, marker.seq, marker.encode())
        except MarkerError as exc:
            if exc.code not in AUTHORIZATION_ERRORS:
                raise
            self._refused = True
            log.warning(  # an ACL the deployment chose not to grant: said once, not an error
                "the ownership marker is refused (ACLs: Read on topic __consumer_offsets); the store "
                "cross-check at start is off",
                error=str(exc),
            )
        self.pending = False

    async def settle(self) -> None:
        """At the end of a cycle: a marker still stale (the plan ended, or throttles were put back, after
        the cycle's last cluster write) is sent now; a failure is retried by the next write or cycle."""
        try:
            await self.flush()
        except Exception as exc:
            log.warning("the ownership marker could not be written; retried", error=repr(exc))

    async def current(self, state: str | None = None) -> Marker:
        originals = await self.store.original_configs()
        record = await self.store.active_plan()
        plan, status = (record.id, record.status.value) if record is not None else self._last_plan
        if state is not None:
            plan, status = None, state
        written: dict[ConfigKey, str | None] = {
            (r.type, r.name, key): original.value for (r, key), original in originals.items()
        }
        return Marker(await self.store.last_seq(), plan, status, written, node=self.node)

    # -- at start ------------------------------------------------------------------------------------

    async def crosscheck(self, cluster: ClusterAdmin) -> tuple[str, ...]:
        """The findings of the comparison (engine/crosscheck.py); raises when the cluster cannot be read
        (the check stays due, and nothing is written meanwhile)."""
        async with self._checking:
            if not self.due:
                return ()
            return await self._crosscheck(cluster)

    async def _crosscheck(self, cluster: ClusterAdmin) -> tuple[str, ...]:
        marker = await self._read()
        found: tuple[str, ...] = ()
        if marker is not None:
            records = await self.store.list_plans()
            originals = await self.store.original_configs()
            store = StoreSide(
                await self.store.last_seq(),
                {p.id: p.status.value for p in records},
                frozenset((r.type, r.name, key) for r, key in originals),
                active=any(not p.status.terminal for p in records),
            )
            self.seen = await cluster_side(cluster, marker)
            found = crosscheck.findings(marker, store, self.seen)
        self.marker, self.due, self.held, self.found = marker, False, bool(found), found
        if found:
            log.error(
                "the state store does not explain the cluster: every cluster write is held until "
                "`reassignd recover`",
                findings=list(found),
            )
        return found

    async def _read(self) -> Marker | None:
        if self.port is None or self._refused:
            return None
        try:
            raw = await asyncio.to_thread(self.port.read)
        except MarkerError as exc:
            if exc.code not in AUTHORIZATION_ERRORS:
                raise
            self._refused = True
            log.warning("the ownership marker cannot be read (ACLs); no cross-check", error=str(exc))
            return None
        if raw is None:
            return None
        seq, text = raw
        try:
            return Marker.decode(text)
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("the ownership marker is unreadable; no cross-check", error=str(exc), seq=seq)
            return None

    # -- recover --mode cleanup ------------------------------------------------------------------------

    async def cleanup(self, cluster: ClusterAdmin, guard: Callable[[], Awaitable[None]]) -> dict[str, Any]:
        """Cancels the reassignments the marker proves ours and puts back the configs it set; returns what
        was done, and what Kafka refused."""
        marker = self.marker
        plan = crosscheck.cleanup(marker, await cluster_side(cluster, marker) if marker else _NOTHING)
        errors: list[str] = []
        if plan.cancel:
            await guard()
            answers = await cluster.alter_partition_reassignments(dict.fromkeys(plan.cancel))
            errors += [f"{tp.topic}-{tp.partition}: {e}" for tp, e in answers.items() if _refused(e)]
        for (kind, name), ops in _ops(plan.restore).items():
            await guard()
            try:
                if kind == "broker":
                    await cluster.alter_broker_configs(int(name), ops)
                else:
                    await cluster.alter_topic_configs(name, ops)
            except ClusterCallError as exc:
                errors.append(f"{kind} {name}: {exc}")
        return {
            "cancelled": [f"{tp.topic}-{tp.partition}" for tp in plan.cancel],
            "restored": [
                {"resource": kind, "name": name, "key": key, "value": value}
                for (kind, name, key), value in sorted(plan.restore.items())
            ],
            "errors": errors,
        }


_NOTHING = ClusterSide(frozenset(), {})


def _refused(error: KafkaErrorInfo | None) -> bool:
    """A cancel Kafka refused; NO_REASSIGNMENT_IN_PROGRESS is not one: the move ended (finished, or was
    cancelled by someone else) between the read and the cancel, and nothing of it is left in flight."""
    return error is not None and error.name != "NO_REASSIGNMENT_IN_PROGRESS"


def _ops(restore: Mapping[ConfigKey, str | None]) -> dict[tuple[str, str], list[ConfigOp]]:
    out: dict[tuple[str, str], list[ConfigOp]] = {}
    for (kind, name, key), value in sorted(restore.items()):
        op = ConfigOp.delete(key) if value is None else ConfigOp.set(key, value)
        out.setdefault((kind, name), []).append(op)
    return out


async def cluster_side(cluster: ClusterAdmin, marker: Marker) -> ClusterSide:
    """Reassignments in flight, and the current value of each config the marker names."""
    in_flight = frozenset(await cluster.list_partition_reassignments())
    brokers = sorted({int(name) for kind, name, _ in marker.written if kind == "broker"})
    topics = sorted(marker.topics)
    configs: dict[ConfigKey, str | None] = {}
    if brokers:
        described = await cluster.describe_broker_configs(brokers, BROKER_THROTTLE_KEYS)
        for broker, description in described.items():
            for key, value in description.dynamic(ConfigSource.DYNAMIC_BROKER).items():
                configs[("broker", str(broker), key)] = value
    if topics:
        for topic, description in (await cluster.describe_topic_configs(topics, TOPIC_THROTTLE_KEYS)).items():
            for key, value in description.dynamic(ConfigSource.DYNAMIC_TOPIC).items():
                configs[("topic", topic, key)] = value
    return ClusterSide(in_flight, {k: configs.get(k) for k in marker.written})


def recovered_batch(
    mode: str,
    found: tuple[str, ...],
    done: Mapping[str, Any] | None,
    marker: Marker | None,
    seen: ClusterSide | None,
) -> WriteBatch:
    """The journal entry of an operator's `recover`. Cleanup forgets the originals it put back; adopt
    records the marker's originals the store lacks (a record never replaces one the store has), so the
    plan that goes on restores what was there before us, not our own lost writes taken for an operator's
    (the values the cluster showed for them are noted as ours)."""
    batch = WriteBatch().append(
        Event(EventKind.ERROR, data={"recovered": mode, "findings": list(found), **(done or {})})
    )
    for row in (done or {}).get("restored", ()):
        batch.forget_original(ConfigResource(row["resource"], row["name"]), row["key"])
    if mode == "adopt" and marker is not None:
        for (kind, name, key), value in sorted(marker.written.items()):
            batch.record_original(ConfigResource(kind, name), key, value)
            current = seen.configs.get((kind, name, key)) if seen is not None else None
            if current != value:
                batch.note_written(ConfigResource(kind, name), key, (current,))
    return batch


def cancel_active(batch: WriteBatch, plans: Mapping[str, PlanStatus]) -> WriteBatch:
    """Cleanup: no plan of the (older) store goes on. One it runs is cancelled, so its run reverts what is
    left of it; one queued (the lost plan, as the store last saw it, or one behind it) is cancelled."""
    for plan_id, status in plans.items():
        if status in (PlanStatus.RUNNING, PlanStatus.PAUSED):
            batch.set_status(plan_id, PlanStatus.CANCELLING)
        elif status is PlanStatus.QUEUED:
            batch.set_status(plan_id, PlanStatus.CANCELLED)
    return batch

"""The real controller over the simulator's model, in one process and in virtual time.

No TCP, no subprocess, no wall clock: `SimClusterAdmin` answers the controller's cluster calls from the
model, the store is SQLite in memory, and the controller's clock is the simulator's. A test drives it cycle
by cycle (`cycle`, `run`), injects faults between cycles (brokers stopped and started, the cluster out of
reach, topics deleted, an operator's throttle writes) and crashes the daemon (`crash`: everything in memory
is dropped; the store and the cluster live on, as they do after kill -9).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from reassignd.daemon.clock import SteadyClock
from reassignd.daemon.controller import AutoThrottle, Controller
from reassignd.engine import Limits
from reassignd.engine.anomalies import HealingSettings
from reassignd.engine.run.effects import Effect
from reassignd.model import ReassignmentPlan, TopicPartition
from reassignd.sim import SimCluster, load_scenario
from reassignd.sim.admin import SimClusterAdmin
from reassignd.store.aio import AsyncStore
from reassignd.store.base import (
    CommitResult,
    EventKind,
    JournalEntry,
    PlanStatus,
    StepReplayError,
    WriteBatch,
)
from reassignd.store.sqlite import SqliteStore

T = TypeVar("T")
KAFKA_MODES = {
    "kraft": {"version": "4.1", "mode": "kraft"},
    "zookeeper": {"version": "3.9", "mode": "zookeeper"},
}
"""The controller modes the daemon is tested in (the scenario's `kafka` field): the newest KRaft release and
the last release with ZooKeeper mode, whose controller differs where the daemon meets it (docs/engine.md)."""

EPOCH = 1_800_000_000.0  # virtual time 0, as a wall-clock instant for timestamps
THROTTLE_KEYS = (
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
    "replica.alter.log.dirs.io.max.bytes.per.second",
)


def plan_of(targets: Mapping[tuple[str, int], list[int]]) -> ReassignmentPlan:
    return ReassignmentPlan.from_dict(
        {
            "version": 1,
            "partitions": [
                {"topic": t, "partition": p, "replicas": list(r)} for (t, p), r in sorted(targets.items())
            ],
        }
    )


class Crash(BaseException):
    """kill -9 at an effect boundary: nothing after it runs (a BaseException, so no handler swallows it)."""


class InlineStore(AsyncStore):
    """The store's async facade without worker threads (the tests are single-threaded and in memory);
    it counts journal replays, which the controller tolerates but which must never happen."""

    def __init__(self, store: SqliteStore) -> None:
        super().__init__(store)
        self.replays: list[str] = []

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return fn(*args, **kwargs)

    async def commit(self, batch: WriteBatch) -> CommitResult:
        try:
            return await super().commit(batch)
        except StepReplayError as exc:
            self.replays.append(str(exc))
            raise

    def __getattribute__(self, name: str) -> Any:
        if name in (
            "get_plan",
            "list_plans",
            "active_plan",
            "partition_states",
            "original_configs",
            "journal",
            "step_entry",
        ):
            method = getattr(object.__getattribute__(self, "store"), name)

            async def inline(*args: Any, **kwargs: Any) -> Any:
                return method(*args, **kwargs)

            return inline
        return object.__getattribute__(self, name)


@dataclass
class InProcessDaemon:
    """One daemon (controller + store) over one simulated cluster."""

    scenario: Mapping[str, Any]
    limits: Mapping[str, Any]
    cycle_seconds: float = 5.0
    auto_throttle: AutoThrottle | None = None
    kafka_mode: str | None = None
    healing: HealingSettings | None = None
    """Self-healing's mode and gates (off by default, as in the daemon)."""
    """A key of KAFKA_MODES; None keeps the scenario's own `kafka` field (or the simulator's default)."""
    sim: SimCluster = field(init=False)
    admin: SimClusterAdmin = field(init=False)
    store: InlineStore = field(init=False)
    controller: Controller = field(init=False)
    crashes: int = 0
    wall_step: float = 0.0
    """How far the system's wall clock was stepped (NTP, `date -s`): the cluster's time runs on regardless."""
    steady: SteadyClock = field(init=False)
    """The daemon's clock, as app.py makes it: the store and the controller read it (a crash makes anew)."""

    def __post_init__(self) -> None:
        scenario = dict(self.scenario)
        if self.kafka_mode is not None:
            scenario["kafka"] = KAFKA_MODES[self.kafka_mode]
        self.sim = SimCluster.from_scenario(load_scenario(scenario))
        self.admin = SimClusterAdmin(self.sim)
        self.steady = SteadyClock(self.clock, lambda: self.sim.now)
        self.store = InlineStore(SqliteStore(":memory:", clock=self.stamp))
        self.controller = self._new_controller()

    def clock(self) -> float:
        """The wall clock: timestamps."""
        return EPOCH + self.sim.now + self.wall_step

    def stamp(self) -> float:
        """The store's clock: the daemon's (a restarted daemon opens the store with its own)."""
        return self.steady()

    def _new_controller(self) -> Controller:
        return Controller(
            self.admin,  # type: ignore[arg-type]
            self.store,
            Limits.from_mapping(self.limits),
            clock=self.steady,
            auto_throttle=self.auto_throttle,
            healing=self.healing,
        )

    # -- driving --------------------------------------------------------------------------------------

    async def submit(self, plan: ReassignmentPlan, **options: Any) -> str:
        await self.controller.start()
        result = await self.controller.submit_plan(plan, **options)
        return str(result["plan_id"])

    async def cycle(self) -> str:
        """One probe and one controller cycle (the daemon probes every few seconds, beside its cycles),
        then the cluster moves on by one cycle interval."""
        try:
            await self.controller.probe()
            status = await self.controller.cycle()
        finally:
            self.sim.advance(self.cycle_seconds)
        return status

    async def run(self, until: Callable[[], bool] | None = None, *, seconds: float = 3600.0) -> list[str]:
        """Cycles until `until()` holds (default: no plan active) or `seconds` of cluster time passed."""
        done = until or self.idle
        statuses = []
        deadline = self.sim.now + seconds
        while self.sim.now < deadline:
            statuses.append(await self.cycle())
            if done():
                return statuses
        raise AssertionError(f"not done after {seconds:.0f} s of cluster time; last: {statuses[-3:]}")

    def idle(self) -> bool:
        return all(r.status.terminal for r in self.controller.records.values())

    def crash(self) -> None:
        """kill -9: the controller's memory is gone; the store and the cluster stay."""
        self.crashes += 1
        self.steady = SteadyClock(self.clock, lambda: self.sim.now)
        self.controller = self._new_controller()

    async def cycle_crashing_at(self, effect_index: int) -> bool:
        """A cycle in which the daemon dies before its `effect_index`-th effect; True when it did."""
        seen = [0]

        def hook(effect: Effect) -> None:
            if seen[0] == effect_index:
                raise Crash
            seen[0] += 1

        self.controller.effect_hook = hook
        try:
            await self.controller.cycle()
        except Crash:
            self.crash()
            await self.controller.start()
            return True
        finally:
            self.controller.effect_hook = None
            self.sim.advance(self.cycle_seconds)
        return False

    # -- reading --------------------------------------------------------------------------------------

    def replicas(self, topic: str, partition: int) -> list[int]:
        return list(self.sim.topics[topic].partitions[partition].replicas)

    def reassigning(self) -> list[TopicPartition]:
        return [TopicPartition(t, i) for t, i, *_ in self.sim.list_partition_reassignments()]

    def throttle_configs(self) -> dict[str, dict[str, str]]:
        """Every throttle config on every broker and topic (dynamic values), for byte-identical checks."""
        out: dict[str, dict[str, str]] = {}
        for b in sorted(self.sim.brokers):
            configs = {k: v for k, v in self.sim.brokers[b].configs.items() if k in THROTTLE_KEYS}
            if configs:
                out[f"broker {b}"] = configs
        for name in sorted(self.sim.topics):
            configs = {k: v for k, v in self.sim.topics[name].configs.items() if k in THROTTLE_KEYS}
            if configs:
                out[f"topic {name}"] = configs
        return out

    async def journal(self, *kinds: EventKind) -> list[JournalEntry]:
        return await self.store.journal(kinds=list(kinds) or None)

    async def status_of(self, plan_id: str) -> PlanStatus:
        record = await self.store.get_plan(plan_id)
        assert record is not None
        return record.status

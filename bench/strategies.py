"""Execution strategies compared in virtual time on the simulator's pure model (docs/benchmarks.md).

* `stock`: what kafka-reassign-partitions does: throttles first (leader entries for every pre-move replica,
  follower entries for every new replica, both rates on every broker of the old or new assignment), then
  one AlterPartitionReassignments with every target, and the throttles cleared once nothing is moving.
* `kip435-batch`: the real engine with `reassignment.scheduling.mode = batch` (each batch waits for the
  previous one), driven with the daemon's cycle semantics.
* `reassignd`: the real engine in continuous mode, same driver.

The engine strategies run through reassignd.rehearsal (the daemon's cycle semantics: read the plan's
partitions, `decide`, sync throttles for the moves in flight, start steps, elect leaders), either on the
daemon's fixed cycle (`controller.cycle.interval.seconds`, a cycle at 0, T, 2T, ...) or with 1 ms cycles,
which is the event-driven ideal (a cycle right after every ISR join) to within a millisecond per step.
Every strategy runs on a `Meter`: the SimCluster with its admin calls counted and its clock advanced event
by event, with the scenario's broker failures applied at their times.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from reassignd import config_keys
from reassignd.engine import Limits
from reassignd.model import ReassignmentPlan, TopicPartition
from reassignd.rehearsal import rehearse
from reassignd.sim import SimCluster, load_scenario

FAST_CYCLE = 0.001
# More events than this at one virtual instant means time cannot move on: fail instead of looping.
_MAX_EVENTS_AT_ONE_INSTANT = 10_000
LOG_DIR_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
SCENARIOS = Path(__file__).parent / "scenarios"
TOPIC, BROKER = 2, 4


@dataclass(frozen=True, slots=True)
class BrokerEvent:
    at: float
    action: str  # "stop" | "start"
    broker: int


@dataclass(frozen=True)
class Case:
    """One benchmark scenario: a cluster, a plan, the limits every strategy gets, and failures."""

    name: str
    description: str
    cluster: dict[str, Any]
    plan: ReassignmentPlan
    limits: Limits
    events: tuple[BrokerEvent, ...] = ()
    cycle_interval: float = 5.0
    limit_changes: tuple[tuple[float, Limits], ...] = ()
    """(seconds in, the limits from then on): an operator's live `reassignd throttle` or `limits`."""

    @property
    def has_failure(self) -> bool:
        return any(e.action == "stop" for e in self.events)

    @property
    def lost_brokers(self) -> frozenset[int]:
        """Brokers that stop and never start again."""
        return frozenset(b for b, _, back in self.outages if back == math.inf)

    @property
    def outages(self) -> tuple[tuple[int, float, float], ...]:
        """(broker, stops at, starts again at or inf) for every stop in the scenario."""
        found = []
        for i, e in enumerate(self.events):
            if e.action == "stop":
                back = next(
                    (s.at for s in self.events[i + 1 :] if s.action == "start" and s.broker == e.broker),
                    math.inf,
                )
                found.append((e.broker, e.at, back))
        return tuple(found)


def case_from_dict(data: dict[str, Any]) -> Case:
    events = tuple(
        BrokerEvent(float(e["at"]), str(e["action"]), int(e["broker"])) for e in data.get("events", [])
    )
    for e in events:
        if e.action not in ("stop", "start"):
            raise ValueError(
                f"scenario {data.get('name')}: events: action must be stop|start, got {e.action!r}"
            )
    return Case(
        name=str(data["name"]),
        description=str(data.get("description", "")),
        cluster=data["cluster"],
        plan=ReassignmentPlan.from_dict(data["plan"]),
        limits=Limits.from_mapping(data["limits"]),
        events=tuple(sorted(events, key=lambda e: e.at)),
        cycle_interval=float(data.get("cycle_interval", 5.0)),
        limit_changes=tuple(
            (float(c["at"]), Limits.from_mapping({**data["limits"], **c["limits"]}))
            for c in sorted(data.get("limit_changes", []), key=lambda c: float(c["at"]))
        ),
    )


def load_cases(names: Iterable[str] | None = None, directory: Path = SCENARIOS) -> list[Case]:
    wanted = set(names) if names else None
    cases = []
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text())
        if wanted is None or data["name"] in wanted:
            cases.append(case_from_dict(data))
    return cases


# ---------------------------------------------------------------------------------------------------------
# The metered cluster: the SimCluster's admin calls and clock wrapped in place, so any driver (the stock
# tool below, reassignd.rehearsal for the engine) is measured the same way. Time is advanced event by event,
# so the integrals are exact, and the scenario's broker failures happen at their times.


class Meter:
    """A SimCluster whose admin calls are counted and whose clock is advanced event by event."""

    def __init__(self, sim: SimCluster, plan: ReassignmentPlan, events: tuple[BrokerEvent, ...]) -> None:
        self.sim = sim
        self.plan = plan
        self.events = list(events)
        self.admin_requests = 0
        self.config_writes = 0
        self.extra_replica_seconds = 0.0
        self.timeline: list[tuple[float, dict[int, int]]] = []
        self.done_at: float | None = None
        """When every partition of the plan first held its target replicas with no move in progress."""
        self._request_keys: set[tuple[str, float]] = set()
        self._base_rf: dict[tuple[str, int], int] = {}
        for tp, target in plan.targets.items():
            p = sim.topics[tp.topic].partitions[tp.partition]
            self._base_rf[(tp.topic, tp.partition)] = max(len(p.replicas), len(target))
        self._advance = sim.advance
        self._next_event = sim.next_event_time
        self._alter = sim.alter_partition_reassignment
        self._elect = sim.elect_leaders
        self._configs = sim.incremental_alter_configs
        sim.advance = self.advance  # type: ignore[method-assign]
        sim.next_event_time = self.next_event_time  # type: ignore[method-assign]
        sim.alter_partition_reassignment = self.alter_partition_reassignment  # type: ignore[method-assign]
        sim.elect_leaders = self.elect_leaders  # type: ignore[method-assign]
        sim.incremental_alter_configs = self.incremental_alter_configs  # type: ignore[method-assign]
        self._sample()

    # -- admin calls: one request per API per instant (a cycle's batch), broker configs one per broker ----

    def _request(self, key: str) -> None:
        if (key, self.sim.now) not in self._request_keys:
            self._request_keys.add((key, self.sim.now))
            self.admin_requests += 1

    def alter_partition_reassignment(self, topic: str, partition: int, replicas: list[int] | None) -> None:
        self._request("alter")
        self._alter(topic, partition, replicas)
        self._sample()

    def elect_leaders(self, election_type: int, tps: list[tuple[str, int]] | None) -> Any:
        self._request("elect")
        result = self._elect(election_type, tps)
        self._sample()
        return result

    def incremental_alter_configs(
        self,
        resource_type: int,
        name: str,
        ops: list[tuple[str, int, str | None]],
        validate_only: bool = False,
    ) -> None:
        self._request("topic-configs" if resource_type == TOPIC else f"broker-configs-{name}")
        self._configs(resource_type, name, ops, validate_only)
        self.config_writes += len(ops)

    # -- time -------------------------------------------------------------------------------------------

    def next_event_time(self) -> float | None:
        upcoming = self._next_event()
        if self.events and (upcoming is None or self.events[0].at < upcoming):
            return max(self.events[0].at, self.sim.now)
        return upcoming

    def advance(self, seconds: float) -> None:
        self.advance_to(self.sim.now + seconds)

    def advance_to(self, when: float) -> None:
        """Every event up to `when` applied, also those due at the current instant: the simulator reports an
        event due now after a change at this instant (a quota whose window is at its rate when a copy starts
        shuts at once), and only `advance` applies it (`advance(0)` included)."""
        same_instant = 0
        while True:
            upcoming = self._next_event()
            if upcoming is not None and upcoming <= self.sim.now:
                same_instant += 1
                if same_instant > _MAX_EVENTS_AT_ONE_INSTANT:
                    raise RuntimeError(
                        f"the simulator reports an event due at {upcoming} s that advancing does not apply "
                        f"({same_instant} times at {self.sim.now} s)"
                    )
            else:
                same_instant = 0
            failure = self.events[0].at if self.events else math.inf
            if failure <= when and (upcoming is None or failure <= upcoming):
                self._step(failure)
                event = self.events.pop(0)
                if event.action == "stop":
                    self.sim.stop_broker(event.broker)
                else:
                    self.sim.start_broker(event.broker)
                self._sample()
                continue
            if upcoming is None or upcoming > when:
                break
            self._step(upcoming)
        self._step(when)

    def _step(self, when: float) -> None:
        now = self.sim.now
        if when > now:
            self.extra_replica_seconds += self._extra_replicas() * (when - now)
        self._advance(max(0.0, when - now))  # also at `now`: what is due now is applied only by advancing
        self._sample()

    def moving(self) -> bool:
        return bool(self.sim.list_partition_reassignments(None))

    def _extra_replicas(self) -> int:
        extra = 0
        for topic, partition, replicas, _adding, _removing in self.sim.list_partition_reassignments(None):
            extra += max(0, len(replicas) - self._base_rf.get((topic, partition), len(replicas)))
        return extra

    def _sample(self) -> None:
        incoming = {b["id"]: b["incoming"] for b in self.sim.observed()["brokers"] if b["incoming"]}
        now = self.sim.now
        if not self.timeline or self.timeline[-1][1] != incoming:
            if self.timeline and self.timeline[-1][0] == now:
                self.timeline[-1] = (now, incoming)
            else:
                self.timeline.append((now, incoming))
        if self.done_at is None and not self.moving() and self.at_target():
            self.done_at = now

    def at_target(self) -> bool:
        return not self.unfinished()

    def unfinished(self) -> list[TopicPartition]:
        topics = self.sim.topics
        return [
            tp
            for tp, target in self.plan.targets.items()
            if topics[tp.topic].partitions[tp.partition].replicas != list(target)
        ]


def make_meter(case: Case) -> Meter:
    sim = SimCluster.from_scenario(load_scenario(case.cluster))
    return Meter(sim, case.plan, case.events)


# ---------------------------------------------------------------------------------------------------------
# Strategies


@dataclass
class Run:
    strategy: str
    meter: Meter
    finished: bool
    cycles: int = 0
    ended_because: str = ""


def run_stock(case: Case, max_seconds: float) -> Run:
    return run_stock_on(make_meter(case), case.limits, case.cycle_interval, max_seconds)


def run_stock_on(meter: Meter, limits: Limits, verify_interval: float, max_seconds: float) -> Run:
    """kafka-reassign-partitions --execute --throttle, then --verify every cycle interval until done.

    As tools/.../reassign/ReassignPartitionsCommand.java does: leader entries for every current replica of
    every plan partition, follower entries for the new ones (calculateLeaderThrottles /
    calculateFollowerThrottles, one request for all topics), both rates on every broker of the old or new
    assignments (modifyInterBrokerThrottle), one AlterPartitionReassignments; once --verify finds nothing
    moving it DELETEs the two lists on the plan's topics and the three broker throttle keys on every live
    broker (clearAllThrottles).
    """
    sim = meter.sim
    leader_rate, follower_rate = limits.leader_throttled_rate, limits.follower_throttled_rate
    throttle = leader_rate if leader_rate is not None else follower_rate  # the tool takes one --throttle
    leader_entries: dict[str, list[str]] = {}
    follower_entries: dict[str, list[str]] = {}
    brokers: set[int] = set()
    for tp, target in sorted(meter.plan.targets.items()):
        current = sim.topics[tp.topic].partitions[tp.partition].replicas
        brokers.update(current, target)
        leader_entries.setdefault(tp.topic, []).extend(f"{tp.partition}:{b}" for b in current)
        follower_entries.setdefault(tp.topic, []).extend(
            f"{tp.partition}:{b}" for b in target if b not in current
        )
    if throttle is not None:
        for topic in sorted(leader_entries):
            ops = [(config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS, 0, ",".join(leader_entries[topic]))]
            ops.append(
                (config_keys.FOLLOWER_REPLICATION_THROTTLED_REPLICAS, 0, ",".join(follower_entries[topic]))
            )
            sim.incremental_alter_configs(TOPIC, topic, ops)
        for broker in sorted(brokers):
            if sim.brokers[broker].online:
                rates = [
                    (config_keys.LEADER_REPLICATION_THROTTLED_RATE, 0, str(throttle)),
                    (config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE, 0, str(throttle)),
                ]
                sim.incremental_alter_configs(BROKER, str(broker), rates)
    for tp, target in sorted(meter.plan.targets.items()):
        sim.alter_partition_reassignment(tp.topic, tp.partition, list(target))
    cycles = 0
    while meter.moving() and sim.now < max_seconds:
        meter.advance(verify_interval)
        cycles += 1
    finished = not meter.moving()
    if throttle is not None:
        for topic in sorted(leader_entries):
            clear = [
                (config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS, 1, None),
                (config_keys.FOLLOWER_REPLICATION_THROTTLED_REPLICAS, 1, None),
            ]
            sim.incremental_alter_configs(TOPIC, topic, clear)
        for broker in sorted(b for b in sim.brokers if sim.brokers[b].online):
            clear = [
                (key, 1, None)
                for key in (
                    config_keys.LEADER_REPLICATION_THROTTLED_RATE,
                    config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE,
                    LOG_DIR_RATE,
                )
            ]
            sim.incremental_alter_configs(BROKER, str(broker), clear)
    if meter.events:
        meter.advance_to(meter.events[-1].at)
    return Run("stock", meter, finished, cycles, "completed" if finished else "not finished")


def run_engine(case: Case, mode: str, cycle_interval: float, max_seconds: float) -> Run:
    """The real engine as the daemon runs it (reassignd.rehearsal), on the metered cluster."""
    meter = make_meter(case)
    limits = replace(case.limits, scheduling_mode=mode)
    result = rehearse(meter.sim, case.plan, limits, cycle_interval=cycle_interval, max_seconds=max_seconds)
    if meter.events:
        meter.advance_to(meter.events[-1].at)
    name = "reassignd" if mode == "continuous" else "kip435-batch"
    return Run(name, meter, result.finished, result.cycles, result.ended_because)


Strategy = Callable[[Case, float], Run]

STRATEGIES: dict[str, Strategy] = {
    "stock": run_stock,
    "kip435-batch": lambda case, limit: run_engine(case, "batch", case.cycle_interval, limit),
    "reassignd": lambda case, limit: run_engine(case, "continuous", case.cycle_interval, limit),
    # Cycles every millisecond: a daemon woken by every ISR join (the event-driven ideal).
    "reassignd-event-driven": lambda case, limit: run_engine(case, "continuous", FAST_CYCLE, limit),
}

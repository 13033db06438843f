"""The rehearsal driver: a plan run through the real engine against a SimCluster, in virtual time.

What it reproduces of the daemon (reassignd/daemon/controller.py, one `cycle()` per interval):
  1. a snapshot of the plan's partitions (in-flight and changed ones re-read, the rest cached), with the
     topics' effective min.insync.replicas and the brokers' dynamic throttle rates;
  2. `decide` with the limits in force;
  3. the throttle configs for everything in flight (`throttle_plan` / `config_writes`, originals kept),
     written with IncrementalAlterConfigs, SUBTRACT before APPEND as the daemon's ThrottleKeeper does;
  4. AlterPartitionReassignments for the new steps;
  5. preferred-leader elections; the plan ends once nothing is in flight and the throttles are restored.
Cycles start every `cycle_interval` simulated seconds, the first one at time 0 (a submitted plan wakes the
daemon at once). A cycle that changed nothing is followed by cycles that change nothing until the next
simulator event (an ISR join), so the driver jumps to the first cycle boundary after that event: same
outcome, without stepping through idle cycles. That is what makes thousands of partitions take seconds.

Public API (also used by bench/ for the `reassignd` strategy):

    from reassignd.rehearsal import rehearse, cluster_from_snapshot
    sim = cluster_from_snapshot(snapshot, produce_rate=None)      # or SimCluster.from_scenario(...)
    result = rehearse(sim, plan, limits, cycle_interval=5.0)      # runs `sim` forward
    result.duration_seconds, result.finished, result.to_json_dict()

`rehearse` mutates the SimCluster it is given (time, replicas, configs) and starts at the cluster's current
time; durations are relative to that start.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping

from reassignd.engine import Decision, ExecutionState, Limits, Status, decide
from reassignd.engine.progress import Bytes, partition_bytes
from reassignd.engine.throttle import (
    BROKER_KEYS,
    FOLLOWER_RATE,
    LEADER_RATE,
    TOPIC_KEYS,
    ConfigWrite,
    ThrottleOriginals,
    calls_per_resource,
    config_writes,
    moves_in_flight,
    throttle_plan,
)
from reassignd.model import (
    Broker,
    ClusterSnapshot,
    PartitionState,
    ReassignmentPlan,
    TopicInfo,
    TopicPartition,
)
from reassignd.rehearsal.result import RehearsalResult, Sample, Stuck
from reassignd.sim import SimCluster
from reassignd.sim.entities import SimPartition
from reassignd.sim.scenario import scenario_from_snapshot, topic_id_text
from reassignd.sim.views import partition_state

__all__ = ["RehearsalResult", "Sample", "Stuck", "cluster_from_snapshot", "rehearse"]

DEFAULT_MAX_SECONDS = 30 * 86400.0
_OPS = {"SET": 0, "DELETE": 1, "APPEND": 2, "SUBTRACT": 3}


def cluster_from_snapshot(
    snapshot: ClusterSnapshot,
    *,
    produce_rate: float | None = None,
    topic_produce_rates: Mapping[str, float] | None = None,
    seed: int = 0,
) -> SimCluster:
    """A simulated copy of `snapshot`: replicas, ISR, sizes, configs, moves in progress, produce rates.

    `produce_rate` (bytes/s, every partition) and `topic_produce_rates` (bytes/s per partition of a topic)
    replace the snapshot's measured rates where given.
    """
    sim = SimCluster.from_scenario(scenario_from_snapshot(snapshot), seed=seed)
    for name in list(sim.topics):
        rate = (topic_produce_rates or {}).get(name, produce_rate)
        if rate is not None:
            sim.set_produce_rate(name, None, float(rate))
    return sim


class _Driver:
    def __init__(
        self, sim: SimCluster, plan: ReassignmentPlan, limits: Limits, cycle_interval: float
    ) -> None:
        self.sim = sim
        self.plan = plan
        self.limits = limits
        self.interval = cycle_interval
        self.start = sim.now
        self.parts: dict[TopicPartition, SimPartition] = {}
        for tp in plan.targets:
            self.parts[tp] = sim.topics[tp.topic].partitions[tp.partition]
        self.cached: dict[TopicPartition, PartitionState] = {}
        self.last: ClusterSnapshot | None = None
        self.touched: set[TopicPartition] = set()
        self.online: frozenset[int] = frozenset()
        self.bytes_left: dict[TopicPartition, Bytes] = {}
        self.remaining = 0
        self.originals = ThrottleOriginals()
        owned: dict[str, set[int]] = {}
        for tp in plan.targets:
            owned.setdefault(tp.topic, set()).add(tp.partition)
        self.owned = {t: frozenset(p) for t, p in owned.items()}
        self.min_insync = {t: str(sim.min_insync_replicas(t)) for t in self.owned}
        self.bytes_in: dict[int, int] = {}
        self.bytes_out: dict[int, int] = {}
        self.steps = 0
        self.step_leader: dict[TopicPartition, int] = {}

    # -- reading, as the daemon's _plan_snapshot does ---------------------------------------------------

    def snapshot(self, fresh: Iterable[TopicPartition] | None) -> tuple[ClusterSnapshot, set[TopicPartition]]:
        """Re-read `fresh` (None: every plan partition); the rest is unchanged since the last read.

        Apart from brokers stopping or starting (which triggers a full read), only our own actions change a
        partition's replicas, ISR or leader: steps in flight (which include those that completed since),
        and partitions we just started or elected. Sizes of the others are kept from their last read, as
        the daemon keeps them between size refreshes.
        """
        changed: set[TopicPartition] = set()
        online = frozenset(b.id for b in self.sim.brokers.values() if b.online)
        if online != self.online:
            fresh = None  # a broker stopped or started under us (a benchmark's failure): read everything
            self.online = online
        wanted = self.parts if fresh is None else {tp: self.parts[tp] for tp in fresh}
        updated = []
        for tp, p in wanted.items():
            state = partition_state(p, tp)
            if self.cached.get(tp) != state:
                changed.add(tp)
                self.cached[tp] = state
                self._recount(tp, state)
                updated.append(state)
        sim = self.sim
        topics = {
            name: TopicInfo(
                name,
                topic_id_text(sim.topics[name].topic_id),
                {
                    **{k: v for k, v in sim.topics[name].configs.items() if k in TOPIC_KEYS},
                    "min.insync.replicas": self.min_insync[name],
                },
            )
            for name in self.owned
        }
        brokers = {b.id: Broker(b.id, b.rack, b.online) for b in sim.brokers.values()}
        broker_configs = {
            b.id: {k: v for k, v in b.configs.items() if k in BROKER_KEYS} for b in sim.brokers.values()
        }
        if self.last is None:
            partitions: dict[TopicPartition, PartitionState] = dict(self.cached)
        else:
            partitions = dict(self.last.partitions)
            partitions.update((state.tp, state) for state in updated)
        self.last = ClusterSnapshot(
            brokers=brokers,
            partitions=partitions,
            topics=topics,
            broker_configs=broker_configs,
            cluster_id=sim.cluster_id,
            controller_id=sim.controller_id,
        )
        return self.last, changed

    def _recount(self, tp: TopicPartition, state: PartitionState) -> None:
        now = partition_bytes(state, self.plan.targets[tp])
        before = self.bytes_left.get(tp)
        self.remaining += now.remaining - (before.remaining if before else 0)
        self.bytes_left[tp] = now

    # -- applying, as the daemon's _apply does ------------------------------------------------------------

    def apply(self, snapshot: ClusterSnapshot, previous: ExecutionState, decision: Decision) -> bool:
        """Carry out a decision; True when anything changed in the cluster."""
        acted = False
        for tp in decision.completed:
            rec = previous[tp]
            p = snapshot.partitions[tp]
            size = p.size_bytes
            for broker in rec.adding:
                self.bytes_in[broker] = self.bytes_in.get(broker, 0) + size
            leader = self.step_leader.pop(tp, rec.leader)
            if rec.adding:
                self.bytes_out[leader] = self.bytes_out.get(leader, 0) + size * len(rec.adding)
        acted |= self.sync_throttles(snapshot, decision.state)
        for start in decision.start:
            self.sim.alter_partition_reassignment(start.tp.topic, start.tp.partition, list(start.target))
            self.step_leader[start.tp] = start.leader
            self.touched.add(start.tp)
            self.steps += 1
            acted = True
        if decision.elect:
            self.sim.elect_leaders(0, [(e.tp.topic, e.tp.partition) for e in decision.elect])
            self.touched.update(e.tp for e in decision.elect)
            acted = True
        return acted or bool(decision.completed) or bool(decision.aborted)

    def sync_throttles(self, snapshot: ClusterSnapshot, state: ExecutionState | None) -> bool:
        moves = moves_in_flight(state) if state is not None else ()
        plan = throttle_plan(snapshot, moves, self.limits, self.originals, self.owned)
        self.originals = plan.originals
        writes = config_writes(plan, snapshot)
        online = snapshot.online_broker_ids()
        grouped: dict[tuple[str, str], list[ConfigWrite]] = {}
        for w in writes:
            if w.resource == "broker" and int(w.name) not in online:
                continue
            grouped.setdefault((w.resource, w.name), []).append(w)
        for (kind, name), ops in sorted(grouped.items()):
            for call in calls_per_resource(ops):
                self.sim.incremental_alter_configs(
                    2 if kind == "topic" else 4, name, [(w.key, _OPS[w.op], w.value) for w in call], False
                )
        return bool(grouped)

    def sample(self, state: ExecutionState) -> Sample:
        load = state.load
        return Sample(
            self.sim.now - self.start, max(0, self.remaining), dict(load.incoming), dict(load.outgoing)
        )

    def stuck(self) -> list[Stuck]:
        found = []
        for topic, partition, follower, leader, rate in self.sim.fetch_rates():
            tp = TopicPartition(topic, partition)
            if tp not in self.parts:
                continue
            produce = self.parts[tp].produce_bytes_per_sec
            if rate <= produce:
                reason = _why_slow(self.sim, follower, leader, rate)
                found.append(Stuck(tp, follower, leader, rate, produce, reason))
        return found


def _why_slow(sim: SimCluster, follower: int, leader: int, rate: float) -> str:
    follower_rate = sim.broker_config(follower, FOLLOWER_RATE)
    leader_rate = sim.broker_config(leader, LEADER_RATE)
    return (
        f"fetch {rate:,.0f} B/s; follower throttle on {follower}: {follower_rate}, "
        f"leader throttle on {leader}: {leader_rate}"
    )


def _why_ended(state: ExecutionState) -> str:
    if state.in_flight_set:
        return "stuck: no move in flight can catch up (fetch rate <= produce rate), none can start"
    reasons = sorted({f"{rec.reason}" for _, rec in state.waiting()})
    return f"blocked: {state.counts[Status.BLOCKED]} partition(s) cannot start ({', '.join(reasons)})"


def rehearse(
    sim: SimCluster,
    plan: ReassignmentPlan,
    limits: Limits,
    *,
    cycle_interval: float = 5.0,
    max_seconds: float = DEFAULT_MAX_SECONDS,
    on_cycle: Callable[[Sample], None] | None = None,
) -> RehearsalResult:
    """Run `plan` on `sim` as the daemon would, from the sim's current time until it ends or gets stuck.

    `cycle_interval` is the daemon's `controller.cycle.interval.seconds` in simulated seconds (times the
    time scale when comparing with a time-scaled simulator). Ends when the plan completes, when nothing
    can progress any more (moves that never converge), or after `max_seconds` of virtual time.
    """
    if not (math.isfinite(cycle_interval) and cycle_interval > 0):
        raise ValueError(f"cycle_interval must be a positive number of seconds, got {cycle_interval}")
    wall = time.perf_counter()
    driver = _Driver(sim, plan, limits, cycle_interval)
    snapshot, _ = driver.snapshot(None)
    state = ExecutionState.initial(plan, snapshot, tuple(limits.ordering))
    total = driver.remaining
    produce = sum(p.produce_bytes_per_sec for p in snapshot.partitions.values() if p.tp in plan.targets)
    timeline: list[Sample] = []
    cycles = 0
    ended = ""
    finished = False
    changed: set[TopicPartition] | None = None
    while True:
        cycles += 1
        decision = decide(snapshot, plan, state, limits, changed)
        acted = driver.apply(snapshot, state, decision)
        state = decision.state
        sample = driver.sample(state)
        timeline.append(sample)
        if on_cycle is not None:
            on_cycle(sample)
        if state.finished and not state.in_flight_set:
            driver.sync_throttles(snapshot, None)  # restore: the daemon's last act before "completed"
            finished, ended = True, "completed"
            break
        elapsed = sim.now - driver.start
        if elapsed >= max_seconds:
            ended = f"not finished after {max_seconds:.0f} simulated seconds"
            break
        step = cycle_interval
        if not acted:
            upcoming = sim.next_event_time()
            if upcoming is None:
                ended = _why_ended(state)
                break
            cycles_ahead = max(1, math.ceil((upcoming - sim.now) / cycle_interval - 1e-9))
            step = cycles_ahead * cycle_interval
            cycles += cycles_ahead - 1
        sim.advance(min(step, max(0.0, max_seconds - elapsed) + cycle_interval))
        fresh = driver.touched | state.in_flight_set
        driver.touched = set()
        snapshot, changed = driver.snapshot(fresh)
    duration = sim.now - driver.start
    observed = sim.observed()
    return RehearsalResult(
        finished=finished,
        duration_seconds=duration,
        cycles=cycles,
        cycle_interval=cycle_interval,
        partitions=len(plan),
        steps=driver.steps,
        total_bytes=total,
        produce_bytes_per_sec=produce,
        bytes_in=driver.bytes_in,
        bytes_out=driver.bytes_out,
        peak_incoming={b["id"]: b["incoming_peak"] for b in observed["brokers"]},
        peak_outgoing={b["id"]: b["outgoing_peak"] for b in observed["brokers"]},
        under_min_isr=[
            e for e in observed["under_min_isr"] if TopicPartition(e["topic"], e["partition"]) in plan.targets
        ],
        never_converging=[] if finished else driver.stuck(),
        timeline=timeline,
        ended_because=ended,
        wall_seconds=time.perf_counter() - wall,
    )

"""The rehearsal driver: a plan run by the daemon's own plan-run machine on a SimCluster, in virtual time.

It runs exactly what the daemon runs (reassignd/engine/run/, one cycle per interval: the snapshot the
machine asks for, its decisions, the throttle configs, AlterPartitionReassignments, elections, auto-throttle
when configured); only the cluster is the simulator's model, answering at once, and persisting goes
nowhere. Cycles start every `cycle_interval` simulated seconds, the first one at time 0 (a submitted plan
wakes the daemon at once). A cycle that changed nothing is followed by cycles that change nothing until the
next simulator event (an ISR join), so the driver jumps to the first cycle boundary after that event: same
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
from collections.abc import Callable, Collection, Mapping, Sequence

from reassignd.engine import Limits, Status
from reassignd.engine.drive import cycle
from reassignd.engine.eta import never_finishes
from reassignd.engine.lifecycle import PlanStatus
from reassignd.engine.run import AutoThrottle, ReadRequest, RunState, Settings, new_run
from reassignd.engine.run.effects import Elect, MoveLogDirs, Persist, Reassign, WriteThrottles
from reassignd.engine.state import ExecutionState
from reassignd.engine.throttle import BROKER_KEYS, TOPIC_KEYS, ConfigWrite, calls_per_resource
from reassignd.model import (
    Broker,
    ClusterSnapshot,
    PartitionState,
    ReassignmentPlan,
    TopicInfo,
    TopicPartition,
)
from reassignd.rehearsal.result import Bottleneck, RehearsalResult, Sample, Stuck
from reassignd.sim import KafkaError, SimCluster
from reassignd.sim.entities import SimPartition
from reassignd.sim.model import ELECTION_PREFERRED
from reassignd.sim.scenario import scenario_from_snapshot, topic_id_text
from reassignd.sim.views import partition_state, replica_log_dirs

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


class SimModel:
    """The simulator's model as the machine's cluster (engine/drive.py), read as the daemon reads Kafka.

    Reads re-read only what can have changed since the last one (what was written, what is or was being
    reassigned; everything when a broker stopped or started) and keep the rest: only reassignments,
    elections and broker failures change a partition's replicas, ISR or leader here. Sizes change all the
    time (producers write): a read of every size (`with_sizes` True, every `size_refresh_cycles`) re-reads
    every partition, as DescribeLogDirs does on Kafka. Kept instead, a partition waiting since the start
    showed its size at the start at each full read: a produce rate of 0 from two of them, then, once it
    moved, all its growth since the start over one refresh interval (20 times its rate), so the live
    ETA ran low while it waited and high at the end (bench/bench_eta.py, docs/benchmarks.md).
    """

    def __init__(self, sim: SimCluster, plan: ReassignmentPlan) -> None:
        self.sim = sim
        self.parts: dict[TopicPartition, SimPartition] = {
            tp: sim.topics[tp.topic].partitions[tp.partition] for tp in plan.targets
        }
        self.topics = sorted({tp.topic for tp in plan.targets})
        self.cached: dict[TopicPartition, PartitionState] = {}
        self.touched: set[TopicPartition] = set()
        self.moving: set[TopicPartition] = set()
        self.online: frozenset[int] | None = None
        self.partitions: dict[TopicPartition, PartitionState] = {}
        self.dir_parts = sorted(plan.log_dirs)
        """Partitions the plan names log dirs for: their replicas' dirs are read (DescribeLogDirs)."""

    def read(self, request: ReadRequest) -> ClusterSnapshot:
        sim = self.sim
        online = frozenset(b.id for b in sim.brokers.values() if b.online)
        moving_now = {tp for tp, p in self.parts.items() if p.is_reassigning} if self.cached else set()
        if online != self.online or not self.cached or request.full:
            fresh: Collection[TopicPartition] = self.parts
            self.online = online
        else:
            fresh = self.touched | self.moving | moving_now
        self.touched = set()
        self.moving = moving_now
        for tp in fresh:
            self.partitions[tp] = partition_state(self.parts[tp], tp)
        self.cached = self.partitions
        topics = {
            name: TopicInfo(
                name,
                topic_id_text(sim.topics[name].topic_id),
                {k: v for k, v in sim.topics[name].configs.items() if k in TOPIC_KEYS},
            )
            for name in self.topics
        }
        replica_dirs: dict[tuple[TopicPartition, int], str] = {}
        future_dirs: dict[tuple[TopicPartition, int], str] = {}
        for tp in self.dir_parts:
            p = self.parts[tp]
            current, future = replica_log_dirs(sim, p, [b for b in p.replicas if b in online])
            replica_dirs.update(((tp, b), d) for b, d in current.items())
            future_dirs.update(((tp, b), d) for b, d in future.items())
        return ClusterSnapshot(
            brokers={b.id: Broker(b.id, b.rack, b.online) for b in sim.brokers.values()},
            partitions=dict(self.partitions),
            replica_dirs=replica_dirs,
            future_dirs=future_dirs,
            topics=topics,
            broker_configs={
                b.id: {k: v for k, v in b.configs.items() if k in BROKER_KEYS}
                for b in sim.brokers.values()
                if b.online  # a stopped broker's configs cannot be read
            },
            cluster_id=sim.cluster_id,
            controller_id=sim.controller_id,
        )

    def min_insync(self, topics: Collection[str]) -> Mapping[str, str]:
        return {t: str(self.sim.min_insync_replicas(t)) for t in topics}

    def write_throttles(self, effect: WriteThrottles) -> Mapping[tuple[str, str], str]:
        grouped: dict[tuple[str, str], list[ConfigWrite]] = {}
        for w in effect.writes:
            grouped.setdefault((w.resource, w.name), []).append(w)
        failed = {}
        for (kind, name), ops in sorted(grouped.items()):
            if kind == "broker" and not self.sim.brokers[int(name)].online:
                failed[(kind, name)] = f"broker {name} is offline"
                continue
            for call in calls_per_resource(ops):
                self.sim.incremental_alter_configs(
                    2 if kind == "topic" else 4, name, [(w.key, _OPS[w.op], w.value) for w in call], False
                )
        return failed

    def reassign(self, effect: Reassign) -> Mapping[TopicPartition, str | None]:
        results: dict[TopicPartition, str | None] = {}
        for tp, target in effect.targets.items():
            self.touched.add(tp)
            try:
                self.sim.alter_partition_reassignment(
                    tp.topic, tp.partition, None if target is None else list(target)
                )
                results[tp] = None
            except KafkaError as exc:
                results[tp] = str(exc)
        return results

    def move_log_dirs(self, effect: MoveLogDirs) -> Mapping[tuple[TopicPartition, int], str | None]:
        results: dict[tuple[TopicPartition, int], str | None] = {}
        for (tp, broker), path in effect.moves.items():
            try:
                self.sim.alter_replica_log_dir(broker, tp.topic, tp.partition, path)
                results[(tp, broker)] = None
            except KafkaError as exc:
                results[(tp, broker)] = str(exc)
        return results

    def elect(self, effect: Elect) -> Mapping[TopicPartition, str | None]:
        partitions = effect.partitions
        self.touched.update(partitions)
        raw = self.sim.elect_leaders(ELECTION_PREFERRED, [(tp.topic, tp.partition) for tp in partitions])
        return {TopicPartition(t, i): None if e is None else str(e) for (t, i), e in raw.items()}

    def stuck(self) -> list[Stuck]:
        """Copies of the plan that cannot catch up, each with the resource that holds it back."""
        found = []
        for row in self.sim.fetch_limits():
            tp = TopicPartition(row["topic"], row["partition"])
            if tp not in self.parts:
                continue
            produce = self.parts[tp].produce_bytes_per_sec
            if row["rate"] > produce:
                continue
            bound = None
            if row["resource"] is not None:
                bound = Bottleneck(
                    row["resource"], row["broker"], row["capacity"], row["reserved"], row["shared_by"]
                )
            found.append(Stuck(tp, row["follower"], row["leader"], row["rate"], produce, bound))
        return found


def _why_ended(state: ExecutionState) -> str:
    waits = state.offline_waits()
    if waits:
        brokers = sorted({b for down in waits.values() for b in down})
        return (
            f"waiting for stopped broker(s) {', '.join(map(str, brokers))}: {len(waits)} partition(s) "
            f"cannot finish until they are back or are re-targeted ({', '.join(map(str, sorted(waits)[:5]))}"
            f"{', ...' if len(waits) > 5 else ''})"
        )
    if state.in_flight_set:
        return "stuck: no move in flight can catch up (fetch rate <= produce rate), none can start"
    reasons = sorted({f"{rec.reason}" for _, rec in state.waiting() if rec.status is not Status.PENDING})
    return f"blocked: {state.counts[Status.BLOCKED]} partition(s) cannot start ({', '.join(reasons)})"


def _never_held(settings: Settings) -> float:
    """How long the live ETA must say the plan never finishes at the rates in force, with no step finishing
    meanwhile, for the rehearsal to stop on it: a stall window, as the daemon judges a stalled move (two
    with auto-throttle, which may raise the rates over one)."""
    windows = 1 if settings.auto_throttle is None else 2
    return windows * settings.limits.stall_window_seconds


def _in_force(settings: Settings, changes: Sequence[tuple[float, Limits]], elapsed: float) -> Settings:
    """The settings with the last of `changes` due by `elapsed` (the same object while none is)."""
    due = [limits for at, limits in changes if at <= elapsed]
    if not due or due[-1] is settings.limits:
        return settings
    return Settings(due[-1], settings.auto_throttle)


def rehearse(
    sim: SimCluster,
    plan: ReassignmentPlan,
    limits: Limits,
    *,
    cycle_interval: float = 5.0,
    max_seconds: float = DEFAULT_MAX_SECONDS,
    auto_throttle: AutoThrottle | None = None,
    on_cycle: Callable[[Sample], None] | None = None,
    on_run: Callable[[RunState, float], None] | None = None,
    every_cycle: bool = False,
    limit_changes: Sequence[tuple[float, Limits]] = (),
) -> RehearsalResult:
    """Run `plan` on `sim` as the daemon would, from the sim's current time until it ends or gets stuck.

    `cycle_interval` is the daemon's `controller.cycle.interval.seconds` in simulated seconds (times the
    time scale when comparing with a time-scaled simulator). Ends when the plan completes, when nothing
    can progress any more (moves that never converge), when the run's own ETA has said it never finishes
    at the rates in force for a stall window with no step finishing (`_never_held`), or after
    `max_seconds` of virtual time. `on_run`
    sees the machine's state after every cycle (with the seconds elapsed), e.g. to compare its ETA;
    `every_cycle` steps through idle cycles too, as the daemon does, instead of jumping to the next event.
    `limit_changes`: (seconds elapsed, limits in force from then on), as an operator's `reassignd limits`
    or `throttle` mid-plan (with them, every cycle is stepped through).
    """
    if not (math.isfinite(cycle_interval) and cycle_interval > 0):
        raise ValueError(f"cycle_interval must be a positive number of seconds, got {cycle_interval}")
    wall = time.perf_counter()
    start = sim.now
    model = SimModel(sim, plan)
    settings = Settings(limits, auto_throttle)
    run = new_run("rehearsal", plan, PlanStatus.RUNNING)
    produce = sum(p.produce_bytes_per_sec for p in model.parts.values())
    timeline: list[Sample] = []
    bytes_in: dict[int, int] = {}
    bytes_out: dict[int, int] = {}
    cycles = steps = 0
    ended = ""
    idle_since: float | None = None
    never_since: float | None = None
    while True:
        cycles += 1
        settings = _in_force(settings, limit_changes, sim.now - start)
        done = cycle(run, model, settings, sim.now)
        run = done.run
        finishing = False
        for effect in done.effects:
            if not isinstance(effect, Persist):
                continue
            for event in effect.events:
                if event.kind == "step.started" and "adding" in event.data:
                    steps += 1
                elif event.kind == "step.finished":
                    finishing = True
                    size = int(event.data["bytes"]) // max(1, len(event.data["adding"]))
                    for broker in event.data["adding"]:
                        bytes_in[broker] = bytes_in.get(broker, 0) + size
                    if event.data["adding"]:
                        leader = int(event.data["leader"])
                        bytes_out[leader] = bytes_out.get(leader, 0) + int(event.data["bytes"])
        assert run.execution is not None
        load = run.execution.load
        sample = Sample(
            sim.now - start, run.progress.tracking.remaining_bytes, dict(load.incoming), dict(load.outgoing)
        )
        timeline.append(sample)
        if on_cycle is not None:
            on_cycle(sample)
        if on_run is not None:
            on_run(run, sim.now - start)
        if run.ended:
            ended = "completed"
            break
        reason = run.progress.tracking.eta_reason
        if finishing or not never_finishes(reason):
            never_since = None
        elif never_since is None:
            never_since = sim.now
        if never_since is not None and sim.now - never_since >= _never_held(settings):
            ended = str(reason)
            break
        elapsed = sim.now - start
        if elapsed >= max_seconds:
            ended = f"not finished after {max_seconds:.0f} simulated seconds"
            break
        step = cycle_interval
        if done.acted:
            idle_since = None
        else:
            idle_since = sim.now if idle_since is None else idle_since
            upcoming = sim.next_event_time()
            # auto-throttle acts on stalls it sees over a window of cycles: step through them
            watching = auto_throttle is not None and bool(model.stuck())
            if upcoming is None and not (
                watching and sim.now - idle_since <= 2 * limits.stall_window_seconds
            ):
                ended = _why_ended(run.execution)
                break
            if upcoming is not None and not watching and not every_cycle and not limit_changes:
                cycles_ahead = max(1, math.ceil((upcoming - sim.now) / cycle_interval - 1e-9))
                step = cycles_ahead * cycle_interval
                cycles += cycles_ahead - 1
        sim.advance(min(step, max(0.0, max_seconds - elapsed) + cycle_interval))
    duration = sim.now - start
    observed = sim.observed()
    finished = run.status is PlanStatus.COMPLETED
    return RehearsalResult(
        finished=finished,
        duration_seconds=duration,
        cycles=cycles,
        cycle_interval=cycle_interval,
        partitions=len(plan),
        steps=steps,
        total_bytes=run.progress.tracking.total_bytes,
        produce_bytes_per_sec=produce,
        bytes_in=bytes_in,
        bytes_out=bytes_out,
        peak_incoming={b["id"]: b["incoming_peak"] for b in observed["brokers"]},
        peak_outgoing={b["id"]: b["outgoing_peak"] for b in observed["brokers"]},
        under_min_isr=[
            e for e in observed["under_min_isr"] if TopicPartition(e["topic"], e["partition"]) in plan.targets
        ],
        never_converging=[] if finished else model.stuck(),
        timeline=timeline,
        ended_because=ended,
        wall_seconds=time.perf_counter() - wall,
        max_incoming_per_broker=limits.max_incoming_per_broker,
        max_outgoing_per_broker=limits.max_outgoing_per_broker,
    )

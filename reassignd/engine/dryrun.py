"""The dry run: the plan-run machine against a pure, instant stand-in for Kafka (tests, `schedule`, submit).

The stand-in follows KRaft's PartitionReassignmentReplicas (apache/kafka metadata/.../controller): while a
move runs the replica list is the target followed by the removing replicas, adding = target - current,
removing = current - target; on completion replicas = target, the removing replicas leave the ISR and a
leader outside the target is replaced by the first target replica in the ISR. A cancel (KIP-455) keeps the
replicas without the adding ones (PartitionReassignmentRevert). Every added replica joins the ISR at once
when `complete` is called, at the end of each cycle: that is what "when joins happen" means in the tests.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace

from reassignd.engine.actions import ElectLeader, StartStep
from reassignd.engine.drive import cycle
from reassignd.engine.lifecycle import PlanStatus
from reassignd.engine.limits import Limits
from reassignd.engine.run import ReadRequest, Settings, new_run
from reassignd.engine.run.effects import Elect, MoveLogDirs, Persist, Reassign, WriteThrottles
from reassignd.engine.state import ExecutionState
from reassignd.engine.steps import all_steps
from reassignd.engine.throttle import apply_writes
from reassignd.model import ClusterSnapshot, PartitionState, ReassignmentPlan, TopicPartition


def apply_starts(snapshot: ClusterSnapshot, starts: Iterable[StartStep]) -> ClusterSnapshot:
    return _reassign(snapshot, {s.tp: s.target for s in starts})


def _reassign(
    snapshot: ClusterSnapshot, targets: Mapping[TopicPartition, tuple[int, ...] | None]
) -> ClusterSnapshot:
    updated: list[PartitionState] = []
    for tp, target in targets.items():
        p = snapshot.partitions[tp]
        if target is None:  # cancel: back to the original replicas, the added ones leave
            added = set(p.adding)
            updated.append(
                replace(
                    p,
                    replicas=p.original_replicas,
                    isr=tuple(b for b in p.isr if b not in added),
                    adding=(),
                    removing=(),
                )
            )
            continue
        current = set(p.replicas)  # KRaft starts a new target from the current list, adding included
        removing = tuple(sorted(current - set(target)))
        adding = tuple(sorted(set(target) - current))
        if not adding and not removing:
            updated.append(replace(p, replicas=target, adding=(), removing=()))
            continue
        updated.append(replace(p, replicas=target + removing, adding=adding, removing=removing))
    return snapshot.with_partitions(updated)


def complete(snapshot: ClusterSnapshot, tps: Collection[TopicPartition] | None = None) -> ClusterSnapshot:
    """Every added replica catches up and joins the ISR; the moves of `tps` (default: all) finish."""
    updated: list[PartitionState] = []
    for tp, p in snapshot.partitions.items():
        if not p.is_reassigning or (tps is not None and tp not in tps):
            continue
        target = p.target_replicas
        isr = tuple(b for b in target if b in set(p.isr) | set(p.adding))
        leader = p.leader if p.leader in target else next(iter(isr), target[0])
        sizes = dict(p.replica_sizes)
        for broker in p.adding:
            sizes[broker] = p.size_bytes
        for broker in p.removing:
            sizes.pop(broker, None)
        updated.append(
            replace(p, replicas=target, isr=isr, leader=leader, adding=(), removing=(), replica_sizes=sizes)
        )
    return snapshot.with_partitions(updated)


def elect(snapshot: ClusterSnapshot, elections: Iterable[ElectLeader]) -> ClusterSnapshot:
    return _elect(snapshot, [e.tp for e in elections])


def _elect(snapshot: ClusterSnapshot, partitions: Iterable[TopicPartition]) -> ClusterSnapshot:
    updated = []
    for tp in partitions:
        p = snapshot.partitions[tp]
        preferred = p.replicas[0]
        if preferred in p.isr and p.leader != preferred:
            updated.append(replace(p, leader=preferred))
    return snapshot.with_partitions(updated)


@dataclass
class InstantCluster:
    """The instant stand-in as a model for the machine (drive.py): writes apply at once."""

    snapshot: ClusterSnapshot

    def read(self, request: ReadRequest) -> ClusterSnapshot:
        return self.snapshot

    def min_insync(self, topics: Collection[str]) -> Mapping[str, str]:
        return {t: str(self.snapshot.min_insync_replicas(t)) for t in topics}

    def write_throttles(self, effect: WriteThrottles) -> Mapping[tuple[str, str], str]:
        self.snapshot = apply_writes(self.snapshot, effect.writes)
        return {}

    def reassign(self, effect: Reassign) -> Mapping[TopicPartition, str | None]:
        self.snapshot = _reassign(self.snapshot, effect.targets)
        return dict.fromkeys(effect.targets)

    def elect(self, effect: Elect) -> Mapping[TopicPartition, str | None]:
        self.snapshot = _elect(self.snapshot, effect.partitions)
        return dict.fromkeys(effect.partitions)

    def move_log_dirs(self, effect: MoveLogDirs) -> Mapping[tuple[TopicPartition, int], str | None]:
        """A move between log dirs completes at once (the next read finds the replica in its dir)."""
        self.snapshot = replace(self.snapshot, replica_dirs={**self.snapshot.replica_dirs, **effect.moves})
        return dict.fromkeys(effect.moves)

    def complete(self, tps: Collection[TopicPartition]) -> None:
        self.snapshot = complete(self.snapshot, tps)


@dataclass
class DryRun:
    """The replica lists each partition passed through: (replicas, moves leadership, cycle started)."""

    steps: dict[TopicPartition, list[tuple[tuple[int, ...], bool, int]]] = field(default_factory=dict)
    cycles: int = 0
    final: ClusterSnapshot | None = None
    state: ExecutionState | None = None


def dry_run(
    snapshot: ClusterSnapshot, plan: ReassignmentPlan, limits: Limits, max_cycles: int = 100_000
) -> DryRun:
    """Run the machine against the instant stand-in until the plan is done or nothing more can start."""
    parts = {tp: snapshot.partitions[tp] for tp in plan.targets if tp in snapshot.partitions}
    model = InstantCluster(replace(snapshot, partitions=parts))
    result = DryRun(steps={tp: [(p.replicas, False, -1)] for tp, p in parts.items()})
    run = new_run("dry-run", plan, PlanStatus.RUNNING)
    settings = Settings(limits)
    for index in range(max_cycles):
        done = cycle(run, model, settings, float(index))
        run = done.run
        result.cycles = index + 1
        for effect in done.effects:
            if isinstance(effect, Persist):
                for event in effect.events:
                    if event.kind == "step.started" and event.tp is not None and "adding" in event.data:
                        target = tuple(event.data["target"])
                        result.steps[event.tp].append((target, bool(event.data["moves_leadership"]), index))
        in_flight = run.execution.in_flight_set if run.execution is not None else frozenset()
        if run.ended or (not done.acted and not in_flight):
            break
        model.complete(in_flight)
    result.final = model.snapshot
    result.state = run.execution
    return result


EXACT_PREVIEW_PARTITIONS = 10_000
"""Up to this many partitions the step preview is a dry run of the real schedule (its cost grows with the
square of the plan: about a second at 10,000 partitions, minutes at 100,000); above, each partition's own
KIP-435 sequence."""


def step_preview(snapshot: ClusterSnapshot, plan: ReassignmentPlan, limits: Limits) -> dict[str, object]:
    """The steps a plan takes, for the submit answer: exact from a dry run of the real engine for plans up
    to EXACT_PREVIEW_PARTITIONS, else each partition's KIP-435 steps (`exact: false`: the scheduler may add a
    leadership hand-over to a partition, which only the dry run counts)."""
    if len(plan) <= EXACT_PREVIEW_PARTITIONS:
        result = dry_run(snapshot, plan, limits)
        per_partition = [len(steps) - 1 for steps in result.steps.values()]
        return {
            "total": sum(per_partition),
            "max_per_partition": max(per_partition, default=0),
            "exact": True,
        }
    replica_count = limits.step_size
    per_partition = [
        len(
            all_steps(
                tuple(snapshot.partitions[tp].replicas),
                target,
                replica_count,
                snapshot.min_insync_replicas(tp.topic),
            )
        )
        - 1
        for tp, target in plan.targets.items()
    ]
    return {"total": sum(per_partition), "max_per_partition": max(per_partition, default=0), "exact": False}

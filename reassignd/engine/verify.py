"""How far a plan is applied on the cluster, per partition: `reassignd verify` (Kafka's `--verify`).

Pure: the caller reads the plan's partitions (metadata with their ongoing reassignments) and, for replicas
the plan places in a named log dir, where those logs are; this module only compares. Kafka's tool says
"completed", "still in progress" or "no active reassignment, but replica set is X rather than Y"; reassignd
tells the last case apart when it knows the pre-plan assignment (the rollback file `submit` saved):

- applied: no reassignment in flight, the replica list equals the target (order included, as Kafka compares
  lists) and every replica given a log dir is in it (one on the right broker in another dir: not applied);
- in_progress: a reassignment in flight toward the target (it adds only target replicas and removes only
  replicas outside it: a KIP-435 step of reassignd's is one), or, between two steps, a list made only of
  pre-plan and target replicas;
- not_applied: untouched, on its pre-plan list (without a pre-plan: anything else not in flight, as Kafka
  reports it);
- diverged: something else: a reassignment toward other brokers, a list with replicas of neither the
  pre-plan nor the target, or a partition that no longer exists.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reassignd.model import ANY_LOG_DIR, PartitionState, ReassignmentPlan, TopicPartition


class Verdict(enum.StrEnum):
    APPLIED = "applied"
    IN_PROGRESS = "in_progress"
    NOT_APPLIED = "not_applied"
    DIVERGED = "diverged"

    @property
    def label(self) -> str:
        return self.value.replace("_", " ")


@dataclass(frozen=True, slots=True)
class PartitionVerdict:
    tp: TopicPartition
    verdict: Verdict
    target: tuple[int, ...]
    replicas: tuple[int, ...] | None  # None: the partition does not exist
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()
    pre_plan: tuple[int, ...] | None = None
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.tp.topic,
            "partition": self.tp.partition,
            "state": self.verdict.value,
            "replicas": None if self.replicas is None else list(self.replicas),
            "target": list(self.target),
            "adding": list(self.adding),
            "removing": list(self.removing),
            "pre_plan": None if self.pre_plan is None else list(self.pre_plan),
            "detail": self.detail,
        }


def verify_plan(
    plan: ReassignmentPlan,
    partitions: Mapping[TopicPartition, PartitionState],
    *,
    pre_plan: Mapping[TopicPartition, Sequence[int]] | None = None,
    log_dirs: Mapping[tuple[TopicPartition, int], str] | None = None,
) -> list[PartitionVerdict]:
    """One verdict per partition of `plan`, sorted. `log_dirs`: the dir each replica's current log is in,
    for the replicas the plan names a dir for (a replica missing there is not known to be in place)."""
    return [
        _verdict(
            tp,
            plan.targets[tp],
            partitions.get(tp),
            None if pre_plan is None or tp not in pre_plan else tuple(pre_plan[tp]),
            _named_dirs(plan, tp),
            log_dirs or {},
        )
        for tp in sorted(plan.targets)
    ]


def counts(verdicts: Sequence[PartitionVerdict]) -> dict[str, int]:
    seen = Counter(v.verdict for v in verdicts)
    return {v.value: seen[v] for v in Verdict}


def _named_dirs(plan: ReassignmentPlan, tp: TopicPartition) -> dict[int, str]:
    dirs = plan.log_dirs.get(tp)
    if not dirs:
        return {}
    return {b: d for b, d in zip(plan.targets[tp], dirs, strict=True) if d != ANY_LOG_DIR}


def _verdict(  # noqa: PLR0917 (one partition's facts, each from a different read)
    tp: TopicPartition,
    target: tuple[int, ...],
    state: PartitionState | None,
    pre_plan: tuple[int, ...] | None,
    named_dirs: Mapping[int, str],
    log_dirs: Mapping[tuple[TopicPartition, int], str],
) -> PartitionVerdict:
    if state is None:
        return PartitionVerdict(
            tp, Verdict.DIVERGED, target, None, pre_plan=pre_plan, detail="no such partition: topic deleted?"
        )

    def verdict(kind: Verdict, detail: str = "") -> PartitionVerdict:
        return PartitionVerdict(
            tp, kind, target, state.replicas, state.adding, state.removing, pre_plan, detail
        )

    wanted = set(target)
    if state.is_reassigning:
        if set(state.adding) <= wanted and not set(state.removing) & wanted:
            return verdict(Verdict.IN_PROGRESS, "reassignment in flight toward the target")
        return verdict(Verdict.DIVERGED, "reassignment in flight toward other brokers")
    replicas = state.replicas
    if replicas == target:
        misplaced = [
            f"replica {b}: {log_dirs.get((tp, b), 'unknown')}, not {d}"
            for b, d in sorted(named_dirs.items())
            if log_dirs.get((tp, b)) != d
        ]
        if misplaced:  # on the right brokers; a dir move not started or not finished
            return verdict(Verdict.NOT_APPLIED, "log dir of " + "; ".join(misplaced))
        return verdict(Verdict.APPLIED)
    if pre_plan is None:
        return verdict(Verdict.NOT_APPLIED, "not on the target, nothing in flight")
    if replicas == pre_plan:
        return verdict(Verdict.NOT_APPLIED, "untouched: on its pre-plan list")
    if set(replicas) <= wanted | set(pre_plan):
        return verdict(Verdict.IN_PROGRESS, "between two steps")
    return verdict(Verdict.DIVERGED, "brokers of neither the pre-plan nor the target")

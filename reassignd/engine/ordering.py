"""Static priority ranks for a plan's partitions, from the `reassignment.ordering` chain of sort keys.

Ranks are computed once per plan (and again only if the chain changes), so each decision walks ready
queues in rank order instead of sorting the whole plan. Two keys are dynamic and handled by queues, not
ranks: `under_min_isr` (an urgent queue scanned first) and `leader_moves` (KIP-435's batch collection:
steps that move leadership fill their limit first). `round_robin` interleaves destination brokers, like
Cruise Control's ExecutionTaskPlanner, so one busy broker cannot hold the head of the queue.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from reassignd.model import ClusterSnapshot, ReassignmentPlan, TopicPartition

DYNAMIC_KEYS = frozenset({"under_min_isr", "leader_moves"})


def destination_broker(current: Sequence[int], final: Sequence[int]) -> int:
    """The broker whose incoming slot the partition's first move takes (-1 when nothing is added)."""
    held = set(current)
    return next((b for b in final if b not in held), -1)


def _key_values(
    name: str, plan: ReassignmentPlan, snapshot: ClusterSnapshot, tps: Sequence[TopicPartition]
) -> list[tuple[int | str, ...]]:
    partitions = snapshot.partitions
    if name == "plan_order":
        return [(tp.topic, tp.partition) for tp in tps]
    if name in ("larger_first", "smaller_first"):
        sign = -1 if name == "larger_first" else 1
        return [(sign * (p.size_bytes if (p := partitions.get(tp)) else 0),) for tp in tps]
    if name == "fewer_moves_first":
        values: list[tuple[int | str, ...]] = []
        for tp in tps:
            p = partitions.get(tp)
            held = set(p.replicas) if p else set()
            values.append((sum(1 for b in plan.targets[tp] if b not in held),))
        return values
    raise ValueError(f"unknown sort key {name!r}")


def compute_ranks(
    plan: ReassignmentPlan, snapshot: ClusterSnapshot, ordering: Sequence[str]
) -> tuple[TopicPartition, ...]:
    """The plan's partitions, best first; a partition's rank is its index in the result."""
    chain = [name for name in ordering if name not in DYNAMIC_KEYS]
    if "plan_order" not in chain:
        chain.append("plan_order")  # a total order: ranks must not depend on dict order
    tps = list(plan.targets)
    split = chain.index("round_robin") if "round_robin" in chain else len(chain)
    before_names, after_names = chain[:split], chain[split + 1 :]

    def composite(names: Sequence[str]) -> list[tuple[object, ...]]:
        columns = [_key_values(name, plan, snapshot, tps) for name in names]
        return [tuple(part for column in columns for part in column[i]) for i in range(len(tps))]

    before = composite(before_names)
    after = composite(after_names)
    if split == len(chain):
        order = sorted(range(len(tps)), key=lambda i: (before[i], after[i]))
        return tuple(tps[i] for i in order)
    partitions = snapshot.partitions
    dest = []
    for tp in tps:
        p = partitions.get(tp)
        dest.append(destination_broker(p.replicas if p else (), plan.targets[tp]))
    order = sorted(range(len(tps)), key=lambda i: (before[i], after[i]))
    turn = [0] * len(tps)
    seen: dict[tuple[object, int], int] = defaultdict(int)
    for i in order:
        group = (before[i], dest[i])
        turn[i] = seen[group]
        seen[group] += 1
    order.sort(key=lambda i: (before[i], turn[i], dest[i], after[i]))
    return tuple(tps[i] for i in order)

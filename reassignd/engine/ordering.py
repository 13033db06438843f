"""Static priority ranks for a plan's partitions, from the `reassignment.ordering` chain of sort keys.

Ranks are computed once per plan (and again only if the chain changes), so each decision walks ready
queues in rank order instead of sorting the whole plan. Two keys are dynamic and handled by queues, not
ranks: `under_min_isr` (an urgent queue scanned first) and `leader_moves` (KIP-435's batch collection:
steps that move leadership fill their limit first). `round_robin` interleaves destination brokers, like
Cruise Control's ExecutionTaskPlanner, so one busy broker cannot hold the head of the queue.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence

from reassignd.model import ClusterSnapshot, ReassignmentPlan, TopicPartition

DYNAMIC_KEYS = frozenset({"under_min_isr", "leader_moves"})

SortKey = Callable[[TopicPartition], tuple[int | str, ...]]


def destination_broker(current: Sequence[int], final: Sequence[int]) -> int:
    """The broker whose incoming slot the partition's first move takes (-1 when nothing is added)."""
    held = set(current)
    return next((b for b in final if b not in held), -1)


def _static_keys(plan: ReassignmentPlan, snapshot: ClusterSnapshot) -> Mapping[str, SortKey]:
    def size(tp: TopicPartition) -> int:
        state = snapshot.partitions.get(tp)
        return state.size_bytes if state else 0

    def moves(tp: TopicPartition) -> int:
        state = snapshot.partitions.get(tp)
        held = set(state.replicas) if state else set()
        return sum(1 for b in plan.targets[tp] if b not in held)

    return {
        "larger_first": lambda tp: (-size(tp),),
        "smaller_first": lambda tp: (size(tp),),
        "fewer_moves_first": lambda tp: (moves(tp),),
        "plan_order": lambda tp: (tp.topic, tp.partition),
    }


def compute_ranks(
    plan: ReassignmentPlan, snapshot: ClusterSnapshot, ordering: Sequence[str]
) -> tuple[TopicPartition, ...]:
    """The plan's partitions, best first; a partition's rank is its index in the result."""
    keys = _static_keys(plan, snapshot)
    chain = [name for name in ordering if name not in DYNAMIC_KEYS]
    if "plan_order" not in chain:
        chain.append("plan_order")  # a total order: ranks must not depend on dict order
    ordered = sorted(plan.targets)
    if "round_robin" not in chain:
        return tuple(sorted(ordered, key=lambda tp: _composite(tp, chain, keys)))
    split = chain.index("round_robin")
    before, after = chain[:split], chain[split + 1 :]
    ordered.sort(key=lambda tp: (_composite(tp, before, keys), _composite(tp, after, keys)))
    turn: dict[int, int] = {}
    seen: dict[tuple[object, int], int] = defaultdict(int)
    for tp in ordered:
        state = snapshot.partitions.get(tp)
        broker = destination_broker(state.replicas if state else (), plan.targets[tp])
        group = (_composite(tp, before, keys), broker)
        turn[id(tp)] = seen[group]
        seen[group] += 1

    def round_robin_key(tp: TopicPartition) -> tuple[object, ...]:
        state = snapshot.partitions.get(tp)
        broker = destination_broker(state.replicas if state else (), plan.targets[tp])
        return (_composite(tp, before, keys), turn[id(tp)], broker, _composite(tp, after, keys))

    return tuple(sorted(ordered, key=round_robin_key))


def _composite(tp: TopicPartition, chain: Sequence[str], keys: Mapping[str, SortKey]) -> tuple[object, ...]:
    return tuple(part for name in chain for part in keys[name](tp))

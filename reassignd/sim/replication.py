"""Fetch-rate allocation for replicas that are catching up.

Each catching-up replica is one flow from its leader's broker to its own broker. A flow is limited by every
shared resource it crosses: the leader broker's spare network out, the follower broker's spare network in,
and, when the replica is throttled (KIP-73), the follower broker's follower.replication.throttled.rate and
the leader broker's leader.replication.throttled.rate. Each resource is shared among its flows max-min
fairly (progressive filling): equal shares, and what a flow cannot use because it is held back elsewhere goes
to the others. Kafka's quota (ReplicationQuotaManager) bounds the total rate of a broker's throttled
partitions without prescribing the split between them; fair sharing is the steady state of fetchers that
each include partitions while the quota is not exceeded.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence


def max_min_fair(flows: Sequence[Sequence[int]], capacity: Mapping[int, float]) -> list[float]:
    """Max-min fair rates for `flows` (each the ids of the resources it uses) under `capacity` per resource.

    Progressive filling with a heap of resources keyed by their fair share: the resource with the smallest
    share is a bottleneck, its unfrozen flows get that share, and the other resources those flows use lose
    it. A resource's share never shrinks while flows freeze, so heap keys are lower bounds, refreshed
    lazily. Cost O((F * k + R) log R) for F flows of k resources over R resources; a flow using none gets 0.
    """
    members: dict[int, list[int]] = {}
    for i, keys in enumerate(flows):
        for key in keys:
            group = members.get(key)
            if group is None:
                members[key] = [i]
            else:
                group.append(i)
    remaining = {key: max(0.0, float(capacity[key])) for key in members}
    count = {key: len(group) for key, group in members.items()}
    heap = [(remaining[key] / n, key) for key, n in count.items()]
    heapq.heapify(heap)
    rates = [-1.0] * len(flows)
    push, pop = heapq.heappush, heapq.heappop
    while heap:
        share, key = pop(heap)
        n = count[key]
        if n == 0:
            continue
        current = remaining[key] / n
        if current > share:
            push(heap, (current, key))  # shares only grow as flows freeze: re-queue at its real value
            continue
        for i in members[key]:
            if rates[i] >= 0.0:
                continue
            rates[i] = current
            for other in flows[i]:
                left = remaining[other] - current
                remaining[other] = left if left > 0.0 else 0.0
                count[other] -= 1
    return [r if r >= 0.0 else 0.0 for r in rates]

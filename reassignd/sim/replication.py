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
from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def max_min_fair(flows: Sequence[Sequence[K]], capacity: Mapping[K, float]) -> list[float]:
    """Max-min fair rates for `flows` (each the resources it uses) under `capacity` per resource.

    Cost O((F * k + R) log R) for F flows of k resources over R resources. A flow using no resource gets 0.
    """
    index: dict[K, int] = {}
    members: list[list[int]] = []
    flow_keys: list[list[int]] = []
    for i, keys in enumerate(flows):
        ids = []
        for key in keys:
            kid = index.get(key)
            if kid is None:
                kid = index[key] = len(members)
                members.append([])
            members[kid].append(i)
            ids.append(kid)
        flow_keys.append(ids)
    remaining = [0.0] * len(members)
    for key, kid in index.items():
        remaining[kid] = max(0.0, float(capacity[key]))
    count = [len(m) for m in members]
    version = [0] * len(members)
    heap = [(remaining[k] / count[k], 0, k) for k in range(len(members))]
    heapq.heapify(heap)
    rates: list[float | None] = [None] * len(flows)
    while heap:
        share, ver, kid = heapq.heappop(heap)
        if ver != version[kid] or count[kid] == 0:
            continue
        for i in members[kid]:
            if rates[i] is not None:
                continue
            rates[i] = share
            for other in flow_keys[i]:
                remaining[other] = max(0.0, remaining[other] - share)
                count[other] -= 1
                version[other] += 1
                if other != kid and count[other] > 0:
                    heapq.heappush(heap, (remaining[other] / count[other], version[other], other))
    return [r if r is not None else 0.0 for r in rates]

"""Preferred-leader balance: reorder replica lists (no data moves) until every eligible broker leads
between floor and ceil of the average (the band at threshold 0), or no reordering can get closer.

Two steps. First one hop, as KIP-166 describes it: a partition led by a broker above the band gets a
follower on a broker below it as its new preferred leader. That leaves brokers whose partitions' followers
all sit on brokers at the average; for those, leadership moves along a chain: A -> B -> C, each hop a
partition led by one broker with a follower on the next, so A loses one, C gains one and B is unchanged.
Chains are shortest augmenting paths (breadth-first search over a broker x broker matrix counting the
partitions led by one with a follower on the other), so when any sequence of reorderings can bring a
broker into the band, one is found.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection
from itertools import pairwise

import numpy as np

from reassignd.placement.assignment import Assignment, tiebreak
from reassignd.placement.balance import Band, balance_quotas

MAX_CHAINS_PER_BROKER = 64


def _loads(state: Assignment, members: Collection[int]) -> dict[int, int]:
    return {b: round(state.lead[b]) for b in members}


def balance_leaders(
    state: Assignment, members: Collection[int], threshold: float, *, seed: int, max_rounds: int
) -> int:
    """Returns the number of preferred-leader changes made."""
    if len(members) < 2:
        return 0
    changes = _one_hop(state, frozenset(members), threshold, seed, max_rounds)
    changes += _chains(state, sorted(members), threshold)
    return changes


def _one_hop(state: Assignment, members: frozenset[int], threshold: float, seed: int, rounds: int) -> int:
    order = np.argsort(tiebreak(len(state.size), seed + 1), kind="stable")
    eligible = state.movable & (state.rf > 1)
    changes = 0
    for _ in range(rounds):
        q = balance_quotas(_loads(state, members), threshold)
        give = {b: g for b, g in q.give.items() if g > 0}
        take = {b: t for b, t in q.take.items() if t > 0}
        if not give or not take:
            break
        leaders = state.rep[order, 0]
        candidates = order[eligible[order] & np.isin(leaders, list(give))]
        made = 0
        for p in candidates.tolist():
            source = int(state.rep[p, 0])
            if give.get(source, 0) <= 0:
                continue
            current = state.replicas(p)
            options = [
                (take[r], -slot, slot, r)
                for slot, r in enumerate(current[1:], start=1)
                if take.get(r, 0) > 0 and state.leads_fit(p, r)
            ]
            if not options:
                continue
            _, _, slot, target = max(options)
            state.make_leader(p, slot)
            give[source] -= 1
            take[target] -= 1
            made += 1
            if not any(v > 0 for v in take.values()):
                break
        changes += made
        if not made:
            break
    return changes


def _chains(state: Assignment, members: list[int], threshold: float) -> int:
    start = [round(state.lead[b]) for b in members]
    first = Band.around(sum(start), len(start), threshold)
    if all(first.contains(v) for v in start):
        return 0  # the one-hop step was enough: no graph to build
    index = {b: i for i, b in enumerate(members)}
    n = len(members)
    eligible = np.flatnonzero(state.movable & (state.rf > 1))
    led_by: list[list[int]] = [[] for _ in range(n)]
    edges = np.zeros((n, n), dtype=np.int64)
    for p in eligible.tolist():
        u = index.get(int(state.rep[p, 0]))
        if u is None:
            continue
        led_by[u].append(p)
        for b in state.rep[p, 1 : state.rf[p]].tolist():
            v = index.get(int(b))
            if v is not None:
                edges[u, v] += 1
    changes = 0
    budget = MAX_CHAINS_PER_BROKER * n
    while budget > 0:
        loads = np.array([round(state.lead[b]) for b in members], dtype=np.int64)
        band = Band.around(int(loads.sum()), n, threshold)
        over, under = loads > band.upper, loads < band.lower
        if over.any():
            sources, targets = over, loads + 1 <= band.upper
        elif under.any():
            sources, targets = loads - 1 >= band.lower, under
        else:
            break
        path = _shortest_path(edges, sources, targets)
        if path is None:
            break
        budget -= 1
        if not _apply_path(state, members=members, index=index, path=path, led_by=led_by, edges=edges):
            continue  # an edge turned out unusable (network-out limit): it is zeroed, search again
        changes += len(path) - 1
    return changes


def _shortest_path(edges: np.ndarray, sources: np.ndarray, targets: np.ndarray) -> list[int] | None:
    n = len(sources)
    parent = np.full(n, -1, dtype=np.int64)
    seen = sources.copy()
    queue = deque(np.flatnonzero(sources).tolist())
    while queue:
        u = queue.popleft()
        for v in np.flatnonzero((edges[u] > 0) & ~seen).tolist():
            seen[v] = True
            parent[v] = u
            if targets[v]:
                path = [v]
                while parent[path[-1]] >= 0:
                    path.append(int(parent[path[-1]]))
                return path[::-1]
            queue.append(v)
    return None


def _apply_path(
    state: Assignment,
    *,
    members: list[int],
    index: dict[int, int],
    path: list[int],
    led_by: list[list[int]],
    edges: np.ndarray,
) -> bool:
    hops: list[tuple[int, int]] = []
    for u, v in pairwise(path):
        leader, target = members[u], members[v]
        led = np.array(led_by[u], dtype=np.int64)
        rows = state.rep[led]
        hit = led[(rows[:, 0] == leader) & (rows[:, 1:] == target).any(axis=1)]
        used = {q for q, _ in hops}
        found = next((p for p in hit.tolist() if p not in used and state.leads_fit(p, target)), None)
        if found is None:
            edges[u, v] = 0
            return False
        hops.append((found, target))
    for p, target in hops:
        old = state.replicas(p)
        u = index[old[0]]
        for b in old[1:]:
            if b in index:
                edges[u, index[b]] -= 1
        state.make_leader(p, old.index(target))
        new = state.replicas(p)
        v = index[new[0]]
        for b in new[1:]:
            if b in index:
                edges[v, index[b]] += 1
        led_by[v].append(p)
    return True

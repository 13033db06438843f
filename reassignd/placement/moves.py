"""Pairing givers with receivers under quotas: the one matcher behind every replica-moving goal.

Each giver's movable replicas sit in a pool sorted by an *order* key (bytes for the balance goals, produce
rate for network) and carry a *weight* (what the quotas count: 1 per replica, or bytes, or bytes/s).
Givers take turns, one move each; a giver tries receivers round-robin, those of its own top-level domain
first (with partitions spread over data centres a replica can rarely leave its own), and for a receiver
takes the unused replica whose order key is nearest the size the pair wants: the smallest one (least
bytes moved) unless a goal asks for a size. A move must be valid by the placement rules (rack spread never
worse), fit the receiver's hard capacity limits, and pass the goal's own check. A giver that finds no move
in its turn is done for the pass; every move uses up one pool entry, so a pass ends after at most one try
per replica, whatever the unit.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from itertools import islice

import numpy as np
import numpy.typing as npt

from reassignd.placement.assignment import Assignment, tiebreak
from reassignd.placement.rules import is_valid_move
from reassignd.placement.topology import Node, Topology, leaf_of

MAX_RECEIVERS = 24  # receivers a giver tries in one turn
MAX_CANDIDATES = 48  # replicas tried for one receiver

# (giver, receiver, partition, weight) -> may this move be made
Allow = Callable[[int, int, int, float], bool]
# (giver, receiver) -> the order key the pair wants (0: the smallest)
Desired = Callable[[int, int], float]


def _find(parent: list[int], i: int) -> int:
    root = i
    while parent[root] != root:
        root = parent[root]
    while parent[i] != root:
        parent[i], i = root, parent[i]
    return root


class Pool:
    """One giver's movable replicas sorted by order key; finds the unused ones nearest a key in O(log n)."""

    def __init__(self, parts: list[int], slots: list[int], keys: list[float], weights: list[float]) -> None:
        self.parts, self.slots, self.keys, self.weights = parts, slots, keys, weights
        n = len(parts)
        self._next = list(range(n + 1))  # next unused index >= i (n: none)
        self._prev = list(range(n + 1))  # shifted by one: prev unused index <= i is _find(_prev, i + 1) - 1

    def __len__(self) -> int:
        return len(self.parts)

    def use(self, i: int) -> None:
        self._next[i] = i + 1
        self._prev[i + 1] = i

    def around(self, key: float) -> Iterator[int]:
        """Unused entries by distance of their key from `key`."""
        n = len(self.parts)
        position = bisect_left(self.keys, key)
        high = _find(self._next, position)
        low = _find(self._prev, position) - 1
        keys = self.keys
        while low >= 0 or high < n:
            if high < n and (low < 0 or keys[high] - key <= key - keys[low]):
                yield high
                high = _find(self._next, high + 1)
            else:
                yield low
                low = _find(self._prev, low) - 1


@dataclass
class Matching:
    """What a goal hands the matcher."""

    give: dict[int, float]  # what each giver still gives; the matcher counts it down in place
    take: dict[int, float]
    weight: str = "count"  # count | bytes | network_in | leader_out
    desired: Desired | None = None
    allow: Allow | None = None


class Matcher:
    def __init__(self, state: Assignment, topology: Topology, receivers: frozenset[int], seed: int) -> None:
        self.state = state
        self.topology = topology
        self.receivers = receivers
        # every known broker's top-level domain, drained and offline ones included (they give)
        self.domain: dict[int, Node] = {b: leaf_of(b, r)[:1] for b, r in state.data.racks.items()}
        self.tiebreak = tiebreak(len(state.size), seed)

    def pools(self, givers: Mapping[int, float], weight: str) -> dict[int, Pool]:
        s = self.state
        ids = s.rep
        present = np.isin(ids, np.fromiter(givers, dtype=np.int64, count=len(givers))) & s.movable[:, None]
        if weight == "leader_out":
            present[:, 1:] = False
        found = np.nonzero(present)
        parts: npt.NDArray[np.int64] = found[0].astype(np.int64)
        slots: npt.NDArray[np.int64] = found[1].astype(np.int64)
        brokers: npt.NDArray[np.int64] = ids[parts, slots]
        if weight == "count":
            keys = s.size[parts].astype(np.float64)
            weights = np.ones(len(parts), dtype=np.float64)
        elif weight == "bytes":
            keys = weights = s.size[parts].astype(np.float64)
        elif weight == "network_in":
            keys = weights = s.produce[parts].astype(np.float64)
        else:
            keys = weights = (s.produce[parts] * np.maximum(s.rf[parts] - 1, 0)).astype(np.float64)
        if weight != "count":
            useful = weights > 0
            parts, slots, brokers = parts[useful], slots[useful], brokers[useful]
            keys, weights = keys[useful], weights[useful]
        order = np.lexsort((self.tiebreak[parts], keys, brokers))
        parts, slots, brokers = parts[order], slots[order], brokers[order]
        keys, weights = keys[order], weights[order]
        bounds = np.flatnonzero(np.diff(brokers)) + 1
        out: dict[int, Pool] = {}
        for start, end in zip(
            np.concatenate(([0], bounds)).tolist(),
            np.concatenate((bounds, [len(parts)])).tolist(),
            strict=True,
        ):
            if end > start:
                out[int(brokers[start])] = Pool(
                    parts[start:end].tolist(),
                    slots[start:end].tolist(),
                    keys[start:end].tolist(),
                    weights[start:end].tolist(),
                )
        return out

    def run(self, m: Matching) -> int:
        """One pass; returns the number of moves made."""
        give_left, take_left = m.give, m.take
        for r in [r for r in take_left if r not in self.receivers]:
            del take_left[r]
        givers = {g: v for g, v in give_left.items() if v > 0}
        if not givers or not any(v > 0 for v in take_left.values()):
            return 0
        pools = self.pools(givers, m.weight)
        by_domain: dict[Node, deque[int]] = {}
        for r in sorted(r for r, v in take_left.items() if v > 0):
            by_domain.setdefault(self.domain.get(r, ()), deque()).append(r)
        everyone = deque(sorted(r for r, v in take_left.items() if v > 0))
        turns = deque(g for g in sorted(givers) if g in pools)
        moves = 0
        while turns:
            g = turns.popleft()
            if give_left[g] > 0 and self._one_move(
                giver=g,
                pool=pools[g],
                give_left=give_left,
                take_left=take_left,
                by_domain=by_domain,
                everyone=everyone,
                m=m,
            ):
                moves += 1
                turns.append(g)
        return moves

    def _receivers(
        self, giver: int, take_left: dict[int, float], by_domain: dict[Node, deque[int]], everyone: deque[int]
    ) -> Iterator[int]:
        tried: set[int] = set()
        own = by_domain.get(self.domain[giver]) if giver in self.domain else None
        for ring in (own, everyone):
            if ring is None:
                continue
            for _ in range(len(ring)):
                if len(tried) >= MAX_RECEIVERS:
                    return
                r = ring.popleft()
                if take_left.get(r, 0) <= 0:
                    continue  # done: dropped from the ring
                ring.append(r)
                if r == giver or r in tried:
                    continue
                tried.add(r)
                yield r

    def _one_move(
        self,
        *,
        giver: int,
        pool: Pool,
        give_left: dict[int, float],
        take_left: dict[int, float],
        by_domain: dict[Node, deque[int]],
        everyone: deque[int],
        m: Matching,
    ) -> bool:
        s = self.state
        for receiver in self._receivers(giver, take_left, by_domain, everyone):
            target = m.desired(giver, receiver) if m.desired is not None else 0.0
            for i in islice(pool.around(target), MAX_CANDIDATES):
                p, slot, weight = pool.parts[i], pool.slots[i], pool.weights[i]
                if s.rep[p, slot] != giver:
                    pool.use(i)
                    continue
                if m.allow is not None and not m.allow(giver, receiver, p, weight):
                    continue
                current = s.replicas(p)
                if receiver in current or not s.fits(p, slot, receiver):
                    continue
                if not is_valid_move(current, giver, receiver, self.topology):
                    continue
                s.move(p, slot, receiver)
                pool.use(i)
                give_left[giver] -= weight
                take_left[receiver] -= weight
                return True
        return False

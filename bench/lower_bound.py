"""The physical lower bound on a reassignment's makespan, against which every strategy is measured.

The bound is the largest of these figures, each a time no schedule can beat:

* **enter**: over brokers, the bytes that must enter the broker divided by its inbound rate (follower
  throttle, capped by the network). A new replica starts empty and joins the ISR only once it holds the
  leader's whole log, which keeps growing at the produce rate, so the copy of partition j into b moves
  S_j + w_j * C_j bytes (size at the start, produce rate, the copy's completion time). Every copy into b
  completes by the makespan T, so rate_b * T >= sum(S_j) + sum(w_j * C_j), and sum(w_j * C_j) is at least
  its minimum on one machine of speed rate_b with processing times S_j / rate_b: Smith's rule (shortest
  S_j / w_j first), which preemption and processor sharing cannot beat (McNaughton, 1959);
* **leave**: the smallest time in which the bytes to copy can leave their possible sources (any replica of
  the partition before or after the move, other than the copy's destination, may lead it and serve the
  copy) at each source's leader throttle, capped by its network: a max-flow feasibility test, bisected on
  the time;
* **chain**: over partitions, under `reassignment.parallel.replica.count` R (at most R of its replicas
  being added at once), the copies into its new replicas. At most R at a time means they can be laid out on
  R sequences (an interval graph is R-colourable), one of which holds ceil(new replicas / R) copies, one
  after the other, each at most at the best single copy's rate r; each closes the lag on a growing log, so
  the k-th ends no sooner than T_k = (r * T_(k-1) + S) / (r - w). And one leader at a time serves all of the
  partition's copies, so by the k-th copy's completion k * S + w * (sum of the first k completions) bytes
  left at most the best source's rate;
* **outage** (scenarios where a broker stops): Kafka completes a reassignment only once every replica of
  its target is in the ISR (PartitionReassignmentReplicas.maybeCompleteReassignment in KRaft,
  KafkaController.isReassignmentComplete in ZooKeeper mode), so a partition whose final replicas keep the
  stopped broker cannot finish while it is down. If those partitions cannot all finish before it stops
  (their bytes entering their busiest destination take longer than the time until the stop: the enter
  bound of that subset), the plan cannot end before the broker is back, plus, when it receives replicas,
  the part of its own enter time that did not fit before it stopped.

Growth is counted only where the log provably grows for the whole run: the partition has a leader now and
none of its replicas, before or after, is a broker that stops (a partition can lose its leader, and so stop
growing, or be truncated by an unclean election, only when its replicas stop), with the produce rates fixed
for the run as in every benchmark scenario. Every other relaxation (sources free to choose, sizes at the
start, network without the produce reservation) makes the bound smaller, so it stays a bound.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from reassignd.engine import Limits
from reassignd.model import ReassignmentPlan
from reassignd.sim import SimCluster
from reassignd.sim.configs import effective_long


@dataclass(frozen=True, slots=True)
class LowerBound:
    seconds: float
    enter: float
    leave: float
    chain: float
    bottleneck: str  # which of the three it is, with the broker or partition
    leave_current_leaders: float = 0.0
    """Not part of the bound: the leave time if every copy came from the partition's leader at the start
    (what a schedule that never moves leadership first must pay); it explains gaps above the bound."""
    outage: float = 0.0
    """When a stopped broker the plan keeps returns, if the plan cannot finish before it stops."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "seconds": self.seconds,
            "enter": self.enter,
            "leave": self.leave,
            "chain": self.chain,
            "bottleneck": self.bottleneck,
            "leave_current_leaders": self.leave_current_leaders,
            "outage": self.outage,
        }


def _rate(sim: SimCluster, broker: int, key: str, ours: int | None) -> float:
    if ours is not None:
        return float(ours)
    return float(effective_long(sim.broker_config(broker, key)))


def lower_bound(
    sim: SimCluster,
    plan: ReassignmentPlan,
    limits: Limits,
    outages: Sequence[tuple[int, float, float]] = (),
) -> LowerBound:
    """The bound for `plan` on the cluster as `sim` is now, with the throttle rates of `limits`;
    `outages` are (broker, stops at, starts again at or inf), in seconds from now."""
    inbound = {
        b: min(
            _rate(sim, b, "follower.replication.throttled.rate", limits.follower_throttled_rate),
            sim.brokers[b].network_in,
        )
        for b in sim.brokers
    }
    outbound = {
        b: min(
            _rate(sim, b, "leader.replication.throttled.rate", limits.leader_throttled_rate),
            sim.brokers[b].network_out,
        )
        for b in sim.brokers
    }
    # At most this many copies of one partition at once: R, and the limits on its leader's movements.
    slots = max(
        1,
        min(
            limits.parallel_replica_count,
            limits.max_outgoing_per_broker,
            limits.max_concurrent_replica_movements,
        ),
    )
    stopping = {broker for broker, _, _ in outages}
    entering: dict[int, list[tuple[float, float]]] = {}  # broker -> (size, growth) of each copy into it
    served: dict[int, float] = {}
    demands: dict[frozenset[int], float] = {}
    chain, chain_at = 0.0, ""
    for tp, target in plan.targets.items():
        p = sim.topics[tp.topic].partitions[tp.partition]
        current = list(p.replicas)
        adding = [b for b in target if b not in current]
        if not adding:
            continue
        size = float(p.log_end)
        sources = frozenset(current) | frozenset(target)
        grows = p.leader >= 0 and not sources & stopping
        growth = p.produce_bytes_per_sec if grows else 0.0
        for b in adding:
            entering.setdefault(b, []).append((size, growth))
        if p.leader >= 0:
            served[p.leader] = served.get(p.leader, 0.0) + size * len(adding)
        for b in adding:  # a copy to b comes from another replica, never from b itself
            group = sources - {b}
            demands[group] = demands.get(group, 0.0) + size
        best_source = max(outbound[b] for b in sources)
        best_dest = max(inbound[b] for b in adding)
        seconds = _chain_time(size, growth, len(adding), slots, dest=best_dest, source=best_source)
        if seconds > chain:
            chain, chain_at = seconds, f"chain {tp} ({math.ceil(len(adding) / slots)} step(s))"
    enter, enter_at = 0.0, ""
    for b, copies in entering.items():
        seconds = _enter_time(copies, inbound[b])
        if seconds > enter:
            enter, enter_at = seconds, f"enter broker {b}"
    leave = _leave_time(demands, outbound)
    outage, outage_at = _outage(sim, plan, inbound, outages)
    best = max((enter, enter_at), (leave, "leave (sources)"), (chain, chain_at), (outage, outage_at))
    by_leaders = max((size / outbound[b] for b, size in served.items() if outbound[b] > 0), default=0.0)
    return LowerBound(
        best[0], enter, leave, chain, best[1] if best[0] > 0 else "nothing to move", by_leaders, outage
    )


def _enter_time(copies: list[tuple[float, float]], rate: float) -> float:
    """Least T with rate * T >= sum(S_j + w_j * C_j) over the copies (S_j, w_j) into one broker.

    The completion times C_j are those of the broker's copies as jobs of S_j / rate seconds on one machine
    (their true lengths, growth included, are longer), and sum(w_j * C_j) is least in Smith's order.
    """
    if rate <= 0:
        return math.inf
    order = sorted(copies, key=lambda c: c[0] / c[1] if c[1] > 0 else math.inf)
    elapsed, weighted = 0.0, 0.0
    for size, growth in order:
        elapsed += size / rate
        weighted += growth * elapsed
    return (sum(size for size, _ in copies) + weighted) / rate


def _chain_time(size: float, growth: float, copies: int, slots: int, *, dest: float, source: float) -> float:
    """Least time for `copies` copies of one partition, at most `slots` at once (module docstring)."""
    single = min(dest, source)
    if single <= growth:
        return math.inf
    sequence = 0.0
    for _ in range(math.ceil(copies / slots)):
        sequence = (single * sequence + size) / (single - growth)
    shared, completions = 0.0, 0.0
    for k in range(1, copies + 1):
        shared = (k * size + growth * completions) / (source - growth)
        completions += shared
    return max(sequence, shared)


def _outage(
    sim: SimCluster,
    plan: ReassignmentPlan,
    inbound: dict[int, float],
    outages: Sequence[tuple[int, float, float]],
) -> tuple[float, str]:
    best, at = 0.0, ""
    for broker, stops, returns in outages:
        entering: dict[int, float] = {}
        for tp, target in plan.targets.items():
            p = sim.topics[tp.topic].partitions[tp.partition]
            if broker not in target or set(p.replicas) == set(target):  # a reordering is immediate
                continue
            for b in target:
                if b not in p.replicas:
                    entering[b] = entering.get(b, 0.0) + float(p.log_end)
        if not entering:
            continue
        before = max(size / inbound[b] if inbound[b] > 0 else math.inf for b, size in entering.items())
        if before <= stops:
            continue
        # What the stopped broker itself receives enters before it stops or after it is back.
        own = entering.get(broker, 0.0) / inbound[broker] if inbound[broker] > 0 else 0.0
        ends = returns + max(0.0, own - stops)
        if ends > best:
            best, at = ends, f"outage of broker {broker} (kept by the plan) until {returns:,.0f} s"
    return best, at


def _leave_time(demands: dict[frozenset[int], float], outbound: dict[int, float]) -> float:
    """Smallest T such that every group's bytes can be served by its sources within T (bisection)."""
    total = sum(demands.values())
    if total <= 0:
        return 0.0
    serving = sorted({b for group in demands for b in group})
    capacity = sum(outbound[b] for b in serving)
    if capacity <= 0:
        return math.inf
    low = total / capacity  # every source busy all the time
    high = max(d / max(sum(outbound[b] for b in g), 1e-12) for g, d in demands.items())
    high = max(high, low) * len(demands) + 1.0
    for _ in range(60):
        if high - low <= 1e-6 * high:
            break
        middle = (low + high) / 2
        if _feasible(demands, outbound, middle, total):
            high = middle
        else:
            low = middle
    return high


def _feasible(
    demands: dict[frozenset[int], float], outbound: dict[int, float], t: float, total: float
) -> bool:
    groups = list(demands.items())
    brokers = sorted({b for g, _ in groups for b in g})
    # Nodes: 0 source, 1..G groups, then brokers, then sink.
    g_count = len(groups)
    broker_node = {b: 1 + g_count + i for i, b in enumerate(brokers)}
    sink = 1 + g_count + len(brokers)
    graph = _Graph(sink + 1)
    for i, (group, demand) in enumerate(groups):
        graph.add(0, 1 + i, demand)
        for b in group:
            graph.add(1 + i, broker_node[b], math.inf)
    for b in brokers:
        graph.add(broker_node[b], sink, outbound[b] * t)
    return graph.max_flow(0, sink) >= total * (1 - 1e-9)


class _Graph:
    """Dinic's max flow on a small graph (groups of partitions by source set, and brokers)."""

    def __init__(self, n: int) -> None:
        self.adj: list[list[int]] = [[] for _ in range(n)]
        self.to: list[int] = []
        self.cap: list[float] = []

    def add(self, u: int, v: int, c: float) -> None:
        self.adj[u].append(len(self.to))
        self.to.append(v)
        self.cap.append(c)
        self.adj[v].append(len(self.to))
        self.to.append(u)
        self.cap.append(0.0)

    def max_flow(self, s: int, t: int) -> float:
        flow = 0.0
        while True:
            level = [-1] * len(self.adj)
            level[s] = 0
            queue = deque([s])
            while queue:
                u = queue.popleft()
                for e in self.adj[u]:
                    if self.cap[e] > 1e-9 and level[self.to[e]] < 0:
                        level[self.to[e]] = level[u] + 1
                        queue.append(self.to[e])
            if level[t] < 0:
                return flow
            cursor = [0] * len(self.adj)
            while True:
                pushed = self._push(s, t, math.inf, level, cursor)
                if pushed <= 1e-9:
                    break
                flow += pushed

    def _push(self, u: int, t: int, limit: float, level: list[int], cursor: list[int]) -> float:
        if u == t:
            return limit
        while cursor[u] < len(self.adj[u]):
            e = self.adj[u][cursor[u]]
            v = self.to[e]
            if self.cap[e] > 1e-9 and level[v] == level[u] + 1:
                pushed = self._push(v, t, min(limit, self.cap[e]), level, cursor)
                if pushed > 1e-9:
                    self.cap[e] -= pushed
                    self.cap[e ^ 1] += pushed
                    return pushed
            cursor[u] += 1
        return 0.0

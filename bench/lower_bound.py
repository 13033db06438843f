"""The physical lower bound on a reassignment's makespan, against which every strategy is measured.

The bound is the largest of these figures, each a time no schedule can beat:

* **enter**: over brokers, the bytes that must enter the broker through its inbound rate (follower
  throttle, with its credit, capped by the network). A new replica starts empty and joins the ISR only
  once it holds the leader's whole log, which keeps growing at the produce rate, so the copy of j into b moves
  S_j + w_j * C_j bytes (size at the start, produce rate, the copy's completion time). Every copy into b
  completes by the makespan T, so rate_b * T (+ credit) >= sum(S_j) + sum(w_j * C_j), and sum(w_j * C_j)
  is at least its minimum on one machine of speed rate_b with processing times S_j / rate_b: Smith's rule
  (shortest S_j / w_j first), which preemption and processor sharing cannot beat (McNaughton, 1959), less
  what the credit buys (a machine that started credit / rate_b earlier); the network alone bounds it too;
* **leave**: the smallest time in which the bytes to copy can leave their possible sources (any replica of
  the partition before or after the move, other than the copy's destination, may lead it and serve the
  copy) at each source's leader throttle, capped by its network: a max-flow feasibility test, bisected on
  the time;
* **chain**: over partitions, under `reassignment.parallel.replica.count` R (at most R of its replicas
  being added at once), the copies into its new replicas. At most R at a time means they can be laid out on
  R sequences (an interval graph is R-colourable), one of which holds ceil(new replicas / R) copies, one
  after the other, each at most at the best single copy's rate r (and credit c); each closes the lag on a
  growing log, so the k-th ends no sooner than T_k = (r * T_(k-1) + S - c) / (r - w). And one leader at a
  time serves all of the partition's copies, so by the k-th copy's completion k * S + w * (sum of the first
  k completions) bytes left at most the best source's rate (and credits);
* **outage** (scenarios where a broker stops): Kafka completes a reassignment only once every replica of
  its target is in the ISR (PartitionReassignmentReplicas.maybeCompleteReassignment in KRaft,
  KafkaController.isReassignmentComplete in ZooKeeper mode), so a partition whose final replicas keep the
  stopped broker cannot finish while it is down. If those partitions cannot all finish before it stops
  (their bytes entering their busiest destination take longer than the time until the stop: the enter
  bound of that subset), the plan cannot end before the broker is back, plus, when it receives replicas,
  the part of its own enter time that did not fit before it stopped.

Throttle rates are Kafka's quotas, not caps from the first byte (reassignd/sim/quota.py, docs/simulator.md,
"Settled against real Kafka"): a quota measures the bytes of its last `replication.quota.window.num`
samples of `.size.seconds` and lets fetches through while that rate is not above its own, so what went
through it by time t is at most r * t plus a **credit**. A leader's window always reaches num + 1 samples
back (every follower fetch records to it): r * (num + 1) * size at once (measured on Kafka 4.4: 20 MiB at
2 MB/s in under 1.3 s). A receiving broker's window starts afresh and counts as one sample long: r * max(t,
size) from the start of the run, but a copy starting later may find it idle for up to the same num + 1
samples, so the chain term gives each copy the leader's credit on both sides. Each quota adds one whole
fetch (`replica.fetch.max.bytes`) per copy, checked before it is recorded; a broker back from a stop starts
its quotas afresh (its credit again), and a partition whose leader may change brings every possible
leader's window. So each side of a copy carries at most min(network * t, quota) by time t: the terms above
use that instead of rate * t. (Below 8 fetches per window Kafka's grants come faster than the rate in the
long run: at 100 kB/s a 4.4 follower got 8 fetches of 983 kB in 44 s. The benchmarks throttle at 10 MB/s
and more, where the long-run rate is the bound's.)

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
from dataclasses import dataclass, replace
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


@dataclass(frozen=True, slots=True)
class _Side:
    """One side of a broker's copies: a network cap, and a quota (the module docstring). By time t it carries
    at most min(network * t, rate * max(t + span, sample) + fetch * copies + extra) bytes: `span` is how far
    back a warm (leader) window reaches, 0 for a fresh one, which counts as one `sample` long; `extra` is
    credit beyond one window (a restart starts a quota afresh, another leader brings its own)."""

    network: float
    rate: float  # >= network: no quota
    span: float = 0.0
    sample: float = 1.0
    fetch: float = 0.0
    extra: float = 0.0
    window: float = 0.0  # how far back any window reaches: (num + 1) samples

    def from_any_time(self) -> _Side:
        """The side over a time that starts later than the run: its window may reach back a whole window's
        span, whatever it was at the start (a quota idle for a while lets that time's rate through)."""
        return replace(self, span=max(self.span, self.window))

    @property
    def throttled(self) -> bool:
        return self.rate < self.network

    def credit(self, copies: int = 1) -> float:
        """What the quota lets through at once, beyond its rate from time 0: a linear bound's intercept."""
        if not self.throttled:
            return 0.0
        return self.rate * max(self.span, self.sample) + self.fetch * copies + self.extra

    def capacity(self, t: float, copies: int = 1) -> float:
        if not self.throttled:
            return self.network * t
        quota = self.rate * max(t + self.span, self.sample) + self.fetch * copies + self.extra
        return min(self.network * t, quota)

    def time_for(self, amount: float, growth: float = 0.0, copies: int = 1) -> float:
        """Least t with amount + growth * t <= capacity(t): what `amount` bytes need, growing at `growth`."""
        if amount <= 0:
            return 0.0
        least = amount / (self.network - growth) if self.network > growth else math.inf
        if self.throttled and amount > self.credit(copies):
            # past its first sample the quota carries rate * (t + span) + fetches + extra
            fixed = self.fetch * copies + self.extra + self.rate * self.span
            least = max(least, (amount - fixed) / (self.rate - growth) if self.rate > growth else math.inf)
        return least

    def with_extra(self, extra: float) -> _Side:
        return replace(self, extra=self.extra + extra)


def _side(sim: SimCluster, broker: int, key: str, ours: int | None, *, network: float, warm: bool) -> _Side:
    """A broker's side with its quota: a leader's window is warm (num + 1 samples back), a receiver's
    fresh."""
    rate = _rate(sim, broker, key, ours)
    if rate >= network:
        return _Side(network, rate)
    num = float(effective_long(sim.broker_config(broker, "replication.quota.window.num"), 11))
    size = float(effective_long(sim.broker_config(broker, "replication.quota.window.size.seconds"), 1))
    fetch = float(effective_long(sim.broker_config(broker, "replica.fetch.max.bytes"), 1048576))
    return _Side(network, rate, (num + 1) * size if warm else 0.0, size, fetch, window=(num + 1) * size)


def lower_bound(
    sim: SimCluster,
    plan: ReassignmentPlan,
    limits: Limits,
    outages: Sequence[tuple[int, float, float]] = (),
) -> LowerBound:
    """The bound for `plan` on the cluster as `sim` is now, with the throttle rates of `limits`;
    `outages` are (broker, stops at, starts again at or inf), in seconds from now."""
    inbound = {
        b: _side(
            sim,
            b,
            "follower.replication.throttled.rate",
            limits.follower_throttled_rate,
            network=sim.brokers[b].network_in,
            warm=False,
        )
        for b in sim.brokers
    }
    outbound = {
        b: _side(
            sim,
            b,
            "leader.replication.throttled.rate",
            limits.leader_throttled_rate,
            network=sim.brokers[b].network_out,
            warm=True,
        )
        for b in sim.brokers
    }
    for broker, _stops, returns in outages:  # a broker back from a stop starts its quotas afresh
        if math.isfinite(returns):
            for sides in (inbound, outbound):
                side = sides[broker]
                sides[broker] = side.with_extra(side.credit(0) - side.extra)
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
    served: dict[int, tuple[float, int]] = {}  # leader -> (bytes, copies) if every copy came from it
    demands: dict[frozenset[int], float] = {}
    may_serve: dict[int, int] = {}  # source -> copies it may serve
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
            amount, count = served.get(p.leader, (0.0, 0))
            served[p.leader] = (amount + size * len(adding), count + len(adding))
        for b in adding:  # a copy to b comes from another replica, never from b itself
            group = sources - {b}
            demands[group] = demands.get(group, 0.0) + size
            for source in group:
                may_serve[source] = may_serve.get(source, 0) + 1
        best_source = _most_permissive([outbound[b] for b in sources])
        best_dest = _most_permissive([inbound[b] for b in adding])
        # a leader that changes brings its own quota's window: every other source's, at most
        best_source = best_source.with_extra((len(sources) - 1) * (best_source.credit(0) - best_source.extra))
        seconds = _chain_time(
            size, growth, len(adding), slots, dest=best_dest.from_any_time(), source=best_source
        )
        if seconds > chain:
            chain, chain_at = seconds, f"chain {tp} ({math.ceil(len(adding) / slots)} step(s))"
    enter, enter_at = 0.0, ""
    for b, copies in entering.items():
        seconds = _enter_time(copies, inbound[b])
        if seconds > enter:
            enter, enter_at = seconds, f"enter broker {b}"
    leave = _leave_time(demands, outbound, may_serve)
    outage, outage_at = _outage(sim, plan, inbound, outages)
    best = max((enter, enter_at), (leave, "leave (sources)"), (chain, chain_at), (outage, outage_at))
    by_leaders = max(
        (outbound[b].time_for(size, copies=count) for b, (size, count) in served.items()), default=0.0
    )
    return LowerBound(
        best[0], enter, leave, chain, best[1] if best[0] > 0 else "nothing to move", by_leaders, outage
    )


def _smith(copies: list[tuple[float, float]], rate: float) -> float:
    """Least sum(w_j * C_j) for the copies (S_j, w_j) as jobs of S_j / rate seconds on one machine: Smith's
    order (their true lengths, growth included, are longer)."""
    order = sorted(copies, key=lambda c: c[0] / c[1] if c[1] > 0 else math.inf)
    elapsed, weighted = 0.0, 0.0
    for size, growth in order:
        elapsed += size / rate
        weighted += growth * elapsed
    return weighted


def _enter_time(copies: list[tuple[float, float]], rate: float | _Side) -> float:
    """Least T by which the copies (S_j, w_j) into one broker can have entered it: sum(S_j + w_j * C_j).

    Each limit alone bounds T. The network (speed N): N * T >= sum(S_j) + Smith's least sum(w_j * C_j) at N.
    The quota (rate r, carrying at most r * t + c by t, c its credit): it is a machine of speed r that had
    c / r seconds before time 0, so its completions are at least Smith's at r less c / r each, and the
    quota must carry sum(S_j) + max(0, Smith's at r - (c / r) * sum(w_j)) by T.
    """
    side = rate if isinstance(rate, _Side) else _Side(rate, math.inf)
    if side.network <= 0:
        return math.inf
    total = sum(size for size, _ in copies)
    seconds = (total + _smith(copies, side.network)) / side.network
    if side.throttled:
        if side.rate <= 0:
            return math.inf
        credit = side.credit(len(copies))
        weights = sum(growth for _, growth in copies)
        grown = max(0.0, _smith(copies, side.rate) - credit / side.rate * weights)
        quota = replace(side, network=math.inf)
        seconds = max(seconds, quota.time_for(total + grown, copies=len(copies)))
    return seconds


def _most_permissive(sides: list[_Side]) -> _Side:
    """A side no weaker than any of `sides`: the largest of each figure among them (a side without a quota
    has none to add)."""
    if any(not s.throttled for s in sides):
        return _Side(max(s.network for s in sides), math.inf)
    return _Side(
        max(s.network for s in sides),
        max(s.rate for s in sides),
        max(s.span for s in sides),
        max(s.sample for s in sides),
        max(s.fetch for s in sides),
        max(s.extra for s in sides),
        max(s.window for s in sides),
    )


def _chain_time(
    size: float, growth: float, copies: int, slots: int, *, dest: _Side | float, source: _Side | float
) -> float:
    """Least time for `copies` copies of one partition, at most `slots` at once (module docstring).

    A copy that starts at T_(k-1) moves S + w * T_k bytes through both its sides by T_k, each side at most
    min(network * dt, rate * dt + credit of one copy) in dt: the later of what each side needs. The source
    serves every copy: by the k-th completion k * S + w * (sum of the first k completions) bytes left it."""
    dest = dest if isinstance(dest, _Side) else _Side(dest, math.inf)
    source = source if isinstance(source, _Side) else _Side(source, math.inf)
    sequence = 0.0
    for _ in range(math.ceil(copies / slots)):
        start = sequence
        sequence = max(
            start + side.time_for(size + growth * start, growth) for side in (dest, source)
        )  # dt: S plus the growth until the start, then growing at w
        if math.isinf(sequence):
            return math.inf
    shared, completions = 0.0, 0.0
    for k in range(1, copies + 1):
        shared = source.time_for(k * size + growth * completions, growth, copies=k)
        completions += shared
    return max(sequence, shared)


def _outage(
    sim: SimCluster,
    plan: ReassignmentPlan,
    inbound: dict[int, _Side],
    outages: Sequence[tuple[int, float, float]],
) -> tuple[float, str]:
    best, at = 0.0, ""
    for broker, stops, returns in outages:
        entering: dict[int, tuple[float, int]] = {}  # broker -> (bytes, copies)
        for tp, target in plan.targets.items():
            p = sim.topics[tp.topic].partitions[tp.partition]
            if broker not in target or set(p.replicas) == set(target):  # a reordering is immediate
                continue
            for b in target:
                if b not in p.replicas:
                    amount, count = entering.get(b, (0.0, 0))
                    entering[b] = (amount + float(p.log_end), count + 1)
        if not entering:
            continue
        before = max(inbound[b].time_for(size, copies=n) for b, (size, n) in entering.items())
        if before <= stops:
            continue
        # What the stopped broker itself receives enters before it stops or after it is back (its quotas
        # start afresh then: their credit again).
        own, count = entering.get(broker, (0.0, 0))
        left = max(0.0, own - inbound[broker].capacity(stops, count)) if own else 0.0
        ends = returns + inbound[broker].time_for(left, copies=count)
        if ends > best:
            best, at = ends, f"outage of broker {broker} (kept by the plan) until {returns:,.0f} s"
    return best, at


def _leave_time(
    demands: dict[frozenset[int], float], outbound: dict[int, _Side], copies: dict[int, int] | None = None
) -> float:
    """Smallest T such that every group's bytes can be served by its sources within T (bisection); a source
    serves at most its side's capacity by T, with a fetch of credit for each copy it may serve."""
    total = sum(demands.values())
    if total <= 0:
        return 0.0
    counts = copies or {}
    low, high = 0.0, 1.0
    while not _feasible(demands, outbound, high, total, counts):
        low, high = high, high * 2
        if high > 1e12:
            return math.inf
    for _ in range(60):
        if high - low <= 1e-6 * high:
            break
        middle = (low + high) / 2
        if _feasible(demands, outbound, middle, total, counts):
            high = middle
        else:
            low = middle
    return high


def _feasible(
    demands: dict[frozenset[int], float],
    outbound: dict[int, _Side],
    t: float,
    total: float,
    copies: dict[int, int],
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
        graph.add(broker_node[b], sink, outbound[b].capacity(t, copies.get(b, 1)))
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

"""The ETA from the work left and the rates that bound it, not from the plan's average pace.

A plan's average rate says little about its end: early on every broker is busy, at the end a few copies
into one broker remain, and remaining/average promises minutes for what takes an hour (the old live ETA
ran 30-35% low where the rehearsal was within 4-12%). What bounds a plan is per broker: the bytes still to
enter each receiving broker over its inbound rate, the bytes still to leave each serving broker over its
outbound rate, and each partition's chain of steps, one after the other. Those rates are known: the KIP-73
throttle in force on the broker (what reassignd writes, or an operator's), else what the broker was seen
to move. Producers keep writing while a copy runs, so a broker's useful rate is its rate less what its
copies' partitions produce (as many copies as its limit lets run at once), and a copy waiting for its
turn grows until then: the broker's copies are counted round by round (`_drain_seconds`). Where
producers write into a partition as fast as its copy may go, or into a broker's copies as fast as its
rate, the copies never catch up at that rate: no estimate then, but "never at this rate" with the
figures (an ETA of 1 byte/s, six-digit days, was what showed before).

This is the lower bound of bench/lower_bound.py on the work left, with each partition's copies served
by the replica the engine will fetch them from (the leader, or its balanced source: sources.py); the
scheduler comes within a few percent of it (docs/benchmarks.md). While a broker the work needs is offline
there is no honest estimate: None, with that broker as the reason.

Each partition's share (its term) is kept between cycles with the per-broker sums it adds to, so a cycle
recomputes only the partitions that changed or are moving: on a 100,000-partition plan nearly all of them
sit still between their steps, and summing all of them each cycle cost over a second.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import NamedTuple

from reassignd.engine.progress import source_size
from reassignd.model import ClusterSnapshot, PartitionState, TopicPartition, copy_of
from reassignd.units import format_rate


@dataclass(frozen=True, slots=True)
class Estimate:
    seconds: float | None
    bottleneck: str
    """What bounds it: `into broker 12`, `out of broker 3`, `steps of orders-4`, or why it is unknown
    (`never at this rate: ...` when producers outpace the copies)."""


NEVER = "never at this rate"
"""How a reason without an estimate begins when producers outpace the copies at the rates in force: the plan
never finishes at them (the rehearsal stops on it, status shows it as it is)."""


def never_finishes(reason: str | None) -> bool:
    """Whether an estimate's `bottleneck` says the copies never catch up at the rates in force."""
    return bool(reason) and str(reason).startswith(NEVER)


Rate = Callable[[int], float | None]
Sizes = Mapping[TopicPartition, tuple[int, Mapping[int, int]]]


class Term(NamedTuple):
    """One partition's share of the work left."""

    copies: tuple[tuple[int, float], ...]
    """(receiving broker, bytes still to enter it)"""
    source: int
    produce: float
    chain: float
    """Its steps one after the other at the best rate its brokers allow, in seconds (0: no rate known)."""


class Load(NamedTuple):
    """A broker's sums over the terms: bytes, the produce rates of those copies' partitions, copies."""

    left: float
    produce: float
    copies: int


@dataclass(frozen=True, slots=True)
class EtaTerms:
    """The terms of one estimate and their sums, for the next cycle to update (never mutated: a cycle
    copies what it changes)."""

    key: tuple[object, ...]
    targets: Mapping[TopicPartition, tuple[int, ...]]
    epoch: object
    terms: Mapping[TopicPartition, Term]
    blocked: Mapping[TopicPartition, str]
    """Partitions that make the estimate unknown, with why (an offline receiver or source, producers
    outpacing the partition's copy)."""
    into: Mapping[int, Load]
    out: Mapping[int, Load]
    chains: tuple[tuple[float, TopicPartition], ...]
    """A heap of (-chain seconds, partition); entries whose term has changed since are skipped when read."""
    sourced: frozenset[TopicPartition]
    """The partitions given a source (in flight) when these terms were made: their source may change."""


def estimate(
    snapshot: ClusterSnapshot,
    targets: Mapping[TopicPartition, tuple[int, ...]],
    ended: Callable[[TopicPartition], bool],
    sources: Mapping[TopicPartition, int],
    *,
    rate_in: Rate,
    rate_out: Rate,
    produce: Mapping[TopicPartition, float],
    replica_count: int,
    concurrent_in: int,
    concurrent_out: int,
    sizes: Sizes | None = None,
    previous: EtaTerms | None = None,
    candidates: Collection[TopicPartition] | None = None,
    epoch: object = None,
) -> tuple[Estimate, EtaTerms]:
    """Seconds until the work left in `snapshot` can be done at the rates in force, and the terms.

    `sources`: the broker serving each partition's copies, in flight or planned (else its leader).
    `sizes`: sizes of partitions the snapshot carries none for. `previous`, `candidates`, `epoch`: the
    last cycle's terms are updated for the `candidates` only (the partitions that may have changed: the
    sources given now or then are added) when the rates, the online brokers, the targets and the `epoch`
    (what else the terms read: the produce rates and sizes of partitions that sit still) are the same;
    otherwise every term is computed again.
    """
    online = snapshot.online_broker_ids()
    rate_in, rate_out = _per_broker(rate_in), _per_broker(rate_out)
    key = (
        online,
        tuple((b, rate_in(b), rate_out(b)) for b in sorted(snapshot.brokers)),
        replica_count,
    )
    known = sizes or {}

    def term(tp: TopicPartition) -> Term | str | None:
        final = targets.get(tp)
        p = snapshot.partitions.get(tp)
        if final is None or p is None or ended(tp):
            return None
        if not p.replica_sizes and not p.size_bytes and tp in known:
            p = p.with_sizes(*known[tp])
        return _term(
            tp,
            p,
            final,
            source=sources.get(tp, p.leader),
            online=online,
            produce=produce.get(tp, 0.0),
            rate_in=rate_in,
            rate_out=rate_out,
            replica_count=replica_count,
        )

    fresh = (
        previous is None
        or candidates is None
        or previous.key != key
        or previous.targets is not targets
        or previous.epoch is not epoch
    )
    if fresh:
        built = _Builder.of((tp, term(tp)) for tp in targets)
    else:
        assert previous is not None and candidates is not None
        built = _Builder(
            copy_of(previous.terms),
            copy_of(previous.blocked),
            copy_of(previous.into),
            copy_of(previous.out),
            list(previous.chains),
        )
        for tp in {*candidates, *sources, *previous.sourced}:
            built.put(tp, term(tp))
    terms = built.freeze(key, targets, epoch, frozenset(sources))
    return _combine(terms, rate_in, rate_out, concurrent_in, concurrent_out), terms


def _term(
    tp: TopicPartition,
    p: PartitionState,
    final: tuple[int, ...],
    *,
    source: int,
    online: frozenset[int],
    produce: float,
    rate_in: Rate,
    rate_out: Rate,
    replica_count: int,
) -> Term | str | None:
    size = source_size(p)
    settled = set(p.replicas) - set(p.adding)
    copies = [b for b in final if b not in settled]
    if not copies:
        return None
    if source not in online:  # the step's source failed: the partition's new leader serves
        source = p.leader
    current = 0.0  # what the copies in flight still need: the first link of the partition's chain
    entering: list[tuple[int, float]] = []
    for broker in copies:
        if broker not in online:
            return f"broker {broker} is offline: its copies wait for it"
        left = max(0.0, size - p.replica_sizes.get(broker, 0)) if broker in p.adding else float(size)
        if broker in p.adding:
            current = max(current, left)
        entering.append((broker, left))
    if source not in online:
        return f"{tp} has no online leader to copy from"
    chain = 0.0
    fastest = min((r for r in (rate_in(copies[0]), rate_out(source)) if r), default=None)
    if fastest and fastest <= produce:
        return (
            f"{NEVER}: producers write {format_rate(produce)} into {tp}, its copy into broker "
            f"{copies[0]} gets at most {format_rate(fastest)}"
        )
    if fastest:
        waiting = sum(1 for b in copies if b not in p.adding)
        steps = math.ceil(waiting / max(1, replica_count))
        chain = (current + steps * size) / (fastest - produce)
    return Term(tuple(entering), source, produce, chain)


class _Builder:
    """The terms and sums being updated (private copies, frozen into EtaTerms at the end)."""

    def __init__(
        self,
        terms: dict[TopicPartition, Term],
        blocked: dict[TopicPartition, str],
        into: dict[int, Load],
        out: dict[int, Load],
        chains: list[tuple[float, TopicPartition]],
    ) -> None:
        self.terms, self.blocked, self.into, self.out, self.chains = terms, blocked, into, out, chains

    @classmethod
    def of(cls, made: Iterable[tuple[TopicPartition, Term | str | None]]) -> _Builder:
        """All terms at once: summed in plain floats, not term by term (100,000 of them at a full read)."""
        terms: dict[TopicPartition, Term] = {}
        blocked: dict[TopicPartition, str] = {}
        sums: tuple[dict[int, list[float]], dict[int, list[float]]] = ({}, {})
        for tp, term in made:
            if term is None:
                continue
            if isinstance(term, str):
                blocked[tp] = term
                continue
            terms[tp] = term
            for broker, left in term.copies:
                for side, at in zip(sums, (broker, term.source), strict=True):
                    entry = side.get(at)
                    if entry is None:
                        side[at] = [left, term.produce, 1.0]
                    else:
                        entry[0] += left
                        entry[1] += term.produce
                        entry[2] += 1.0
        chains = [(-t.chain, tp) for tp, t in terms.items() if t.chain]
        heapq.heapify(chains)
        into, out = ({b: Load(e[0], e[1], int(e[2])) for b, e in side.items()} for side in sums)
        return cls(terms, blocked, into, out, chains)

    def put(self, tp: TopicPartition, made: Term | str | None) -> None:
        old = self.terms.pop(tp, None)
        if old is not None:
            self._add(old, -1)
        self.blocked.pop(tp, None)
        if isinstance(made, str):
            self.blocked[tp] = made
        elif made is not None:
            self.terms[tp] = made
            self._add(made, 1)
            if made.chain:
                heapq.heappush(self.chains, (-made.chain, tp))

    def _add(self, term: Term, sign: int) -> None:
        for broker, left in term.copies:
            for sums, at in ((self.into, broker), (self.out, term.source)):
                was = sums.get(at, Load(0.0, 0.0, 0))
                now = Load(was.left + sign * left, was.produce + sign * term.produce, was.copies + sign)
                if now.copies:
                    sums[at] = now
                else:  # exactly nothing, not what subtracting floats leaves
                    sums.pop(at, None)

    def freeze(
        self,
        key: tuple[object, ...],
        targets: Mapping[TopicPartition, tuple[int, ...]],
        epoch: object,
        sourced: frozenset[TopicPartition],
    ) -> EtaTerms:
        chains = self.chains
        while chains and self.terms.get(chains[0][1], _NO_TERM).chain != -chains[0][0]:
            heapq.heappop(chains)  # the top is the live maximum from here on
        if len(chains) > 2 * len(self.terms) + 1024:  # stale entries deeper down: rebuilt now and then
            chains = [(-t.chain, tp) for tp, t in self.terms.items() if t.chain]
            heapq.heapify(chains)
        return EtaTerms(
            key=key,
            targets=targets,
            epoch=epoch,
            terms=MappingProxyType(self.terms),
            blocked=MappingProxyType(self.blocked),
            into=MappingProxyType(self.into),
            out=MappingProxyType(self.out),
            chains=tuple(chains),
            sourced=sourced,
        )


_NO_TERM = Term((), -1, 0.0, float("nan"))


def _combine(
    terms: EtaTerms, rate_in: Rate, rate_out: Rate, concurrent_in: int, concurrent_out: int
) -> Estimate:
    if terms.blocked:
        return Estimate(None, terms.blocked[min(terms.blocked)])
    best, why = 0.0, ""
    if terms.chains:
        best, why = -terms.chains[0][0], f"steps of {terms.chains[0][1]}"
    unbounded: int | None = None  # a broker with bytes to move and no rate known to move them at
    for sums, rate_of, concurrent, word in (
        (terms.into, rate_in, concurrent_in, "into"),
        (terms.out, rate_out, concurrent_out, "out of"),
    ):
        for broker in sorted(sums):
            load = sums[broker]
            capacity = rate_of(broker)
            if not capacity:
                if unbounded is None and load.left > 0:
                    unbounded = broker
                continue
            absorbed = load.produce / load.copies * min(concurrent, load.copies)
            if absorbed >= capacity:
                return Estimate(None, _never(word, broker, absorbed, capacity))
            seconds = _drain_seconds(load, capacity, absorbed, concurrent)
            if seconds is None:
                return Estimate(None, _never_waiting(word, broker, load, capacity))
            if seconds > best:
                best, why = seconds, f"{word} broker {broker}"
    if best == 0.0 and unbounded is not None:  # not 0 s: nothing bounds the copies yet
        return Estimate(
            None, f"no rate known yet for broker {unbounded}: no throttle set and no copy measured"
        )
    return Estimate(best, why or "nothing left to copy")


def _drain_seconds(load: Load, capacity: float, absorbed: float, concurrent: int) -> float | None:
    """Seconds for a broker's copies at `capacity`, `concurrent` at a time, while producers write into all
    of them: into those in flight (`absorbed` of the rate goes to what they write meanwhile) and into those
    still waiting, which grow until their turn. Counted in rounds of `concurrent` copies of the mean size
    `s`, each written at the mean rate `p`: a round takes its copies' size over the rate left, and each
    round's copies grew by `p` for every second before it, so the time before round r+1 is
    E(r+1) = E(r) * q + k*s / (c - k*p) with q = c / (c - k*p), and the whole is (s/p) * (q^m - 1) for
    m = copies / k rounds (left / (c - k*p) without producers; the same as one round when all copies run
    at once). Counting only the copies in flight ran 5-10% low on a plan whose copies wait an hour
    (bench/bench_eta.py). None: the waiting copies grow too fast to be caught at this rate."""
    free = max(capacity * 0.05, capacity - absorbed)
    if absorbed <= capacity * 1e-9:  # no producers to speak of (and no float noise from them)
        return load.left / free
    running = min(concurrent, load.copies)
    rounds = load.copies / running
    growth = rounds * math.log1p((capacity - free) / free)  # rounds * log(q), exact for small shares
    if growth > _MAX_GROWTH:
        return None
    return load.left / load.produce * math.expm1(growth)


_MAX_GROWTH = 20.0
"""The waiting copies' sizes at most e^20 times the work left: beyond, no estimate means anything."""


def _never(word: str, broker: int, absorbed: float, capacity: float) -> str:
    copies = "the copies entering" if word == "into" else "the copies served by"
    return (
        f"{NEVER}: producers write {format_rate(absorbed)} into {copies} broker {broker} at "
        f"once, which get {format_rate(capacity)}"
    )


def _never_waiting(word: str, broker: int, load: Load, capacity: float) -> str:
    copies = "the copies entering" if word == "into" else "the copies served by"
    return (
        f"{NEVER}: producers write {format_rate(load.produce)} into {copies} broker {broker} "
        f"({load.copies} copies), which grow faster while they wait than {format_rate(capacity)} copies them"
    )


def _per_broker(rate: Rate) -> Rate:
    """`rate`, asked once per broker: a broker's rate is one figure for the whole estimate, which asks it
    for every partition left (100,000 times a cycle on a big plan)."""
    known: dict[int, float | None] = {}

    def cached(broker: int) -> float | None:
        if broker not in known:
            known[broker] = rate(broker)
        return known[broker]

    return cached

"""The ETA from the work left and the rates that bound it, not from the plan's average pace.

A plan's average rate says little about its end: early on every broker is busy, at the end a few copies
into one broker remain, and remaining/average promises minutes for what takes an hour (the old live ETA
ran 30-35% low where the rehearsal was within 4-12%). What bounds a plan is per broker: the bytes still to
enter each receiving broker over its inbound rate, the bytes still to leave each serving broker over its
outbound rate, and each partition's chain of steps, one after the other. Those rates are known: the KIP-73
throttle in force on the broker (what reassignd writes, or an operator's), else what the broker was seen
to move. Producers keep writing while a copy runs, so a broker's useful rate is its rate less what its
copies' partitions produce (as many copies as its limit lets run at once).

This is the lower bound of bench/lower_bound.py on the work left, with sources fixed to the current
leaders; the scheduler comes within a few percent of it (docs/benchmarks.md). While a broker the work
needs is offline there is no honest estimate: None, with that broker as the reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from reassignd.engine.progress import source_size
from reassignd.model import ClusterSnapshot, TopicPartition


@dataclass(frozen=True, slots=True)
class Estimate:
    seconds: float | None
    bottleneck: str
    """What bounds it: `into broker 12`, `out of broker 3`, `steps of orders-4`, or why it is unknown."""


Rate = Callable[[int], float | None]


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
) -> Estimate:
    """Seconds until the work left in `snapshot` can be done at the rates in force.

    `sources`: the broker serving each partition's copies in flight (else its leader serves them).
    """
    online = snapshot.online_broker_ids()
    rate_in, rate_out = _per_broker(rate_in), _per_broker(rate_out)
    into: dict[int, float] = {}
    out: dict[int, float] = {}
    produce_in: dict[int, list[float]] = {}
    produce_out: dict[int, list[float]] = {}
    chain, chain_of = 0.0, ""
    for tp, final in targets.items():
        if ended(tp):
            continue
        p = snapshot.partitions.get(tp)
        if p is None:
            continue
        size = source_size(p)
        settled = set(p.replicas) - set(p.adding)
        copies = [b for b in final if b not in settled]
        if not copies:
            continue
        source = sources.get(tp, p.leader)
        if source not in online:  # the step's source failed: the partition's new leader serves
            source = p.leader
        rate = produce.get(tp, 0.0)
        current = 0.0  # what the copies in flight still need: the first link of the partition's chain
        for broker in copies:
            if broker not in online:
                return Estimate(None, f"broker {broker} is offline: its copies wait for it")
            left = max(0.0, size - p.replica_sizes.get(broker, 0)) if broker in p.adding else float(size)
            if broker in p.adding:
                current = max(current, left)
            into[broker] = into.get(broker, 0.0) + left
            out[source] = out.get(source, 0.0) + left
            produce_in.setdefault(broker, []).append(rate)
            produce_out.setdefault(source, []).append(rate)
        if source not in online:
            return Estimate(None, f"{tp} has no online leader to copy from")
        fastest = min((r for r in (rate_in(copies[0]), rate_out(source)) if r), default=None)
        if fastest:
            waiting = [b for b in copies if b not in p.adding]
            steps = math.ceil(len(waiting) / max(1, replica_count))
            seconds = (current + steps * size) / max(1.0, fastest - rate)
            if seconds > chain:
                chain, chain_of = seconds, f"steps of {tp}"
    best, why = chain, chain_of
    for totals, rate_of, producing, concurrent, word in (
        (into, rate_in, produce_in, concurrent_in, "into"),
        (out, rate_out, produce_out, concurrent_out, "out of"),
    ):
        for broker, left in totals.items():
            capacity = rate_of(broker)
            if not capacity:
                continue
            rates = producing[broker]
            absorbed = sum(rates) / len(rates) * min(concurrent, len(rates))
            seconds = left / max(capacity * 0.05, capacity - absorbed)
            if seconds > best:
                best, why = seconds, f"{word} broker {broker}"
    return Estimate(best, why or "nothing left to copy")


def _per_broker(rate: Rate) -> Rate:
    """`rate`, asked once per broker: a broker's rate is one figure for the whole estimate, which asks it
    for every partition left (100,000 times a cycle on a big plan)."""
    known: dict[int, float | None] = {}

    def cached(broker: int) -> float | None:
        if broker not in known:
            known[broker] = rate(broker)
        return known[broker]

    return cached

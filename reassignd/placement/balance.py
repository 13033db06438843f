"""KIP-166 balance arithmetic: the threshold band, per-broker quotas and the lower bound on moves.

A broker is balanced when its load (replicas, leaders or bytes) lies in the band
[ceil(avg*(1-t)), floor(avg*(1+t))], widened to always contain floor(avg)..ceil(avg). Every replica move
takes one unit from one broker to another, so no plan can use fewer moves than the larger of the total
surplus above the band and the total deficit below it: that is the lower bound. The quotas here meet it:
brokers above the band give exactly their surplus, brokers below take exactly their deficit, and the side
that is short is made up by water-filling (the fullest in-band brokers give, the emptiest take), which
also leaves the final loads as even as the band allows.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Band:
    average: float
    lower: int
    upper: int

    @classmethod
    def around(cls, total: int, brokers: int, threshold: float) -> Band:
        if brokers <= 0:
            return cls(0.0, 0, 0)
        avg = total / brokers
        upper = max(math.ceil(avg), math.floor(avg * (1 + threshold)))
        lower = min(math.floor(avg), math.ceil(avg * (1 - threshold)))
        return cls(avg, max(0, lower), upper)

    def contains(self, load: int) -> bool:
        return self.lower <= load <= self.upper


def outside_band(loads: Mapping[int, int], threshold: float) -> tuple[Band, list[int]]:
    """The band over `loads` and the brokers outside it: whether a balance goal holds (the planner's
    figures, and self-healing's balance detectors, both ask here)."""
    band = Band.around(sum(loads.values()), len(loads), threshold)
    return band, sorted(b for b, v in loads.items() if not band.contains(v))


@dataclass(frozen=True, slots=True)
class Quotas:
    """How much each broker should give and take; `lower_bound` is the fewest units any plan moves."""

    band: Band
    give: Mapping[int, int] = field(default_factory=dict)
    take: Mapping[int, int] = field(default_factory=dict)
    lower_bound: int = 0

    @property
    def total(self) -> int:
        return sum(self.give.values())


def _fill_level(current: Mapping[int, int], amount: int, cap: int) -> int:
    """The highest level L (<= cap) such that raising every broker below L to L costs at most `amount`:
    found by bisection, so a byte-sized unit costs O(brokers * log(range)), never O(amount)."""
    low = min(current.values())
    high = cap

    def cost(level: int) -> int:
        return sum(level - v for v in current.values() if v < level)

    if cost(high) <= amount:
        return high
    while high - low > 1:  # cost(low) <= amount < cost(high)
        middle = (low + high) // 2
        if cost(middle) <= amount:
            low = middle
        else:
            high = middle
    return low


def _water_fill_take(loads: Mapping[int, int], take: dict[int, int], amount: int, cap: int) -> int:
    """Give `amount` more units to the emptiest brokers, none above `cap`; returns what did not fit.

    The same result as handing out one unit at a time to the emptiest broker (ties to the lowest id), in
    closed form: fill everyone up to a level, then one more unit each to the lowest ids at that level.
    """
    current = {b: loads[b] + take.get(b, 0) for b in loads if loads[b] + take.get(b, 0) < cap}
    if amount <= 0 or not current:
        return max(amount, 0)
    level = _fill_level(current, amount, cap)
    for broker, load in current.items():
        if load < level:
            take[broker] = take.get(broker, 0) + level - load
            amount -= level - load
    if level < cap:
        at_level = sorted(b for b, load in current.items() if max(load, level) == level)
        for broker in at_level[:amount]:
            take[broker] = take.get(broker, 0) + 1
        amount -= min(amount, len(at_level))
    return amount


def _water_fill_give(loads: Mapping[int, int], give: dict[int, int], amount: int, floor: int) -> int:
    """Take `amount` units from the fullest brokers, none below `floor` (the mirror of the take side)."""
    mirrored = {b: give.get(b, 0) - loads[b] for b in loads}
    taken: dict[int, int] = {}
    left = _water_fill_take(mirrored, taken, amount, -floor)
    for broker, units in taken.items():
        give[broker] = give.get(broker, 0) + units
    return left


def balance_quotas(loads: Mapping[int, int], threshold: float, band: Band | None = None) -> Quotas:
    """replica-balance / leader-balance: bring every broker into the band with the fewest moves.

    With `band` given (the whole cluster's), `loads` may be one data centre: moves then stay inside it,
    which is what a partition spread evenly over data centres allows.
    """
    band = band or Band.around(sum(loads.values()), len(loads), threshold)
    give = {b: load - band.upper for b, load in loads.items() if load > band.upper}
    take = {b: band.lower - load for b, load in loads.items() if load < band.lower}
    surplus, deficit = sum(give.values()), sum(take.values())
    if surplus > deficit:
        others = {b: v for b, v in loads.items() if b not in give}
        _water_fill_take(others, take, surplus - deficit, band.upper)
    elif deficit > surplus:
        others = {b: v for b, v in loads.items() if b not in take}
        _water_fill_give(others, give, deficit - surplus, band.lower)
    return Quotas(band, give, take, max(surplus, deficit))


def drain_quotas(loads: Mapping[int, int], drained: Collection[int], threshold: float) -> Quotas:
    """Move everything off `drained` onto the others, emptiest first (all of it is the lower bound)."""
    keep = {b: v for b, v in loads.items() if b not in drained}
    moving = sum(v for b, v in loads.items() if b in drained)
    band = Band.around(sum(loads.values()), len(keep), threshold)
    give = {b: v for b, v in loads.items() if b in drained and v > 0}
    take: dict[int, int] = {}
    left = _water_fill_take(keep, take, moving, band.upper)
    if left and keep:
        _water_fill_take(keep, take, left, max(keep.values()) + left + 1)
    return Quotas(band, give, take, moving)


def fill_quotas(loads: Mapping[int, int], filled: Collection[int], threshold: float) -> Quotas:
    """Bring `filled` (new, empty) brokers up to the average, taking from the fullest of the rest."""
    band = Band.around(sum(loads.values()), len(loads), threshold)
    target = math.floor(band.average)
    take = {b: target - loads[b] for b in filled if b in loads and loads[b] < target}
    others = {b: v for b, v in loads.items() if b not in filled}
    give: dict[int, int] = {}
    _water_fill_give(others, give, sum(take.values()), band.lower)
    return Quotas(band, give, take, sum(take.values()))


def relay_quotas(loads: Mapping[int, int], band: Band) -> tuple[Quotas, frozenset[int], frozenset[int]]:
    """When no direct move from a broker above the band to one below is valid, units can go through an
    in-band broker: above -> in-band (up to the upper edge) and in-band -> below (down to the lower edge).
    Returns the widened quotas and the brokers above and below the band; a move must touch one of those
    (never in-band to in-band), so each unit costs at most one extra hop."""
    above = frozenset(b for b, load in loads.items() if load > band.upper)
    below = frozenset(b for b, load in loads.items() if load < band.lower)
    give = {b: loads[b] - band.upper for b in above}
    take = {b: band.lower - loads[b] for b in below}
    inside = [b for b in loads if b not in above and b not in below]
    if below:
        give.update({b: loads[b] - band.lower for b in inside if loads[b] > band.lower})
    if above:
        take.update({b: band.upper - loads[b] for b in inside if loads[b] < band.upper})
    needed = max(sum(give[b] for b in above), sum(take[b] for b in below))
    return Quotas(band, give, take, needed), above, below

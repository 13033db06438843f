"""Byte balance (`size_aware`): whole replicas from brokers above the byte band to those below, with byte
quotas in closed form, never pushing a broker out of the replica band or the byte band; exchanges where a
single move would (cheapest first: one that cancels a move of this plan costs nothing).
"""

from __future__ import annotations

from itertools import islice
from typing import Any

from reassignd.placement.assignment import Assignment
from reassignd.placement.balance import Band, balance_quotas
from reassignd.placement.goals import PlanRequest
from reassignd.placement.moves import Matcher, Matching
from reassignd.placement.roles import Progress, Roles, count_band
from reassignd.placement.rules import is_valid_move


def _byte_allow(state: Assignment, band: Band, replicas: Band) -> Any:
    """Never push a broker out of the byte band, nor out of the replica band."""

    def allow(g: int, r: int, p: int, w: float) -> bool:
        if state.bytes[g] - w < band.lower or state.bytes[r] + w > band.upper:
            return False
        gc, rc = state.count[g], state.count[r]
        return not (gc - 1 < replicas.lower <= gc or rc + 1 > replicas.upper >= rc)

    return allow


def byte_balance(
    state: Assignment, matcher: Matcher, roles: Roles, request: PlanRequest, progress: Progress
) -> None:
    """Whole replicas from brokers above the byte band to those below; byte quotas in closed form."""
    for _ in range(request.max_rounds):
        loads = {b: round(state.bytes[b]) for b in roles.members}
        q = balance_quotas(loads, request.byte_threshold)
        if not q.give or not q.take:
            return
        band = q.band
        replicas = count_band(state, roles, request.threshold)
        m = Matching(
            {b: float(v) for b, v in q.give.items()},
            {b: float(v) for b, v in q.take.items()},
            weight="bytes",
            allow=_byte_allow(state, band, replicas),
        )
        m.desired = _smaller_quota(m)
        progress.passes += 1
        # cheapest first: exchanges that cancel a move of this plan, then single moves, then exchanges
        moved = _byte_swaps(state, matcher, roles, band, undo_only=True)
        if not moved:
            moved = matcher.run(m)
        if not moved:
            moved = _byte_swaps(state, matcher, roles, band, undo_only=False)
        progress.swaps += moved
        if not moved:
            return
    progress.round_limit_hit = True


def _smaller_quota(m: Matching) -> Any:
    def desired(g: int, r: int) -> float:
        return min(m.give.get(g, 0.0), m.take.get(r, 0.0))

    return desired


SWAP_TRIES = 16


def _byte_swaps(state: Assignment, matcher: Matcher, roles: Roles, band: Band, *, undo_only: bool) -> int:
    """When a single move would push a broker out of the replica band, exchange replicas instead: a large
    one from a broker above the byte band for a small one from a broker below it, the difference bringing
    both toward the average. Replica counts do not change. The small one is first sought among the
    replicas this plan already moved from the heavy broker to the light one: sending it back cancels that
    move, so the exchange costs no extra move (a better choice of what the count goal moved)."""
    avg = band.average
    loads = state.bytes
    outside = [b for b in sorted(roles.members) if not band.contains(round(loads[b]))]
    if not outside:
        return 0
    pools = matcher.pools(dict.fromkeys(roles.members, 1.0), "bytes")
    moved: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for p, slot, source, destination in state.log:
        if state.rep[p, slot] == destination and state.data.replicas[p, slot] == source:
            moved.setdefault((source, destination), []).append((p, slot))
    made = 0
    for broker in outside:
        heavy = loads[broker] > avg

        def linked(b: int, broker: int = broker, heavy: bool = heavy) -> bool:
            return bool(moved.get((broker, b) if heavy else (b, broker)))

        for _ in range(SWAPS_PER_BROKER):  # until the broker is in the band or no exchange helps
            if band.contains(round(loads[broker])):
                break
            partners = sorted(
                (b for b in roles.members if (loads[b] < avg if heavy else loads[b] > avg)),
                key=lambda b: (
                    not linked(b),
                    matcher.domain.get(b) != matcher.domain.get(broker),
                    -abs(loads[b] - avg),
                    b,
                ),
            )
            swapped = False
            for partner in partners[:MAX_PARTNERS]:
                g, r = (broker, partner) if heavy else (partner, broker)
                wanted = min(loads[g] - avg, avg - loads[r])
                if wanted <= 0 or g not in pools or r not in pools:
                    continue
                back = sorted(moved.get((g, r), []), key=lambda ps: int(state.size[ps[0]]))
                if undo_only and not back:
                    continue
                swapped = _swap_once(
                    state,
                    matcher,
                    big=pools[g],
                    small=None if undo_only else pools[r],
                    g=g,
                    r=r,
                    wanted=wanted,
                    band=band,
                    back=back,
                )
                if swapped:
                    made += 1
                    break
            if not swapped:
                break
    return made


MAX_PARTNERS = 8

SWAPS_PER_BROKER = 64


def _swap_once(
    state: Assignment,
    matcher: Matcher,
    *,
    big: Any,
    small: Any,
    g: int,
    r: int,
    wanted: float,
    band: Band,
    back: list[tuple[int, int]],
) -> bool:
    """The first valid exchange: replicas moved g -> r by this plan first (sending one back is free), then
    r's smallest."""
    topology = matcher.topology
    undo = [(y, slot, float(state.size[y]), -1) for y, slot in back[:SWAP_TRIES]]
    fresh = (
        [(small.parts[j], small.slots[j], small.weights[j], j) for j in islice(small.around(0.0), SWAP_TRIES)]
        if small is not None
        else []
    )
    for y, y_slot, y_size, j in undo + fresh:
        if state.rep[y, y_slot] != r:
            continue
        for i in islice(big.around(y_size + wanted), SWAP_TRIES):
            x, x_slot, x_size = big.parts[i], big.slots[i], big.weights[i]
            delta = x_size - y_size
            if x == y or state.rep[x, x_slot] != g or not 0 < delta <= 2 * wanted:
                continue
            if state.bytes[r] + delta > band.upper or state.bytes[g] - delta < band.lower:
                continue
            xs, ys = state.replicas(x), state.replicas(y)
            if r in xs or g in ys or not state.fits(x, x_slot, r) or not state.fits(y, y_slot, g):
                continue
            if is_valid_move(xs, g, r, topology) and is_valid_move(ys, r, g, topology):
                state.move(x, x_slot, r)
                state.move(y, y_slot, g)
                big.use(i)
                if j >= 0:
                    small.use(j)
                return True
    return False

"""The replica goals: `drain`, `fill`, `replica-balance` / `cluster-balance`.

Quotas meet the lower bound on moves (placement/balance.py); among plans with that many moves the matcher
takes the smallest replicas, so the fewest bytes move (with `size_aware`, replicas sized toward each
broker's byte target instead). Modes, each kept while it makes progress: the cluster's quotas; relays
through in-band brokers when no direct move is valid (balance goals); per-data-centre quotas, first when
the spread pins every data centre's total (then the lower bound is theirs).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from reassignd.placement.assignment import Assignment
from reassignd.placement.balance import (
    Band,
    Quotas,
    balance_quotas,
    drain_quotas,
    fill_quotas,
    relay_quotas,
)
from reassignd.placement.goals import PlanRequest
from reassignd.placement.moves import Matcher, Matching
from reassignd.placement.roles import Progress, Roles, counts, movable_counts
from reassignd.placement.topology import Topology


def _byte_targets(state: Assignment, matcher: Matcher, roles: Roles) -> dict[int, float]:
    """Per member, the bytes it should end with: the average over the members (what the drained brokers
    hold included), or its data centre's average when the spread pins the data centres' totals."""
    members = roles.members
    if pinned(state, matcher, members | roles.drained):
        totals: dict[Any, float] = {}
        sizes: dict[Any, int] = {}
        for b in members | roles.drained:
            domain = matcher.domain.get(b)
            totals[domain] = totals.get(domain, 0.0) + state.bytes[b]
            sizes[domain] = sizes.get(domain, 0) + (b in members)
        return {b: totals[matcher.domain.get(b)] / max(1, sizes[matcher.domain.get(b)]) for b in members}
    total = sum(state.bytes[b] for b in members) + sum(state.bytes[b] for b in roles.drained)
    return dict.fromkeys(members, total / max(1, len(members)))


def _sized_desired(
    state: Assignment, matcher: Matcher, roles: Roles, m: Matching, *, giver_side: bool
) -> Any:
    """The replica size that brings the receiver (and, when `giver_side`, the giver) toward its byte
    target over the moves it still has to make; 0 (the smallest) when it is already there."""
    targets = _byte_targets(state, matcher, roles)

    def desired(g: int, r: int) -> float:
        slots = max(1.0, m.take.get(r, 1.0))
        wanted = max(0.0, targets.get(r, 0.0) - state.bytes[r]) / slots
        if giver_side and g in targets:
            shed = max(0.0, state.bytes[g] - targets[g]) / max(1.0, m.give.get(g, 1.0))
            wanted = min(wanted, shed)
        return wanted

    return desired


def replica_goal(
    state: Assignment, matcher: Matcher, roles: Roles, request: PlanRequest, progress: Progress
) -> None:
    if request.goal == "drain":
        _drain(state, matcher, roles, request, progress)
    elif request.goal == "fill":
        _fill(state, matcher, roles, request, progress)
    else:
        _balance(state, matcher, roles, request, progress)


def domains_of(matcher: Matcher, brokers: Any) -> dict[Any, list[int]]:
    out: dict[Any, list[int]] = {}
    for b in sorted(brokers):
        out.setdefault(matcher.domain.get(b), []).append(b)
    return out


def same_domain(matcher: Matcher) -> Any:
    def allow(g: int, r: int, p: int, w: float) -> bool:
        return matcher.domain.get(g) == matcher.domain.get(r)

    return allow


def _drain(
    state: Assignment, matcher: Matcher, roles: Roles, request: PlanRequest, progress: Progress
) -> None:
    """Modes: the cluster's drain quotas; the same per data centre (a replica can rarely leave its own);
    then anywhere valid (emptying the broker is the goal, the band is the report's business)."""
    progress.lower_bound = sum(movable_counts(state, roles.drained).values())
    passes = 0
    modes = ["cluster", "domain", "anywhere"]
    if pinned(state, matcher, roles.members | roles.drained):
        modes = ["domain", "cluster", "anywhere"]
    for mode in modes:
        while True:
            if passes >= request.max_rounds:
                progress.round_limit_hit = True
                return
            left = movable_counts(state, roles.drained)
            if not any(left.values()):
                return
            loads = counts(state, roles.members) | left
            give: dict[int, float] = {}
            take: dict[int, float] = {}
            allow = None
            if mode == "anywhere":
                give = {b: float(v) for b, v in left.items()}
                take = {b: float(sum(left.values())) for b in roles.members}
            elif mode == "domain":
                allow = same_domain(matcher)
                for group in domains_of(matcher, set(loads) | set(roles.drained)).values():
                    inside = {b: loads[b] for b in group if b in loads}
                    drained = set(left) & set(inside)
                    if drained and set(inside) - drained:
                        q = drain_quotas(inside, drained, request.threshold)
                        give.update(q.give)
                        take.update(q.take)
                # drained brokers outside any data centre with members (offline racks) go anywhere later
            else:
                q = drain_quotas(loads, set(left), request.threshold)
                give, take = (
                    {b: float(v) for b, v in q.give.items()},
                    {b: float(v) for b, v in q.take.items()},
                )
            m = Matching(give, take, allow=allow)
            m.desired = _sized_desired(state, matcher, roles, m, giver_side=False)
            moved = matcher.run(m)
            passes += 1
            progress.passes += 1
            if not moved:
                break


def _fill(
    state: Assignment, matcher: Matcher, roles: Roles, request: PlanRequest, progress: Progress
) -> None:
    """Modes: the cluster's fill quotas, then per data centre (its own average, when the spread pins it)."""
    modes = ["cluster", "domain"]
    start = counts(state, roles.members)
    if pinned(state, matcher, roles.members):
        modes.reverse()
        _, wanted, bounds = _fill_domain_quotas(matcher, roles, start, request.threshold)
        progress.lower_bound = sum(bounds.values())
    else:
        q = fill_quotas(start, roles.filled, request.threshold)
        wanted, progress.lower_bound = {b: float(t) for b, t in q.take.items()}, q.lower_bound
    progress.fill_targets = {b: start[b] + round(wanted.get(b, 0)) for b in roles.filled}
    passes = 0
    for mode in modes:
        while True:
            if passes >= request.max_rounds:
                progress.round_limit_hit = True
                return
            loads = counts(state, roles.members)
            give: dict[int, float] = {}
            take: dict[int, float] = {}
            allow = None
            if mode == "domain":
                allow = same_domain(matcher)
                give, take, _ = _fill_domain_quotas(matcher, roles, loads, request.threshold)
            else:
                q = fill_quotas(loads, roles.filled, request.threshold)
                give, take = (
                    {b: float(v) for b, v in q.give.items()},
                    {b: float(v) for b, v in q.take.items()},
                )
            if not give or not take:
                break
            m = Matching(give, take, allow=allow)
            if request.size_aware:
                m.desired = _sized_desired(state, matcher, roles, m, giver_side=True)
            moved = matcher.run(m)
            passes += 1
            progress.passes += 1
            if not moved:
                break


def _fill_domain_quotas(
    matcher: Matcher, roles: Roles, loads: dict[int, int], threshold: float
) -> tuple[dict[int, float], dict[int, float], dict[Any, int]]:
    give: dict[int, float] = {}
    take: dict[int, float] = {}
    bounds: dict[Any, int] = {}
    for domain, group in domains_of(matcher, loads).items():
        inside = {b: loads[b] for b in group}
        filled = roles.filled & set(inside)
        if filled and set(inside) - filled:
            q = fill_quotas(inside, filled, threshold)
            give.update(q.give)
            take.update(q.take)
            bounds[domain] = q.lower_bound
    return give, take, bounds


def _has_domains(topology: Topology, members: frozenset[int]) -> bool:
    domains = [topology.top_level(b) for b in members if b in topology]
    return len(set(domains)) < len(domains)


def pinned(state: Assignment, matcher: Matcher, members: frozenset[int]) -> bool:
    """Whether the spread pins every data centre's replica total: each movable partition holds the same
    number of replicas in every top-level domain of the members, so moving a replica to another domain
    would leave the destination's side holding more than the source's (never valid). The lower bound is
    then per domain."""
    domains = sorted({matcher.domain[b] for b in members if b in matcher.domain})
    if len(domains) < 2 or len(domains) == len(members):
        return False
    index = {d: i for i, d in enumerate(domains)}
    ids = np.array(state.brokers, dtype=np.int64)
    table = np.array([index.get(matcher.domain.get(b, ()), -1) for b in state.brokers], dtype=np.int64)
    rows = state.rep[state.movable]
    if len(rows) == 0:
        return False
    position = np.clip(np.searchsorted(ids, rows), 0, len(ids) - 1)
    tagged = np.where((rows >= 0) & (ids[position] == rows), table[position], -1)
    per_domain = np.stack([(tagged == i).sum(axis=1) for i in range(len(domains))], axis=1)
    return bool((per_domain.min(axis=1) == per_domain.max(axis=1)).all() and per_domain.min() > 0)


def _domain_quotas(state: Assignment, matcher: Matcher, roles: Roles, band: Band, threshold: float) -> Quotas:
    """Per data centre, under the cluster's band, or the data centre's own average when the spread pins
    its total outside the cluster's band. The lower bound is the sum of the data centres' own."""
    give: dict[int, int] = {}
    take: dict[int, int] = {}
    bound = 0
    for group in domains_of(matcher, roles.members).values():
        loads = {b: round(state.count[b]) for b in group}
        own = Band.around(sum(loads.values()), len(loads), threshold)
        q = balance_quotas(loads, threshold, band if band.contains(round(own.average)) else own)
        give.update(q.give)
        take.update(q.take)
        bound += q.lower_bound
    return Quotas(band, give, take, bound)


def _relay_allow(above: frozenset[int], below: frozenset[int]) -> Any:
    """A relay move must leave a broker above the band or reach one below it (never in-band to in-band)."""

    def allow(g: int, r: int, p: int, w: float) -> bool:
        return g in above or r in below

    return allow


def _balance(
    state: Assignment, matcher: Matcher, roles: Roles, request: PlanRequest, progress: Progress
) -> None:
    start = counts(state, roles.members)
    if pinned(state, matcher, roles.members):
        modes = ["domain", "cluster", "relay"]
        band = Band.around(sum(start.values()), len(start), request.threshold)
        progress.lower_bound = _domain_quotas(state, matcher, roles, band, request.threshold).lower_bound
    else:
        modes = (
            ["cluster", "relay", "domain"]
            if _has_domains(matcher.topology, roles.members)
            else ["cluster", "relay"]
        )
        progress.lower_bound = balance_quotas(start, request.threshold).lower_bound
    mode = 0
    passes = 0
    while mode < len(modes):
        if passes >= request.max_rounds:
            progress.round_limit_hit = True
            return
        loads = counts(state, roles.members)
        band = Band.around(sum(loads.values()), len(loads), request.threshold)
        name = modes[mode]
        m: Matching
        if name == "relay":
            q, above, below = relay_quotas(loads, band)
            m = Matching(dict(q.give), dict(q.take), allow=_relay_allow(above, below))
        elif name == "domain":
            q = _domain_quotas(state, matcher, roles, band, request.threshold)
            m = Matching(dict(q.give), dict(q.take), allow=same_domain(matcher))
        else:
            q = balance_quotas(loads, request.threshold)
            m = Matching(dict(q.give), dict(q.take))
        if all(band.contains(v) for v in loads.values()):
            return
        if not q.give or not q.take or not q.lower_bound:
            mode += 1
            continue
        if request.size_aware:
            m.desired = _sized_desired(state, matcher, roles, m, giver_side=True)
        moved = matcher.run(m)
        passes += 1
        progress.passes += 1
        if name == "relay":
            progress.relay_moves += moved
        if not moved:
            mode += 1


# --- bytes -------------------------------------------------------------------------------------------

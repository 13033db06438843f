"""One cluster's plan: the hard goals first, then the requested balance, then preferred leaders.

1. **Hard capacity goals** (with a capacity file): brokers above disk / network-in / network-out limits
   shed load (network out first by handing preferred leadership to followers) to brokers with headroom.
2. **Replica goals**: `drain` moves everything movable off the drained brokers; `fill` brings the filled
   brokers to the average; `replica-balance` / `cluster-balance` bring every member into the band. Quotas
   meet the lower bound on moves (placement/balance.py); among plans with that many moves the matcher takes
   the smallest replicas, so the fewest bytes move. Modes, each kept while it makes progress: the cluster's
   quotas; relays through in-band brokers when no direct move is valid; per-domain quotas when the spread
   pins a data centre's total.
3. **Bytes** (`size_aware`): count moves pick replicas sized to bring both brokers to the byte average,
   then byte quotas (closed form) move whole replicas from brokers above the byte band to those below,
   never pushing a broker out of the replica band or the byte band. A drain only sizes where its
   replicas go: it moves nothing else.
4. **Preferred leaders** (placement/leaders.py).

Every move is valid by the placement rules (rack spread never worse) and fits the receiver's hard limits;
no broker outside the members (excluded, drained, offline, or not in `brokers`) ever receives anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import numpy as np

from reassignd.model import InvalidInputError, Problem
from reassignd.placement.assignment import Assignment, BoolArray, ClusterInput
from reassignd.placement.balance import (
    Band,
    Quotas,
    balance_quotas,
    drain_quotas,
    fill_quotas,
    relay_quotas,
)
from reassignd.placement.figures import outcome_figures
from reassignd.placement.goals import PlanRequest
from reassignd.placement.leaders import balance_leaders
from reassignd.placement.moves import Matcher, Matching
from reassignd.placement.rules import is_valid_move
from reassignd.placement.topology import Topology, leaf_of, node_name


@dataclass
class Roles:
    """Who may give and receive in this plan."""

    online: frozenset[int]
    members: frozenset[int]  # in the band; the only brokers that ever receive
    drained: frozenset[int] = frozenset()
    filled: frozenset[int] = frozenset()
    excluded: frozenset[int] = frozenset()

    def role(self, broker: int) -> str:
        if broker in self.drained:
            return "drained"
        if broker in self.excluded:
            return "excluded"
        if broker not in self.online:
            return "offline"
        if broker in self.filled:
            return "filled"
        return "member" if broker in self.members else "not in --brokers"


@dataclass
class Progress:
    lower_bound: int = 0
    bytes_lower_bound: int = 0
    relay_moves: int = 0
    passes: int = 0
    round_limit_hit: bool = False
    leader_changes: int = 0
    swaps: int = 0
    fill_targets: dict[int, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass
class ClusterResult:
    cluster: str
    targets: dict[tuple[str, int], tuple[int, ...]]
    figures: dict[str, Any]
    brokers: list[dict[str, Any]]


def roles_for(data: ClusterInput, request: PlanRequest) -> Roles:
    known = set(data.racks)
    listed, excluded = set(request.brokers), set(request.exclude_brokers)
    where = f"cluster {data.name}"
    problems = []
    for name, ids in (("brokers", listed), ("exclude_brokers", excluded)):
        unknown = sorted(ids - known)
        if unknown:
            problems.append(Problem(where, name, f"unknown broker id(s) {unknown}"))
    online = frozenset(data.online)
    drained = filled = frozenset[int]()
    if request.goal == "drain":
        drained = frozenset(listed & known)
        members = online - drained - excluded
    elif request.goal == "fill":
        filled = frozenset(listed & online)
        members = online - excluded
    else:
        members = (online & listed if listed else online) - excluded
    if not members:
        problems.append(Problem(where, "brokers", "no eligible online broker is left"))
    if problems:
        raise InvalidInputError("plan request", problems)
    return Roles(online, frozenset(members), drained, filled, frozenset(excluded & known))


def movable_partitions(data: ClusterInput, request: PlanRequest) -> BoolArray:
    selected = request.topic_filter()
    topics = sorted(set(data.topics))
    chosen = {t for t in topics if selected(t)}
    by_topic = np.array([t in chosen for t in data.topics], dtype=np.bool_)
    return by_topic & ~data.reassigning & (data.replicas[:, 0] >= 0)


def optimise(data: ClusterInput, request: PlanRequest) -> ClusterResult:
    request.check()
    roles = roles_for(data, request)
    movable = movable_partitions(data, request)
    state = Assignment(data, movable, request.capacities)
    racks = {b: data.racks.get(b) for b in roles.online - roles.drained}
    topology = Topology.from_racks(racks)
    matcher = Matcher(state, topology, roles.members, request.seed)
    progress = Progress()
    before = _snapshot_loads(state, data)
    if state.limits:
        _hard_capacity(state, matcher, roles, request, progress)
    if request.size_aware:
        start = {b: round(state.bytes[b]) for b in roles.members}
        progress.bytes_lower_bound = balance_quotas(start, request.byte_threshold).lower_bound
    if request.moves_replicas:
        _replica_goal(state, matcher, roles, request, progress)
        if request.size_aware and request.goal != "drain":  # a drain sizes where it sends, moves no more
            _byte_balance(state, matcher, roles, request, progress)
    if request.balances_leaders:
        progress.leader_changes = balance_leaders(
            state, roles.members, request.leader_threshold, seed=request.seed, max_rounds=request.max_rounds
        )
    targets = {
        (data.topics[p], int(data.numbers[p])): state.replicas(p)
        for p in sorted(state.changed)
        if state.replicas(p) != tuple(int(b) for b in data.replicas[p, : state.rf[p]])
    }
    figures, brokers = outcome_figures(
        data,
        state=state,
        topology=topology,
        roles=roles,
        request=request,
        progress=progress,
        before=before,
        targets=targets,
        domains=_domains(data),
    )
    return ClusterResult(data.name, targets, figures, brokers)


def _domains(data: ClusterInput) -> dict[int, str]:
    return {b: node_name(leaf_of(b, r)[:1]) for b, r in data.racks.items()}


def _snapshot_loads(state: Assignment, data: ClusterInput) -> dict[str, dict[int, float]]:
    leaders = dict.fromkeys(state.brokers, 0.0)
    for b in data.leaders[data.leaders >= 0].tolist():
        leaders[int(b)] = leaders.get(int(b), 0.0) + 1
    return {
        "replicas": dict(state.count),
        "leaders": leaders,
        "preferred_leaders": dict(state.lead),
        "bytes": dict(state.bytes),
        "network_in": dict(state.nw_in),
        "network_out": dict(state.nw_out),
    }


def counts(state: Assignment, brokers: frozenset[int] | set[int]) -> dict[int, int]:
    return {b: round(state.count[b]) for b in brokers}


def _movable_counts(state: Assignment, brokers: frozenset[int]) -> dict[int, int]:
    rows = state.rep[state.movable]
    return {b: int((rows == b).sum()) for b in brokers}


# --- hard goals --------------------------------------------------------------------------------------


def _hard_capacity(
    state: Assignment, matcher: Matcher, roles: Roles, request: PlanRequest, progress: Progress
) -> None:
    """Shed load from brokers over a hard limit onto members with headroom; never onto a broker it would
    push over any limit (Assignment.fits)."""
    for resource, weight in (("disk", "bytes"), ("network_in", "network_in"), ("network_out", "leader_out")):
        limits = state.limits.get(resource)
        if limits is None:
            continue
        for _ in range(request.max_rounds):
            over = {b: e for b, e in state.over_limit(resource).items() if b in roles.online}
            if not over:
                break
            if resource == "network_out":
                _shed_leadership(state, over, roles)
                over = {b: e for b, e in state.over_limit(resource).items() if b in roles.online}
                if not over:
                    break
            loads = state.load_of(resource)
            headroom = {b: limits[b] - loads[b] for b in roles.members if limits[b] > loads[b]}
            give, take = dict(over), headroom

            def desired(
                g: int, r: int, give: dict[int, float] = give, take: dict[int, float] = take
            ) -> float:
                return min(give.get(g, 0.0), take.get(r, 0.0))

            moved = matcher.run(Matching(give, take, weight=weight, desired=desired))
            progress.passes += 1
            if not moved:
                break


def _shed_leadership(state: Assignment, over: dict[int, float], roles: Roles) -> None:
    eligible = np.flatnonzero(state.movable & (state.rf > 1) & np.isin(state.rep[:, 0], list(over)))
    order = eligible[np.argsort(-state.produce[eligible], kind="stable")]
    limits = state.limits["network_out"]
    for p in order.tolist():
        leader = int(state.rep[p, 0])
        if state.nw_out[leader] <= limits[leader]:
            continue
        for slot, follower in enumerate(state.replicas(p)[1:], start=1):
            if follower in roles.members and state.leads_fit(p, follower):
                state.make_leader(p, slot)
                break


# --- replica goals -----------------------------------------------------------------------------------


def _count_band(state: Assignment, roles: Roles, threshold: float) -> Band:
    loads = counts(state, roles.members)
    return Band.around(sum(loads.values()), len(loads), threshold)


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


def _replica_goal(
    state: Assignment, matcher: Matcher, roles: Roles, request: PlanRequest, progress: Progress
) -> None:
    if request.goal == "drain":
        _drain(state, matcher, roles, request, progress)
    elif request.goal == "fill":
        _fill(state, matcher, roles, request, progress)
    else:
        _balance(state, matcher, roles, request, progress)


def _domains_of(matcher: Matcher, brokers: Any) -> dict[Any, list[int]]:
    out: dict[Any, list[int]] = {}
    for b in sorted(brokers):
        out.setdefault(matcher.domain.get(b), []).append(b)
    return out


def _same_domain(matcher: Matcher) -> Any:
    def allow(g: int, r: int, p: int, w: float) -> bool:
        return matcher.domain.get(g) == matcher.domain.get(r)

    return allow


def _drain(
    state: Assignment, matcher: Matcher, roles: Roles, request: PlanRequest, progress: Progress
) -> None:
    """Modes: the cluster's drain quotas; the same per data centre (a replica can rarely leave its own);
    then anywhere valid (emptying the broker is the goal, the band is the report's business)."""
    progress.lower_bound = sum(_movable_counts(state, roles.drained).values())
    passes = 0
    modes = ["cluster", "domain", "anywhere"]
    if pinned(state, matcher, roles.members | roles.drained):
        modes = ["domain", "cluster", "anywhere"]
    for mode in modes:
        while True:
            if passes >= request.max_rounds:
                progress.round_limit_hit = True
                return
            left = _movable_counts(state, roles.drained)
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
                allow = _same_domain(matcher)
                for group in _domains_of(matcher, set(loads) | set(roles.drained)).values():
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
                allow = _same_domain(matcher)
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
    for domain, group in _domains_of(matcher, loads).items():
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
    for group in _domains_of(matcher, roles.members).values():
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


def _byte_allow(state: Assignment, band: Band, count_band: Band) -> Any:
    """Never push a broker out of the byte band, nor out of the replica band."""

    def allow(g: int, r: int, p: int, w: float) -> bool:
        if state.bytes[g] - w < band.lower or state.bytes[r] + w > band.upper:
            return False
        gc, rc = state.count[g], state.count[r]
        return not (gc - 1 < count_band.lower <= gc or rc + 1 > count_band.upper >= rc)

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
            m = Matching(dict(q.give), dict(q.take), allow=_same_domain(matcher))
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


def _byte_balance(
    state: Assignment, matcher: Matcher, roles: Roles, request: PlanRequest, progress: Progress
) -> None:
    """Whole replicas from brokers above the byte band to those below; byte quotas in closed form."""
    for _ in range(request.max_rounds):
        loads = {b: round(state.bytes[b]) for b in roles.members}
        q = balance_quotas(loads, request.byte_threshold)
        if not q.give or not q.take:
            return
        band = q.band
        count_band = _count_band(state, roles, request.threshold)
        m = Matching(
            {b: float(v) for b, v in q.give.items()},
            {b: float(v) for b, v in q.take.items()},
            weight="bytes",
            allow=_byte_allow(state, band, count_band),
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

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

from dataclasses import dataclass
from typing import Any

import numpy as np

from reassignd.placement.assignment import Assignment, ClusterInput
from reassignd.placement.balance import balance_quotas
from reassignd.placement.byte_goal import byte_balance
from reassignd.placement.figures import outcome_figures
from reassignd.placement.goals import PlanRequest
from reassignd.placement.leaders import balance_leaders
from reassignd.placement.moves import Matcher, Matching
from reassignd.placement.replica_goals import replica_goal
from reassignd.placement.roles import Progress, Roles, movable_partitions, roles_for
from reassignd.placement.topology import Topology, leaf_of, node_name

__all__ = ["ClusterResult", "Progress", "Roles", "optimise", "roles_for"]


@dataclass
class ClusterResult:
    cluster: str
    targets: dict[tuple[str, int], tuple[int, ...]]
    figures: dict[str, Any]
    brokers: list[dict[str, Any]]


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
        replica_goal(state, matcher, roles, request, progress)
        if request.size_aware and request.goal != "drain":  # a drain sizes where it sends, moves no more
            byte_balance(state, matcher, roles, request, progress)
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

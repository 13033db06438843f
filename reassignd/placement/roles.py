"""Who may give and receive in a plan, what may move, and what the plan did: the state every goal shares.

Members are the brokers in the band: online, in `brokers` for a balance goal, not excluded, not drained;
they are the only brokers that ever receive a replica or a preferred leadership.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from reassignd.model import InvalidInputError, Problem
from reassignd.placement.assignment import Assignment, BoolArray, ClusterInput
from reassignd.placement.balance import Band
from reassignd.placement.goals import PlanRequest


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


def counts(state: Assignment, brokers: frozenset[int] | set[int]) -> dict[int, int]:
    return {b: round(state.count[b]) for b in brokers}


def movable_counts(state: Assignment, brokers: frozenset[int]) -> dict[int, int]:
    rows = state.rep[state.movable]
    return {b: int((rows == b).sum()) for b in brokers}


# --- hard goals --------------------------------------------------------------------------------------


def count_band(state: Assignment, roles: Roles, threshold: float) -> Band:
    loads = counts(state, roles.members)
    return Band.around(sum(loads.values()), len(loads), threshold)

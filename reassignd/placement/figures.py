"""The plan's report for one cluster: what moved, against which lower bound, the balance before and after,
and every goal with whether it held. `stopped` says "within threshold" only when every goal the request
asked for holds on the final loads (never while a member is outside its band).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from reassignd.placement.assignment import Assignment, ClusterInput, IntArray
from reassignd.placement.balance import outside_band
from reassignd.placement.goals import PlanRequest
from reassignd.placement.rules import spread_violations
from reassignd.placement.state import balance_score
from reassignd.placement.topology import Topology

if TYPE_CHECKING:
    from reassignd.placement.roles import Progress, Roles

LOADS = ("replicas", "leaders", "preferred_leaders", "bytes", "network_in", "network_out")


def spread_violation_count(rows: IntArray, topology: Topology) -> int:
    """Partitions (rows of broker ids, -1 padded) whose spread is uneven. Rows with one replica per
    top-level domain cannot be uneven and are settled in numpy; the rest go through the rules."""
    if len(rows) == 0:
        return 0
    brokers = sorted(topology.leaves)
    if not brokers:
        return 0
    tops: dict[Any, int] = {}
    table = np.array([tops.setdefault(topology.top_level(b), len(tops)) for b in brokers], dtype=np.int64)
    ids = np.array(brokers, dtype=np.int64)
    position = np.clip(np.searchsorted(ids, rows), 0, len(ids) - 1)
    domain = np.where((rows >= 0) & (ids[position] == rows), table[position], -1)
    clash = np.zeros(len(rows), dtype=np.bool_)
    width = rows.shape[1]
    for i in range(width):
        for j in range(i + 1, width):
            clash |= (domain[:, i] >= 0) & (domain[:, i] == domain[:, j])
    count = 0
    for row in rows[clash].tolist():
        if spread_violations([b for b in row if b >= 0], topology):
            count += 1
    return count


def _loads_after(state: Assignment) -> dict[str, dict[int, float]]:
    return {
        "replicas": state.count,
        "leaders": state.lead,  # after a preferred-leader election
        "preferred_leaders": state.lead,
        "bytes": state.bytes,
        "network_in": state.nw_in,
        "network_out": state.nw_out,
    }


def _ints(loads: Mapping[int, float], brokers: frozenset[int]) -> dict[int, int]:
    return {b: round(loads.get(b, 0.0)) for b in brokers}


def _band_goal(
    name: str, loads: Mapping[int, int], threshold: float, *, asked: bool = True, only: Any = None
) -> dict[str, Any]:
    """Whether every broker (or every one of `only`) lies in the band over `loads`."""
    band, outside = outside_band(loads, threshold)
    if only is not None:
        outside = [b for b in outside if b in only]
    return {
        "goal": name,
        "hard": False,
        "asked": asked,
        "held": not outside,
        "band": [band.lower, band.upper],
        "outside_band": outside[:50],
        "detail": f"{len(outside)} broker(s) outside [{band.lower}, {band.upper}]",
    }


def _goals(
    state: Assignment,
    *,
    roles: Roles,
    request: PlanRequest,
    progress: Progress,
    before: Mapping[str, Mapping[int, float]],
    spread: tuple[int, int],
) -> list[dict[str, Any]]:
    goals: list[dict[str, Any]] = [
        {
            "goal": "rack-spread",
            "hard": True,
            "asked": True,
            "held": spread[1] <= spread[0],
            "detail": f"partitions with an uneven spread {spread[0]} -> {spread[1]}",
        }
    ]
    for resource, limits in state.limits.items():
        loads_before = before[{"disk": "bytes"}.get(resource, resource)]
        loads_after = state.load_of(resource)
        online = [b for b in state.brokers if b in roles.online and limits[b] != float("inf")]
        over_before = [b for b in online if loads_before[b] > limits[b] + 1e-9]
        over_after = [b for b in online if loads_after[b] > limits[b] + 1e-9]
        peak = max((loads_after[b] / limits[b] for b in online if limits[b] > 0), default=0.0)
        goals.append(
            {
                "goal": f"{resource.replace('_', '-')}-capacity",
                "hard": True,
                "asked": True,
                "held": not over_after,
                "over_limit_before": over_before[:50],
                "over_limit_after": over_after[:50],
                "peak_share_of_limit": round(peak, 4),
                "detail": f"brokers over the limit {len(over_before)} -> {len(over_after)}"
                + ("" if not over_after else " (no valid move with headroom for the rest)"),
            }
        )
    members = roles.members
    if request.goal == "drain":
        left = {b: round(state.count[b]) for b in roles.drained}
        unmovable = {b: int(((state.rep == b) & ~state.movable[:, None]).sum()) for b in roles.drained}
        goals.append(
            {
                "goal": "drain",
                "hard": False,
                "asked": True,
                "held": not any(left.values()),
                "remaining": {str(b): v for b, v in left.items() if v},
                "detail": "drained brokers hold "
                + (", ".join(f"{b}: {v}" for b, v in left.items() if v) or "nothing")
                + (
                    f" ({sum(unmovable.values())} replica(s) of excluded or reassigning partitions)"
                    if any(unmovable.values())
                    else ""
                ),
            }
        )
    elif request.goal == "fill":
        short = {b: t - round(state.count[b]) for b, t in progress.fill_targets.items() if state.count[b] < t}
        goals.append(
            {
                "goal": "fill",
                "hard": False,
                "asked": True,
                "held": not short,
                "targets": {str(b): t for b, t in progress.fill_targets.items()},
                "detail": "filled brokers reached their targets"
                if not short
                else "short of the target: "
                + ", ".join(f"broker {b} by {n}" for b, n in sorted(short.items())),
            }
        )
    elif request.moves_replicas:
        goals.append(_band_goal("replica-balance", _ints(state.count, members), request.threshold))
    if request.size_aware and request.moves_replicas:
        goals.append(
            _band_goal(
                "byte-balance",
                _ints(state.bytes, members),
                request.byte_threshold,
                asked=request.goal != "drain",
            )
        )
    if request.balances_leaders:
        # fill balances leaders by default, best effort: reported, not what the plan is judged by unless asked
        goals.append(
            _band_goal(
                "leader-balance",
                _ints(state.lead, members),
                request.leader_threshold,
                asked=request.leaders_asked,
            )
        )
    return goals


def outcome_figures(
    data: ClusterInput,
    *,
    state: Assignment,
    topology: Topology,
    roles: Roles,
    request: PlanRequest,
    progress: Progress,
    before: Mapping[str, Mapping[int, float]],
    targets: Mapping[tuple[str, int], tuple[int, ...]],
    domains: Mapping[int, str],
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    changed = sorted(state.changed)
    original = data.replicas[changed] if changed else np.empty((0, state.width), dtype=np.int64)
    moved = moved_bytes = leader_changes = 0
    for row, p in zip(original.tolist(), changed, strict=True):
        old = [b for b in row if b >= 0]
        new = state.replicas(p)
        added = len(set(new) - set(old))
        moved += added
        moved_bytes += added * int(state.size[p])
        leader_changes += new[0] != old[0]
    spread_before = spread_violation_count(data.replicas, topology)
    spread_after = spread_before
    if changed:
        spread_after += spread_violation_count(state.rep[changed], topology) - spread_violation_count(
            original, topology
        )
    goals = _goals(
        state,
        roles=roles,
        request=request,
        progress=progress,
        before=before,
        spread=(spread_before, spread_after),
    )
    asked = [g for g in goals if g["asked"] and not g["hard"]]
    held = all(g["held"] for g in goals)
    if all(g["held"] for g in asked):
        stopped = "within threshold"
    elif progress.round_limit_hit:
        stopped = f"round limit ({request.max_rounds})"
    else:
        stopped = "no further valid move"
    after = _loads_after(state)
    members = roles.members

    def scores(loads: Mapping[str, Mapping[int, float]]) -> dict[str, Any]:
        return {
            name: balance_score(
                _ints(loads[name], members),
                {"bytes": request.byte_threshold}.get(
                    name, request.leader_threshold if "leader" in name else request.threshold
                ),
            )
            for name in ("replicas", "preferred_leaders", "leaders", "bytes")
        }

    figures: dict[str, Any] = {
        "cluster": data.name,
        "goal": request.goal,
        "threshold": request.threshold,
        "byte_threshold": request.byte_threshold,
        "size_aware": request.size_aware,
        "brokers": len(data.racks),
        "eligible_brokers": len(members),
        "partitions": data.partitions,
        "movable_partitions": int(state.movable.sum()),
        "partitions_changed": len(targets),
        "replicas_moved": moved,
        "bytes_moved": moved_bytes,
        "preferred_leader_changes": leader_changes,
        "lower_bound": progress.lower_bound,
        "lower_bound_unit": "replicas",
        "moves_over_lower_bound": round(moved / progress.lower_bound, 4) if progress.lower_bound else None,
        "relay_moves": progress.relay_moves,
        "rounds": progress.passes,
        "stopped": stopped,
        "goals_held": held,
        "asked_goals_held": all(g["held"] for g in goals if g["asked"]),
        "goals": goals,
        "spread_violations": {"before": spread_before, "after": spread_after},
        "scores_before": scores(before),
        "scores_after": scores(after),
        "excluded_brokers": sorted(roles.excluded),
        "drained_brokers": sorted(roles.drained),
        "filled_brokers": sorted(roles.filled),
        "topics": request.topics,
        "exclude_topics": request.exclude_topics,
    }
    if request.size_aware:
        figures["bytes_lower_bound"] = progress.bytes_lower_bound
    brokers = [
        {
            "broker": b,
            "rack": data.racks.get(b),
            "domain": domains.get(b),
            "role": roles.role(b),
            **{name: [round(before[name].get(b, 0.0)), round(after[name].get(b, 0.0))] for name in LOADS},
        }
        for b in state.brokers
    ]
    return figures, brokers

"""`show-cluster-state` figures from a snapshot: per-broker load, rack-spread violations, balance scores."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from reassignd.model import ClusterSnapshot
from reassignd.placement.balance import Band
from reassignd.placement.rules import spread_violations
from reassignd.placement.topology import Topology


def balance_score(loads: Mapping[int, int], threshold: float) -> dict[str, Any]:
    """Spread of a load over brokers: coefficient of variation, max/avg and brokers outside the band."""
    values = list(loads.values())
    if not values:
        return {"average": 0.0, "cv": 0.0, "max_over_avg": 0.0, "outside_band": 0}
    band = Band.around(sum(values), len(values), threshold)
    avg = band.average
    return {
        "average": round(avg, 3),
        "min": min(values),
        "max": max(values),
        "cv": round(statistics.pstdev(values) / avg, 4) if avg else 0.0,
        "max_over_avg": round(max(values) / avg, 4) if avg else 0.0,
        "band": [band.lower, band.upper],
        "outside_band": sum(1 for v in values if not band.contains(v)),
    }


def cluster_state(
    snapshot: ClusterSnapshot, threshold: float = 0.10, max_violations: int = 50
) -> dict[str, Any]:
    brokers = sorted(snapshot.brokers)
    replicas = dict.fromkeys(brokers, 0)
    leaders = dict.fromkeys(brokers, 0)
    preferred = dict.fromkeys(brokers, 0)
    size = dict.fromkeys(brokers, 0)
    topology = Topology.from_brokers(b for b in snapshot.brokers.values() if b.online)
    violating: list[dict[str, Any]] = []
    violation_count = 0
    for tp in sorted(snapshot.partitions):
        p = snapshot.partitions[tp]
        target = p.target_replicas
        for broker in target:
            replicas[broker] = replicas.get(broker, 0) + 1
            size[broker] = size.get(broker, 0) + p.replica_sizes.get(broker, p.size_bytes)
        if p.has_leader:
            leaders[p.leader] = leaders.get(p.leader, 0) + 1
        if target:
            preferred[target[0]] = preferred.get(target[0], 0) + 1
        found = spread_violations(target, topology)
        if found:
            violation_count += 1
            if len(violating) < max_violations:
                violating.append(
                    {
                        "topic": tp.topic,
                        "partition": tp.partition,
                        "replicas": list(target),
                        "violations": [str(v) for v in found],
                    }
                )
    online = snapshot.online_broker_ids()
    per_broker = [
        {
            "broker": b,
            "rack": snapshot.brokers[b].rack,
            "online": b in online,
            "replicas": replicas[b],
            "leaders": leaders[b],
            "preferred_leaders": preferred[b],
            "bytes": size[b],
        }
        for b in brokers
    ]

    def online_loads(counts: Mapping[int, int]) -> dict[int, int]:
        return {b: counts[b] for b in brokers if b in online}

    return {
        "cluster_id": snapshot.cluster_id,
        "brokers": per_broker,
        "partitions": len(snapshot.partitions),
        "spread_violations": {"partitions": violation_count, "examples": violating},
        "scores": {
            "replicas": balance_score(online_loads(replicas), threshold),
            "leaders": balance_score(online_loads(leaders), threshold),
            "preferred_leaders": balance_score(online_loads(preferred), threshold),
            "bytes": balance_score(online_loads(size), threshold),
        },
    }

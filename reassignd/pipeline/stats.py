"""Statistics over the assignment DataFrame: per-broker load and rack-spread violations (pure rules)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reassignd.placement.rules import spread_violations
from reassignd.placement.topology import Topology

LOAD_COLUMNS = ["replicas", "leaders", "preferred_leaders", "bytes"]


def broker_loads(parts: Any, brokers: Any, column: str = "replicas", *, leader_is_preferred: bool) -> Any:
    """pandas frame (cluster, broker, replicas, leaders, preferred_leaders, bytes) for every broker.

    Before a plan `leaders` is the reported leader; after it, the preferred leader (what a preferred
    leader election yields), which is the point of leader-balance.
    """
    from pyspark.sql import functions as F

    leader = F.element_at(column, 1) if leader_is_preferred else F.col("leader")
    per_replica = parts.select(
        "cluster", "size_bytes", leader.alias("lead"), F.posexplode(column).alias("pos", "broker")
    )
    loads = per_replica.groupBy("cluster", "broker").agg(
        F.count("*").alias("replicas"),
        F.sum("size_bytes").alias("bytes"),
        F.sum((F.col("pos") == 0).cast("long")).alias("preferred_leaders"),
        F.sum((F.col("lead") == F.col("broker")).cast("long")).alias("leaders"),
    )
    joined = (
        brokers.select("cluster", "broker")
        .join(loads, ["cluster", "broker"], "left")
        .fillna(0, subset=LOAD_COLUMNS)
    )
    return joined.orderBy("cluster", "broker").toPandas()


def spread_violation_counts(
    parts: Any, racks: Mapping[str, Mapping[int, str | None]]
) -> dict[str, tuple[int, int]]:
    """Per cluster: partitions whose spread is uneven before and after (the rules' own definition)."""
    from pyspark.sql import functions as F

    frozen = {c: dict(r) for c, r in racks.items()}

    def count(batches: Any) -> Any:
        import pandas as pd

        topologies: dict[str, Topology] = {}
        totals: dict[str, list[int]] = {}
        for pdf in batches:
            for cluster, before, after in zip(
                pdf["cluster"].tolist(), pdf["original"].tolist(), pdf["replicas"].tolist(), strict=True
            ):
                topology = topologies.get(cluster)
                if topology is None:
                    topology = topologies[cluster] = Topology.from_racks(frozen[cluster])
                tally = totals.setdefault(cluster, [0, 0])
                old = [int(r) for r in before]
                new = [int(r) for r in after]
                bad_before = bool(spread_violations(old, topology))
                tally[0] += bad_before
                tally[1] += (
                    bad_before if sorted(old) == sorted(new) else bool(spread_violations(new, topology))
                )
        yield pd.DataFrame(
            [(c, t[0], t[1]) for c, t in totals.items()], columns=["cluster", "before", "after"]
        )

    counted = parts.select("cluster", "original", "replicas").mapInPandas(
        count, "cluster STRING, before LONG, after LONG"
    )
    rows = counted.groupBy("cluster").agg(F.sum("before").alias("b"), F.sum("after").alias("a")).collect()
    return {r["cluster"]: (int(r["b"]), int(r["a"])) for r in rows}

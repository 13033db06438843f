"""One round of moves, set-based: candidates chosen with joins and window functions, then matched to
receivers inside groups (applyInPandas) where the pure placement rules decide what a valid move is.

Each round reads the current assignment DataFrame and returns the accepted moves; the caller applies them
and recomputes quotas. Everything is seeded and tie-broken on (hash, topic, partition), so the same input
always yields the same plan.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reassignd.placement.balance import Quotas
from reassignd.placement.rules import is_valid_move
from reassignd.placement.topology import Topology

GLOBAL = "*"
MAX_TRIES = 64
OVERSAMPLE = 1.25
MOVE_SCHEMA = "cluster STRING, topic STRING, partition INT, source INT, destination INT, size_bytes BIGINT"
LEADER_SCHEMA = "cluster STRING, topic STRING, partition INT, source INT, new_replicas ARRAY<INT>"


@dataclass(frozen=True)
class RoundInput:
    """Per cluster: broker racks of the eligible brokers, each broker's domain, and this round's quotas."""

    racks: Mapping[str, Mapping[int, str | None]]
    domains: Mapping[str, Mapping[int, str]]
    quotas: Mapping[str, Quotas]
    # relay rounds: (above the band, below the band); a move must leave the first or reach the second
    relay: Mapping[str, tuple[frozenset[int], frozenset[int]]] | None = None


def _givers_frame(
    spark: Any, data: RoundInput, loads: Mapping[str, Mapping[int, int]], domain_mode: bool
) -> Any:
    rows = []
    for cluster, quotas in data.quotas.items():
        for broker, give in quotas.give.items():
            if give <= 0:
                continue
            load = max(1, loads[cluster].get(broker, 1))
            keep = min(1.0, OVERSAMPLE * 2 * give / load)
            domain = data.domains[cluster].get(broker, GLOBAL) if domain_mode else GLOBAL
            rows.append((cluster, broker, int(give), float(keep), domain))
    if not rows:
        return None
    return spark.createDataFrame(rows, "cluster STRING, broker INT, give LONG, keep DOUBLE, domain STRING")


def replica_moves(
    parts: Any,
    data: RoundInput,
    loads: Mapping[str, Mapping[int, int]],
    *,
    domain_mode: bool,
    size_aware: bool,
    seed: int,
    round_no: int,
) -> Any:
    """Moves for this round: (cluster, topic, partition, source, destination, size_bytes)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    spark = parts.sparkSession
    givers = _givers_frame(spark, data, loads, domain_mode)
    if givers is None:
        return spark.createDataFrame([], MOVE_SCHEMA)
    exploded = parts.filter(~F.col("reassigning")).select(
        "cluster", "topic", "partition", "replicas", "size_bytes", F.explode("replicas").alias("source")
    )
    hashed = exploded.join(
        F.broadcast(givers.withColumnRenamed("broker", "source")), ["cluster", "source"]
    ).withColumn(
        "h", F.abs(F.xxhash64("cluster", "topic", "partition", "source", F.lit(seed), F.lit(round_no)))
    )
    sampled = hashed.filter((F.col("h") % 1_000_003) < F.col("keep") * 1_000_003)
    order = Window.partitionBy("cluster", "source").orderBy("h", "topic", "partition")
    if size_aware:
        running = F.sum("size_bytes").over(order.rowsBetween(Window.unboundedPreceding, Window.currentRow))
        chosen = sampled.withColumn("run", running).filter(
            F.col("run") - F.col("size_bytes") < F.col("give") * OVERSAMPLE
        )
    else:
        chosen = sampled.withColumn("rank", F.row_number().over(order)).filter(
            F.col("rank") <= F.ceil(F.col("give") * OVERSAMPLE) + 2
        )
    candidates = chosen.select(
        "cluster", "domain", "topic", "partition", "replicas", "size_bytes", "source", "h"
    )
    match = _matcher(data, size_aware, domain_mode)
    return candidates.groupBy("cluster", "domain").applyInPandas(match, MOVE_SCHEMA)


def _matcher(data: RoundInput, size_aware: bool, domain_mode: bool) -> Any:
    racks = {c: dict(r) for c, r in data.racks.items()}
    domains = {c: dict(d) for c, d in data.domains.items()}
    gives = {c: dict(q.give) for c, q in data.quotas.items()}
    takes = {c: dict(q.take) for c, q in data.quotas.items()}
    relay = dict(data.relay) if data.relay is not None else None

    def match(pdf: Any) -> Any:
        import pandas as pd

        cluster, domain = str(pdf["cluster"].iloc[0]), str(pdf["domain"].iloc[0])
        topology = Topology.from_racks(racks[cluster])
        receivers = sorted(
            b
            for b, take in takes[cluster].items()
            if take > 0 and (not domain_mode or domains[cluster].get(b) == domain)
        )
        remaining = {b: takes[cluster][b] for b in receivers}
        above, below = relay[cluster] if relay is not None else (None, None)
        giver_left = dict(gives[cluster])
        active = deque(receivers)
        pdf = pdf.sort_values(["h", "topic", "partition"], kind="stable")
        seen: set[tuple[str, int]] = set()
        out: list[tuple[str, str, int, int, int, int]] = []
        for topic, partition, replicas, size, source in zip(
            pdf["topic"].tolist(),
            pdf["partition"].tolist(),
            pdf["replicas"].tolist(),
            pdf["size_bytes"].tolist(),
            pdf["source"].tolist(),
            strict=True,
        ):
            if not active:
                break
            weight = int(size) if size_aware else 1
            if giver_left.get(source, 0) * 2 < weight or giver_left.get(source, 0) <= 0:
                continue
            key = (topic, partition)
            if key in seen:
                continue
            current = tuple(int(r) for r in replicas)
            for _ in range(min(len(active), MAX_TRIES)):
                destination = active[0]
                if remaining[destination] <= 0:
                    active.popleft()
                    if not active:
                        break
                    continue
                active.rotate(-1)
                if remaining[destination] * 2 < weight:
                    continue
                if (
                    above is not None
                    and below is not None
                    and source not in above
                    and destination not in below
                ):
                    continue
                if is_valid_move(current, int(source), destination, topology):
                    remaining[destination] -= weight
                    giver_left[source] -= weight
                    seen.add(key)
                    out.append((cluster, topic, int(partition), int(source), destination, int(size)))
                    break
        return pd.DataFrame(
            out, columns=["cluster", "topic", "partition", "source", "destination", "size_bytes"]
        )

    return match


def apply_moves(parts: Any, moves: Any) -> Any:
    """Replace each moved replica in place (keeping the preferred-leader order)."""
    from pyspark.sql import functions as F

    per_partition = moves.groupBy("cluster", "topic", "partition").agg(
        F.map_from_entries(F.collect_list(F.struct("source", "destination"))).alias("swap")
    )
    joined = parts.join(per_partition, ["cluster", "topic", "partition"], "left")
    replaced = F.transform("replicas", lambda r: F.coalesce(F.element_at("swap", r), r))
    return joined.withColumn(
        "replicas", F.when(F.col("swap").isNull(), F.col("replicas")).otherwise(replaced)
    ).drop("swap")


def leader_swaps(parts: Any, quotas: Mapping[str, Quotas], *, seed: int, round_no: int) -> Any:
    """Reorder replica lists so preferred leaders move from brokers above the band to followers below."""
    from pyspark.sql import functions as F

    spark = parts.sparkSession
    rows = [(c, b, int(g)) for c, q in quotas.items() for b, g in q.give.items() if g > 0]
    if not rows:
        return spark.createDataFrame([], LEADER_SCHEMA)
    givers = spark.createDataFrame(rows, "cluster STRING, preferred INT, give LONG")
    candidates = (
        parts.filter(~F.col("reassigning") & (F.size("replicas") > 1))
        .withColumn("preferred", F.element_at("replicas", 1))
        .join(F.broadcast(givers), ["cluster", "preferred"])
        .withColumn("h", F.abs(F.xxhash64("cluster", "topic", "partition", F.lit(seed), F.lit(round_no))))
    )
    # Every partition led by a giver is a candidate: the matching below stops at the quotas, and seeing
    # them all lets one round find a follower on a receiver for nearly every swap needed.
    limited = candidates
    gives = {c: dict(q.give) for c, q in quotas.items()}
    takes = {c: dict(q.take) for c, q in quotas.items()}

    def swap(pdf: Any) -> Any:
        import pandas as pd

        cluster = str(pdf["cluster"].iloc[0])
        giver_left, remaining = dict(gives[cluster]), dict(takes[cluster])
        out = []
        pdf = pdf.sort_values(["h", "topic", "partition"], kind="stable")
        for topic, partition, replicas in zip(
            pdf["topic"].tolist(), pdf["partition"].tolist(), pdf["replicas"].tolist(), strict=True
        ):
            current = [int(r) for r in replicas]
            source = current[0]
            if giver_left.get(source, 0) <= 0:
                continue
            options = [r for r in current[1:] if remaining.get(r, 0) > 0]
            if not options:
                continue
            target = max(options, key=lambda r: (remaining[r], -current.index(r)))
            remaining[target] -= 1
            giver_left[source] -= 1
            reordered = [target, *(r for r in current if r != target)]
            out.append((cluster, topic, int(partition), source, reordered))
        return pd.DataFrame(out, columns=["cluster", "topic", "partition", "source", "new_replicas"])

    return (
        limited.select("cluster", "topic", "partition", "replicas", "h")
        .groupBy("cluster")
        .applyInPandas(swap, LEADER_SCHEMA)
    )


def apply_leader_swaps(parts: Any, swaps: Any) -> Any:
    from pyspark.sql import functions as F

    joined = parts.join(swaps, ["cluster", "topic", "partition"], "left")
    return joined.withColumn("replicas", F.coalesce("new_replicas", "replicas")).drop(
        "new_replicas", "source"
    )

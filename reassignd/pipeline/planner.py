"""KIP-166 goals over a fleet: validation, statistics, rounds of moves until within the threshold band or
no valid move is left, then one Kafka reassignment plan and a set of figures per cluster.

Replica moves run in two phases. First inside each top-level domain (data centre): with partitions spread
evenly over data centres most moves can only stay inside one, and per-domain quotas under the cluster's
band reach the lower bound there. Then across the whole cluster for whatever is left.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from reassignd.model import InvalidInputError, Problem, ReassignmentPlan, TopicPartition
from reassignd.pipeline.io import Tables, normalise, read_tables
from reassignd.pipeline.rounds import (
    RoundInput,
    apply_leader_swaps,
    apply_moves,
    leader_swaps,
    replica_moves,
)
from reassignd.pipeline.session import quiet_pandas_bridge, size_shuffles
from reassignd.pipeline.stats import broker_loads, spread_violation_counts
from reassignd.pipeline.validate import validate_tables
from reassignd.placement.balance import (
    Band,
    Quotas,
    balance_quotas,
    drain_quotas,
    fill_quotas,
    relay_quotas,
)
from reassignd.placement.state import balance_score
from reassignd.placement.topology import leaf_of, node_name

LOG = logging.getLogger(__name__)
GOALS: Final = ("leader-balance", "replica-balance", "cluster-balance", "drain", "fill")


@dataclass(frozen=True)
class PlanRequest:
    goal: str
    threshold: float = 0.10
    brokers: tuple[int, ...] = ()
    size_aware: bool = False
    seed: int = 0
    max_rounds: int = 12
    leader_threshold: float = 0.0

    def check(self) -> None:
        problems = []
        if self.goal not in GOALS:
            problems.append(Problem("plan", "goal", f"must be one of {list(GOALS)}, got {self.goal!r}"))
        if not 0 <= self.threshold < 1:
            problems.append(Problem("plan", "threshold", f"must be in [0, 1), got {self.threshold}"))
        if self.goal in ("drain", "fill") and not self.brokers:
            problems.append(Problem("plan", "brokers", f"goal {self.goal} needs the brokers to {self.goal}"))
        if self.max_rounds < 1:
            problems.append(Problem("plan", "max_rounds", f"must be >= 1, got {self.max_rounds}"))
        if problems:
            raise InvalidInputError("plan request", problems)


@dataclass
class ClusterPlan:
    cluster: str
    plan: ReassignmentPlan
    figures: dict[str, Any]
    before: Any  # pandas: cluster, broker, replicas, leaders, preferred_leaders, bytes
    after: Any
    domains: dict[int, str] = field(default_factory=dict)


@dataclass
class _Cluster:
    name: str
    racks: dict[int, str | None]  # every online broker
    eligible: set[int]
    special: set[int]  # drained or filled brokers
    loads: dict[int, int] = field(default_factory=dict)
    lower_bound: int = 0
    relay_moves: int = 0
    rounds: int = 0
    stop: str = "within threshold"

    def domain(self, broker: int) -> str:
        return node_name(leaf_of(broker, self.racks.get(broker))[:1])


def plan_paths(spark: Any, paths: Sequence[str], request: PlanRequest) -> list[ClusterPlan]:
    return plan_tables(spark, read_tables(spark, paths), request)


def plan_tables(spark: Any, raw: Tables, request: PlanRequest) -> list[ClusterPlan]:
    from pyspark.sql import functions as F

    request.check()
    previous = spark.conf.get("spark.sql.shuffle.partitions")
    with quiet_pandas_bridge():
        # parse once (a JSON snapshot is one document): validation and planning read the checkpoint
        raw = Tables(raw.brokers.localCheckpoint(), raw.partitions.localCheckpoint())
        validate_tables(raw)
        try:
            parts = normalise(raw.partitions).withColumn("original", F.col("replicas")).localCheckpoint()
            size_shuffles(spark, parts.count() * 3)
            return _plan(spark, raw, parts, request)
        finally:
            spark.conf.set("spark.sql.shuffle.partitions", previous)


def _plan(spark: Any, raw: Tables, parts: Any, request: PlanRequest) -> list[ClusterPlan]:
    from pyspark.sql import functions as F

    brokers = raw.brokers
    clusters = _clusters(brokers.toPandas(), request)
    before = broker_loads(parts, brokers, "original", leader_is_preferred=False)
    metric = "bytes" if request.size_aware else "replicas"
    for c in clusters.values():
        rows = before[before["cluster"] == c.name]
        c.loads = {
            int(b): int(v)
            for b, v in zip(rows["broker"], rows[metric], strict=True)
            if b in c.eligible or b in c.special
        }
    if request.goal != "leader-balance":
        parts = _replica_phase(parts, clusters, request)
    if request.goal in ("leader-balance", "cluster-balance"):
        parts = _leader_phase(parts, clusters, request)
    parts = parts.localCheckpoint()
    started = time.monotonic()
    after = broker_loads(parts, brokers, "replicas", leader_is_preferred=True)
    spread = spread_violation_counts(parts, {c.name: c.racks for c in clusters.values()})
    changed = (
        parts.filter(F.col("replicas") != F.col("original"))
        .select("cluster", "topic", "partition", "original", "replicas", "size_bytes")
        .toPandas()
    )
    LOG.info("statistics and plan collection: %.1fs", time.monotonic() - started)
    return [
        _outcome(
            c,
            changed[changed["cluster"] == c.name],
            before,
            after,
            spread=spread.get(c.name, (0, 0)),
            request=request,
        )
        for c in sorted(clusters.values(), key=lambda c: c.name)
    ]


def _clusters(brokers: Any, request: PlanRequest) -> dict[str, _Cluster]:
    out: dict[str, _Cluster] = {}
    problems = []
    for name in sorted(set(brokers["cluster"])):
        rows = brokers[brokers["cluster"] == name]
        known = {int(b) for b in rows["broker"]}
        online = {int(b) for b, up in zip(rows["broker"], rows["online"], strict=True) if up}
        racks = {
            int(b): (r if isinstance(r, str) and r else None)
            for b, r in zip(rows["broker"], rows["rack"], strict=True)
            if int(b) in online
        }
        listed = set(request.brokers)
        unknown = sorted(listed - known)
        if unknown:
            problems.append(Problem(f"cluster {name}", "brokers", f"unknown broker id(s) {unknown}"))
        if request.goal == "drain":
            eligible, special = online - listed, listed & known
        elif request.goal == "fill":
            eligible, special = set(online), listed & online
        else:
            eligible, special = (online & listed) if listed else set(online), set()
        if not eligible:
            problems.append(Problem(f"cluster {name}", "brokers", "no eligible online broker is left"))
        out[name] = _Cluster(name, racks, eligible, special)
    if problems:
        raise InvalidInputError("plan request", problems)
    return out


def _quotas(c: _Cluster, loads: Mapping[int, int], request: PlanRequest, band: Band) -> Quotas:
    if request.goal == "drain":
        return drain_quotas(loads, c.special & set(loads), request.threshold)
    if request.goal == "fill":
        return fill_quotas(loads, c.special & set(loads), request.threshold)
    return balance_quotas(loads, request.threshold, band)


def _cluster_quotas(c: _Cluster, request: PlanRequest, by_domain: bool) -> Quotas:
    kept = [b for b in c.loads if b not in c.special or request.goal == "fill"]
    band = Band.around(sum(c.loads.values()), len(kept), request.threshold)
    if not by_domain:
        return _quotas(c, c.loads, request, band)
    give: dict[int, int] = {}
    take: dict[int, int] = {}
    domains: dict[str, dict[int, int]] = {}
    for broker, load in c.loads.items():
        domains.setdefault(c.domain(broker), {})[broker] = load
    for loads in domains.values():
        own = Band.around(sum(loads.values()), len(loads), request.threshold)
        # a domain whose total the spread pins outside the cluster's band balances around its own average
        q = _quotas(c, loads, request, band if band.contains(round(own.average)) else own)
        give.update(q.give)
        take.update(q.take)
    return Quotas(band, give, take, max(sum(give.values()), sum(take.values())))


def _has_domains(c: _Cluster) -> bool:
    domains = [c.domain(b) for b in c.eligible]
    return len(set(domains)) < len(domains)


def _replica_phase(parts: Any, clusters: dict[str, _Cluster], request: PlanRequest) -> Any:
    """Rounds in up to four modes, each kept while it makes progress:

    1. the cluster's quotas (they meet the lower bound), moves paired inside each top-level domain;
    2. the same quotas paired across the whole cluster;
    3. relays through in-band brokers when no direct move is valid (balance goals only);
    4. quotas per domain, for what the spread allows only inside a domain (one replica per data
       centre): under the cluster's band, or the domain's own when the spread pins its total outside.
    """
    for c in clusters.values():
        c.lower_bound = _cluster_quotas(c, request, by_domain=False).lower_bound
    with_domains = any(_has_domains(c) for c in clusters.values())
    modes = ["cluster-in-domain", "cluster"] if with_domains else ["cluster"]
    if request.goal in ("replica-balance", "cluster-balance"):
        modes.append("relay")
    if with_domains:
        modes.append("domain")
    active = {name for name, c in clusters.items() if c.lower_bound > 0}
    mode = 0
    rounds_left = request.max_rounds
    while rounds_left > 0 and mode < len(modes):
        started = time.monotonic()
        name = modes[mode]
        relay: dict[str, tuple[frozenset[int], frozenset[int]]] | None = None
        if name == "relay":
            relay, quotas = {}, {}
            for n in sorted(active):
                q = _cluster_quotas(clusters[n], request, by_domain=False)
                quotas[n], above, below = relay_quotas(clusters[n].loads, q.band)
                relay[n] = (above, below)
        else:
            quotas = {n: _cluster_quotas(clusters[n], request, name == "domain") for n in sorted(active)}
        quotas = {n: q for n, q in quotas.items() if q.give and q.take and q.lower_bound}
        if not quotas:
            mode += 1
            continue
        rounds_left -= 1
        data = RoundInput(
            racks={
                n: {b: r for b, r in clusters[n].racks.items() if b in clusters[n].eligible} for n in quotas
            },
            domains={n: {b: clusters[n].domain(b) for b in clusters[n].loads} for n in quotas},
            quotas=quotas,
            relay=relay,
        )
        loads = {n: clusters[n].loads for n in quotas}
        moves = replica_moves(
            parts,
            data,
            loads,
            domain_mode=name in ("cluster-in-domain", "domain"),
            size_aware=request.size_aware,
            seed=request.seed,
            round_no=request.max_rounds - rounds_left,
        ).localCheckpoint()
        per_cluster = _apply_load_changes(moves, clusters, request.size_aware)
        accepted = sum(per_cluster.values())
        if relay is not None:
            for n, count in per_cluster.items():
                clusters[n].relay_moves += count
        LOG.info("replica round (%s): %d moves, %.1fs", name, accepted, time.monotonic() - started)
        for n in quotas:
            clusters[n].rounds += 1
        if accepted:
            parts = apply_moves(parts, moves).localCheckpoint()
        else:
            mode += 1
    for n in active:
        q = _cluster_quotas(clusters[n], request, by_domain=False)
        if q.give and q.take:
            clusters[n].stop = (
                f"round limit ({request.max_rounds})" if rounds_left == 0 else "no further valid move"
            )
    return parts


def _apply_load_changes(moves: Any, clusters: dict[str, _Cluster], size_aware: bool) -> dict[str, int]:
    """Update the driver's loads from one aggregate of the round's moves; returns moves per cluster."""
    from pyspark.sql import functions as F

    weight = F.col("size_bytes") if size_aware else F.lit(1)
    sides = moves.select(
        "cluster", F.col("source").alias("broker"), (-weight).alias("w"), F.lit(0).alias("n")
    )
    sides = sides.unionByName(
        moves.select("cluster", F.col("destination").alias("broker"), weight.alias("w"), F.lit(1).alias("n"))
    )
    accepted: dict[str, int] = {}
    for row in sides.groupBy("cluster", "broker").agg(F.sum("w").alias("w"), F.sum("n").alias("n")).collect():
        c = clusters[row["cluster"]]
        broker = int(row["broker"])
        c.loads[broker] = c.loads.get(broker, 0) + int(row["w"])
        accepted[c.name] = accepted.get(c.name, 0) + int(row["n"])
    return accepted


def _leader_phase(parts: Any, clusters: dict[str, _Cluster], request: PlanRequest) -> Any:
    from pyspark.sql import functions as F

    preferred = (
        parts.select("cluster", F.element_at("replicas", 1).alias("broker"))
        .groupBy("cluster", "broker")
        .count()
        .collect()
    )
    leaders: dict[str, dict[int, int]] = {n: dict.fromkeys(c.eligible, 0) for n, c in clusters.items()}
    for row in preferred:
        if int(row["broker"]) in leaders[row["cluster"]]:
            leaders[row["cluster"]][int(row["broker"])] = int(row["count"])
    for round_no in range(request.max_rounds):
        started = time.monotonic()
        quotas = {n: balance_quotas(loads, request.leader_threshold) for n, loads in leaders.items()}
        quotas = {n: q for n, q in quotas.items() if q.give and q.take}
        if not quotas:
            break
        swaps = leader_swaps(parts, quotas, seed=request.seed, round_no=round_no).localCheckpoint()
        rows = swaps.select("cluster", "source", F.element_at("new_replicas", 1).alias("target")).collect()
        LOG.info("leader round %d: %d swaps, %.1fs", round_no, len(rows), time.monotonic() - started)
        if not rows:
            break
        for row in rows:
            loads = leaders[row["cluster"]]
            loads[int(row["source"])] -= 1
            loads[int(row["target"])] += 1
        parts = apply_leader_swaps(parts, swaps).localCheckpoint()
    return parts


def _outcome(
    c: _Cluster, changed: Any, before: Any, after: Any, *, spread: tuple[int, int], request: PlanRequest
) -> ClusterPlan:
    targets: dict[TopicPartition, tuple[int, ...]] = {}
    moved = moved_bytes = leader_changes = 0
    for topic, partition, original, replicas, size in zip(
        changed["topic"],
        changed["partition"],
        changed["original"],
        changed["replicas"],
        changed["size_bytes"],
        strict=True,
    ):
        new = tuple(int(r) for r in replicas)
        old = [int(r) for r in original]
        targets[TopicPartition(str(topic), int(partition))] = new
        added = len(set(new) - set(old))
        moved += added
        moved_bytes += added * int(size)
        leader_changes += new[0] != old[0]
    b = before[before["cluster"] == c.name]
    a = after[after["cluster"] == c.name]
    eligible = sorted(c.eligible)

    def scores(frame: Any) -> dict[str, Any]:
        return {
            col: balance_score(
                {
                    int(k): int(v)
                    for k, v in zip(frame["broker"], frame[col], strict=True)
                    if int(k) in c.eligible
                },
                request.threshold if col in ("replicas", "bytes") else request.leader_threshold,
            )
            for col in ("replicas", "preferred_leaders", "leaders", "bytes")
        }

    unit = "bytes" if request.size_aware else "replicas"
    moved_units = moved_bytes if request.size_aware else moved
    figures = {
        "cluster": c.name,
        "goal": request.goal,
        "threshold": request.threshold,
        "brokers": len(b),
        "eligible_brokers": len(eligible),
        "partitions_changed": len(targets),
        "replicas_moved": moved,
        "bytes_moved": moved_bytes,
        "preferred_leader_changes": leader_changes,
        "lower_bound": c.lower_bound,
        "lower_bound_unit": unit,
        "moves_over_lower_bound": round(moved_units / c.lower_bound, 4) if c.lower_bound else None,
        "relay_moves": c.relay_moves,
        "rounds": c.rounds,
        "stopped": c.stop,
        "spread_violations": {"before": spread[0], "after": spread[1]},
        "scores_before": scores(b),
        "scores_after": scores(a),
    }
    domains = {int(x): c.domain(int(x)) for x in b["broker"]}
    return ClusterPlan(c.name, ReassignmentPlan(targets=targets), figures, b, a, domains)

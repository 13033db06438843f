"""KIP-166 goals over a fleet on Spark: read and validate the snapshots as DataFrames, then plan every
cluster in one grouped job (`groupBy(cluster).applyInPandas`), each group running the pure planner core
(`reassignd.placement.optimizer`) over its cluster's rows.

The core holds one cluster in memory as arrays and keeps its loads up to date move by move, so a plan is a
single pass over the data instead of a Spark job per round: a fleet's clusters are planned in parallel
across the executors, and the fixed cost of a run is Spark's start-up plus a handful of jobs. Rows reach the
core in canonical order (topic, partition), so the same input gives the same plan in local mode, on a
standalone cluster, or in-process (`plan_locally`, which the tests compare against).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from reassignd.model import (
    ClusterSnapshot,
    InvalidInputError,
    Problem,
    ReassignmentPlan,
    TopicPartition,
    snapshot_from_json,
)
from reassignd.pipeline.io import Tables, normalise, read_json_input, read_tables
from reassignd.pipeline.session import quiet_pandas_bridge, size_shuffles
from reassignd.pipeline.validate import MAX_REPORTED, broker_problems, partition_problems
from reassignd.placement.assignment import ClusterInput
from reassignd.placement.goals import GOALS, PlanRequest
from reassignd.placement.optimizer import ClusterResult, optimise, roles_for

__all__ = [
    "GOALS",
    "ClusterPlan",
    "PlanRequest",
    "plan_files_locally",
    "plan_locally",
    "plan_paths",
    "plan_snapshots",
    "plan_tables",
]

LOG = logging.getLogger(__name__)
RESULT_SCHEMA = "cluster STRING, topic STRING, partition INT, replicas ARRAY<INT>, report STRING"
COLUMNS = ["cluster", "topic", "partition", "replicas", "report"]
Progress = Callable[[str], None]


@dataclass
class ClusterPlan:
    cluster: str
    plan: ReassignmentPlan
    figures: dict[str, Any]
    domains: dict[int, str] = field(default_factory=dict)
    brokers: list[dict[str, Any]] = field(default_factory=list)  # per broker: role, rack, [before, after]

    @cached_property
    def before(self) -> Any:
        """pandas: cluster, broker, replicas, leaders, preferred_leaders, bytes, network_in, network_out
        (built on first use: only the charts need it, and pandas costs half a second to import)."""
        return _frame(self.cluster, self.brokers, 0)

    @cached_property
    def after(self) -> Any:
        return _frame(self.cluster, self.brokers, 1)


def _frame(cluster: str, brokers: list[dict[str, Any]], side: int) -> Any:
    import pandas as pd

    columns = ["replicas", "leaders", "preferred_leaders", "bytes", "network_in", "network_out"]
    return pd.DataFrame(
        [{"cluster": cluster, "broker": r["broker"], **{c: r[c][side] for c in columns}} for r in brokers]
    )


def _cluster_plan(
    cluster: str, targets: dict[tuple[str, int], tuple[int, ...]], report: dict[str, Any]
) -> ClusterPlan:
    brokers = report["brokers"]
    plan = ReassignmentPlan(targets={TopicPartition(t, p): tuple(r) for (t, p), r in targets.items()})
    domains = {int(r["broker"]): r["domain"] for r in brokers}
    return ClusterPlan(cluster, plan, report["figures"], domains, brokers)


def from_result(result: ClusterResult) -> ClusterPlan:
    return _cluster_plan(
        result.cluster, result.targets, {"figures": result.figures, "brokers": result.brokers}
    )


def plan_locally(snapshots: Iterable[ClusterSnapshot], request: PlanRequest) -> list[ClusterPlan]:
    """The same plans without Spark, in this process (tests compare the two)."""
    request.check()
    out = [from_result(optimise(ClusterInput.from_snapshot(s), request)) for s in snapshots]
    return sorted(out, key=lambda o: o.cluster)


# JSON snapshots up to this size are parsed by the driver (the snapshot model, with its own validation):
# faster than a Spark read job for the clusters most runs plan. Larger ones, and Parquet, Spark reads.
DRIVER_PARSE_BYTES = 64 * 1024 * 1024


def plan_files_locally(files: Sequence[str], request: PlanRequest) -> list[ClusterPlan]:
    """JSON snapshot files planned in this process, named after the files (no Spark)."""
    request.check()
    out = []
    for f in files:
        data, cluster_id, read_at = read_json_input(f)
        plan = from_result(optimise(data, request))
        plan.figures["cluster_id"] = cluster_id
        if read_at is not None:
            plan.figures["sizes_read_at"] = float(read_at)
        out.append(plan)
    return sorted(out, key=lambda o: o.cluster)


def plan_paths(
    spark: Any, paths: Sequence[str], request: PlanRequest, progress: Progress | None = None
) -> list[ClusterPlan]:
    request.check()
    say = progress or (lambda _: None)
    say("reading the snapshot")
    files = small_json_files(paths)
    if files is not None:
        snapshots = [snapshot_from_json(Path(f).read_text()) for f in files]
        return plan_snapshots(spark, snapshots, request, progress, names=[Path(f).stem for f in files])
    return plan_tables(spark, read_tables(spark, paths, checkpoint=True), request, progress)


def small_json_files(paths: Sequence[str]) -> list[str] | None:
    """The JSON files behind `paths` when they are all JSON and small enough to parse in the driver."""
    files: list[Path] = []
    for p in map(Path, paths):
        if (p / "partitions").is_dir() or not p.exists():
            return None
        files.extend(sorted(p.glob("*.json")) if p.is_dir() else [p])
    if not files or sum(f.stat().st_size for f in files) > DRIVER_PARSE_BYTES:
        return None
    return [str(f) for f in files]


def plan_tables(
    spark: Any, raw: Tables, request: PlanRequest, progress: Progress | None = None
) -> list[ClusterPlan]:
    request.check()
    say = progress or (lambda _: None)
    with quiet_pandas_bridge():
        started = time.monotonic()
        brokers = raw.brokers.select("cluster", "cluster_id", "broker", "rack", "online").collect()
        LOG.info("read in %.1fs", time.monotonic() - started)
        problems = broker_problems(brokers)
        if problems:
            raise InvalidInputError("cluster snapshot", problems)
        ids = {str(r["cluster"]): r["cluster_id"] for r in brokers if r["cluster_id"]}
        return _plan_fleet(
            spark, normalise(raw.partitions), views=_broker_views(brokers), request=request, say=say, ids=ids
        )


def plan_snapshots(
    spark: Any,
    snapshots: Sequence[ClusterSnapshot],
    request: PlanRequest,
    progress: Progress | None = None,
    *,
    names: Sequence[str] | None = None,
) -> list[ClusterPlan]:
    """Plan parsed snapshots (already validated by the model) on Spark: small files and the daemon's
    warm-session path. Clusters are named by `names`, else by their cluster id."""
    import pandas as pd
    import pyarrow as pa

    request.check()
    say = progress or (lambda _: None)
    views: dict[str, tuple[dict[int, str | None], set[int]]] = {}
    tables = []
    given = list(names) if names is not None else [s.cluster_id or "cluster" for s in snapshots]
    for s, name in zip(snapshots, given, strict=True):
        views[name] = ({b.id: b.rack for b in s.brokers.values()}, set(s.online_broker_ids()))
        data = ClusterInput.from_snapshot(s, name)
        lists = [[b for b in row if b >= 0] for row in data.replicas.tolist()]
        tables.append(
            pa.table(
                {
                    "cluster": pa.array([name] * data.partitions, pa.string()),
                    "topic": pa.array(list(data.topics), pa.string()),
                    "partition": pa.array(data.numbers, pa.int32()),
                    "replicas": pa.array(lists, pa.list_(pa.int32())),
                    "leader": pa.array(data.leaders, pa.int32()),
                    "size_bytes": pa.array(data.sizes, pa.int64()),
                    "produce_bytes_per_sec": pa.array(data.produce, pa.float64()),
                    "reassigning": pa.array(data.reassigning, pa.bool_()),
                }
            )
        )
    ids = {name: s.cluster_id for s, name in zip(snapshots, given, strict=True)}
    with quiet_pandas_bridge():
        frame = pa.concat_tables(tables).to_pandas() if tables else pd.DataFrame()
        parts = spark.createDataFrame(frame)
        plans = _plan_fleet(spark, parts, views=views, request=request, say=say, ids=ids)
    read_at = {name: s.read_at for s, name in zip(snapshots, given, strict=True)}
    for planned in plans:  # the sizes the figures are made of are the snapshot's: say their moment
        if read_at.get(planned.cluster) is not None:
            planned.figures["sizes_read_at"] = read_at[planned.cluster]
    return plans


def _broker_views(rows: Iterable[Any]) -> dict[str, tuple[dict[int, str | None], set[int]]]:
    views: dict[str, tuple[dict[int, str | None], set[int]]] = {}
    for row in rows:
        racks, online = views.setdefault(str(row["cluster"]), ({}, set()))
        broker = int(row["broker"])
        racks[broker] = row["rack"] if isinstance(row["rack"], str) and row["rack"] else None
        if row["online"]:
            online.add(broker)
    return views


def _check_roles(views: dict[str, tuple[dict[int, str | None], set[int]]], request: PlanRequest) -> None:
    """Requests that cannot apply to a cluster (unknown brokers, nobody left) fail before the job runs."""
    import numpy as np

    problems: list[Problem] = []
    for name, (racks, online) in sorted(views.items()):
        empty = ClusterInput(
            name,
            racks,
            frozenset(online),
            [],
            np.empty(0, dtype=np.int64),
            np.empty((0, 1), dtype=np.int64),
            np.empty(0, dtype=np.int64),
            np.empty(0, dtype=np.float64),
            np.empty(0, dtype=np.int64),
            np.empty(0, dtype=np.bool_),
        )
        try:
            roles_for(empty, request)
        except InvalidInputError as exc:
            problems.extend(exc.problems)
    if problems:
        raise InvalidInputError("plan request", problems)


def _plan_fleet(
    spark: Any,
    parts: Any,
    *,
    views: dict[str, tuple[dict[int, str | None], set[int]]],
    request: PlanRequest,
    say: Progress,
    ids: dict[str, str | None],
) -> list[ClusterPlan]:
    from pyspark.sql import functions as F

    _check_roles(views, request)
    produce = (
        F.coalesce(F.col("produce_bytes_per_sec"), F.lit(0.0)).cast("double")
        if "produce_bytes_per_sec" in parts.columns
        else F.lit(0.0)
    )
    listed = F.col("listed") if "listed" in parts.columns else F.col("replicas")
    rows = parts.select(
        "cluster",
        "topic",
        "partition",
        listed.alias("listed"),
        "replicas",
        "leader",
        "size_bytes",
        produce.alias("produce"),
        "reassigning",
    )
    previous = spark.conf.get("spark.sql.shuffle.partitions")
    size_shuffles(spark, max(1, len(views)) * 250_000)
    say(f"planning {len(views)} cluster(s)")
    started = time.monotonic()
    try:
        collected = rows.groupBy("cluster").applyInPandas(_planner(views, request), RESULT_SCHEMA).collect()
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", previous)
    LOG.info("planned in %.1fs", time.monotonic() - started)
    targets: dict[str, dict[tuple[str, int], tuple[int, ...]]] = {name: {} for name in views}
    reports: dict[str, dict[str, Any]] = {}
    problems: list[Problem] = []
    for row in collected:
        name = str(row["cluster"])
        if row["report"] is None:
            targets[name][(str(row["topic"]), int(row["partition"]))] = tuple(int(b) for b in row["replicas"])
            continue
        report = json.loads(row["report"])
        if "problems" in report:
            problems.extend(Problem(p["where"], p["field"], p["message"]) for p in report["problems"])
        else:
            reports[name] = report
    if problems:
        raise InvalidInputError("cluster snapshot", problems[:MAX_REPORTED])
    for name, (racks, online) in views.items():  # a cluster without partitions has no group: plan it here
        if name not in reports:
            result = optimise(ClusterInput.build(name, racks, online, []), request)
            reports[name] = {"figures": result.figures, "brokers": result.brokers}
    for name, report in reports.items():
        report["figures"]["cluster_id"] = ids.get(name)
    return [_cluster_plan(name, targets[name], reports[name]) for name in sorted(views)]


def _planner(views: dict[str, tuple[dict[int, str | None], set[int]]], request: PlanRequest) -> Any:
    def plan(pdf: Any) -> Any:
        import numpy as np
        import pandas as pd

        name = str(pdf["cluster"].iloc[0])
        racks, online = views[name]
        pdf = pdf.sort_values(["topic", "partition"], kind="stable")
        leaders = pdf["leader"].fillna(-1).to_numpy(dtype=np.int64)
        problems = partition_problems(
            name,
            topics=pdf["topic"].astype(str).tolist(),
            numbers=pdf["partition"].tolist(),
            replicas=pdf["listed"].tolist(),
            leaders=leaders.tolist(),
            sizes=pdf["size_bytes"].fillna(0).tolist(),
            brokers=set(racks),
        )
        if problems:
            report = {
                "problems": [{"where": p.where, "field": p.field, "message": p.message} for p in problems]
            }
            return pd.DataFrame([(name, None, None, None, json.dumps(report))], columns=COLUMNS)
        lists = pdf["replicas"].tolist()
        width = max((len(r) for r in lists), default=1) or 1
        replicas = np.full((len(lists), width), -1, dtype=np.int64)
        for i, row in enumerate(lists):
            replicas[i, : len(row)] = row
        data = ClusterInput(
            name=name,
            racks=racks,
            online=frozenset(online),
            topics=pdf["topic"].astype(str).tolist(),
            numbers=pdf["partition"].to_numpy(dtype=np.int64),
            replicas=replicas,
            sizes=pdf["size_bytes"].fillna(0).to_numpy(dtype=np.int64),
            produce=pdf["produce"].fillna(0.0).to_numpy(dtype=np.float64),
            leaders=leaders,
            reassigning=pdf["reassigning"].fillna(False).to_numpy(dtype=np.bool_),
        )
        result = optimise(data, request)
        out: list[tuple[Any, ...]] = [(name, t, p, list(r), None) for (t, p), r in result.targets.items()]
        out.append(
            (name, None, None, None, json.dumps({"figures": result.figures, "brokers": result.brokers}))
        )
        return pd.DataFrame(out, columns=COLUMNS)

    return plan

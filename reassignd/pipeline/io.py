"""Snapshots into DataFrames: the documented snapshot JSON (one file per cluster, or a directory of them
for a fleet) read straight into Spark with an explicit schema, or the same data as Parquet.

A JSON snapshot's cluster is named after its file (`prod-eu.json` -> `prod-eu`): what an operator chose,
where Kafka's cluster id is an opaque string; the id is kept beside it (`cluster_id`).

Parquet layout (see docs/planner.md): `DIR/brokers/` with columns cluster, id, rack, online and
`DIR/partitions/` with cluster, topic, partition, replicas, isr, leader, size_bytes, adding, removing and,
optionally, produce_bytes_per_sec.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reassignd.model import InvalidInputError, Problem, snapshot_from_json
from reassignd.placement.assignment import ClusterInput

_BROKER_FIELDS = "id INT, rack STRING, online BOOLEAN"
_PARTITION_FIELDS = (
    "topic STRING, partition INT, replicas ARRAY<INT>, isr ARRAY<INT>, leader INT, size_bytes BIGINT, "
    "adding ARRAY<INT>, removing ARRAY<INT>, produce_bytes_per_sec DOUBLE"
)
SNAPSHOT_SCHEMA = (
    f"version INT, cluster_id STRING, brokers ARRAY<STRUCT<{_BROKER_FIELDS}>>, "
    f"partitions ARRAY<STRUCT<{_PARTITION_FIELDS}>>"
)


@dataclass(frozen=True)
class Tables:
    """brokers: cluster, cluster_id, broker, rack, online. partitions as in the snapshot (raw), or after
    `normalise`: cluster, topic, partition, replicas (the target list while a move runs), leader, size_bytes,
    produce_bytes_per_sec, reassigning."""

    brokers: Any
    partitions: Any


def _json_files(path: Path) -> list[str]:
    if path.is_dir():
        files = sorted(str(p) for p in path.glob("*.json"))
        if not files:
            raise InvalidInputError("snapshot", [Problem(str(path), "(directory)", "holds no *.json files")])
        return files
    return [str(path)]


def read_tables(spark: Any, paths: Sequence[str], *, checkpoint: bool = False) -> Tables:
    """Read every path (JSON file, directory of JSON files, or Parquet layout) into one fleet. With
    `checkpoint` the JSON documents are parsed once, here, and both tables read the parsed rows."""
    from pyspark.sql import functions as F

    problems = [Problem(p, "(file)", "does not exist") for p in paths if not Path(p).exists()]
    if problems:
        raise InvalidInputError("snapshot", problems)
    parquet = [p for p in paths if (Path(p) / "partitions").is_dir()]
    json_files = [f for p in paths if p not in parquet for f in _json_files(Path(p))]
    parts: list[Tables] = []
    if json_files:
        raw = (
            spark.read.schema(SNAPSHOT_SCHEMA)
            .option("multiLine", "true")
            .option("mode", "FAILFAST")
            .json(json_files)
            .withColumn("cluster", F.regexp_extract(F.input_file_name(), r"([^/]+)\.json$", 1))
        )
        if checkpoint:
            raw = raw.localCheckpoint()
        brokers = raw.select("cluster", "cluster_id", F.explode("brokers").alias("b")).select(
            "cluster",
            "cluster_id",
            F.col("b.id").alias("broker"),
            F.col("b.rack").alias("rack"),
            F.coalesce(F.col("b.online"), F.lit(True)).alias("online"),
        )
        partitions = raw.select("cluster", F.explode("partitions").alias("p")).select("cluster", "p.*")
        parts.append(Tables(brokers, partitions))
    for path in parquet:
        brokers = spark.read.parquet(str(Path(path) / "brokers")).withColumnRenamed("id", "broker")
        if "cluster_id" not in brokers.columns:
            brokers = brokers.withColumn("cluster_id", F.lit(None).cast("string"))
        partitions = spark.read.parquet(str(Path(path) / "partitions"))
        parts.append(Tables(brokers, partitions))
    brokers, partitions = parts[0].brokers, parts[0].partitions
    for more in parts[1:]:
        brokers = brokers.unionByName(more.brokers, allowMissingColumns=True)
        partitions = partitions.unionByName(more.partitions, allowMissingColumns=True)
    return Tables(brokers, partitions)


def normalise(partitions: Any) -> Any:
    """Target replicas (without those being removed; `listed` keeps Kafka's list for validation), a
    reassigning flag, defaults for missing fields."""
    from pyspark.sql import functions as F

    empty = F.array().cast("array<int>")
    adding = F.coalesce("adding", empty)
    removing = F.coalesce("removing", empty)
    produce = F.col("produce_bytes_per_sec") if "produce_bytes_per_sec" in partitions.columns else F.lit(0.0)
    return partitions.select(
        "cluster",
        "topic",
        "partition",
        F.col("replicas").alias("listed"),
        F.array_except("replicas", removing).alias("replicas"),
        F.coalesce("leader", F.lit(-1)).alias("leader"),
        F.coalesce("size_bytes", F.lit(0)).cast("long").alias("size_bytes"),
        F.coalesce(produce, F.lit(0.0)).cast("double").alias("produce_bytes_per_sec"),
        ((F.size(adding) > 0) | (F.size(removing) > 0)).alias("reassigning"),
    )


def read_json_input(path: str) -> tuple[ClusterInput, str | None]:
    """A snapshot JSON file straight into the planner's arrays, named after the file, with the checks the
    planning job runs (reassignd/pipeline/validate.py); anything else wrong, or any problem found, is
    reported by the snapshot model's parser, which names every problem. Several times faster than building
    the model's objects (a 50,000-partition snapshot: 0.4 s instead of 2.2 s)."""
    from reassignd.pipeline.validate import broker_problems, partition_problems

    text = Path(path).read_text()
    name = Path(path).stem
    try:
        doc = json.loads(text)
        brokers = doc["brokers"]
        racks = {int(b["id"]): b.get("rack") or None for b in brokers}
        online = [int(b["id"]) for b in brokers if b.get("online", True)]
        rows = []
        listed, leaders, sizes = [], [], []
        for p in doc.get("partitions") or []:
            replicas = p["replicas"]
            removing = p.get("removing") or ()
            adding = p.get("adding") or ()
            leader = p.get("leader")
            size = p.get("size_bytes") or 0
            held = set(replicas)
            if (
                not isinstance(p["topic"], str)
                or not p["topic"]
                or type(p["partition"]) is not int
                or p["partition"] < 0
                or not held.issuperset(p.get("isr") or ())
                or not held.issuperset(adding)
                or not held.issuperset(removing)
            ):
                raise ValueError("a field the model checks")
            rows.append(
                (
                    str(p["topic"]),
                    int(p["partition"]),
                    [r for r in replicas if r not in removing],
                    int(size),
                    float(p.get("produce_bytes_per_sec") or 0.0),
                    -1 if leader is None else int(leader),
                    bool(adding or removing),
                )
            )
            listed.append(replicas)
            leaders.append(leader)
            sizes.append(size)
        bad = (
            len(racks) != len(brokers)
            or bool(broker_problems({"cluster": name, "broker": b} for b in racks))
            or bool(
                partition_problems(
                    name,
                    topics=[r[0] for r in rows],
                    numbers=[r[1] for r in rows],
                    replicas=listed,
                    leaders=leaders,
                    sizes=sizes,
                    brokers=set(racks),
                )
            )
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        bad = True
    if bad:  # let the model name every problem (or accept what the quick reading did not)
        snapshot = snapshot_from_json(text)
        return ClusterInput.from_snapshot(snapshot, name), snapshot.cluster_id
    return ClusterInput.build(name, racks, online, rows), doc.get("cluster_id")

"""Snapshots into DataFrames: the documented snapshot JSON (one file per cluster, or a directory of them
for a fleet) read straight into Spark with an explicit schema, or the same data as Parquet.

A JSON snapshot's cluster is named after its file (`prod-eu.json` -> `prod-eu`): what an operator chose,
where Kafka's cluster id is an opaque string; the id is kept beside it (`cluster_id`).

Parquet layout (see docs/planner.md): `DIR/brokers/` with columns cluster, id, rack, online and
`DIR/partitions/` with cluster, topic, partition, replicas, isr, leader, size_bytes, adding, removing and,
optionally, produce_bytes_per_sec.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reassignd.model import (
    INT32_MAX,
    INT64_MAX,
    MAX_REPLICATION_FACTOR,
    SNAPSHOT_FIELDS,
    SNAPSHOT_PARTITION_FIELDS,
    InvalidInputError,
    Problem,
    load_snapshot_document,
    snapshot_from_dict,
    topic_name_problem,
)
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


def read_json_input(path: str) -> tuple[ClusterInput, str | None, float | None]:
    """A snapshot JSON file straight into the planner's arrays, named after the file, read by the model's
    JSON parser and with the checks the planning job runs (reassignd/pipeline/validate.py) and the model's
    field names and value types; anything else wrong, or any problem found, is reported by the snapshot
    model's parser, which names every problem: `plan` refuses what validate-snapshot and place refuse, in
    the same words. Several times faster than building the model's objects. Also the cluster's id and when
    it was read (`read_at`), as the document says."""
    from reassignd.pipeline.validate import broker_problems, partition_problems

    raw = Path(path).read_bytes()
    name = Path(path).stem
    doc = load_snapshot_document(raw)  # the model's own parser and bounds: the same refusals, same words
    try:
        if not snapshot_shape_ok(doc):
            raise ValueError("a field the model checks")
        brokers = doc["brokers"]
        racks = {int(b["id"]): b.get("rack") or None for b in brokers}
        online = [int(b["id"]) for b in brokers if b.get("online", True)]
        rows = []
        listed, leaders, sizes = [], [], []
        topics_ok: dict[Any, bool] = {}
        for p in doc.get("partitions") or []:
            replicas = p["replicas"]
            removing = p.get("removing") or ()
            adding = p.get("adding") or ()
            leader = p.get("leader")
            size = p.get("size_bytes") or 0
            if not _partition_ok(p, topics_ok):
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
        snapshot = snapshot_from_dict(doc)
        return ClusterInput.from_snapshot(snapshot, name), snapshot.cluster_id, snapshot.read_at
    read_at = doc.get("read_at")  # checked by snapshot_shape_ok
    return ClusterInput.build(name, racks, online, rows), doc.get("cluster_id"), read_at


def snapshot_shape_ok(doc: Any) -> bool:
    """What the quick reading does not look at itself, checked as the model does: the document's fields,
    its version, and everything but the partitions (brokers, topics, configs: few), parsed by the model."""
    if (
        not isinstance(doc, dict)
        or not set(doc) <= SNAPSHOT_FIELDS
        or not isinstance(doc.get("partitions"), list)
    ):
        return False
    try:
        snapshot_from_dict({**doc, "partitions": []})
    except InvalidInputError:
        return False
    return True


def _partition_ok(p: Any, topics_ok: dict[Any, bool]) -> bool:
    """A partition entry the model would take as it is: a cheap, strict check of the common case (C-level
    passes over each list; each topic name checked once)."""
    if not p.keys() <= SNAPSHOT_PARTITION_FIELDS:
        return False
    topic = p["topic"]
    if type(topic) is not str:
        return False
    named = topics_ok.get(topic)
    if named is None:
        named = topics_ok[topic] = topic_name_problem(topic) is None
    number = p["partition"]
    if not named or type(number) is not int or not 0 <= number <= INT32_MAX:
        return False
    replicas = p["replicas"]
    if not _ids_ok(replicas) or not replicas:
        return False
    held = set(replicas)
    if len(held) != len(replicas):
        return False
    for name in ("isr", "adding", "removing"):
        subset = p[name] if name == "isr" else p.get(name, _EMPTY)
        if not _ids_ok(subset) or not held.issuperset(subset) or len(set(subset)) != len(subset):
            return False
    leader = p.get("leader", -1)
    if not (leader is None or (type(leader) is int and (leader == -1 or leader in held))):
        return False
    size = p.get("size_bytes", 0)
    return (
        type(size) is int
        and 0 <= size <= INT64_MAX
        and _rate_ok(p.get("produce_bytes_per_sec", 0.0))
        and _sizes_ok(p.get("replica_sizes", _NO_SIZES))
    )


_EMPTY: list[int] = []
_NO_SIZES: dict[str, int] = {}
_INT_ONLY = {int}


def _ids_ok(value: Any) -> bool:
    """A list of broker ids as the model reads them (no bool, no fraction, INT32, at most RF entries)."""
    return type(value) is list and (
        not value
        or (
            len(value) <= MAX_REPLICATION_FACTOR
            and set(map(type, value)) == _INT_ONLY
            and min(value) >= 0
            and max(value) <= INT32_MAX
        )
    )


def _rate_ok(value: Any) -> bool:
    return type(value) in (int, float) and 0 <= value < math.inf and value <= INT64_MAX


def _sizes_ok(value: Any) -> bool:
    if type(value) is not dict:
        return False
    if not value:
        return True
    for key, nbytes in value.items():
        if not (isinstance(key, str) and key.isdigit() and int(key) <= INT32_MAX):
            return False
        if type(nbytes) is not int or not 0 <= nbytes <= INT64_MAX:
            return False
    return True

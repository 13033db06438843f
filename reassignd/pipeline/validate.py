"""Set-based checks of a (fleet) snapshot before planning; every problem found is reported at once."""

from __future__ import annotations

from typing import Any

from reassignd.model import InvalidInputError, Problem
from reassignd.pipeline.io import Tables

MAX_REPORTED = 25


def validate_tables(tables: Tables) -> None:
    """Duplicate brokers or partitions, empty or duplicated replica lists, unknown brokers (anti-join),
    leaders outside the replicas, negative sizes: raises InvalidInputError naming each one."""
    from pyspark.sql import functions as F

    b, p = tables.brokers, tables.partitions
    checks: list[tuple[str, str, Any]] = []
    dup_brokers = b.groupBy("cluster", "broker").count().filter("count > 1")
    checks.append(
        (
            "brokers",
            "id",
            dup_brokers.select(
                "cluster",
                F.concat(F.lit("broker "), F.col("broker")).alias("where"),
                F.lit("duplicate broker id").alias("message"),
            ),
        )
    )
    checks.append(
        (
            "brokers",
            "id",
            b.filter(F.col("broker").isNull() | (F.col("broker") < 0)).select(
                "cluster",
                F.lit("brokers").alias("where"),
                F.lit("must be a non-negative integer").alias("message"),
            ),
        )
    )
    where = F.concat_ws("-", "topic", "partition")
    dup_parts = p.groupBy("cluster", "topic", "partition").count().filter("count > 1")
    checks.append(
        (
            "partitions",
            "partition",
            dup_parts.select(
                "cluster",
                F.concat_ws("-", "topic", "partition").alias("where"),
                F.lit("duplicate entry").alias("message"),
            ),
        )
    )
    bad_lists = p.filter(
        F.col("replicas").isNull()
        | (F.size("replicas") == 0)
        | (F.size(F.array_distinct("replicas")) != F.size("replicas"))
        | F.exists("replicas", lambda r: r.isNull() | (r < 0))
    )
    checks.append(
        (
            "partitions",
            "replicas",
            bad_lists.select(
                "cluster",
                where.alias("where"),
                F.concat(
                    F.lit("must be distinct non-negative broker ids, got "),
                    F.coalesce(F.to_json("replicas"), F.lit("null")),
                ).alias("message"),
            ),
        )
    )
    known = b.select("cluster", "broker")
    replicas = p.select("cluster", "topic", "partition", F.explode("replicas").alias("broker"))
    unknown = replicas.join(known, ["cluster", "broker"], "left_anti")
    checks.append(
        (
            "partitions",
            "replicas",
            unknown.select(
                "cluster",
                F.concat_ws("-", "topic", "partition").alias("where"),
                F.concat(F.lit("unknown broker id "), F.col("broker")).alias("message"),
            ),
        )
    )
    bad_leader = p.filter(
        F.col("leader").isNotNull() & (F.col("leader") != -1) & ~F.array_contains("replicas", F.col("leader"))
    )
    checks.append(
        (
            "partitions",
            "leader",
            bad_leader.select(
                "cluster",
                where.alias("where"),
                F.concat(F.lit("leader "), F.col("leader"), F.lit(" is not one of the replicas")).alias(
                    "message"
                ),
            ),
        )
    )
    checks.append(
        (
            "partitions",
            "size_bytes",
            p.filter(F.col("size_bytes") < 0).select(
                "cluster", where.alias("where"), F.lit("must not be negative").alias("message")
            ),
        )
    )

    union = None
    for _section, field, frame in checks:
        tagged = frame.withColumn("field", F.lit(field))
        union = tagged if union is None else union.unionByName(tagged)
    assert union is not None
    rows = union.limit(MAX_REPORTED).collect()
    if rows:
        raise InvalidInputError(
            "cluster snapshot",
            [Problem(f"{r['cluster']}: {r['where']}", r["field"], r["message"]) for r in rows],
        )

"""Balance planning at scale: a 1,000-broker cluster (3 DCs x 10 racks) with 1,000,000 partitions RF 3
just expanded by 100 empty brokers -> cluster-balance plan on local Spark; then a fleet of 50 clusters x
20,000 partitions planned in one Spark job. Prints time and moves / lower bound, and compares with
Kafka's `--generate` (AdminUtils over the new broker list) on the same cluster.

Inputs are generated here (seeded) and written to a temp dir: Parquet for the big cluster, the snapshot
JSON format for the fleet. Quick mode shrinks everything to seconds. Figures on the shared 2-core machine
are noisy.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from reassignd.model import Broker
from reassignd.placement.kafka import assign_replicas_to_brokers

DCS, RACKS = 3, 10


def _rack(broker: int) -> str:
    return f"/dc{broker % DCS}/rack{(broker // DCS) % RACKS}/host{broker // (DCS * RACKS * 2)}"


def _assignment(old: int, partitions: int, rng: np.random.Generator) -> np.ndarray:
    """One replica per data centre on random old brokers (leader DC rotating): an even, realistic spread."""
    per_dc = [np.arange(d, old, DCS) for d in range(DCS)]
    out = np.empty((partitions, DCS), dtype=np.int32)
    for j in range(DCS):
        dc = (np.arange(partitions) + j) % DCS
        for d in range(DCS):
            rows = dc == d
            out[rows, j] = per_dc[d][rng.integers(0, len(per_dc[d]), rows.sum())]
    return out


def _topics(partitions: int, per_topic: int) -> tuple[list[str], np.ndarray]:
    index = np.arange(partitions)
    names = [f"topic-{t:05d}" for t in range(partitions // per_topic + 1)]
    return [names[i] for i in index // per_topic], (index % per_topic).astype(np.int32)


def write_parquet_cluster(
    directory: Path, name: str, brokers: int, old: int, partitions: int, *, seed: int
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    replicas = _assignment(old, partitions, rng)
    topics, numbers = _topics(partitions, 1000)
    offsets = pa.array(np.arange(0, partitions * DCS + 1, DCS, dtype=np.int32))
    lists = pa.ListArray.from_arrays(offsets, pa.array(replicas.reshape(-1)))
    empty = pa.ListArray.from_arrays(
        pa.array(np.zeros(partitions + 1, dtype=np.int32)), pa.array([], pa.int32())
    )
    sizes = (rng.lognormal(20, 1.0, partitions)).astype(np.int64)
    table = pa.table(
        {
            "cluster": pa.array([name] * partitions),
            "topic": pa.array(topics),
            "partition": pa.array(numbers),
            "replicas": lists,
            "isr": lists,
            "leader": pa.array(replicas[:, 0]),
            "size_bytes": pa.array(sizes),
            "adding": empty,
            "removing": empty,
        }
    )
    (directory / "partitions").mkdir(parents=True)
    (directory / "brokers").mkdir(parents=True)
    pq.write_table(table, directory / "partitions" / "part-0.parquet")
    ids = list(range(brokers))
    pq.write_table(
        pa.table(
            {
                "cluster": [name] * brokers,
                "id": pa.array(ids, pa.int32()),
                "rack": [_rack(b) for b in ids],
                "online": [True] * brokers,
            }
        ),
        directory / "brokers" / "part-0.parquet",
    )
    np.save(directory / "replicas.npy", replicas)


def write_json_cluster(path: Path, name: str, brokers: int, old: int, partitions: int, *, seed: int) -> None:
    rng = np.random.default_rng(seed)
    replicas = _assignment(old, partitions, rng)
    topics, numbers = _topics(partitions, 1000)
    sizes = rng.lognormal(20, 1.0, partitions).astype(np.int64)
    doc = {
        "version": 1,
        "cluster_id": name,
        "brokers": [{"id": b, "rack": _rack(b), "online": True} for b in range(brokers)],
        "partitions": [
            {
                "topic": topics[i],
                "partition": int(numbers[i]),
                "replicas": replicas[i].tolist(),
                "isr": replicas[i].tolist(),
                "leader": int(replicas[i, 0]),
                "size_bytes": int(sizes[i]),
            }
            for i in range(partitions)
        ],
    }
    path.write_text(json.dumps(doc))


def kafka_generate_moves(replicas: np.ndarray, brokers: int, per_topic: int, seed: int) -> int:
    """Replicas `--generate` would move: AdminUtils (rack-aware) per topic over the full broker list."""
    meta = [Broker(b, _rack(b)) for b in range(brokers)]
    rng = random.Random(seed)
    moved = 0
    for start in range(0, len(replicas), per_topic):
        current = replicas[start : start + per_topic]
        target = assign_replicas_to_brokers(meta, len(current), current.shape[1], rng)
        for old, new in zip(current.tolist(), target, strict=True):
            moved += len(set(new) - set(old))
    return moved


def _check(outcome: Any) -> None:
    f = outcome.figures
    if f["spread_violations"]["after"] > f["spread_violations"]["before"]:
        raise AssertionError(f"{outcome.cluster}: rack spread got worse: {f['spread_violations']}")
    for tp, replicas in outcome.plan.targets.items():
        if len(set(replicas)) != len(replicas):
            raise AssertionError(f"{outcome.cluster}: {tp} has duplicate replicas {replicas}")


def run(quick: bool) -> dict[str, Any]:
    from reassignd.pipeline.planner import PlanRequest, plan_paths
    from reassignd.pipeline.session import spark_session

    brokers, old, partitions = (60, 54, 6_000) if quick else (1_000, 900, 1_000_000)
    fleet_clusters, fleet_partitions = (3, 1_000) if quick else (50, 20_000)
    figures: dict[str, Any] = {"brokers": brokers, "partitions": partitions}
    spark = spark_session()
    with tempfile.TemporaryDirectory(prefix="bench-planner-") as tmp:
        big = Path(tmp) / "big"
        started = time.monotonic()
        write_parquet_cluster(big, "big", brokers, old, partitions, seed=1)
        figures["generate_input_s"] = round(time.monotonic() - started, 1)

        started = time.monotonic()
        [outcome] = plan_paths(spark, [str(big)], PlanRequest(goal="cluster-balance", seed=1))
        elapsed = time.monotonic() - started
        _check(outcome)
        f = outcome.figures
        figures["cluster_balance_s"] = round(elapsed, 1)
        figures["replicas_moved"] = f["replicas_moved"]
        figures["lower_bound"] = f["lower_bound"]
        figures["moves_over_lower_bound"] = f["moves_over_lower_bound"]
        figures["preferred_leader_changes"] = f["preferred_leader_changes"]
        figures["rounds"] = f["rounds"]
        figures["stopped"] = f["stopped"]
        figures["outside_band_after"] = f["scores_after"]["replicas"]["outside_band"]
        figures["spread_violations"] = f["spread_violations"]
        print(
            f"   cluster-balance {brokers} brokers / {partitions} partitions: {elapsed:.1f}s, "
            f"{f['replicas_moved']} moves / lower bound {f['lower_bound']} = {f['moves_over_lower_bound']}",
            flush=True,
        )
        started = time.monotonic()
        replicas = np.load(big / "replicas.npy")
        figures["kafka_generate_moves"] = kafka_generate_moves(replicas, brokers, 1000, seed=1)
        figures["kafka_generate_s"] = round(time.monotonic() - started, 1)
        print(
            f"   kafka --generate equivalent would move {figures['kafka_generate_moves']} replicas",
            flush=True,
        )
        if f["replicas_moved"] >= figures["kafka_generate_moves"]:
            raise AssertionError("the planner moved as much as --generate")

        # the same cluster as one snapshot JSON document: read by Spark (too big for the driver's parser),
        # validated and planned in the planning job
        single = Path(tmp) / "big.json"
        write_json_cluster(single, "big", brokers, old, partitions, seed=1)
        started = time.monotonic()
        [from_json] = plan_paths(spark, [str(single)], PlanRequest(goal="cluster-balance", seed=1))
        figures["json_snapshot_mb"] = round(single.stat().st_size / 1e6, 1)
        figures["json_plan_s"] = round(time.monotonic() - started, 1)
        if from_json.plan != outcome.plan:
            raise AssertionError("the JSON snapshot planned differently from the same cluster in Parquet")
        print(
            f"   JSON snapshot ({figures['json_snapshot_mb']} MB) read, validated and planned: "
            f"{figures['json_plan_s']}s",
            flush=True,
        )
        single.unlink()

        fleet = Path(tmp) / "fleet"
        fleet.mkdir()
        per = 30
        for c in range(fleet_clusters):
            write_json_cluster(
                fleet / f"c{c:03d}.json", f"c{c:03d}", per, per - 3, fleet_partitions, seed=100 + c
            )
        started = time.monotonic()
        outcomes = plan_paths(spark, [str(fleet)], PlanRequest(goal="cluster-balance", seed=1))
        elapsed = time.monotonic() - started
        for o in outcomes:
            _check(o)
        moved = sum(o.figures["replicas_moved"] for o in outcomes)
        bound = sum(o.figures["lower_bound"] for o in outcomes)
        figures["fleet"] = {
            "clusters": len(outcomes),
            "partitions_each": fleet_partitions,
            "seconds": round(elapsed, 1),
            "replicas_moved": moved,
            "lower_bound": bound,
            "moves_over_lower_bound": round(moved / bound, 4) if bound else None,
            "clusters_within_threshold": sum(o.figures["stopped"] == "within threshold" for o in outcomes),
        }
        print(
            f"   fleet {len(outcomes)} x {fleet_partitions}: {elapsed:.1f}s, {moved} moves / {bound}",
            flush=True,
        )
    return figures

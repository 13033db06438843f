"""Simulator model at scale: 100 brokers, 100,000 partitions, 1,000 moving replicas (quick: 10 / 5,000 / 100).

Figures: build time and memory (RSS growth and tracemalloc peak of the build), the cost of one `advance()`
tick while the moves run (mean, p99, max over ticks, with ISR joins and reassignment completions happening
inside them), and the full-cluster iteration a Metadata response or GET /state needs (`state_dict()`,
`to_snapshot()`, a bare walk over every partition). Targets: a tick under 50 ms, memory under 1 GB.
The first 10 virtual seconds run in 0.1 s ticks (a server at time-scale 1 ticking 10 times a second), the
rest in 1 s ticks (several ISR joins each); wall time and process CPU time are both reported because the
machine is shared (2 cores, several busy processes): the figures are noisy.
"""

from __future__ import annotations

import gc
import os
import random
import time
import tracemalloc
from typing import Any

from reassignd.sim import SimCluster, load_scenario

MB = 1_000_000


def scenario_dict(brokers: int, partitions: int, seed: int = 1) -> dict[str, Any]:
    """A generated scenario: racks of 5 brokers in 2 DCs, 100 topics, sizes 10-500 MB, mixed produce rates."""
    rng = random.Random(seed)
    per_topic = max(1, partitions // 100)
    topics = []
    for t in range(partitions // per_topic):
        topics.append(
            {
                "name": f"topic-{t:03d}",
                "partitions": per_topic,
                "replication_factor": 3,
                "partition_bytes": [rng.randrange(10 * MB, 500 * MB) for _ in range(per_topic)],
                "produce_bytes_per_sec": [rng.choice([0, 0, 10_000, 100_000]) for _ in range(per_topic)],
            }
        )
    return {
        "seed": seed,
        "brokers": [{"id": i, "rack": f"/dc{i % 2 + 1}/rack{i % 10 // 2}"} for i in range(1, brokers + 1)],
        "topics": topics,
        "cluster_broker_configs": {
            "follower.replication.throttled.rate": str(50 * MB),
            "leader.replication.throttled.rate": str(50 * MB),
        },
    }


def _rss_bytes() -> int:
    try:
        with open(f"/proc/{os.getpid()}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def _start_moves(sim: SimCluster, moves: int, rng: random.Random) -> int:
    """Move one replica of `moves` random partitions to a broker that has none, throttled KIP-542 style."""
    brokers = sorted(sim.brokers)
    parts = [p for t in sim.topics.values() for p in t.partitions]
    chosen = rng.sample(parts, moves)
    throttles: dict[str, tuple[list[str], list[str]]] = {}
    for p in chosen:
        old = rng.choice(p.replicas)
        new = rng.choice([b for b in brokers if b not in p.replicas])
        target = [new if r == old else r for r in p.replicas]
        leaders, followers = throttles.setdefault(p.topic, ([], []))
        leaders += [f"{p.index}:{r}" for r in p.replicas]
        followers.append(f"{p.index}:{new}")
        sim.alter_partition_reassignment(p.topic, p.index, target)
    for topic, (leaders, followers) in throttles.items():
        sim.incremental_alter_configs(
            2,
            topic,
            [
                ("leader.replication.throttled.replicas", 0, ",".join(leaders)),
                ("follower.replication.throttled.replicas", 0, ",".join(followers)),
            ],
            False,
        )
    return len(chosen)


def run(quick: bool) -> dict[str, Any]:
    brokers, partitions, moves = (10, 5_000, 100) if quick else (100, 100_000, 1_000)
    rng = random.Random(42)
    data = scenario_dict(brokers, partitions)
    gc.collect()
    rss0 = _rss_bytes()
    tracemalloc.start()
    t0 = time.perf_counter()
    sim = SimCluster.from_scenario(load_scenario(data))
    build_s = time.perf_counter() - t0
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    gc.collect()
    rss_model = _rss_bytes() - rss0

    t0 = time.perf_counter()
    started = _start_moves(sim, moves, rng)
    start_moves_s = time.perf_counter() - t0

    # The busiest first 10 virtual seconds in 0.1 s ticks (a server at time-scale 1 advancing 10 times a
    # second), then 1 s ticks until every move has finished.
    tick = 1.0
    reallocations0 = sim.reallocations
    short_ticks: list[float] = []
    for _ in range(100):
        c0 = time.process_time()
        sim.advance(0.1)
        short_ticks.append(time.process_time() - c0)
    ticks: list[float] = []
    cpu_ticks: list[float] = []
    while sim.list_partition_reassignments(None) and len(ticks) < 20_000:
        t0, c0 = time.perf_counter(), time.process_time()
        sim.advance(tick)
        ticks.append(time.perf_counter() - t0)
        cpu_ticks.append(time.process_time() - c0)
    left = sim.list_partition_reassignments(None)
    assert not left, f"{len(left)} moves never finished after {sim.now} virtual seconds"
    ordered = sorted(ticks)

    t0 = time.perf_counter()
    walked = sum(len(p.replicas) for t in sim.topics.values() for p in t.partitions)
    walk_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    state = sim.state_dict()
    state_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    snapshot = sim.to_snapshot()
    snapshot_s = time.perf_counter() - t0
    assert len(state["partitions"]) == len(snapshot.partitions) == partitions
    assert walked == 3 * partitions

    figures = {
        "brokers": brokers,
        "partitions": partitions,
        "moving_replicas": started,
        "build_seconds": round(build_s, 3),
        "model_rss_mb": round(rss_model / MB, 1),
        "process_rss_mb": round(_rss_bytes() / MB, 1),
        "build_tracemalloc_peak_mb": round(traced_peak / MB, 1),
        "start_moves_seconds": round(start_moves_s, 3),
        "ticks": len(ticks),
        "tick_virtual_seconds": tick,
        "virtual_seconds_to_finish": round(sim.now, 1),  # the 10 s of short ticks included
        "tick_ms_mean": round(1000 * sum(ticks) / len(ticks), 3),
        "tick_ms_p99": round(1000 * ordered[int(0.99 * (len(ordered) - 1))], 3),
        "tick_ms_max": round(1000 * ordered[-1], 3),
        "tick_cpu_ms_mean": round(1000 * sum(cpu_ticks) / len(cpu_ticks), 3),
        "tick_cpu_ms_max": round(1000 * max(cpu_ticks), 3),
        "short_tick_virtual_seconds": 0.1,
        "short_tick_cpu_ms_mean": round(1000 * sum(short_ticks) / len(short_ticks), 3),
        "short_tick_cpu_ms_max": round(1000 * max(short_ticks), 3),
        "rate_recomputations": sim.reallocations - reallocations0,
        "cpu_ms_per_recomputation": round(
            1000 * (sum(cpu_ticks) + sum(short_ticks)) / max(1, sim.reallocations - reallocations0), 3
        ),
        "walk_all_partitions_ms": round(1000 * walk_s, 1),
        "state_dict_ms": round(1000 * state_s, 1),
        "to_snapshot_ms": round(1000 * snapshot_s, 1),
        "targets": {"tick_ms": 50, "memory_mb": 1000},
    }
    for key, value in figures.items():
        print(f"   {key}: {value}")
    return figures


if __name__ == "__main__":
    run(quick=True)

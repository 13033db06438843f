"""Control-plane cost: one controller cycle over TCP against the simulated cluster.

Issue target: one cycle for a 10,000-partition plan on a 100,000-partition cluster under 1 s median.
The simulator runs as its own process (as Kafka would), paused (time scale 0) so every cycle sees the
same in-flight work; the controller runs in this process with the real cluster adapter and SQLite store.
Also reported: CPU time of the cycle and this process's peak RSS.
"""

from __future__ import annotations

import asyncio
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reassignd import logs
from reassignd.cluster.kafka import AdminSettings, KafkaClusterAdmin
from reassignd.daemon.controller import Controller
from reassignd.engine import Limits
from reassignd.model import ReassignmentPlan, TopicPartition
from reassignd.store.aio import AsyncStore
from reassignd.store.sqlite import SqliteStore
from tests.services.simulator import SimProcess


def cluster_scenario(brokers: int, topics: int, partitions_per_topic: int) -> dict[str, Any]:
    return {
        "seed": 3,
        "brokers": [{"id": b, "rack": f"/dc{b % 3}/rack{b % 10}"} for b in range(1, brokers + 1)],
        "topics": [
            {
                "name": f"topic-{t:03d}",
                "partitions": partitions_per_topic,
                "replication_factor": 3,
                "partition_bytes": 50_000_000,
                "produce_bytes_per_sec": 10_000,
                "assignment": [
                    [((t + p + k * 7) % brokers) + 1 for k in range(3)] for p in range(partitions_per_topic)
                ],
            }
            for t in range(topics)
        ],
    }


def move_plan(scenario: dict[str, Any], count: int, brokers: int, skip: int = 0) -> ReassignmentPlan:
    """Replace the last replica of `count` partitions after the first `skip` with a new broker."""
    targets: dict[TopicPartition, tuple[int, ...]] = {}
    seen = 0
    for topic in scenario["topics"]:
        for index, replicas in enumerate(topic["assignment"]):
            seen += 1
            if seen <= skip:
                continue
            if len(targets) >= count:
                return ReassignmentPlan(targets)
            spare = next(c for c in ((index + k) % brokers + 1 for k in range(brokers)) if c not in replicas)
            targets[TopicPartition(topic["name"], index)] = (*replicas[:2], spare)
    return ReassignmentPlan(targets)


async def measure(bootstrap: str, plan: ReassignmentPlan, cycles: int, workdir: Path) -> dict[str, Any]:
    admin = KafkaClusterAdmin(AdminSettings(client={"bootstrap.servers": bootstrap}, request_timeout=60))
    (workdir / "state").mkdir(parents=True, exist_ok=True)
    store = AsyncStore(SqliteStore(workdir / "state"))
    limits = Limits.from_mapping(
        {
            "reassignment.max.incoming.replica.movements.per.broker": 10,
            "reassignment.max.outgoing.replica.movements.per.broker": 10,
            "leader.reassignment.throttled.rate": 50_000_000,
            "follower.reassignment.throttled.rate": 50_000_000,
        }
    )
    controller = Controller(admin, store, limits)
    started = time.perf_counter()
    await controller.submit_plan(plan)
    submit_seconds = time.perf_counter() - started
    walls: list[float] = []
    cpus: list[float] = []
    for _ in range(cycles):
        wall, cpu = time.perf_counter(), time.process_time()
        status = await controller.cycle()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    await admin.close()
    await store.close()
    return {
        "submit_seconds": round(submit_seconds, 3),
        "first_cycle_seconds": round(walls[0], 3),
        "cycle_median_seconds": round(statistics.median(walls[1:]), 3),
        "cycle_cpu_median_seconds": round(statistics.median(cpus[1:]), 3),
        "cycles_measured": len(walls) - 1,
        "last_status": status,
    }


def run(quick: bool = False) -> dict[str, Any]:
    logs.configure("error", json=True)
    brokers, topics, per_topic = (20, 10, 100) if quick else (100, 100, 1000)
    sizes = [100] if quick else [1_000, 10_000]
    scenario = cluster_scenario(brokers, topics, per_topic)
    results: dict[str, Any] = {"cluster_partitions": topics * per_topic, "brokers": brokers, "plans": {}}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        with SimProcess(scenario, workdir / "sim", time_scale=0) as sim:
            used = 0
            for size in sizes:
                plan = move_plan(scenario, size, brokers, skip=used)
                used += size
                figures = asyncio.run(
                    measure(sim.bootstrap_servers, plan, 3 if quick else 8, workdir / f"p{size}")
                )
                results["plans"][str(size)] = figures
                print(
                    f"   plan of {size:>6} partitions on {topics * per_topic} partitions: {figures}",
                    flush=True,
                )
    results["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(
        f"   peak RSS of the daemon side: {results['peak_rss_mb']} MB (target: cycle median < 1 s at 10,000)"
    )
    return results


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)

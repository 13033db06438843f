"""A daemon that has run for a year: does its cycle cost and memory stay flat as history piles up?

Issue target: with 1,000 finished plans of 1,000-10,000 partitions in the store (their bodies, partition
rows and journals), the steady and moving cycles of a running plan and the daemon's RSS stay within 10% of
the same measurement with an empty history. Each measurement runs in its own child process: the real
controller over the simulator's model (in process: the history's cost is the store's, not the network's),
the real SQLite store on disk (fsync on every commit). The history is written straight into the store
beforehand, as many plans a daemon would have ended, each with its rows and journal.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_daemon import peak_rss_mib
from reassignd import logs
from reassignd.daemon.clock import SteadyClock
from reassignd.daemon.controller import Controller
from reassignd.engine import Limits
from reassignd.model import TopicPartition
from reassignd.sim import SimCluster, load_scenario
from reassignd.sim.admin import SimClusterAdmin
from reassignd.store.aio import AsyncStore
from reassignd.store.base import Event, EventKind, PlanStatus, WriteBatch
from reassignd.store.sqlite import SqliteStore
from tests.daemon.inprocess import plan_of

TARGET = 0.10
LIMITS = {
    "reassignment.max.incoming.replica.movements.per.broker": 5,
    "leader.reassignment.throttled.rate": 20_000_000,
    "follower.reassignment.throttled.rate": 20_000_000,
}


def scenario(brokers: int, partitions: int) -> dict[str, Any]:
    return {
        "seed": 5,
        "brokers": [{"id": b, "rack": f"/dc1/r{b % 4}"} for b in range(1, brokers + 1)],
        "topics": [
            {
                "name": "t",
                "partitions": partitions,
                "replication_factor": 3,
                "partition_bytes": 200_000_000,
                "produce_bytes_per_sec": 10_000,
                "assignment": [[(p + k) % (brokers - 1) + 1 for k in range(3)] for p in range(partitions)],
            }
        ],
    }


def fill_history(store: SqliteStore, plans: int, sizes: tuple[int, int]) -> None:
    """`plans` ended plans of sizes from sizes[0] to sizes[1] partitions, each with rows and a journal."""
    low, high = sizes
    for index in range(plans):
        count = low + (high - low) * index // max(1, plans - 1)
        plan_id = f"old-{index:05d}"
        body = {
            "version": 1,
            "partitions": [
                {"topic": f"h{index % 50}", "partition": p, "replicas": [1, 2, 3]} for p in range(count)
            ],
        }
        store.commit(WriteBatch().submit_plan(plan_id, body, {}))
        batch = WriteBatch().set_status(plan_id, PlanStatus.RUNNING)
        for p in range(count):
            tp = TopicPartition(f"h{index % 50}", p)
            batch.put_partition_state(
                plan_id, tp, {"topic": tp.topic, "partition": p, "status": "done", "step": 2}
            )
            batch.append(Event(EventKind.STEP_STARTED, plan_id, tp, 0, {"target": [1, 2, 3]}))
            batch.append(Event(EventKind.STEP_FINISHED, plan_id, tp, 0, {"bytes": 1}))
        batch.set_summary(plan_id, {"state": "completed", "partitions_total": count, "percent": 100.0})
        store.commit(batch)
        store.commit(WriteBatch().set_status(plan_id, PlanStatus.COMPLETED))


async def _cycles(directory: Path, partitions: int, cycles: int) -> dict[str, float]:
    sim = SimCluster.from_scenario(load_scenario(scenario(20, partitions)))
    store = AsyncStore(SqliteStore(directory))
    controller = Controller(
        SimClusterAdmin(sim),
        store,
        Limits.from_mapping(LIMITS),
        clock=SteadyClock(lambda: 1.9e9 + sim.now, lambda: sim.now),
    )
    await controller.start()
    idle = []
    for _ in range(cycles):
        started = time.perf_counter()
        await controller.cycle()
        idle.append(time.perf_counter() - started)
    targets = {("t", p): [20, *sim.topics["t"].partitions[p].replicas[1:]] for p in range(partitions)}
    await controller.submit_plan(plan_of(targets))
    await controller.cycle()
    steady, moving = [], []
    for _ in range(cycles):
        started = time.perf_counter()
        await controller.cycle()
        steady.append(time.perf_counter() - started)
    for _ in range(cycles):
        sim.advance(5.0)
        started = time.perf_counter()
        await controller.cycle()
        moving.append(time.perf_counter() - started)
    started = time.perf_counter()
    controller.list_plans()
    listing = time.perf_counter() - started
    await store.close()
    return {
        "idle_cycle_median_s": statistics.median(idle),
        "steady_cycle_median_s": statistics.median(steady),
        "moving_cycle_median_s": statistics.median(moving),
        "list_plans_s": listing,
        # VmHWM, not ru_maxrss: a spawned child's ru_maxrss is its parent's peak when that is higher (in a
        # full `make bench`, the runner's 1.9 GiB after the peers and the planner, for both stores alike)
        "peak_rss_mib": peak_rss_mib(),
    }


def _child(directory: str, partitions: int, cycles: int, out: Any) -> None:
    logs.configure("error", json=True)
    try:
        out.put(asyncio.run(_cycles(Path(directory), partitions, cycles)))
    except BaseException as exc:  # the parent must not wait for a dead child
        out.put({"error": repr(exc)})
        raise


def measure(directory: Path, partitions: int, cycles: int) -> dict[str, float]:
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=_child, args=(str(directory), partitions, cycles, queue))
    child.start()
    figures: dict[str, Any] = queue.get(timeout=1800)
    child.join()
    if "error" in figures:
        raise RuntimeError(f"measurement failed: {figures['error']}")
    return figures


def run(quick: bool = False) -> dict[str, Any]:
    plans, sizes, partitions, cycles = (
        (50, (200, 1_000), 500, 10) if quick else (1_000, (1_000, 10_000), 2_000, 20)
    )
    results: dict[str, Any] = {
        "history_plans": plans,
        "history_partitions": sizes,
        "running_plan": partitions,
    }
    with tempfile.TemporaryDirectory() as tmp:
        empty, full = Path(tmp) / "empty", Path(tmp) / "full"
        empty.mkdir()
        full.mkdir()
        SqliteStore(empty).close()
        started = time.perf_counter()
        history = SqliteStore(full, synchronous="NORMAL")
        fill_history(history, plans, sizes)
        history.close()
        results["history_fill_seconds"] = round(time.perf_counter() - started, 1)
        results["history_db_mib"] = round(sum(f.stat().st_size for f in full.iterdir()) / 2**20, 1)
        # alternated, best of two: the machine is shared, a single run of each is mostly noise
        rounds: dict[str, list[dict[str, Any]]] = {"empty": [], "full": []}
        for attempt in range(2):
            for name, pristine in (("empty", empty), ("full", full)):
                copy = Path(tmp) / f"{name}-{attempt}"
                shutil.copytree(pristine, copy)  # each run starts from the same history
                rounds[name].append(measure(copy, partitions, cycles))
        for name, runs in rounds.items():
            results[name] = {key: min(r[key] for r in runs) for key in runs[0]}
    ratios = {
        key: round(results["full"][key] / results["empty"][key], 3)
        for key in ("steady_cycle_median_s", "moving_cycle_median_s", "peak_rss_mib")
        if results["empty"][key]
    }
    results["full_over_empty"] = ratios
    results["within_target"] = all(r <= 1 + TARGET for r in ratios.values())
    print(f"   history: {plans} ended plans ({results['history_db_mib']} MiB), running plan {partitions}")
    for name in ("empty", "full"):
        print(f"   {name:<5} {results[name]}")
    print(f"   full/empty: {ratios} (target <= {1 + TARGET})", flush=True)
    return results


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)

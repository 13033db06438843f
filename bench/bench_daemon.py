"""Control-plane cost: one controller cycle over TCP against the simulated cluster.

Issue targets: one cycle for a 10,000-partition plan on a 100,000-partition cluster under 1 s median;
figures for plans of 1,000 / 10,000 / 100,000 partitions. The simulator runs as its own process (as Kafka
would), paused (time scale 0) so every cycle sees the same in-flight work. Each plan size is measured in its
own child process (the daemon side: real cluster adapter, SQLite store, controller), so its memory figure is
that plan's alone: peak RSS of the child, and the growth over the child's RSS before the plan was submitted.
The 100,000-partition plan needs every partition, so it gets a fresh simulator.

Steady cycles (nothing changed since the last one) are most cycles of a long move. Moving cycles are the
expensive ones: before each, the simulator's virtual clock is advanced (outside the timing) so steps
complete, and the cycle journals them, starts the next and rewrites throttles.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reassignd import logs
from reassignd.cluster.kafka import AdminSettings, KafkaClusterAdmin
from reassignd.daemon.allocator import limit_malloc_arenas
from reassignd.daemon.collector import Pacer, tune_collector
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


def _cpu_seconds(pid: int | None) -> float:
    """User + system CPU time of process `pid` (the simulator), to tell its share of a phase from ours."""
    if pid is None:
        return 0.0
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mib() -> float:
    """This process image's peak RSS (see _status_mb)."""
    return _status_mb("VmHWM")


def _status_mb(field: str) -> float:
    """VmRSS (now) or VmHWM (peak) of this process image, in MiB.

    Not ru_maxrss: Linux carries it across fork and exec, so a spawned child would report its parent's
    peak. VmHWM belongs to the address space that exec created.
    """
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def _child(  # noqa: PLR0917 - a multiprocessing target takes its arguments positionally
    bootstrap: str,
    plan: dict[str, Any],
    cycles: int,
    workdir: str,
    out: Any,
    control: str | None,
    sim_pid: int | None,
) -> None:
    logs.configure("error", json=True)
    tune_collector()  # as `reassignd run` does (daemon/app.py)
    limit_malloc_arenas()
    before = _status_mb("VmRSS")
    figures = asyncio.run(
        measure(
            bootstrap,
            ReassignmentPlan.from_dict(plan),
            cycles,
            Path(workdir),
            control=control,
            sim_pid=sim_pid,
        )
    )
    figures["rss_before_plan_mb"] = round(before, 1)
    figures["peak_rss_mb"] = round(peak_rss_mib(), 1)
    figures["rss_after_cycles_mb"] = round(_status_mb("VmRSS"), 1)
    figures["plan_memory_mb"] = round(figures["peak_rss_mb"] - before, 1)
    out.put(figures)


def measure_in_child(
    bootstrap: str,
    plan: ReassignmentPlan,
    cycles: int,
    workdir: Path,
    *,
    control: str | None = None,
    sim_pid: int | None = None,
) -> dict[str, Any]:
    """`control`: the simulator's control URL, to also measure moving cycles (it must be paused)."""
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    child = context.Process(
        target=_child, args=(bootstrap, plan.to_dict(), cycles, str(workdir), out, control, sim_pid)
    )
    child.start()
    try:
        figures: dict[str, Any] = out.get(timeout=3600)
    finally:
        child.join(timeout=60)
    if child.exitcode not in (0, None):
        raise RuntimeError(f"daemon benchmark child failed with exit code {child.exitcode}")
    return figures


def _advance(control: str, seconds: float) -> None:
    request = urllib.request.Request(
        control + "/advance",
        data=json.dumps({"seconds": seconds}).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=600) as response:
        response.read()


def daemon_parts(bootstrap: str, workdir: Path) -> tuple[KafkaClusterAdmin, AsyncStore, Controller]:
    """The daemon's side as `reassignd run` wires it: the real cluster adapter, a SQLite store, the
    controller with the benchmark's limits."""
    settings = AdminSettings(client={"bootstrap.servers": bootstrap}, request_timeout=60)
    admin = KafkaClusterAdmin(settings)
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
    return admin, store, Controller(admin, store, limits)


MOVING_CYCLES = 12
ADVANCE_SECONDS = 1.0  # virtual seconds per moving cycle: every partition is 50 MB at ~5 MB/s per copy


async def measure(
    bootstrap: str,
    plan: ReassignmentPlan,
    cycles: int,
    workdir: Path,
    *,
    control: str | None = None,
    sim_pid: int | None = None,
) -> dict[str, Any]:
    """`sim_pid`: the simulator's process, whose CPU time per phase says how much of a wall figure is the
    simulated cluster answering rather than the daemon working."""
    admin, store, controller = daemon_parts(bootstrap, workdir)
    cycle = Pacer().paced(controller.cycle)  # as `reassignd run` drives it (daemon/app.py)
    started = time.perf_counter()
    await admin.learn_cluster_size()  # as `reassignd run` does at its start
    size_read_seconds = time.perf_counter() - started
    started, sim_started = time.perf_counter(), _cpu_seconds(sim_pid)
    await controller.submit_plan(plan)
    submit_seconds = time.perf_counter() - started
    submit_sim = _cpu_seconds(sim_pid) - sim_started
    walls: list[float] = []
    cpus: list[float] = []
    sims: list[float] = []
    for _ in range(cycles):
        wall, cpu, sim = time.perf_counter(), time.process_time(), _cpu_seconds(sim_pid)
        status = await cycle()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
        sims.append(_cpu_seconds(sim_pid) - sim)
    figures: dict[str, Any] = {
        "submit_seconds": round(submit_seconds, 3),
        "first_cycle_seconds": round(walls[0], 3),
        "cycle_median_seconds": round(statistics.median(walls[1:]), 3),
        "cycle_cpu_median_seconds": round(statistics.median(cpus[1:]), 3),
        "cycles_measured": len(walls) - 1,
        "start_size_read_seconds": round(size_read_seconds, 3),
    }
    if sim_pid is not None:
        figures["sim_cpu_seconds"] = {
            "submit": round(submit_sim, 3),
            "first_cycle": round(sims[0], 3),
            "cycle_median": round(statistics.median(sims[1:]), 3),
        }
    if control is not None:
        moving: list[float] = []
        moving_sim: list[float] = []
        for _ in range(MOVING_CYCLES):
            await asyncio.to_thread(_advance, control, ADVANCE_SECONDS)
            wall, sim = time.perf_counter(), _cpu_seconds(sim_pid)
            status = await cycle()
            moving.append(time.perf_counter() - wall)
            moving_sim.append(_cpu_seconds(sim_pid) - sim)
        if sim_pid is not None:
            figures["sim_cpu_seconds"]["moving_cycle_median"] = round(statistics.median(moving_sim), 3)
        figures["moving_cycle_median_seconds"] = round(statistics.median(moving), 3)
        figures["moving_cycle_max_seconds"] = round(max(moving), 3)
        figures["moving_cycles_measured"] = len(moving)
    figures["last_status"] = status
    await admin.close()
    await store.close()
    return figures


MILLION = (1000, 1000, 1000)  # brokers, topics, partitions per topic: a 1,000,000-partition cluster
MILLION_PLAN = 100_000


def _peak_rss_of(pid: int) -> float:
    """VmHWM of another process (the simulator), in MiB."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def measure_million(workdir: Path) -> dict[str, Any]:
    """Issue 30: a 100,000-partition plan on a 1,000,000-partition cluster, the same figures as `plans`, and
    the simulator's own cost beside them (its start, its peak memory)."""
    scenario = cluster_scenario(*MILLION)
    started = time.perf_counter()
    sim = SimProcess(scenario, workdir / "sim-million", time_scale=0).start(timeout=600)
    sim_start = time.perf_counter() - started
    try:
        figures = measure_in_child(
            sim.bootstrap_servers,
            move_plan(scenario, MILLION_PLAN, MILLION[0]),
            4,
            workdir / "p-million",
            control=sim.control_url,
            sim_pid=sim.pid,
        )
        figures["sim_start_seconds"] = round(sim_start, 1)
        figures["sim_peak_rss_mb"] = round(_peak_rss_of(sim.pid), 1)
    finally:
        sim.stop(timeout=60)
    figures["cluster_partitions"] = MILLION[1] * MILLION[2]
    figures["brokers"] = MILLION[0]
    figures["plan_partitions"] = MILLION_PLAN
    figures["measured_at_utc"] = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    return figures


def run(quick: bool = False) -> dict[str, Any]:
    logs.configure("error", json=True)
    brokers, topics, per_topic = (20, 10, 100) if quick else (100, 100, 1000)
    sizes = [100] if quick else [1_000, 10_000, 100_000]
    scenario = cluster_scenario(brokers, topics, per_topic)
    total = topics * per_topic
    results: dict[str, Any] = {"cluster_partitions": total, "brokers": brokers, "plans": {}}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        used = 0
        sim: SimProcess | None = None
        try:
            for size in sizes:
                if sim is None or used + size > total:
                    if sim is not None:
                        sim.stop()
                    sim = SimProcess(scenario, workdir / f"sim{size}", time_scale=0).start()
                    used = 0
                plan = move_plan(scenario, size, brokers, skip=used)
                used += size
                cycles = 3 if quick else 8
                control = sim.control_url
                figures = measure_in_child(
                    sim.bootstrap_servers,
                    plan,
                    cycles,
                    workdir / f"p{size}",
                    control=control,
                    sim_pid=sim.pid,
                )
                results["plans"][str(size)] = figures
                print(f"   plan of {size:>6} partitions on {total} partitions: {figures}", flush=True)
        finally:
            if sim is not None:
                sim.stop()
        if not quick:
            results["million"] = measure_million(workdir)
            print(f"   plan of {MILLION_PLAN} partitions on 1,000,000 partitions: {results['million']}")
    print(
        "   targets (issue 20): 100,000: submit < 5 s, first cycle < 5 s, steady < 1 s, moving < 1.5 s,"
        " peak RSS < 400 MiB; 10,000: steady < 0.25 s (2-core machine shared with other jobs: noisy)"
    )
    return results


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)

"""The daemon's plan proposals on a warm Spark session (reassignd/daemon/proposals.py), timed as an operator
waits for them: `ProposalService.propose` from the request to the plan and its figures.

* 10,000 and 50,000 partitions: the live cluster view is read from the simulator over TCP through the
  cluster adapter (metadata and DescribeLogDirs sizes), as the daemon reads it, then planned.
* 1,000,000 partitions: the simulator is not built for a cluster that size, so the view is a snapshot held
  in memory (what the adapter would return); the time is the planning on the warm session.

Targets: a proposal for 10,000 partitions under 10 s warm, 50,000 under 30 s, 1,000,000 under 5 minutes.
Each size is proposed twice after the warm-up; the second figure is the steady state. Clusters are the
peer benchmark's rebalance scenario (skewed, three racks); the goal cluster-balance --size-aware.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import peer_clusters as clusters
from reassignd.model import ClusterSnapshot


def _scenario(snapshot: ClusterSnapshot) -> dict[str, Any]:
    topics: dict[str, list[Any]] = {}
    for tp in sorted(snapshot.partitions):
        topics.setdefault(tp.topic, []).append(snapshot.partitions[tp])
    return {
        "seed": 1,
        "brokers": [{"id": b.id, "rack": b.rack} for b in snapshot.brokers.values()],
        "topics": [
            {
                "name": name,
                "partitions": len(parts),
                "replication_factor": 3,
                "partition_bytes": [p.size_bytes for p in parts],
                "produce_bytes_per_sec": 0,
                "assignment": [list(p.replicas) for p in parts],
            }
            for name, parts in topics.items()
        ],
    }


async def _propose_twice(service: Any, body: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for _ in range(2):
        started = time.monotonic()
        result = await service.propose(body)
        out.append(
            {
                "seconds": round(time.monotonic() - started, 2),
                "snapshot_seconds": result["snapshot_seconds"],
                "replicas_moved": result["figures"]["replicas_moved"],
                "lower_bound": result["figures"]["lower_bound"],
                "stopped": result["figures"]["stopped"],
            }
        )
    return out


async def _measure(sizes: list[int], live_up_to: int) -> dict[str, Any]:
    from reassignd.cluster.kafka import AdminSettings, KafkaClusterAdmin
    from reassignd.daemon.proposals import ProposalService
    from tests.services.simulator import SimProcess

    current: dict[str, Any] = {}

    async def read() -> ClusterSnapshot:
        if "admin" in current:
            snapshot: ClusterSnapshot = await current["admin"].snapshot(with_sizes=True)
            return snapshot
        held: ClusterSnapshot = current["snapshot"]
        return held

    service = ProposalService(read, master="local[*]")
    started = time.monotonic()
    await service.start()
    figures: dict[str, Any] = {"session_start_s": round(time.monotonic() - started, 1)}
    body = {"goal": "cluster-balance", "size_aware": True}
    try:
        for partitions in sizes:
            snapshot = clusters.build("rebalance", partitions, threshold=0.1).snapshot
            if partitions <= live_up_to:
                with (
                    tempfile.TemporaryDirectory(prefix="bench-proposals-") as tmp,
                    SimProcess(_scenario(snapshot), workdir=Path(tmp), time_scale=0) as sim,
                ):
                    admin = KafkaClusterAdmin(
                        AdminSettings(client={"bootstrap.servers": sim.bootstrap_servers})
                    )
                    current.clear()
                    current["admin"] = admin
                    try:
                        runs = await _propose_twice(service, body)
                    finally:
                        await admin.close()
                source = "live view from the simulator over TCP"
            else:
                current.clear()
                current["snapshot"] = snapshot
                runs = await _propose_twice(service, body)
                source = "snapshot in memory"
            figures[str(partitions)] = {"source": source, "runs": runs}
            print(f"   {partitions:,} partitions ({source}): {[r['seconds'] for r in runs]} s", flush=True)
    finally:
        await service.close()
    return figures


TARGETS = {10_000: 10.0, 50_000: 30.0, 1_000_000: 300.0}


def run(quick: bool) -> dict[str, Any]:
    sizes = [2_000] if quick else [10_000, 50_000, 1_000_000]
    figures = asyncio.run(_measure(sizes, live_up_to=50_000))
    for size, target in TARGETS.items():
        if str(size) in figures:
            warm = figures[str(size)]["runs"][-1]["seconds"]
            figures[str(size)]["target_s"] = target
            figures[str(size)]["met"] = warm < target
            print(
                f"   {size:,}: {warm} s warm, target {target:.0f} s: {'met' if warm < target else 'MISSED'}"
            )
    return figures

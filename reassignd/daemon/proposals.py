"""Plan proposals from the live cluster view (`POST /v1/proposals`, `reassignd propose`), planned on one
Spark session the daemon keeps warm.

With `proposals.enable`, the daemon starts its Spark session before anything else runs (the JVM's output
goes to the Spark log file, docs/planner.md, and nothing else may print while the process's descriptors
point there), then warms it in the background with a tiny plan, so Python workers and code paths are hot
when the first request comes. A proposal reads a fresh snapshot with sizes through the cluster adapter,
plans it with the planner core on the warm session (one proposal at a time: they share the session), and
returns the plan, ready for `POST /v1/plans`, with the report's figures. Nothing is submitted or changed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import replace
from typing import Any

from reassignd import config_keys, logs
from reassignd.daemon.service import JSON, ServiceError
from reassignd.model import (
    Broker,
    ClusterSnapshot,
    InvalidInputError,
    PartitionState,
    Problem,
    TopicPartition,
)
from reassignd.placement.capacity import Capacities, load_capacities
from reassignd.placement.goals import PlanRequest, request_from_json

log = logs.get_logger("reassignd.proposals")
ReadSnapshot = Callable[[], Awaitable[ClusterSnapshot]]
ReadDecommissioned = Callable[[], Awaitable[Collection[int]]]


def _warm_up_cluster() -> ClusterSnapshot:
    parts = [
        PartitionState(
            TopicPartition("warm-up", i), (i % 3, (i + 1) % 3), (i % 3, (i + 1) % 3), i % 3, size_bytes=1
        )
        for i in range(6)
    ]
    return ClusterSnapshot.build([Broker(b) for b in range(4)], parts, cluster_id="warm-up")


class ProposalService:
    """One warm Spark session serving proposals (`on_spark=False` plans in this process instead, with the
    same core and the same plans: for tests of the API's shapes)."""

    def __init__(
        self,
        read_snapshot: ReadSnapshot,
        *,
        master: str | None = None,
        capacities: Capacities | None = None,
        name: str | None = None,
        on_spark: bool = True,
    ) -> None:
        self.read_snapshot = read_snapshot
        self.master = master
        self.capacities = capacities
        self.name = name
        self.on_spark = on_spark
        self.spark: Any = None
        self._lock = asyncio.Lock()
        self._warm: asyncio.Task[None] | None = None
        self.served = 0
        self.decommissioned: ReadDecommissioned | None = None
        """The brokers marked decommissioned (the daemon's store): every proposal excludes them."""

    async def start(self) -> None:
        """Start the session (blocking the event loop's other work for that long: the process's output is
        redirected meanwhile), then warm it in the background."""
        from reassignd.pipeline.session import spark_session

        if not self.on_spark:
            return
        started = time.monotonic()
        self.spark = await asyncio.to_thread(spark_session, self.master, "reassignd-proposals")
        log.info("proposal planner's Spark session started", seconds=round(time.monotonic() - started, 1))
        self._warm = asyncio.create_task(self._warm_up())

    async def _warm_up(self) -> None:
        from reassignd.pipeline.planner import plan_snapshots

        started = time.monotonic()
        await asyncio.to_thread(
            plan_snapshots, self.spark, [_warm_up_cluster()], PlanRequest("cluster-balance")
        )
        log.info("proposal planner warm", seconds=round(time.monotonic() - started, 1))

    async def propose(self, body: Mapping[str, Any]) -> JSON:
        try:
            request = request_from_json(dict(body), self.capacities)
        except InvalidInputError as exc:
            raise ServiceError("invalid_request", f"invalid {exc.what}", exc.problems) from None
        if self.spark is None and self.on_spark:
            raise ServiceError("unavailable", "the proposal planner is not started")
        if self._warm is not None:
            try:
                await self._warm
            except Exception as exc:  # the session is broken: say so on every request
                raise ServiceError("unavailable", f"the proposal planner could not start: {exc}") from None
        async with self._lock:
            return await self._propose(request)

    async def _without_decommissioned(self, request: PlanRequest, snapshot: ClusterSnapshot) -> PlanRequest:
        """The request with every decommissioned broker the cluster knows excluded: no goal gives one a
        replica. Filling one is refused, naming it."""
        banned = set(await self.decommissioned()) if self.decommissioned is not None else set()
        banned &= set(snapshot.brokers)
        if not banned:
            return request
        filled = sorted(banned & set(request.brokers)) if request.goal == "fill" else []
        if filled:
            message = f"broker(s) {filled} are decommissioned: recommission them before filling them"
            raise ServiceError("invalid_request", message, (Problem("request", "brokers", message),))
        excluded = tuple(sorted(set(request.exclude_brokers) | banned))
        return replace(request, exclude_brokers=excluded)

    def _plan(self, snapshot: ClusterSnapshot, request: PlanRequest, name: str) -> Any:
        from reassignd.pipeline.planner import from_result, plan_snapshots
        from reassignd.placement.assignment import ClusterInput
        from reassignd.placement.optimizer import optimise

        if self.spark is not None:
            [outcome] = plan_snapshots(self.spark, [snapshot], request, names=[name])
            return outcome
        outcome = from_result(optimise(ClusterInput.from_snapshot(snapshot, name), request))
        outcome.figures["cluster_id"] = snapshot.cluster_id
        return outcome

    async def _propose(self, request: PlanRequest) -> JSON:
        started = time.monotonic()
        try:
            snapshot = await self.read_snapshot()
        except Exception as exc:
            raise ServiceError("unavailable", f"cannot read the cluster: {exc}") from None
        read = time.monotonic() - started
        request = await self._without_decommissioned(request, snapshot)
        name = self.name or snapshot.cluster_id or "cluster"
        try:
            outcome = await asyncio.to_thread(self._plan, snapshot, request, name)
        except InvalidInputError as exc:
            raise ServiceError("invalid_request", f"invalid {exc.what}", exc.problems) from None
        seconds = time.monotonic() - started
        self.served += 1
        figures = outcome.figures
        log.info(
            "proposal planned",
            goal=request.goal,
            partitions=figures["partitions"],
            replicas_moved=figures["replicas_moved"],
            seconds=round(seconds, 2),
        )
        return {
            "cluster": name,
            "cluster_id": snapshot.cluster_id,
            "seconds": round(seconds, 3),
            "snapshot_seconds": round(read, 3),
            "plan": outcome.plan.to_dict(),
            "figures": figures,
        }

    async def close(self) -> None:
        if self._warm is not None and not self._warm.done():
            self._warm.cancel()
        if self.spark is not None:
            spark, self.spark = self.spark, None
            await asyncio.to_thread(spark.stop)


async def start_proposals(config: Any, cluster: Any) -> ProposalService | None:
    """The daemon's proposal service when `proposals.enable` (None otherwise)."""
    if not config[config_keys.PROPOSALS_ENABLE]:
        return None
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise RuntimeError(
            "proposals.enable needs the pipeline extra: pip install 'reassignd[pipeline]'"
        ) from None
    capacity_file = config[config_keys.PROPOSALS_CAPACITY_FILE]
    capacities = load_capacities(str(capacity_file)) if capacity_file else None
    master = str(config[config_keys.PROPOSALS_SPARK_MASTER]) or None

    async def read() -> ClusterSnapshot:
        snapshot: ClusterSnapshot = await cluster.snapshot(with_sizes=True)
        return snapshot

    service = ProposalService(read, master=master, capacities=capacities)
    await service.start()
    return service

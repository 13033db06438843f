"""Throttle config writes, the I/O half of throttle hygiene (the decisions are in engine/throttle_book.py).

Writes go per resource, in the calls Kafka accepts (`calls_per_resource`: SUBTRACT before APPEND on one
key), each after the HA guard. A resource that fails is reported, not raised: the book keeps what it
believed, and the next cycle writes again from a fresh read.

Brokers first, then topics (the order the book was written for); within a kind, up to `WRITES_IN_FLIGHT`
resources at once: a plan across 1,000 brokers writes each one's rates, and one at a time that was 1,000
round trips in a row (bench_daemon's million cluster: most of a 42-s first cycle).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable

from reassignd.cluster.api import ClusterAdmin, ConfigOp, ConfigOpType
from reassignd.cluster.errors import ClusterCallError
from reassignd.daemon import failpoints
from reassignd.engine.throttle import ConfigWrite, calls_per_resource

Resource = tuple[str, str]


WRITES_IN_FLIGHT = 16


async def write_throttles(
    cluster: ClusterAdmin,
    writes: Iterable[ConfigWrite],
    guard: Callable[[], Awaitable[None]],
) -> dict[Resource, str]:
    """Apply `writes`; the resources whose write failed, with the error."""
    grouped: dict[Resource, list[ConfigWrite]] = {}
    for write in writes:
        grouped.setdefault((write.resource, write.name), []).append(write)
    failed: dict[Resource, str] = {}
    slots = asyncio.Semaphore(WRITES_IN_FLIGHT)

    async def write_one(resource: Resource, resource_writes: list[ConfigWrite]) -> None:
        async with slots:
            error = await _write_resource(cluster, resource, resource_writes, guard)
        if error is not None:
            failed[resource] = error

    for kind in sorted({kind for kind, _ in grouped}):
        # a task group: anything but a cluster error (a lost lease, a crash, a cancel) stops every write
        # of the batch with it, none goes on alone; raised as itself, the runtime tells a fence by its class
        try:
            async with asyncio.TaskGroup() as writing:
                for resource in sorted(grouped):
                    if resource[0] == kind:
                        writing.create_task(write_one(resource, grouped[resource]))
        except BaseExceptionGroup as stopped:
            raise stopped.exceptions[0] from None
    return dict(sorted(failed.items()))


async def _write_resource(
    cluster: ClusterAdmin,
    resource: Resource,
    resource_writes: list[ConfigWrite],
    guard: Callable[[], Awaitable[None]],
) -> str | None:
    """One resource's calls in order; the error that stopped them, if any."""
    kind, name = resource
    try:
        for call in calls_per_resource(resource_writes):
            ops = [ConfigOp(w.key, ConfigOpType[w.op], w.value) for w in call]
            await guard()
            if kind == "topic":
                await cluster.alter_topic_configs(name, ops)
            else:
                await cluster.alter_broker_configs(int(name), ops)
            failpoints.hit("after_throttle_write")
    except ClusterCallError as exc:
        return str(exc)
    return None

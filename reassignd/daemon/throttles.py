"""Throttle config writes, the I/O half of throttle hygiene (the decisions are in engine/throttle_book.py).

Writes go per resource, in the calls Kafka accepts (`calls_per_resource`: SUBTRACT before APPEND on one
key), each after the HA guard. A resource that fails is reported, not raised: the book keeps what it
believed, and the next cycle writes again from a fresh read.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from reassignd.cluster.api import ClusterAdmin, ConfigOp, ConfigOpType
from reassignd.cluster.errors import ClusterCallError
from reassignd.daemon import failpoints
from reassignd.engine.throttle import ConfigWrite, calls_per_resource

Resource = tuple[str, str]


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
    for (kind, name), resource_writes in sorted(grouped.items()):
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
            failed[(kind, name)] = str(exc)
    return failed

"""The cluster reads the machines ask for (`ReadRequest`, `IdleRead`), as admin calls."""

from __future__ import annotations

from reassignd import config_keys
from reassignd.cluster.api import ClusterAdmin
from reassignd.engine.run import ReadRequest
from reassignd.engine.run.idle import IdleRead
from reassignd.engine.throttle import BROKER_KEYS, TOPIC_KEYS
from reassignd.model import ClusterSnapshot


async def plan_read(cluster: ClusterAdmin, request: ReadRequest) -> tuple[ClusterSnapshot, dict[str, str]]:
    """(the snapshot of the plan's partitions, the effective min.insync.replicas of the topics asked)."""
    snapshot = await cluster.snapshot(
        list(request.partitions),
        with_sizes=request.with_sizes,
        broker_config_keys=request.broker_config_keys,
        topic_config_keys=request.topic_config_keys,
    )
    return snapshot, await _effective_min_insync(cluster, request.min_insync_topics)


async def _effective_min_insync(cluster: ClusterAdmin, topics: tuple[str, ...]) -> dict[str, str]:
    if not topics:
        return {}
    described = await cluster.describe_topic_configs(sorted(topics), [config_keys.MIN_INSYNC_REPLICAS])
    effective = {}
    for topic, description in described.items():
        value = description.values.get(config_keys.MIN_INSYNC_REPLICAS)
        if value is not None and value.value is not None:
            effective[topic] = value.value
    return effective


async def idle_read(cluster: ClusterAdmin, request: IdleRead) -> ClusterSnapshot | None:
    """The configs of the leftovers' topics and brokers; without leftovers only whether the cluster answers
    (its id: read only while a read failed last, since the probe watches the cluster otherwise)."""
    if request.topics is None:
        await cluster.cluster_id()
        return None
    partitions, _ = await cluster.topic_partitions(list(request.topics))
    return await cluster.snapshot(partitions, broker_config_keys=BROKER_KEYS, topic_config_keys=TOPIC_KEYS)

"""Cluster adapters: one async interface (ClusterAdmin) over Kafka's admin APIs, immutable results."""

from reassignd.cluster.api import (
    BROKER_THROTTLE_KEYS,
    TOPIC_THROTTLE_KEYS,
    ClusterAdmin,
    ClusterObserver,
    ConfigDescription,
    ConfigOp,
    ConfigOpType,
    ConfigSource,
    ConfigValue,
    ItemError,
    LogDirsResult,
    Reassignment,
    ReplicaLogDir,
    SnapshotResult,
)
from reassignd.cluster.errors import ClusterCallError, KafkaErrorInfo, WriteFenced
from reassignd.cluster.retry import RetryPolicy

__all__ = [
    "BROKER_THROTTLE_KEYS",
    "TOPIC_THROTTLE_KEYS",
    "ClusterAdmin",
    "ClusterCallError",
    "ClusterObserver",
    "ConfigDescription",
    "ConfigOp",
    "ConfigOpType",
    "ConfigSource",
    "ConfigValue",
    "ItemError",
    "KafkaErrorInfo",
    "LogDirsResult",
    "Reassignment",
    "ReplicaLogDir",
    "RetryPolicy",
    "SnapshotResult",
    "WriteFenced",
]

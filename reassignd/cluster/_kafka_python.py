"""kafka-python, imported once without its import-time DeprecationWarnings.

kafka-python 3.0.12 loads its protocol schemas with importlib.resources.read_text (deprecated since Python
3.11), one warning per message class at import. They say nothing about our use, and under warnings-as-errors
(our tests) they would break the import, so the import is done here with that one category silenced.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Collection, Mapping
from typing import Any

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.errors as kafka_errors
    from kafka import TopicPartition as KpTopicPartition
    from kafka.admin import KafkaAdminClient
    from kafka.protocol.admin import DescribeConfigsRequest, DescribeLogDirsRequest, DescribeLogDirsResponse
    from kafka.protocol.consumer import (
        HeartbeatRequest,
        JoinGroupRequest,
        LeaveGroupRequest,
        OffsetCommitRequest,
        OffsetFetchRequest,
        SyncGroupRequest,
    )
    from kafka.protocol.metadata import FindCoordinatorRequest

__all__ = [
    "DescribeLogDirsResponse",
    "FindCoordinatorRequest",
    "HeartbeatRequest",
    "JoinGroupRequest",
    "KafkaAdminClient",
    "KpTopicPartition",
    "LeaveGroupRequest",
    "OffsetCommitRequest",
    "OffsetFetchRequest",
    "SyncGroupRequest",
    "broker_configs_request",
    "kafka_errors",
    "log_dirs_request",
    "send_each",
]

BROKER_RESOURCE = 4  # DescribeConfigsRequest.ResourceType


def broker_configs_request(broker: int, keys: Collection[str] | None) -> Any:
    """DescribeConfigs of one broker's own resource (to be sent to that broker) with every synonym
    (v1+), for only `keys` (None: all)."""
    return DescribeConfigsRequest(
        resources=[(BROKER_RESOURCE, str(broker), None if keys is None else list(keys))],
        include_synonyms=True,
        min_version=1,
    )


def log_dirs_request(partitions: Mapping[str, list[int]]) -> Any:
    """DescribeLogDirs for these partitions of a broker; none: the broker's log dirs alone."""
    return DescribeLogDirsRequest(topics=list(partitions.items()))


def send_each(client: KafkaAdminClient, requests: Mapping[int, Any], timeout: float) -> dict[int, Any]:
    """Each request to its broker, all in flight at once on the client's IO thread: each broker's response,
    or the exception its request failed with. Through the client's connection manager, as kafka-python's
    own admin calls are sent (kafka-python is pinned): its describe_configs drops a resource's error code,
    and its per-broker calls go one after the other.

    No broker is waited for longer than `timeout` seconds from now (then: KafkaTimeoutError for it): a
    request to a broker that accepts the connection and never answers stays buffered until kafka-python's
    connection setup timeout (10 s, not the request timeout), and would hold every other broker's answer."""
    manager = client._manager
    deadline = time.monotonic() + timeout

    async def gather() -> dict[int, Any]:
        sent: dict[int, Any] = {}
        for broker, request in requests.items():
            try:  # a broker its metadata does not know fails here, not in the future
                sent[broker] = manager.send(request, node_id=broker)
            except Exception as exc:
                sent[broker] = exc
        answers: dict[int, Any] = {}
        for broker, future in sent.items():
            try:
                if isinstance(future, Exception):
                    answers[broker] = future
                else:
                    left_ms = max(0.0, deadline - time.monotonic()) * 1000
                    answers[broker] = await manager.wait_for(future, left_ms)
            except Exception as exc:
                answers[broker] = exc
        return answers

    answers: dict[int, Any] = manager.run(gather)
    return answers

"""kafka-python, imported once without its import-time DeprecationWarnings.

kafka-python 3.0.12 loads its protocol schemas with importlib.resources.read_text (deprecated since Python
3.11), one warning per message class at import. They say nothing about our use, and under warnings-as-errors
(our tests) they would break the import, so the import is done here with that one category silenced.
"""

from __future__ import annotations

import time
import warnings
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Literal, TypeVar

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.errors as kafka_errors
    from kafka import TopicPartition as KpTopicPartition
    from kafka.admin import KafkaAdminClient
    from kafka.protocol.admin import (
        AlterPartitionReassignmentsRequest,
        AlterReplicaLogDirsRequest,
        DescribeConfigsRequest,
        DescribeLogDirsRequest,
        DescribeLogDirsResponse,
        ElectLeadersRequest,
        IncrementalAlterConfigsRequest,
    )
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
    "alter_configs_request",
    "broker_configs_request",
    "elect_preferred_request",
    "kafka_errors",
    "log_dirs_request",
    "move_log_dirs_request",
    "reassignments_request",
    "send_each",
    "send_fenced",
]

BROKER_RESOURCE = 4  # DescribeConfigsRequest.ResourceType
TOPIC_RESOURCE = 2
PREFERRED_ELECTION = 0
# Where a write goes: a broker id, the client's controller, or whichever broker the client finds first.
Destination = int | Literal["controller", "any"]
V = TypeVar("V")


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


def reassignments_request(targets: Mapping[tuple[str, int], list[int] | None], timeout_ms: int) -> Any:
    """KIP-455: a replica list starts (or replaces) a partition's reassignment, None cancels it."""
    topics = _by_topic((topic, (partition, replicas)) for (topic, partition), replicas in targets.items())
    return AlterPartitionReassignmentsRequest(timeout_ms=timeout_ms, topics=topics)


def elect_preferred_request(partitions: Iterable[tuple[str, int]], timeout_ms: int) -> Any:
    return ElectLeadersRequest(
        election_type=PREFERRED_ELECTION, topic_partitions=_by_topic(partitions), timeout_ms=timeout_ms
    )


def alter_configs_request(resource_type: int, name: str, ops: Iterable[tuple[str, int, str | None]]) -> Any:
    """IncrementalAlterConfigs (KIP-339) of one resource; each op (key, operation code, value)."""
    return IncrementalAlterConfigsRequest(resources=[(resource_type, name, list(ops))], validate_only=False)


def move_log_dirs_request(moves: Mapping[tuple[str, int], str]) -> Any:
    """AlterReplicaLogDirs of one broker's replicas: (topic, partition) to the log dir it moves to."""
    by_dir: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for replica, path in moves.items():
        by_dir[path].append(replica)
    return AlterReplicaLogDirsRequest(dirs=[(path, _by_topic(r)) for path, r in by_dir.items()])


def _by_topic(items: Iterable[tuple[str, V]]) -> list[tuple[str, list[V]]]:
    """Each topic with its items, in the order given: the shape of the write requests' topic arrays."""
    topics: dict[str, list[V]] = defaultdict(list)
    for topic, item in items:
        topics[topic].append(item)
    return list(topics.items())


def send_fenced(
    client: KafkaAdminClient, request: Any, to: Destination, fence: Callable[[], None], timeout: float
) -> Any:
    """One write request and its response, with `fence` checked on the client's IO thread once the
    connection can take the request, right before its bytes are written to the socket, with nothing to
    wait for in between: no other thread, no connection, no controller lookup, no turn of the IO loop. A
    write that waits after the check (as librdkafka's queue, or a request buffered while its connection
    opens) can leave after the HA lease ran out. A connection that cannot take the write now fails it
    (NodeNotReadyError, retriable) rather than queue it."""
    manager = client._manager
    deadline = time.monotonic() + timeout

    def left_ms() -> float:
        return max(0.0, deadline - time.monotonic()) * 1000

    async def fenced() -> Any:
        node = await _node(client, to, left_ms())
        conn = manager.get_connection(node)
        await manager.wait_for(conn.init_future, left_ms())
        if not conn.connected or conn.initializing or conn.paused or conn._reauth.is_reauthenticating:
            raise kafka_errors.NodeNotReadyError(f"broker {node} cannot take a write now")
        fence()
        answer = conn.send_request(request, request_timeout_ms=left_ms())
        _flush(conn)
        return await manager.wait_for(answer, left_ms())

    return manager.run(fenced)


def _flush(conn: Any) -> None:
    """The request's bytes into the socket now, on this thread. send_request leaves them to the IO loop's
    next turn, after whatever else is ready on it (a large answer's decoding). What the socket does not
    take now (it is full), and a send's failure, the loop handles as it would have (pinned 3.0.12)."""
    transport = conn.transport
    if transport is None or not transport._write_buffer:
        return
    _, error = transport._sock_send()
    if error is not None:
        transport.abort(error=error)


async def _node(client: KafkaAdminClient, to: Destination, timeout_ms: float) -> int:
    """kafka-python's own routing (pinned 3.0.12): its cached controller, or its least loaded broker."""
    if to == "controller":
        if client._controller_id is None or client._controller_id == -1:
            client._controller_id = await client._refresh_controller_id(timeout_ms=timeout_ms)
        return int(client._controller_id)
    if to == "any":
        node = client._manager.least_loaded_node()
        if node is None:
            raise kafka_errors.NoBrokersAvailable("no broker to send the write to")
        return int(node)
    return to

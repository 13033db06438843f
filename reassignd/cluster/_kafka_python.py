"""kafka-python, imported once without its import-time DeprecationWarnings.

kafka-python 3.0.12 loads its protocol schemas with importlib.resources.read_text (deprecated since Python
3.11), one warning per message class at import. They say nothing about our use, and under warnings-as-errors
(our tests) they would break the import, so the import is done here with that one category silenced.
"""

from __future__ import annotations

import queue
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
    "stream_each",
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


def log_dirs_request(partitions: Iterable[tuple[str, int]]) -> Any:
    """DescribeLogDirs for these (topic, partition) of a broker; none: the broker's log dirs alone."""
    return DescribeLogDirsRequest(topics=_by_topic(partitions))


def send_each(client: KafkaAdminClient, requests: Mapping[int, Any], timeout: float) -> dict[int, Any]:
    """Each broker's response to its request, or the exception its request failed with (`stream_each`)."""
    answers: dict[int, Any] = {}
    stream_each(client, requests, timeout, answers.__setitem__)
    return answers


def stream_each(
    client: KafkaAdminClient,
    requests: Mapping[int, Any],
    timeout: float,
    each: Callable[[int, Any], None],
    in_flight: int | None = None,
) -> None:
    """Each request to its broker on the client's IO thread, `in_flight` at a time (None: all at once);
    `each(broker, answer)` on the calling thread as each answer arrives, the answer being the broker's
    response or the exception its request failed with. Through the client's connection manager, as
    kafka-python's own admin calls are sent (kafka-python is pinned): its describe_configs drops a
    resource's error code, and its per-broker calls go one after the other.

    `each` runs on the calling thread, not the IO thread: a full DescribeLogDirs answer takes tens of
    milliseconds to convert, which there would delay the receipt of every other answer and every request
    of the other calls sharing the client. As each answer arrives, not once all did: every broker's decoded
    answer was held until the slowest had answered (a first full read of 100,000 partitions: 36 MB more
    at its peak), and the conversion waited for it. The IO thread decodes answers faster than they are
    converted when the machine is busy, so a bounded `in_flight` (the next request goes once an answer
    was read) is what bounds the decoded answers waiting here: up to 75 of 100 on that read, all in flight
    on a loaded machine (5 to 8 on an idle one).

    No broker is waited for past `timeout` seconds from now (then: KafkaTimeoutError for it, and for the
    requests not sent by then): a request to a broker that accepts the connection and never answers stays
    buffered until kafka-python's connection setup timeout (10 s, not the request timeout), and would hold
    every other broker's answer. One deadline for all, not one per request: with a window, brokers that
    never answer would each hold it for a timeout of their own, one after the other."""
    manager = client._manager
    deadline = time.monotonic() + timeout
    arrived: queue.SimpleQueue[tuple[int, Any]] = queue.SimpleQueue()
    unsent = iter(requests.items())
    waiting: set[int] = set()  # the brokers asked and not yet answered

    async def one(broker: int, request: Any) -> None:  # on the IO thread
        answer: Any = kafka_errors.KafkaConnectionError("the client closed")  # the task dropped at close
        try:  # a broker its metadata does not know fails in send, not in the future
            left_ms = max(0.0, deadline - time.monotonic()) * 1000
            answer = await manager.wait_for(manager.send(request, node_id=broker), left_ms)
        except Exception as exc:
            answer = exc
        finally:
            arrived.put((broker, answer))

    def send_next() -> None:
        if time.monotonic() >= deadline:
            return  # the rest time out unsent
        following = next(unsent, None)
        if following is None:
            return
        broker, request = following
        waiting.add(broker)
        try:
            manager.call_soon(one, broker, request)
        except Exception as exc:  # the client closed: its IO loop takes no more work
            arrived.put((broker, exc))

    for _ in range(len(requests) if in_flight is None else max(1, in_flight)):
        send_next()
    while waiting:
        try:  # past the deadline only if the IO loop died with requests in flight (it fails each at close)
            item = arrived.get(timeout=max(0.0, deadline - time.monotonic()) + _IO_LOOP_GRACE)
        except queue.Empty:
            break
        waiting.discard(item[0])
        each(*item)
        del item  # not held while waiting for the next answer
        send_next()
    for broker in [*waiting, *(b for b, _ in unsent)]:
        each(broker, kafka_errors.KafkaTimeoutError(f"no answer from broker {broker} within {timeout} s"))


_IO_LOOP_GRACE = 1.0  # seconds past the timeout the IO thread has to report its own timeouts


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

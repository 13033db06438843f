"""The writer's ownership marker (engine/crosscheck.py), kept in Kafka as the writer group's committed offset.

One OffsetCommit (as the writer's member, in its generation) stores the store's journal sequence number as
the offset and the marker's JSON as the offset's metadata; one OffsetFetch reads them back. Kafka's
coordinator checks an offset commit of a classic group for its member and generation only, never for its
protocol type (apache/kafka OffsetMetadataManager.validateOffsetCommit, ClassicGroup.validateOffsetCommit),
so the group `reassignd.<cluster id>` of protocol type `reassignd` keeps offsets as a consumer group does;
and a commit with no member and generation -1 is accepted while the group is Empty (a daemon that holds
the right through HA alone, or tests without the writer group). But KafkaApis.handleOffsetCommitRequest
answers UNKNOWN_TOPIC_OR_PARTITION for a partition its metadata does not know, before the coordinator sees
it, so no pseudo-topic of ours can carry it: the marker is the offset of `__consumer_offsets` partition 0,
which exists on every cluster with a group (Kafka creates the topic for the writer group's first
FindCoordinator). With ACLs the commit needs `Read` on that topic and the fetch `Describe`.
Kafka keeps a group's offsets while it has members, and for `offsets.retention.minutes` (7 days) once it
is empty. Blocking calls on the group's own client: run them off the event loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from reassignd.cluster._kafka_python import OffsetCommitRequest, OffsetFetchRequest
from reassignd.cluster.errors import WriteFenced
from reassignd.cluster.group import (
    COORDINATOR_ERRORS,
    FENCING_ERRORS,
    NONE,
    REBALANCE_IN_PROGRESS,
    GroupTransport,
)

MARKER_TOPIC = "__consumer_offsets"
MARKER_PARTITION = 0
AUTHORIZATION_ERRORS = frozenset({29, 30})  # TOPIC_, GROUP_AUTHORIZATION_FAILED
T = TypeVar("T")
_RETRIABLE = COORDINATOR_ERRORS | {REBALANCE_IN_PROGRESS}
"""REBALANCE_IN_PROGRESS: a commit in the writer's new generation between its JoinGroup answer and its
SyncGroup (the group is CompletingRebalance: ClassicGroup.validateOffsetCommit); the sync follows at once,
so it is waited out, as a consumer's commit does (a rejoin when a killed broker took the coordinator with
it failed a cycle)."""


class MarkerError(Exception):
    """The marker could not be read or written; `code` is Kafka's error code when it answered one."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


Membership = Callable[[], tuple[str, int | None, str, int]]
"""(group, coordinator node id or None, member id, generation): the writer's, or ("", -1) outside it."""


class KafkaMarker:
    def __init__(self, transport: GroupTransport, membership: Membership, timeout: float = 10.0) -> None:
        self.transport = transport
        self.membership = membership
        self.timeout = timeout

    def _coordinator(self, group: str, known: int | None) -> int:
        if known is not None:
            return known
        deadline = time.monotonic() + self.timeout
        while True:  # a cluster's first FindCoordinator creates __consumer_offsets: not available a moment
            error, node = self.transport.find_coordinator(group, self.timeout)
            if error == NONE:
                return node
            if error not in COORDINATOR_ERRORS or time.monotonic() > deadline:
                raise MarkerError(f"FindCoordinator for {group}: error {error}", error)
            time.sleep(0.2)

    def _retried(self, once: Callable[[str, int, tuple[str, int]], T], fenced: bool = False) -> T:
        """`once(group, coordinator, (member id, generation))`, again while Kafka answers that it is not
        (yet) the group's coordinator (the first moments of `__consumer_offsets`, a coordinator moved:
        asked anew), or that the group is completing a rebalance. `fenced`: a write, given up once the
        writer's membership is no longer the one it began with, or once Kafka no longer knows it (the
        right lapsed either way: WriteFenced, nothing written). Each try commits as the membership it
        checked, read once: read again after the check, a right lapsed in between was asked with no
        member, which Kafka stores."""
        deadline = time.monotonic() + self.timeout
        moved = False
        member = self.membership()[2]
        while True:
            group, known, now_member, generation = self.membership()
            if fenced and now_member != member:  # a commit with no member is stored once the group is Empty
                raise WriteFenced(f"the writer right of {group} changed while the ownership marker waited")
            try:
                node = self._coordinator(group, None if moved else known)
                return once(group, node, (now_member, generation))
            except MarkerError as exc:
                if fenced and exc.code in FENCING_ERRORS:
                    raise WriteFenced(f"the writer right of {group} lapsed: {exc}") from exc
                if exc.code not in _RETRIABLE or time.monotonic() > deadline:
                    raise
                moved = moved or exc.code in COORDINATOR_ERRORS
            time.sleep(0.2)

    def write(self, seq: int, text: str) -> None:
        self._retried(lambda group, node, member: self._write(group, node, member, seq, text), fenced=True)

    def read(self) -> tuple[int, str] | None:
        """(offset, metadata) of the marker; None when the group has none."""
        return self._retried(lambda group, node, _member: self._read(group, node))

    def _write(self, group: str, node: int, as_member: tuple[str, int], seq: int, text: str) -> None:
        member, generation = as_member
        request = OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=generation,
            member_id=member,
            group_instance_id=None,
            retention_time_ms=-1,
            topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(
                    name=MARKER_TOPIC,
                    partitions=[
                        OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                            partition_index=MARKER_PARTITION,
                            committed_offset=seq,
                            committed_leader_epoch=-1,
                            committed_metadata=text,
                        )
                    ],
                )
            ],
            min_version=2,
            max_version=9,  # v10 names topics by id
        )
        response = self.transport.send(request, node, self.timeout)
        codes = [int(p.error_code) for t in response.topics for p in t.partitions]
        error = next((c for c in codes if c != NONE), NONE if codes else -1)
        if error != NONE:
            raise MarkerError(f"OffsetCommit of the ownership marker to {group}: error {error}", error)

    def _read(self, group: str, node: int) -> tuple[int, str] | None:
        request = OffsetFetchRequest(
            group_id=group,
            topics=[OffsetFetchRequest.OffsetFetchRequestTopic(name=MARKER_TOPIC, partition_indexes=[0])],
            require_stable=False,
            min_version=1,
            max_version=7,  # one group, the layout every release since 0.8.2 answers
        )
        response: Any = self.transport.send(request, node, self.timeout)
        error = int(getattr(response, "error_code", 0) or 0)
        if error != NONE:
            raise MarkerError(f"OffsetFetch of the ownership marker from {group}: error {error}", error)
        for topic in response.topics:
            for p in topic.partitions:
                if int(p.error_code) != NONE:
                    raise MarkerError(f"OffsetFetch of {group}: error {p.error_code}", int(p.error_code))
                if topic.name == MARKER_TOPIC and int(p.committed_offset) >= 0:
                    return int(p.committed_offset), str(p.metadata or "")
        return None

    def close(self) -> None:
        self.transport.close()

"""Group coordination over the wire: FindCoordinator, JoinGroup, SyncGroup, Heartbeat and LeaveGroup.

The state machine is reassignd/sim/groups.py (Kafka's classic group protocol). Here, as in Kafka's
KafkaApis.scala: FindCoordinator names the broker that leads the group's __consumer_offsets partition
(`abs(groupId.hashCode) % offsets.topic.num.partitions`, 50 by default; GroupCoordinatorService
.partitionFor), here the online broker at that index; a group request sent elsewhere is answered
NOT_COORDINATOR (CoordinatorRuntime: the partition is not led by this broker). JoinGroup and SyncGroup are
answered when the group gets there (the request is parked; the connection waits, as Kafka mutes it).
JoinGroup v4+ requires a known member id (JoinGroupRequest.requiresKnownMemberId).

OffsetCommit and OffsetFetch (the writer's ownership marker, docs/state-store.md): KafkaApis
.handleOffsetCommitRequest answers UNKNOWN_TOPIC_OR_PARTITION for a partition its metadata does not have,
before the coordinator sees it; `__consumer_offsets` counts as existing here (Kafka creates it with the
first FindCoordinator of a group, which every writer sends), with OFFSETS_TOPIC_PARTITIONS partitions. The
group checks are the coordinator's (groups.py `commit_offsets`). OffsetFetch: the single-group layout
(v0-7) only, which is what the simulated releases advertise.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kafka.protocol.consumer import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.metadata import FindCoordinatorRequest, FindCoordinatorResponse

from reassignd.sim import groups as g
from reassignd.sim.protocol import ApiSpec, RequestContext, api_spec

OFFSETS_TOPIC_PARTITIONS = 50  # offsets.topic.num.partitions default
OFFSETS_TOPIC = "__consumer_offsets"
UNKNOWN_TOPIC_OR_PARTITION = 3
GROUP_KEY = 0
_MESSAGES = {
    g.NOT_COORDINATOR: "This is not the correct coordinator.",
    g.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
}


def java_string_hash(text: str) -> int:
    """java.lang.String.hashCode (UTF-16 code units), as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator_for(ctx: RequestContext, key: str) -> int | None:
    online = sorted(b for b, broker in ctx.cluster.brokers.items() if broker.online and b in ctx.endpoints)
    if not online:
        return None
    partition = (java_string_hash(key) & 0x7FFFFFFF) % OFFSETS_TOPIC_PARTITIONS  # Utils.abs, not Math.abs
    return int(online[partition % len(online)])


def _not_here(ctx: RequestContext, group_id: str) -> bool:
    return coordinator_for(ctx, group_id) != ctx.broker_id


def handle_find_coordinator(ctx: RequestContext, request: Any) -> Any:
    r = FindCoordinatorResponse
    keys = list(request.coordinator_keys) if ctx.api_version >= 4 else [request.key]
    key_type = request.key_type if ctx.api_version >= 1 else GROUP_KEY
    rows: list[tuple[str, int, str, int, int, str | None]] = []
    for key in keys:
        node = coordinator_for(ctx, key) if key_type == GROUP_KEY else None
        if node is None:
            code = g.COORDINATOR_NOT_AVAILABLE
            rows.append((key, -1, "", -1, code, _MESSAGES[code]))
        else:
            endpoint = ctx.endpoints[node]
            rows.append((key, node, endpoint.host, endpoint.port, 0, None))
    if ctx.api_version >= 4:
        coordinators = [
            r.Coordinator(key=k, node_id=n, host=h, port=p, error_code=e, error_message=m)
            for k, n, h, p, e, m in rows
        ]
        return r(version=ctx.api_version, throttle_time_ms=0, coordinators=coordinators)
    _, node, host, port, code, message = rows[0]
    return r(
        version=ctx.api_version,
        throttle_time_ms=0,
        error_code=code,
        error_message=message,
        node_id=node,
        host=host,
        port=port,
    )


def _later() -> tuple[asyncio.Future[Any], Any]:
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    def reply(answer: Any) -> None:
        if not future.done():
            future.set_result(answer)

    return future, reply


def handle_join_group(ctx: RequestContext, request: Any) -> Any:
    r = JoinGroupResponse
    version = ctx.api_version

    def response(answer: dict[str, Any]) -> Any:
        members = [
            r.JoinGroupResponseMember(member_id=m, metadata=meta) for m, meta in answer.get("members", [])
        ]
        return r(
            version=version,
            throttle_time_ms=0,
            error_code=answer["error"],
            generation_id=answer.get("generation", -1),
            protocol_type=answer.get("protocol_type"),
            protocol_name=answer.get("protocol_name") or ("" if version < 7 else None),
            leader=answer.get("leader", ""),
            skip_assignment=False,
            member_id=answer.get("member_id", ""),
            members=members,
        )

    if _not_here(ctx, request.group_id):
        return response({"error": g.NOT_COORDINATOR, "member_id": request.member_id})
    future, reply = _later()
    ctx.groups.join(
        group_id=request.group_id,
        member_id=request.member_id,
        client_id=ctx.client_id or "",
        protocol_type=request.protocol_type,
        protocols=[(p.name, bytes(p.metadata)) for p in request.protocols],
        session_ms=request.session_timeout_ms,
        rebalance_ms=request.rebalance_timeout_ms if version >= 1 else request.session_timeout_ms,
        reply=reply,
        requires_known_member_id=version >= 4,
    )
    return _mapped(future, response)


def _mapped(future: asyncio.Future[Any], convert: Any) -> asyncio.Future[Any]:
    out: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    def done(answer: asyncio.Future[Any]) -> None:
        if not out.done():
            out.set_result(convert(answer.result()))

    future.add_done_callback(done)
    return out


def handle_sync_group(ctx: RequestContext, request: Any) -> Any:
    r = SyncGroupResponse
    version = ctx.api_version

    def response(answer: dict[str, Any]) -> Any:
        return r(
            version=version,
            throttle_time_ms=0,
            error_code=answer["error"],
            protocol_type=answer.get("protocol_type"),
            protocol_name=answer.get("protocol_name"),
            assignment=answer.get("assignment", b""),
        )

    if _not_here(ctx, request.group_id):
        return response({"error": g.NOT_COORDINATOR})
    future, reply = _later()
    ctx.groups.sync(
        group_id=request.group_id,
        generation=request.generation_id,
        member_id=request.member_id,
        protocol_type=request.protocol_type if version >= 5 else None,
        protocol_name=request.protocol_name if version >= 5 else None,
        assignments={a.member_id: bytes(a.assignment) for a in request.assignments},
        reply=reply,
    )
    return _mapped(future, response)


def handle_heartbeat(ctx: RequestContext, request: Any) -> Any:
    if _not_here(ctx, request.group_id):
        code = g.NOT_COORDINATOR
    else:
        code = ctx.groups.heartbeat(request.group_id, request.generation_id, request.member_id)
    return HeartbeatResponse(version=ctx.api_version, throttle_time_ms=0, error_code=code)


def handle_leave_group(ctx: RequestContext, request: Any) -> Any:
    r = LeaveGroupResponse
    version = ctx.api_version
    ids = [m.member_id for m in request.members] if version >= 3 else [request.member_id]
    if _not_here(ctx, request.group_id):
        return r(version=version, throttle_time_ms=0, error_code=g.NOT_COORDINATOR, members=[])
    codes = ctx.groups.leave(request.group_id, ids)
    if version < 3:
        return r(version=version, throttle_time_ms=0, error_code=codes[0], members=[])
    members = [
        r.MemberResponse(member_id=m, group_instance_id=None, error_code=c)
        for m, c in zip(ids, codes, strict=True)
    ]
    return r(version=version, throttle_time_ms=0, error_code=0, members=members)


def _partition_exists(ctx: RequestContext, topic: str, partition: int) -> bool:
    if topic == OFFSETS_TOPIC:
        return 0 <= partition < OFFSETS_TOPIC_PARTITIONS
    found = ctx.cluster.topics.get(topic)
    return found is not None and partition in found.partitions


def handle_offset_commit(ctx: RequestContext, request: Any) -> Any:
    r = OffsetCommitResponse
    version = ctx.api_version
    rows: list[tuple[str, int, int | None]] = []  # None: to the coordinator
    offsets: dict[tuple[str, int], tuple[int, str | None]] = {}
    for topic in request.topics:
        for p in topic.partitions:
            exists = _partition_exists(ctx, topic.name, p.partition_index)
            rows.append((topic.name, p.partition_index, None if exists else UNKNOWN_TOPIC_OR_PARTITION))
            if exists:
                offsets[(topic.name, p.partition_index)] = (p.committed_offset, p.committed_metadata)
    code = g.NONE
    if offsets:
        if _not_here(ctx, request.group_id):
            code = g.NOT_COORDINATOR
        else:
            member = request.member_id if version >= 1 else ""
            generation = request.generation_id_or_member_epoch if version >= 1 else -1
            code = ctx.groups.commit_offsets(
                request.group_id, member, generation, offsets, api_version=version
            )
    by_topic: dict[str, list[Any]] = {}
    for name, index, error in rows:
        partition = r.OffsetCommitResponseTopic.OffsetCommitResponsePartition(
            partition_index=index, error_code=code if error is None else error
        )
        by_topic.setdefault(name, []).append(partition)
    topics = [r.OffsetCommitResponseTopic(name=n, partitions=ps) for n, ps in by_topic.items()]
    return r(version=version, throttle_time_ms=0, topics=topics)


def handle_offset_fetch(ctx: RequestContext, request: Any) -> Any:
    """v0-7: one group, the partitions named (all the group has when `topics` is null, v2+)."""
    r = OffsetFetchResponse
    version = ctx.api_version
    if _not_here(ctx, request.group_id):
        return r(version=version, throttle_time_ms=0, topics=[], error_code=g.NOT_COORDINATOR)
    stored = ctx.groups.fetch_offsets(request.group_id)
    wanted = (
        sorted(stored)
        if request.topics is None
        else [(t.name, i) for t in request.topics for i in t.partition_indexes]
    )
    by_topic: dict[str, list[Any]] = {}
    for name, index in wanted:
        offset, metadata = stored.get((name, index), (-1, ""))
        partition = r.OffsetFetchResponseTopic.OffsetFetchResponsePartition(
            partition_index=index,
            committed_offset=offset,
            committed_leader_epoch=-1,
            metadata=metadata,
            error_code=g.NONE,
        )
        by_topic.setdefault(name, []).append(partition)
    topics = [r.OffsetFetchResponseTopic(name=n, partitions=ps) for n, ps in by_topic.items()]
    return r(version=version, throttle_time_ms=0, topics=topics, error_code=g.NONE)


def specs() -> list[ApiSpec]:
    return [
        api_spec(FindCoordinatorRequest, FindCoordinatorResponse, handle_find_coordinator),
        api_spec(JoinGroupRequest, JoinGroupResponse, handle_join_group),
        api_spec(SyncGroupRequest, SyncGroupResponse, handle_sync_group),
        api_spec(HeartbeatRequest, HeartbeatResponse, handle_heartbeat),
        api_spec(LeaveGroupRequest, LeaveGroupResponse, handle_leave_group),
        api_spec(OffsetCommitRequest, OffsetCommitResponse, handle_offset_commit, cap=9),
        api_spec(OffsetFetchRequest, OffsetFetchResponse, handle_offset_fetch, cap=7),
    ]

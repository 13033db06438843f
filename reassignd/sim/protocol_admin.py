"""Admin APIs: topics, reassignments, leader elections and log dirs (configs: protocol_configs.py).

Each handler maps one request onto the model (reassignd.sim.model.SimCluster), which raises KafkaError with
Kafka's code and message; per-item errors are reported per item, as Kafka does. Routing follows
core/src/main/scala/kafka/server/KafkaApis.scala: a KRaft broker forwards controller requests (CreateTopics,
DeleteTopics, AlterPartitionReassignments, ListPartitionReassignments, ElectLeaders) to the controller, so
any broker accepts them; a ZooKeeper-mode broker that is not the controller answers them NOT_CONTROLLER
(per topic, per partition, or top-level, as each handler does in 3.9). DescribeLogDirs reports the log dirs
of the broker it was sent to.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from kafka.protocol.admin import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)

from reassignd.sim.errors import (
    INVALID_REPLICATION_FACTOR,
    INVALID_REQUEST,
    NOT_CONTROLLER,
    UNKNOWN_TOPIC_ID,
    KafkaError,
)
from reassignd.sim.protocol import ApiSpec, RequestContext, api_spec, error_fields

TOPIC = 2
_NOT_CONTROLLER = KafkaError(NOT_CONTROLLER)  # new ApiError(NOT_CONTROLLER): the default text
_NOT_CONTROLLER_NULL = KafkaError(NOT_CONTROLLER, null=True)  # CreateTopics, DeleteTopics, ElectLeaders


def _invalid_request(message: str) -> KafkaError:
    return KafkaError(INVALID_REQUEST, message)


def _not_the_controller(ctx: RequestContext) -> bool:
    """A ZooKeeper-mode broker handles controller requests only if it is the controller (no forwarding)."""
    cluster = ctx.cluster
    return bool(cluster.kafka.zookeeper) and ctx.broker_id != cluster.controller_id


# ---------------------------------------------------------------------------------------------------------
# Topics


def handle_create_topics(ctx: RequestContext, request: Any) -> Any:
    r = CreateTopicsResponse
    counts: dict[str, int] = defaultdict(int)
    for topic in request.topics:
        counts[topic.name] += 1
    results = []
    for topic in request.topics:
        created = None
        try:
            if _not_the_controller(ctx):
                raise _NOT_CONTROLLER_NULL
            if counts[topic.name] > 1:
                raise _invalid_request("Duplicate topic name.")
            assignment = {a.partition_index: list(a.broker_ids) for a in topic.assignments} or None
            configs = {c.name: c.value for c in topic.configs}
            created = ctx.cluster.create_topic(
                topic.name,
                topic.num_partitions,
                topic.replication_factor,
                assignment,
                configs,
                validate_only=bool(request.validate_only),
            )
            error: KafkaError | None = None
        except KafkaError as exc:
            error = exc
        code, message = error_fields(error)
        result = r.CreatableTopicResult(name=topic.name, error_code=code, error_message=message)
        if created is not None:
            result.topic_id = created.topic_id
            result.num_partitions = len(created.partitions)
            result.replication_factor = len(created.partitions[0].replicas) if created.partitions else -1
            result.configs = _created_configs(ctx, created) if ctx.api_version >= 5 else None
        results.append(result)
    return r(version=ctx.api_version, throttle_time_ms=0, topics=results)


def _created_configs(ctx: RequestContext, topic: Any) -> list[Any] | None:
    try:
        entries = ctx.cluster.describe_configs(TOPIC, topic.name, None)
    except KafkaError:
        return None  # validate_only: the topic was never created
    cls = CreateTopicsResponse.CreatableTopicResult.CreatableTopicConfigs
    return [
        cls(
            name=e.name,
            value=None if e.is_sensitive else e.value,
            read_only=e.read_only,
            config_source=e.source,
            is_sensitive=e.is_sensitive,
        )
        for e in entries
    ]


def handle_delete_topics(ctx: RequestContext, request: Any) -> Any:
    r = DeleteTopicsResponse
    if ctx.api_version >= 6:
        wanted = [(t.name, t.topic_id) for t in request.topics]
    else:
        wanted = [(name, None) for name in request.topic_names]
    by_id = {t.topic_id: t for t in ctx.cluster.topics.values()}
    results = []
    for wanted_name, wanted_id in wanted:
        name, topic_id = wanted_name, wanted_id
        try:
            if _not_the_controller(ctx):
                raise _NOT_CONTROLLER_NULL
            if name is None:
                topic = by_id.get(topic_id)
                if topic is None:
                    raise KafkaError(UNKNOWN_TOPIC_ID, "This server does not host this topic ID.")
                name = topic.name
            topic = ctx.cluster.topics.get(name)
            topic_id = topic.topic_id if topic is not None else topic_id
            ctx.cluster.delete_topic(name)
            error: KafkaError | None = None
        except KafkaError as exc:
            error = exc
        code, message = error_fields(error)
        results.append(
            r.DeletableTopicResult(name=name, topic_id=topic_id, error_code=code, error_message=message)
        )
    return r(version=ctx.api_version, throttle_time_ms=0, responses=results)


# ---------------------------------------------------------------------------------------------------------
# Reassignments and elections


def handle_alter_partition_reassignments(ctx: RequestContext, request: Any) -> Any:
    r = AlterPartitionReassignmentsResponse
    allow_rf_change = ctx.api_version < 1 or bool(request.allow_replication_factor_change)
    if _not_the_controller(ctx):
        return r(
            version=ctx.api_version,
            throttle_time_ms=0,
            allow_replication_factor_change=allow_rf_change,
            error_code=NOT_CONTROLLER,
            error_message=_NOT_CONTROLLER.message,
            responses=[],
        )
    topics = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            try:
                target = None if p.replicas is None else list(p.replicas)
                if target is not None and not allow_rf_change:
                    _check_replication_factor(ctx, topic.name, p.partition_index, target)
                ctx.cluster.alter_partition_reassignment(topic.name, p.partition_index, target)
                error: KafkaError | None = None
            except KafkaError as exc:
                error = exc
            code, message = error_fields(error)
            partitions.append(
                r.ReassignableTopicResponse.ReassignablePartitionResponse(
                    partition_index=p.partition_index, error_code=code, error_message=message
                )
            )
        topics.append(r.ReassignableTopicResponse(name=topic.name, partitions=partitions))
    return r(
        version=ctx.api_version,
        throttle_time_ms=0,
        allow_replication_factor_change=allow_rf_change,
        error_code=0,
        error_message=None,
        responses=topics,
    )


def _check_replication_factor(ctx: RequestContext, topic: str, index: int, target: list[int]) -> None:
    """KIP-860: with AllowReplicationFactorChange=false a target must keep the original replica count."""
    sim_topic = ctx.cluster.topics.get(topic)
    if sim_topic is None or not 0 <= index < len(sim_topic.partitions):
        return  # the model reports the unknown partition
    partition = sim_topic.partitions[index]
    adding = set(partition.adding)
    original = [b for b in partition.replicas if b not in adding]
    if len(target) != len(original):
        raise KafkaError(
            INVALID_REPLICATION_FACTOR,
            "The replication factor is changed from "
            f"{len(original)} to {len(target)} but allowReplicationFactorChange is false",
        )


def handle_list_partition_reassignments(ctx: RequestContext, request: Any) -> Any:
    r = ListPartitionReassignmentsResponse
    tps = None
    if request.topics is not None:
        tps = [(t.name, index) for t in request.topics for index in t.partition_indexes]
    try:
        if _not_the_controller(ctx):
            raise _NOT_CONTROLLER
        ongoing = ctx.cluster.list_partition_reassignments(tps)
    except KafkaError as exc:
        return r(
            version=ctx.api_version,
            throttle_time_ms=0,
            error_code=exc.code,
            error_message=exc.message,
            topics=[],
        )
    grouped: dict[str, list[Any]] = defaultdict(list)
    for topic, index, replicas, adding, removing in ongoing:
        grouped[topic].append(
            r.OngoingTopicReassignment.OngoingPartitionReassignment(
                partition_index=index,
                replicas=list(replicas),
                adding_replicas=list(adding),
                removing_replicas=list(removing),
            )
        )
    return r(
        version=ctx.api_version,
        throttle_time_ms=0,
        error_code=0,
        error_message=None,
        topics=[r.OngoingTopicReassignment(name=name, partitions=parts) for name, parts in grouped.items()],
    )


def handle_elect_leaders(ctx: RequestContext, request: Any) -> Any:
    r = ElectLeadersResponse
    election_type = request.election_type if ctx.api_version >= 1 else 0
    tps = None
    if request.topic_partitions is not None:
        tps = [(t.topic, index) for t in request.topic_partitions for index in t.partitions]
    try:
        if _not_the_controller(ctx):  # processReplicaLeaderElection: NOT_CONTROLLER per partition
            every = [(t.name, p.index) for t in ctx.cluster.topics.values() for p in t.partitions]
            results = dict.fromkeys(tps if tps is not None else every, _NOT_CONTROLLER_NULL)
        else:
            results = ctx.cluster.elect_leaders(election_type, tps)
    except KafkaError as exc:  # a request-level error (v1+ has a top-level error code)
        return r(
            version=ctx.api_version, throttle_time_ms=0, error_code=exc.code, replica_election_results=[]
        )
    grouped: dict[str, list[Any]] = defaultdict(list)
    for (topic, index), error in results.items():
        code, message = error_fields(error)
        grouped[topic].append(
            r.ReplicaElectionResult.PartitionResult(
                partition_id=index, error_code=code, error_message=message
            )
        )
    return r(
        version=ctx.api_version,
        throttle_time_ms=0,
        error_code=0,
        replica_election_results=[
            r.ReplicaElectionResult(topic=topic, partition_result=parts) for topic, parts in grouped.items()
        ],
    )


# ---------------------------------------------------------------------------------------------------------
# Log dirs


def handle_describe_log_dirs(ctx: RequestContext, request: Any) -> Any:
    r = DescribeLogDirsResponse
    tps = None
    if request.topics is not None:
        tps = [(t.topic, index) for t in request.topics for index in t.partitions]
    results = []
    for log_dir in ctx.cluster.log_dir_descriptions(ctx.broker_id, tps):
        by_topic: dict[str, list[Any]] = defaultdict(list)
        for replica in log_dir.replicas:
            by_topic[replica.topic].append(
                r.DescribeLogDirsResult.DescribeLogDirsTopic.DescribeLogDirsPartition(
                    partition_index=replica.partition,
                    partition_size=replica.size,
                    offset_lag=replica.offset_lag,
                    is_future_key=replica.is_future,
                )
            )
        results.append(
            r.DescribeLogDirsResult(
                error_code=log_dir.error_code,
                log_dir=log_dir.path,
                topics=[
                    r.DescribeLogDirsResult.DescribeLogDirsTopic(name=name, partitions=parts)
                    for name, parts in by_topic.items()
                ],
                total_bytes=log_dir.total_bytes,
                usable_bytes=log_dir.usable_bytes,
                is_cordoned=False,
            )
        )
    return r(version=ctx.api_version, throttle_time_ms=0, error_code=0, results=results)


def handle_alter_replica_log_dirs(ctx: RequestContext, request: Any) -> Any:
    """Moves between this broker's log dirs (ReplicaManager.alterReplicaLogDirs, per partition)."""
    r = AlterReplicaLogDirsResponse
    wanted: dict[tuple[str, int], str] = {}  # AlterReplicaLogDirsRequest.partitionDirs: the last dir wins
    for log_dir in request.dirs:
        for topic in log_dir.topics:
            for index in topic.partitions:
                wanted[(topic.name, index)] = log_dir.path
    grouped: dict[str, list[Any]] = defaultdict(list)
    for (topic, index), path in wanted.items():
        try:
            ctx.cluster.alter_replica_log_dir(ctx.broker_id, topic, index, path)
            code = 0
        except KafkaError as exc:
            code = exc.code
        grouped[topic].append(
            r.AlterReplicaLogDirTopicResult.AlterReplicaLogDirPartitionResult(
                partition_index=index, error_code=code
            )
        )
    return r(
        version=ctx.api_version,
        throttle_time_ms=0,
        results=[
            r.AlterReplicaLogDirTopicResult(topic_name=name, partitions=parts)
            for name, parts in grouped.items()
        ],
    )


def specs() -> list[ApiSpec]:
    return [
        api_spec(CreateTopicsRequest, CreateTopicsResponse, handle_create_topics),
        api_spec(DeleteTopicsRequest, DeleteTopicsResponse, handle_delete_topics),
        api_spec(
            AlterPartitionReassignmentsRequest,
            AlterPartitionReassignmentsResponse,
            handle_alter_partition_reassignments,
        ),
        api_spec(
            ListPartitionReassignmentsRequest,
            ListPartitionReassignmentsResponse,
            handle_list_partition_reassignments,
        ),
        api_spec(ElectLeadersRequest, ElectLeadersResponse, handle_elect_leaders),
        api_spec(DescribeLogDirsRequest, DescribeLogDirsResponse, handle_describe_log_dirs),
        api_spec(AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse, handle_alter_replica_log_dirs),
    ]

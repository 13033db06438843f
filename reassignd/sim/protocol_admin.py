"""Admin APIs: configs, topics, reassignments, leader elections and log dirs.

Each handler maps one request onto the model (reassignd.sim.model.SimCluster), which raises KafkaError with
Kafka's code and message; per-item errors are reported per item, as Kafka does. Routing follows a KRaft
broker (core/src/main/scala/kafka/server/KafkaApis.scala): controller requests (CreateTopics, DeleteTopics,
IncrementalAlterConfigs, AlterPartitionReassignments, ListPartitionReassignments, ElectLeaders) are accepted
on any broker and forwarded, so no NOT_CONTROLLER here; DescribeConfigs for a broker resource is answered
only by that broker or for the cluster default "" (ConfigHelper.scala: "Unexpected broker id, expected X or
empty string, but received Y"); DescribeLogDirs reports the log dirs of the broker it was sent to.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from kafka.protocol.admin import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)

from reassignd.sim.errors import KafkaError
from reassignd.sim.protocol import ApiSpec, RequestContext, api_spec, error_fields

TOPIC, BROKER = 2, 4
INVALID_REQUEST = 42
INVALID_REPLICATION_FACTOR = 38
UNKNOWN_TOPIC_OR_PARTITION = 3
UNKNOWN_TOPIC_ID = 100


def _invalid_request(message: str) -> KafkaError:
    return KafkaError(INVALID_REQUEST, message)


# ---------------------------------------------------------------------------------------------------------
# Configs


def _check_broker_resource(ctx: RequestContext, name: str, describing: bool) -> None:
    if not name:
        return
    try:
        broker_id = int(name)
    except ValueError:
        raise _invalid_request(f"Broker id must be an integer, but it is: {name}") from None
    if describing and broker_id != ctx.broker_id:
        raise _invalid_request(
            f"Unexpected broker id, expected {ctx.broker_id} or empty string, but received {name}"
        )


def handle_describe_configs(ctx: RequestContext, request: Any) -> Any:
    r = DescribeConfigsResponse
    version = ctx.api_version
    results = []
    for resource in request.resources:
        entries: list[Any] = []
        try:
            if resource.resource_type == BROKER:
                _check_broker_resource(ctx, resource.resource_name, describing=True)
            elif resource.resource_type != TOPIC:
                raise _invalid_request(f"Unsupported resource type: {resource.resource_type}")
            keys = resource.configuration_keys
            entries = ctx.cluster.describe_configs(
                resource.resource_type, resource.resource_name, None if keys is None else list(keys)
            )
            error: KafkaError | None = None
        except KafkaError as exc:
            error, entries = exc, []
        code, message = error_fields(error)
        configs = [_config_entry(entry, bool(request.include_synonyms), version) for entry in entries]
        results.append(
            r.DescribeConfigsResult(
                error_code=code,
                error_message=message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
                configs=configs,
            )
        )
    return r(version=version, throttle_time_ms=0, results=results)


# DescribeConfigsResponse.ConfigType ids, by ConfigDef.Type name.
CONFIG_TYPES = {
    "BOOLEAN": 1,
    "STRING": 2,
    "INT": 3,
    "SHORT": 4,
    "LONG": 5,
    "DOUBLE": 6,
    "LIST": 7,
    "CLASS": 8,
    "PASSWORD": 9,
}
SOURCE_DEFAULT = 5


def _config_entry(entry: Any, include_synonyms: bool, version: int) -> Any:
    """One configs.ConfigEntry as DescribeConfigs carries it (sensitive values are never sent)."""
    result_class = DescribeConfigsResponse.DescribeConfigsResult.DescribeConfigsResourceResult
    synonym_class = result_class.DescribeConfigsSynonym
    synonyms = [
        synonym_class(name=name, value=None if entry.is_sensitive else value, source=source)
        for name, value, source in (entry.synonyms if include_synonyms else ())
    ]
    return result_class(
        name=entry.name,
        value=None if entry.is_sensitive else entry.value,
        read_only=entry.read_only,
        config_source=entry.source,
        is_default=entry.source == SOURCE_DEFAULT,
        is_sensitive=entry.is_sensitive,
        synonyms=synonyms,
        config_type=CONFIG_TYPES.get(entry.type, 0) if version >= 3 else 0,
        documentation=None,
    )


def handle_incremental_alter_configs(ctx: RequestContext, request: Any) -> Any:
    r = IncrementalAlterConfigsResponse
    seen: dict[tuple[int, str], int] = defaultdict(int)
    for resource in request.resources:
        seen[(resource.resource_type, resource.resource_name)] += 1
    responses = []
    for resource in request.resources:
        key = (resource.resource_type, resource.resource_name)
        try:
            if seen[key] > 1:
                # ControllerApis: duplicate resources in one request are all rejected.
                raise _invalid_request(f"Duplicate resource in request: {resource.resource_name}")
            if resource.resource_type == BROKER:
                _check_broker_resource(ctx, resource.resource_name, describing=False)
            elif resource.resource_type != TOPIC:
                raise _invalid_request(f"Unsupported resource type: {resource.resource_type}")
            ops = [(c.name, c.config_operation, c.value) for c in resource.configs]
            ctx.cluster.incremental_alter_configs(*key, ops, bool(request.validate_only))
            error: KafkaError | None = None
        except KafkaError as exc:
            error = exc
        code, message = error_fields(error)
        responses.append(
            r.AlterConfigsResourceResponse(
                error_code=code, error_message=message, resource_type=key[0], resource_name=key[1]
            )
        )
    return r(version=ctx.api_version, throttle_time_ms=0, responses=responses)


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
    for log_dir, replicas in ctx.cluster.describe_log_dirs(ctx.broker_id, tps):
        by_topic: dict[str, list[Any]] = defaultdict(list)
        for topic, index, size, lag, is_future in replicas:
            by_topic[topic].append(
                r.DescribeLogDirsResult.DescribeLogDirsTopic.DescribeLogDirsPartition(
                    partition_index=index, partition_size=size, offset_lag=lag, is_future_key=is_future
                )
            )
        results.append(
            r.DescribeLogDirsResult(
                error_code=0,
                log_dir=log_dir,
                topics=[
                    r.DescribeLogDirsResult.DescribeLogDirsTopic(name=name, partitions=parts)
                    for name, parts in by_topic.items()
                ],
                total_bytes=-1,
                usable_bytes=-1,
                is_cordoned=False,
            )
        )
    return r(version=ctx.api_version, throttle_time_ms=0, error_code=0, results=results)


def specs() -> list[ApiSpec]:
    return [
        api_spec(DescribeConfigsRequest, DescribeConfigsResponse, handle_describe_configs),
        api_spec(
            IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, handle_incremental_alter_configs
        ),
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
    ]

"""Config APIs: DescribeConfigs, IncrementalAlterConfigs and legacy AlterConfigs, topic and broker resources.

Both modes route alike (core/src/main/scala/kafka/server/KafkaApis.scala, ConfigAdminManager.scala, 3.9):
- DescribeConfigs for a BROKER resource is answered only by that broker or for the cluster default ""
  (ConfigHelper: "Unexpected broker id, expected X or empty string, but received Y").
- (Incremental)AlterConfigs is preprocessed by the broker that receives it, for every resource: a resource
  named twice is refused ("Each resource must appear at most once."), and a BROKER resource must name this
  very broker or be "" (ConfigAdminManager.validateResourceNameIsCurrentNodeId: "Unexpected broker id,
  expected X, but received Y"); its values are validated there (INVALID_REQUEST, KAFKA-13609). Clients send
  a broker's resource to that broker; only hand-built requests meet these errors.
The values, sources, synonyms and type checks come from the model (reassignd/sim/configs.py, views.py).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from kafka.protocol.admin import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)

from reassignd.sim.errors import INVALID_REQUEST, KafkaError
from reassignd.sim.protocol import ApiSpec, RequestContext, api_spec, error_fields

TOPIC, BROKER = 2, 4


def _invalid_request(message: str) -> KafkaError:
    return KafkaError(INVALID_REQUEST, message)


# ---------------------------------------------------------------------------------------------------------
# Configs


def _check_described_broker(ctx: RequestContext, name: str) -> None:
    """ConfigHelper.describeConfigs: this broker's id or the cluster default ""."""
    if not name:
        return
    try:
        broker_id = int(name)
    except ValueError:
        raise _invalid_request(f"Broker id must be an integer, but it is: {name}") from None
    if broker_id != ctx.broker_id:
        raise _invalid_request(
            f"Unexpected broker id, expected {ctx.broker_id} or empty string, but received {name}"
        )


def _check_altered_broker(ctx: RequestContext, name: str) -> None:
    """ConfigAdminManager.validateResourceNameIsCurrentNodeId: this broker's id or the cluster default ""."""
    if not name:
        return
    try:
        broker_id = int(name)
    except ValueError:
        raise _invalid_request(f"Node id must be an integer, but it is: {name}") from None
    if broker_id != ctx.broker_id:
        raise _invalid_request(f"Unexpected broker id, expected {ctx.broker_id}, but received {name}")


def _check_alter_resource(ctx: RequestContext, resource_type: int, name: str, repeats: int) -> None:
    if repeats > 1:
        raise _invalid_request("Each resource must appear at most once.")
    if resource_type == BROKER:
        _check_altered_broker(ctx, name)
    elif resource_type != TOPIC:
        raise _invalid_request(f"Unknown resource type {resource_type}")


def handle_describe_configs(ctx: RequestContext, request: Any) -> Any:
    r = DescribeConfigsResponse
    version = ctx.api_version
    results = []
    for resource in request.resources:
        entries: list[Any] = []
        try:
            if resource.resource_type == BROKER:
                _check_described_broker(ctx, resource.resource_name)
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
        if error is None:  # ConfigHelper sets only the code: the schema's default message, "", goes out
            message = ""
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


def _alter_each(
    ctx: RequestContext, request: Any, response: Any, apply: Callable[[Any, int, str], None]
) -> Any:
    """Both AlterConfigs APIs: each resource checked (a resource named twice is refused) and applied on its
    own, one response entry per resource."""
    seen: dict[tuple[int, str], int] = defaultdict(int)
    for resource in request.resources:
        seen[(resource.resource_type, resource.resource_name)] += 1
    responses = []
    for resource in request.resources:
        key = (resource.resource_type, resource.resource_name)
        try:
            _check_alter_resource(ctx, *key, repeats=seen[key])
            apply(resource, *key)
            error: KafkaError | None = None
        except KafkaError as exc:
            error = exc
        code, message = error_fields(error)
        responses.append(
            response.AlterConfigsResourceResponse(
                error_code=code, error_message=message, resource_type=key[0], resource_name=key[1]
            )
        )
    return response(version=ctx.api_version, throttle_time_ms=0, responses=responses)


def handle_incremental_alter_configs(ctx: RequestContext, request: Any) -> Any:
    def apply(resource: Any, resource_type: int, name: str) -> None:
        ops = [(c.name, c.config_operation, c.value) for c in resource.configs]
        ctx.cluster.incremental_alter_configs(resource_type, name, ops, bool(request.validate_only))

    return _alter_each(ctx, request, IncrementalAlterConfigsResponse, apply)


def handle_alter_configs(ctx: RequestContext, request: Any) -> Any:
    """Legacy AlterConfigs: each resource's dynamic configs replaced by the ones given."""

    def apply(resource: Any, resource_type: int, name: str) -> None:
        configs = [(c.name, c.value) for c in resource.configs]
        ctx.cluster.alter_configs(resource_type, name, configs, bool(request.validate_only))

    return _alter_each(ctx, request, AlterConfigsResponse, apply)


def specs() -> list[ApiSpec]:
    return [
        api_spec(DescribeConfigsRequest, DescribeConfigsResponse, handle_describe_configs),
        api_spec(
            IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, handle_incremental_alter_configs
        ),
        api_spec(AlterConfigsRequest, AlterConfigsResponse, handle_alter_configs),
    ]

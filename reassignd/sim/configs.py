"""Topic and broker configuration: definitions, type checks, DescribeConfigs entries, incremental changes.

Follows Kafka's ConfigDef parsing (clients/.../common/config/ConfigDef.java), the KIP-73 throttle configs
and ThrottledReplicaListValidator (core/src/main/scala/kafka/server/ConfigHandler.scala), the APPEND and
SUBTRACT rules of ConfigAdminManager.prepareIncrementalConfigs (also
ConfigurationControlManager.incrementalAlterConfigResource in KRaft), and the sources DescribeConfigs
reports (DescribeConfigsResponse.ConfigSource).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

from reassignd import config_keys
from reassignd.sim import errors
from reassignd.sim.errors import KafkaError

# DescribeConfigsResponse.ConfigSource ids.
SOURCE_TOPIC: Final = 1
SOURCE_DYNAMIC_BROKER: Final = 2
SOURCE_DYNAMIC_DEFAULT_BROKER: Final = 3
SOURCE_STATIC_BROKER: Final = 4
SOURCE_DEFAULT: Final = 5

# ConfigResource.Type ids.
RESOURCE_TOPIC: Final = 2
RESOURCE_BROKER: Final = 4

# AlterConfigOp.OpType ids.
OP_SET: Final = 0
OP_DELETE: Final = 1
OP_APPEND: Final = 2
OP_SUBTRACT: Final = 3

LONG_MAX: Final = 9223372036854775807
INT_MAX: Final = 2147483647

UNCLEAN_LEADER_ELECTION: Final = "unclean.leader.election.enable"
REPLICA_LAG_TIME_MAX_MS: Final = "replica.lag.time.max.ms"
REPLICA_FETCH_MAX_BYTES: Final = "replica.fetch.max.bytes"
REPLICA_FETCH_RESPONSE_MAX_BYTES: Final = "replica.fetch.response.max.bytes"
QUOTA_WINDOW_NUM: Final = "replication.quota.window.num"
QUOTA_WINDOW_SIZE_SECONDS: Final = "replication.quota.window.size.seconds"
ALTER_LOG_DIRS_QUOTA_WINDOW_NUM: Final = "alter.log.dirs.replication.quota.window.num"
ALTER_LOG_DIRS_QUOTA_WINDOW_SIZE_SECONDS: Final = "alter.log.dirs.replication.quota.window.size.seconds"

Validator = Callable[[str, object], None]


class ConfigValueError(ValueError):
    """Kafka's ConfigException: 'Invalid value V for configuration N: reason'."""

    def __init__(self, name: str, value: object, reason: str) -> None:
        super().__init__(f"Invalid value {value} for configuration {name}: {reason}")


@dataclass(frozen=True, slots=True)
class ConfigKey:
    name: str
    type: str  # ConfigDef.Type: BOOLEAN STRING INT SHORT LONG DOUBLE LIST CLASS PASSWORD
    default: str | None
    validator: Validator | None = None
    dynamic: bool = True  # broker keys: updatable without restart (read_only = not dynamic)
    synonym: str | None = None  # topic keys: the broker config that supplies the default
    # broker keys: defined in KafkaConfig (the throttle rates are QuotaConfigs, DynamicConfig.Broker only)
    in_kafka_config: bool = True


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One DescribeConfigs result entry; `synonyms` are (name, value, source) from highest precedence."""

    name: str
    value: str | None
    read_only: bool
    source: int
    is_sensitive: bool = False
    synonyms: tuple[tuple[str, str | None, int], ...] = field(default_factory=tuple)
    type: str = "STRING"


def _at_least(minimum: int) -> Validator:
    def check(name: str, value: object) -> None:
        if isinstance(value, int) and value < minimum:
            raise ConfigValueError(name, value, f"Value must be at least {minimum}")

    return check


def _one_of(*allowed: str) -> Validator:
    def check(name: str, value: object) -> None:
        items = value if isinstance(value, list) else [value]
        for item in items:
            if item not in allowed:
                raise ConfigValueError(name, value, f"String must be one of: {', '.join(allowed)}")

    return check


_REPLICA_ENTRY = re.compile(r"([0-9]+:[0-9]+)?")


def throttled_replica_list(name: str, value: object) -> None:
    """ConfigHandler.scala ThrottledReplicaListValidator: '*' or `partition:broker` entries."""
    items = value if isinstance(value, list) else [value]
    if (
        all(_REPLICA_ENTRY.fullmatch(str(i).strip()) for i in items)
        or "".join(map(str, items)).strip() == "*"
    ):
        return
    raise ConfigValueError(
        name,
        ",".join(map(str, items)),
        f"{name} must be the literal '*' or a list of replicas in the following format: "
        "[partitionId]:[brokerId],[partitionId]:[brokerId],...",
    )


_LONG_MAX_S = str(LONG_MAX)

TOPIC_CONFIGS: Final[dict[str, ConfigKey]] = {
    k.name: k
    for k in (
        ConfigKey(
            "cleanup.policy", "LIST", "delete", _one_of("delete", "compact"), synonym="log.cleanup.policy"
        ),
        ConfigKey("compression.type", "STRING", "producer", synonym="compression.type"),
        ConfigKey(
            "delete.retention.ms", "LONG", "86400000", _at_least(0), synonym="log.cleaner.delete.retention.ms"
        ),
        ConfigKey(
            "file.delete.delay.ms", "LONG", "60000", _at_least(0), synonym="log.segment.delete.delay.ms"
        ),
        ConfigKey("flush.messages", "LONG", _LONG_MAX_S, _at_least(1), synonym="log.flush.interval.messages"),
        ConfigKey("max.message.bytes", "INT", "1048588", _at_least(0), synonym="message.max.bytes"),
        ConfigKey(
            "message.timestamp.type",
            "STRING",
            "CreateTime",
            _one_of("CreateTime", "LogAppendTime"),
            synonym="log.message.timestamp.type",
        ),
        ConfigKey(
            config_keys.MIN_INSYNC_REPLICAS, "INT", "1", _at_least(1), synonym=config_keys.MIN_INSYNC_REPLICAS
        ),
        ConfigKey("retention.bytes", "LONG", "-1", synonym="log.retention.bytes"),
        ConfigKey("retention.ms", "LONG", "604800000", _at_least(-1), synonym="log.retention.ms"),
        ConfigKey("segment.bytes", "INT", "1073741824", _at_least(14), synonym="log.segment.bytes"),
        ConfigKey("segment.ms", "LONG", "604800000", _at_least(1), synonym="log.roll.ms"),
        ConfigKey(UNCLEAN_LEADER_ELECTION, "BOOLEAN", "false", synonym=UNCLEAN_LEADER_ELECTION),
        ConfigKey(config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS, "LIST", "", throttled_replica_list),
        ConfigKey(config_keys.FOLLOWER_REPLICATION_THROTTLED_REPLICAS, "LIST", "", throttled_replica_list),
    )
}

BROKER_CONFIGS: Final[dict[str, ConfigKey]] = {
    k.name: k
    for k in (
        ConfigKey(
            config_keys.LEADER_REPLICATION_THROTTLED_RATE,
            "LONG",
            _LONG_MAX_S,
            _at_least(0),
            in_kafka_config=False,
        ),
        ConfigKey(
            config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE,
            "LONG",
            _LONG_MAX_S,
            _at_least(0),
            in_kafka_config=False,
        ),
        ConfigKey(
            config_keys.REPLICA_ALTER_LOG_DIRS_IO_MAX_BYTES_PER_SECOND,
            "LONG",
            _LONG_MAX_S,
            _at_least(0),
            in_kafka_config=False,
        ),
        ConfigKey(config_keys.MIN_INSYNC_REPLICAS, "INT", "1", _at_least(1)),
        ConfigKey(UNCLEAN_LEADER_ELECTION, "BOOLEAN", "false"),
        ConfigKey("log.cleanup.policy", "LIST", "delete", _one_of("delete", "compact")),
        ConfigKey("compression.type", "STRING", "producer"),
        ConfigKey("log.cleaner.delete.retention.ms", "LONG", "86400000"),
        ConfigKey("log.segment.delete.delay.ms", "LONG", "60000"),
        ConfigKey("log.flush.interval.messages", "LONG", _LONG_MAX_S, _at_least(1)),
        ConfigKey("message.max.bytes", "INT", "1048588", _at_least(0)),
        ConfigKey(
            "log.message.timestamp.type", "STRING", "CreateTime", _one_of("CreateTime", "LogAppendTime")
        ),
        ConfigKey("log.retention.bytes", "LONG", "-1"),
        ConfigKey("log.retention.ms", "LONG", None),
        ConfigKey("log.segment.bytes", "INT", "1073741824", _at_least(14)),
        ConfigKey("log.roll.ms", "LONG", None),
        ConfigKey("num.replica.fetchers", "INT", "1", _at_least(1)),
        ConfigKey("log.retention.hours", "INT", "168", dynamic=False),
        ConfigKey("broker.id", "INT", "-1", dynamic=False),
        ConfigKey("node.id", "INT", "-1", dynamic=False),
        ConfigKey("broker.rack", "STRING", None, dynamic=False),
        ConfigKey("process.roles", "LIST", "", dynamic=False),
        ConfigKey("log.dirs", "STRING", None, dynamic=False),
        ConfigKey("log.dir", "STRING", "/tmp/kafka-logs", dynamic=False),
        ConfigKey("num.partitions", "INT", "1", _at_least(1), dynamic=False),
        ConfigKey("default.replication.factor", "INT", "1", dynamic=False),
        ConfigKey("offsets.topic.replication.factor", "SHORT", "3", _at_least(1), dynamic=False),
        ConfigKey("auto.create.topics.enable", "BOOLEAN", "true", dynamic=False),
        ConfigKey("auto.leader.rebalance.enable", "BOOLEAN", "true", dynamic=False),
        ConfigKey("delete.topic.enable", "BOOLEAN", "true", dynamic=False),
        ConfigKey(REPLICA_LAG_TIME_MAX_MS, "LONG", "30000", dynamic=False),
        ConfigKey(REPLICA_FETCH_MAX_BYTES, "INT", "1048576", _at_least(0), dynamic=False),
        ConfigKey(REPLICA_FETCH_RESPONSE_MAX_BYTES, "INT", "10485760", _at_least(0), dynamic=False),
        ConfigKey(QUOTA_WINDOW_NUM, "INT", "11", _at_least(1), dynamic=False),
        ConfigKey(QUOTA_WINDOW_SIZE_SECONDS, "INT", "1", _at_least(1), dynamic=False),
        ConfigKey(ALTER_LOG_DIRS_QUOTA_WINDOW_NUM, "INT", "11", _at_least(1), dynamic=False),
        ConfigKey(ALTER_LOG_DIRS_QUOTA_WINDOW_SIZE_SECONDS, "INT", "1", _at_least(1), dynamic=False),
        ConfigKey("controller.quorum.bootstrap.servers", "LIST", "", dynamic=False),
    )
}


def parse_value(key: ConfigKey, raw: str) -> object:
    """ConfigDef.parseType then the key's validator; raises ConfigValueError with Kafka's wording."""
    trimmed = raw.strip()
    value: object
    if key.type in ("INT", "LONG", "SHORT"):
        try:
            value = int(trimmed, 10)
        except ValueError:
            raise ConfigValueError(key.name, raw, f"Not a number of type {key.type}") from None
        bounds = {"INT": 2**31, "LONG": 2**63, "SHORT": 2**15}[key.type]
        if not -bounds <= value < bounds:
            raise ConfigValueError(key.name, raw, f"Not a number of type {key.type}")
    elif key.type == "DOUBLE":
        try:
            value = float(trimmed)
        except ValueError:
            raise ConfigValueError(key.name, raw, "Not a number of type DOUBLE") from None
    elif key.type == "BOOLEAN":
        if trimmed.lower() not in ("true", "false"):
            raise ConfigValueError(key.name, raw, "Expected value to be either true or false")
        value = trimmed.lower() == "true"
    elif key.type == "LIST":
        value = [] if not trimmed else [item.strip() for item in trimmed.split(",")]
    else:
        value = trimmed
    if key.validator is not None:
        key.validator(key.name, value)
    return value


def split_list(value: str | None) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()] if value else []


def check_request(ops: list[tuple[str, int, str | None]]) -> None:
    """What a broker refuses before anything else, for every resource (ConfigAdminManager.preprocess)."""
    names = [name for name, _op, _value in ops]
    if len(set(names)) != len(names):
        raise KafkaError(errors.INVALID_REQUEST, "Error due to duplicate config keys")
    nulls = [name for name, op, value in ops if op != OP_DELETE and value is None]
    if nulls:
        raise KafkaError(errors.INVALID_REQUEST, f"Null value not supported for : {', '.join(nulls)}")
    for _name, op, _value in ops:
        if op not in (OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT):
            raise KafkaError(errors.INVALID_REQUEST, f"Unknown operations type {op}")


def prepare_incremental(
    keys: Mapping[str, ConfigKey], current: Mapping[str, str], ops: list[tuple[str, int, str | None]]
) -> dict[str, str]:
    """ConfigAdminManager.prepareIncrementalConfigs: a broker's own preprocessing of BROKER resources (both
    modes) and the ZooKeeper-mode write path of every resource. APPEND/SUBTRACT look the key up in Kafka's
    own config definitions (KafkaConfig, LogConfig): a key they lack is a NoSuchElementException there."""
    result = dict(current)
    for name, op, value in ops:
        if op == OP_SET:
            result[name] = value or ""
        elif op == OP_DELETE:
            result.pop(name, None)
        else:
            verb = "append" if op == OP_APPEND else "subtract"
            key = keys.get(name)
            if key is None or not key.in_kafka_config:  # ApiError.fromThrowable: no message
                raise KafkaError(errors.UNKNOWN_SERVER_ERROR, null=True)
            if key.type != "LIST":
                raise KafkaError(
                    errors.INVALID_CONFIG, f"Config value {verb} is not allowed for config key: {name}"
                )
            given = (value or "").split(",")
            if op == OP_APPEND:
                old = [v for v in (result.get(name, key.default) or "").split(",") if v]
                result[name] = ",".join(old + [v for v in given if v not in old])
            else:
                remaining = (result.get(name, key.default) or "").split(",")
                for v in given:  # Scala's List.diff: one occurrence per value
                    if v in remaining:
                        remaining.remove(v)
                result[name] = ",".join(remaining)
    return result


def kraft_incremental(
    keys: Mapping[str, ConfigKey], current: Mapping[str, str], ops: list[tuple[str, int, str | None]]
) -> dict[str, str]:
    """ConfigurationControlManager.incrementalAlterConfigResource: the KRaft controller's write path."""
    result = dict(current)
    for name, op, value in ops:
        if op == OP_SET:
            result[name] = value or ""
        elif op == OP_DELETE:
            result.pop(name, None)
        else:
            key = keys.get(name)
            if key is None or key.type != "LIST":  # KafkaConfigSchema.isSplittable
                verb = "APPEND" if op == OP_APPEND else "SUBTRACT"
                raise KafkaError(
                    errors.INVALID_CONFIG, f"Can't {verb} to key {name} because its type is not LIST."
                )
            # Current value (or the default) split on ",", op values split on "," without trimming;
            # SUBTRACT down to nothing leaves the key set to "".
            old = [v for v in (result.get(name, key.default) or "").split(",") if v]
            given = (value or "").split(",")
            if op == OP_APPEND:
                merged = old + [v for i, v in enumerate(given) if v not in old and v not in given[:i]]
            else:
                merged = [v for v in old if v not in given]
            result[name] = ",".join(merged)
    return result


def check_dynamic_broker(props: Mapping[str, str]) -> None:
    """DynamicBrokerConfig.validate as the receiving broker runs it (both modes): static keys and values
    that do not parse are INVALID_REQUEST (KAFKA-13609); keys Kafka does not define are custom configs and
    accepted (DynamicConfig.Broker.validate, customPropsAllowed = true)."""
    static = sorted(name for name in props if name in BROKER_CONFIGS and not BROKER_CONFIGS[name].dynamic)
    if static:
        raise KafkaError(
            errors.INVALID_REQUEST, f"Cannot update these configs dynamically: Set({', '.join(static)})"
        )
    for name, value in props.items():
        key = BROKER_CONFIGS.get(name)
        if key is not None:
            try:
                parse_value(key, value)
            except ConfigValueError as exc:
                raise KafkaError(errors.INVALID_REQUEST, str(exc)) from None


def check_topic_configs(configs: Mapping[str, str], wrap: str | None = None) -> None:
    """LogConfig.validate: unknown names and values that do not parse are INVALID_CONFIG. `wrap` is the
    ZooKeeper-mode prefix of a value error ("Invalid config value for resource ...: ")."""
    for name in configs:
        if name not in TOPIC_CONFIGS:
            raise KafkaError(errors.INVALID_CONFIG, f"Unknown topic config name: {name}")
    for name, value in configs.items():
        try:
            parse_value(TOPIC_CONFIGS[name], value)
        except ConfigValueError as exc:
            raise KafkaError(errors.INVALID_CONFIG, f"{wrap or ''}{exc}") from None


def zk_resource(resource_type: int, name: str) -> str:
    """ConfigResource.toString, as ZkAdminManager puts it in its messages."""
    kind = {RESOURCE_TOPIC: "TOPIC", RESOURCE_BROKER: "BROKER"}.get(resource_type, str(resource_type))
    return f"ConfigResource(type={kind}, name='{name}')"


def effective_long(raw: str | None, default: int = LONG_MAX) -> int:
    if raw is None:
        return default
    try:
        return int(raw.strip())
    except ValueError:
        return default


def parse_throttled_replicas(value: str | None) -> tuple[bool, frozenset[tuple[int, int]]]:
    """(all, {(partition, broker)}) from a *.replication.throttled.replicas value.

    ConfigHandler.parseThrottledPartitions: '*' throttles every partition; otherwise a broker throttles the
    partitions whose `partition:broker` entry names it.
    """
    items = split_list(value)
    if items == ["*"]:
        return True, frozenset()
    pairs: set[tuple[int, int]] = set()
    for item in items:
        partition, _, broker = item.partition(":")
        if partition.strip().isdigit() and broker.strip().isdigit():
            pairs.add((int(partition), int(broker)))
    return False, frozenset(pairs)

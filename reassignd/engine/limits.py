"""The engine's limits: KIP-435 names, defaults, validation, and TOML flattening.

Every limit may change between two decisions (KIP-435: "these values could be changed dynamically"); the
engine reads them afresh on every call, so a new `Limits` takes effect at the next decision.

`Limits.from_mapping` is the one validator of limit values: the config file (validate-config, start-up,
SIGHUP), `PATCH /v1/limits` and `/v1/throttles`, MQTT `set_throttles` and `reassignd schedule` all go
through it, so a value is accepted everywhere or nowhere. The rules:

- Each value has the type the KIP gives it, with its range: the KIP-435 counts are Kafka `int`s
  ([1, Int.MAX]); the rates are Kafka `LONG`s, as `leader.replication.throttled.rate` is (a rate above
  2^63 - 1 would be refused by every broker with INVALID_CONFIG, "Not a number of type LONG"); seconds are
  finite and positive.
- There is no rule across keys. KIP-435 defines every movement limit as an independent upper limit
  ("valid values [1,...]", "puts an upper limit on concurrent replica movements"), so the tightest one in
  force binds: `reassignment.max.concurrent.replica.movements = 3` with the per-broker limits at their
  default 5 means at most 3 replicas move at once in the whole cluster, and a per-broker limit above the
  global one simply never binds. The engine never needs more than the smallest of them to make progress
  (a step adds at most min(R, per-broker outgoing, global) replicas: `Limits.step_size`), so no combination of
  valid values can stall a plan.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Final

from reassignd import config_keys
from reassignd.model import InvalidInputError, Problem, clipped, shown
from reassignd.suggest import unknown_key

INT_MAX: Final = 2**31 - 1
"""Kafka's `int`: the type of every KIP-435 count."""
LONG_MAX: Final = 2**63 - 1
"""Kafka's `LONG`: the type of the replication throttle rates (KIP-73, KIP-542)."""
MAX_STALL_WINDOW_SECONDS: Final = 7 * 24 * 3600.0

#: Sort keys a `reassignment.ordering` chain may name (see docs/engine.md, "Ordering").
ORDERING_KEYS: Final = (
    "under_min_isr",
    "leader_moves",
    "round_robin",
    "larger_first",
    "smaller_first",
    "fewer_moves_first",
    "plan_order",
)
DEFAULT_ORDERING: Final = ("under_min_isr", "leader_moves", "round_robin", "larger_first")
SCHEDULING_MODES: Final = ("continuous", "batch")
OPERATOR_RATE_POLICIES: Final = ("add", "keep")


@dataclass(frozen=True, slots=True)
class Limits:
    """One consistent set of limits; build it with `Limits.from_mapping` to get validation."""

    parallel_replica_count: int = 1
    parallel_partition_count: int = INT_MAX
    parallel_leader_movements: int = INT_MAX
    max_concurrent_replica_movements: int = INT_MAX
    max_incoming_per_broker: int = 5
    max_outgoing_per_broker: int = 5
    scheduling_mode: str = "continuous"
    ordering: tuple[str, ...] = DEFAULT_ORDERING
    leader_throttled_rate: int | None = None
    follower_throttled_rate: int | None = None
    stall_window_seconds: float = 300.0
    elect_after_finish: bool = True
    balance_sources: bool = True
    """Let another in-sync replica lead a partition while its copies run, when the leaders, not the
    receivers, would bound the plan (sources.py). Configuration key `reassignment.balance.sources`."""
    operator_rate_policy: str = "add"
    """What a broker with an operator's own replication rate gets while it serves or receives our moves:
    `add` their rate plus ours (KIP-542), `keep` theirs alone (throttle.py)."""
    max_log_dir_movements_per_broker: int = 2
    """Moves between the log dirs of one broker in flight at once on it (log_dir_moves.py)."""
    log_dir_throttled_rate: int | None = None
    """Bytes/s for those moves: `replica.alter.log.dirs.io.max.bytes.per.second` while one runs there."""

    @classmethod
    def from_mapping(cls, flat: Mapping[str, object]) -> Limits:
        """Build from dotted KIP names; unknown `reassignment.*` keys and bad values fail, all at once."""
        problems: list[Problem] = []
        values: dict[str, Any] = {}
        by_name = {key.name: key for key in LIMIT_KEYS}
        for name, raw in flat.items():
            key = by_name.get(name)
            if key is None:
                if name.startswith("reassignment."):
                    problems.append(Problem("limits", clipped(name), unknown_key(name, by_name)))
                continue
            converted, error = key.validate(raw)
            if error is not None:
                problems.append(Problem("limits", name, f"{error}, got {shown(raw)}"))
            else:
                values[key.attribute] = converted
        if problems:
            raise InvalidInputError("limits", problems)
        return cls(**values)

    @property
    def step_size(self) -> int:
        """New replicas one step adds (beyond min.insync's need): R, kept within the outgoing and the global
        movement limits, so every step can be scheduled (docs/engine.md, "Limits")."""
        return min(
            self.parallel_replica_count, self.max_outgoing_per_broker, self.max_concurrent_replica_movements
        )

    def to_mapping(self) -> dict[str, object]:
        """The dotted-name form, e.g. for `--json` output and the daemon's status."""
        return {key.name: _plain(getattr(self, key.attribute)) for key in LIMIT_KEYS}


def _plain(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value


@dataclass(frozen=True, slots=True)
class LimitKey:
    name: str
    attribute: str
    type: str
    default: object
    doc: str
    validate: Callable[[object], tuple[object, str | None]]


def _positive_int(raw: object) -> tuple[object, str | None]:
    if isinstance(raw, bool) or not isinstance(raw, int):
        return None, "must be an integer"
    if raw < 1:
        return None, "must be at least 1"
    if raw > INT_MAX:
        return None, f"must be at most {INT_MAX} (KIP-435 limits are Kafka ints)"
    return raw, None


def _rate(raw: object) -> tuple[object, str | None]:
    if raw is None:
        return None, None
    if isinstance(raw, bool) or not isinstance(raw, int):
        return None, "must be an integer number of bytes per second"
    if raw == -1:
        return None, None
    if raw < 1:
        return None, "must be at least 1 byte/s (or -1 for no throttle)"
    if raw > LONG_MAX:
        return None, f"must be at most {LONG_MAX} bytes/s (Kafka's throttle rates are of type LONG)"
    return raw, None


def _seconds(raw: object) -> tuple[object, str | None]:
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return None, "must be a number of seconds"
    if not math.isfinite(raw):
        return None, "must be a finite number of seconds"
    if raw <= 0:
        return None, "must be positive"
    if raw > MAX_STALL_WINDOW_SECONDS:
        return None, f"must be at most {MAX_STALL_WINDOW_SECONDS:g} seconds (a week)"
    return float(raw), None


def _mode(raw: object) -> tuple[object, str | None]:
    if raw not in SCHEDULING_MODES:
        return None, f"must be one of {', '.join(SCHEDULING_MODES)}"
    return raw, None


def _policy(raw: object) -> tuple[object, str | None]:
    if raw not in OPERATOR_RATE_POLICIES:
        return None, f"must be one of {', '.join(OPERATOR_RATE_POLICIES)}"
    return raw, None


def _bool(raw: object) -> tuple[object, str | None]:
    if not isinstance(raw, bool):
        return None, "must be true or false"
    return raw, None


def _ordering(raw: object) -> tuple[object, str | None]:
    items = raw.split(",") if isinstance(raw, str) else raw
    if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
        return None, "must be a list of sort-key names"
    names = tuple(str(i).strip() for i in items if str(i).strip())
    if not names:
        return None, "names no sort key: give at least one (plan_order for the plan's own order)"
    unknown = [n for n in names if n not in ORDERING_KEYS]
    if unknown:
        return None, f"unknown sort key(s) {unknown}; known: {', '.join(ORDERING_KEYS)}"
    if len(set(names)) != len(names):
        return None, "names a sort key twice"
    if "larger_first" in names and "smaller_first" in names:
        return None, "cannot hold both larger_first and smaller_first"
    return names, None


def _key(name: str, attribute: str, type_: str, doc: str, validate: Callable[[object], Any]) -> LimitKey:
    default = next(f.default for f in fields(Limits) if f.name == attribute)
    return LimitKey(name, attribute, type_, _plain(default), doc, validate)


LIMIT_KEYS: Final[tuple[LimitKey, ...]] = (
    _key(
        config_keys.REASSIGNMENT_PARALLEL_REPLICA_COUNT,
        "parallel_replica_count",
        "int",
        "R: replicas of one partition added per step (KIP-435 default 1: one replica at a time).",
        _positive_int,
    ),
    _key(
        config_keys.REASSIGNMENT_PARALLEL_PARTITION_COUNT,
        "parallel_partition_count",
        "int",
        "Partitions with a step in flight at once (KIP-435 default Int.MAX).",
        _positive_int,
    ),
    _key(
        config_keys.REASSIGNMENT_PARALLEL_LEADER_MOVEMENTS,
        "parallel_leader_movements",
        "int",
        "Steps in flight that move leadership (KIP-435 default Int.MAX).",
        _positive_int,
    ),
    _key(
        config_keys.REASSIGNMENT_MAX_CONCURRENT_REPLICA_MOVEMENTS,
        "max_concurrent_replica_movements",
        "int",
        "Replicas being added cluster-wide (KIP-435 default Int.MAX).",
        _positive_int,
    ),
    _key(
        config_keys.REASSIGNMENT_MAX_INCOMING_REPLICA_MOVEMENTS_PER_BROKER,
        "max_incoming_per_broker",
        "int",
        "Replicas being added to one broker (Cruise Control's default 5).",
        _positive_int,
    ),
    _key(
        config_keys.REASSIGNMENT_MAX_OUTGOING_REPLICA_MOVEMENTS_PER_BROKER,
        "max_outgoing_per_broker",
        "int",
        "Adding replicas a broker serves as the partition's leader (Cruise Control's default 5).",
        _positive_int,
    ),
    _key(
        config_keys.REASSIGNMENT_SCHEDULING_MODE,
        "scheduling_mode",
        "str",
        "continuous: start work as soon as a slot frees; batch: wait for the whole batch (KIP-435).",
        _mode,
    ),
    _key(
        config_keys.REASSIGNMENT_ORDERING,
        "ordering",
        "list[str]",
        f"Chain of sort keys choosing what starts first (at least one); known: {', '.join(ORDERING_KEYS)}.",
        _ordering,
    ),
    _key(
        config_keys.LEADER_REASSIGNMENT_THROTTLED_RATE,
        "leader_throttled_rate",
        "int",
        "Bytes/s for brokers serving moves (KIP-542 name; applied as leader.replication.throttled.rate).",
        _rate,
    ),
    _key(
        config_keys.FOLLOWER_REASSIGNMENT_THROTTLED_RATE,
        "follower_throttled_rate",
        "int",
        "Bytes/s for brokers receiving moves (KIP-542 name; applied as follower.replication.throttled.rate).",
        _rate,
    ),
    _key(
        config_keys.REASSIGNMENT_STALL_WINDOW_SECONDS,
        "stall_window_seconds",
        "float",
        "A move is stalled when its follower has not caught up faster than the produce rate this long.",
        _seconds,
    ),
    _key(
        config_keys.REASSIGNMENT_ELECT_PREFERRED_LEADER_AFTER_FINISH,
        "elect_after_finish",
        "bool",
        "Run a preferred-leader election when a partition reaches its final target.",
        _bool,
    ),
    _key(
        config_keys.REASSIGNMENT_BALANCE_SOURCES,
        "balance_sources",
        "bool",
        "When a few leaders would serve most copies (a drained broker leading many moving partitions), lead "
        "some of their partitions from a less loaded in-sync replica while they copy: one extra leader "
        "election each, undone by the final preferred-leader election (needs elect.preferred.leader.after."
        "finish; not in batch mode).",
        _bool,
    ),
    _key(
        config_keys.THROTTLE_OPERATOR_RATE_POLICY,
        "operator_rate_policy",
        "str",
        "A broker that already has an operator's leader/follower.replication.throttled.rate while it serves "
        "or receives our moves: add (KIP-542: their rate plus the reassignment rate, for the moves' "
        "duration, then exactly theirs again) or keep (theirs alone binds our moves too).",
        _policy,
    ),
    _key(
        config_keys.REASSIGNMENT_MAX_LOG_DIR_MOVEMENTS_PER_BROKER,
        "max_log_dir_movements_per_broker",
        "int",
        "Moves between the log dirs of one broker (a plan's `log_dirs`, AlterReplicaLogDirs) in flight at "
        "once on that broker. A log-dir move starts once its replica is on the broker (at once for one that "
        "does not change brokers); Kafka copies one partition per log dir thread at a time.",
        _positive_int,
    ),
    _key(
        config_keys.LOG_DIR_REASSIGNMENT_THROTTLED_RATE,
        "log_dir_throttled_rate",
        "int",
        "Bytes/s for moves between log dirs, applied as replica.alter.log.dirs.io.max.bytes.per.second on a "
        "broker while one of our log-dir moves runs there (restored exactly after).",
        _rate,
    ),
)


def flatten_toml(document: Mapping[str, Any], prefix: str = "") -> dict[str, object]:
    """Nested tables to dotted keys: `{"a": {"b": {"c": 2}}}` -> `{"a.b.c": 2}`.

    TOML parses dotted keys into nested tables, so the KIP names come back only after flattening. Arrays
    are values (`reassignment.ordering = [...]`), never descended into.
    """
    flat: dict[str, object] = {}
    for key, value in document.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten_toml(value, f"{name}."))
        else:
            flat[name] = value
    return flat

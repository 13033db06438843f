"""The simulated cluster's mutable entities: brokers, topics, partitions and catching-up replicas.

They are plain records owned by one SimCluster; only the cluster mutates them (through its change methods), so
readers such as the wire server may look but must not write.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from reassignd import config_keys
from reassignd.sim.configs import parse_throttled_replicas

NO_LEADER = -1


class Clock:
    """Virtual seconds since the simulation started; shared by reference with every partition."""

    __slots__ = ("now",)

    def __init__(self) -> None:
        self.now = 0.0


DEFAULT_LOG_DIR = "/var/lib/kafka/data"
DEFAULT_VOLUME_BYTES = 2**40


@dataclass(slots=True, eq=False)
class LogDir:
    """One of a broker's `log.dirs`: its volume's size and what on it is not a simulated replica."""

    path: str
    total_bytes: int = DEFAULT_VOLUME_BYTES
    other_bytes: int = 0  # bytes on the volume that belong to no simulated replica
    online: bool = True  # False: the dir failed (ClusterCore.fail_log_dir; sim/log_dirs.py has Kafka's rules)


@dataclass(slots=True, eq=False)
class SimBroker:
    id: int
    rack: str | None
    online: bool = True
    network_in: float = 125_000_000.0
    network_out: float = 125_000_000.0
    configs: dict[str, str] = field(default_factory=dict)  # dynamic per-broker configs
    static_configs: dict[str, str] = field(default_factory=dict)  # server.properties
    log_dirs: list[LogDir] = field(default_factory=lambda: [LogDir(DEFAULT_LOG_DIR)])
    log_dir_copy_rate: float = 250_000_000.0  # bytes/s a copy between its log dirs can reach (disk)

    @property
    def log_dir(self) -> str:
        """The first of `log.dirs` (the only one unless the scenario names several)."""
        return self.log_dirs[0].path

    def dir_named(self, path: str) -> LogDir | None:
        return next((d for d in self.log_dirs if d.path == path), None)


class Lag:
    """A replica outside the ISR: `pos0` bytes at time `t0`, growing at `rate` while it fetches."""

    __slots__ = ("done_at", "gate", "keys", "keys_epoch", "links", "pos0", "quotas", "rate", "t0")

    def __init__(self, pos0: float, t0: float) -> None:
        self.keys: tuple[int, ...] | None = None  # resource ids of its fetch, cached between reallocations
        self.keys_epoch = 0
        self.links: tuple[int, ...] = ()  # of `keys`, the links (network) and the finite quotas
        self.quotas: tuple[int, ...] = ()
        self.gate: Any = None  # the simulator's record of it as a copy behind quotas (core.Gated)
        self.pos0 = pos0
        self.t0 = t0
        self.rate = 0.0
        self.done_at = float("inf")

    def at(self, now: float) -> float:
        return self.pos0 + self.rate * (now - self.t0)

    def rebase(self, now: float, rate: float) -> None:
        self.pos0 = self.at(now)
        self.t0 = now
        self.rate = rate


class SimPartition:
    """One partition: Kafka's registration fields plus the log that grows at the produce rate.

    `growth` is how fast the leader's log grows now: the produce rate, or nothing without a leader, or while
    acks=all producers are refused for an ISR below min.insync.replicas (Partition.appendRecordsToLeader:
    NOT_ENOUGH_REPLICAS). Only the cluster sets it, when it re-accounts the partition after a change.
    """

    __slots__ = (
        "_clock",
        "_size0",
        "_t0",
        "_under_since",
        "acks_all",
        "adding",
        "dirs",
        "growth",
        "index",
        "isr",
        "lags",
        "leader",
        "leader_epoch",
        "partition_epoch",
        "produce_bytes_per_sec",
        "removing",
        "replicas",
        "topic",
        "under_min_seconds",
    )

    def __init__(
        self,
        topic: str,
        index: int,
        replicas: list[int],
        clock: Clock,
        *,
        size: float,
        produce: float,
        acks_all: bool = True,
    ) -> None:
        self.topic = topic
        self.index = index
        self.replicas = replicas
        self.isr: list[int] = list(replicas)
        self.leader = replicas[0] if replicas else NO_LEADER
        self.leader_epoch = 0
        self.partition_epoch = 0
        self.adding: list[int] = []
        self.removing: list[int] = []
        self.produce_bytes_per_sec = produce
        self.acks_all = acks_all  # the producers' acks: all (Kafka's producer default since 3.0) or 1
        self.growth = produce if self.leader != NO_LEADER else 0.0
        self.lags: dict[int, Lag] = {}
        # the log dir of each replica, by broker; absent: the broker's first (usually only) log dir. None
        # until a replica is placed elsewhere: an empty dict per partition costs megabytes at 100k partitions.
        self.dirs: dict[int, str] | None = None
        self.under_min_seconds = 0.0
        self._under_since = -1.0
        self._clock = clock
        self._size0 = float(size)
        self._t0 = clock.now

    def __repr__(self) -> str:
        return (
            f"SimPartition({self.topic}-{self.index} replicas={self.replicas} isr={self.isr} "
            f"leader={self.leader} adding={self.adding} removing={self.removing})"
        )

    def _end(self) -> float:
        if not self.growth:
            return self._size0
        return self._size0 + self.growth * (self._clock.now - self._t0)

    @property
    def log_end(self) -> int:
        """Bytes in the leader's log (frozen while the partition has no leader), to the nearest byte."""
        return round(self._end())

    def rebase_log(self) -> None:
        self._size0 = self._end()
        self._t0 = self._clock.now

    def truncate_log(self, size: float) -> None:
        self._size0 = size
        self._t0 = self._clock.now

    def position_exact(self, broker: int) -> float:
        lag = self.lags.get(broker)
        end = self._end()
        if lag is None:
            return end if broker in self.replicas else 0.0
        return min(end, lag.at(self._clock.now))

    def position(self, broker: int) -> int:
        """Bytes the replica on `broker` holds (0 if it has none), to the nearest byte."""
        return round(self.position_exact(broker))

    @property
    def is_reassigning(self) -> bool:
        return bool(self.adding or self.removing)


class SimTopic:
    __slots__ = (
        "_follower_throttled",
        "_leader_throttled",
        "configs",
        "name",
        "partitions",
        "throttles_any",
        "topic_id",
    )

    def __init__(self, name: str, topic_id: uuid.UUID, configs: dict[str, str]) -> None:
        self.name = name
        self.topic_id = topic_id
        self.configs = configs
        self.partitions: list[SimPartition] = []
        self.refresh_throttles()

    def refresh_throttles(self) -> None:
        self._leader_throttled = parse_throttled_replicas(
            self.configs.get(config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS)
        )
        self._follower_throttled = parse_throttled_replicas(
            self.configs.get(config_keys.FOLLOWER_REPLICATION_THROTTLED_REPLICAS)
        )
        lists = (self._leader_throttled, self._follower_throttled)
        self.throttles_any = any(every or pairs for every, pairs in lists)

    def leader_throttled(self, partition: int, leader: int) -> bool:
        every, pairs = self._leader_throttled
        return every or (partition, leader) in pairs

    def follower_throttled(self, partition: int, follower: int) -> bool:
        every, pairs = self._follower_throttled
        return every or (partition, follower) in pairs

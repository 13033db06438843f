"""Moves between the log dirs of one broker (AlterReplicaLogDirs): a future log copies the current one.

Sources (apache/kafka 3.9, core/src/main/scala/kafka/; the placement rules checked again on trunk 1eb7644):
- server/ReplicaManager.scala `alterReplicaLogDirs`: a dir not in `log.dirs` is LOG_DIR_NOT_FOUND; a future
  log already going elsewhere is dropped first; the dir is remembered as the replica's preferred dir
  (LogManager.maybeUpdatePreferredLogDir, called before the replica is looked up) so a replica created
  later on this broker is placed there; a partition this broker does not host answers
  REPLICA_NOT_AVAILABLE (NotLeaderOrFollower, kept for compatibility) or UNKNOWN_TOPIC_OR_PARTITION if the
  topic is unknown; asking for the replica's own dir drops a future log going elsewhere (cancels the move);
  otherwise a future log is created (at offset 0) and a ReplicaAlterLogDirsThread copies into it.
- log/LogManager.scala `getOrCreateLog`: a new replica goes to its preferred dir if it has one (which wins
  over the dir KRaft's controller assigned, `targetLogDirectoryId`), else to `nextLogDirs()`; the preferred
  dir is then forgotten. `preferredLogDirs` is a ConcurrentHashMap, in memory only: a broker that restarts
  before the replica is created has forgotten it (core.py `_forget_preferred_dirs`).
- server/LocalLeaderEndPoint.scala `buildFetch`/`selectPartitionToFetch`: each alter-log-dirs thread copies
  ONE partition at a time, the lowest (topic, partition) first, and keeps it until it is done; nothing is
  fetched while the broker's `replica.alter.log.dirs.io.max.bytes.per.second` quota is exceeded (the quota
  covers every copy of the broker). Threads: `num.replica.alter.log.dirs.threads`, by default one per log
  dir (KafkaConfig.getNumReplicaAlterLogDirsThreads); a partition's thread is
  AbstractFetcherManager.getFetcherId: abs(31 * topic.hashCode + partition) % threads.
- cluster/Partition.scala `maybeReplaceCurrentWithFutureReplica`: once the future log's end reaches the
  current log's end, the future log replaces it (and the old one is deleted).
- server/ReplicaManager.scala `getLogEndOffsetLag`: a future log's offset lag is the current log's end minus
  its own.
The copy rate is bounded by the quota and by the broker's disk (`log_dir_copy_bytes_per_sec`, a model
parameter: Kafka reads and writes local files as fast as the disk allows).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from reassignd.sim.entities import Lag, SimBroker, SimPartition

DEFAULT_COPY_BYTES_PER_SEC = 250_000_000.0


@dataclass(slots=True, eq=False)
class FutureLog:
    """A future log of a replica: the dir it goes to and how much of the current log it holds."""

    path: str
    progress: Lag


def java_string_hash(text: str) -> int:
    """java.lang.String.hashCode over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    raw = text.encode("utf-16-be")
    for i in range(0, len(raw), 2):
        h = (31 * h + int.from_bytes(raw[i : i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def fetcher_id(topic: str, partition: int, threads: int) -> int:
    """AbstractFetcherManager.getFetcherId: Utils.abs(31 * topic.hashCode() + partition) % threads."""
    value = (31 * java_string_hash(topic) + partition) & 0xFFFFFFFF
    signed = value - (1 << 32) if value >= 1 << 31 else value
    return (0 if signed == -(1 << 31) else abs(signed)) % max(threads, 1)


class FutureLogs:
    """Every future log of the cluster, by replica, and the copy each alter-log-dirs thread works on."""

    def __init__(self) -> None:
        self.logs: dict[tuple[SimPartition, int], FutureLog] = {}
        self.threads: dict[tuple[int, int], tuple[SimPartition, int]] = {}  # (broker, thread) -> copy

    def drop(self, p: SimPartition, broker_id: int) -> bool:
        """The replica's future log gone (its move cancelled or done); whether there was one."""
        if self.logs.pop((p, broker_id), None) is None:
            return False
        for thread, busy in list(self.threads.items()):
            if busy == (p, broker_id):
                del self.threads[thread]
        return True

    def active(self, brokers: Mapping[int, SimBroker]) -> list[tuple[SimPartition, int, FutureLog]]:
        """The copy each alter-log-dirs thread of each running broker works on now (LocalLeaderEndPoint)."""
        waiting: dict[tuple[int, int], list[tuple[SimPartition, int]]] = {}
        for p, b in self.logs:
            broker = brokers[b]
            if broker.online:
                thread = fetcher_id(p.topic, p.index, len(broker.log_dirs))
                waiting.setdefault((b, thread), []).append((p, b))
        active = []
        for key, candidates in waiting.items():
            busy = self.threads.get(key)
            if busy is None or busy not in self.logs:
                busy = min(candidates, key=lambda c: (c[0].topic, c[0].index))
                self.threads[key] = busy
            active.append((busy[0], busy[1], self.logs[busy]))
        return active


def copy_target(p: SimPartition, broker_id: int) -> tuple[float, float]:
    """(position, growth in bytes/s) of the current log a future log copies: the replica's own log."""
    lag = p.lags.get(broker_id)
    if lag is None:  # in sync: it grows with the leader's log
        return p._end(), p.growth
    return p.position_exact(broker_id), lag.rate if p._end() > lag.at(p._clock.now) else 0.0

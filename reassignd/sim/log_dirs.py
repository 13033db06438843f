"""Moves between the log dirs of one broker (AlterReplicaLogDirs): a future log copies the current one.

Sources (apache/kafka 3.9, core/src/main/scala/kafka/):
- server/ReplicaManager.scala `alterReplicaLogDirs`: a dir not in `log.dirs` is LOG_DIR_NOT_FOUND; a future
  log already going elsewhere is dropped first; the dir is remembered as the replica's preferred dir
  (LogManager.maybeUpdatePreferredLogDir) so a replica created later on this broker is placed there; a
  partition this broker does not host answers REPLICA_NOT_AVAILABLE (NotLeaderOrFollower, kept for
  compatibility) or UNKNOWN_TOPIC_OR_PARTITION if the topic is unknown; asking for the replica's own dir
  drops a future log going elsewhere (cancels the move); otherwise a future log is created (at offset 0)
  and a ReplicaAlterLogDirsThread copies into it.
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

from dataclasses import dataclass
from typing import TYPE_CHECKING

from reassignd.sim import errors
from reassignd.sim.entities import NO_LEADER, Lag, SimPartition
from reassignd.sim.errors import KafkaError

if TYPE_CHECKING:
    from reassignd.sim.core import ClusterCore

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


def alter_replica_log_dir(sim: ClusterCore, broker_id: int, topic: str, partition: int, path: str) -> None:
    """One partition of AlterReplicaLogDirs sent to `broker_id`; KafkaError for a per-partition error."""
    broker = sim.brokers.get(broker_id)
    if broker is None or not broker.online:
        raise KafkaError(errors.BROKER_NOT_AVAILABLE, f"Broker {broker_id} is not available.")
    if broker.dir_named(path) is None:
        raise KafkaError(errors.LOG_DIR_NOT_FOUND, f"Log dir {path} is not found in the config.")
    t = sim.topics.get(topic)
    p = t.partitions[partition] if t is not None and 0 <= partition < len(t.partitions) else None
    if p is not None and p in sim._replicas_on.get(broker_id, ()):
        future = sim._futures.get((p, broker_id))
        if future is not None and future.path != path:
            drop_future(sim, p, broker_id)
        if sim.dir_of(p, broker_id) == path or (p, broker_id) in sim._futures:
            return
        sim._futures[(p, broker_id)] = FutureLog(path, Lag(0.0, sim.now))
        sim._dirty = True
        return
    sim._preferred_dirs[(topic, partition, broker_id)] = path
    if p is None:
        raise KafkaError(errors.UNKNOWN_TOPIC_OR_PARTITION)
    raise KafkaError(errors.REPLICA_NOT_AVAILABLE)


def drop_future(sim: ClusterCore, p: SimPartition, broker_id: int) -> None:
    if sim._futures.pop((p, broker_id), None) is not None:
        for thread, busy in list(sim._copy_threads.items()):
            if busy == (p, broker_id):
                del sim._copy_threads[thread]
        sim._dirty = True


def copy_target(p: SimPartition, broker_id: int) -> tuple[float, float]:
    """(position, growth in bytes/s) of the current log a future log copies: the replica's own log."""
    lag = p.lags.get(broker_id)
    if lag is None:  # in sync: it grows with the leader's log
        grows = p.produce_bytes_per_sec if p.leader != NO_LEADER else 0.0
        return p._end(), grows
    return p.position_exact(broker_id), lag.rate if p._end() > lag.at(p._clock.now) else 0.0


def active_copies(sim: ClusterCore) -> list[tuple[SimPartition, int, FutureLog]]:
    """The copy each alter-log-dirs thread of each running broker works on now (LocalLeaderEndPoint)."""
    waiting: dict[tuple[int, int], list[tuple[SimPartition, int]]] = {}
    for p, b in sim._futures:
        broker = sim.brokers[b]
        if broker.online:
            thread = fetcher_id(p.topic, p.index, len(broker.log_dirs))
            waiting.setdefault((b, thread), []).append((p, b))
    active = []
    for key, candidates in waiting.items():
        busy = sim._copy_threads.get(key)
        if busy is None or busy not in sim._futures:
            busy = min(candidates, key=lambda c: (c[0].topic, c[0].index))
            sim._copy_threads[key] = busy
        active.append((busy[0], busy[1], sim._futures[busy]))
    return active


def promote(sim: ClusterCore, p: SimPartition, broker_id: int) -> None:
    """The future log replaces the current one (Partition.maybeReplaceCurrentWithFutureReplica)."""
    future = sim._futures[(p, broker_id)]
    drop_future(sim, p, broker_id)
    sim._account(p, -1)
    sim._drop_log(p, broker_id)
    sim._place_log(p, broker_id, future.path)
    sim._account(p, +1)

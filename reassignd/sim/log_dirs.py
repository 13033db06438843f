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

A log dir that fails (ClusterCore.fail_log_dir; apache/kafka trunk 1eb7644):
- server/ReplicaManager.scala `handleLogDirFailure`: every partition whose log is in the dir is marked
  `HostedPartition.Offline` on that broker, its fetchers stop, and a future log in the dir (a move between
  dirs into it) is dropped, as is the move of a log of the dir elsewhere; the broker halts when the dir is
  the metadata log dir of a KRaft broker (`metadata.log.dir`, by default the first of `log.dirs`:
  KafkaConfig.metadataLogDir).
- log/LogManager.scala `handleLogDirFailure`: the dir leaves the live dirs; the broker halts when no live
  dir is left. `nextLogDirs` (a new replica's dir) picks among the live dirs only.
- Before Kafka 3.7 (KIP-858, JBOD in KRaft) a KRaft broker halted on any log dir failure (no release
  before 3.7 is simulated); a ZooKeeper-mode
  broker (KIP-112) tells the controller (`propagateLogDirEvent`), which moves leadership and shrinks the
  ISR (KafkaController.onBrokerLogDirFailure -> onReplicasBecomeOffline).
- KRaft from 3.7: the broker reports the dir in its heartbeat (BrokerLifecycleManager.
  propagateDirectoryFailure; it shuts down if the controller has not heard within
  `log.dir.failure.timeout.ms`, 30 s, which the simulator does not model: the controller always hears);
  the controller (metadata/.../ReplicationControlManager.java `handleDirectoriesOffline`) takes the
  broker's replicas in the dir out of the ISR and moves their leadership; no replica in an offline dir is
  ever an acceptable leader (`LeaderAcceptor`: ClusterControlManager.hasOnlineDir), an unclean election
  included. Metadata lists such replicas in `offline_replicas` (KRaftMetadataCache.getOfflineReplicas).
- `describeLogDirs`: an offline dir is answered with KAFKA_STORAGE_ERROR (56), no partitions and no
  volume figures (-1); `alterReplicaLogDirs` answers KAFKA_STORAGE_ERROR for an offline destination dir
  ("Log directory ... is offline") and for a partition that is Offline on the broker. A replica there can
  neither move to another dir nor be deleted (`stopReplicas` answers KAFKA_STORAGE_ERROR, "partition is
  in an offline log directory"): only a move to another broker takes it out of the assignment (its data
  stays on the failed disk). ZooKeeper mode: KafkaController.onBrokerLogDirFailure asks the broker about
  every replica (LeaderAndIsr), and the ones it answers KAFKA_STORAGE_ERROR for go offline.
- A failed dir comes back only with a restart of the broker on a readable disk (KIP-112); the simulator's
  `restore_log_dir` brings it back without the restart, its replicas catching up from where they were.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from reassignd.sim.entities import Lag, SimBroker, SimPartition
from reassignd.sim.kafka_version import KafkaVersion

DEFAULT_COPY_BYTES_PER_SEC = 250_000_000.0


@dataclass(slots=True, eq=False)
class FutureLog:
    """A future log of a replica: the dir it goes to and how much of the current log it holds."""

    path: str
    progress: Lag


METADATA_LOG_DIR = "metadata.log.dir"


def halts_broker(broker: SimBroker, path: str, kafka: KafkaVersion) -> bool:
    """Whether the failure of the dir `path` halts the broker (ReplicaManager/LogManager
    handleLogDirFailure): its last live dir, or on KRaft its metadata log dir (every release simulated is
    3.7 or later: JBOD in KRaft, KIP-858)."""
    if all(not d.online or d.path == path for d in broker.log_dirs):
        return True
    if kafka.zookeeper:
        return False
    metadata_dir = broker.static_configs.get(METADATA_LOG_DIR) or broker.log_dirs[0].path
    return path == metadata_dir


def why_not_started(broker: SimBroker, kafka: KafkaVersion) -> str | None:
    """Why a stopped broker cannot start with its failed dirs, None when it can: no live dir
    (LogManager.createAndValidateLogDirs halts), or on KRaft its metadata log dir failed (KafkaRaftServer
    initializeLogDirs: "Encountered I/O error in metadata log directory ... Cannot continue")."""
    if all(not d.online for d in broker.log_dirs):
        return "every log dir"
    if kafka.zookeeper:
        return None
    metadata_dir = broker.static_configs.get(METADATA_LOG_DIR) or broker.log_dirs[0].path
    known = broker.dir_named(metadata_dir)
    if known is not None and not known.online:
        return f"its metadata log dir {metadata_dir!r}"
    return None


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

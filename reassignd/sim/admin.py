"""A ClusterAdmin over a SimCluster in the same process: the daemon's controller without TCP or threads.

It answers what `KafkaClusterAdmin` answers over the wire (reassignd/cluster/kafka.py), from the model
directly, so controller tests run in virtual time and explore interleavings in seconds. What it must not do
is know more than a client could:

- a stopped broker is missing from the cluster's broker list; its configs and log dirs cannot be read (an
  item error, as BROKER_NOT_AVAILABLE), and a config write to it fails the call;
- with no broker up, or while `unreachable` is set (a network partition between the daemon and the
  cluster), every call fails with a retriable transport error, as librdkafka's `_TRANSPORT` would;
- produce rates are not reported (Kafka has no such figure: the daemon derives them from log growth);
- sizes come only from readable replicas, and only when asked for;
- replicas, ISR and leader come from the brokers' Metadata, which trails the controller by the model's
  metadata delay (`SimCluster.published`), and a move the controller lists takes its replica list from
  that listing, as KafkaClusterAdmin assembles a snapshot (reassignd/cluster/convert.py `build_snapshot`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from reassignd.cluster.api import (
    ConfigDescription,
    ConfigOp,
    ConfigSource,
    ConfigValue,
    ItemError,
    LogDirsResult,
    Reassignment,
    ReplicaLogDir,
    SnapshotFromResult,
    SnapshotResult,
    merge_ops,
)
from reassignd.cluster.errors import (
    ELECTION_NOT_NEEDED,
    ClusterCallError,
    KafkaErrorInfo,
    error_for_code,
)
from reassignd.model import Broker, ClusterSnapshot, PartitionState, TopicInfo, TopicPartition
from reassignd.sim import configs as cfg
from reassignd.sim.errors import BROKER_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION, KafkaError
from reassignd.sim.model import ELECTION_PREFERRED, SimCluster
from reassignd.sim.scenario import topic_id_text
from reassignd.sim.views import replica_sizes

_TRANSPORT = KafkaErrorInfo("_TRANSPORT", None, True, "no broker of the cluster could be reached")


def _info(exc: KafkaError) -> KafkaErrorInfo:
    return error_for_code(exc.code, exc.message or "")


@dataclass
class SimClusterAdmin(SnapshotFromResult):
    """`ClusterAdmin` (reassignd/cluster/api.py) answered by `sim` in-process."""

    sim: SimCluster
    unreachable: bool = False
    """A network partition: the cluster runs on, the daemon cannot reach any of it."""
    calls: list[tuple[str, object]] = field(default_factory=list)
    """Every write, in order, for tests that check who wrote what."""
    read_skew: float = 0.0
    """Cluster seconds between a snapshot's metadata read and its reassignments read. The real adapter sends
    them as separate requests, so a move that completes in between is seen half done (torn): replicas still
    listing the removed replicas, no reassignment in progress."""

    def _reach(self, api: str) -> frozenset[int]:
        online = frozenset(b for b, broker in self.sim.brokers.items() if broker.online)
        if self.unreachable or not online:
            raise ClusterCallError(api, _TRANSPORT)
        return online

    # -- reads ------------------------------------------------------------------------------------------

    async def cluster_id(self) -> str | None:
        self._reach("describe_cluster")
        return self.sim.cluster_id

    async def learn_cluster_size(self) -> None:
        """The model keeps no client state that a read's way of asking could spare."""

    async def topic_partitions(self, topics: Collection[str]) -> tuple[list[TopicPartition], list[ItemError]]:
        self._reach("list_topics")
        found, errors = [], []
        for name in sorted(set(topics)):
            topic = self.sim.topics.get(name)
            if topic is None:
                info = error_for_code(UNKNOWN_TOPIC_OR_PARTITION, f"topic {name} does not exist")
                errors.append(ItemError("list_topics", f"topic {name}", info))
                continue
            found += [TopicPartition(name, p.index) for p in topic.partitions]
        return sorted(found), errors

    async def snapshot_with_errors(
        self,
        partitions: Collection[TopicPartition] | None = None,
        *,
        with_sizes: bool | Collection[TopicPartition] | Mapping[TopicPartition, Collection[int]] = False,
        broker_config_keys: Collection[str] = (),
        topic_config_keys: Collection[str] = (),
    ) -> SnapshotResult:
        online = self._reach("describe_cluster")
        sim = self.sim
        wanted = None if partitions is None else frozenset(partitions)
        names = sorted(sim.topics) if wanted is None else sorted({tp.topic for tp in wanted})
        deleted = frozenset(n for n in names if n not in sim.topics)
        errors = [
            ItemError("list_topics", f"topic {n}", error_for_code(UNKNOWN_TOPIC_OR_PARTITION))
            for n in sorted(deleted)
        ]
        metadata = []
        referenced: set[int] = set()
        replica_dirs: dict[tuple[TopicPartition, int], str] = {}
        future_dirs: dict[tuple[TopicPartition, int], str] = {}
        first_dir = {b.id: b.log_dirs[0].path for b in sim.brokers.values()}  # SimCluster.dir_of's default
        futures = sim._futures
        for name in names:
            topic = sim.topics.get(name)
            if topic is None:
                continue
            for p in topic.partitions:
                tp = TopicPartition(name, p.index)
                if wanted is not None and tp not in wanted:
                    continue
                replicas, isr, leader, _epoch = sim.published(p)
                sizes = self._sizes(tp, p, online, with_sizes)
                if sizes and sim._failed_dirs:  # a replica in a failed dir: DescribeLogDirs lists it nowhere
                    sizes = {b: s for b, s in sizes.items() if sim.replica_online(p, b)}
                metadata.append((tp, replicas, isr, leader, sizes))
                if sizes:  # the same DescribeLogDirs answer names each replica's dir (views.replica_log_dirs)
                    named = p.dirs
                    for b in sizes:
                        replica_dirs[(tp, b)] = (named.get(b) if named else None) or first_dir[b]
                    if futures:
                        for b in sizes:
                            future = futures.get((p, b))
                            if future is not None:
                                future_dirs[(tp, b)] = future.path
        if self.read_skew:
            sim.advance(self.read_skew)
        moving = {(t, i): (tuple(r), a, rm) for t, i, r, a, rm in sim.list_partition_reassignments()}
        states = []
        for tp, published, published_isr, published_leader, every_size in metadata:
            # the controller's listing is newer than a broker's Metadata: its replica list wins (convert.py)
            replicas, adding, removing = moving.get((tp.topic, tp.partition), (published, (), ()))
            referenced.update(replicas)
            isr = tuple(b for b in published_isr if b in replicas)
            leader = published_leader if published_leader in replicas else -1
            sizes = {b: s for b, s in every_size.items() if b in replicas}
            leader_size = sizes.get(leader)
            states.append(
                PartitionState(
                    tp=tp,
                    replicas=replicas,
                    isr=isr,
                    leader=leader,
                    adding=tuple(b for b in adding if b in replicas),
                    removing=tuple(b for b in removing if b in replicas),
                    size_bytes=leader_size if leader_size is not None else max(sizes.values(), default=0),
                    replica_sizes=sizes,
                )
            )
        brokers = [Broker(b.id, b.rack, True) for b in sim.brokers.values() if b.online]
        brokers += [Broker(b, None, False) for b in sorted(referenced - online)]
        broker_configs: dict[int, dict[str, str]] = {}
        cluster_configs: dict[str, str] = {}
        if broker_config_keys:
            keys = set(broker_config_keys)
            for b in sorted(online):
                broker_configs[b] = {k: v for k, v in sim.brokers[b].configs.items() if k in keys}
            cluster_configs = {k: v for k, v in sim.cluster_configs.items() if k in keys}
            errors += [
                ItemError("describe_configs", f"broker {b}", self._offline(b))
                for b in sorted(set(sim.brokers) - online)
            ]
        topic_keys = set(topic_config_keys)
        infos = [
            TopicInfo(
                name,
                topic_id_text(sim.topics[name].topic_id),
                {k: v for k, v in sim.topics[name].configs.items() if k in topic_keys},
            )
            for name in names
            if name in sim.topics
        ]
        snapshot = ClusterSnapshot.build(
            brokers,
            states,
            infos,
            broker_configs=broker_configs,
            cluster_configs=cluster_configs,
            cluster_id=sim.cluster_id,
            controller_id=sim.advertised_controller(),
            deleted_topics=deleted,
            replica_dirs=MappingProxyType(replica_dirs),  # as built: no copy
            future_dirs=future_dirs,
            # DescribeLogDirs goes to the brokers hosting a replica asked for, as KafkaClusterAdmin sends it;
            # a failed dir answers KAFKA_STORAGE_ERROR: not among the dirs, its replicas not listed
            broker_dirs={
                b: tuple(d.path for d in sim.brokers[b].log_dirs if d.online)
                for b in sorted({b for _, b in replica_dirs})
            },
            dir_volumes=self._volumes(online) if with_sizes else {},
            offline_dirs=self._offline_dirs(online, referenced) if with_sizes else frozenset(),
        )
        return SnapshotResult(snapshot=snapshot, errors=tuple(errors))

    def _offline_dirs(self, online: Collection[int], hosts: Collection[int]) -> frozenset[tuple[int, str]]:
        """The failed dirs of the running brokers asked (those hosting a replica), as DescribeLogDirs
        answers them: KAFKA_STORAGE_ERROR."""
        return frozenset(
            (b, d.path)
            for b in sorted(set(online) & set(hosts))
            for d in self.sim.brokers[b].log_dirs
            if not d.online
        )

    def _volumes(self, online: Collection[int]) -> dict[tuple[int, str], tuple[int, int]]:
        """Each online broker's log dirs' total and usable bytes, as DescribeLogDirs v4 answers them."""
        return {
            (b, d.path): (d.total_bytes, d.usable_bytes)
            for b in sorted(online)
            if b in self.sim.brokers
            for d in self.sim.log_dir_descriptions(b, [])
            if not d.error_code
        }

    @staticmethod
    def _sizes(
        tp: TopicPartition,
        p: object,
        online: frozenset[int],
        with_sizes: bool | Collection[TopicPartition] | Mapping[TopicPartition, Collection[int]],
    ) -> dict[int, int]:
        if with_sizes is False or (not isinstance(with_sizes, bool) and tp not in with_sizes):
            return {}
        every = replica_sizes(p)  # type: ignore[arg-type]
        asked: Collection[int] = every
        leader = getattr(p, "leader", -1)
        if isinstance(with_sizes, Mapping) and leader in online:
            asked = {leader, *with_sizes[tp]}
        return {b: s for b, s in every.items() if b in asked and b in online}

    @staticmethod
    def _offline(broker: int) -> KafkaErrorInfo:
        return KafkaErrorInfo(
            "BROKER_NOT_AVAILABLE", BROKER_NOT_AVAILABLE, True, f"broker {broker} is offline"
        )

    async def describe_broker_configs(
        self,
        broker_ids: Collection[int],
        keys: Collection[str] | None = None,
        *,
        live: Collection[int] | None = None,
    ) -> dict[int, ConfigDescription]:
        online = self._reach("describe_configs")
        out: dict[int, ConfigDescription] = {}
        for b in sorted(set(broker_ids)):
            if b not in online:
                out[b] = ConfigDescription(error=self._offline(b))
                continue
            entries = self.sim.describe_configs(cfg.RESOURCE_BROKER, str(b), list(keys) if keys else None)
            out[b] = ConfigDescription(values={e.name: _value(e) for e in entries})
        return out

    async def describe_topic_configs(
        self, topics: Collection[str], keys: Collection[str] | None = None
    ) -> dict[str, ConfigDescription]:
        self._reach("describe_configs")
        out: dict[str, ConfigDescription] = {}
        for name in sorted(set(topics)):
            try:
                entries = self.sim.describe_configs(cfg.RESOURCE_TOPIC, name, list(keys) if keys else None)
            except KafkaError as exc:
                out[name] = ConfigDescription(error=_info(exc))
                continue
            out[name] = ConfigDescription(values={e.name: _value(e) for e in entries})
        return out

    async def list_partition_reassignments(
        self, partitions: Collection[TopicPartition] | None = None
    ) -> dict[TopicPartition, Reassignment]:
        self._reach("list_partition_reassignments")
        asked = None if partitions is None else [(tp.topic, tp.partition) for tp in partitions]
        return {
            TopicPartition(t, i): Reassignment(tuple(r), tuple(a), tuple(rm))
            for t, i, r, a, rm in self.sim.list_partition_reassignments(asked)
        }

    async def describe_log_dirs(
        self, broker_ids: Collection[int], partitions: Collection[TopicPartition]
    ) -> LogDirsResult:
        online = self._reach("describe_log_dirs")
        replicas: dict[tuple[TopicPartition, int], ReplicaLogDir] = {}
        futures: dict[tuple[TopicPartition, int], str] = {}
        dirs: dict[int, tuple[str, ...]] = {}
        errors: dict[int, KafkaErrorInfo] = {}
        offline: set[tuple[int, str]] = set()
        asked = [(tp.topic, tp.partition) for tp in partitions]
        for b in sorted(set(broker_ids)):
            if b not in online:
                errors[b] = self._offline(b)
                continue
            listing = self.sim.describe_log_dirs(b, asked)  # a failed dir left out, as convert.py does
            dirs[b] = tuple(log_dir for log_dir, _ in listing)
            offline |= {(b, d.path) for d in self.sim.brokers[b].log_dirs if not d.online}
            for log_dir, rows in listing:
                for topic, index, size, lag, future in rows:
                    key = (TopicPartition(topic, index), b)
                    if future:
                        futures[key] = log_dir
                    if key not in replicas or replicas[key].is_future:  # the current log wins (convert.py)
                        replicas[key] = ReplicaLogDir(size, lag, log_dir, future)
        return LogDirsResult(
            replicas=replicas, errors=errors, futures=futures, dirs=dirs, offline=frozenset(offline)
        )

    # -- writes -----------------------------------------------------------------------------------------

    async def alter_broker_configs(self, broker_id: int, ops: Collection[ConfigOp]) -> None:
        online = self._reach("incremental_alter_configs")
        if broker_id not in online:
            raise ClusterCallError("incremental_alter_configs", self._offline(broker_id))
        self._alter(cfg.RESOURCE_BROKER, str(broker_id), ops)

    async def alter_topic_configs(self, topic: str, ops: Collection[ConfigOp]) -> None:
        self._reach("incremental_alter_configs")
        self._alter(cfg.RESOURCE_TOPIC, topic, ops)

    def _alter(self, kind: int, name: str, ops: Collection[ConfigOp]) -> None:
        merged = merge_ops(name, ops)
        self.calls.append(("incremental_alter_configs", (kind, name, tuple(merged))))
        try:
            self.sim.incremental_alter_configs(kind, name, [(o.key, int(o.op), o.value) for o in merged])
        except KafkaError as exc:
            raise ClusterCallError("incremental_alter_configs", _info(exc)) from None

    async def alter_partition_reassignments(
        self, targets: Mapping[TopicPartition, Collection[int] | None]
    ) -> dict[TopicPartition, KafkaErrorInfo | None]:
        self._reach("alter_partition_reassignments")
        results: dict[TopicPartition, KafkaErrorInfo | None] = {}
        for tp, replicas in targets.items():
            self.calls.append(
                ("alter_partition_reassignments", (tp, None if replicas is None else tuple(replicas)))
            )
            try:
                self.sim.alter_partition_reassignment(
                    tp.topic, tp.partition, None if replicas is None else [int(b) for b in replicas]
                )
                results[tp] = None
            except KafkaError as exc:
                results[tp] = _info(exc)
        return results

    async def alter_replica_log_dirs(
        self, moves: Mapping[tuple[TopicPartition, int], str]
    ) -> dict[tuple[TopicPartition, int], KafkaErrorInfo | None]:
        """AlterReplicaLogDirs, sent to each replica's broker; answered per replica."""
        self._reach("alter_replica_log_dirs")
        results: dict[tuple[TopicPartition, int], KafkaErrorInfo | None] = {}
        for (tp, broker), path in moves.items():
            self.calls.append(("alter_replica_log_dirs", (tp, broker, path)))
            try:
                self.sim.alter_replica_log_dir(broker, tp.topic, tp.partition, path)
                results[(tp, broker)] = None
            except KafkaError as exc:
                results[(tp, broker)] = _info(exc)
        return results

    async def elect_preferred_leaders(
        self, partitions: Collection[TopicPartition]
    ) -> dict[TopicPartition, KafkaErrorInfo | None]:
        self._reach("elect_leaders")
        wanted = sorted(set(partitions))
        if not wanted:
            return {}
        self.calls.append(("elect_leaders", tuple(wanted)))
        raw = self.sim.elect_leaders(ELECTION_PREFERRED, [(tp.topic, tp.partition) for tp in wanted])
        out: dict[TopicPartition, KafkaErrorInfo | None] = {}
        for (topic, index), error in raw.items():
            info = None if error is None else _info(error)
            out[TopicPartition(topic, index)] = (
                None if info is None or info.name == ELECTION_NOT_NEEDED else info
            )
        return out

    async def create_topic(
        self,
        name: str,
        *,
        assignment: Mapping[int, Collection[int]] | None = None,
        num_partitions: int | None = None,
        replication_factor: int | None = None,
        configs: Mapping[str, str] | None = None,
    ) -> None:
        self._reach("create_topics")
        raw = None if assignment is None else {p: list(assignment[p]) for p in sorted(assignment)}
        try:
            self.sim.create_topic(
                name, num_partitions or -1, replication_factor or -1, raw, dict(configs or {})
            )
        except KafkaError as exc:
            raise ClusterCallError("create_topics", _info(exc)) from None

    async def close(self, *, wait: bool = True) -> None:
        return None


def _value(entry: cfg.ConfigEntry) -> ConfigValue:
    return ConfigValue(
        name=entry.name,
        value=entry.value,
        source=ConfigSource(entry.source),
        read_only=entry.read_only,
        sensitive=entry.is_sensitive,
        synonyms=tuple((ConfigSource(s), v) for _, v, s in entry.synonyms),
    )

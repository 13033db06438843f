"""SimCluster: a deterministic Kafka cluster in virtual time, driven through Kafka's admin operations.

Pure and synchronous: no sockets, no clock, no asyncio. The wire server (reassignd/sim/server.py) owns one
instance, advances it from wall time, and maps requests to the methods below; benchmarks, property tests and
plan rehearsal drive it directly. docs/simulator.md lists every rule and the Kafka source it follows.
"""

from __future__ import annotations

import base64
import random
import re
import uuid
from typing import Any

from reassignd.model import ClusterSnapshot, InvalidInputError, PartitionState, Problem
from reassignd.sim import configs as cfg
from reassignd.sim import errors, views
from reassignd.sim import zk_controller as zk
from reassignd.sim.configs import ConfigEntry
from reassignd.sim.core import DEFAULT_METADATA_DELAY, ClusterCore
from reassignd.sim.entities import NO_LEADER, Lag, LogDir, SimBroker, SimPartition, SimTopic
from reassignd.sim.errors import KafkaError
from reassignd.sim.kafka_version import DEFAULT as DEFAULT_KAFKA
from reassignd.sim.kafka_version import KafkaVersion
from reassignd.sim.placement_default import assign_replicas
from reassignd.sim.reassignment import Election, reassignment_replicas, revert
from reassignd.sim.scenario import ANY_LOG_DIR, WHAT, Scenario, parse_topic_id

__all__ = ["SimBroker", "SimCluster", "SimPartition", "SimTopic"]

ELECTION_PREFERRED = 0
ELECTION_UNCLEAN = 1
_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")


class SimCluster(ClusterCore):
    def __init__(
        self,
        seed: int = 0,
        cluster_id: str | None = None,
        kafka: KafkaVersion = DEFAULT_KAFKA,
        metadata_delay: float = DEFAULT_METADATA_DELAY,
    ) -> None:
        super().__init__(kafka, metadata_delay)
        self._rng = random.Random(seed)
        self.cluster_id = cluster_id or base64.urlsafe_b64encode(self._rng.randbytes(16)).decode().rstrip("=")
        self._topics_by_id: dict[uuid.UUID, SimTopic] = {}
        self._advertised_rng = random.Random(seed + 1)  # apart: placement stays what the seed gives

    def advertised_controller(self) -> int:
        """The controller a Metadata or DescribeCluster answer names. ZooKeeper mode: the controller.
        KRaft: clients cannot reach the quorum, so each answer names a random unfenced broker (KafkaApis
        `handleTopicMetadataRequest`, KRaftMetadataCache `getRandomAliveBrokerId`; KIP-590), which forwards
        controller requests; -1 when none is."""
        if self.kafka.zookeeper:
            return self.controller_id
        online = sorted(b for b, broker in self.brokers.items() if broker.online)
        return self._advertised_rng.choice(online) if online else -1

    # -- construction ----------------------------------------------------------------------------------

    @classmethod
    def from_scenario(
        cls, scenario: Scenario, seed: int | None = None, kafka: KafkaVersion | None = None
    ) -> SimCluster:
        """A cluster in the scenario's state; `kafka` overrides the scenario's release and mode."""
        chosen = seed if seed is not None else (scenario.seed or 0)
        delay = DEFAULT_METADATA_DELAY if scenario.metadata_delay is None else scenario.metadata_delay
        sim = cls(
            seed=chosen, cluster_id=scenario.cluster_id, kafka=kafka or scenario.kafka, metadata_delay=delay
        )
        for spec in scenario.brokers:
            roles = (
                {} if sim.kafka.zookeeper else {"node.id": str(spec.id), "process.roles": "broker,controller"}
            )
            static = {
                "broker.id": str(spec.id),
                **roles,
                "log.dirs": ",".join(d.path for d in spec.log_dirs),
                **scenario.static_broker_configs,
            }
            if spec.rack:
                static["broker.rack"] = spec.rack
            sim.brokers[spec.id] = SimBroker(
                spec.id,
                spec.rack,
                True,
                spec.network_in,
                spec.network_out,
                dict(scenario.broker_configs.get(spec.id, {})),
                static,
                [LogDir(d.path, d.total_bytes) for d in spec.log_dirs],
                spec.log_dir_copy_rate,
            )
            sim._replicas_on[spec.id] = set()
        sim.cluster_configs = dict(scenario.cluster_broker_configs)
        states = {(s.tp.topic, s.tp.partition): s for s in scenario.partition_states or ()}
        for t in scenario.topics:
            topic_id = (parse_topic_id(t.topic_id) if t.topic_id else None) or sim._new_uuid()
            if t.assignment is not None:
                assignment = [list(r) for r in t.assignment]
            else:
                assignment = sim._default_placement(t.partitions, t.replication_factor)
            topic = sim._register_topic(
                t.name,
                topic_id,
                dict(t.configs),
                assignment,
                sizes=t.partition_bytes,
                produce=t.produce_bytes_per_sec,
                dirs=t.log_dirs,
                acks_all=t.produce_acks == "all",
            )
            for p in topic.partitions:
                state = states.get((t.name, p.index))
                if state is not None:
                    sim._load_state(p, state)
        sim._size_volumes(scenario)
        offline = [b.id for b in scenario.brokers if not b.online]
        for broker_id in offline:
            sim.stop_broker(broker_id)
        online = sorted(b for b, broker in sim.brokers.items() if broker.online)
        wanted = scenario.controller_id
        sim.controller_id = wanted if wanted in online else (online[0] if online else -1)
        return sim

    def _size_volumes(self, scenario: Scenario) -> None:
        """A log dir given `usable_bytes` at the start: what the replicas there do not use is other data."""
        problems = []
        for i, spec in enumerate(scenario.brokers):
            used = views.bytes_per_log_dir(self, spec.id)
            for j, d in enumerate(spec.log_dirs):
                if d.usable_bytes is None:
                    continue
                other = d.total_bytes - d.usable_bytes - used.get(d.path, 0)
                if other < 0:
                    problems.append(
                        Problem(
                            f"brokers[{i}]",
                            f"log_dirs[{j}].usable_bytes",
                            f"{d.usable_bytes} usable plus the {used.get(d.path, 0)} bytes of the replicas "
                            f"placed in {d.path} exceed its total_bytes {d.total_bytes}",
                        )
                    )
                    continue
                dirs = self.brokers[spec.id].log_dirs
                dirs[j] = LogDir(d.path, d.total_bytes, other)
        if problems:
            raise InvalidInputError(WHAT, problems)

    def _new_uuid(self) -> uuid.UUID:
        return uuid.UUID(int=self._rng.getrandbits(128), version=4)

    def _default_placement(self, partitions: int, replication_factor: int) -> list[list[int]]:
        """StripedReplicaPlacer over every registered broker; stopped (fenced) ones only as followers."""
        brokers = {b.id: b.rack for b in self.brokers.values()}
        fenced = frozenset(b.id for b in self.brokers.values() if not b.online)
        return assign_replicas(brokers, partitions, replication_factor, self._rng, fenced)

    def _register_topic(
        self,
        name: str,
        topic_id: uuid.UUID,
        configs: dict[str, str],
        assignment: list[list[int]],
        *,
        sizes: tuple[int, ...] | None = None,
        produce: tuple[float, ...] | None = None,
        dirs: tuple[tuple[str, ...], ...] | None = None,
        acks_all: bool = True,
    ) -> SimTopic:
        topic = SimTopic(name, topic_id, configs)
        self.topics[name] = topic
        self._topics_by_id[topic_id] = topic
        several_dirs = {b.id for b in self.brokers.values() if len(b.log_dirs) > 1}  # else nothing to place
        for index, replicas in enumerate(assignment):
            size = sizes[index] if sizes else 0
            rate = produce[index] if produce else 0.0
            p = SimPartition(
                name, index, list(replicas), self._clock, size=size, produce=rate, acks_all=acks_all
            )
            live = [r for r in replicas if self.is_alive(r)]
            p.isr = live or [replicas[0]]
            p.leader = live[0] if live else NO_LEADER
            for position, b in enumerate(replicas):
                self._replicas_on.setdefault(b, set()).add(p)
                if dirs or b in several_dirs:
                    wanted = dirs[index][position] if dirs else None
                    self._place_log(p, b, None if wanted == ANY_LOG_DIR else wanted)
                if b not in p.isr:
                    p.lags[b] = Lag(float(size), self._clock.now)
            topic.partitions.append(p)
            self._account(p, +1)
        return topic

    def _load_state(self, p: SimPartition, state: PartitionState) -> None:
        """Start `p` as a snapshot describes it (replicas, ISR, leader, ongoing move, replica sizes)."""
        self._account(p, -1)
        for b in p.replicas:
            self._replicas_on[b].discard(p)
            self._drop_log(p, b)
        p.replicas = list(state.replicas)
        p.isr = list(state.isr) or [state.replicas[0]]
        p.adding = list(state.adding)
        p.removing = list(state.removing)
        p.leader = state.leader if state.leader in p.isr else NO_LEADER
        p.lags = {}
        for b in p.replicas:
            self._replicas_on.setdefault(b, set()).add(p)
            self._place_log(p, b)
            if b not in p.isr:
                size = state.replica_sizes.get(b, 0)
                p.lags[b] = Lag(float(min(size, state.size_bytes)), self._clock.now)
        self._account(p, +1)
        if self.kafka.zookeeper:  # controller failover: elect the offline, resume the moving
            zp = self._zk(p)
            if p.leader == NO_LEADER:
                zp.elect_offline(self.alive_in(p), self.unclean_enabled(p.topic))
            zp.maybe_complete(self.alive_in(p))
            self._commit(p, zp)
            return
        self._change(p)  # elect if leaderless, complete a move the ISR already allows (else a no-op)

    def topic_by_id(self, topic_id: uuid.UUID) -> SimTopic | None:
        return self._topics_by_id.get(topic_id)

    def _partition(self, topic: str, partition: int) -> SimPartition:
        t = self.topics.get(topic)
        if t is None:
            raise KafkaError(errors.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {topic}.")
        if not 0 <= partition < len(t.partitions):
            raise KafkaError(
                errors.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}:{partition}."
            )
        return t.partitions[partition]

    # -- topics ----------------------------------------------------------------------------------------------

    def create_topic(  # noqa: PLR0917 - positional, as the contract with the server has it
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        assignment: dict[int, list[int]] | None,
        configs: dict[str, str],
        validate_only: bool = False,
    ) -> SimTopic:
        """CreateTopics for one topic (ReplicationControlManager.createTopic); raises KafkaError."""
        if not name or name in (".", "..") or len(name) > 249 or not _TOPIC_NAME.fullmatch(name):
            raise KafkaError(errors.INVALID_TOPIC_EXCEPTION, f"Topic name {name!r} is illegal.")
        if name in self.topics:
            raise KafkaError(errors.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        for key, value in configs.items():
            if key not in cfg.TOPIC_CONFIGS:
                raise KafkaError(errors.INVALID_CONFIG, f"Unknown topic config name: {key}")
            if value is None:
                raise KafkaError(errors.INVALID_CONFIG, f"Null value not supported for topic configs: {key}")
            try:
                cfg.parse_value(cfg.TOPIC_CONFIGS[key], value)
            except cfg.ConfigValueError as exc:
                raise KafkaError(errors.INVALID_CONFIG, str(exc)) from None
        if assignment:
            if num_partitions != -1 or replication_factor != -1:
                raise KafkaError(
                    errors.INVALID_REQUEST,
                    "A manual partition assignment was specified, but numPartitions or replicationFactor "
                    "was not set to -1.",
                )
            if sorted(assignment) != list(range(len(assignment))):
                raise KafkaError(
                    errors.INVALID_REPLICA_ASSIGNMENT, "Partitions should be numbered 0 through N-1."
                )
            lists = [list(assignment[i]) for i in range(len(assignment))]
            for index, replicas in enumerate(lists):
                self.validate_manual_assignment(replicas, len(lists[0]))
                if not any(self.is_alive(r) for r in replicas):
                    raise KafkaError(
                        errors.INVALID_REPLICA_ASSIGNMENT,
                        f"All brokers specified in the manual partition assignment for partition {index} "
                        "are fenced or in controlled shutdown.",
                    )
        else:
            if num_partitions == -1:
                num_partitions = int(self.broker_config(self.controller_id, "num.partitions") or 1)
            if replication_factor == -1:
                replication_factor = int(
                    self.broker_config(self.controller_id, "default.replication.factor") or 1
                )
            if num_partitions <= 0:
                raise KafkaError(
                    errors.INVALID_PARTITIONS,
                    "Number of partitions was set to an invalid non-positive value.",
                )
            if replication_factor <= 0:
                raise KafkaError(
                    errors.INVALID_REPLICATION_FACTOR,
                    "Replication factor must be larger than 0, or -1 to use the default value.",
                )
            lists = self._default_placement(num_partitions, replication_factor)
        topic_id = self._new_uuid()
        if validate_only:
            preview = SimTopic(name, topic_id, dict(configs))
            preview.partitions = [
                SimPartition(name, i, r, self._clock, size=0, produce=0.0) for i, r in enumerate(lists)
            ]
            return preview
        return self._register_topic(name, topic_id, dict(configs), lists)

    def validate_manual_assignment(self, replicas: list[int], expected_rf: int | None = None) -> None:
        """ReplicationControlManager.validateManualPartitionAssignment."""
        if not replicas:
            raise KafkaError(
                errors.INVALID_REPLICA_ASSIGNMENT,
                "The manual partition assignment includes an empty replica list.",
            )
        previous: int | None = None
        for broker in sorted(replicas):  # Kafka checks the sorted ids: the smallest culprit is named
            if broker not in self.brokers:
                raise KafkaError(
                    errors.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes broker {broker}, but no such broker is "
                    "registered.",
                )
            if broker == previous:
                raise KafkaError(
                    errors.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes the broker {broker} more than once.",
                )
            previous = broker
        if expected_rf is not None and len(replicas) != expected_rf:
            raise KafkaError(
                errors.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes a partition with {len(replicas)} replica(s), but "
                f"this is not consistent with previous partitions, which have {expected_rf} replica(s).",
            )

    def delete_topic(self, name: str) -> None:
        """DeleteTopics for one topic. ZooKeeper mode (TopicDeletionManager): a topic with a reassignment in
        progress or a replica on a stopped broker is only queued for deletion; it stays until both are
        over, and the request answers REQUEST_TIMED_OUT (DelayedDeleteTopics; the model does not wait)."""
        topic = self.topics.get(name)
        if topic is None:
            if self.kafka.zookeeper:  # filtered by the metadata cache: a code without a message
                raise KafkaError(errors.UNKNOWN_TOPIC_OR_PARTITION, null=True)
            raise KafkaError(errors.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to locate topic {name}.")
        if self.kafka.zookeeper:
            self.topics_to_delete.add(name)
            self._resume_deletions()
            if name in self.topics:
                raise KafkaError(errors.REQUEST_TIMED_OUT, null=True)
            return
        self._remove_topic(topic)

    def _resume_deletions(self) -> None:
        """TopicDeletionManager.resumeDeletions: delete each queued topic that has become eligible."""
        for name in sorted(self.topics_to_delete):
            topic = self.topics[name]
            if all(
                not p.is_reassigning and all(self.is_alive(b) for b in p.replicas) for p in topic.partitions
            ):
                self.topics_to_delete.discard(name)
                self._remove_topic(topic)

    def _remove_topic(self, topic: SimTopic) -> None:
        name = topic.name
        for p in topic.partitions:
            self._zk_online_without_leader.discard(p)
            self._unpublished.pop(p, None)
            self._account(p, -1)
            self._under_min.discard(p)
            self._ever_under.discard(p)
            self._reassigning.discard(p)
            for b in p.replicas:
                self._replicas_on[b].discard(p)
                self._drop_log(p, b)
        del self.topics[name]
        del self._topics_by_id[topic.topic_id]

    # -- reassignment --------------------------------------------------------------------------------------

    def alter_partition_reassignment(self, topic: str, partition: int, replicas: list[int] | None) -> None:
        """One partition of AlterPartitionReassignments (ReplicationControlManager, or in ZooKeeper mode
        KafkaController.processApiPartitionReassignment)."""
        if self.kafka.zookeeper:
            self._zk_reassign(topic, partition, replicas)
            return
        p = self._partition(topic, partition)
        if replicas is None:
            self._cancel_reassignment(p)
            return
        self.validate_manual_assignment(list(replicas))
        merged, adding, removing = reassignment_replicas(p.replicas, replicas)
        targets: dict[str, Any] = {}
        if list(merged) != p.replicas:
            targets["replicas"] = merged
        if removing:
            targets["removing"] = removing
        if adding:
            targets["adding"] = adding
        self._change(p, **targets)

    def _cancel_reassignment(self, p: SimPartition) -> None:
        if not p.is_reassigning:
            raise KafkaError(
                errors.NO_REASSIGNMENT_IN_PROGRESS,
                errors.DEFAULT_MESSAGES[errors.NO_REASSIGNMENT_IN_PROGRESS],
            )
        replicas, isr, unclean = revert(self._fields(p))
        allowed = self.unclean_enabled(p.topic)
        if unclean and not allowed:
            raise KafkaError(
                errors.INVALID_REPLICA_ASSIGNMENT,
                f"Unable to revert partition assignment for {p.topic}:{p.index} because it would require an "
                "unclean leader election.",
            )
        election = Election.UNCLEAN if allowed else Election.ONLINE
        self._change(p, election, isr=isr, replicas=replicas, adding=(), removing=())

    def _zk_reassign(self, topic: str, partition: int, target: list[int] | None) -> None:
        t = self.topics.get(topic)
        p = t.partitions[partition] if t is not None and 0 <= partition < len(t.partitions) else None
        current, adding = (p.replicas, p.adding) if p is not None else ([], [])
        if target is not None:
            live = [b for b, broker in self.brokers.items() if broker.online]
            problem = zk.validate_target(current, adding, list(target), live)
            if problem is not None:
                raise problem
        if target is None and (p is None or not p.is_reassigning):
            raise KafkaError(errors.NO_REASSIGNMENT_IN_PROGRESS)  # no message: ApiError(NO_REASSIGNMENT...)
        if p is None or topic in self.topics_to_delete:  # maybeTriggerPartitionReassignment
            raise KafkaError(errors.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
        zp = self._zk(p)
        zp.reassign(zk.origin_replicas(p.replicas, p.adding) if target is None else target, self.alive_in(p))
        self._commit(p, zp)
        if p.leader == NO_LEADER:
            self._zk_online_without_leader.add(p)
        if self.topics_to_delete:
            self._resume_deletions()

    def list_partition_reassignments(
        self, tps: list[tuple[str, int]] | None = None
    ) -> list[tuple[str, int, list[int], list[int], list[int]]]:
        """(topic, partition, replicas, adding, removing) of ongoing moves; unknown partitions are skipped."""
        if tps is None:
            chosen = list(self._reassigning)
        else:
            chosen = []
            for topic, index in tps:
                t = self.topics.get(topic)
                if t is not None and 0 <= index < len(t.partitions) and t.partitions[index].is_reassigning:
                    chosen.append(t.partitions[index])
        chosen.sort(key=lambda p: (p.topic, p.index))
        return [(p.topic, p.index, list(p.replicas), list(p.adding), list(p.removing)) for p in chosen]

    def elect_leaders(
        self, election_type: int, tps: list[tuple[str, int]] | None
    ) -> dict[tuple[str, int], KafkaError | None]:
        """ElectLeaders (ReplicationControlManager.electLeader); None means success."""
        if election_type not in (ELECTION_PREFERRED, ELECTION_UNCLEAN):
            raise KafkaError(errors.INVALID_REQUEST, f"Unknown election type {election_type}")
        everything = tps is None
        if tps is None:
            tps = [(t.name, p.index) for t in self.topics.values() for p in t.partitions]
        results: dict[tuple[str, int], KafkaError | None] = {}
        for topic, index in tps:
            t = self.topics.get(topic)
            if t is None or not 0 <= index < len(t.partitions):
                if self.kafka.zookeeper:
                    message = "The partition does not exist."
                else:
                    message = (
                        f"No such topic as {topic}" if t is None else f"No such partition as {topic}-{index}"
                    )
                results[(topic, index)] = KafkaError(errors.UNKNOWN_TOPIC_OR_PARTITION, message)
                continue
            try:
                self._elect_one(election_type, t.partitions[index])
                results[(topic, index)] = None
            except KafkaError as exc:
                if everything and exc.code == errors.ELECTION_NOT_NEEDED:
                    continue
                results[(topic, index)] = exc
        return results

    def _elect_one(self, election_type: int, p: SimPartition) -> None:
        """ReplicationControlManager.electLeader: not needed, or a PartitionChangeBuilder election."""
        if self.kafka.zookeeper:
            self._zk_elect_one(election_type, p)
            return
        if election_type == ELECTION_PREFERRED:
            if p.leader == p.replicas[0]:
                raise KafkaError(errors.ELECTION_NOT_NEEDED)
            if not self._change(p, Election.PREFERRED):
                raise KafkaError(errors.PREFERRED_LEADER_NOT_AVAILABLE)
        else:
            if p.leader != NO_LEADER:
                raise KafkaError(errors.ELECTION_NOT_NEEDED)
            if not self._change(p, Election.UNCLEAN):
                raise KafkaError(errors.ELIGIBLE_LEADERS_NOT_AVAILABLE)

    def _zk_elect_one(self, election_type: int, p: SimPartition) -> None:
        """KafkaController.processReplicaLeaderElection for one known partition."""
        if p.topic in self.topics_to_delete:
            raise KafkaError(errors.INVALID_TOPIC_EXCEPTION, "The topic is being deleted")
        zp = self._zk(p)
        if election_type == ELECTION_PREFERRED:
            if p.leader == p.replicas[0]:
                raise KafkaError(errors.ELECTION_NOT_NEEDED)
            if not zp.elect_preferred(self.alive_in(p)):
                raise zk.election_failed(
                    errors.PREFERRED_LEADER_NOT_AVAILABLE, p.topic, p.index, zk.PREFERRED_STRATEGY
                )
        else:
            if p.leader != NO_LEADER and self.replica_online(p, p.leader):
                raise KafkaError(errors.ELECTION_NOT_NEEDED)
            if not zp.elect_offline(self.alive_in(p), unclean_allowed=True):
                raise zk.election_failed(
                    errors.ELIGIBLE_LEADERS_NOT_AVAILABLE, p.topic, p.index, zk.ADMIN_UNCLEAN_STRATEGY
                )
        self._commit(p, zp)

    # -- configs, log dirs and views (implemented in sim/views.py) -------------------------------------------

    def describe_configs(
        self, resource_type: int, name: str, keys: list[str] | None = None
    ) -> list[ConfigEntry]:
        return views.describe_configs(self, resource_type, name, keys)

    def incremental_alter_configs(
        self,
        resource_type: int,
        name: str,
        ops: list[tuple[str, int, str | None]],
        validate_only: bool = False,
    ) -> None:
        views.incremental_alter_configs(self, resource_type, name, ops, validate_only)

    def alter_configs(
        self,
        resource_type: int,
        name: str,
        configs: list[tuple[str, str | None]],
        validate_only: bool = False,
    ) -> None:
        """Legacy AlterConfigs: the resource's dynamic configs become exactly `configs` (views.py)."""
        views.alter_configs(self, resource_type, name, configs, validate_only)

    def describe_log_dirs(
        self, broker_id: int, tps: list[tuple[str, int]] | None = None
    ) -> list[tuple[str, list[tuple[str, int, int, int, bool]]]]:
        return views.describe_log_dirs(self, broker_id, tps)

    def alter_replica_log_dir(self, broker_id: int, topic: str, partition: int, path: str) -> None:
        """One partition of AlterReplicaLogDirs sent to `broker_id` (log_dirs.py); raises KafkaError."""
        self._alter_log_dir(broker_id, topic, partition, path)

    def log_dir_descriptions(
        self, broker_id: int, tps: list[tuple[str, int]] | None = None
    ) -> list[views.LogDirDescription]:
        """DescribeLogDirs with the volume figures: path, total and usable bytes, logs (views.py)."""
        return views.log_dir_descriptions(self, broker_id, tps)

    def observed(self) -> dict[str, Any]:
        return views.observed(self)

    def state_dict(self) -> dict[str, Any]:
        return views.state_dict(self)

    def to_snapshot(self) -> ClusterSnapshot:
        return views.to_snapshot(self)

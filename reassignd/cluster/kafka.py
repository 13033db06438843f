"""ClusterAdmin over the real client libraries.

confluent-kafka (librdkafka) does metadata, cluster description, config reads and topics; kafka-python what
librdkafka has no binding for (ListPartitionReassignments, DescribeLogDirs) and every write
(AlterPartitionReassignments, IncrementalAlterConfigs, ElectLeaders, AlterReplicaLogDirs), each sent with the
write fence checked on the thread that writes it, right before (_kafka_python.send_fenced): librdkafka queues
a request for another thread, and for a broker that is down until it is back, after any check of ours.
Threads, timeouts, retries and the observer are in clients.py.
"""

from __future__ import annotations

import asyncio
import functools
import operator
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any, TypeVar

import structlog
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    ConfigResource,
    NewTopic,
)

from reassignd.cluster import convert
from reassignd.cluster._kafka_python import (
    BROKER_RESOURCE,
    TOPIC_RESOURCE,
    Destination,
    KafkaAdminClient,
    KpTopicPartition,
    alter_configs_request,
    broker_configs_request,
    elect_preferred_request,
    log_dirs_request,
    move_log_dirs_request,
    reassignments_request,
    send_fenced,
)
from reassignd.cluster.api import (
    ConfigDescription,
    ConfigOp,
    ItemError,
    LogDirsResult,
    Reassignment,
    ReplicaLogDir,
    SnapshotFromResult,
    SnapshotResult,
    merge_ops,
)
from reassignd.cluster.clients import AdminSettings, ClientCalls
from reassignd.cluster.errors import (
    ELECTION_NOT_NEEDED,
    UNKNOWN_TOPIC_OR_PARTITION,
    ClusterCallError,
    KafkaErrorInfo,
    error_for_code,
    from_exception,
    from_librdkafka,
)
from reassignd.model import ClusterSnapshot, PartitionState, TopicPartition

log = structlog.get_logger("reassignd.cluster")
Listing = tuple[
    dict[tuple[TopicPartition, int], ReplicaLogDir],
    dict[tuple[TopicPartition, int], str],
    list[str],
    dict[tuple[int, str], tuple[int, int]],
    set[tuple[int, str]],
]
"""One broker's DescribeLogDirs: current logs, future logs' dirs, its log dirs (convert.log_dir_listing),
its dirs' volumes (convert.log_dir_volumes), its failed dirs (convert.offline_log_dirs)."""

__all__ = ["AdminSettings", "KafkaClusterAdmin"]


def _raise_own_error(api: str, answer: Any) -> None:
    """The error an answer, or one resource of it, carries itself (ElectLeaders v0 has none): NOT_CONTROLLER
    makes `_on_controller` look again."""
    code = getattr(answer, "error_code", 0)
    if code:
        raise ClusterCallError(api, error_for_code(code, getattr(answer, "error_message", None) or ""))


K = TypeVar("K")
_NOT_REPORTED_BY_CONTROLLER = "the controller did not report this partition"
# DescribeLogDirs requests in flight at once (_log_dirs_by_broker): as many brokers as are asked this many
# partitions, at least 2. About 150 bytes a partition decoded: at most ~4 MB of answers wait to be read,
# where a first read of 100,000 partitions on 100 brokers had up to 75 answers waiting (stream_each). Small
# reads and DescribeConfigs go all at once: a window of 8 made 100 brokers' DescribeConfigs 15-20 ms slower.
_PARTITIONS_IN_FLIGHT = 25_000


def _partition_error(code: int, message: str | None) -> KafkaErrorInfo | None:
    return None if code == 0 else error_for_code(code, message or "")


def _raw_of(
    topics: Mapping[str, convert.RawTopic], partitions: Iterable[TopicPartition]
) -> list[tuple[TopicPartition, convert.RawPartition]]:
    """The metadata of just these partitions (a few, in flight, out of a big plan's)."""
    found = []
    for tp in partitions:
        topic = topics.get(tp.topic)
        if topic is None:
            continue
        raws = topic.partitions
        raw = raws[tp.partition] if tp.partition < len(raws) else None
        if raw is None or raw.partition != tp.partition:  # ids with gaps: look for it
            raw = next((r for r in raws if r.partition == tp.partition), None)
        if raw is not None:
            found.append((tp, raw))
    return found


def _assemble(*args: Any, **kwargs: Any) -> tuple[ClusterSnapshot, Mapping[TopicPartition, PartitionState]]:
    """build_snapshot, and the states it can hand back next time (no sizes, no reassignment)."""
    snapshot = convert.build_snapshot(*args, **kwargs)
    plain = {
        tp: p
        for tp, p in snapshot.partitions.items()
        if not p.replica_sizes and not p.adding and not p.removing
    }
    return snapshot, plain


class KafkaClusterAdmin(ClientCalls, SnapshotFromResult):
    """The production ClusterAdmin. Create it in the event loop that will use it; close() when done."""

    # the last snapshot's states without sizes or a reassignment, handed back to partitions that read the
    # same (build_snapshot); only the last one's, so a partition or topic gone from the cluster is dropped
    _unchanged: Mapping[TopicPartition, PartitionState] = MappingProxyType({})
    _last_wanted: (
        tuple[tuple[TopicPartition, ...], frozenset[TopicPartition], dict[str, dict[int, TopicPartition]]]
        | None
    ) = None
    _cluster_partitions: int | None = None
    """The cluster's partition count in the last all-topics Metadata answer (metadata_for_all_topics)."""

    # --- reads ---------------------------------------------------------------------------------------------

    async def cluster_id(self) -> str | None:
        """From Metadata, which librdkafka sends to any broker that is up, not DescribeCluster, which goes
        to the broker it takes for the controller and waits for while that one is down: the reachability
        probe asks whether a broker answers (tests/realkafka/test_controller_routing.py). The answer also
        renews whom librdkafka takes for the controller."""

        def read() -> str | None:
            found = self._metadata_of_any_broker().cluster_id
            return str(found) if found else None

        return await self._call("list_topics", lambda: self._blocking(read))

    async def _metadata(
        self, topics: Collection[str] | None, partitions: int | None = None
    ) -> tuple[dict[str, convert.RawTopic], dict[str, KafkaErrorInfo]]:
        """Metadata with ISR, and the error of each named topic that could not be read. A few topics: one
        Metadata request per topic, in parallel; many (or None): one request for all topics, filtered here.
        A topic missing from that answer is asked for by name: Kafka leaves unauthorized topics out of an
        all-topics answer, and only a by-name answer tells "does not exist" from "not allowed". librdkafka's
        list_topics is used rather than describe_topics: it returns plain ids, about ten times faster for
        large topics (bench_cluster), at the price of topic ids, which it does not expose. `partitions`:
        how many partitions of these topics the caller wants (metadata_for_all_topics)."""
        if topics is None:
            return await self._call("list_topics", functools.partial(self._list_all_topics, None)), {}
        wanted = sorted(set(topics))
        found: dict[str, convert.RawTopic] = {}
        if metadata_for_all_topics(
            len(wanted), partitions, self._cluster_partitions, self._settings.per_topic_metadata_up_to
        ):
            keep = frozenset(wanted)
            everything = await self._call("list_topics", functools.partial(self._list_all_topics, keep))
            found = {n: everything[n] for n in wanted if n in everything}
            wanted = [n for n in wanted if n not in everything]
        outcomes = await asyncio.gather(
            *(self._call("list_topics", functools.partial(self._list_one_topic, n)) for n in wanted)
        )
        errors = {}
        for name, outcome in zip(wanted, outcomes, strict=True):
            if isinstance(outcome, KafkaErrorInfo):
                errors[name] = outcome
                self._item_failed("list_topics", outcome)
            else:
                found[name] = outcome
        return found, errors

    async def learn_cluster_size(self) -> None:
        await self._call("list_topics", functools.partial(self._list_all_topics, frozenset()))
        log.info("cluster size read", partitions=self._cluster_partitions)

    async def _list_one_topic(self, name: str) -> convert.RawTopic | KafkaErrorInfo:
        """A topic-level error (unknown topic) is the answer, not a failed call: it is not retried."""

        def read() -> convert.RawTopic | KafkaErrorInfo:
            topic = self._ck.list_topics(topic=name, timeout=self._timeout).topics.get(name)
            if topic is None:
                return error_for_code(3, f"topic {name} does not exist")
            if topic.error is not None:
                return from_librdkafka(topic.error)
            return convert.raw_topic(name, topic)

        return await self._blocking(read)

    async def topic_partitions(self, topics: Collection[str]) -> tuple[list[TopicPartition], list[ItemError]]:
        """Every partition of the named topics (Metadata for just them); unknown topics as item errors."""
        found, failed = await self._metadata(sorted(set(topics)))
        partitions = [TopicPartition(t.name, p.partition) for t in found.values() for p in t.partitions]
        return sorted(partitions), _topic_errors(failed)

    async def _list_all_topics(self, keep: frozenset[str] | None) -> dict[str, convert.RawTopic]:
        """One Metadata request for every topic; only the kept topics are converted, on the pool."""

        def read() -> dict[str, convert.RawTopic]:
            metadata = self._ck.list_topics(timeout=self._timeout)
            self._cluster_partitions = sum(len(t.partitions) for t in metadata.topics.values())
            return {
                name: convert.raw_topic(name, topic)
                for name, topic in metadata.topics.items()
                if (keep is None or name in keep) and (topic.error is None or topic.partitions)
            }

        return await self._blocking(read)

    async def snapshot_with_errors(
        self,
        partitions: Collection[TopicPartition] | None = None,
        *,
        with_sizes: bool | Collection[TopicPartition] | Mapping[TopicPartition, Collection[int]] = False,
        broker_config_keys: Collection[str] = (),
        topic_config_keys: Collection[str] = (),
    ) -> SnapshotResult:
        """Only the given partitions are polled: metadata for their topics, log dirs and reassignments for
        exactly them. Brokers or topics that cannot be read are reported in `errors`, not raised."""
        wanted, keys = self._wanted(partitions)
        topic_names = None if keys is None else sorted(keys)
        cluster, (topics, failed) = await asyncio.gather(
            self._describe_cluster(), self._metadata(topic_names, None if wanted is None else len(wanted))
        )
        errors = _topic_errors(failed)
        deleted = frozenset(
            name for name, error in failed.items() if error.name == UNKNOWN_TOPIC_OR_PARTITION
        )
        online = set(cluster.racks)
        # which partitions' sizes, and (a mapping) which of their brokers besides the leader to ask
        only: Mapping[TopicPartition, Collection[int]] | None = None
        if isinstance(with_sizes, Mapping):
            only = with_sizes
            asked_of = _raw_of(topics, with_sizes)
        elif with_sizes is False:
            asked_of = []
        else:
            sized = None if with_sizes is True else frozenset(with_sizes)
            asked_of = [
                (tp, raw)
                for tp, raw in convert.present_partitions(topics, keys)
                if sized is None or tp in sized
            ]
        hosts: dict[int, list[TopicPartition]] = {}
        for tp, raw in asked_of:
            asked = raw.replicas
            if only is not None and raw.leader in online:  # leaderless: every replica, for the largest log
                named = {raw.leader, *only[tp]}
                asked = tuple(b for b in raw.replicas if b in named)
            for broker in asked:
                if broker in online:
                    hosts.setdefault(broker, []).append(tp)

        async def no_sizes() -> LogDirsResult:
            return LogDirsResult(replicas={})

        async def no_configs() -> dict[Any, ConfigDescription]:
            return {}

        sizes_task = self._log_dirs_by_broker(hosts) if with_sizes is not False else no_sizes()
        broker_task = (
            self.describe_broker_configs(sorted(online), broker_config_keys, live=online)
            if broker_config_keys
            else no_configs()
        )
        topic_task = (
            self.describe_topic_configs(sorted(topics), topic_config_keys)
            if topic_config_keys
            else no_configs()
        )
        moving, sizes, broker_configs, topic_configs = await asyncio.gather(
            self._reassignments_or_empty(wanted), sizes_task, broker_task, topic_task
        )
        if with_sizes is not False:
            sizes = await self._sizes_metadata_missed(sizes, moving, hosts, online, only)
        errors += [ItemError("describe_log_dirs", f"broker {b}", e) for b, e in sorted(sizes.errors.items())]
        errors += [
            ItemError("describe_configs", f"broker {b}", d.error)
            for b, d in sorted(broker_configs.items())
            if d.error is not None
        ]
        errors += [
            ItemError("describe_configs", f"topic {t}", d.error)
            for t, d in sorted(topic_configs.items())
            if d.error is not None
        ]
        # Assembling tens of thousands of frozen partition states takes a while: not on the event loop.
        snapshot, self._unchanged = await self._blocking(
            _assemble,
            cluster,
            topics,
            wanted=wanted,
            index=keys,
            reassignments=moving,
            sizes=sizes.replicas,
            future_dirs=sizes.futures,
            broker_dirs=sizes.dirs,
            dir_volumes=sizes.volumes,
            offline_dirs=sizes.offline,
            broker_configs={b: d for b, d in broker_configs.items() if d.error is None},
            topic_configs={t: d for t, d in topic_configs.items() if d.error is None},
            deleted_topics=deleted,
            previous=self._unchanged,
            unread_configs=frozenset(
                [("broker", str(b)) for b, d in broker_configs.items() if d.error is not None]
                + [("topic", t) for t, d in topic_configs.items() if d.error is not None]
            ),
        )
        for error in errors:
            log.warning("snapshot item skipped", api=error.api, item=error.item, error=str(error.error))
        return SnapshotResult(snapshot=snapshot, errors=tuple(errors))

    def _wanted(
        self, partitions: Collection[TopicPartition] | None
    ) -> tuple[frozenset[TopicPartition] | None, dict[str, dict[int, TopicPartition]] | None]:
        """The partitions as a set and by topic and index, kept while the caller asks for the same ones:
        a plan asks for its 100,000 partitions every cycle, and hashing them all again costs 0.1 s."""
        if partitions is None:
            return None, None
        asked = tuple(partitions)
        last = self._last_wanted
        # the same objects, not equal ones: the snapshot is keyed by the caller's keys (partition_index)
        if last is not None and len(last[0]) == len(asked) and all(map(operator.is_, last[0], asked)):
            return last[1], last[2]
        wanted = frozenset(asked)
        keys = convert.partition_index(wanted)
        self._last_wanted = (asked, wanted, keys)
        return wanted, keys

    async def _sizes_metadata_missed(
        self,
        sizes: LogDirsResult,
        moving: Mapping[TopicPartition, Reassignment],
        hosts: Mapping[int, list[TopicPartition]],
        online: Collection[int],
        only: Mapping[TopicPartition, Collection[int]] | None,
    ) -> LogDirsResult:
        """The sizes of the replicas a listed move adds that the read did not ask for, asked now: brokers'
        Metadata trails the controller, so a move that just started may not show its adding replicas yet
        (measured on KRaft 4.4: up to ~0.25 s). Nothing more is asked in the usual case."""
        asked = {(tp, b) for b, tps in hosts.items() for tp in tps}
        sized = {tp for tp, _ in asked}
        missed: dict[int, list[TopicPartition]] = {}
        for tp, move in moving.items():
            wanted = move.adding if only is None else only.get(tp, ())
            for broker in wanted:
                if tp in sized and broker in online and (tp, broker) not in asked:
                    missed.setdefault(broker, []).append(tp)
        if not missed:
            return sizes
        extra = await self._log_dirs_by_broker(missed)
        return LogDirsResult(
            replicas={**sizes.replicas, **extra.replicas},
            errors={**sizes.errors, **extra.errors},
            futures={**sizes.futures, **extra.futures},
            dirs={**sizes.dirs, **extra.dirs},
            volumes={**sizes.volumes, **extra.volumes},
            offline=sizes.offline | extra.offline,
        )

    async def _reassignments_or_empty(
        self, partitions: Collection[TopicPartition] | None
    ) -> dict[TopicPartition, Reassignment]:
        """Ongoing reassignments among `partitions`. Asking for all of them and filtering here is much
        cheaper than naming thousands of partitions in the request: few partitions move at any time."""
        if partitions is not None and not partitions:
            return {}
        ongoing = await self.list_partition_reassignments(None)
        if partitions is None:
            return ongoing
        wanted = partitions if isinstance(partitions, set | frozenset) else set(partitions)
        return {tp: r for tp, r in ongoing.items() if tp in wanted}

    async def describe_broker_configs(
        self,
        broker_ids: Collection[int],
        keys: Collection[str] | None = None,
        *,
        live: Collection[int] | None = None,
    ) -> dict[int, ConfigDescription]:
        """One request per broker (Kafka routes broker configs to that broker); an offline broker yields
        an error entry for it (BROKER_NOT_AVAILABLE), never a failed call. `live`: the brokers known to be
        up, when the caller has just read them.

        Through kafka-python: its request names the keys (librdkafka's asks for all of a broker's 200-odd
        configs, 0.15 s a cycle for 100 brokers), and it keeps every synonym, where librdkafka keys them
        by name and so loses the cluster-wide default under a broker's own value."""
        online = await self._live_brokers() if live is None else frozenset(live)
        wanted = None if keys is None else sorted(set(keys))
        asked = sorted(set(broker_ids))

        def read(broker: int, response: Any) -> ConfigDescription:
            (result,) = response.results
            if result.error_code:  # the broker's failure (retried if retriable, reported as failed)
                raise ClusterCallError(
                    "describe_configs", error_for_code(result.error_code, result.error_message or "")
                )
            return ConfigDescription(values={e.name: convert.config_from_wire(e) for e in result.configs})

        outcomes: Mapping[int, ConfigDescription | KafkaErrorInfo]
        if wanted == []:  # none asked is none read: Kafka reads an empty key list as every key (ConfigHelper)
            outcomes = {b: ConfigDescription() for b in asked if b in online}
        else:
            requests = {b: broker_configs_request(b, wanted) for b in asked if b in online}
            outcomes = await self._each_broker("describe_configs", requests, read)
        out: dict[int, ConfigDescription] = {}
        for broker in asked:
            outcome = outcomes.get(broker) or self._offline("describe_configs", broker)
            if not isinstance(outcome, ConfigDescription):
                outcome = ConfigDescription(error=outcome)
            out[broker] = outcome
        return out

    async def describe_topic_configs(
        self, topics: Collection[str], keys: Collection[str] | None = None
    ) -> dict[str, ConfigDescription]:
        names = sorted(set(topics))
        if not names:
            return {}

        async def attempt() -> dict[str, Any]:
            resources = [ConfigResource(ConfigResource.Type.TOPIC, n) for n in names]
            with self._any_broker() as target:
                futures = self._ck.describe_configs(resources, request_timeout=self._timeout, **target)
                results = await asyncio.gather(
                    *(asyncio.wrap_future(futures[r]) for r in resources), return_exceptions=True
                )
                if results and all(isinstance(r, BaseException) for r in results):
                    first = results[0]
                    assert isinstance(first, BaseException)
                    if from_exception(first).retriable:
                        raise first
            return dict(zip(names, results, strict=True))

        outcomes = await self._call("describe_configs", attempt)
        out: dict[str, ConfigDescription] = {}
        for name, outcome in outcomes.items():
            if isinstance(outcome, BaseException):
                error = from_exception(outcome)
                self._item_failed("describe_configs", error)
                out[name] = ConfigDescription(error=error)
            else:
                out[name] = convert.config_description(outcome, keys)
        return out

    async def list_partition_reassignments(
        self, partitions: Collection[TopicPartition] | None = None
    ) -> dict[TopicPartition, Reassignment]:
        request = (
            None if partitions is None else [KpTopicPartition(tp.topic, tp.partition) for tp in partitions]
        )

        def read() -> dict[TopicPartition, Reassignment]:
            raw = self._on_controller(
                lambda c: c.list_partition_reassignments(request, timeout_ms=self._timeout_ms)
            )
            return {TopicPartition(tp.topic, tp.partition): convert.reassignment(e) for tp, e in raw.items()}

        async def attempt() -> dict[TopicPartition, Reassignment]:
            return await self._blocking(read)

        return await self._call("list_partition_reassignments", attempt)

    async def describe_log_dirs(
        self, broker_ids: Collection[int], partitions: Collection[TopicPartition]
    ) -> LogDirsResult:
        wanted = list(partitions)
        online = await self._live_brokers()
        asked = sorted(set(broker_ids))
        result = await self._log_dirs_by_broker(
            dict.fromkeys([b for b in asked if b in online], wanted), dirs_only=not wanted
        )
        offline = {b: self._offline("describe_log_dirs", b) for b in asked if b not in online}
        return replace(result, errors={**result.errors, **offline})

    async def _log_dirs_by_broker(
        self, hosts: Mapping[int, Collection[TopicPartition]], *, dirs_only: bool = False
    ) -> LogDirsResult:
        """One DescribeLogDirs per broker, for only the partitions asked of it; failures stay per broker.
        `dirs_only`: brokers asked for no partition are asked too (an empty topic list: their dirs only)."""

        requests: dict[int, Any] = {}
        for broker, tps in hosts.items():
            if tps or dirs_only:
                requests[broker] = log_dirs_request(tps)

        def read(broker: int, response: Any) -> Listing:
            # v3+: a principal without DESCRIBE on CLUSTER gets an empty list and this code, which an empty
            # list alone would read as "this broker hosts none of them"
            code = getattr(response, "error_code", 0)
            if code:
                raise ClusterCallError("describe_log_dirs", error_for_code(code))
            listed = convert.log_dir_listing(broker, response.results, hosts[broker])
            volumes = convert.log_dir_volumes(broker, response.results)
            return (*listed, volumes, convert.offline_log_dirs(broker, response.results))

        largest = max((len(tps) for tps in hosts.values()), default=0)
        in_flight = max(2, _PARTITIONS_IN_FLIGHT // largest) if largest else None
        outcomes = (await self._each_broker("describe_log_dirs", requests, read, in_flight=in_flight)).items()
        replicas: dict[tuple[TopicPartition, int], ReplicaLogDir] = {}
        futures: dict[tuple[TopicPartition, int], str] = {}
        dirs: dict[int, tuple[str, ...]] = {}
        volumes: dict[tuple[int, str], tuple[int, int]] = {}
        offline: set[tuple[int, str]] = set()
        errors: dict[int, KafkaErrorInfo] = {}
        for broker, outcome in outcomes:
            if isinstance(outcome, KafkaErrorInfo):
                errors[broker] = outcome
            else:
                replicas.update(outcome[0])
                futures.update(outcome[1])
                dirs[broker] = tuple(outcome[2])
                volumes.update(outcome[3])
                offline.update(outcome[4])
        return LogDirsResult(
            replicas=replicas,
            errors=errors,
            futures=futures,
            dirs=dirs,
            volumes=volumes,
            offline=frozenset(offline),
        )

    async def alter_replica_log_dirs(
        self, moves: Mapping[tuple[TopicPartition, int], str]
    ) -> dict[tuple[TopicPartition, int], KafkaErrorInfo | None]:
        """AlterReplicaLogDirs, one request per broker; NONE is success (None)."""
        if not moves:
            return {}
        by_broker: dict[int, dict[tuple[str, int], str]] = {}
        for (tp, broker), path in moves.items():
            by_broker.setdefault(broker, {})[(tp.topic, tp.partition)] = path

        def write() -> dict[tuple[TopicPartition, int], KafkaErrorInfo | None]:
            out: dict[tuple[TopicPartition, int], KafkaErrorInfo | None] = {}
            for broker, replicas in by_broker.items():
                response = self._on_broker(self._fenced(move_log_dirs_request(replicas), broker))
                for topic in response.results:
                    for p in topic.partitions:
                        key = (TopicPartition(topic.topic_name, p.partition_index), broker)
                        out[key] = _partition_error(p.error_code, None)
            return out

        return await self._written(
            "alter_replica_log_dirs", write, moves, "the broker did not report this replica"
        )

    # --- writes --------------------------------------------------------------------------------------------

    async def alter_broker_configs(self, broker_id: int, ops: Collection[ConfigOp]) -> None:
        """Per-broker values only: neither client can name the cluster-wide default resource (an empty
        broker name; confluent-kafka and kafka-python both reject it). An offline broker fails at once with
        a retriable BROKER_NOT_AVAILABLE."""
        if broker_id not in await self._live_brokers():
            raise ClusterCallError(
                "incremental_alter_configs", self._offline("incremental_alter_configs", broker_id)
            )
        await self._alter_configs(BROKER_RESOURCE, str(broker_id), ops)

    async def alter_topic_configs(self, topic: str, ops: Collection[ConfigOp]) -> None:
        await self._alter_configs(TOPIC_RESOURCE, topic, ops)

    async def _alter_configs(self, kind: int, name: str, ops: Collection[ConfigOp]) -> None:
        if not ops:
            return
        changes = [(op.key, int(op.op), op.value) for op in merge_ops(name, ops)]
        request = alter_configs_request(kind, name, changes)

        def write() -> None:
            # a broker's own configs go to that broker; a topic's to any broker
            if kind == BROKER_RESOURCE:
                answer = self._on_broker(self._fenced(request, int(name)))
            else:
                with self._any_broker() as target:
                    answer = self._on_broker(self._fenced(request, target.get("broker", "any")))
            for resource in answer.responses:
                _raise_own_error("incremental_alter_configs", resource)

        async def attempt() -> None:
            await self._blocking(write)

        await self._call("incremental_alter_configs", attempt)

    async def alter_partition_reassignments(
        self, targets: Mapping[TopicPartition, Collection[int] | None]
    ) -> dict[TopicPartition, KafkaErrorInfo | None]:
        """KIP-455: a replica list starts (or replaces) a reassignment, None cancels it."""
        if not targets:
            return {}
        replicas = {
            (tp.topic, tp.partition): (None if r is None else [int(b) for b in r])
            for tp, r in targets.items()
        }
        request = reassignments_request(replicas, self._timeout_ms)

        def write() -> dict[TopicPartition, KafkaErrorInfo | None]:
            answer = self._to_controller("alter_partition_reassignments", request)
            return {
                TopicPartition(topic.name, p.partition_index): _partition_error(p.error_code, p.error_message)
                for topic in answer.responses
                for p in topic.partitions
            }

        return await self._written(
            "alter_partition_reassignments", write, targets, _NOT_REPORTED_BY_CONTROLLER
        )

    async def elect_preferred_leaders(
        self, partitions: Collection[TopicPartition]
    ) -> dict[TopicPartition, KafkaErrorInfo | None]:
        """ELECTION_NOT_NEEDED (the preferred replica already leads) is success, reported as None."""
        wanted = sorted(set(partitions))
        if not wanted:
            return {}
        request = elect_preferred_request([(tp.topic, tp.partition) for tp in wanted], self._timeout_ms)

        def write() -> dict[TopicPartition, KafkaErrorInfo | None]:
            answer = self._to_controller("elect_leaders", request)
            out: dict[TopicPartition, KafkaErrorInfo | None] = {}
            for topic in answer.replica_election_results:
                for p in topic.partition_result:
                    error = _partition_error(p.error_code, p.error_message)
                    tp = TopicPartition(topic.topic, p.partition_id)
                    out[tp] = None if error is None or error.name == ELECTION_NOT_NEEDED else error
            return out

        return await self._written("elect_leaders", write, wanted, _NOT_REPORTED_BY_CONTROLLER)

    def _fenced(self, request: Any, to: Destination) -> Callable[[KafkaAdminClient], Any]:
        """A write for `_on_broker`/`_on_controller`, fenced where its bytes leave (send_fenced)."""
        return lambda client: send_fenced(client, request, to, self._check_write_fence, self._timeout)

    def _to_controller(self, api: str, request: Any) -> Any:
        """A write to the controller and its answer, whose own error (NOT_CONTROLLER: `_on_controller`
        looks again) is raised; on the pool."""
        answer = self._on_controller(self._fenced(request, "controller"))
        _raise_own_error(api, answer)
        return answer

    async def _written(
        self,
        api: str,
        write: Callable[[], dict[K, KafkaErrorInfo | None]],
        asked: Iterable[K],
        unreported: str,
    ) -> dict[K, KafkaErrorInfo | None]:
        """`write` (blocking) as one call; each item asked, with its error, UNKNOWN_SERVER_ERROR where the
        answer did not report it."""

        async def attempt() -> dict[K, KafkaErrorInfo | None]:
            return await self._blocking(write)

        results = await self._call(api, attempt)
        missing = KafkaErrorInfo("UNKNOWN_SERVER_ERROR", -1, False, unreported)
        return {key: results.get(key, missing) for key in asked}

    async def create_topic(
        self,
        name: str,
        *,
        assignment: Mapping[int, Collection[int]] | None = None,
        num_partitions: int | None = None,
        replication_factor: int | None = None,
        configs: Mapping[str, str] | None = None,
    ) -> None:
        if assignment is not None:
            replica_assignment = [list(assignment[p]) for p in sorted(assignment)]
            # confluent-kafka wants the partition count beside an explicit assignment (not -1).
            new_topic = NewTopic(
                name,
                num_partitions=len(replica_assignment),
                replica_assignment=replica_assignment,
                config=dict(configs or {}),
            )
        else:
            new_topic = NewTopic(
                name,
                num_partitions=num_partitions or 1,
                replication_factor=replication_factor or -1,
                config=dict(configs or {}),
            )

        async def attempt() -> None:
            futures = self._ck.create_topics([new_topic], request_timeout=self._timeout)
            await asyncio.wrap_future(futures[name])

        await self._call("create_topics", attempt)


ALL_TOPICS_WHILE_UNKNOWN_FROM = 10_000
"""Partitions wanted from which, the cluster's size unknown, one all-topics read is the cheaper guess."""


def metadata_for_all_topics(
    topics: int, partitions: int | None, cluster_partitions: int | None, per_topic_up_to: int
) -> bool:
    """Whether one all-topics Metadata read is cheaper than one read per wanted topic.

    librdkafka's first read of a topic by name makes the topic's per-partition state (a handle, queues
    and timers per partition, kept while the client lives): 8 s of CPU for the 100 topics of a
    100,000-partition plan, then 0.45-0.55 s a read, and about 150 MiB. An all-topics read makes none:
    0.32-0.48 s for that 100,000-partition cluster, first time or not, and 3.5-4.8 s for a 1,000,000-
    partition one (bench/profile_daemon.py, docs/benchmarks.md). So: all topics when they are many, or
    when the wanted topics hold at least half the cluster's partitions; the cluster's size unknown (no
    all-topics read yet), when the partitions wanted are many enough that their first by-name read would
    cost more than an all-topics read of a cluster ten times their size (which then tells the size)."""
    if topics > per_topic_up_to:
        return True
    if partitions is None:
        return False
    if cluster_partitions is None:
        return partitions >= ALL_TOPICS_WHILE_UNKNOWN_FROM
    return 2 * partitions >= cluster_partitions


def _topic_errors(failed: Mapping[str, KafkaErrorInfo]) -> list[ItemError]:
    return [ItemError("list_topics", f"topic {name}", error) for name, error in sorted(failed.items())]

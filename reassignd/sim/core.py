"""The cluster's moving parts: partition changes, replication in virtual time, broker failures.

Time scheme (event-driven, exact): between two events every fetch rate is constant, so a catching-up
replica's position and its leader's log end are linear in time, and the moment it reaches the log end is
solved exactly: t = now + (log_end - position) / (rate - produce). `advance()` jumps from event to event (a
replica joining the ISR, which may complete a reassignment and change other rates) and recomputes rates only
when something they depend on changed. A step costs O(catching-up replicas); idle partitions are never
visited (their log end is computed from the size at t0 and the produce rate).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from reassignd import config_keys
from reassignd.sim import configs as cfg
from reassignd.sim import errors, log_dirs
from reassignd.sim.entities import NO_LEADER, Clock, Lag, SimBroker, SimPartition, SimTopic
from reassignd.sim.errors import KafkaError
from reassignd.sim.kafka_version import DEFAULT as DEFAULT_KAFKA
from reassignd.sim.kafka_version import KafkaVersion
from reassignd.sim.quota import QuotaWindow
from reassignd.sim.reassignment import Election, PartitionChange, PartitionFields, build_change
from reassignd.sim.replication import max_min_fair
from reassignd.sim.zk_controller import ZkPartition

_INF = float("inf")
_EPS = 1e-9
# Seconds a broker's Metadata trails the controller after a partition change (brokers replay the
# controller's records a moment later). Measured on a 4.4 KRaft cluster on loopback: see docs/simulator.md.
DEFAULT_METADATA_DELAY = 0.05
# the broker config behind each throttle resource kind (see _flow_keys)
_RATE_CONFIGS = {
    2: config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE,
    3: config_keys.LEADER_REPLICATION_THROTTLED_RATE,
    4: config_keys.REPLICA_ALTER_LOG_DIRS_IO_MAX_BYTES_PER_SECOND,
}
_QUOTA_KINDS = frozenset(_RATE_CONFIGS)
_LEADER_QUOTA = 3
_ALTER_LOG_DIRS_QUOTA = 4
# A quota rate at or above this is no quota (Kafka's default, Long.MAX_VALUE, lets everything through).
_UNLIMITED = 1e15
# How a quota in use is modelled (docs/simulator.md, "Throttle quotas"): SHUT lets nothing through (what it
# records anyway reaches its rate); GRANTS, fetch by fetch, opening and shutting with its window (fewer
# than GRANTS_PER_WINDOW fetches of replica.fetch.max.bytes fit in a window at its rate: a handful of
# events per window); WINDOW, a burst at full speed while the window is under the rate, then its rate
# less what in-sync replication records, shared fairly (the fetch-by-fetch detail of a saturated window
# would cost an event per fetch; its average is that rate, within 1% from 7 fetches per window on).
SHUT, GRANTS, WINDOW = "shut", "grants", "window"
GRANTS_PER_WINDOW = 8
# The phase of a quota in use: GRANTS quotas are OPEN or SHUT; WINDOW quotas BURST, then PAUSE while the
# burst keeps the measured rate above the bound (a window younger than one sample counts as one sample
# long), then let their RATE through.
OPEN, BURST, PAUSE, RATE = "open", "burst", "pause", "rate"
_HELD, _BOUNDS, _OPEN = 0, 1, 2  # what a quota does to a copy through it now (Gated, _quota_verdict)
# Bytes/s a leader's quota records from the fetch responses of a throttled partition that carry no data
# (KafkaApis.sizeOfThrottledPartitions counts a partition's entry, ~50 bytes, in each follower fetch): what
# keeps a leader rate of 0 shut (measured on 4.4: a move at leader rate 0 never progressed).
LEADER_RESPONSE_BYTES_PER_SEC = 100.0


@dataclass(slots=True, eq=False)
class Gated:
    """A copy (a catching-up replica, or a future log between dirs) behind finite throttle quotas: it runs at
    full speed while all of them are open and stands still while one is shut."""

    partition: SimPartition
    broker: int  # the follower (or, for a copy between log dirs, the broker that copies)
    progress: Lag
    quotas: tuple[int, ...]
    fetcher: tuple[int, int]  # (follower, leader) for a fetch; (broker, -1) for a copy between log dirs
    copy: bool = False
    started: float | None = None  # its position when it last started to run (None: standing still)


@dataclass(slots=True)
class SlowFollower:
    """An in-sync follower that fetches slower than its leader's log grows (Partition.isFollowerOutOfSync)."""

    caught_up_at: float  # lastCaughtUpTimeMs: when it last held the leader's log end
    behind: float  # bytes behind the log end at `t0`
    t0: float
    falls_behind: float  # bytes/s it loses: growth - its fetch rate


# What a broker's Metadata shows of a partition: replicas, ISR, leader, leader epoch.
PublishedPartition = tuple[tuple[int, ...], tuple[int, ...], int, int]


class ClusterCore:
    def __init__(
        self, kafka: KafkaVersion = DEFAULT_KAFKA, metadata_delay: float = DEFAULT_METADATA_DELAY
    ) -> None:
        self.kafka = kafka  # the release and controller mode simulated
        if not math.isfinite(metadata_delay) or metadata_delay < 0:
            raise ValueError(f"metadata_delay must be a finite, non-negative number, got {metadata_delay}")
        self.metadata_delay = metadata_delay
        self.time_scale = 1.0
        """Simulated seconds per wall second, as the process serving the model advances it (runner.py): its
        brokers answer it with the clock (views.py `clock_entries`), so a client can convert."""
        self._clock = Clock()
        self.brokers: dict[int, SimBroker] = {}
        self.topics: dict[str, SimTopic] = {}
        self.cluster_configs: dict[str, str] = {}  # dynamic cluster-wide broker defaults
        self.controller_id = -1
        self._replicas_on: dict[int, set[SimPartition]] = {}
        # catching-up replicas that can fetch now; a dict for a deterministic (insertion) order
        self._fetching: dict[tuple[SimPartition, int], Lag] = {}
        self._reassigning: set[SimPartition] = set()
        self._under_min: set[SimPartition] = set()
        self._ever_under: set[SimPartition] = set()  # partitions with under-min time to report
        self._reserved_in: dict[int, float] = {}
        self._reserved_out: dict[int, float] = {}
        self._incoming: dict[int, int] = {}
        self._outgoing: dict[int, int] = {}
        self._incoming_peak: dict[int, int] = {}
        self._outgoing_peak: dict[int, int] = {}
        self._dirty = True
        self._next_event = _INF
        self.reallocations = 0  # how often fetch rates were recomputed (a cost figure for benchmarks)
        # next_event_time's answer and the reallocation it was found after: every change that can move the
        # next event makes the rates dirty, and so another reallocation, first
        self._next_event_of = -1
        self._next_event_found: float | None = None
        self._rate_cache: dict[
            int, float
        ] = {}  # throttle rates by resource id; cleared on broker config changes
        self._fetch_cache: dict[int, float] = {}  # replica.fetch.max.bytes by broker; cleared likewise
        self._keys_epoch = 0  # bumped when throttled-replica lists change: cached flow keys go stale
        self._due: list[tuple[float, int]] = []
        self._due_flows: list[tuple[SimPartition, int, Lag]] = []
        self._due_copies: list[tuple[SimPartition, int, log_dirs.FutureLog]] = []
        self._future_logs = log_dirs.FutureLogs()  # moves between log dirs
        self._futures = self._future_logs.logs
        self.topics_to_delete: set[str] = set()  # ZooKeeper mode: queued for deletion, not yet eligible
        # ZooKeeper mode: partitions whose leader a new target or cancel stopped; still OnlinePartition to the
        # controller's state machine, so a broker start does not elect them, a broker failure does
        self._zk_online_without_leader: set[SimPartition] = set()
        self._logs_in_dir: dict[tuple[int, str], int] = {}  # (broker, log dir) -> replicas placed there
        self._failed_dirs: set[tuple[int, str]] = set()  # (broker, log dir) failed (fail_log_dir)
        # (broker, log dir) -> [intercept, slope]: its in-sync replicas hold intercept + slope * now bytes
        self._dir_lines: dict[tuple[int, str], list[float]] = {}
        self._first_dir_lines: dict[int, list[float]] = {}  # the same for replicas in the broker's first dir
        self._lagging_on: dict[int, set[SimPartition]] = {}  # broker -> partitions it holds out of the ISR
        # (topic, partition, broker) -> log dir chosen by AlterReplicaLogDirs before the replica existed
        self._preferred_dirs: dict[tuple[str, int, int], str] = {}
        # quota resource id -> bytes/s of in-sync replication it records: Kafka counts every byte of a
        # throttled partition, in sync or not (ReplicaFetcherThread.processPartitionData,
        # KafkaApis.sizeOfThrottledPartitions), and holds back only replicas out of the ISR
        self._quota_use: dict[int, float] = {}
        self._windows: dict[int, QuotaWindow] = {}  # quota resource id -> its sampled rate (quota.py)
        # quota resource id -> (regime, phase) of a quota in use
        self._quota_state: dict[int, tuple[str, str]] = {}
        self._quota_at: dict[int, float] = {}  # quota resource id -> when it next opens or shuts
        # quota resource id -> what its `_quota_at` was solved from (window version, state, rate): a quota
        # whose window, phase and rate are unchanged keeps its time instead of solving it again
        self._quota_basis: dict[int, tuple[int, tuple[str, str], float]] = {}
        self._next_quota = _INF
        self._gated: list[Gated] = []  # the copies behind finite quotas, as of the last reallocation
        self._long_run: dict[tuple[SimPartition, int], float] | None = None  # fetch_rates, cached
        self._slow: dict[tuple[SimPartition, int], SlowFollower] = {}
        # (when, partition, follower): in-sync followers due to leave the ISR
        self._shrinks: list[tuple[float, SimPartition, int]] = []
        # partition -> [(time of a change, what Metadata showed before it)] for changes brokers have not
        # replayed yet (younger than metadata_delay), oldest first; and all of them in time order
        self._unpublished: dict[SimPartition, list[tuple[float, PublishedPartition]]] = {}
        self._unpublished_order: deque[tuple[float, SimPartition]] = deque()

    @property
    def now(self) -> float:
        return self._clock.now

    # -- configuration lookups ---------------------------------------------------------------------------

    def broker_config(self, broker: int, name: str) -> str | None:
        """Effective value: per-broker dynamic, then cluster dynamic default, then static, then default."""
        b = self.brokers.get(broker)
        if b is not None and name in b.configs:
            return b.configs[name]
        if name in self.cluster_configs:
            return self.cluster_configs[name]
        if b is not None and name in b.static_configs:
            return b.static_configs[name]
        key = cfg.BROKER_CONFIGS.get(name)
        return key.default if key else None

    def topic_config(self, topic: str, name: str) -> str | None:
        t = self.topics.get(topic)
        if t is not None and name in t.configs:
            return t.configs[name]
        key = cfg.TOPIC_CONFIGS[name]
        if key.synonym:
            value = self.cluster_configs.get(key.synonym)
            if value is None and self.brokers:
                value = next(iter(self.brokers.values())).static_configs.get(key.synonym)
            if value is not None:
                return value
        return key.default

    def min_insync_replicas(self, topic: str, leader: int = NO_LEADER) -> int:
        """The topic's value, else the leader broker's effective one (its LogConfig default), else 1."""
        t = self.topics.get(topic)
        if t is not None and config_keys.MIN_INSYNC_REPLICAS in t.configs:
            raw: str | None = t.configs[config_keys.MIN_INSYNC_REPLICAS]
        elif leader in self.brokers:
            raw = self.broker_config(leader, config_keys.MIN_INSYNC_REPLICAS)
        else:
            raw = self.topic_config(topic, config_keys.MIN_INSYNC_REPLICAS)
        return int(cfg.effective_long(raw, 1))

    def unclean_enabled(self, topic: str) -> bool:
        return (self.topic_config(topic, cfg.UNCLEAN_LEADER_ELECTION) or "").strip().lower() == "true"

    def is_alive(self, broker: int) -> bool:
        b = self.brokers.get(broker)
        return b is not None and b.online

    def replica_online(self, p: SimPartition, broker: int) -> bool:
        """The replica of `p` on `broker` can serve: its broker runs and its log dir has not failed."""
        if not self.is_alive(broker):
            return False
        return not self._failed_dirs or (broker, self.dir_of(p, broker)) not in self._failed_dirs

    def alive_in(self, p: SimPartition) -> Callable[[int], bool]:
        """Whose replica of `p` may lead or join: `is_alive` itself while no log dir has failed, else a
        test of each replica's broker and dir (KRaft's LeaderAcceptor: ReplicationControlManager)."""
        if not self._failed_dirs:
            return self.is_alive
        return lambda broker: self.replica_online(p, broker)

    # -- bookkeeping around every partition change -------------------------------------------------------

    def _account(self, p: SimPartition, sign: int) -> None:
        """Add (+1) or remove (-1) what `p` contributes to the indexes and bandwidth reservations."""
        now = self._clock.now
        if sign > 0:
            p.growth = self._growth(p)
        leader = p.leader
        rate = p.growth  # 0 without a leader
        if rate:
            followers = [r for r in p.isr if r != leader]
            self._reserved_in[leader] = self._reserved_in.get(leader, 0.0) + sign * rate
            self._reserved_out[leader] = self._reserved_out.get(leader, 0.0) + sign * rate * len(followers)
            for f in followers:
                self._reserved_in[f] = self._reserved_in.get(f, 0.0) + sign * rate
            topic = self.topics.get(p.topic)
            if topic is not None and topic.throttles_any:
                use = self._quota_use
                if followers and topic.leader_throttled(p.index, leader):
                    quota = 8 * leader + _LEADER_QUOTA
                    use[quota] = use.get(quota, 0.0) + sign * rate * len(followers)
                for f in followers:
                    if topic.follower_throttled(p.index, f):
                        quota = 8 * f + 2
                        use[quota] = use.get(quota, 0.0) + sign * rate
        isr = p.isr
        grows = rate  # p._end() is intercept + grows * now
        intercept = p._size0 - grows * p._t0
        dirs = p.dirs
        for b in p.replicas:
            if b in isr:
                path = dirs.get(b) if dirs else None  # None: the broker's first log dir
                line = self._dir_lines.get((b, path)) if path else self._first_dir_lines.get(b)
                if line is None:
                    line = [0.0, 0.0]
                    if path:
                        self._dir_lines[(b, path)] = line
                    else:
                        self._first_dir_lines[b] = line
                line[0] += sign * intercept
                line[1] += sign * grows
                continue
            lagging = self._lagging_on.get(b)
            if lagging is None:
                lagging = self._lagging_on[b] = set()
            if sign > 0:
                lagging.add(p)
            else:
                lagging.discard(p)
            if leader != NO_LEADER and self.replica_online(p, b):
                key = (p, b)
                if sign > 0:
                    lag = p.lags[b]  # every replica outside the ISR has its Lag
                    lag.keys = None
                    self._fetching[key] = lag
                else:
                    stopped = self._fetching.pop(key, None)
                    if stopped is not None:
                        stopped.rebase(now, 0.0)
                        stopped.done_at = _INF
        for b in p.adding:
            if b in isr:
                continue
            self._incoming[b] = self._incoming.get(b, 0) + sign
            if sign > 0 and self._incoming[b] > self._incoming_peak.get(b, 0):
                self._incoming_peak[b] = self._incoming[b]
            if leader != NO_LEADER:
                self._outgoing[leader] = self._outgoing.get(leader, 0) + sign
                if sign > 0 and self._outgoing[leader] > self._outgoing_peak.get(leader, 0):
                    self._outgoing_peak[leader] = self._outgoing[leader]
        if sign > 0:
            if p.adding or p.removing:
                self._reassigning.add(p)
            else:
                self._reassigning.discard(p)
            self._track_under_min(p)
        self._dirty = True

    def _growth(self, p: SimPartition) -> float:
        """Bytes/s the leader's log takes now: none without a leader, none from acks=all producers while the
        ISR is below min.insync.replicas (Partition.appendRecordsToLeader: NotEnoughReplicasException)."""
        if p.leader == NO_LEADER or not p.produce_bytes_per_sec:
            return 0.0
        if p.acks_all and len(p.isr) < self.min_insync_replicas(p.topic, p.leader):
            return 0.0
        return p.produce_bytes_per_sec

    def reaccount(self, partitions: Iterable[SimPartition], change: Any = None) -> None:
        """Take partitions out of the books, apply `change()` (a config change they depend on), and put them
        back: what they reserve, record on quotas and grow by follows the new settings."""
        parts = list(partitions)
        for p in parts:
            self._account(p, -1)
        if change is not None:
            change()
        for p in parts:
            p.rebase_log()
            self._account(p, +1)

    def _track_under_min(self, p: SimPartition) -> None:
        under = len(p.isr) < self.min_insync_replicas(p.topic, p.leader)
        if under and p._under_since < 0:
            p._under_since = self._clock.now
            self._under_min.add(p)
            self._ever_under.add(p)
        elif not under and p._under_since >= 0:
            p.under_min_seconds += self._clock.now - p._under_since
            p._under_since = -1.0
            self._under_min.discard(p)

    def under_min_seconds(self, p: SimPartition) -> float:
        open_interval = self._clock.now - p._under_since if p._under_since >= 0 else 0.0
        return p.under_min_seconds + open_interval

    # -- log dirs ------------------------------------------------------------------------------------------

    def _place_log(self, p: SimPartition, broker: int, path: str | None = None) -> None:
        """Put a new replica's log in a dir: the one asked for (scenario, AlterReplicaLogDirs), else the dir
        with the fewest logs, ties in `log.dirs` order (LogManager.nextLogDirs). A broker with one log dir
        records nothing: `dir_of` answers its only dir."""
        b = self.brokers.get(broker)
        if b is None:
            return
        preferred = (
            self._preferred_dirs.pop((p.topic, p.index, broker), None) if self._preferred_dirs else None
        )
        if len(b.log_dirs) == 1 and path is None:
            return
        chosen = path or preferred
        if chosen is None or b.dir_named(chosen) is None:  # LogManager.nextLogDirs: the live dirs only
            live = [d for d in b.log_dirs if d.online] or b.log_dirs
            chosen = min(live, key=lambda d: self._logs_in_dir.get((broker, d.path), 0)).path
        if p.dirs is None:
            p.dirs = {}
        p.dirs[broker] = chosen
        self._logs_in_dir[(broker, chosen)] = self._logs_in_dir.get((broker, chosen), 0) + 1

    def _forget_preferred_dirs(self, broker_id: int) -> None:
        """A stopped broker forgets the dirs AlterReplicaLogDirs gave replicas it did not host yet: LogManager
        keeps them in memory only (`preferredLogDirs`, a ConcurrentHashMap), so a restarted broker creates
        such a replica in the dir LogManager.nextLogDirs picks."""
        if self._preferred_dirs:
            for key in [k for k in self._preferred_dirs if k[2] == broker_id]:
                del self._preferred_dirs[key]

    def _drop_log(self, p: SimPartition, broker: int) -> None:
        """The replica's log is deleted, and a future log of it too."""
        if self._futures and self._future_logs.drop(p, broker):
            self._dirty = True
        path = p.dirs.pop(broker, None) if p.dirs else None
        if path is not None:
            self._logs_in_dir[(broker, path)] -= 1

    def _alter_log_dir(self, broker_id: int, topic: str, partition: int, path: str) -> None:
        """One partition of AlterReplicaLogDirs sent to `broker_id` (log_dirs.py has Kafka's rules);
        KafkaError for a per-partition error."""
        broker = self.brokers.get(broker_id)
        if broker is None or not broker.online:
            raise KafkaError(errors.BROKER_NOT_AVAILABLE, f"Broker {broker_id} is not available.")
        if broker.dir_named(path) is None:
            raise KafkaError(errors.LOG_DIR_NOT_FOUND, f"Log dir {path} is not found in the config.")
        if (broker_id, path) in self._failed_dirs:
            raise KafkaError(errors.KAFKA_STORAGE_ERROR, f"Log directory {path} is offline")
        t = self.topics.get(topic)
        p = t.partitions[partition] if t is not None and 0 <= partition < len(t.partitions) else None
        if p is not None and p in self._replicas_on.get(broker_id, ()):
            if not self.replica_online(p, broker_id):  # HostedPartition.Offline
                raise KafkaError(errors.KAFKA_STORAGE_ERROR, f"Partition {topic}-{partition} is offline")
            future = self._futures.get((p, broker_id))
            if future is not None and future.path != path and self._future_logs.drop(p, broker_id):
                self._dirty = True
            if self.dir_of(p, broker_id) == path or (p, broker_id) in self._futures:
                return
            self._futures[(p, broker_id)] = log_dirs.FutureLog(path, Lag(0.0, self.now))
            self._dirty = True
            return
        self._preferred_dirs[(topic, partition, broker_id)] = path
        if p is None:
            raise KafkaError(errors.UNKNOWN_TOPIC_OR_PARTITION)
        raise KafkaError(errors.REPLICA_NOT_AVAILABLE)

    def _promote(self, p: SimPartition, broker_id: int) -> None:
        """The future log replaces the current one (Partition.maybeReplaceCurrentWithFutureReplica)."""
        future = self._futures[(p, broker_id)]
        if self._future_logs.drop(p, broker_id):
            self._dirty = True
        self._account(p, -1)
        self._drop_log(p, broker_id)
        self._place_log(p, broker_id, future.path)
        self._account(p, +1)

    def _replicas_in_dir(self, broker_id: int, path: str) -> list[SimPartition]:
        """The partitions with their replica on `broker_id` in its log dir `path`, in topic order."""
        on_broker = sorted(self._replicas_on.get(broker_id, ()), key=lambda q: (q.topic, q.index))
        return [p for p in on_broker if self.dir_of(p, broker_id) == path]

    def dir_of(self, p: SimPartition, broker: int) -> str:
        """The log dir that holds the replica of `p` on `broker`."""
        return (p.dirs.get(broker) if p.dirs else None) or self.brokers[broker].log_dirs[0].path

    # -- partition changes ---------------------------------------------------------------------------------

    def _zk(self, p: SimPartition) -> ZkPartition:
        """The partition as the ZooKeeper-mode controller sees it, to run its rules on (zk_controller.py)."""
        return ZkPartition.of(self._fields(p))

    def _commit(self, p: SimPartition, zp: ZkPartition) -> bool:
        change = zp.change()
        if change is None:
            return False
        self._apply(p, change)
        if p.leader != NO_LEADER:
            self._zk_online_without_leader.discard(p)
        return True

    def _fields(self, p: SimPartition) -> PartitionFields:
        return PartitionFields(tuple(p.replicas), tuple(p.isr), p.leader, tuple(p.adding), tuple(p.removing))

    def _change(self, p: SimPartition, election: Election = Election.ONLINE, **targets: Any) -> bool:
        """Build and apply one PartitionChangeRecord; False when it would be a no-op."""
        change = build_change(self._fields(p), self.alive_in(p), election=election, **targets)
        if change is None:
            return False
        self._apply(p, change)
        return True

    def _apply(self, p: SimPartition, change: PartitionChange) -> None:
        now = self._clock.now
        if self.metadata_delay > 0:
            before = (tuple(p.replicas), tuple(p.isr), p.leader, p.leader_epoch)
            self._unpublished.setdefault(p, []).append((now, before))
            self._unpublished_order.append((now, p))
        after = change.after
        self._account(p, -1)
        p.rebase_log()
        end = p._end()
        if change.unclean and after.leader != NO_LEADER:
            new_end = p.position_exact(after.leader)
            p.truncate_log(new_end)
            for lag in p.lags.values():
                if lag.at(now) > new_end:
                    lag.pos0, lag.t0 = new_end, now
            for (q, _b), future in self._futures.items():
                if q is p and future.progress.at(now) > new_end:
                    future.progress.pos0, future.progress.t0 = new_end, now
            end = new_end
        old_replicas = set(p.replicas)
        new_isr = set(after.isr)
        for b in after.replicas:
            if b in new_isr:
                p.lags.pop(b, None)
            elif b not in p.lags:
                p.lags[b] = Lag(end if b in p.isr else 0.0, now)
        for b in old_replicas - set(after.replicas):
            p.lags.pop(b, None)
            self._replicas_on[b].discard(p)
            self._drop_log(p, b)
        for b in after.replicas:
            if b not in old_replicas:
                self._replicas_on.setdefault(b, set()).add(p)
                self._place_log(p, b)
        p.replicas = list(after.replicas)
        p.isr = list(after.isr)
        p.adding = list(after.adding)
        p.removing = list(after.removing)
        p.leader = after.leader
        p.partition_epoch += change.partition_epoch_bumps
        if change.leader_epoch_bumps is not None:
            p.leader_epoch += change.leader_epoch_bumps
        elif change.leader_epoch_bump:
            p.leader_epoch += 1
        p.rebase_log()
        self._account(p, +1)

    # -- what the brokers' Metadata shows -----------------------------------------------------------------

    def published(self, p: SimPartition) -> PublishedPartition:
        """The partition as brokers' Metadata shows it: as it was `metadata_delay` seconds ago. KRaft brokers
        learn a change when they replay the controller's record (BrokerMetadataPublisher), ZooKeeper-mode
        brokers from the controller's UpdateMetadata: both a moment after the controller answered."""
        changes = self._unpublished.get(p) if self._unpublished else None
        if changes:
            horizon = self._clock.now - self.metadata_delay + _EPS
            for when, before in changes:
                if when > horizon:
                    return before
        return tuple(p.replicas), tuple(p.isr), p.leader, p.leader_epoch

    def _publish(self) -> None:
        """Forget the changes every broker has replayed by now."""
        horizon = self._clock.now - self.metadata_delay + _EPS
        order = self._unpublished_order
        while order and order[0][0] <= horizon:
            _when, p = order.popleft()
            changes = self._unpublished.get(p)
            if changes:
                changes.pop(0)
                if not changes:
                    del self._unpublished[p]

    # -- virtual time --------------------------------------------------------------------------------------

    def advance(self, seconds: float) -> None:
        """Move virtual time forward, applying every ISR change and quota opening or shutting on the way."""
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"seconds must be a finite, non-negative number, got {seconds}")
        end = self._clock.now + seconds
        while True:
            if self._dirty:
                self._reallocate()
            upcoming = min(self._next_event, self._next_quota)
            if upcoming > end:
                break
            self._clock.now = max(self._clock.now, upcoming)
            if self._next_quota <= self._clock.now + _EPS:
                self._quotas_due()
            if self._next_event <= self._clock.now + _EPS:
                self._complete_due()
        self._clock.now = end
        if self._unpublished_order:
            self._publish()

    def next_event_time(self) -> float | None:
        """Virtual time of the next ISR change, or of the next opening or shutting of a quota that a copy
        which will catch up waits for, under current rates; None when nothing will catch up or fall out of
        the ISR."""
        if self._dirty:
            self._reallocate()
        if self._next_event_of == self.reallocations:  # nothing changed since it was last found
            return self._next_event_found
        upcoming = self._next_event
        if self._gated:
            rates = self._long_run_rates()
            for flow in self._gated:
                if flow.copy:
                    rate = min(self._long_run_capacity(k) for k in flow.quotas)
                else:
                    rate = rates.get((flow.partition, flow.broker), 0.0)
                if rate > self._target(flow)[1]:
                    upcoming = min(upcoming, *(self._quota_at.get(k, _INF) for k in flow.quotas))
        self._next_event_of = self.reallocations
        self._next_event_found = None if upcoming == _INF else upcoming
        return self._next_event_found

    def advance_until_settled(self, max_seconds: float) -> bool:
        """Jump from event to event until no reassignment is in progress; False if `max_seconds` ran out.

        For rehearsals: a plan's moves finish in virtual time without stepping through idle seconds.
        """
        if not math.isfinite(max_seconds) or max_seconds < 0:
            raise ValueError(f"max_seconds must be a finite, non-negative number, got {max_seconds}")
        deadline = self._clock.now + max_seconds
        while self._reassigning:
            upcoming = self.next_event_time()
            if upcoming is None or upcoming > deadline:
                self.advance(deadline - self._clock.now)
                return not self._reassigning
            self.advance(upcoming - self._clock.now)
        return True

    def fetch_rates(self) -> list[tuple[str, int, int, int, float]]:
        """(topic, partition, follower, leader, bytes/s) of every replica catching up now, in the long run: a
        throttle quota counts as its rate less the in-sync replication it records (Kafka lets a throttled
        copy through in bursts, see quota.py; this is their average)."""
        if self._dirty:
            self._reallocate()
        rates = self._long_run_rates()
        return sorted((p.topic, p.index, b, p.leader, rates[(p, b)]) for p, b in self._fetching)

    def fetch_limits(self) -> list[dict[str, Any]]:
        """What bounds each catching-up replica's long-run fetch rate: the resource it is a bottleneck of.

        Rates are max-min fair (replication.py), so a flow's rate is set by a saturated resource on which
        no other flow gets more. Per replica: `resource` (`network_in` of the follower, `network_out` of
        the leader, `follower_throttle` of the follower, `leader_throttle` of the leader), its `broker`,
        its `capacity` in bytes/s (for a network: the link, of which `reserved` carries producers' writes
        and their in-sync replication, which replication of new replicas never takes; for a quota: its rate
        less the in-sync replication it records), and `shared_by`, the catching-up replicas using it. A
        read-only view of the allocation `fetch_rates` reports.
        """
        if self._dirty:
            self._reallocate()
        rates = self._long_run_rates()
        flows = [(p, b, rates[(p, b)], self._flow_keys(p, b)) for p, b in self._fetching]
        used: dict[int, float] = {}
        peak: dict[int, float] = {}
        sharing: dict[int, int] = {}
        for _p, _b, rate, keys in flows:
            for key in keys:
                used[key] = used.get(key, 0.0) + rate
                peak[key] = max(peak.get(key, 0.0), rate)
                sharing[key] = sharing.get(key, 0) + 1
        names = {0: "network_out", 1: "network_in", 2: "follower_throttle", 3: "leader_throttle"}
        found = []
        for p, follower, rate, keys in flows:
            bound = None
            for key in keys:
                capacity = self._long_run_capacity(key)
                saturated = used[key] >= capacity - max(1e-6, abs(capacity) * 1e-9)
                largest = rate >= peak[key] - max(1e-6, peak[key] * 1e-9)
                tighter = (
                    bound is None or capacity / sharing[key] < self._long_run_capacity(bound) / sharing[bound]
                )
                if saturated and largest and tighter:
                    bound = key
            row: dict[str, Any] = {
                "topic": p.topic,
                "partition": p.index,
                "follower": follower,
                "leader": p.leader,
                "rate": rate,
                "resource": None,
            }
            if bound is not None:
                broker, kind = divmod(bound, 8)
                b = self.brokers[broker]
                reserved = {0: self._reserved_out.get(broker, 0.0), 1: self._reserved_in.get(broker, 0.0)}
                row |= {
                    "resource": names[kind],
                    "broker": broker,
                    "capacity": {0: b.network_out, 1: b.network_in}.get(kind, self._long_run_capacity(bound)),
                    "reserved": max(0.0, reserved.get(kind, 0.0)),
                    "shared_by": sharing[bound],
                }
            found.append(row)
        return sorted(found, key=lambda r: (r["topic"], r["partition"], r["follower"]))

    def _flow_keys(self, p: SimPartition, broker: int) -> tuple[int, ...]:
        """Resource ids a fetch uses: 8*b + 0 net out, 1 net in, 2 follower throttle, 3 leader throttle
        (4 and 5, the alter-log-dirs quota and the disk, are used by copies between log dirs)."""
        leader = p.leader
        topic = self.topics[p.topic]
        keys = [8 * leader, 8 * broker + 1]
        if topic.follower_throttled(p.index, broker):
            keys.append(8 * broker + 2)
        if topic.leader_throttled(p.index, leader):
            keys.append(8 * leader + 3)
        return tuple(keys)

    def _capacity(self, key: int) -> float:
        """Bytes/s a resource offers the catching-up copies: a link's spare capacity, a disk's copy rate, a
        WINDOW quota past its burst its rate less what in-sync replication records on it."""
        broker, kind = divmod(key, 8)
        b = self.brokers[broker]
        if kind == 0:
            return b.network_out - self._reserved_out.get(broker, 0.0)
        if kind == 1:
            return b.network_in - self._reserved_in.get(broker, 0.0)
        if kind == 5:
            return b.log_dir_copy_rate
        return max(0.0, self._quota_rate(key) - self._quota_inflow(key))

    def _quota_rate(self, key: int) -> float:
        rate = self._rate_cache.get(key)
        if rate is None:
            broker, kind = divmod(key, 8)
            name = _RATE_CONFIGS[kind]
            rate = self._rate_cache[key] = float(cfg.effective_long(self.broker_config(broker, name)))
        return rate

    def _quota_inflow(self, key: int) -> float:
        """Bytes/s a quota records without holding anything back: the in-sync replication of its throttled
        partitions, and on a leader the size of every fetch response entry of one."""
        kind = key % 8
        if kind == _ALTER_LOG_DIRS_QUOTA:
            return 0.0
        use = max(0.0, self._quota_use.get(key, 0.0))
        return use + LEADER_RESPONSE_BYTES_PER_SEC if kind == _LEADER_QUOTA else use

    def _long_run_capacity(self, key: int) -> float:
        """What a resource gives the catching-up copies on average: a quota's rate less what in-sync
        replication records on it; a follower or alter-log-dirs quota with nothing else recorded lets at
        least one fetch through per window (quota.py: at rate 0, one every 11 s)."""
        if key % 8 not in _QUOTA_KINDS:
            return self._capacity(key)
        broker, kind = divmod(key, 8)
        rate = self._quota_rate(key)
        inflow = self._quota_inflow(key)
        left = max(0.0, rate - inflow)
        if kind != _LEADER_QUOTA and inflow <= _EPS:
            left = max(left, self._fetch_bytes(broker) / self._window(key).expiry)
        return left

    def _regime(self, key: int) -> str:
        broker = key // 8
        rate = self._quota_rate(key)
        inflow = self._quota_inflow(key)
        if inflow > _EPS and rate <= inflow:
            return SHUT
        left = rate - inflow
        if left * self._window(key).expiry < GRANTS_PER_WINDOW * self._fetch_bytes(broker):
            return GRANTS
        return WINDOW

    def _quota_verdict(self, key: int, now: float) -> int:
        """What a quota in use does to the copies through it now (_reallocate)."""
        regime, phase = self._quota_state_now(key, now)
        if regime == SHUT or phase in (SHUT, PAUSE):
            return _HELD
        return _BOUNDS if phase == RATE else _OPEN

    def _quota_state_now(self, key: int, now: float) -> tuple[str, str]:
        """The regime of a quota in use, and its phase: kept while the regime holds, else found from its
        window (the first check after a time nobody checked resets the expired samples then)."""
        regime = self._regime(key)
        state = self._quota_state.get(key)
        if state is None or state[0] != regime:
            window = self._window(key)
            if state is None:
                window.resume(now)
            under = not window.exceeded(now, self._quota_rate(key))
            phase = {(GRANTS, True): OPEN, (GRANTS, False): SHUT, (WINDOW, True): BURST}.get(
                (regime, under), PAUSE
            )
            state = self._quota_state[key] = (regime, phase)
        return state

    def _long_run_rates(self) -> dict[tuple[SimPartition, int], float]:
        """Max-min fair long-run rates of the catching-up replicas (quotas at _long_run_capacity)."""
        if self._long_run is None:
            pairs = list(self._fetching)
            keys = [self._flow_keys(p, b) for p, b in pairs]
            capacity = {key: self._long_run_capacity(key) for flow in keys for key in flow}
            rates = max_min_fair(keys, capacity)
            self._long_run = dict(zip(pairs, rates, strict=True))
        return self._long_run

    def _window(self, key: int) -> QuotaWindow:
        window = self._windows.get(key)
        if window is None:
            broker, kind = divmod(key, 8)
            if kind == _ALTER_LOG_DIRS_QUOTA:
                num, size = cfg.ALTER_LOG_DIRS_QUOTA_WINDOW_NUM, cfg.ALTER_LOG_DIRS_QUOTA_WINDOW_SIZE_SECONDS
            else:
                num, size = cfg.QUOTA_WINDOW_NUM, cfg.QUOTA_WINDOW_SIZE_SECONDS
            window = QuotaWindow(
                int(cfg.effective_long(self.broker_config(broker, num), 11)),
                float(cfg.effective_long(self.broker_config(broker, size), 1)),
                warm=kind == _LEADER_QUOTA,
                now=self._clock.now,
            )
            inflow = self._quota_inflow(key)
            if inflow > 0:  # recorded for as long as the window reaches back
                start = self._clock.now - (window.num + 1) * window.size
                window = QuotaWindow(window.num, window.size, warm=window.warm, now=start)
                window.set_inflow(inflow, start)
            self._windows[key] = window
        return window

    def _fetch_bytes(self, broker: int) -> float:
        """replica.fetch.max.bytes: the most a fetch brings per partition (also for copies between dirs)."""
        size = self._fetch_cache.get(broker)
        if size is None:
            raw = self.broker_config(broker, cfg.REPLICA_FETCH_MAX_BYTES)
            size = self._fetch_cache[broker] = float(max(1, cfg.effective_long(raw, 1)))
        return size

    def broker_configs_changed(self) -> None:
        """Forget what was read from broker configs (a dynamic broker config or cluster default changed)."""
        self._rate_cache.clear()
        self._fetch_cache.clear()
        self._keys_epoch += 1  # which of a fetch's quotas are finite may have changed
        self._dirty = True

    def _target(self, flow: Gated) -> tuple[float, float]:
        """(position, growth) of what a gated copy catches up with."""
        if flow.copy:
            return log_dirs.copy_target(flow.partition, flow.broker)
        return flow.partition._end(), flow.partition.growth

    def _reallocate(self) -> None:
        """Recompute every fetch rate (max-min fair over the links), the time each catching-up replica joins
        the ISR, the in-sync followers that fall behind, and when each quota in use next opens or shuts."""
        self.reallocations += 1
        now = self._clock.now
        epoch = self._keys_epoch
        self._long_run = None
        flows: list[tuple[SimPartition, int, Lag]] = []
        keys: list[tuple[int, ...]] = []
        used: set[int] = set()
        gated: list[Gated] = []
        running: list[Gated] = []
        # per quota in use, found once for every copy through it: _HELD (shut, or pausing), _BOUNDS (a
        # WINDOW quota past its burst: its rate is shared), or _OPEN (lets the copy run at full speed)
        verdicts: dict[int, int] = {}

        def gate(
            p: SimPartition, b: int, lag: Lag, quotas: tuple[int, ...], leader: int
        ) -> tuple[int, ...] | None:
            """Registers a copy behind quotas: None when one of them holds it back now, else the quotas
            that bound its rate now (WINDOW quotas past their burst)."""
            flow = lag.gate
            if flow is None:
                flow = lag.gate = Gated(p, b, lag, quotas, (b, leader), leader < 0)
            else:
                flow.quotas = quotas
                if flow.fetcher[1] != leader:
                    flow.fetcher = (b, leader)
            gated.append(flow)
            bounding: tuple[int, ...] = ()
            held = False
            for key in quotas:
                verdict = verdicts.get(key)
                if verdict is None:
                    verdict = verdicts[key] = self._quota_verdict(key, now)
                if verdict == _HELD:
                    held = True
                elif verdict == _BOUNDS:
                    bounding += (key,)
            if held:
                flow.started = None
                return None
            if flow.started is None:
                flow.started = lag.at(now)
            running.append(flow)
            return bounding

        for (p, b), lag in self._fetching.items():
            if lag.keys is None or lag.keys_epoch != epoch:
                lag.keys = self._flow_keys(p, b)
                lag.keys_epoch = epoch
                lag.links = tuple(k for k in lag.keys if k % 8 not in _QUOTA_KINDS)
                lag.quotas = tuple(
                    k for k in lag.keys if k % 8 in _QUOTA_KINDS and self._quota_rate(k) < _UNLIMITED
                )
            quotas = lag.quotas
            links = lag.links
            if quotas:
                bounding = gate(p, b, lag, quotas, p.leader)
                if bounding is None:
                    links = ()
                elif bounding:
                    links += bounding
            flows.append((p, b, lag))
            keys.append(links)
            used.update(links)
        copies = []
        for p, b, future in self._future_logs.active(self.brokers) if self._futures else []:
            quota = 8 * b + _ALTER_LOG_DIRS_QUOTA
            disk: tuple[int, ...] = (8 * b + 5,)
            if self._quota_rate(quota) < _UNLIMITED:
                bounding = gate(p, b, future.progress, (quota,), -1)
                disk = () if bounding is None else disk + bounding
            copies.append((p, b, future))
            keys.append(disk)
            used.update(disk)
        self._gated = gated
        capacity = {key: self._capacity(key) for key in used}
        rates = max_min_fair(keys, capacity)
        due: list[tuple[float, int]] = []
        for i, (p, _b, lag) in enumerate(flows):
            rate = rates[i]
            pos = lag.pos0 + lag.rate * (now - lag.t0)
            lag.pos0, lag.t0, lag.rate = pos, now, rate
            behind = p._end() - pos
            produce = p.growth
            if behind <= 0:
                lag.done_at = now
            elif rate > produce:
                lag.done_at = now + behind / (rate - produce)
            else:
                lag.done_at = _INF
                continue
            due.append((lag.done_at, i))
        for future in self._futures.values():  # paused unless active below
            future.progress.rebase(now, 0.0)
        for j, (p, b, future) in enumerate(copies):
            rate = rates[len(flows) + j]
            progress = future.progress
            progress.rate = rate
            target, grows = log_dirs.copy_target(p, b)
            behind = target - progress.pos0
            if behind <= 0:
                progress.done_at = now
            elif rate > grows:
                progress.done_at = now + behind / (rate - grows)
            else:
                progress.done_at = _INF
                continue
            due.append((progress.done_at, len(flows) + j))
        self._track_slow_followers(now)
        heapq.heapify(due)
        self._due = due
        self._due_flows = flows
        self._due_copies = copies
        self._next_event = min(due[0][0] if due else _INF, self._shrinks[0][0] if self._shrinks else _INF)
        self._schedule_quotas(now, running, set(verdicts))
        self._dirty = False

    # -- throttle quotas opening and shutting (quota.py) ---------------------------------------------------

    def _schedule_quotas(self, now: float, running: list[Gated], in_use: set[int]) -> None:
        """Each window records what goes through its quota from now on. A GRANTS quota next shuts when its
        measured rate passes its rate, or opens when it is back under it; a WINDOW quota ends its burst
        when its measured rate reaches its rate."""
        through: dict[int, float] = {}
        for flow in running:
            for key in flow.quotas:
                through[key] = through.get(key, 0.0) + flow.progress.rate
        at: dict[int, float] = {}
        before, basis = self._quota_at, self._quota_basis
        for key, window in self._windows.items():
            inflow = self._quota_inflow(key) + through.get(key, 0.0)
            if window.inflow != inflow:
                window.set_inflow(inflow, now)
            state = self._quota_state.get(key)
            if key not in in_use or state is None:
                self._quota_state.pop(key, None)  # its next use finds its state from its window
                continue
            regime, phase = state
            rate = self._quota_rate(key)
            if regime == SHUT or phase == RATE:
                continue
            solved_from = (window.version, state, rate)
            if phase != PAUSE and basis.get(key) == solved_from and key in before:
                at[key] = before[key]  # the same window under the same inflow: the same answer
                continue
            basis[key] = solved_from
            if phase in (OPEN, BURST):
                at[key] = window.closes_at(now, rate) if inflow > rate else _INF
            elif phase == PAUSE:  # the rate can only be let through once the window grows with time
                at[key] = max(window.opens_at(now, rate), window.full_from(now))
            else:
                at[key] = window.opens_at(now, rate)
        self._quota_at = at
        self._next_quota = min(at.values(), default=_INF)

    def _quotas_due(self) -> None:
        """Quotas whose time has come open or shut. When one shuts, each copy running through it finishes
        the fetch it is in: its bytes since it started to run are rounded up to whole fetches of
        replica.fetch.max.bytes (at least one), at most replica.fetch.response.max.bytes per fetcher, as
        Kafka checks the quota before a fetch and records its bytes after."""
        now = self._clock.now
        due = sorted(k for k, when in self._quota_at.items() if when <= now + _EPS)
        shutting = [k for k in due if self._quota_state[k] == (GRANTS, OPEN)]
        following = {OPEN: SHUT, SHUT: OPEN, BURST: PAUSE, PAUSE: RATE}
        for key in due:
            regime, phase = self._quota_state[key]
            self._quota_state[key] = (regime, following[phase])
        done: list[Gated] = []
        if shutting:
            budget: dict[tuple[int, int], float] = {}
            recorded: dict[int, float] = {}
            flows = sorted(self._gated, key=lambda f: (f.partition.topic, f.partition.index, f.broker))
            for flow in flows:
                if flow.started is None or not set(flow.quotas) & set(shutting):
                    continue
                position = flow.progress.at(now)
                target, _grows = self._target(flow)
                fetch = self._fetch_bytes(flow.broker)
                moved = max(0.0, position - flow.started)
                whole = max(1, math.ceil(moved / fetch - 1e-9)) * fetch
                left = budget.get(flow.fetcher)
                if left is None:
                    left = (
                        _INF
                        if flow.copy
                        else float(
                            cfg.effective_long(
                                self.broker_config(flow.broker, cfg.REPLICA_FETCH_RESPONSE_MAX_BYTES),
                                10485760,
                            )
                        )
                    )
                extra = max(0.0, min(whole - moved, target - position, left))
                budget[flow.fetcher] = left - extra
                flow.progress.rebase(now, 0.0)
                flow.progress.pos0 = position + extra
                flow.started = None
                for key in flow.quotas:
                    recorded[key] = recorded.get(key, 0.0) + extra
                if position + extra >= target - _EPS:
                    done.append(flow)
            for key in shutting:
                self._quota_state[key] = (GRANTS, SHUT)
            for key, amount in sorted(recorded.items()):
                if amount > 0:
                    self._window(key).record(amount, now)
        for flow in done:
            p, b = flow.partition, flow.broker
            if flow.copy:
                if (p, b) in self._futures:
                    self._promote(p, b)
            elif (p, b) in self._fetching:
                flow.progress.pos0 = p._end()
                self.join_isr(p, b)
        self._dirty = True

    # -- in-sync followers that fall behind ------------------------------------------------------------

    def _track_slow_followers(self, now: float) -> None:
        """In-sync followers whose fetches cannot keep up with their leader's log (a link that the in-sync
        replication alone overcommits: each follower on it gets its share of the link) leave the ISR
        `replica.lag.time.max.ms` (of the leader's broker) after they last held the log end: Partition.
        maybeShrinkIsr / getOutOfSyncReplicas (the leader checks every half of that time, so a real broker
        drops it up to half that later). One that is fast enough again before then is taken to catch up at
        once."""
        slow = self._slow_followers()
        for key in [k for k in self._slow if k not in slow]:
            del self._slow[key]
        shrinks = []
        for (p, f), rate in slow.items():
            entry = self._slow.get((p, f))
            falls = p.growth - rate
            if entry is None:
                entry = self._slow[(p, f)] = SlowFollower(now, 0.0, now, falls)
            else:
                entry.behind += entry.falls_behind * (now - entry.t0)
                entry.t0, entry.falls_behind = now, falls
            lag_max = cfg.effective_long(self.broker_config(p.leader, cfg.REPLICA_LAG_TIME_MAX_MS), 30000)
            shrinks.append((entry.caught_up_at + lag_max / 1000.0, p.topic, p.index, f, p))
        shrinks.sort(key=lambda s: s[:4])
        self._shrinks = [(when, p, f) for when, _t, _i, f, p in shrinks]

    def _slow_followers(self) -> dict[tuple[SimPartition, int], float]:
        """{(partition, in-sync follower): its fetch rate} for followers slower than the log grows."""
        scale_in: dict[int, float] = {}
        scale_out: dict[int, float] = {}
        for b, reserved in self._reserved_in.items():
            broker = self.brokers.get(b)
            if broker is None or reserved <= broker.network_in * (1 + 1e-9) + _EPS:
                continue
            ingress = sum(p.growth for p in self._replicas_on.get(b, ()) if p.leader == b)
            fetching = reserved - ingress
            if fetching > _EPS:
                scale_in[b] = max(0.0, broker.network_in - ingress) / fetching
        for b, reserved in self._reserved_out.items():
            broker = self.brokers.get(b)
            if broker is not None and reserved > broker.network_out * (1 + 1e-9) + _EPS:
                scale_out[b] = broker.network_out / reserved
        if not scale_in and not scale_out:
            return {}
        candidates: set[SimPartition] = set()
        for b in [*scale_in, *scale_out]:
            candidates.update(self._replicas_on.get(b, ()))
        found: dict[tuple[SimPartition, int], float] = {}
        for p in sorted(candidates, key=lambda q: (q.topic, q.index)):
            if not p.growth:
                continue
            for f in p.isr:
                if f == p.leader:
                    continue
                scale = min(scale_in.get(f, 1.0), scale_out.get(p.leader, 1.0))
                if scale < 1 - 1e-9:
                    found[(p, f)] = p.growth * scale
        return found

    def _shrink_due(self, now: float) -> None:
        """The leader's AlterPartition taking out the followers out of sync since replica.lag.time.max.ms."""
        while self._shrinks and self._shrinks[0][0] <= now + _EPS:
            _when, p, f = self._shrinks.pop(0)
            entry = self._slow.pop((p, f), None)
            if entry is None or f not in p.isr or f == p.leader:
                continue
            behind = entry.behind + entry.falls_behind * (now - entry.t0)
            position = max(0.0, p._end() - behind)
            if self.kafka.zookeeper:
                zp = self._zk(p)
                zp.shrink_isr(f)
                self._commit(p, zp)
            else:
                self._change(p, isr=[r for r in p.isr if r != f])
            lag = p.lags.get(f)
            if lag is not None:
                lag.pos0, lag.t0 = position, now
            self._dirty = True

    def _complete_due(self) -> None:
        """Every replica that reached its leader's log end by now joins the ISR (in a stable order), and
        every in-sync follower out of sync for too long leaves it."""
        now = self._clock.now
        ready: list[tuple[SimPartition, int]] = []
        copied: list[tuple[SimPartition, int]] = []
        while self._due and self._due[0][0] <= now + _EPS:
            _, i = heapq.heappop(self._due)
            if i < len(self._due_flows):
                p, b, _lag = self._due_flows[i]
                ready.append((p, b))
            else:
                p, b, _future = self._due_copies[i - len(self._due_flows)]
                copied.append((p, b))
        for p, b in sorted(copied, key=lambda key: (key[0].topic, key[0].index, key[1])):
            if (p, b) in self._futures:  # caught up with the current log: it takes its place
                self._promote(p, b)
        ready.sort(key=lambda key: (key[0].topic, key[0].index, key[1]))
        for p, b in ready:
            if (p, b) not in self._fetching:
                continue
            lag = p.lags[b]
            lag.rebase(now, lag.rate)
            lag.pos0 = p._end()
            self.join_isr(p, b)
        self._shrink_due(now)
        if self.topics_to_delete:
            self._resume_deletions()
        self._dirty = True

    def _resume_deletions(self) -> None:
        """Delete the queued topics that have become eligible (SimCluster: TopicDeletionManager)."""

    def join_isr(self, p: SimPartition, broker: int) -> None:
        """The leader's AlterPartition adding a caught-up follower (which may complete a reassignment)."""
        if broker in p.isr:
            return
        if self.kafka.zookeeper:  # AlterPartition, then KafkaController.maybeCompleteReassignment
            zp = self._zk(p)
            zp.expand_isr(broker)
            zp.maybe_complete(self.alive_in(p))
            self._commit(p, zp)
            return
        self._change(p, isr=[*p.isr, broker])

    # -- failures --------------------------------------------------------------------------------------------

    def _set_online(self, broker_id: int, online: bool) -> list[SimPartition]:
        broker = self.brokers[broker_id]
        parts = sorted(self._replicas_on.get(broker_id, ()), key=lambda p: (p.topic, p.index))
        for p in parts:
            self._account(p, -1)
        broker.online = online
        for p in parts:
            p.rebase_log()
            self._account(p, +1)
        return parts

    def _replica_offline(self, p: SimPartition, broker_id: int) -> None:
        """`broker_id`'s replica of `p` went offline (its broker, or its log dir): out of the ISR (never the
        last one on KRaft), and a new leader if it led. ZooKeeper: KafkaController.onReplicasBecomeOffline,
        an offline election; KRaft: an ISR change with the topic's election (unclean where enabled)."""
        if self.kafka.zookeeper:
            zp = self._zk(p)
            if p.leader == broker_id:
                zp.elect_offline(self.alive_in(p), self.unclean_enabled(p.topic))
            zp.remove_from_isr(broker_id)
            self._commit(p, zp)
            return
        isr = [r for r in p.isr if r != broker_id]
        election = Election.UNCLEAN if self.unclean_enabled(p.topic) else Election.ONLINE
        self._change(p, election, isr=isr)

    def stop_broker(self, broker_id: int) -> None:
        """Fence the broker: its replicas leave the ISR (never the last one) and leaders fail over."""
        self._require_broker(broker_id)
        if not self.brokers[broker_id].online:
            return
        self._forget_preferred_dirs(broker_id)
        for p in self._set_online(broker_id, False):
            self._replica_offline(p, broker_id)  # ZooKeeper: KafkaController.onBrokerFailure
        if self.kafka.zookeeper:  # every partition without a live leader goes through an offline election
            for topic in self.topics.values():
                for p in topic.partitions:
                    if p.leader == NO_LEADER:
                        zp = self._zk(p)
                        zp.elect_offline(self.alive_in(p), self.unclean_enabled(p.topic))
                        self._commit(p, zp)
        if self.controller_id == broker_id:
            online = sorted(b for b, broker in self.brokers.items() if broker.online)
            self.controller_id = online[0] if online else -1

    def start_broker(self, broker_id: int) -> None:
        """Unfence the broker: leaderless partitions it can lead get a leader; its replicas catch up."""
        self._require_broker(broker_id)
        if self.brokers[broker_id].online:
            return
        for kind in _QUOTA_KINDS:  # a new process: its quotas' sensors start empty
            self._windows.pop(8 * broker_id + kind, None)
            self._quota_state.pop(8 * broker_id + kind, None)
        for p in self._set_online(broker_id, True):
            if self.kafka.zookeeper:  # KafkaController.onBrokerStartup
                zp = self._zk(p)
                if p.leader == NO_LEADER and p not in self._zk_online_without_leader:
                    zp.elect_offline(self.alive_in(p), self.unclean_enabled(p.topic))
                if zp.being_reassigned and broker_id in zp.replicas and broker_id not in zp.removing:
                    zp.resume(self.alive_in(p))  # maybeResumeReassignments: the target includes this broker
                self._commit(p, zp)
                continue
            if p.leader == NO_LEADER:
                election = Election.UNCLEAN if self.unclean_enabled(p.topic) else Election.ONLINE
                self._change(p, election)
        if self.controller_id == -1:
            self.controller_id = broker_id
        if self.topics_to_delete:  # onBrokerStartup: resume the deletions this broker held up
            self._resume_deletions()

    def fail_log_dir(self, broker_id: int, path: str) -> None:
        """One log dir of a running broker fails (a disk error): log_dirs.py has Kafka's rules. A broker
        that cannot go on without it stops instead; a dir already failed stays so."""
        self._require_broker(broker_id)
        broker = self.brokers[broker_id]
        failed = broker.dir_named(path)
        if failed is None:
            raise KeyError(f"broker {broker_id} has no log dir {path!r}")
        if not failed.online:
            return
        if broker.online and log_dirs.halts_broker(broker, path, self.kafka):
            self.stop_broker(broker_id)
        if not broker.online:  # stopped, or was: the dir is failed when it starts again
            failed.online = False
            self._failed_dirs.add((broker_id, path))
            return
        for p, b in [k for k, f in self._futures.items() if k[1] == broker_id and f.path == path]:
            if self._future_logs.drop(p, b):  # removeFutureLocalReplica: a copy into the dir stops
                self._dirty = True
        parts = self._replicas_in_dir(broker_id, path)
        for p in parts:
            if self._futures and self._future_logs.drop(p, broker_id):  # its copy elsewhere stops too
                self._dirty = True
            self._account(p, -1)
        failed.online = False
        self._failed_dirs.add((broker_id, path))
        for p in parts:
            p.rebase_log()
            self._account(p, +1)
            # ReplicationControlManager.handleDirectoriesOffline; ZooKeeper: onBrokerLogDirFailure
            self._replica_offline(p, broker_id)
        self._dirty = True

    def restore_log_dir(self, broker_id: int, path: str) -> None:
        """A failed log dir readable again (Kafka brings one back only with a restart of its broker,
        KIP-112): its replicas catch up from where they were and leaderless partitions get a leader."""
        self._require_broker(broker_id)
        restored = self.brokers[broker_id].dir_named(path)
        if restored is None:
            raise KeyError(f"broker {broker_id} has no log dir {path!r}")
        if restored.online:
            return
        parts = self._replicas_in_dir(broker_id, path)
        for p in parts:
            self._account(p, -1)
        restored.online = True
        self._failed_dirs.discard((broker_id, path))
        for p in parts:
            p.rebase_log()
            self._account(p, +1)
            if p.leader != NO_LEADER:
                continue
            if self.kafka.zookeeper:
                zp = self._zk(p)
                zp.elect_offline(self.alive_in(p), self.unclean_enabled(p.topic))
                self._commit(p, zp)
            else:
                self._change(p, Election.UNCLEAN if self.unclean_enabled(p.topic) else Election.ONLINE)
        self._dirty = True

    def _require_broker(self, broker_id: int) -> None:
        if broker_id not in self.brokers:
            raise KeyError(f"unknown broker id {broker_id}")

    def set_network(self, broker_id: int, network_in: float | None, network_out: float | None) -> None:
        """A broker's network capacity in bytes/s each way, changed at runtime (None keeps it): a slow
        follower, as a saturated link, a stalled disk or a long pause would make it."""
        self._require_broker(broker_id)
        for value in (network_in, network_out):
            if value is not None and (not math.isfinite(value) or value < 0):
                raise ValueError(f"network capacity must be a finite, non-negative number, got {value}")
        broker = self.brokers[broker_id]
        if network_in is not None:
            broker.network_in = float(network_in)
        if network_out is not None:
            broker.network_out = float(network_out)
        self._dirty = True

    def append(self, topic: str, partition: int | None, size: float) -> dict[int, int]:
        """`size` bytes written at once to the leader of a partition (each of the topic's when None), as a
        bulk fill would: in-sync followers hold them too, acks=all writes are refused below
        min.insync.replicas and nothing is written without a leader. The bytes written, by partition."""
        if not math.isfinite(size) or size < 0:
            raise ValueError(f"size must be a finite, non-negative number, got {size}")
        t = self.topics.get(topic)
        if t is None:
            raise KeyError(f"unknown topic {topic!r}")
        if partition is not None and not 0 <= partition < len(t.partitions):
            raise KeyError(f"unknown partition {topic}-{partition}")
        parts: Iterable[SimPartition] = t.partitions if partition is None else [t.partitions[partition]]
        written = {}
        for p in parts:
            refused = p.leader == NO_LEADER or (
                p.acks_all and len(p.isr) < self.min_insync_replicas(p.topic, p.leader)
            )
            written[p.index] = 0 if refused else round(size)
            if refused or not size:
                continue
            self._account(p, -1)
            p.rebase_log()
            p.truncate_log(p._size0 + size)  # the leader's log end moves on by `size`
            self._account(p, +1)
        return written

    def set_produce_rate(
        self, topic: str, partition: int | None, bytes_per_sec: float, acks: str | None = None
    ) -> None:
        """Producers' bytes/s into a partition (all of the topic's when None), and their acks ("all" or
        "1"; None keeps them): acks=all producers are refused while the ISR is below min.insync.replicas."""
        if not math.isfinite(bytes_per_sec) or bytes_per_sec < 0:
            raise ValueError(f"bytes_per_sec must be a finite, non-negative number, got {bytes_per_sec}")
        if acks not in (None, "all", "1"):
            raise ValueError(f"acks must be 'all' or '1', got {acks!r}")
        t = self.topics.get(topic)
        if t is None:
            raise KeyError(f"unknown topic {topic!r}")
        if partition is not None and not 0 <= partition < len(t.partitions):
            raise KeyError(f"unknown partition {topic}-{partition}")
        parts: Iterable[SimPartition] = t.partitions if partition is None else [t.partitions[partition]]
        for p in parts:
            self._account(p, -1)
            p.rebase_log()
            p.produce_bytes_per_sec = float(bytes_per_sec)
            if acks is not None:
                p.acks_all = acks == "all"
            self._account(p, +1)

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
from collections.abc import Iterable
from typing import Any

from reassignd import config_keys
from reassignd.sim import configs as cfg
from reassignd.sim import errors, log_dirs
from reassignd.sim.entities import NO_LEADER, Clock, Lag, SimBroker, SimPartition, SimTopic
from reassignd.sim.errors import KafkaError
from reassignd.sim.kafka_version import DEFAULT as DEFAULT_KAFKA
from reassignd.sim.kafka_version import KafkaVersion
from reassignd.sim.reassignment import Election, PartitionChange, PartitionFields, build_change
from reassignd.sim.replication import max_min_fair
from reassignd.sim.zk_controller import ZkPartition

_INF = float("inf")
_EPS = 1e-9
# the broker config behind each throttle resource kind (see _flow_keys)
_RATE_CONFIGS = {
    2: config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE,
    3: config_keys.LEADER_REPLICATION_THROTTLED_RATE,
    4: config_keys.REPLICA_ALTER_LOG_DIRS_IO_MAX_BYTES_PER_SECOND,
}


class ClusterCore:
    def __init__(self, kafka: KafkaVersion = DEFAULT_KAFKA) -> None:
        self.kafka = kafka  # the release and controller mode simulated
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
        self._rate_cache: dict[
            int, float
        ] = {}  # throttle rates by resource id; cleared on broker config changes
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
        # (broker, log dir) -> [intercept, slope]: its in-sync replicas hold intercept + slope * now bytes
        self._dir_lines: dict[tuple[int, str], list[float]] = {}
        self._first_dir_lines: dict[int, list[float]] = {}  # the same for replicas in the broker's first dir
        self._lagging_on: dict[int, set[SimPartition]] = {}  # broker -> partitions it holds out of the ISR
        # (topic, partition, broker) -> log dir chosen by AlterReplicaLogDirs before the replica existed
        self._preferred_dirs: dict[tuple[str, int, int], str] = {}

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

    # -- bookkeeping around every partition change -------------------------------------------------------

    def _account(self, p: SimPartition, sign: int) -> None:
        """Add (+1) or remove (-1) what `p` contributes to the indexes and bandwidth reservations."""
        now = self._clock.now
        leader = p.leader
        rate = p.produce_bytes_per_sec
        if leader != NO_LEADER and rate:
            followers = [r for r in p.isr if r != leader]
            self._reserved_in[leader] = self._reserved_in.get(leader, 0.0) + sign * rate
            self._reserved_out[leader] = self._reserved_out.get(leader, 0.0) + sign * rate * len(followers)
            for f in followers:
                self._reserved_in[f] = self._reserved_in.get(f, 0.0) + sign * rate
        isr = p.isr
        grows = rate if leader != NO_LEADER else 0.0  # p._end() is intercept + grows * now
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
            if leader != NO_LEADER and self.is_alive(b):
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
        if chosen is None or b.dir_named(chosen) is None:
            chosen = min(b.log_dirs, key=lambda d: self._logs_in_dir.get((broker, d.path), 0)).path
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
        t = self.topics.get(topic)
        p = t.partitions[partition] if t is not None and 0 <= partition < len(t.partitions) else None
        if p is not None and p in self._replicas_on.get(broker_id, ()):
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
        change = build_change(self._fields(p), self.is_alive, election=election, **targets)
        if change is None:
            return False
        self._apply(p, change)
        return True

    def _apply(self, p: SimPartition, change: PartitionChange) -> None:
        now = self._clock.now
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

    # -- virtual time --------------------------------------------------------------------------------------

    def advance(self, seconds: float) -> None:
        """Move virtual time forward, applying every ISR join (and what follows from it) on the way."""
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"seconds must be a finite, non-negative number, got {seconds}")
        end = self._clock.now + seconds
        while True:
            if self._dirty:
                self._reallocate()
            if self._next_event > end:
                break
            self._clock.now = max(self._clock.now, self._next_event)
            self._complete_due()
        self._clock.now = end

    def next_event_time(self) -> float | None:
        """Virtual time of the next ISR join under current rates, or None when nothing will catch up."""
        if self._dirty:
            self._reallocate()
        return None if self._next_event == _INF else self._next_event

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
        """(topic, partition, follower, leader, bytes/s) of every replica catching up now."""
        if self._dirty:
            self._reallocate()
        rows = [(p.topic, p.index, b, p.leader, p.lags[b].rate) for p, b in self._fetching]
        return sorted(rows)

    def fetch_limits(self) -> list[dict[str, Any]]:
        """What bounds each catching-up replica's fetch rate now: the resource it is a bottleneck flow of.

        Rates are max-min fair (replication.py), so a flow's rate is set by a saturated resource on which
        no other flow gets more. Per replica: `resource` (`network_in` of the follower, `network_out` of
        the leader, `follower_throttle` of the follower, `leader_throttle` of the leader), its `broker`,
        its `capacity` in bytes/s (for a network: the link, of which `reserved` carries producers' writes
        and their in-sync replication, which replication of new replicas never takes), and `shared_by`,
        the catching-up replicas using it. A read-only view of the allocation `fetch_rates` reports.
        """
        if self._dirty:
            self._reallocate()
        flows = [(p, b, lag, lag.keys or self._flow_keys(p, b)) for (p, b), lag in self._fetching.items()]
        used: dict[int, float] = {}
        peak: dict[int, float] = {}
        sharing: dict[int, int] = {}
        for _p, _b, lag, keys in flows:
            for key in keys:
                used[key] = used.get(key, 0.0) + lag.rate
                peak[key] = max(peak.get(key, 0.0), lag.rate)
                sharing[key] = sharing.get(key, 0) + 1
        names = {0: "network_out", 1: "network_in", 2: "follower_throttle", 3: "leader_throttle"}
        found = []
        for p, follower, lag, keys in flows:
            bound = None
            for key in keys:
                capacity = self._capacity(key)
                saturated = used[key] >= capacity - max(1e-6, abs(capacity) * 1e-9)
                largest = lag.rate >= peak[key] - max(1e-6, peak[key] * 1e-9)
                tighter = bound is None or capacity / sharing[key] < self._capacity(bound) / sharing[bound]
                if saturated and largest and tighter:
                    bound = key
            row: dict[str, Any] = {
                "topic": p.topic,
                "partition": p.index,
                "follower": follower,
                "leader": p.leader,
                "rate": lag.rate,
                "resource": None,
            }
            if bound is not None:
                broker, kind = divmod(bound, 8)
                b = self.brokers[broker]
                reserved = {0: self._reserved_out.get(broker, 0.0), 1: self._reserved_in.get(broker, 0.0)}
                row |= {
                    "resource": names[kind],
                    "broker": broker,
                    "capacity": {0: b.network_out, 1: b.network_in}.get(kind, self._capacity(bound)),
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
        broker, kind = divmod(key, 8)
        b = self.brokers[broker]
        if kind == 0:
            return b.network_out - self._reserved_out.get(broker, 0.0)
        if kind == 1:
            return b.network_in - self._reserved_in.get(broker, 0.0)
        if kind == 5:
            return b.log_dir_copy_rate
        rate = self._rate_cache.get(key)
        if rate is None:
            name = _RATE_CONFIGS[kind]
            rate = self._rate_cache[key] = float(cfg.effective_long(self.broker_config(broker, name)))
        return rate

    def _reallocate(self) -> None:
        """Recompute every fetch rate (max-min fair) and the time each catching-up replica joins the ISR."""
        self.reallocations += 1
        now = self._clock.now
        epoch = self._keys_epoch
        flows: list[tuple[SimPartition, int, Lag]] = []
        keys: list[tuple[int, ...]] = []
        used: set[int] = set()
        for (p, b), lag in self._fetching.items():
            if lag.keys is None or lag.keys_epoch != epoch:
                lag.keys = self._flow_keys(p, b)
                lag.keys_epoch = epoch
            flows.append((p, b, lag))
            keys.append(lag.keys)
            used.update(lag.keys)
        copies = self._future_logs.active(self.brokers) if self._futures else []
        for _p, b, _future in copies:
            copy_keys = (8 * b + 4, 8 * b + 5)
            keys.append(copy_keys)
            used.update(copy_keys)
        capacity = {key: self._capacity(key) for key in used}
        rates = max_min_fair(keys, capacity)
        due: list[tuple[float, int]] = []
        for i, (p, _b, lag) in enumerate(flows):
            rate = rates[i]
            pos = lag.pos0 + lag.rate * (now - lag.t0)
            lag.pos0, lag.t0, lag.rate = pos, now, rate
            behind = p._end() - pos
            produce = p.produce_bytes_per_sec
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
        heapq.heapify(due)
        self._due = due
        self._due_flows = flows
        self._due_copies = copies
        self._next_event = due[0][0] if due else _INF
        self._dirty = False

    def _complete_due(self) -> None:
        """Every replica that reached its leader's log end by now joins the ISR (in a stable order)."""
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
            zp.maybe_complete(self.is_alive)
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

    def stop_broker(self, broker_id: int) -> None:
        """Fence the broker: its replicas leave the ISR (never the last one) and leaders fail over."""
        self._require_broker(broker_id)
        if not self.brokers[broker_id].online:
            return
        self._forget_preferred_dirs(broker_id)
        for p in self._set_online(broker_id, False):
            if self.kafka.zookeeper:  # KafkaController.onBrokerFailure -> onReplicasBecomeOffline
                zp = self._zk(p)
                if p.leader == broker_id:
                    zp.elect_offline(self.is_alive, self.unclean_enabled(p.topic))
                zp.remove_from_isr(broker_id)
                self._commit(p, zp)
                continue
            isr = [r for r in p.isr if r != broker_id]
            election = Election.UNCLEAN if self.unclean_enabled(p.topic) else Election.ONLINE
            self._change(p, election, isr=isr)
        if self.kafka.zookeeper:  # every partition without a live leader goes through an offline election
            for topic in self.topics.values():
                for p in topic.partitions:
                    if p.leader == NO_LEADER:
                        zp = self._zk(p)
                        zp.elect_offline(self.is_alive, self.unclean_enabled(p.topic))
                        self._commit(p, zp)
        if self.controller_id == broker_id:
            online = sorted(b for b, broker in self.brokers.items() if broker.online)
            self.controller_id = online[0] if online else -1

    def start_broker(self, broker_id: int) -> None:
        """Unfence the broker: leaderless partitions it can lead get a leader; its replicas catch up."""
        self._require_broker(broker_id)
        if self.brokers[broker_id].online:
            return
        for p in self._set_online(broker_id, True):
            if self.kafka.zookeeper:  # KafkaController.onBrokerStartup
                zp = self._zk(p)
                if p.leader == NO_LEADER and p not in self._zk_online_without_leader:
                    zp.elect_offline(self.is_alive, self.unclean_enabled(p.topic))
                if zp.being_reassigned and broker_id in zp.replicas and broker_id not in zp.removing:
                    zp.resume(self.is_alive)  # maybeResumeReassignments: the target includes this broker
                self._commit(p, zp)
                continue
            if p.leader == NO_LEADER:
                election = Election.UNCLEAN if self.unclean_enabled(p.topic) else Election.ONLINE
                self._change(p, election)
        if self.controller_id == -1:
            self.controller_id = broker_id
        if self.topics_to_delete:  # onBrokerStartup: resume the deletions this broker held up
            self._resume_deletions()

    def _require_broker(self, broker_id: int) -> None:
        if broker_id not in self.brokers:
            raise KeyError(f"unknown broker id {broker_id}")

    def set_produce_rate(self, topic: str, partition: int | None, bytes_per_sec: float) -> None:
        if not math.isfinite(bytes_per_sec) or bytes_per_sec < 0:
            raise ValueError(f"bytes_per_sec must be a finite, non-negative number, got {bytes_per_sec}")
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
            self._account(p, +1)

"""The cluster's moving parts: partition changes, replication in virtual time, broker failures.

Time scheme (event-driven, exact): between two events every fetch rate is constant, so a catching-up
replica's position and its leader's log end are linear in time, and the moment it reaches the log end is
solved exactly: t = now + (log_end - position) / (rate - produce). `advance()` jumps from event to event (a
replica joining the ISR, which may complete a reassignment and change other rates) and recomputes rates only
when something they depend on changed. A step costs O(catching-up replicas); idle partitions are never
visited (their log end is computed from the size at t0 and the produce rate).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from reassignd.sim import configs as cfg
from reassignd.sim.entities import NO_LEADER, Clock, Lag, SimBroker, SimPartition, SimTopic
from reassignd.sim.reassignment import Election, PartitionChange, PartitionFields, build_change
from reassignd.sim.replication import max_min_fair

_INF = float("inf")
_EPS = 1e-9


class ClusterCore:
    def __init__(self) -> None:
        self._clock = Clock()
        self.brokers: dict[int, SimBroker] = {}
        self.topics: dict[str, SimTopic] = {}
        self.cluster_configs: dict[str, str] = {}  # dynamic cluster-wide broker defaults
        self.controller_id = -1
        self._replicas_on: dict[int, set[SimPartition]] = {}
        self._fetching: set[tuple[SimPartition, int]] = set()
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

    def min_insync_replicas(self, topic: str) -> int:
        return int(cfg.effective_long(self.topic_config(topic, cfg.MIN_INSYNC_REPLICAS), 1))

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
        for b in p.replicas:
            if b in isr:
                continue
            if leader != NO_LEADER and self.is_alive(b):
                key = (p, b)
                if sign > 0:
                    self._fetching.add(key)
                else:
                    self._fetching.discard(key)
                    lag = p.lags.get(b)
                    if lag is not None:
                        lag.rebase(now, 0.0)
                        lag.done_at = _INF
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
        under = len(p.isr) < self.min_insync_replicas(p.topic)
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
        for b in set(after.replicas) - old_replicas:
            self._replicas_on.setdefault(b, set()).add(p)
        p.replicas = list(after.replicas)
        p.isr = list(after.isr)
        p.adding = list(after.adding)
        p.removing = list(after.removing)
        p.leader = after.leader
        p.partition_epoch += 1
        if change.leader_epoch_bump:
            p.leader_epoch += 1
        p.rebase_log()
        self._account(p, +1)

    # -- virtual time --------------------------------------------------------------------------------------

    def advance(self, seconds: float) -> None:
        """Move virtual time forward, applying every ISR join (and what follows from it) on the way."""
        if seconds < 0:
            raise ValueError(f"seconds must not be negative, got {seconds}")
        end = self._clock.now + seconds
        while True:
            if self._dirty:
                self._reallocate()
            if self._next_event > end:
                break
            self._clock.now = max(self._clock.now, self._next_event)
            self._complete_due()
        self._clock.now = end

    def _reallocate(self) -> None:
        now = self._clock.now
        flows = list(self._fetching)
        keys: list[list[tuple[str, int]]] = []
        capacity: dict[tuple[str, int], float] = {}
        for p, b in flows:
            leader = p.leader
            topic = self.topics[p.topic]
            ks = [("out", leader), ("in", b)]
            if ("out", leader) not in capacity:
                capacity[("out", leader)] = self.brokers[leader].network_out - self._reserved_out.get(
                    leader, 0.0
                )
            if ("in", b) not in capacity:
                capacity[("in", b)] = self.brokers[b].network_in - self._reserved_in.get(b, 0.0)
            if topic.follower_throttled(p.index, b):
                ks.append(("fthr", b))
                if ("fthr", b) not in capacity:
                    capacity[("fthr", b)] = cfg.effective_long(
                        self.broker_config(b, cfg.FOLLOWER_THROTTLED_RATE)
                    )
            if topic.leader_throttled(p.index, leader):
                ks.append(("lthr", leader))
                if ("lthr", leader) not in capacity:
                    capacity[("lthr", leader)] = cfg.effective_long(
                        self.broker_config(leader, cfg.LEADER_THROTTLED_RATE)
                    )
            keys.append(ks)
        rates = max_min_fair(keys, capacity)
        next_event = _INF
        for (p, b), rate in zip(flows, rates, strict=True):
            lag = p.lags[b]
            lag.rebase(now, rate)
            behind = p._end() - lag.pos0
            produce = p.produce_bytes_per_sec
            if behind <= 0:
                lag.done_at = now
            elif rate > produce:
                lag.done_at = now + behind / (rate - produce)
            else:
                lag.done_at = _INF
            next_event = min(next_event, lag.done_at)
        self._next_event = next_event
        self._dirty = False

    def _complete_due(self) -> None:
        now = self._clock.now
        due = [(p, b) for p, b in self._fetching if p.lags[b].done_at <= now + _EPS]
        due.sort(key=lambda key: (key[0].topic, key[0].index, key[1]))
        for p, b in due:
            if (p, b) not in self._fetching:
                continue
            lag = p.lags[b]
            lag.rebase(now, lag.rate)
            lag.pos0 = p._end()
            self.join_isr(p, b)
        self._dirty = True

    def join_isr(self, p: SimPartition, broker: int) -> None:
        """The leader's AlterPartition adding a caught-up follower (which may complete a reassignment)."""
        if broker in p.isr:
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
        for p in self._set_online(broker_id, False):
            isr = [r for r in p.isr if r != broker_id]
            election = Election.UNCLEAN if self.unclean_enabled(p.topic) else Election.ONLINE
            self._change(p, election, isr=isr)
        if self.controller_id == broker_id:
            online = sorted(b for b, broker in self.brokers.items() if broker.online)
            self.controller_id = online[0] if online else -1

    def start_broker(self, broker_id: int) -> None:
        """Unfence the broker: leaderless partitions it can lead get a leader; its replicas catch up."""
        self._require_broker(broker_id)
        if self.brokers[broker_id].online:
            return
        for p in self._set_online(broker_id, True):
            if p.leader == NO_LEADER:
                election = Election.UNCLEAN if self.unclean_enabled(p.topic) else Election.ONLINE
                self._change(p, election)
        if self.controller_id == -1:
            self.controller_id = broker_id

    def _require_broker(self, broker_id: int) -> None:
        if broker_id not in self.brokers:
            raise KeyError(f"unknown broker id {broker_id}")

    def set_produce_rate(self, topic: str, partition: int | None, bytes_per_sec: float) -> None:
        if bytes_per_sec < 0:
            raise ValueError(f"bytes_per_sec must not be negative, got {bytes_per_sec}")
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

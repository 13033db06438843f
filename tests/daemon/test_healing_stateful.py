"""Schedules of broker failures and returns, approvals, operator plans and daemon crashes against
self-healing (issue 29), in process, in virtual time. Whatever the order:

- never two plans run at once, and self-healing never has two fixes unfinished;
- no replica is ever placed on the decommissioned broker;
- a broker has at most one broker-level anomaly whose fix has not ended, and no kind has two open
  anomalies about one subject;
- every fix that ran drained its broker, or ended cancelled, or waits its turn.

Every detector is on: topic `u` starts with partitions spanning fewer racks than they could and the
brokers out of the replica band, and drains, returns and slow brokers make the rest (imbalance after a
drain, partitions under-replicated after a broker's return).
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from reassignd.daemon.service import ServiceError
from reassignd.engine.anomalies import AnomalyKind, HealingMode, HealingSettings
from reassignd.sim.scenario import DEFAULT_NETWORK_BYTES_PER_SEC
from tests.daemon.inprocess import InProcessDaemon, plan_of

MB = 1_000_000
RACKS = {1: "/r1", 2: "/r1", 3: "/r2", 4: "/r2", 5: "/r3", 6: "/r3", 7: "/r1"}
DECOMMISSIONED = 7
BROKERS = (1, 2, 3, 4, 5)
SCENARIO = {
    "seed": 11,
    "brokers": [{"id": b, "rack": r} for b, r in sorted(RACKS.items())],
    "topics": [
        {
            "name": "t",
            "partitions": 6,
            "replication_factor": 3,
            "partition_bytes": 50 * MB,
            "produce_bytes_per_sec": 10_000.0,
            "assignment": [[1, 3, 5], [2, 4, 6], [3, 5, 1], [4, 6, 2], [5, 1, 3], [6, 2, 4]],
        },
        {
            "name": "u",
            "partitions": 2,
            "replication_factor": 3,
            "partition_bytes": 20 * MB,
            "produce_bytes_per_sec": 10_000.0,
            "assignment": [[1, 2, 3], [3, 4, 5]],
        },
    ],
}
PARTITIONS = [("t", p) for p in range(6)] + [("u", p) for p in range(2)]
LIMITS: dict[str, Any] = {
    "leader.reassignment.throttled.rate": 20 * MB,
    "follower.reassignment.throttled.rate": 20 * MB,
}


class HealingRuns(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.d: InProcessDaemon | None = None

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    @property
    def daemon(self) -> InProcessDaemon:
        assert self.d is not None
        return self.d

    @initialize(mode=st.sampled_from([HealingMode.PROPOSE, HealingMode.EXECUTE]))
    def start(self, mode: HealingMode) -> None:
        healing = HealingSettings(
            mode,
            broker_failure_seconds=30.0,
            cooldown_seconds=0.0,
            detectors=frozenset(AnomalyKind),
            new_broker_seconds=30.0,
            violation_seconds=30.0,
            under_replicated_seconds=30.0,
        )
        self.d = InProcessDaemon(SCENARIO, LIMITS, healing=healing)
        self.run(self.daemon.controller.start())
        self.run(self.daemon.controller.decommission(DECOMMISSIONED, {}))

    @rule(brokers=st.sets(st.sampled_from(BROKERS), min_size=1, max_size=2), seconds=st.integers(0, 120))
    def brokers_down(self, brokers: set[int], seconds: int) -> None:
        """Brokers stop (at most two at once: RF 3 keeps a live replica), and the cluster goes on."""
        for broker in sorted(brokers):
            stopped = [b for b in BROKERS if not self.daemon.sim.brokers[b].online]
            if len(stopped) < 2:
                self.daemon.sim.stop_broker(broker)
        self.checked_for(seconds)

    @rule(broker=st.sampled_from(BROKERS))
    def start_broker(self, broker: int) -> None:
        if not self.daemon.sim.brokers[broker].online:
            self.daemon.sim.start_broker(broker)

    @rule(broker=st.sampled_from(BROKERS), slow=st.booleans())
    def slow_broker(self, broker: int, slow: bool) -> None:
        """A follower slows to a trickle (its partitions fall out of sync, every broker online), or
        recovers."""
        self.daemon.sim.set_network(broker, 1.0 if slow else DEFAULT_NETWORK_BYTES_PER_SEC, None)

    @rule(seconds=st.integers(5, 120))
    def time_passes(self, seconds: int) -> None:
        self.checked_for(seconds)

    def checked_for(self, seconds: float) -> None:
        """Cycles, each followed by a self-healing check, for `seconds` of cluster time."""
        deadline = self.daemon.sim.now + seconds
        while self.daemon.sim.now < deadline:
            self.run(self.daemon.cycle())
            self.run(self.daemon.controller.check_anomalies())
        for anomaly in self.daemon.controller.healing.book.anomalies:
            event(f"a {anomaly.kind.value} anomaly {anomaly.state.value}")

    @rule(data=st.data())
    def approve(self, data: st.DataObject) -> None:
        listed = self.daemon.controller.anomalies()["anomalies"]
        if listed:
            anomaly = data.draw(st.sampled_from(listed))
            try:
                self.run(self.daemon.controller.approve_anomaly(anomaly["id"]))
            except ServiceError as exc:
                assert exc.code == "conflict" and anomaly["state"] != "proposed", exc

    @rule(partition=st.integers(0, 5))
    def operator_plan(self, partition: int) -> None:
        """An operator's own plan: reversed replica order (moves nothing, elects a new leader)."""
        replicas = self.daemon.replicas("t", partition)
        try:
            self.run(self.daemon.submit(plan_of({("t", partition): list(reversed(replicas))})))
        except ServiceError as exc:
            assert exc.code in ("conflict", "invalid_plan", "unavailable"), exc

    @rule()
    def crash(self) -> None:
        self.daemon.crash()
        self.run(self.daemon.controller.start())

    @invariant()
    def one_plan_at_a_time(self) -> None:
        if self.d is None:
            return
        records = self.daemon.controller.records.values()
        assert sum(1 for r in records if r.status.active) <= 1
        fixes = [r for r in records if "anomaly" in r.options and not r.status.terminal]
        assert len(fixes) <= 1, fixes

    @invariant()
    def nothing_onto_the_decommissioned_broker(self) -> None:
        if self.d is None:
            return
        for topic, p in PARTITIONS:
            assert DECOMMISSIONED not in self.daemon.replicas(topic, p)

    @invariant()
    def one_open_anomaly_per_broker(self) -> None:
        if self.d is None:
            return
        open_ = [a for a in self.daemon.controller.healing.book.anomalies if not a.state.terminal]
        brokers = [b for a in open_ if not a.kind.about_partitions for b in a.brokers]
        assert len(brokers) == len(set(brokers)), open_
        assert len({a.key for a in open_}) == len(open_), open_

    @precondition(lambda self: self.d is not None)
    @rule()
    def teardown_check(self) -> None:
        """Brokers back, every plan to its end: nothing left running, no replica on the decommissioned one."""
        for broker in BROKERS:
            self.daemon.sim.set_network(broker, DEFAULT_NETWORK_BYTES_PER_SEC, None)
            if not self.daemon.sim.brokers[broker].online:
                self.daemon.sim.start_broker(broker)
        self.run(self.daemon.run(seconds=3 * 3600))
        assert self.daemon.reassigning() == []

    def teardown(self) -> None:
        self.loop.close()


TestHealingRuns = HealingRuns.TestCase
TestHealingRuns.settings = settings(
    max_examples=40, stateful_step_count=20, deadline=None, suppress_health_check=list(HealthCheck)
)

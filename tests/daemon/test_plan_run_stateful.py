"""Schedules of operator actions, faults and crashes against the real controller, in process, in virtual time.

Hypothesis interleaves submit, pause, resume, cancel, daemon crashes at any effect boundary, broker stops
and starts, whole-cluster outages, a topic deletion, an operator's own throttle writes and live limit
changes, and checks after every step and at the end what an operator would check from the cluster's side:

- every partition of an ended plan is exactly on its target (completed), or on its target or its pre-plan
  list, order included (cancelled); nothing is reassigning, every replica is in sync;
- the per-broker limits hold on the cluster, and the controller's own load matches the cluster's moves;
- no partition went under min.insync.replicas because of us (checked over plans during which no broker
  failed: a failure may take a partition under by itself);
- each step is journaled as started once, every end of a step has its start, and nothing is replayed;
- at the end every throttle config on every broker and topic is byte-identical to before, with the
  operator's own changes (a rate the daemon held only where it lowered that rate while nothing of ours was
  in flight there: issue 31), and the store holds no originals.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from reassignd.daemon.service import ServiceError
from reassignd.engine import Limits
from reassignd.engine.run import progress as run_progress
from reassignd.engine.throttle_book import rate_adopted
from reassignd.model import TopicPartition
from reassignd.sim import errors
from reassignd.sim.errors import KafkaError
from reassignd.store.base import ConfigResource, EventKind, PlanStatus, replayed_steps
from tests.daemon.inprocess import InProcessDaemon, plan_of
from tests.engine.helpers import eta_checked_afresh

MB = 1_000_000
BROKERS = (1, 2, 3, 4, 5, 6)
SCENARIO: dict[str, Any] = {
    "seed": 3,
    "brokers": [{"id": b, "rack": f"/dc1/r{b}"} for b in BROKERS],
    "topics": [
        {
            "name": "a",
            "partitions": 4,
            "replication_factor": 3,
            "partition_bytes": 60 * MB,
            "produce_bytes_per_sec": 100_000,
            "configs": {"min.insync.replicas": "2"},
            "assignment": [[1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 6]],
        },
        {
            "name": "b",
            "partitions": 3,
            "replication_factor": 2,
            "partition_bytes": 30 * MB,
            "produce_bytes_per_sec": 50_000,
            "assignment": [[5, 6], [6, 1], [1, 2]],
        },
    ],
}
LIMITS = {
    "reassignment.parallel.replica.count": 1,
    "reassignment.max.incoming.replica.movements.per.broker": 2,
    "reassignment.max.outgoing.replica.movements.per.broker": 2,
    "leader.reassignment.throttled.rate": 20 * MB,
    "follower.reassignment.throttled.rate": 20 * MB,
}
PARTITIONS = [TopicPartition("a", i) for i in range(4)] + [TopicPartition("b", i) for i in range(3)]
RF = {"a": 3, "b": 2}
INCOMING = "reassignment.max.incoming.replica.movements.per.broker"
OUTGOING = "reassignment.max.outgoing.replica.movements.per.broker"
EXAMPLES = 300


class PlanRuns(RuleBasedStateMachine):
    kafka_mode = "kraft"

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        # every cycle's ETA, from terms kept between cycles, is checked against all terms made again
        self.eta_check = mock.patch.object(
            run_progress, "with_eta", eta_checked_afresh(run_progress.with_eta)
        )
        self.eta_check.start()
        self.d = InProcessDaemon(SCENARIO, LIMITS, kafka_mode=self.kafka_mode)
        self.initial_throttles = self.d.throttle_configs()
        self.operator: list[tuple[str, str, str, str]] = []  # (kind, name, key, value) as SET/APPEND
        self.plans: dict[str, dict[TopicPartition, tuple[tuple[int, ...], tuple[int, ...]]]] = {}
        self.faulty: set[str] = set()  # plans during which a broker failed
        self.under_at_submit: dict[str, dict[TopicPartition, float]] = {}
        self.lowered = False
        self.deleted: set[str] = set()
        self.verified: set[str] = set()

    def teardown(self) -> None:
        try:
            self._finish()
        finally:
            self.eta_check.stop()
            self.loop.close()

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    # -- helpers ------------------------------------------------------------------------------------

    def active(self) -> str | None:
        records = self.d.controller.records
        for plan_id in self.plans:
            record = records.get(plan_id)
            if record is not None and not record.status.terminal:
                return plan_id
        run = self.d.controller.run
        return run.plan_id if run is not None and not run.ended else None

    def down(self) -> list[int]:
        return [b for b in BROKERS if not self.d.sim.brokers[b].online]

    def _mark_fault(self) -> None:
        """A failure may take partitions under min.insync.replicas by itself: every plan not yet checked
        is exempt from that check."""
        self.faulty.update(p for p in self.plans if p not in self.verified)

    def under_min(self) -> dict[TopicPartition, float]:
        return {
            TopicPartition(e["topic"], e["partition"]): e["seconds"]
            for e in self.d.sim.observed()["under_min_isr"]
        }

    # -- rules ----------------------------------------------------------------------------------------

    @precondition(lambda self: self.active() is None)
    @rule(data=st.data())
    def submit(self, data: st.DataObject) -> None:
        self._verify_ended(in_sync=False)
        live = [tp for tp in PARTITIONS if tp.topic not in self.deleted]
        chosen = data.draw(st.lists(st.sampled_from(live), min_size=1, max_size=4, unique=True), "partitions")
        targets = {}
        for tp in chosen:
            replicas = data.draw(st.permutations(BROKERS).map(lambda p, n=RF[tp.topic]: tuple(p[:n])))
            targets[(tp.topic, tp.partition)] = list(replicas)
        plan = plan_of(targets)
        before = {tp: tuple(self.d.replicas(tp.topic, tp.partition)) for tp in plan.targets}
        try:
            plan_id = self.run(self.d.submit(plan))
        except ServiceError:
            return
        self.plans[plan_id] = {tp: (before[tp], plan.targets[tp]) for tp in plan.targets}
        self.under_at_submit[plan_id] = self.under_min()
        if self.down():
            self.faulty.add(plan_id)

    @rule(n=st.integers(1, 4))
    def cycles(self, n: int) -> None:
        for _ in range(n):
            self.run(self.d.cycle())

    @rule(effect=st.integers(0, 14))
    def crash(self, effect: int) -> None:
        self.run(self.d.cycle_crashing_at(effect))

    @rule(verb=st.sampled_from(["pause", "resume", "cancel"]))
    def lifecycle(self, verb: str) -> None:
        try:
            self.run(getattr(self.d.controller, verb)())
        except ServiceError as exc:
            assert exc.code in ("conflict", "not_found"), exc

    @precondition(lambda self: len(self.down()) == 0)
    @rule(broker=st.sampled_from(BROKERS))
    def stop_broker(self, broker: int) -> None:
        self._mark_fault()
        self.d.sim.stop_broker(broker)

    @precondition(lambda self: len(self.down()) > 0)
    @rule()
    def start_brokers(self) -> None:
        for b in self.down():
            self.d.sim.start_broker(b)

    @rule(cycles=st.integers(1, 12))
    def outage(self, cycles: int) -> None:
        """Every broker stopped for a while (up to a minute of cluster time), then started again."""
        self._mark_fault()
        stopped = [b for b in BROKERS if self.d.sim.brokers[b].online]
        for b in stopped:
            self.d.sim.stop_broker(b)
        for _ in range(cycles):
            self.run(self.d.cycle())
        assert self.d.controller.readiness()["ready"] is False
        assert self.d.controller.metrics["reassignd_cluster_reachable"]._value.get() == 0
        for b in stopped:
            self.d.sim.start_broker(b)

    @rule(data=st.data())
    def operator_throttle(self, data: st.DataObject) -> None:
        """An operator's own throttle, on a broker (a rate) or a topic (entries of replicas we never move)."""
        if data.draw(st.booleans(), "on a broker"):
            online = [b for b in BROKERS if self.d.sim.brokers[b].online]
            if not online:
                return
            broker = data.draw(st.sampled_from(online))
            key = data.draw(
                st.sampled_from(["leader.replication.throttled.rate", "follower.replication.throttled.rate"])
            )
            # +1: never a value of ours (a value equal to ours is indistinguishable from ours, by anyone)
            value = str(data.draw(st.integers(1, 50)) * MB + 1)
            held = self.run(self.d.store.original_configs()).get((ConfigResource("broker", str(broker)), key))
            # a rate the daemon holds an original for is the operator's only when rate_adopted says so
            # (lower, nothing of ours in flight): otherwise ours goes back over it and the original at the end
            kept = held is None or rate_adopted(held.value, held.written or (held.value,), value)
            self.d.sim.incremental_alter_configs(4, str(broker), [(key, 0, value)])
            self.run(self.d.cycle())  # judged now, against what the store held when it was written
            if kept:
                self.operator.append(("broker", str(broker), key, value))
        else:
            topic = data.draw(st.sampled_from(sorted(t for t in ("a", "b") if t not in self.deleted)))
            key = data.draw(
                st.sampled_from(
                    ["leader.replication.throttled.replicas", "follower.replication.throttled.replicas"]
                )
            )
            entry = f"{data.draw(st.integers(0, 3))}:{data.draw(st.integers(7, 9))}"  # brokers we never use
            self.d.sim.incremental_alter_configs(2, topic, [(key, 2, entry)])
            self.operator.append(("topic", topic, key, entry))

    @rule(incoming=st.integers(1, 3), outgoing=st.integers(1, 3), replicas=st.integers(1, 2))
    def limits(self, incoming: int, outgoing: int, replicas: int) -> None:
        current = self.d.controller.limits_in_force
        if incoming < current.max_incoming_per_broker or outgoing < current.max_outgoing_per_broker:
            self.lowered = True
        changes = {INCOMING: incoming, OUTGOING: outgoing, "reassignment.parallel.replica.count": replicas}
        self.run(self.d.controller.set_limits(changes))

    @precondition(lambda self: "b" not in self.deleted and self.active() is not None)
    @rule()
    def delete_topic(self) -> None:
        try:
            self.d.sim.delete_topic("b")
        except KafkaError as exc:  # ZooKeeper mode: queued while it has moves or a stopped replica
            assert self.kafka_mode == "zookeeper" and exc.code == errors.REQUEST_TIMED_OUT, exc
        self.deleted.add("b")
        self.initial_throttles.pop("topic b", None)
        self.operator = [op for op in self.operator if op[:2] != ("topic", "b")]

    # -- invariants ------------------------------------------------------------------------------------

    @invariant()
    def limits_hold_on_the_cluster(self) -> None:
        run = self.d.controller.run
        if run is None or run.execution is None:
            return  # a restarted daemon: what it has in flight shows at its first cycle
        if run.ended:
            self.lowered = False
            return
        load = run.execution.load
        if not load.partitions:
            self.lowered = False
        incoming: dict[int, int] = {}
        ours = set(run.execution.in_flight_set)
        for topic, partition, _, adding, _ in self.d.sim.list_partition_reassignments():
            if TopicPartition(topic, partition) in ours:
                for b in adding:
                    incoming[b] = incoming.get(b, 0) + 1
        limits: Limits = self.d.controller.limits_in_force
        if not self.lowered:
            assert all(n <= limits.max_incoming_per_broker for n in incoming.values()), (incoming, limits)
            assert all(n <= limits.max_incoming_per_broker for n in load.incoming.values()), load

    @invariant()
    def each_step_starts_once(self) -> None:
        assert self.d.store.replays == []
        entries = self.d.store.store.journal()
        assert replayed_steps(entries) == []
        started: set[tuple[str | None, TopicPartition | None, int | None]] = set()
        ended: set[tuple[str | None, TopicPartition | None, int | None]] = set()
        for e in entries:
            key = (e.plan_id, e.tp, e.step_index)
            if e.kind is EventKind.STEP_STARTED:
                started.add(key)
            elif e.kind in (EventKind.STEP_FINISHED, EventKind.STEP_CANCELLED):
                assert key in started, f"{e.kind.value} of a step never started: {key}"
                assert key not in ended, f"a step ended twice: {key}"
                ended.add(key)

    # -- the end -------------------------------------------------------------------------------------

    def _verify_ended(self, *, in_sync: bool) -> None:
        """Plans that ended since the last check: each partition where the plan's end left it (a later
        plan may move it again, so this runs before every submit and at the end)."""
        d = self.d
        under = self.under_min()
        moving = {TopicPartition(t, i) for t, i, *_ in d.sim.list_partition_reassignments()}
        for plan_id, partitions in self.plans.items():
            if plan_id in self.verified:
                continue
            status = self.run(d.status_of(plan_id))
            assert status in (PlanStatus.COMPLETED, PlanStatus.CANCELLED), (plan_id, status)
            self.verified.add(plan_id)
            for tp, (before, target) in partitions.items():
                if tp.topic in self.deleted:
                    continue
                assert tp not in moving, (plan_id, tp, "still reassigning")
                replicas = tuple(d.replicas(tp.topic, tp.partition))
                if status is PlanStatus.COMPLETED:
                    assert replicas == target, (plan_id, tp, replicas, target)
                else:
                    assert replicas in (target, before), (plan_id, tp, replicas, before, target)
                p = d.sim.topics[tp.topic].partitions[tp.partition]
                if in_sync:
                    assert sorted(p.isr) == sorted(p.replicas), (tp, p.isr, p.replicas)
            if plan_id not in self.faulty:
                grew = {
                    tp: s - self.under_at_submit[plan_id].get(tp, 0.0)
                    for tp, s in under.items()
                    if tp in partitions and s > self.under_at_submit[plan_id].get(tp, 0.0)
                }
                assert not grew, f"under min.insync.replicas because of us: {grew}"

    def _finish(self) -> None:
        d = self.d
        for b in self.down():
            d.sim.start_broker(b)
        for plan_id in self.plans:
            if self.run(d.status_of(plan_id)) is PlanStatus.PAUSED:
                self.run(d.controller.resume(plan_id))
        self.run(d.run(seconds=6 * 3600))
        self.run(d.cycle())  # one more: a standby-free daemon reads the final state once idle
        assert not d.reassigning(), "nothing left reassigning"
        self._verify_ended(in_sync=True)
        expected = {k: dict(v) for k, v in self.initial_throttles.items()}
        for kind, name, key, value in self.operator:
            configs = expected.setdefault(f"{kind} {name}", {})
            if kind == "broker":
                configs[key] = value
            else:
                entries = [e for e in configs.get(key, "").split(",") if e]
                configs[key] = ",".join([*entries, *([value] if value not in entries else [])])
        assert d.throttle_configs() == expected
        assert self.run(d.store.original_configs()) == {}


class ZooKeeperPlanRuns(PlanRuns):
    """The same schedules against a ZooKeeper-mode controller (Kafka 3.9): its examples are half of the
    budget, so the two modes together cost what one did."""

    kafka_mode = "zookeeper"


for machine in (PlanRuns, ZooKeeperPlanRuns):
    machine.TestCase.settings = settings(
        max_examples=EXAMPLES // 2,
        stateful_step_count=int(os.environ.get("REASSIGND_STATEFUL_STEPS", "20")),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
TestPlanRuns = PlanRuns.TestCase
TestZooKeeperPlanRuns = ZooKeeperPlanRuns.TestCase
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

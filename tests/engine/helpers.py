"""Small builders and a checked driver for engine tests."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pytest

from reassignd.engine.decide import Decision, ElectLeader, acknowledge, decide
from reassignd.engine.dryrun import apply_starts, complete, elect
from reassignd.engine.eta import EtaTerms
from reassignd.engine.limits import Limits
from reassignd.engine.state import MOVING, ExecutionState, Load, Status
from reassignd.engine.tracking import Tracking
from reassignd.model import (
    Broker,
    ClusterSnapshot,
    PartitionState,
    ReassignmentPlan,
    TopicInfo,
    TopicPartition,
)

WithEta = Callable[..., tuple[Tracking, EtaTerms | None]]


def tp(partition: int, topic: str = "t") -> TopicPartition:
    return TopicPartition(topic, partition)


def cluster(
    brokers: int | Iterable[int],
    partitions: Mapping[TopicPartition, tuple[int, ...]],
    *,
    offline: Iterable[int] = (),
    min_insync: int | None = None,
    isr: Mapping[TopicPartition, tuple[int, ...]] | None = None,
    sizes: Mapping[TopicPartition, int] | None = None,
    topic_configs: Mapping[str, Mapping[str, str]] | None = None,
    broker_configs: Mapping[int, Mapping[str, str]] | None = None,
) -> ClusterSnapshot:
    ids = range(brokers) if isinstance(brokers, int) else brokers
    down = set(offline)
    states = []
    for key, replicas in partitions.items():
        in_sync = (isr or {}).get(key, tuple(b for b in replicas if b not in down))
        leader = next((b for b in replicas if b in in_sync), -1)
        size = (sizes or {}).get(key, 1000)
        states.append(
            PartitionState(
                key,
                replicas,
                in_sync,
                leader=leader,
                size_bytes=size,
                replica_sizes=dict.fromkeys(replicas, size),
            )
        )
    topics = {p.topic for p in partitions}
    configs = dict(topic_configs or {})
    return ClusterSnapshot.build(
        [Broker(b, online=b not in down) for b in ids],
        states,
        [TopicInfo(t, configs=configs.get(t, {})) for t in sorted(topics)],
        cluster_configs={"min.insync.replicas": str(min_insync)} if min_insync else {},
        broker_configs=dict(broker_configs or {}),
    )


def check_invariants(
    decision: Decision, snapshot: ClusterSnapshot, limits: Limits, plan: ReassignmentPlan | None = None
) -> None:
    """What must hold after every decision, whatever the inputs."""
    state = decision.state
    recomputed = Load.of(rec for _, rec in state.records.items())
    assert state.load == recomputed, (state.load, recomputed)
    load = state.load
    assert load.partitions <= limits.parallel_partition_count
    assert load.leader_moves <= limits.parallel_leader_movements
    assert all(n <= limits.max_incoming_per_broker for n in load.incoming.values()), load
    # The one exception: a min.insync step may exceed the R-sized caps when it moves alone.
    moving = [rec for _, rec in state.in_flight() if rec.adding]
    if load.replica_moves > limits.max_concurrent_replica_movements:
        assert len(moving) == 1, load
    # Copies started with an election this cycle are served by the old leader until the election runs.
    transient: dict[int, int] = {}
    for start in decision.start:
        old_leader = snapshot.partitions[start.tp].leader
        if start.adding and start.leader != old_leader:
            transient[old_leader] = transient.get(old_leader, 0) + len(start.adding)
    for broker in set(load.outgoing) | set(transient):
        n = load.outgoing.get(broker, 0) + transient.get(broker, 0)
        if n > limits.max_outgoing_per_broker:  # only a min.insync step, and only on a broker that was idle
            assert sum(1 for rec in moving if rec.leader == broker) == 1, load
            assert transient.get(broker, 0) == 0, (broker, transient, load)
    online = snapshot.online_broker_ids()
    for start in decision.start:
        assert len(set(start.target)) == len(start.target), start
        # ZooKeeper mode refuses a step adding a broker that is not alive (KafkaController.validateReplicas,
        # on the replicas reassignTo adds); KRaft accepts it and waits. Neither is ever asked.
        assert set(start.adding) <= online, start
        p = snapshot.partitions[start.tp]
        kept_in_sync = len(set(p.isr) & set(start.target))
        final = state.plan.targets[start.tp]
        needed = min(snapshot.min_insync_replicas(start.tp.topic), len(final))
        assert len(start.adding) <= max(limits.parallel_replica_count, needed - kept_in_sync), start
        leadership = any(e.tp == start.tp and e.reason == "source" for e in decision.elect)
        if leadership or start.target[0] != final[0]:  # a balanced source leads the copies (sources.py)
            assert not start.adding and not start.removing and set(start.target) == set(p.replicas), start
            assert start.target[0] in set(p.isr) & online and start.target[0] != p.leader, start
            assert ElectLeader(start.tp, start.target[0], "source") in decision.elect, start
            # A pure reordering completes at once in both modes (KRaft: PartitionChangeBuilder; ZooKeeper:
            # ReplicaAssignment.isBeingReassigned is false), so an offline follower it keeps is no obstacle.
        elif not set(start.target) <= online:  # a step keeping a stopped broker starts only to copy
            assert start.adding and set(start.adding) <= online, start
        assert kept_in_sync + len(start.adding) >= min(needed, len(set(p.isr) & set(p.replicas))), start
        assert state[start.tp].status is Status.STARTING
    pending = 0
    for key, rec in state.records.items():
        rank = state.rank_of[key]
        queues = (state.queues.urgent, state.queues.leader, state.queues.other)
        queued = [index + 1 for index, q in enumerate(queues) if rank in q]
        assert len(queued) == (1 if rec.status is Status.PENDING else 0), (key, rec)
        assert state.queues.member[rank] == (queued[0] if queued else 0), (key, rec)
        pending += rec.status is Status.PENDING
    assert len(state.queues) == pending
    counts = dict.fromkeys(Status, 0)
    for _, rec in state.records.items():
        counts[rec.status] += 1
    assert dict(state.counts) == counts
    assert state.in_flight_set == {k for k, rec in state.records.items() if rec.status in MOVING}
    assert {k for k, _ in state.waiting()} == {
        k
        for k, rec in state.records.items()
        if rec.status in (Status.PENDING, Status.BLOCKED, Status.EXTERNAL)
    }


def drive(
    snapshot: ClusterSnapshot,
    plan: ReassignmentPlan,
    limits: Limits,
    *,
    max_cycles: int = 500,
    check: bool = True,
) -> tuple[ClusterSnapshot, ExecutionState, list[Decision]]:
    """Decide, apply, complete everything in flight, repeat: the "joins happen" world."""
    state = ExecutionState.initial(plan, snapshot, tuple(limits.ordering))
    decisions: list[Decision] = []
    changed: set[TopicPartition] | None = None
    for _ in range(max_cycles):
        decision = decide(snapshot, plan, state, limits, changed)
        if check:
            check_invariants(decision, snapshot, limits)
        decisions.append(decision)
        snapshot = apply_starts(snapshot, decision.start)
        state = acknowledge(snapshot, decision.state, limits, {})  # Kafka accepted every step
        snapshot = elect(snapshot, decision.elect)  # as the daemon orders them
        if state.finished:
            break
        in_flight = {key for key, _ in state.in_flight()}
        snapshot = complete(snapshot, in_flight)
        changed = in_flight | {e.tp for e in decision.elect}
    return snapshot, state, decisions


def eta_checked_afresh(with_eta: WithEta) -> WithEta:
    """`with_eta` that also computes every term again on the same inputs and checks the kept terms gave
    the same ETA and the same terms and sums (a stale term off the bottleneck changes no ETA, yet): the
    incremental update misses no partition that changed."""

    def checked(*args: Any, **kwargs: Any) -> tuple[Tracking, EtaTerms | None]:
        kept = with_eta(*args, **kwargs)
        if kwargs.get("previous") is not None:
            afresh, made = with_eta(*args, **{**kwargs, "previous": None, "candidates": None})
            terms = kept[1]
            if made is not None and terms is not None:  # every term, not only the one that bounds the ETA
                differing = set(terms.terms.items()) ^ set(made.terms.items())
                assert not differing, differing
                assert dict(terms.blocked) == dict(made.blocked)
                for ours, theirs in ((terms.into, made.into), (terms.out, made.out)):
                    assert ours.keys() == theirs.keys()
                    for broker, load in ours.items():
                        assert load.copies == theirs[broker].copies
                        assert load.left == pytest.approx(theirs[broker].left, rel=1e-9, abs=1e-3)
                        assert load.produce == pytest.approx(theirs[broker].produce, rel=1e-9, abs=1e-6)
            assert afresh.eta_reason == kept[0].eta_reason, (afresh.eta, kept[0].eta)
            if afresh.eta is None or kept[0].eta is None:
                assert afresh.eta == kept[0].eta
            else:
                assert kept[0].eta == pytest.approx(afresh.eta, rel=1e-9, abs=1e-6), afresh.eta_reason
        return kept

    return checked

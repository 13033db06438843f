"""Property test: any sequence of admin calls, failures and time keeps the model's state and indexes sound."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassignd.sim import KafkaError, SimCluster, load_scenario, views

BROKERS = list(range(1, 7))
MB = 1_000_000
ZOOKEEPER = {"version": "3.9", "mode": "zookeeper"}


def _fresh(kafka: dict[str, str] | None = None) -> SimCluster:
    return SimCluster.from_scenario(
        load_scenario(
            {
                "seed": 3,
                **({"kafka": kafka} if kafka else {}),
                "brokers": [
                    {
                        "id": b,
                        "rack": f"r{b % 3}",
                        "network_in_bytes_per_sec": 20 * MB,
                        "log_dirs": ["/d0", "/d1"],
                        "log_dir_copy_bytes_per_sec": 10 * MB,
                    }
                    for b in BROKERS
                ],
                "topics": [
                    {
                        "name": "a",
                        "partitions": 4,
                        "replication_factor": 3,
                        "partition_bytes": 30 * MB,
                        "produce_bytes_per_sec": [0, MB, 2 * MB, 0],
                        "configs": {"min.insync.replicas": "2"},
                    },
                    {"name": "b", "partitions": 2, "replication_factor": 2, "partition_bytes": 5 * MB},
                ],
            }
        )
    )


operation = st.one_of(
    st.tuples(
        st.just("move"),
        st.sampled_from("ab"),
        st.integers(0, 3),
        st.lists(st.sampled_from(BROKERS), min_size=1, max_size=4, unique=True),
    ),
    st.tuples(st.just("cancel"), st.sampled_from("ab"), st.integers(0, 3)),
    st.tuples(st.just("stop"), st.sampled_from(BROKERS)),
    st.tuples(st.just("start"), st.sampled_from(BROKERS)),
    st.tuples(st.just("advance"), st.floats(0, 30)),
    st.tuples(st.just("throttle"), st.sampled_from(["", "*", "0:1,1:4,2:5"]), st.integers(0, 5 * MB)),
    st.tuples(st.just("produce"), st.sampled_from("ab"), st.floats(0, 3 * MB)),
    st.tuples(st.just("elect"), st.sampled_from([0, 1])),
    st.tuples(
        st.just("logdir"),
        st.sampled_from("ab"),
        st.integers(0, 3),
        st.sampled_from(BROKERS),
        st.integers(0, 1),
    ),
)


def _apply(sim: SimCluster, op: tuple[Any, ...]) -> None:
    kind = op[0]
    try:
        if kind == "move":
            sim.alter_partition_reassignment(op[1], op[2] % len(sim.topics[op[1]].partitions), op[3])
        elif kind == "cancel":
            sim.alter_partition_reassignment(op[1], op[2] % len(sim.topics[op[1]].partitions), None)
        elif kind == "stop":
            sim.stop_broker(op[1])
        elif kind == "start":
            sim.start_broker(op[1])
        elif kind == "advance":
            sim.advance(op[1])
        elif kind == "throttle":
            sim.incremental_alter_configs(
                2, "a", [("follower.replication.throttled.replicas", 0, op[1])], False
            )
            sim.incremental_alter_configs(
                4, "", [("follower.replication.throttled.rate", 0, str(op[2]))], False
            )
        elif kind == "produce":
            sim.set_produce_rate(op[1], None, op[2])
        elif kind == "logdir":
            sim.alter_replica_log_dir(op[3], op[1], op[2] % len(sim.topics[op[1]].partitions), f"/d{op[4]}")
        else:
            sim.elect_leaders(op[1], None)
    except KafkaError:
        pass


def _check(sim: SimCluster) -> None:
    fetching = set()
    incoming: Counter[int] = Counter()
    outgoing: Counter[int] = Counter()
    on_broker: dict[int, set[Any]] = {b: set() for b in BROKERS}
    zookeeper = sim.kafka.zookeeper
    for topic in sim.topics.values():
        for p in topic.partitions:
            replicas, isr = p.replicas, p.isr
            assert len(set(replicas)) == len(replicas) and isr
            # ZooKeeper mode: a cancel that strips the ISR down to an adding replica leaves it there,
            # leaderless (doRemoveReplicasFromIsr never empties the ISR)
            assert set(isr) <= set(replicas) or (zookeeper and p.leader == -1 and len(isr) == 1)
            assert set(p.adding) <= set(replicas) and set(p.removing) <= set(replicas)
            # adding and removing may overlap: KRaft keeps the previous adding list when a new target adds
            # nothing (changePartitionReassignment only sets non-empty lists); so does the model.
            if zookeeper:
                assert not set(p.adding) & set(p.removing)
            if p.leader != -1:
                assert p.leader in isr and sim.brokers[p.leader].online
                assert all(sim.brokers[r].online for r in isr)
            elif not zookeeper:  # ZooKeeper mode: a retarget that stops the leader leaves a live ISR
                assert len(isr) == 1 or not any(sim.brokers[r].online for r in isr)
            end = p.log_end
            for b in replicas:
                assert 0 <= p.position(b) <= end
                on_broker[b].add(p)
                if b not in isr:
                    if p.leader != -1 and sim.brokers[b].online:
                        fetching.add((p, b))
                    if b in p.adding:
                        incoming[b] += 1
                        if p.leader != -1:
                            outgoing[p.leader] += 1
    assert set(sim._fetching) == fetching
    assert {b: n for b, n in sim._incoming.items() if n} == dict(incoming)
    assert {b: n for b, n in sim._outgoing.items() if n} == dict(outgoing)
    assert {b: ps for b, ps in sim._replicas_on.items() if ps} == {b: ps for b, ps in on_broker.items() if ps}
    moving = {(p.topic, p.index) for t in sim.topics.values() for p in t.partitions if p.is_reassigning}
    assert {(t, i) for t, i, *_ in sim.list_partition_reassignments(None)} == moving
    observed = sim.observed()["brokers"]
    assert all(b["incoming_peak"] >= b["incoming"] and b["outgoing_peak"] >= b["outgoing"] for b in observed)
    # log dirs: one dir per replica, future logs only for hosted replicas, the running byte totals exact
    for b in BROKERS:
        brute: dict[str, float] = {"/d0": 0.0, "/d1": 0.0}
        for p in on_broker[b]:
            brute[sim.dir_of(p, b)] += p.position_exact(b)
        for (p, fb), future in sim._futures.items():
            assert fb in p.replicas and future.path != sim.dir_of(p, fb)
            if fb == b:
                brute[future.path] += future.progress.at(sim.now)
        used = views.bytes_per_log_dir(sim, b)
        assert all(abs(used[d] - brute[d]) <= 1 + 1e-9 * brute[d] for d in brute), (used, brute)


@pytest.mark.parametrize("kafka", [None, ZOOKEEPER], ids=["kraft", "zookeeper"])
@settings(max_examples=60, deadline=None)
@given(ops=st.lists(operation, max_size=25))
def test_any_sequence_keeps_state_and_indexes_sound(
    kafka: dict[str, str] | None, ops: list[tuple[Any, ...]]
) -> None:
    sim = _fresh(kafka)
    epochs = {}
    for op in ops:
        _apply(sim, op)
        _check(sim)
        for t in sim.topics.values():
            for p in t.partitions:
                key = (p.topic, p.index)
                assert (p.leader_epoch, p.partition_epoch) >= epochs.get(key, (0, 0))
                epochs[key] = (p.leader_epoch, p.partition_epoch)
    # Liveness: with every broker up, no throttle and no produce, every move finishes.
    for b in BROKERS:
        sim.start_broker(b)
    sim.incremental_alter_configs(4, "", [("follower.replication.throttled.rate", 1, None)], False)
    sim.set_produce_rate("a", None, 0)
    if sim.kafka.zookeeper:  # a partition left leaderless by a retarget waits for an election
        sim.elect_leaders(1, None)
    sim.advance(3600)
    _check(sim)
    assert sim.list_partition_reassignments(None) == []
    assert sim._futures == {}  # every move between log dirs has finished too


@pytest.mark.parametrize("seconds", [-1.0, float("nan"), float("inf")])
def test_bad_durations_and_rates_are_rejected(seconds: float) -> None:
    sim = _fresh()
    with pytest.raises(ValueError, match="finite, non-negative"):
        sim.advance(seconds)
    with pytest.raises(ValueError, match="finite, non-negative"):
        sim.advance_until_settled(seconds)
    with pytest.raises(ValueError, match="finite, non-negative"):
        sim.set_produce_rate("a", None, seconds)
    assert sim.now == 0.0

"""Balanced sources (engine/sources.py): which in-sync replica serves a partition's copies."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reassignd.engine.decide import decide
from reassignd.engine.dryrun import apply_starts, complete
from reassignd.engine.limits import Limits
from reassignd.engine.sources import Server, assign_servers, served_by_leader
from reassignd.engine.state import ExecutionState
from reassignd.model import ClusterSnapshot, ReassignmentPlan, TopicPartition

from .helpers import cluster, drive, tp


def serving_bytes(
    snapshot: ClusterSnapshot, plan: ReassignmentPlan, servers: dict[TopicPartition, Server] | None = None
) -> dict[int, int]:
    """Bytes each broker serves under the step rule, with `servers` replacing leaders where given."""
    load: dict[int, int] = {}
    for key, final in plan.targets.items():
        p = snapshot.partitions[key]
        new = [b for b in final if b not in p.replicas]
        by_leader = served_by_leader(p.replicas, final)
        source = (servers or {}).get(key)
        first = source.serving if source else p.leader
        load[first] = load.get(first, 0) + p.size_bytes * by_leader
        if by_leader < len(new):
            load[final[0]] = load.get(final[0], 0) + p.size_bytes * (len(new) - by_leader)
    return load


# (name, replicas, targets, sizes, isr, expected {partition: (leader, serving)})
CASES = [
    (
        "leaders spread: nothing moves",
        {0: (0, 1), 1: (1, 2), 2: (2, 0)},
        {0: (3, 1), 1: (4, 2), 2: (5, 0)},
        {},
        {},
        {},
    ),
    (
        "one leader serves all: every other partition goes to the idle in-sync follower",
        dict.fromkeys(range(4), (0, 1)),
        {i: (0, 1, 2 + i) for i in range(4)},
        {},
        {},
        {1: (0, 1), 3: (0, 1)},
    ),
    (
        "largest first: the leader keeps its largest partition, the smaller one moves",
        {0: (0, 1), 1: (0, 1)},
        {0: (0, 1, 2), 1: (0, 1, 3)},
        {0: 1000, 1: 3000},
        {},
        {0: (0, 1)},
    ),
    (
        "follower out of sync: no candidate",
        dict.fromkeys(range(4), (0, 1)),
        {i: (0, 1, 2 + i) for i in range(4)},
        {},
        dict.fromkeys(range(4), (0,)),
        {},
    ),
    (
        "new preferred leader with a second copy after it: it serves that copy, the leader stays",
        dict.fromkeys(range(4), (0, 1, 2)),
        {i: (3 + 2 * i, 4 + 2 * i, 1) for i in range(4)},
        {},
        {},
        {},
    ),
    (
        "drain: a new preferred leader is the one copy, so a staying follower may serve it",
        dict.fromkeys(range(4), (9, 1, 2)),
        {i: (3 + i, 1, 2) for i in range(4)},
        {},
        {},
        {1: (9, 1), 2: (9, 2)},  # then every source serves 2,000 bytes: moving more would not help
    ),
]


def test_assignment_table() -> None:
    for name, replicas, targets, sizes, isr, expected in CASES:
        partitions = {tp(i): r for i, r in replicas.items()}
        snapshot = cluster(
            12,
            partitions,
            sizes={tp(i): s for i, s in sizes.items()},
            isr={tp(i): s for i, s in isr.items()} or None,
        )
        plan = ReassignmentPlan({tp(i): t for i, t in targets.items()})
        got = {key.partition: (s.leader, s.serving) for key, s in assign_servers(plan, snapshot).items()}
        assert got == expected, name


def test_done_partitions_are_left_out() -> None:
    snapshot = cluster(8, {tp(i): (0, 1) for i in range(4)})
    plan = ReassignmentPlan({tp(i): (0, 1, 2 + i) for i in range(4)})
    assert assign_servers(plan, snapshot, frozenset(tp(i) for i in range(3))) == {}


@st.composite
def source_heavy(draw: st.DrawFn) -> tuple[ClusterSnapshot, ReassignmentPlan]:
    brokers = draw(st.integers(4, 9))
    parts, targets, sizes, isr = {}, {}, {}, {}
    for i in range(draw(st.integers(1, 14))):
        ids = draw(st.permutations(range(brokers)))
        current = tuple(ids[: draw(st.integers(1, 3))])
        final = tuple(draw(st.permutations(range(brokers)))[: draw(st.integers(1, 3))])
        if draw(st.booleans()):  # keep the leader: copies served by whoever leads
            final = (current[0], *(b for b in final if b != current[0]))[: max(1, len(final))]
        key = tp(i)
        parts[key], targets[key] = current, final
        sizes[key] = draw(st.integers(1, 10**6))
        isr[key] = tuple(b for b in current if b == current[0] or draw(st.booleans()))
    return cluster(brokers, parts, sizes=sizes, isr=isr), ReassignmentPlan(targets)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source_heavy())
def test_balancing_never_makes_the_busiest_source_busier(
    case: tuple[ClusterSnapshot, ReassignmentPlan],
) -> None:
    snapshot, plan = case
    servers = dict(assign_servers(plan, snapshot))
    for key, server in servers.items():
        p = snapshot.partitions[key]
        assert server.leader == p.leader != server.serving
        assert server.serving in p.isr and server.serving in p.replicas
        final = plan.targets[key]
        assert served_by_leader(p.replicas, final) == sum(1 for b in final if b not in p.replicas)
    before = serving_bytes(snapshot, plan)
    after = serving_bytes(snapshot, plan, servers)
    assert max(after.values(), default=0) <= max(before.values(), default=0)
    if servers:  # only moved when the leaders were the bottleneck
        receiving: dict[int, int] = {}
        copied: list[int] = []
        for key, final in plan.targets.items():
            p = snapshot.partitions[key]
            for b in final:
                if b not in p.replicas:
                    receiving[b] = receiving.get(b, 0) + p.size_bytes
                    copied.append(p.size_bytes)
        floor = max([*receiving.values(), *copied])
        assert max(before.values()) > floor


def test_a_drain_runs_on_balanced_sources_and_ends_on_the_preferred_leaders() -> None:
    # Broker 9 leads every partition being drained; 1 and 2 are in sync and idle.
    snapshot = cluster(12, {tp(i): (9, 1, 2) for i in range(6)})
    plan = ReassignmentPlan({tp(i): (3 + i, 1, 2) for i in range(6)})
    for balance in (True, False):
        limits = Limits(max_outgoing_per_broker=2, balance_sources=balance)
        final, state, decisions = drive(snapshot, plan, limits)
        assert state.finished
        assert all(final.partitions[k].replicas == t for k, t in plan.targets.items())
        assert all(final.partitions[k].leader == t[0] for k, t in plan.targets.items())
        sources = {s.leader for d in decisions for s in d.start if s.adding}
        handed = [e for d in decisions for e in d.elect if e.reason == "source"]
        if balance:
            assert sources == {9, 1, 2} and len(handed) == 4
            assert len(decisions) < 5  # three leaders serve at once, two copies each
        else:
            assert sources == {9} and not handed


def test_no_balancing_without_the_final_election_or_in_batch_mode() -> None:
    snapshot = cluster(12, {tp(i): (9, 1, 2) for i in range(6)})
    plan = ReassignmentPlan({tp(i): (3 + i, 1, 2) for i in range(6)})
    for limits in (Limits(elect_after_finish=False), Limits(scheduling_mode="batch")):
        _, _, decisions = drive(snapshot, plan, limits)
        assert not [e for d in decisions for e in d.elect if e.reason == "source"]


def test_a_leadership_step_whose_election_failed_is_not_repeated() -> None:
    snapshot = cluster(12, {tp(i): (9, 1, 2) for i in range(2)})
    plan = ReassignmentPlan({tp(i): (3 + i, 1, 2) for i in range(2)})
    limits = Limits()
    first = decide(snapshot, plan, ExecutionState.initial(plan, snapshot), limits)
    handed = [s for s in first.start if not s.adding]
    assert [s.target for s in handed] == [(1, 9, 2)]
    reordered = apply_starts(snapshot, first.start)  # the election is lost: broker 9 still leads
    changed = {s.tp for s in first.start}
    second = decide(complete(reordered), plan, first.state, limits, changed)
    again = [s for s in second.start if s.tp == handed[0].tp]
    assert [(s.adding, s.leader) for s in again] == [((4,), 9)]
    assert not [e for e in second.elect if e.reason == "source"]


def test_a_dead_broker_is_drained_from_balanced_sources() -> None:
    # Broker 15 died; each partition replaces it. A leadership step only reorders, which Kafka applies at
    # once whatever the ISR, so it may keep the dead replica; the copy step after it drops the replica.
    snapshot = cluster(16, {tp(i): (9, 1, 2, 15) for i in range(6)}, offline=[15])
    plan = ReassignmentPlan({tp(i): (9, 1, 2, 3 + i) for i in range(6)})
    final, state, decisions = drive(snapshot, plan, Limits(max_outgoing_per_broker=2))
    assert state.finished
    assert all(final.partitions[k].replicas == t for k, t in plan.targets.items())
    reorders = [s for d in decisions for s in d.start if not s.adding]
    assert reorders and all(15 in s.target and s.target[0] in (1, 2) for s in reorders)
    assert {s.leader for d in decisions for s in d.start if s.adding} == {9, 1, 2}
    assert all(15 not in s.target for d in decisions for s in d.start if s.adding)

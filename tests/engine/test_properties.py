"""Property-based tests over random clusters, plans and limits (the issue's "Done when" list)."""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from reassignd import config_keys
from reassignd.engine.decide import acknowledge, decide
from reassignd.engine.dryrun import apply_starts, complete, elect
from reassignd.engine.limits import ORDERING_KEYS, Limits
from reassignd.engine.state import ExecutionState
from reassignd.engine.steps import all_steps, next_step
from reassignd.engine.throttle import (
    BROKER_KEYS,
    TOPIC_KEYS,
    ThrottleOriginals,
    apply_writes,
    config_writes,
    moves_in_flight,
    split_entries,
    throttle_plan,
)
from reassignd.model import ClusterSnapshot, ReassignmentPlan, TopicPartition

from .helpers import check_invariants, cluster

PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def replica_lists(draw: st.DrawFn, brokers: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    ids = list(range(brokers))
    current = tuple(draw(st.permutations(ids))[: draw(st.integers(1, min(4, brokers)))])
    final = tuple(draw(st.permutations(ids))[: draw(st.integers(1, min(4, brokers)))])
    return current, final


@st.composite
def limits_strategy(draw: st.DrawFn) -> Limits:
    keys = draw(st.permutations([k for k in ORDERING_KEYS if k != "smaller_first"]))
    return Limits(
        parallel_replica_count=draw(st.integers(1, 3)),
        parallel_partition_count=draw(st.integers(1, 8)),
        parallel_leader_movements=draw(st.integers(1, 8)),
        max_concurrent_replica_movements=draw(st.integers(1, 10)),
        max_incoming_per_broker=draw(st.integers(1, 5)),
        max_outgoing_per_broker=draw(st.integers(1, 5)),
        scheduling_mode=draw(st.sampled_from(["continuous", "batch"])),
        ordering=tuple(keys[: draw(st.integers(0, len(keys)))]),
        leader_throttled_rate=draw(st.one_of(st.none(), st.integers(1, 10**9))),
        follower_throttled_rate=draw(st.one_of(st.none(), st.integers(1, 10**9))),
    )


@st.composite
def scenarios(draw: st.DrawFn, with_trouble: bool) -> tuple[ClusterSnapshot, ReassignmentPlan]:
    brokers = draw(st.integers(3, 8))
    count = draw(st.integers(1, 12))
    parts: dict[TopicPartition, tuple[int, ...]] = {}
    targets: dict[TopicPartition, tuple[int, ...]] = {}
    isr: dict[TopicPartition, tuple[int, ...]] = {}
    for i in range(count):
        key = TopicPartition(draw(st.sampled_from(["a", "b"])), i)
        current, final = draw(replica_lists(brokers))
        parts[key], targets[key] = current, final
        if with_trouble:
            isr[key] = tuple(b for b in current if draw(st.booleans()))
    offline = draw(st.sets(st.integers(0, brokers - 1), max_size=2)) if with_trouble else set()
    min_insync = draw(st.integers(1, 3))
    snapshot = cluster(brokers, parts, offline=offline, min_insync=min_insync, isr=isr or None)
    return snapshot, ReassignmentPlan(targets)


@PROPERTY
@given(
    st.integers(3, 8).flatmap(replica_lists),
    st.data(),
    st.integers(1, 4),
    st.integers(1, 4),
)
def test_every_step_is_well_formed(
    lists: tuple[tuple[int, ...], tuple[int, ...]], data: st.DataObject, r: int, min_insync: int
) -> None:
    current, final = lists
    isr = data.draw(st.sets(st.sampled_from(current)))
    step = next_step(current, final, isr, r, min_insync)
    if current == final:
        assert step is None
        return
    assert step is not None
    assert len(set(step.target)) == len(step.target)
    assert set(step.adding) <= set(final) - set(current)
    assert set(step.removing) <= set(current) - set(final)
    kept_in_sync = len(set(isr) & set(step.target))
    needed = min(min_insync, len(final))
    assert len(step.adding) <= max(r, needed - kept_in_sync)
    if not step.blocked:
        assert step.target[0] == final[0]
    assert step.insync_after >= min(needed, len(set(isr)))
    sequence = all_steps(current, final, r, min_insync)
    assert sequence[0] == current and sequence[-1] == final  # the last step equals FTR, order included
    assert len(sequence) <= len(current) + len(final) + 2
    for before, after in pairwise(sequence):
        assert len(set(after)) == len(after)
        assert len(set(after) - set(before)) <= max(r, min(min_insync, len(final)))


@PROPERTY
@given(scenarios(with_trouble=True), limits_strategy(), st.data())
def test_no_decision_breaks_a_limit_or_a_safety_rule(
    scenario: tuple[ClusterSnapshot, ReassignmentPlan], limits: Limits, data: st.DataObject
) -> None:
    snapshot, plan = scenario
    state = ExecutionState.initial(plan, snapshot, tuple(limits.ordering))
    changed: set[TopicPartition] | None = None
    for _ in range(data.draw(st.integers(1, 8))):
        decision = decide(snapshot, plan, state, limits, changed)
        check_invariants(decision, snapshot, limits)
        snapshot = apply_starts(snapshot, decision.start)
        crashed = data.draw(st.booleans())  # a restart before Kafka's answer was recorded: rows say STARTING
        state = decision.state if crashed else acknowledge(snapshot, decision.state, limits, {})
        snapshot = elect(snapshot, decision.elect)  # as the daemon orders them
        in_flight = sorted(key for key, _ in state.in_flight())
        finishing = set(data.draw(st.lists(st.sampled_from(in_flight), unique=True))) if in_flight else set()
        snapshot = complete(snapshot, finishing)
        flapping = data.draw(st.sets(st.sampled_from(sorted(snapshot.brokers)), max_size=1))
        snapshot = snapshot.with_brokers(
            [replace(snapshot.brokers[b], online=not snapshot.brokers[b].online) for b in flapping]
        )
        changed = finishing | {e.tp for e in decision.elect}
        if crashed or data.draw(st.booleans()):
            changed = None  # a full reconcile must agree with the incremental bookkeeping


# Found by CI: a min.insync step may exceed the outgoing cap of its idle leader (broker 2) while another
# partition's step is served for an instant by its old leader (broker 0) before this cycle's election.
CI_EXCEEDS_IDLE_BROKER = (
    cluster(5, {TopicPartition("a", 0): (0,), TopicPartition("a", 1): (2,)}, min_insync=3),
    ReassignmentPlan({TopicPartition("a", 0): (1, 2), TopicPartition("a", 1): (0, 1, 2)}),
)


@PROPERTY
@given(scenarios(with_trouble=False), limits_strategy())
@example(
    CI_EXCEEDS_IDLE_BROKER,
    Limits(
        parallel_replica_count=1,
        parallel_partition_count=2,
        parallel_leader_movements=1,
        max_concurrent_replica_movements=3,
        max_incoming_per_broker=1,
        max_outgoing_per_broker=1,
    ),
)
def test_every_plan_finishes_in_bounded_steps_when_joins_happen(
    scenario: tuple[ClusterSnapshot, ReassignmentPlan], limits: Limits
) -> None:
    snapshot, plan = scenario
    bound = sum(len(all_steps(snapshot.partitions[k].replicas, f, 1)) + 1 for k, f in plan.targets.items())
    state = ExecutionState.initial(plan, snapshot, tuple(limits.ordering))
    changed: set[TopicPartition] | None = None
    steps = 0
    for cycle in range(bound + 2):  # noqa: B007 - reported below
        decision = decide(snapshot, plan, state, limits, changed)
        check_invariants(decision, snapshot, limits)
        state = decision.state
        steps += len(decision.start)
        snapshot = elect(apply_starts(snapshot, decision.start), decision.elect)  # as the daemon orders them
        if state.finished:
            break
        in_flight = {key for key, _ in state.in_flight()}
        snapshot = complete(snapshot, in_flight)
        changed = in_flight | {e.tp for e in decision.elect}
    else:
        raise AssertionError(f"not finished after {cycle + 1} cycles: {decision.summary()}")
    for key, final in plan.targets.items():
        assert snapshot.partitions[key].replicas == final
    assert steps <= bound


@st.composite
def operator_throttles(draw: st.DrawFn, snapshot: ClusterSnapshot) -> ClusterSnapshot:
    topics = dict(snapshot.topics)
    for name, info in topics.items():
        configs = {}
        for key in TOPIC_KEYS:
            kind = draw(st.sampled_from(["none", "star", "list"]))
            if kind == "star":
                configs[key] = "*"
            elif kind == "list":
                entries = draw(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 7)), min_size=1))
                configs[key] = ",".join(dict.fromkeys(f"{p}:{b}" for p, b in entries))
        topics[name] = replace(info, configs=configs)
    broker_configs = {
        b: {key: str(draw(st.integers(1, 10**6))) for key in BROKER_KEYS if draw(st.booleans())}
        for b in snapshot.brokers
    }
    return replace(snapshot, topics=topics, broker_configs=broker_configs)


@PROPERTY
@given(
    scenarios(with_trouble=False).flatmap(lambda s: st.tuples(operator_throttles(s[0]), st.just(s[1]))),
    st.sampled_from(["keep", "add"]),
)
def test_operator_throttles_survive_and_are_restored(
    scenario: tuple[ClusterSnapshot, ReassignmentPlan], policy: str
) -> None:
    """keep: an operator's rate is never changed; add: it is theirs plus ours while we use the broker.
    Either way every operator value is exactly back at the end."""
    snapshot, plan = scenario
    limits = Limits(
        parallel_replica_count=2,
        leader_throttled_rate=1000,
        follower_throttled_rate=2000,
        operator_rate_policy=policy,
    )
    before = snapshot
    owned = {}
    for key in plan.targets:
        owned.setdefault(key.topic, set()).add(key.partition)
    owned_frozen = {t: frozenset(p) for t, p in owned.items()}
    originals = ThrottleOriginals()
    state = ExecutionState.initial(plan, snapshot, tuple(limits.ordering))
    changed: set[TopicPartition] | None = None
    for _ in range(200):
        decision = decide(snapshot, plan, state, limits, changed)
        state = decision.state
        snapshot = elect(apply_starts(snapshot, decision.start), decision.elect)  # as the daemon orders them
        throttles = throttle_plan(snapshot, moves_in_flight(state), limits, originals, owned_frozen)
        originals = throttles.originals
        snapshot = apply_writes(snapshot, config_writes(throttles, snapshot))
        assert config_writes(throttles, snapshot) == ()  # applied: nothing left to write
        _assert_operator_values_survive(before, snapshot, limits)
        for move in moves_in_flight(state):
            followers = snapshot.topic_config(
                move.tp.topic, config_keys.FOLLOWER_REPLICATION_THROTTLED_REPLICAS
            )
            if split_entries(followers) != ["*"]:
                assert {f"{move.tp.partition}:{b}" for b in move.adding} <= set(split_entries(followers))
            for broker in move.adding:
                assert (
                    snapshot.broker_config(broker, config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE)
                    is not None
                )
        if state.finished:
            break
        in_flight = {key for key, _ in state.in_flight()}
        snapshot = complete(snapshot, in_flight)
        changed = in_flight | {e.tp for e in decision.elect}
    final_plan = throttle_plan(snapshot, (), limits, originals, owned_frozen)
    snapshot = apply_writes(snapshot, config_writes(final_plan, snapshot))
    for name, info in before.topics.items():
        for key in TOPIC_KEYS:
            assert snapshot.topic_config(name, key) == info.configs.get(key)
    for broker in before.brokers:
        for key in BROKER_KEYS:
            assert snapshot.broker_config(broker, key) == before.broker_config(broker, key)


def _assert_operator_values_survive(before: ClusterSnapshot, now: ClusterSnapshot, limits: Limits) -> None:
    for name, info in before.topics.items():
        for key, value in info.configs.items():
            if value.strip() == "*":
                assert now.topic_config(name, key) == value
            else:
                assert set(split_entries(value)) <= set(split_entries(now.topic_config(name, key)))
    ours = {
        config_keys.LEADER_REPLICATION_THROTTLED_RATE: limits.leader_throttled_rate,
        config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE: limits.follower_throttled_rate,
        config_keys.REPLICA_ALTER_LOG_DIRS_IO_MAX_BYTES_PER_SECOND: limits.log_dir_throttled_rate,
    }
    for broker, configs in before.broker_configs.items():
        for key, value in configs.items():
            allowed = {value}
            if limits.operator_rate_policy == "add":
                allowed.add(str(int(value) + int(ours[key] or 0)))
            assert now.broker_config(broker, key) in allowed

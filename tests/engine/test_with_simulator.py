"""The engine driving the simulator's pure model (reassignd/sim/model.py) in virtual time.

Replication there takes time and honours KIP-73 throttles, so this checks what the instant fake cannot:
steps complete only when Kafka's rule says so, throttles are set and restored on a cluster that applies
them, and the whole plan lands.
"""

from __future__ import annotations

from reassignd import config_keys
from reassignd.engine.decide import changed_partitions, decide
from reassignd.engine.limits import Limits
from reassignd.engine.state import ExecutionState
from reassignd.engine.throttle import ThrottleOriginals, config_writes, moves_in_flight, throttle_plan
from reassignd.model import ReassignmentPlan
from reassignd.sim.model import ELECTION_PREFERRED, SimCluster
from reassignd.sim.scenario import scenario_from_snapshot

from .helpers import check_invariants, cluster, tp

OPS = {"SET": 0, "DELETE": 1, "APPEND": 2, "SUBTRACT": 3}
RESOURCE = {"topic": 2, "broker": 4}


def test_plan_lands_on_the_simulated_cluster_with_throttles_restored() -> None:
    parts = {tp(i): (i % 3, (i + 1) % 3, (i + 2) % 3) for i in range(6)}
    start = cluster(
        6,
        parts,
        sizes=dict.fromkeys(parts, 20_000_000),
        topic_configs={"t": {config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS: "5:2"}},
    )
    plan = ReassignmentPlan(
        {key: (3 + i % 3, 3 + (i + 1) % 3, 3 + (i + 2) % 3) for i, key in enumerate(parts)}
    )
    sim = SimCluster.from_scenario(scenario_from_snapshot(start), seed=1)
    limits = Limits(
        parallel_replica_count=1,
        parallel_partition_count=3,
        leader_throttled_rate=10_000_000,
        follower_throttled_rate=10_000_000,
    )
    snapshot = sim.to_snapshot()
    state = ExecutionState.initial(plan, snapshot, tuple(limits.ordering))
    originals = ThrottleOriginals()
    owned = {"t": frozenset(key.partition for key in plan.targets)}
    previous = None
    throttled_cycles = 0
    for cycle in range(2000):  # noqa: B007 - checked after the loop
        changed = None if previous is None else changed_partitions(previous, snapshot)
        decision = decide(snapshot, plan, state, limits, changed)
        check_invariants(decision, snapshot, limits)
        state = decision.state
        throttles = throttle_plan(snapshot, moves_in_flight(state), limits, originals, owned)
        originals = throttles.originals
        for write in config_writes(throttles, snapshot):
            op = (write.key, OPS[write.op], write.value)
            sim.incremental_alter_configs(RESOURCE[write.resource], write.name, [op])
        current = sim.to_snapshot()
        if any(current.broker_config(b, "follower.replication.throttled.rate") for b in current.brokers):
            throttled_cycles += 1
        if decision.elect:
            sim.elect_leaders(ELECTION_PREFERRED, [(e.tp.topic, e.tp.partition) for e in decision.elect])
        for step in decision.start:
            sim.alter_partition_reassignment(step.tp.topic, step.tp.partition, list(step.target))
        if state.finished:
            break
        sim.advance(1.0)
        previous, snapshot = snapshot, sim.to_snapshot()
    else:
        raise AssertionError(f"plan not finished: {decision.summary()}")
    final = sim.to_snapshot()
    # 6 partitions x 3 replicas of 20 MB at 10 MB/s, 3 at a time: it takes virtual time (less than the rate
    # alone says: Kafka's quota window lets an idle leader's first ~11 s through at once), throttled on every
    # cycle but the first (nothing written yet) and the last (restored)
    assert cycle > 10 and throttled_cycles >= cycle - 2, (cycle, throttled_cycles)
    for key, target in plan.targets.items():
        assert final.partitions[key].replicas == target
    # the steps that start with a new preferred leader alone came first (KIP-435)
    assert all(state[key].step >= 3 for key in plan.targets)
    throttles = throttle_plan(final, (), limits, originals, owned)
    for write in config_writes(throttles, final):
        sim.incremental_alter_configs(
            RESOURCE[write.resource], write.name, [(write.key, OPS[write.op], write.value)]
        )
    restored = sim.to_snapshot()
    assert restored.topic_config("t", config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS) == "5:2"
    for broker in restored.brokers:
        assert restored.broker_config(broker, "leader.replication.throttled.rate") is None
        assert restored.broker_config(broker, "follower.replication.throttled.rate") is None

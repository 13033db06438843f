"""Throttle plans: our entries and rates, the operators' kept, minimal writes, exact restore."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reassignd import config_keys
from reassignd.engine.limits import Limits
from reassignd.engine.throttle import (
    ConfigWrite,
    Move,
    ThrottleOriginals,
    apply_writes,
    calls_per_resource,
    config_writes,
    steadied,
    throttle_plan,
)

from .helpers import cluster, tp

RATES = Limits(leader_throttled_rate=1000, follower_throttled_rate=2000)
MOVE = Move(tp(0), source=(0, 1), adding=(2,))


def test_entries_and_rates_for_a_move() -> None:
    snapshot = cluster(4, {tp(0): (0, 1), tp(1): (0, 1)})
    plan = throttle_plan(snapshot, [MOVE], RATES, ThrottleOriginals())
    writes = config_writes(plan, snapshot)
    assert set(writes) == {
        ConfigWrite("topic", "t", config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS, "APPEND", "0:0,0:1"),
        ConfigWrite("topic", "t", config_keys.FOLLOWER_REPLICATION_THROTTLED_REPLICAS, "APPEND", "0:2"),
        ConfigWrite("broker", "0", config_keys.LEADER_REPLICATION_THROTTLED_RATE, "SET", "1000"),
        ConfigWrite("broker", "1", config_keys.LEADER_REPLICATION_THROTTLED_RATE, "SET", "1000"),
        ConfigWrite("broker", "2", config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE, "SET", "2000"),
    }
    # nothing on broker 3, which has no move of ours; no follower rate on the serving brokers
    assert all(w.name != "3" for w in writes)
    applied = apply_writes(snapshot, writes)
    assert config_writes(throttle_plan(applied, [MOVE], RATES, plan.originals), applied) == ()


@pytest.mark.parametrize(("policy", "rate_during"), [("keep", "777"), ("add", "1777")])
def test_operator_entries_and_rates_are_kept_and_restored(policy: str, rate_during: str) -> None:
    snapshot = cluster(
        4,
        {tp(0): (0, 1), tp(5): (0, 1)},
        topic_configs={
            "t": {
                config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS: "5:0,5:1",
                config_keys.FOLLOWER_REPLICATION_THROTTLED_REPLICAS: "*",
            }
        },
        broker_configs={0: {config_keys.LEADER_REPLICATION_THROTTLED_RATE: "777"}},
    )
    rates = replace(RATES, operator_rate_policy=policy)
    plan = throttle_plan(snapshot, [MOVE], rates, ThrottleOriginals())
    writes = config_writes(plan, snapshot)
    assert (
        ConfigWrite("topic", "t", config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS, "APPEND", "0:0,0:1")
        in writes
    )
    assert all(
        w.key != config_keys.FOLLOWER_REPLICATION_THROTTLED_REPLICAS for w in writes
    )  # `*` already throttles everything
    during = apply_writes(snapshot, writes)
    # keep: the operator's rate binds; add (KIP-542): the operator's 777 plus the reassignment's 1000
    assert during.broker_config(0, config_keys.LEADER_REPLICATION_THROTTLED_RATE) == rate_during
    assert during.broker_config(1, config_keys.LEADER_REPLICATION_THROTTLED_RATE) == "1000"
    assert during.topic_config("t", config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS) == "5:0,5:1,0:0,0:1"
    done = throttle_plan(during, [], rates, plan.originals)
    after = apply_writes(during, config_writes(done, during))
    assert after.topic_config("t", config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS) == "5:0,5:1"
    assert after.topic_config("t", config_keys.FOLLOWER_REPLICATION_THROTTLED_REPLICAS) == "*"
    assert after.broker_config(0, config_keys.LEADER_REPLICATION_THROTTLED_RATE) == "777"
    assert after.broker_config(1, config_keys.LEADER_REPLICATION_THROTTLED_RATE) is None
    assert after.broker_config(2, config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE) is None


def test_unset_configs_are_deleted_not_emptied_at_the_end() -> None:
    snapshot = cluster(4, {tp(0): (0, 1)})
    plan = throttle_plan(snapshot, [MOVE], RATES, ThrottleOriginals())
    during = apply_writes(snapshot, config_writes(plan, snapshot))
    writes = config_writes(throttle_plan(during, [], RATES, plan.originals), during)
    assert ConfigWrite("topic", "t", config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS, "DELETE") in writes
    assert ConfigWrite("broker", "2", config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE, "DELETE") in writes


def test_entry_an_operator_adds_mid_run_survives() -> None:
    snapshot = cluster(4, {tp(0): (0, 1), tp(7): (0, 1)})
    plan = throttle_plan(snapshot, [MOVE], RATES, ThrottleOriginals(), {"t": frozenset({0})})
    during = apply_writes(snapshot, config_writes(plan, snapshot))
    topic = during.topics["t"]
    configs = dict(topic.configs)
    configs[config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS] += ",7:3"
    edited = replace(during, topics={"t": replace(topic, configs=configs)})
    done = throttle_plan(edited, [], RATES, plan.originals, {"t": frozenset({0})})
    writes = config_writes(done, edited)
    assert writes[0] == ConfigWrite(
        "topic", "t", config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS, "SUBTRACT", "0:0,0:1"
    )
    after = apply_writes(edited, writes)
    assert after.topic_config("t", config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS) == "7:3"


def test_rate_change_applies_at_once_to_moves_in_flight() -> None:
    snapshot = cluster(4, {tp(0): (0, 1)})
    plan = throttle_plan(snapshot, [MOVE], RATES, ThrottleOriginals())
    during = apply_writes(snapshot, config_writes(plan, snapshot))
    faster = Limits(leader_throttled_rate=5000, follower_throttled_rate=2000)
    writes = config_writes(throttle_plan(during, [MOVE], faster, plan.originals), during)
    assert set(writes) == {
        ConfigWrite("broker", "0", config_keys.LEADER_REPLICATION_THROTTLED_RATE, "SET", "5000"),
        ConfigWrite("broker", "1", config_keys.LEADER_REPLICATION_THROTTLED_RATE, "SET", "5000"),
    }


def test_no_rate_configured_means_no_throttle_writes() -> None:
    snapshot = cluster(4, {tp(0): (0, 1)})
    plan = throttle_plan(snapshot, [MOVE], Limits(), ThrottleOriginals())
    assert config_writes(plan, snapshot) == ()


def test_originals_round_trip_through_json() -> None:
    snapshot = cluster(
        4, {tp(0): (0, 1)}, broker_configs={1: {config_keys.LEADER_REPLICATION_THROTTLED_RATE: "9"}}
    )
    originals = throttle_plan(snapshot, [MOVE], RATES, ThrottleOriginals()).originals
    again = ThrottleOriginals.from_json_dict(originals.to_json_dict())
    assert again.to_json_dict() == originals.to_json_dict()
    assert (
        again.brokers[1][config_keys.LEADER_REPLICATION_THROTTLED_RATE] == "9"
        and again.brokers[0][config_keys.LEADER_REPLICATION_THROTTLED_RATE] is None
    )


# Splitting one resource's writes into calls Kafka accepts (one operation per key per call)


def _w(key: str, op: str, value: str) -> ConfigWrite:
    return ConfigWrite("topic", "t", key, op, value)


def test_one_call_when_keys_differ() -> None:
    writes = [
        _w(config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS, "APPEND", "1:2"),
        _w(config_keys.FOLLOWER_REPLICATION_THROTTLED_REPLICAS, "SUBTRACT", "0:4"),
    ]
    assert calls_per_resource(writes) == [
        [
            _w(config_keys.FOLLOWER_REPLICATION_THROTTLED_REPLICAS, "SUBTRACT", "0:4"),
            _w(config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS, "APPEND", "1:2"),
        ]
    ]


def test_subtract_then_append_for_the_same_key() -> None:
    writes = [
        _w(config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS, "APPEND", "5:1"),
        _w(config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS, "SUBTRACT", "0:1"),
        _w(config_keys.FOLLOWER_REPLICATION_THROTTLED_REPLICAS, "APPEND", "5:6"),
    ]
    calls = calls_per_resource(writes)
    assert calls == [
        [
            _w(config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS, "SUBTRACT", "0:1"),
            _w(config_keys.FOLLOWER_REPLICATION_THROTTLED_REPLICAS, "APPEND", "5:6"),
        ],
        [_w(config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS, "APPEND", "5:1")],
    ]
    for call in calls:
        assert len({w.key for w in call}) == len(call)


def test_nothing_to_split() -> None:
    assert calls_per_resource([]) == []


def test_add_on_a_cluster_wide_operator_rate_is_a_broker_override_deleted_after() -> None:
    """The operator's rate in force may be the cluster-wide default: ours adds to it on the broker, and the
    broker-level value we set is deleted after, so the default applies there again, exactly as before."""
    snapshot = replace(
        cluster(4, {tp(0): (0, 1)}), cluster_configs={config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE: "500"}
    )
    plan = throttle_plan(snapshot, [MOVE], RATES, ThrottleOriginals())
    assert ConfigWrite(
        "broker", "2", config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE, "SET", "2500"
    ) in config_writes(plan, snapshot)
    during = apply_writes(snapshot, config_writes(plan, snapshot))
    done = throttle_plan(during, [], RATES, plan.originals)
    assert ConfigWrite(
        "broker", "2", config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE, "DELETE"
    ) in config_writes(done, during)
    keep = throttle_plan(snapshot, [MOVE], replace(RATES, operator_rate_policy="keep"), ThrottleOriginals())
    assert ConfigWrite(
        "broker", "2", config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE, "SET", "2000"
    ) in config_writes(keep, snapshot)


def test_no_leader_entry_while_a_replica_not_being_moved_is_out_of_sync() -> None:
    """Partition 0 moves 1 -> 2 while replica 3 (not moving) is out of sync: KIP-73's leader throttle would
    slow 3's catch-up too, so partition 0 has no leader entry; its adding replica stays throttled on the
    follower side. Partition 1's only out-of-sync replica is the one being added: it keeps both sides."""
    snapshot = cluster(5, {tp(0): (0, 1, 3), tp(1): (0, 1)}, isr={tp(0): (0, 1), tp(1): (0, 1)})
    moves = [Move(tp(0), source=(0, 1), adding=(2,)), Move(tp(1), source=(0, 1), adding=(4,))]
    plan = throttle_plan(snapshot, moves, RATES, ThrottleOriginals())
    assert plan.topics["t"][config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS] == "1:0,1:1"
    assert plan.topics["t"][config_keys.FOLLOWER_REPLICATION_THROTTLED_REPLICAS] == "0:2,1:4"
    assert plan.brokers[2][config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE] == "2000"
    alone = throttle_plan(snapshot, moves[:1], RATES, ThrottleOriginals())
    assert (
        alone.topics["t"][config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS] is None
        and 0 not in alone.brokers
    )


@pytest.mark.parametrize(
    ("policy", "operator", "leader_rate"),
    [("add", None, 1000 + 2 * 300), ("add", "777", 777 + 1000 + 2 * 300), ("keep", "777", 777)],
)
def test_the_leader_rate_carries_the_in_sync_replication_its_quota_meters(
    policy: str, operator: str | None, leader_rate: int
) -> None:
    """Kafka meters every follower fetch of a throttled partition into the leader's quota, in-sync ones
    included, and holds back only the followers out of sync (KafkaApis.sizeOfThrottledPartitions,
    ReplicaManager.shouldLeaderThrottle). Partition 0, produced to at 300 B/s, leader 0, its followers 1
    and 2 (the replica being added, caught up) in sync: the leader meters 2 x 300 B/s besides any copy, and
    broker 2's follower quota its 300 B/s; our rates there carry them. Under `keep` the operator's own rate
    binds us as is."""
    brokers = {0: {config_keys.LEADER_REPLICATION_THROTTLED_RATE: operator}} if operator else {}
    snapshot = cluster(4, {tp(0): (0, 1, 2)}, broker_configs=brokers)
    assert snapshot.partitions[tp(0)].isr == (0, 1, 2)
    rates = replace(RATES, operator_rate_policy=policy)
    plan = throttle_plan(snapshot, [MOVE], rates, ThrottleOriginals(), produce={tp(0): 300.0})
    assert plan.brokers[0][config_keys.LEADER_REPLICATION_THROTTLED_RATE] == str(leader_rate)
    assert plan.brokers[1][config_keys.LEADER_REPLICATION_THROTTLED_RATE] == "1000", "not leading: no fetches"
    assert plan.brokers[2][config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE] == "2300"
    unknown = throttle_plan(snapshot, [MOVE], rates, ThrottleOriginals())  # no produce rate known yet
    unmetered = {"add": 1000 + int(operator or 0), "keep": 777}[policy]
    assert unknown.brokers[0][config_keys.LEADER_REPLICATION_THROTTLED_RATE] == str(unmetered)


def test_a_rate_that_carries_in_sync_replication_is_not_rewritten_for_a_small_change() -> None:
    """Produce rates are estimates that move every cycle: the rate written stays while it is at most a
    quarter of the metered replication above what is wanted; below it, or further above, it is written."""
    snapshot = cluster(4, {tp(0): (0, 1)})
    key = config_keys.LEADER_REPLICATION_THROTTLED_RATE
    originals = throttle_plan(snapshot, [MOVE], RATES, ThrottleOriginals()).originals  # broker 0: unset

    def writes_at(produce: float, written: str) -> tuple[ConfigWrite, ...]:
        current = apply_writes(snapshot, [ConfigWrite("broker", "0", key, "SET", written)])
        plan = steadied(throttle_plan(current, [MOVE], RATES, originals, produce={tp(0): produce}), current)
        return tuple(w for w in config_writes(plan, current) if w.name == "0" and w.key == key)

    assert writes_at(400.0, "1400") == ()
    assert writes_at(380.0, "1400") == (), "1380 wanted, 1400 within a quarter of 380 above"
    assert writes_at(300.0, "1400") == (ConfigWrite("broker", "0", key, "SET", "1300"),)
    assert writes_at(420.0, "1400") == (ConfigWrite("broker", "0", key, "SET", "1420"),)
    assert writes_at(0.0, "1400") == (ConfigWrite("broker", "0", key, "SET", "1000"),), (
        "nothing metered: exact"
    )

"""Throttle plans: our entries and rates, the operators' kept, minimal writes, exact restore."""

from __future__ import annotations

from dataclasses import replace

from reassignd.engine.limits import Limits
from reassignd.engine.throttle import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    ConfigWrite,
    Move,
    ThrottleOriginals,
    apply_writes,
    calls_per_resource,
    config_writes,
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
        ConfigWrite("topic", "t", LEADER_REPLICAS, "APPEND", "0:0,0:1"),
        ConfigWrite("topic", "t", FOLLOWER_REPLICAS, "APPEND", "0:2"),
        ConfigWrite("broker", "0", LEADER_RATE, "SET", "1000"),
        ConfigWrite("broker", "1", LEADER_RATE, "SET", "1000"),
        ConfigWrite("broker", "2", FOLLOWER_RATE, "SET", "2000"),
    }
    # nothing on broker 3, which has no move of ours; no follower rate on the serving brokers
    assert all(w.name != "3" for w in writes)
    applied = apply_writes(snapshot, writes)
    assert config_writes(throttle_plan(applied, [MOVE], RATES, plan.originals), applied) == ()


def test_operator_entries_and_rates_are_kept_and_restored() -> None:
    snapshot = cluster(
        4,
        {tp(0): (0, 1), tp(5): (0, 1)},
        topic_configs={"t": {LEADER_REPLICAS: "5:0,5:1", FOLLOWER_REPLICAS: "*"}},
        broker_configs={0: {LEADER_RATE: "777"}},
    )
    plan = throttle_plan(snapshot, [MOVE], RATES, ThrottleOriginals())
    writes = config_writes(plan, snapshot)
    assert ConfigWrite("topic", "t", LEADER_REPLICAS, "APPEND", "0:0,0:1") in writes
    assert all(w.key != FOLLOWER_REPLICAS for w in writes)  # `*` already throttles everything
    assert all(not (w.name == "0" and w.key == LEADER_RATE) for w in writes)  # the operator's rate
    during = apply_writes(snapshot, writes)
    assert during.topic_config("t", LEADER_REPLICAS) == "5:0,5:1,0:0,0:1"
    done = throttle_plan(during, [], RATES, plan.originals)
    after = apply_writes(during, config_writes(done, during))
    assert after.topic_config("t", LEADER_REPLICAS) == "5:0,5:1"
    assert after.topic_config("t", FOLLOWER_REPLICAS) == "*"
    assert after.broker_config(0, LEADER_RATE) == "777"
    assert after.broker_config(1, LEADER_RATE) is None
    assert after.broker_config(2, FOLLOWER_RATE) is None


def test_unset_configs_are_deleted_not_emptied_at_the_end() -> None:
    snapshot = cluster(4, {tp(0): (0, 1)})
    plan = throttle_plan(snapshot, [MOVE], RATES, ThrottleOriginals())
    during = apply_writes(snapshot, config_writes(plan, snapshot))
    writes = config_writes(throttle_plan(during, [], RATES, plan.originals), during)
    assert ConfigWrite("topic", "t", LEADER_REPLICAS, "DELETE") in writes
    assert ConfigWrite("broker", "2", FOLLOWER_RATE, "DELETE") in writes


def test_entry_an_operator_adds_mid_run_survives() -> None:
    snapshot = cluster(4, {tp(0): (0, 1), tp(7): (0, 1)})
    plan = throttle_plan(snapshot, [MOVE], RATES, ThrottleOriginals(), {"t": frozenset({0})})
    during = apply_writes(snapshot, config_writes(plan, snapshot))
    topic = during.topics["t"]
    configs = dict(topic.configs)
    configs[LEADER_REPLICAS] += ",7:3"
    edited = replace(during, topics={"t": replace(topic, configs=configs)})
    done = throttle_plan(edited, [], RATES, plan.originals, {"t": frozenset({0})})
    writes = config_writes(done, edited)
    assert writes[0] == ConfigWrite("topic", "t", LEADER_REPLICAS, "SUBTRACT", "0:0,0:1")
    after = apply_writes(edited, writes)
    assert after.topic_config("t", LEADER_REPLICAS) == "7:3"


def test_rate_change_applies_at_once_to_moves_in_flight() -> None:
    snapshot = cluster(4, {tp(0): (0, 1)})
    plan = throttle_plan(snapshot, [MOVE], RATES, ThrottleOriginals())
    during = apply_writes(snapshot, config_writes(plan, snapshot))
    faster = Limits(leader_throttled_rate=5000, follower_throttled_rate=2000)
    writes = config_writes(throttle_plan(during, [MOVE], faster, plan.originals), during)
    assert set(writes) == {
        ConfigWrite("broker", "0", LEADER_RATE, "SET", "5000"),
        ConfigWrite("broker", "1", LEADER_RATE, "SET", "5000"),
    }


def test_no_rate_configured_means_no_throttle_writes() -> None:
    snapshot = cluster(4, {tp(0): (0, 1)})
    plan = throttle_plan(snapshot, [MOVE], Limits(), ThrottleOriginals())
    assert config_writes(plan, snapshot) == ()


def test_originals_round_trip_through_json() -> None:
    snapshot = cluster(4, {tp(0): (0, 1)}, broker_configs={1: {LEADER_RATE: "9"}})
    originals = throttle_plan(snapshot, [MOVE], RATES, ThrottleOriginals()).originals
    again = ThrottleOriginals.from_json_dict(originals.to_json_dict())
    assert again.to_json_dict() == originals.to_json_dict()
    assert again.brokers[1][LEADER_RATE] == "9" and again.brokers[0][LEADER_RATE] is None


# Splitting one resource's writes into calls Kafka accepts (one operation per key per call)


def _w(key: str, op: str, value: str) -> ConfigWrite:
    return ConfigWrite("topic", "t", key, op, value)


def test_one_call_when_keys_differ() -> None:
    writes = [_w(LEADER_REPLICAS, "APPEND", "1:2"), _w(FOLLOWER_REPLICAS, "SUBTRACT", "0:4")]
    assert calls_per_resource(writes) == [
        [_w(FOLLOWER_REPLICAS, "SUBTRACT", "0:4"), _w(LEADER_REPLICAS, "APPEND", "1:2")]
    ]


def test_subtract_then_append_for_the_same_key() -> None:
    writes = [
        _w(LEADER_REPLICAS, "APPEND", "5:1"),
        _w(LEADER_REPLICAS, "SUBTRACT", "0:1"),
        _w(FOLLOWER_REPLICAS, "APPEND", "5:6"),
    ]
    calls = calls_per_resource(writes)
    assert calls == [
        [_w(LEADER_REPLICAS, "SUBTRACT", "0:1"), _w(FOLLOWER_REPLICAS, "APPEND", "5:6")],
        [_w(LEADER_REPLICAS, "APPEND", "5:1")],
    ]
    for call in calls:
        assert len({w.key for w in call}) == len(call)


def test_nothing_to_split() -> None:
    assert calls_per_resource([]) == []

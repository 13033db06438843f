"""Splitting config operations into calls Kafka accepts (one operation per key per call)."""

from __future__ import annotations

from reassignd.cluster.api import ConfigOp
from reassignd.daemon.throttles import calls_per_resource

L = "leader.replication.throttled.replicas"
F = "follower.replication.throttled.replicas"


def test_one_call_when_keys_differ() -> None:
    ops = [ConfigOp.append(L, "1:2"), ConfigOp.subtract(F, "0:4")]
    assert calls_per_resource(ops) == [[ConfigOp.subtract(F, "0:4"), ConfigOp.append(L, "1:2")]]


def test_subtract_then_append_for_the_same_key() -> None:
    ops = [ConfigOp.append(L, "5:1"), ConfigOp.subtract(L, "0:1"), ConfigOp.append(F, "5:6")]
    calls = calls_per_resource(ops)
    assert calls == [[ConfigOp.subtract(L, "0:1"), ConfigOp.append(F, "5:6")], [ConfigOp.append(L, "5:1")]]
    for call in calls:
        assert len({op.key for op in call}) == len(call)


def test_nothing_to_do() -> None:
    assert calls_per_resource([]) == []

"""KIP-542 as close as KIP-73 configs allow, on the simulator's model with the real controller: an
out-of-sync replica that is not being moved is not throttled, and an operator's own rate on a broker adds
to the reassignment rate while our moves use it (`throttle.operator.rate.policy = add`), restored exactly."""

from __future__ import annotations

from typing import Any

import pytest

from reassignd.store.base import PlanStatus
from tests.daemon.inprocess import InProcessDaemon, plan_of

MB = 1_000_000
RATE = 5 * MB
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
FOLLOWER_RATE = "follower.replication.throttled.rate"


def scenario(produce: float = 0.2 * MB, **extra: Any) -> dict[str, Any]:
    return {
        "seed": 7,
        "brokers": [{"id": b, "rack": f"/dc1/r{b}"} for b in range(1, 6)],
        "topics": [
            {
                "name": "t",
                "partitions": 1,
                "replication_factor": 3,
                "partition_bytes": 300 * MB,
                "produce_bytes_per_sec": produce,
                "assignment": [[1, 2, 3]],
            }
        ],
        **extra,
    }


def rates(d: InProcessDaemon) -> dict[int, float]:
    """Fetch rate of each catching-up follower of t-0."""
    return {follower: rate for _t, _p, follower, _leader, rate in d.sim.fetch_rates()}


def topic_config(d: InProcessDaemon, key: str) -> str | None:
    return d.sim.topics["t"].configs.get(key)


async def test_a_lagging_replica_that_is_not_moving_catches_up_unthrottled() -> None:
    # 1 MB/s: once 3 is back in sync, the leader throttle also meters 2 and 3 (2 MB/s, as Kafka does:
    # tests/sim/test_daemon_on_kafka_rules.py), which leaves the move 3 MB/s against 1 MB/s of produce
    d = InProcessDaemon(
        scenario(produce=1 * MB),
        {"leader.reassignment.throttled.rate": RATE, "follower.reassignment.throttled.rate": RATE},
    )
    before = d.throttle_configs()
    d.sim.stop_broker(3)
    d.sim.advance(3000)  # 3 GB behind: half a minute of catching up at the link's 125 MB/s
    d.sim.start_broker(3)
    assert 3 not in d.sim.topics["t"].partitions[0].isr
    plan_id = await d.submit(plan_of({("t", 0): [4, 2, 3]}))
    await d.run(lambda: 4 in rates(d), seconds=60)
    # no leader-side entry for t-0 while 3 (not moving) is out of sync; 4 (moving) throttled as a follower
    assert topic_config(d, LEADER_REPLICAS) is None
    assert topic_config(d, FOLLOWER_REPLICAS) == "0:4"
    shown = d.controller.plan_status(plan_id)["leader_unthrottled"]
    assert shown == [{"topic": "t", "partition": 0, "out_of_sync": [3]}], "status says so"
    catching_up = rates(d)
    assert catching_up[3] > 10 * RATE, "the catch-up of 3 is not reassignment traffic"
    assert catching_up[4] == pytest.approx(RATE)
    await d.run(seconds=4 * 3600)
    assert await d.status_of(plan_id) is PlanStatus.COMPLETED
    assert d.replicas("t", 0) == [4, 2, 3]
    assert d.throttle_configs() == before


@pytest.mark.parametrize(("policy", "rate_during"), [("add", 1 * MB + RATE), ("keep", 1 * MB)])
async def test_an_operator_rate_on_the_receiving_broker_adds_to_ours_and_is_restored_exactly(
    policy: str, rate_during: int
) -> None:
    d = InProcessDaemon(
        scenario(broker_configs={"4": {FOLLOWER_RATE: str(MB)}}),
        {
            "leader.reassignment.throttled.rate": 4 * RATE,  # the follower side binds
            "follower.reassignment.throttled.rate": RATE,
            "throttle.operator.rate.policy": policy,
        },
    )
    before = d.throttle_configs()
    assert before["broker 4"] == {FOLLOWER_RATE: str(MB)}
    plan_id = await d.submit(plan_of({("t", 0): [4, 2, 3]}))
    await d.run(lambda: 4 in rates(d), seconds=60)
    assert d.sim.brokers[4].configs[FOLLOWER_RATE] == str(rate_during)
    assert rates(d)[4] == pytest.approx(rate_during)
    status = d.controller.plan_status(plan_id)
    assert status["leader_unthrottled"] == []
    statuses = status["brokers"]
    assert {b["broker"]: b["follower_throttle"] for b in statuses}[4] == rate_during
    await d.run(seconds=4 * 3600)
    assert await d.status_of(plan_id) is PlanStatus.COMPLETED
    assert d.throttle_configs() == before, "the operator's 1 MB/s, exactly, and nothing of ours"

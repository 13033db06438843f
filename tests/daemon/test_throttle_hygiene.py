"""Throttle hygiene against other writers (issue 31): another tool's rate is never adopted upwards.

The real controller over the simulator's model. A foreign writer changes a broker's leader rate while the
plan runs: right after our own write to it was answered (before a read of ours showed it), or between
cycles. The rule (docs/engine.md, "Throttle hygiene"): a rate is restored at most to what the broker had
before our plan first touched it; a foreign value is taken as the operator's new original only when it is
lower than that (an operator lowering or removing their rate) and no write of ours to that config was in
flight. So the end is the pre-plan value or a lower one an operator set, never a sum. Before, every foreign
value was adopted as the operator's original: under `throttle.operator.rate.policy = add` ours was added on
top of it and the adopted value was "restored" at the end (the two-daemon fight left 12,345,678 as
452,345,678 and 40-160 MB/s on brokers that had no throttle).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reassignd.store.base import PlanStatus
from tests.daemon.inprocess import InProcessDaemon, plan_of

MB = 1_000_000
OURS = 20 * MB
OPERATOR = "12345678"  # the operator's own leader rate on broker 1, before the plan
LEADER_RATE = "leader.replication.throttled.rate"
LIMITS = {"leader.reassignment.throttled.rate": OURS, "follower.reassignment.throttled.rate": OURS}
TARGETS = {("t", 0): [4, 2, 3], ("t", 1): [5, 3, 1]}  # broker 1 and 2 serve copies (leaders of t-0, t-1)


def scenario() -> dict[str, Any]:
    return {
        "seed": 3,
        "brokers": [{"id": b, "rack": f"/dc1/r{b}"} for b in range(1, 7)],
        "broker_configs": {"1": {LEADER_RATE: OPERATOR}},
        "topics": [
            {
                "name": "t",
                "partitions": 2,
                "replication_factor": 3,
                "partition_bytes": 2_000 * MB,  # 100 s at our 20 MB/s: about 20 cycles
                "produce_bytes_per_sec": 0,
                "assignment": [[1, 2, 3], [2, 3, 1]],
            }
        ],
    }


def leader_rate(d: InProcessDaemon, broker: int) -> str | None:
    return d.sim.brokers[broker].configs.get(LEADER_RATE)


def foreign_write(d: InProcessDaemon, broker: int, value: str | None) -> None:
    """Another tool's IncrementalAlterConfigs (SET, or DELETE for None), straight to the cluster."""
    op = (LEADER_RATE, 0, value) if value is not None else (LEADER_RATE, 1, None)
    d.sim.incremental_alter_configs(4, str(broker), [op])


def our_leader_rates(d: InProcessDaemon, broker: int) -> list[str | None]:
    """Every leader rate our daemon sent to `broker`, in order."""
    out = []
    for name, args in d.admin.calls:
        if name == "incremental_alter_configs" and args[:2] == (4, str(broker)):
            out += [o.value for o in args[2] if o.key == LEADER_RATE]
    return out


async def started(d: InProcessDaemon) -> str:
    plan_id = await d.submit(plan_of(TARGETS))
    await d.run(lambda: leader_rate(d, 1) == str(int(OPERATOR) + OURS), seconds=60)
    await d.cycle()  # a read shows our write: nothing of ours in flight
    return plan_id


async def finished(d: InProcessDaemon, plan_id: str) -> None:
    await d.run(seconds=3600)
    assert await d.status_of(plan_id) is PlanStatus.COMPLETED
    assert {tp: d.replicas(*tp) for tp in TARGETS} == TARGETS


def after_our_next_write(d: InProcessDaemon, broker: int, then: Callable[[], None]) -> None:
    """Runs `then` once, right after Kafka answered our next write to `broker`'s configs: the foreign
    write lands while ours is in flight (answered, not yet shown by a read of ours)."""
    send = d.admin.alter_broker_configs

    async def alter(broker_id: int, ops: Any) -> None:
        await send(broker_id, ops)
        if broker_id == broker:
            d.admin.alter_broker_configs = send  # type: ignore[method-assign]
            then()

    d.admin.alter_broker_configs = alter  # type: ignore[method-assign]


async def test_another_reassignd_adding_to_our_rate_every_cycle_leaves_nothing_behind() -> None:
    """The fight of issue 31 from one side: another daemon (no writer group: an older version) adopts
    whatever rate it reads and adds its own 20 MB/s, every cycle. We never adopt its sums: our writes stay
    the operator's rate plus ours (no escalation), and the end is exactly what was there before the plan."""
    d = InProcessDaemon(scenario(), LIMITS)
    before = d.throttle_configs()
    plan_id = await started(d)
    for _ in range(6):
        for broker in (1, 2):
            current = leader_rate(d, broker)
            foreign_write(d, broker, str(int(current or 0) + OURS))
        await d.cycle()
    await finished(d, plan_id)
    assert set(our_leader_rates(d, 1)) <= {str(int(OPERATOR) + OURS), OPERATOR}, "never ours on theirs"
    assert set(our_leader_rates(d, 2)) <= {str(OURS), None}
    assert d.throttle_configs() == before, "byte-identical: the operator's 12,345,678 and nothing else"


async def test_a_rate_raised_between_cycles_is_not_restored() -> None:
    d = InProcessDaemon(scenario(), LIMITS)
    before = d.throttle_configs()
    plan_id = await started(d)
    foreign_write(d, 1, str(int(OPERATOR) + 2 * OURS))  # what another `add` daemon makes of ours
    foreign_write(d, 2, str(2 * OURS))  # a broker that had no rate
    await finished(d, plan_id)
    assert leader_rate(d, 1) == OPERATOR and leader_rate(d, 2) is None
    assert d.throttle_configs() == before


async def test_a_rate_raised_while_our_write_is_in_flight_is_not_restored() -> None:
    d = InProcessDaemon(scenario(), LIMITS)
    before = d.throttle_configs()
    plan_id = await d.submit(plan_of(TARGETS))
    after_our_next_write(d, 1, lambda: foreign_write(d, 1, str(int(OPERATOR) + 2 * OURS)))
    await d.cycle()
    assert leader_rate(d, 1) == str(int(OPERATOR) + 2 * OURS), "the foreign write came after ours"
    await finished(d, plan_id)
    assert leader_rate(d, 1) == OPERATOR
    assert d.throttle_configs() == before


async def test_a_rate_lowered_while_our_write_is_in_flight_is_not_adopted() -> None:
    """A change racing our own write cannot be told from one made of our value: never an original."""
    d = InProcessDaemon(scenario(), LIMITS)
    before = d.throttle_configs()
    plan_id = await d.submit(plan_of(TARGETS))
    after_our_next_write(d, 1, lambda: foreign_write(d, 1, str(10 * MB)))
    await d.cycle()
    await finished(d, plan_id)
    assert d.throttle_configs() == before


async def test_an_operator_lowering_or_removing_their_rate_between_cycles_is_adopted() -> None:
    """Lower than before the plan, with nothing of ours in flight: theirs, kept during the plan (ours added
    to it under `add`) and left at the end. Removing a rate is the lowest (no throttle config at all)."""
    d = InProcessDaemon(scenario(), LIMITS)
    plan_id = await started(d)
    foreign_write(d, 1, str(10 * MB))
    await d.cycle()
    await d.cycle()
    assert leader_rate(d, 1) == str(10 * MB + OURS), "the operator's new rate plus ours"
    await finished(d, plan_id)
    assert leader_rate(d, 1) == str(10 * MB)

    d = InProcessDaemon(scenario(), LIMITS)
    plan_id = await started(d)
    foreign_write(d, 1, None)
    await finished(d, plan_id)
    assert leader_rate(d, 1) is None
    assert d.throttle_configs() == {}

"""`reassignd retarget` (issue 29): a target broker stopped mid-plan, the plan re-targeted, and the plan
completes exactly on the new targets with rack spread held, without a restart of the plan; the re-target
survives a crash of the daemon. In process, over the simulator's model in virtual time."""

from __future__ import annotations

from typing import Any

import pytest

from reassignd.daemon.service import ServiceError
from reassignd.store.base import EventKind, PlanStatus, replayed_steps
from tests.daemon.inprocess import InProcessDaemon, plan_of

MB = 1_000_000
RACKS = {1: "/r1", 2: "/r1", 7: "/r1", 3: "/r2", 4: "/r2", 5: "/r3", 6: "/r3"}
LIMITS: dict[str, Any] = {
    "reassignment.parallel.partition.count": 1,
    "leader.reassignment.throttled.rate": 10 * MB,
    "follower.reassignment.throttled.rate": 10 * MB,
}


def daemon() -> InProcessDaemon:
    scenario = {
        "seed": 5,
        "brokers": [{"id": b, "rack": r} for b, r in sorted(RACKS.items())],
        "topics": [
            {
                "name": "t",
                "partitions": 3,
                "replication_factor": 3,
                "partition_bytes": 2_000 * MB,
                "produce_bytes_per_sec": 10_000.0,
                "assignment": [[1, 3, 5], [1, 4, 6], [3, 5, 1]],
            }
        ],
    }
    return InProcessDaemon(scenario, LIMITS)


def racks_of(replicas: list[int]) -> list[str]:
    return sorted(RACKS[b] for b in replicas)


@pytest.mark.parametrize("crash_after", [False, True])
async def test_a_target_broker_stopped_mid_plan_is_retargeted_and_the_plan_completes(
    crash_after: bool,
) -> None:
    d = daemon()
    before = d.throttle_configs()
    plan_id = await d.submit(plan_of({("t", 0): [2, 3, 5], ("t", 1): [2, 4, 6], ("t", 2): [3, 5, 1]}))
    await d.run(lambda: bool(d.reassigning()), seconds=120)
    assert [str(tp) for tp in d.reassigning()] == ["t-0"]
    d.sim.stop_broker(2)
    for _ in range(6):
        await d.cycle()
    waits = d.controller.plan_status()["offline_waits"]
    assert waits["brokers"] == [2] and waits["partitions"] >= 1
    answer = await d.controller.retarget()
    assert answer["gone"] == [2] and answer["unplaced"] == []
    moved = {(e["topic"], e["partition"]): (e["to"], e["withdrawn"]) for e in answer["retargeted"]}
    # the same rack as the gone broker, and its place in the list: the preferred leader's
    assert moved == {("t", 0): ([7, 3, 5], True), ("t", 1): ([7, 4, 6], False)}
    if crash_after:  # the re-target is in the store: a new daemon goes on with it
        d.crash()
        await d.controller.start()
    moved_all = {0: [7, 3, 5], 1: [7, 4, 6], 2: [3, 5, 1]}
    await d.run(lambda: all(d.replicas("t", p) == r for p, r in moved_all.items()), seconds=3600)
    assert not d.reassigning()
    # the plan ends once its throttles are restored, and the one written on the stopped broker cannot be
    # removed until it is back (throttle policy, not the re-target's)
    for _ in range(6):
        await d.cycle()
    assert await d.status_of(plan_id) is PlanStatus.RUNNING
    d.sim.start_broker(2)
    await d.run(seconds=600)
    assert await d.status_of(plan_id) is PlanStatus.COMPLETED
    for p, replicas in moved_all.items():
        assert d.replicas("t", p) == replicas, "exactly the new targets: the returning broker gets nothing"
    for p in range(3):
        assert racks_of(d.replicas("t", p)) == ["/r1", "/r2", "/r3"], "one replica per rack, as before"
    assert not d.reassigning()
    assert d.throttle_configs() == before, "every throttle restored"
    [entry] = await d.journal(EventKind.PLAN_RETARGETED)
    assert entry.plan_id == plan_id and entry.data["gone"] == [2]
    assert replayed_steps(await d.store.journal()) == []
    assert not d.store.replays


async def test_nothing_waits_on_a_gone_broker_nothing_is_journaled() -> None:
    d = daemon()
    plan_id = await d.submit(plan_of({("t", 0): [2, 3, 5]}))
    await d.cycle()
    answer = await d.controller.retarget(plan_id)
    assert answer["retargeted"] == [] and answer["gone"] == []
    assert not await d.journal(EventKind.PLAN_RETARGETED)


async def test_a_decommissioned_broker_is_never_a_new_target() -> None:
    d = daemon()
    await d.controller.start()
    await d.controller.decommission(7, {})
    await d.controller.decommission(1, {})  # it holds t-0 now: marking moves nothing
    await d.submit(plan_of({("t", 0): [2, 3, 5]}), allow_decommissioned=False)
    await d.run(lambda: bool(d.reassigning()), seconds=120)
    d.sim.stop_broker(2)
    await d.cycle()
    answer = await d.controller.retarget()
    # rack r1 has no eligible broker left (1 and 7 are decommissioned): another rack would worsen the
    # spread, so the partition is left as it is, and said why
    assert answer["retargeted"] == []
    [unplaced] = answer["unplaced"]
    assert unplaced["partition"] == 0 and "rack spread" in unplaced["reason"]


async def test_retarget_without_a_running_plan_is_a_conflict() -> None:
    d = daemon()
    await d.controller.start()
    with pytest.raises(ServiceError) as refused:
        await d.controller.retarget()
    assert refused.value.code == "conflict"
    with pytest.raises(ServiceError) as missing:
        await d.controller.retarget("plan-nope")
    assert missing.value.code == "not_found"

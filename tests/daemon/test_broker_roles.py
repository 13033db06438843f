"""Brokers' lasting roles (issue 29): a decommissioned broker is drained and never receives a replica from
a proposal or a submitted plan until it is recommissioned, across a restart of the daemon. In process,
over the simulator's model in virtual time (tests/daemon/inprocess.py)."""

from __future__ import annotations

from typing import Any

import pytest

from reassignd.daemon.proposals import ProposalService
from reassignd.daemon.service import ServiceError
from reassignd.model import ClusterSnapshot
from reassignd.store.actor import acting_as
from reassignd.store.base import EventKind, PlanStatus
from tests.daemon.inprocess import InProcessDaemon, plan_of

MB = 1_000_000
LIMITS: dict[str, Any] = {
    "reassignment.parallel.replica.count": 2,
    "leader.reassignment.throttled.rate": 50 * MB,
    "follower.reassignment.throttled.rate": 50 * MB,
}


def daemon(partitions: int = 18) -> InProcessDaemon:
    """Six brokers on three racks; every broker holds its share of 18 partitions of RF 3."""
    racks = {1: "/r1", 2: "/r1", 3: "/r2", 4: "/r2", 5: "/r3", 6: "/r3"}
    assignment = [[1 + i % 2, 3 + (i // 2) % 2, 5 + (i // 4) % 2] for i in range(partitions)]
    scenario = {
        "seed": 3,
        "brokers": [{"id": b, "rack": r} for b, r in racks.items()],
        "topics": [
            {
                "name": "t",
                "partitions": partitions,
                "replication_factor": 3,
                "partition_bytes": 20 * MB,
                "produce_bytes_per_sec": 10_000.0,
                "assignment": assignment,
            }
        ],
    }
    return InProcessDaemon(scenario, LIMITS)


def proposals(d: InProcessDaemon) -> ProposalService:
    async def read() -> ClusterSnapshot:
        snapshot: ClusterSnapshot = await d.admin.snapshot(with_sizes=True)
        return snapshot

    async def banned() -> frozenset[int]:
        return await d.controller.decommissioned_brokers()  # the controller of now: a crash makes anew

    service = ProposalService(read, on_spark=False)
    service.decommissioned = banned
    return service


def on(broker: int, plan: dict[str, Any]) -> int:
    return sum(broker in entry["replicas"] for entry in plan["partitions"])


def held_by(d: InProcessDaemon, broker: int) -> int:
    return sum(broker in p.replicas for p in d.sim.topics["t"].partitions)


async def test_a_drained_broker_gets_no_replica_back_from_the_next_balance_plan() -> None:
    """The issue's reproduction: broker 6 drained, then the next `replica-balance` plan put replicas back
    on it. Decommissioned with --drain, it is drained, and no proposal gives it anything after."""
    d = daemon()
    await d.controller.start()
    with acting_as({"via": "api", "name": "sre@host"}):
        answer = await d.controller.decommission(6, {"drain": True, "reason": "disk failing"})
    assert answer["changed"] is True and answer["drain"]["plan_id"] and answer["drain"]["partitions"] > 0
    await d.run()
    assert await d.status_of(answer["drain"]["plan_id"]) is PlanStatus.COMPLETED
    assert held_by(d, 6) == 0
    # without the role, a balance plan refills the broker just drained (what the issue saw)
    unbounded = await ProposalService(proposals(d).read_snapshot, on_spark=False).propose(
        {"goal": "replica-balance"}
    )
    assert on(6, unbounded["plan"]) > 0
    proposed = await proposals(d).propose({"goal": "replica-balance"})
    assert on(6, proposed["plan"]) == 0
    assert 6 in proposed["figures"]["excluded_brokers"]
    d.crash()  # the role lasts: a restarted daemon reads it from the store
    await d.controller.start()
    assert d.controller.daemon_status()["decommissioned_brokers"] == [6]
    for goal in ({"goal": "replica-balance"}, {"goal": "cluster-balance"}, {"goal": "drain", "brokers": [1]}):
        proposed = await proposals(d).propose(goal)
        assert on(6, proposed["plan"]) == 0, goal
    [entry] = await d.journal(EventKind.BROKER_DECOMMISSIONED)
    assert entry.data == {"broker": 6, "reason": "disk failing", "by": {"via": "api", "name": "sre@host"}}


async def test_a_plan_adding_a_replica_on_a_decommissioned_broker_is_refused_naming_it() -> None:
    d = daemon()
    await d.controller.start()
    current = d.replicas("t", 0)
    assert 6 not in current
    await d.controller.decommission(6, {})
    assert held_by(d, 6) > 0, "marking alone moves nothing"
    plan = plan_of({("t", 0): [current[0], current[1], 6]})
    with pytest.raises(ServiceError) as refused:
        await d.controller.submit_plan(plan)
    assert refused.value.code == "invalid_plan"
    [problem] = refused.value.problems
    assert problem.where == "t-0" and "decommissioned broker 6" in problem.message
    assert not await d.store.list_plans(), "nothing queued"
    accepted = await d.controller.submit_plan(plan, allow_decommissioned=True)
    assert accepted["plan_id"]
    await d.controller.cancel(accepted["plan_id"])
    answer = await d.controller.recommission(6)
    assert answer == {"broker": 6, "role": "member", "changed": True}
    assert (await d.controller.submit_plan(plan))["plan_id"]
    kinds = [
        e.kind for e in await d.journal(EventKind.BROKER_DECOMMISSIONED, EventKind.BROKER_RECOMMISSIONED)
    ]
    assert kinds == [EventKind.BROKER_DECOMMISSIONED, EventKind.BROKER_RECOMMISSIONED]


async def test_filling_a_decommissioned_broker_is_refused_naming_it() -> None:
    d = daemon()
    await d.controller.start()
    await d.controller.decommission(5, {})
    with pytest.raises(ServiceError) as refused:
        await proposals(d).propose({"goal": "fill", "brokers": [5]})
    assert "[5] are decommissioned" in refused.value.message


@pytest.mark.parametrize(
    ("broker", "body", "field"),
    [
        ("12x", {}, "broker"),
        (-1, {}, "broker"),
        (True, {}, "broker"),
        (6, {"drain": "yes"}, "drain"),
        (6, {"reason": 5}, "reason"),
        (6, {"dran": True}, "dran"),
    ],
)
async def test_bad_input_is_refused_naming_the_field_and_nothing_is_written(
    broker: Any, body: dict[str, Any], field: str
) -> None:
    d = daemon()
    await d.controller.start()
    with pytest.raises(ServiceError) as refused:
        await d.controller.decommission(broker, body)
    assert refused.value.code == "invalid_request"
    assert field in {p.field for p in refused.value.problems}
    assert await d.store.broker_roles() == {}
    assert not await d.journal()


async def test_a_broker_the_cluster_does_not_know_is_not_found() -> None:
    d = daemon()
    await d.controller.start()
    with pytest.raises(ServiceError) as refused:
        await d.controller.decommission(99, {"drain": True})
    assert refused.value.code == "not_found" and "broker 99" in refused.value.message
    assert await d.store.broker_roles() == {}


async def test_recommissioning_a_broker_with_no_role_the_cluster_does_not_know_is_not_found() -> None:
    """A mistyped id is told, not answered "unchanged"."""
    d = daemon()
    await d.controller.start()
    with pytest.raises(ServiceError) as refused:
        await d.controller.recommission(99)
    assert refused.value.code == "not_found" and "broker 99" in refused.value.message
    assert not await d.journal(EventKind.BROKER_RECOMMISSIONED)


async def test_decommission_and_recommission_are_idempotent() -> None:
    d = daemon()
    await d.controller.start()
    assert (await d.controller.decommission(6, {}))["changed"] is True
    assert (await d.controller.decommission(6, {}))["changed"] is False
    assert (await d.controller.recommission(6))["changed"] is True
    assert (await d.controller.recommission(6))["changed"] is False
    assert len(await d.journal(EventKind.BROKER_DECOMMISSIONED, EventKind.BROKER_RECOMMISSIONED)) == 2


async def test_the_journal_page_of_role_changes_is_documented() -> None:
    from reassignd.daemon.journal import parse_query
    from tests.daemon.test_api_openapi import conforms

    d = daemon()
    await d.controller.start()
    await d.controller.decommission(6, {"reason": "disk"})
    await d.controller.recommission(6)
    page = await d.controller.journal(parse_query({}))
    assert [e["kind"] for e in page["entries"]] == ["broker.decommissioned", "broker.recommissioned"]
    assert conforms(page, {"$ref": "#/components/schemas/JournalPage"}) == []

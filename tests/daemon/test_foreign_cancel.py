"""Cancelling reassignments another tool started, on the real controller over the simulator's model: only
what is asked, never a partition of the running plan, journaled."""

from __future__ import annotations

from typing import Any

import pytest

from reassignd.daemon.service import ServiceError
from reassignd.store.base import EventKind, PlanStatus
from tests.daemon.inprocess import InProcessDaemon, plan_of

MB = 1_000_000
SCENARIO: dict[str, Any] = {
    "seed": 5,
    "brokers": [{"id": b, "rack": f"/dc1/r{b}"} for b in range(1, 7)],
    "topics": [
        {
            "name": name,
            "partitions": 3,
            "replication_factor": 3,
            "partition_bytes": 200 * MB,
            "produce_bytes_per_sec": 0.0,
            "assignment": [[1, 2, 3], [2, 3, 4], [3, 4, 5]],
        }
        for name in ("orders", "orders-audit", "logs")
    ],
}
LIMITS = {"follower.reassignment.throttled.rate": MB, "leader.reassignment.throttled.rate": MB}


async def daemon_with_foreign_moves() -> InProcessDaemon:
    """Our plan moves orders-0; another tool moves orders-1, orders-audit-0 and logs-2."""
    d = InProcessDaemon(SCENARIO, LIMITS)
    await d.submit(plan_of({("orders", 0): [6, 2, 3]}))
    await d.cycle()
    for topic, partition, target in (
        ("orders", 1, [5, 3, 4]),
        ("orders-audit", 0, [6, 2, 3]),
        ("logs", 2, [6, 4, 5]),
    ):
        d.sim.alter_partition_reassignment(topic, partition, target)
    assert {str(tp) for tp in d.reassigning()} == {"orders-0", "orders-1", "orders-audit-0", "logs-2"}
    return d


async def test_only_the_matching_foreign_reassignments_are_cancelled_and_journaled() -> None:
    d = await daemon_with_foreign_moves()
    answer = await d.controller.cancel_foreign({"topics": "orders"})  # the whole name: not orders-audit
    assert [(e["topic"], e["partition"]) for e in answer["cancelled"]] == [("orders", 1)]
    assert answer["cancelled"][0]["adding"] == [5] and answer["failed"] == []
    assert [(e["topic"], e["partition"], e["plan_id"]) for e in answer["skipped"]] == [
        ("orders", 0, d.controller.run.plan_id if d.controller.run else None)
    ]
    assert {str(tp) for tp in d.reassigning()} == {"orders-0", "orders-audit-0", "logs-2"}
    # KIP-455 cancel as KRaft does it (PartitionReassignmentRevert): the adding replicas go, the rest keep
    # the reassignment's order, so the set is restored and the order is not
    assert d.replicas("orders", 1) == [3, 4, 2]
    [entry] = await d.journal(EventKind.FOREIGN_CANCELLED)
    assert entry.data["topics"] == "orders" and entry.data["cancelled"] == answer["cancelled"]

    await d.controller.cancel_foreign({})  # every foreign one left; ours stays and completes
    assert {str(tp) for tp in d.reassigning()} == {"orders-0"}
    assert len(await d.journal(EventKind.FOREIGN_CANCELLED)) == 2
    await d.run(seconds=4 * 3600)
    assert d.replicas("orders", 0) == [6, 2, 3]
    plan_id = (await d.store.list_plans())[0].id
    assert await d.status_of(plan_id) is PlanStatus.COMPLETED


async def test_a_partition_of_the_running_plan_named_explicitly_is_refused_whole() -> None:
    d = await daemon_with_foreign_moves()
    request = {"partitions": [{"topic": "orders", "partition": 1}, {"topic": "orders", "partition": 0}]}
    with pytest.raises(ServiceError) as refused:
        await d.controller.cancel_foreign(request)
    assert refused.value.code == "conflict" and refused.value.details["partitions"] == ["orders-0"]
    assert {str(tp) for tp in d.reassigning()} == {"orders-0", "orders-1", "orders-audit-0", "logs-2"}
    assert not await d.journal(EventKind.FOREIGN_CANCELLED)


@pytest.mark.parametrize(
    ("request_body", "field"),
    [
        ({"topics": "("}, "topics"),
        ({"topics": 3}, "topics"),
        ({"partitions": [{"topic": "orders"}]}, "partitions[0]"),
        ({"partitions": []}, "partitions"),
        ({"topic": "orders"}, "topic"),
    ],
)
async def test_a_bad_request_names_the_field_and_cancels_nothing(request_body: Any, field: str) -> None:
    d = await daemon_with_foreign_moves()
    with pytest.raises(ServiceError) as refused:
        await d.controller.cancel_foreign(request_body)
    assert refused.value.code == "invalid_request"
    assert [p.field for p in refused.value.problems] == [field]
    assert len(d.reassigning()) == 4

"""The rollback document a submission answers with (Kafka's tool prints it on --execute): submitted back
after the plan completed, it restores every partition exactly, preferred leader and order included."""

from __future__ import annotations

from typing import Any

from reassignd.model import ANY_LOG_DIR, ReassignmentPlan
from reassignd.store.base import PlanStatus
from tests.daemon.inprocess import InProcessDaemon, plan_of

MB = 1_000_000
ASSIGNMENT = [[1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 6], [5, 6, 1], [6, 1, 2]]
SCENARIO: dict[str, Any] = {
    "seed": 3,
    "brokers": [{"id": b, "rack": f"/dc1/r{b}"} for b in range(1, 7)],
    "topics": [
        {
            "name": "t",
            "partitions": len(ASSIGNMENT),
            "replication_factor": 3,
            "partition_bytes": 20 * MB,
            "produce_bytes_per_sec": 10_000.0,
            "assignment": ASSIGNMENT,
        },
        {
            "name": "u",
            "partitions": 2,
            "replication_factor": 2,
            "partition_bytes": 5 * MB,
            "produce_bytes_per_sec": 0.0,
            "assignment": [[1, 2], [3, 4]],
        },
    ],
}
LIMITS = {"follower.reassignment.throttled.rate": 50 * MB, "leader.reassignment.throttled.rate": 50 * MB}
TARGETS = {
    ("t", 0): [4, 5, 6],  # every replica moves
    ("t", 1): [3, 2, 4],  # a reorder only: a new preferred leader
    ("t", 2): [3, 4, 5],  # unchanged: in the plan, not moved
    ("t", 3): [6, 1, 4],  # one replica moves and the order changes
    ("u", 0): [2, 5],
    ("u", 1): [4, 3],
}


def assignment(d: InProcessDaemon) -> dict[tuple[str, int], list[int]]:
    return {
        (t, p): d.replicas(t, p) for t, topic in d.sim.topics.items() for p in range(len(topic.partitions))
    }


async def test_the_rollback_of_a_completed_plan_restores_every_partition_exactly() -> None:
    d = InProcessDaemon(SCENARIO, LIMITS)
    before = assignment(d)
    await d.controller.start()
    answer = await d.controller.submit_plan(plan_of(TARGETS))
    rollback = answer["rollback"]
    assert [(e["topic"], e["partition"]) for e in rollback["partitions"]] == sorted(TARGETS)
    assert all(e["log_dirs"] == [ANY_LOG_DIR] * len(e["replicas"]) for e in rollback["partitions"])
    await d.run(seconds=4 * 3600)
    assert await d.status_of(str(answer["plan_id"])) is PlanStatus.COMPLETED
    after = assignment(d)
    assert all(after[tp] == target for tp, target in TARGETS.items())

    undo = await d.controller.submit_plan(ReassignmentPlan.from_dict(rollback))
    await d.run(seconds=4 * 3600)
    assert await d.status_of(str(undo["plan_id"])) is PlanStatus.COMPLETED
    assert assignment(d) == before, "every partition back on its pre-plan list, in its pre-plan order"
    assert not d.reassigning()


async def test_a_dry_run_answers_the_rollback_too_and_it_is_the_current_assignment() -> None:
    d = InProcessDaemon(SCENARIO, LIMITS)
    await d.controller.start()
    answer = await d.controller.submit_plan(plan_of(TARGETS), dry_run=True)
    assert answer["plan_id"] is None
    current = assignment(d)
    assert {(e["topic"], e["partition"]): e["replicas"] for e in answer["rollback"]["partitions"]} == {
        tp: current[tp] for tp in TARGETS
    }

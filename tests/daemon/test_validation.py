"""Plan validation against the live cluster: every problem, located, at once."""

from __future__ import annotations

import pytest

from reassignd.daemon.validation import validate_plan
from reassignd.model import (
    Broker,
    ClusterSnapshot,
    PartitionState,
    ReassignmentPlan,
    TopicInfo,
    TopicPartition,
)

T0, T1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
SNAPSHOT = ClusterSnapshot.build(
    [Broker(b, f"/dc1/r{b}") for b in (1, 2, 3, 4)],
    [PartitionState(T0, (1, 2, 3), (1, 2, 3), 1), PartitionState(T1, (2, 3, 4), (2, 3, 4), 2)],
    [TopicInfo("orders")],
)


def _problems(targets: dict[TopicPartition, tuple[int, ...]], **kwargs: object) -> list[tuple[str, str]]:
    kwargs.setdefault("ongoing", ())
    found = validate_plan(ReassignmentPlan(targets), SNAPSHOT, **kwargs)  # type: ignore[arg-type]
    return [(p.where, p.field) for p in found]


@pytest.mark.parametrize(
    ("targets", "kwargs", "expected"),
    [
        ({T0: (4, 2, 3)}, {}, []),
        ({T0: (4, 2, 3), T1: (1, 3, 4)}, {}, []),
        ({TopicPartition("nope", 0): (1,)}, {}, [("nope-0", "partition")]),
        ({TopicPartition("orders", 9): (1, 2, 3)}, {}, [("orders-9", "partition")]),
        ({T0: (1, 2, 9)}, {}, [("orders-0", "replicas")]),
        ({T0: (1, 2)}, {}, [("orders-0", "replicas")]),
        ({T0: (1, 2)}, {"allow_rf_change": True}, []),
        ({T0: (4, 2, 3)}, {"ongoing": {T0}}, [("orders-0", "partition")]),
        ({T0: (4, 2, 3)}, {"ongoing": {T0}, "ours": {T0}}, []),
        ({T0: (4, 2, 3)}, {"busy": {T0: "p-1"}}, [("orders-0", "partition")]),
        ({}, {}, [("plan", "partitions")]),
    ],
)
def test_validation_table(targets: dict, kwargs: dict, expected: list[tuple[str, str]]) -> None:
    assert _problems(targets, **kwargs) == expected


def test_all_problems_are_listed_together() -> None:
    found = _problems({T0: (1, 9), T1: (1, 2, 3), TopicPartition("gone", 0): (1,)}, ongoing={T1})
    assert found == [
        ("gone-0", "partition"),
        ("orders-0", "replicas"),
        ("orders-0", "replicas"),
        ("orders-1", "partition"),
    ]


def test_every_unfinished_plan_holds_its_partitions_and_collisions_alone_are_a_conflict() -> None:
    from reassignd.daemon.validation import plan_rejection, unfinished_partitions
    from reassignd.store.base import PlanRecord, PlanStatus

    def record(plan_id: str, status: PlanStatus, *partitions: int) -> PlanRecord:
        entries = [{"topic": "t", "partition": p, "replicas": [1]} for p in partitions]
        body = {"version": 1, "partitions": entries}
        return PlanRecord(id=plan_id, options={}, status=status, submitted_at=0.0, updated_at=0.0, plan=body)

    taken = unfinished_partitions(
        [
            record("queued", PlanStatus.QUEUED, 0),
            record("paused", PlanStatus.PAUSED, 1),
            record("done", PlanStatus.COMPLETED, 2),
        ]
    )
    assert taken == {TopicPartition("t", 0): "queued", TopicPartition("t", 1): "paused"}
    snapshot = ClusterSnapshot.build(
        [Broker(1)], [PartitionState(TopicPartition("t", p), (1,), (1,), 1) for p in range(3)]
    )
    plan = ReassignmentPlan({TopicPartition("t", 0): (1,), TopicPartition("t", 2): (1,)})
    rejection = plan_rejection(validate_plan(plan, snapshot, ongoing=(), busy=taken))
    assert rejection.code == "conflict" and rejection.details == {"plan_id": "queued", "partitions": ["t-0"]}
    wrong = ReassignmentPlan({TopicPartition("t", 0): (9,)})
    assert plan_rejection(validate_plan(wrong, snapshot, ongoing=(), busy=taken)).code == "invalid_plan"


T2 = TopicPartition("orders", 2)
# orders-2 is half-way through a step of the running plan: its replica list holds the new replica too
MOVING = ClusterSnapshot.build(
    [Broker(b, f"/dc1/r{b}") for b in (1, 2, 3, 4)],
    [
        PartitionState(T0, (1, 2, 3), (1, 2, 3), 1),
        PartitionState(T2, (1, 2, 3, 4), (1, 2, 3), 1, adding=(4,)),
    ],
    [TopicInfo("orders")],
)


def test_resubmitting_the_running_plan_is_a_conflict_alone() -> None:
    """The issue: the real "already part of plan" came with false replication-factor errors ("from 4 to
    3"): a partition in the middle of a step lists its new replica too. A partition another plan or tool
    holds is refused for that alone."""
    found = validate_plan(
        ReassignmentPlan({T0: (4, 2, 3), T2: (2, 3, 4)}), MOVING, ongoing={T2}, ours={T2}, busy={T2: "p-1"}
    )
    assert [(p.where, p.field, p.message) for p in found] == [
        ("orders-2", "partition", "already part of plan p-1")
    ]
    found = validate_plan(ReassignmentPlan({T2: (2, 3, 4)}), MOVING, ongoing={T2})
    assert [(p.where, p.field) for p in found] == [("orders-2", "partition")]
    assert "someone else" in found[0].message


def test_a_plan_already_applied_is_refused_as_nothing_to_do() -> None:
    """Every partition already on its target (same replicas, same order): refused, not queued; a plan with
    one partition still to move is accepted (the rest are done at once)."""
    found = validate_plan(ReassignmentPlan({T0: (1, 2, 3), T1: (2, 3, 4)}), SNAPSHOT, ongoing=())
    assert [(p.where, p.field) for p in found] == [("plan", "partitions")]
    assert found[0].message == (
        "every partition (2) is already on its target replicas: nothing to do "
        "(`reassignd verify PLAN.json` checks a plan against the cluster)"
    )
    assert validate_plan(ReassignmentPlan({T0: (1, 2, 3), T1: (3, 2, 4)}), SNAPSHOT, ongoing=()) == []
    assert validate_plan(ReassignmentPlan({T0: (2, 1, 3)}), SNAPSHOT, ongoing=()) == []

"""Static ranks from the `reassignment.ordering` chain."""

from __future__ import annotations

from reassignd.engine.ordering import compute_ranks, destination_broker
from reassignd.model import ReassignmentPlan

from .helpers import cluster, tp


def _setup():  # type: ignore[no-untyped-def]
    parts = {tp(i): (0, 1) for i in range(6)}
    sizes = {tp(i): [5, 1, 4, 2, 6, 3][i] for i in range(6)}
    snapshot = cluster(6, parts, sizes=sizes)
    # partitions 0-2 move to broker 4, 3-5 to broker 5
    plan = ReassignmentPlan({tp(i): (0, 4 if i < 3 else 5) for i in range(6)})
    return snapshot, plan


def test_size_keys_and_plan_order() -> None:
    snapshot, plan = _setup()
    assert [k.partition for k in compute_ranks(plan, snapshot, ["larger_first"])] == [4, 0, 2, 5, 3, 1]
    assert [k.partition for k in compute_ranks(plan, snapshot, ["smaller_first"])] == [1, 3, 5, 2, 0, 4]
    assert [k.partition for k in compute_ranks(plan, snapshot, [])] == [0, 1, 2, 3, 4, 5]


def test_round_robin_alternates_destinations_then_orders_within_a_broker() -> None:
    snapshot, plan = _setup()
    ranked = compute_ranks(plan, snapshot, ["round_robin", "larger_first"])
    assert [destination_broker((0, 1), plan.targets[k]) for k in ranked] == [4, 5, 4, 5, 4, 5]
    # within broker 4 (partitions 0, 1, 2): larger first = 0 (5), 2 (4), 1 (1)
    assert [k.partition for k in ranked if k.partition < 3] == [0, 2, 1]


def test_dynamic_keys_do_not_change_static_ranks() -> None:
    snapshot, plan = _setup()
    assert compute_ranks(plan, snapshot, ["under_min_isr", "leader_moves"]) == compute_ranks(
        plan, snapshot, []
    )

"""KIP-435 partition steps: the worked example, step by step, and each rule on its own."""

from __future__ import annotations

import pytest

from reassignd.engine.steps import all_steps, next_step


def test_kip_example_step_by_step() -> None:
    # KIP-435 "Reassignment Example": (0,1,2,3,4) -> (5,6,7,8,9), leader 0, R = 2.
    final = (5, 6, 7, 8, 9)
    first = next_step((0, 1, 2, 3, 4), final, isr=(0, 1, 2, 3, 4), replica_count=2, min_insync=1)
    assert first is not None
    assert first.target == (5, 0, 1, 2, 3, 4)  # +5, the new preferred leader alone, in front
    assert first.adding == (5,) and first.removing == () and first.leader_step
    assert first.moves_leadership(leader=0)

    second = next_step(first.target, final, isr=first.target, replica_count=2, min_insync=1)
    assert second is not None
    assert second.target == (5, 6, 2, 3, 4)  # -[0,1] +[6]
    assert second.removing == (0, 1) and second.adding == (6,)
    assert not second.moves_leadership(leader=5)

    third = next_step(second.target, final, isr=second.target, replica_count=2, min_insync=1)
    assert third is not None
    assert third.target == (5, 6, 7, 8, 4)  # -[2,3] +[7,8]
    assert third.removing == (2, 3) and third.adding == (7, 8)

    last = next_step(third.target, final, isr=third.target, replica_count=2, min_insync=1)
    assert last is not None
    assert last.target == final and last.is_last  # -[4] +[9], requested order matched
    assert last.removing == (4,) and last.adding == (9,)

    assert next_step(final, final, isr=final, replica_count=2, min_insync=1) is None


def test_kip_example_as_a_sequence() -> None:
    assert all_steps((0, 1, 2, 3, 4), (5, 6, 7, 8, 9), replica_count=2) == [
        (0, 1, 2, 3, 4),
        (5, 0, 1, 2, 3, 4),
        (5, 6, 2, 3, 4),
        (5, 6, 7, 8, 4),
        (5, 6, 7, 8, 9),
    ]


@pytest.mark.parametrize(
    ("current", "final", "r", "expected"),
    [
        # one replica at a time (R = 1): add one, then drop one and add one
        ((0, 1, 2), (3, 4, 5), 1, [(0, 1, 2), (3, 0, 1, 2), (3, 1, 2), (3, 4, 2), (3, 4, 5)]),
        # the preferred leader is already a replica: no leader step
        ((0, 1, 2), (0, 3, 4), 1, [(0, 1, 2), (0, 3, 2), (0, 3, 4)]),
        # replication factor up (3 -> 5)
        ((0, 1, 2), (3, 4, 5, 6, 7), 2, [(0, 1, 2), (3, 0, 1, 2), (3, 4, 5, 2), (3, 4, 5, 6, 7)]),
        ((0, 1, 2), (0, 1, 2, 3, 4), 1, [(0, 1, 2), (0, 1, 2, 3), (0, 1, 2, 3, 4)]),
        # replication factor down (5 -> 3), then down and moved (4 -> 2)
        ((0, 1, 2, 3, 4), (0, 1, 2), 1, [(0, 1, 2, 3, 4), (0, 1, 2, 4), (0, 1, 2)]),
        ((0, 1, 2, 3), (4, 5), 2, [(0, 1, 2, 3), (4, 0, 1, 2, 3), (4, 2, 3), (4, 5)]),
        # same replicas, new order: a single reordering step
        ((1, 2, 3), (3, 2, 1), 1, [(1, 2, 3), (3, 2, 1)]),
        # R larger than the move: leader step, then everything else at once
        ((0, 1, 2), (3, 4, 5), 5, [(0, 1, 2), (3, 0, 1, 2), (3, 4, 5)]),
    ],
)
def test_step_sequences(
    current: tuple[int, ...], final: tuple[int, ...], r: int, expected: list[tuple[int, ...]]
) -> None:
    assert all_steps(current, final, replica_count=r) == expected


def test_out_of_sync_excess_replicas_are_dropped_first() -> None:
    step = next_step((0, 1, 2, 3), (0, 5, 6, 7), isr=(0, 1, 2), replica_count=1, min_insync=1)
    assert step is not None
    assert step.removing == (3,)  # 3 is out of sync: dropping it costs no in-sync replica
    assert step.adding == (5,)


def test_min_insync_rule_adds_beyond_r_in_the_first_step() -> None:
    # KIP-435: min.insync 3 and only 1 in sync: add 2 at once so producers continue. Out-of-sync 1 leaves
    # with them (it costs no in-sync replica, and Kafka would wait for it to catch up to complete the step).
    step = next_step((0, 1, 2), (3, 4, 5), isr=(0,), replica_count=1, min_insync=3)
    assert step is not None
    assert step.adding == (3, 4) and step.removing == (1,)
    assert step.min_insync_extra == 1
    assert step.insync_after == 3


def test_min_insync_rule_keeps_in_sync_replicas_it_would_drop() -> None:
    # 3 is a target replica still catching up; dropping in-sync 1 would leave only 0 in sync.
    step = next_step((0, 3, 1, 2), (0, 3), isr=(0, 1), replica_count=2, min_insync=2)
    assert step is not None and step.removing == (2,)  # out-of-sync 2 goes, in-sync 1 stays
    assert step.target == (0, 3, 1) and step.insync_after == 2


def test_step_blocked_when_no_safe_progress() -> None:
    step = next_step((0, 1), (0,), isr=(0, 1), replica_count=1, min_insync=2)
    assert step is not None
    # min(min.insync, |FTR|) = 1: dropping 1 keeps 1 in sync, allowed
    assert step.target == (0,)
    stuck = next_step((0, 1, 2), (0, 1), isr=(2,), replica_count=1, min_insync=2)
    # 2 is the only in-sync replica and the only excess: dropping it would leave none in sync
    assert stuck is not None and stuck.blocked


def test_replica_count_must_be_positive() -> None:
    with pytest.raises(ValueError, match="replica_count"):
        next_step((0,), (1,), isr=(0,), replica_count=0, min_insync=1)


def test_the_step_preview_above_the_dry_run_size_counts_each_partitions_own_steps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A 100,000-partition submit rehearsed the whole schedule (172 s); above EXACT_PREVIEW_PARTITIONS the
    preview counts each partition's own sequence, which equals the dry run where no hand-over is added."""
    from reassignd.engine import dryrun
    from reassignd.engine.limits import Limits
    from reassignd.model import ReassignmentPlan
    from tests.engine.helpers import cluster, tp

    parts = {tp(i): (0, 1, 2) for i in range(6)}
    snapshot = cluster(8, parts)
    plan = ReassignmentPlan({key: (0, 3 + i % 4, 7) for i, key in enumerate(parts)})
    limits = Limits(parallel_replica_count=1, balance_sources=False)  # no leadership hand-overs added
    exact = dryrun.step_preview(snapshot, plan, limits)
    monkeypatch.setattr(dryrun, "EXACT_PREVIEW_PARTITIONS", 5)
    counted = dryrun.step_preview(snapshot, plan, limits)
    assert exact["exact"] is True and counted["exact"] is False
    figures = (counted["total"], counted["max_per_partition"])
    assert figures == (exact["total"], exact["max_per_partition"]) == (12, 2)

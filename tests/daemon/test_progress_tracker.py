"""The progress tracker's incremental totals equal a full recomputation, whatever changes between cycles."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reassignd.daemon.progress import ProgressTracker
from reassignd.model import Broker, ClusterSnapshot, PartitionState, ReassignmentPlan, TopicPartition

TPS = [TopicPartition("t", i) for i in range(6)]
PLAN = ReassignmentPlan(dict.fromkeys(TPS, (4, 2, 3)))


def snapshot(progress: dict[TopicPartition, int]) -> ClusterSnapshot:
    partitions = []
    for tp in TPS:
        done = progress.get(tp, 0)
        adding = (4,) if done < 1000 else ()
        replicas = (4, 2, 3, 1) if adding else (4, 2, 3)
        sizes = {1: 1000, 2: 1000, 3: 1000, 4: done}
        partitions.append(
            PartitionState(tp, replicas, (2, 3, 1), 2, adding, (1,) if adding else (), 1000, sizes)
        )
    return ClusterSnapshot.build([Broker(b) for b in (1, 2, 3, 4)], partitions)


@given(st.lists(st.dictionaries(st.sampled_from(TPS), st.integers(0, 1000)), min_size=1, max_size=6))
def test_incremental_equals_full(steps: list[dict[TopicPartition, int]]) -> None:
    incremental, full = ProgressTracker(), ProgressTracker()
    progress: dict[TopicPartition, int] = {}
    for now, change in enumerate(steps):
        progress.update(change)
        snap = snapshot(progress)
        a = incremental.update(float(now), snap, PLAN, (), recompute=set(change))
        b = full.update(float(now), snap, PLAN, ())
        assert (a.total_bytes, a.moved_bytes, a.remaining_bytes) == (
            b.total_bytes,
            b.moved_bytes,
            b.remaining_bytes,
        )


def test_cached_sizes_fill_partitions_read_without_them() -> None:
    snap = snapshot({TPS[0]: 400})
    bare = snap.with_partitions(
        [replace(p, size_bytes=0, replica_sizes={}) for p in snap.partitions.values()]
    )
    sizes = {tp: (p.size_bytes, p.replica_sizes) for tp, p in snap.partitions.items()}
    with_cache = ProgressTracker().update(0.0, bare, PLAN, (), sizes=sizes)
    direct = ProgressTracker().update(0.0, snap, PLAN, ())
    assert with_cache.moved_bytes == direct.moved_bytes == 400
    assert with_cache.remaining_bytes == direct.remaining_bytes == 6000 - 400


def test_the_eta_of_the_tail_follows_the_last_move_not_the_plans_average() -> None:
    """Five partitions copy fast and finish; the sixth copies at 10 B/s. Once it is alone, the plan's
    average (dominated by the fast ones) would promise a few seconds; the ETA must follow the slow copy."""
    tracker = ProgressTracker(window_seconds=300)
    slow = TPS[5]
    view = None
    for now in range(21):
        progress = {tp: min(1000, 100 * now) for tp in TPS[:5]}
        progress[slow] = 10 * now
        view = tracker.update(float(now), snapshot(progress), PLAN, [slow] if now >= 10 else TPS)
    assert view is not None
    assert view.remaining_bytes == 1000 - 200
    plan_average = view.remaining_bytes / (view.bytes_per_sec or 1)
    assert plan_average < 30  # what an ETA from the average alone would say
    assert view.eta_seconds == pytest.approx(80.0)  # 800 bytes left at 10 B/s

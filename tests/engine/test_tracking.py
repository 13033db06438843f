"""Progress figures: incremental equals full, totals fixed at the start, a percentage that never falls."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reassignd.engine.tracking import Tracking, observe, started
from reassignd.model import Broker, ClusterSnapshot, PartitionState, TopicPartition

TPS = [TopicPartition("t", i) for i in range(6)]
TARGETS = dict.fromkeys(TPS, (4, 2, 3))
BASELINE = dict.fromkeys(TPS, (1, 2, 3))


def snapshot(progress: dict[TopicPartition, int], size: int = 1000) -> ClusterSnapshot:
    partitions = []
    for tp in TPS:
        done = progress.get(tp, 0)
        adding = (4,) if done < size else ()
        replicas = (4, 2, 3, 1) if adding else (4, 2, 3)
        sizes = {1: size, 2: size, 3: size, 4: min(done, size)}
        partitions.append(
            PartitionState(tp, replicas, (2, 3, 1), 2, adding, (1,) if adding else (), size, sizes)
        )
    return ClusterSnapshot.build([Broker(b) for b in (1, 2, 3, 4)], partitions)


def fresh() -> Tracking:
    return started(300.0, BASELINE, TARGETS, dict.fromkeys(TPS, 1000))


def never(tp: TopicPartition) -> bool:
    return False


@given(st.lists(st.dictionaries(st.sampled_from(TPS), st.integers(0, 1000)), min_size=1, max_size=6))
def test_incremental_equals_full(steps: list[dict[TopicPartition, int]]) -> None:
    incremental, full = fresh(), fresh()
    progress: dict[TopicPartition, int] = {}
    for now, change in enumerate(steps):
        progress.update(change)
        snap = snapshot(progress)
        incremental = observe(
            incremental, float(now), snap, TARGETS, watched=(), recompute=set(change), done=never
        )
        full = observe(full, float(now), snap, TARGETS, watched=(), recompute=None, done=never)
        figures = ("total_bytes", "moved_bytes", "remaining_bytes", "percent")
        assert [getattr(incremental, f) for f in figures] == [getattr(full, f) for f in figures]


def test_the_total_is_fixed_at_the_start_and_growth_shows_apart() -> None:
    tracking = fresh()
    assert tracking.total_bytes == 6000
    grown = snapshot({TPS[0]: 500}, size=1500)  # producers added 500 bytes to every partition
    tracking = observe(tracking, 1.0, grown, TARGETS, watched=(), recompute=None, done=never)
    assert tracking.total_bytes == 6000
    assert tracking.grown_bytes == 3000
    assert tracking.percent == pytest.approx(100 * (1000 * 500 / 1500) / 6000, abs=0.01)


def test_the_percentage_never_falls_and_reaches_100() -> None:
    tracking = fresh()
    tracking = observe(
        tracking, 1.0, snapshot({TPS[0]: 900}), TARGETS, watched=(), recompute=None, done=never
    )
    high = tracking.percent
    shrunk = snapshot({TPS[0]: 900}, size=2000)  # the leader grew faster than the copy: its share fell
    tracking = observe(tracking, 2.0, shrunk, TARGETS, watched=(), recompute=None, done=never)
    assert tracking.percent == high
    done = snapshot(dict.fromkeys(TPS, 1000))
    tracking = observe(tracking, 3.0, done, TARGETS, watched=(), recompute=None, done=lambda tp: True)
    assert tracking.percent == 100.0


def test_a_dropped_partition_leaves_the_total_the_percentage_is_of() -> None:
    tracking = fresh()
    every_other = snapshot(dict.fromkeys(TPS[:5], 1000))
    tracking = observe(
        tracking,
        1.0,
        every_other,
        TARGETS,
        watched=(),
        recompute=None,
        done=lambda tp: tp != TPS[5],
        dropped=[TPS[5]],
    )
    assert tracking.dropped_bytes == 1000
    assert tracking.total_bytes == 6000
    assert tracking.percent == 100.0


def test_cached_sizes_are_the_callers_job() -> None:
    """The machine passes the full view (cached sizes filled in): a bare snapshot counts nothing copied."""
    snap = snapshot({TPS[0]: 400})
    bare = snap.with_partitions(
        [replace(p, size_bytes=0, replica_sizes={}) for p in snap.partitions.values()]
    )
    assert observe(fresh(), 0.0, snap, TARGETS, watched=(), recompute=None, done=never).moved_bytes == 400
    assert observe(fresh(), 0.0, bare, TARGETS, watched=(), recompute=None, done=never).moved_bytes == 0


def test_the_eta_of_the_tail_follows_the_last_move_not_the_plans_average() -> None:
    """Five partitions copy fast and finish; the sixth copies at 10 B/s. Once it is alone, the plan's
    average (dominated by the fast ones) would promise a few seconds; the ETA must follow the slow copy."""
    tracking = fresh()
    slow = TPS[5]
    for now in range(21):
        progress = {tp: min(1000, 100 * now) for tp in TPS[:5]}
        progress[slow] = 10 * now
        watched = [slow] if now >= 10 else TPS
        tracking = observe(
            tracking, float(now), snapshot(progress), TARGETS, watched=watched, recompute=None, done=never
        )
    assert tracking.remaining_bytes == 1000 - 200
    plan_average = tracking.remaining_bytes / (tracking.rate or 1)
    assert plan_average < 30  # what an ETA from the average alone would say
    assert tracking.eta == pytest.approx(80.0)  # 800 bytes left at 10 B/s


def test_while_paused_the_eta_holds_still() -> None:
    tracking = fresh()
    for now in range(5):
        tracking = observe(
            tracking,
            float(now),
            snapshot({TPS[0]: 100 * now}),
            TARGETS,
            watched=[TPS[0]],
            recompute=None,
            done=never,
        )
    eta = tracking.eta
    for now in range(5, 10):
        tracking = observe(
            tracking,
            float(now),
            snapshot({TPS[0]: 400}),
            TARGETS,
            watched=[TPS[0]],
            recompute=None,
            done=never,
            moving=False,
        )
        assert tracking.eta == eta


def test_the_moved_figure_never_falls_and_the_rate_is_never_negative() -> None:
    """Issue 27: with a receiving broker down its copies' sizes cannot be read; the moved figure fell and the
    rate read -108.1 MB/s. What was copied stays copied."""
    tracking = fresh()
    for now, copied in ((0.0, 0), (10.0, 400), (20.0, 800)):
        tracking = observe(
            tracking, now, snapshot({TPS[0]: copied}), TARGETS, watched=(), recompute=None, done=never
        )
    assert tracking.moved_bytes == 800
    down = snapshot({TPS[0]: 800})
    down = down.with_partitions(
        [
            replace(p, replica_sizes={b: s for b, s in p.replica_sizes.items() if b != 4})
            for p in down.partitions.values()
        ]
    )
    for now in (30.0, 40.0):
        tracking = observe(tracking, now, down, TARGETS, watched=(), recompute=None, done=never)
        assert tracking.moved_bytes == 800
        assert tracking.rate is not None and tracking.rate >= 0.0


def test_the_bytes_done_are_the_percentage_of_the_fixed_work() -> None:
    """Issue 27: the views showed moved less growth (`7.2 GB of 290.5 GB (5.5%)` after `11.5 GB ... (4.2%)`,
    `0 B ... (10.4%)` while paused): the done figure is the percentage's, so they agree and never fall."""
    tracking = fresh()
    tracking = observe(
        tracking, 1.0, snapshot({TPS[0]: 900}), TARGETS, watched=(), recompute=None, done=never
    )
    assert tracking.done_bytes == 900 == round(tracking.percent / 100 * tracking.total_bytes)
    grown = snapshot({TPS[0]: 900}, size=3000)  # producers tripled it: the copy's share fell, growth rose
    tracking = observe(tracking, 2.0, grown, TARGETS, watched=(), recompute=None, done=never)
    assert tracking.done_bytes == 900 and tracking.grown_bytes == 12000

"""What the throttle quotas cost the simulator: a reallocation finds each quota's state once, whatever the
number of copies through it; the next event is found once per change; and the quota times it keeps without
solving them again are those a fresh solve finds (the window, its inflow, phase and rate unchanged)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from reassignd.sim import SimCluster, load_scenario
from reassignd.sim.core import ClusterCore

MB = 1_000_000


def _moving(partitions: int, follower_rate: int, leader_rate: int | None = None) -> SimCluster:
    """`partitions` partitions on brokers 1-2 each adding a replica on 3 or 4, throttled on both sides."""
    rates = {"follower.replication.throttled.rate": str(follower_rate)}
    if leader_rate is not None:
        rates["leader.replication.throttled.rate"] = str(leader_rate)
    sim = SimCluster.from_scenario(
        load_scenario(
            {
                "brokers": [{"id": b} for b in range(1, 5)],
                "topics": [
                    {
                        "name": "t",
                        "partitions": partitions,
                        "replication_factor": 2,
                        "partition_bytes": [(3 + i % 4) * MB for i in range(partitions)],
                        "produce_bytes_per_sec": 20_000.0,
                        "configs": {"min.insync.replicas": "1"},
                        "assignment": [[1, 2] if i % 2 else [2, 1] for i in range(partitions)],
                    }
                ],
                "cluster_broker_configs": rates,
            }
        )
    )
    sim.incremental_alter_configs(
        2,
        "t",
        [
            ("follower.replication.throttled.replicas", 0, "*"),
            ("leader.replication.throttled.replicas", 0, "*"),
        ],
        False,
    )
    for i in range(partitions):
        sim.alter_partition_reassignment("t", i, [1, 2, 3 + i % 2])
    return sim


def _count(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    calls = [0]
    original = getattr(ClusterCore, name)

    def counted(self: ClusterCore, *args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ClusterCore, name, counted)
    return calls


def test_a_reallocation_finds_each_quotas_state_once(monkeypatch: pytest.MonkeyPatch) -> None:
    sim = _moving(40, follower_rate=10 * MB, leader_rate=20 * MB)
    sim.advance(0.5)
    calls = _count(monkeypatch, "_quota_state_now")
    sim._dirty = True
    sim.advance(0.0)  # one reallocation: 40 copies, each behind a follower and a leader quota
    assert len(sim._gated) == 40
    assert 0 < calls[0] <= 4  # the follower quotas of 3 and 4, the leader quotas of 1 and 2


def test_the_next_event_is_found_once_per_change(monkeypatch: pytest.MonkeyPatch) -> None:
    sim = _moving(40, follower_rate=10 * MB)
    first = sim.next_event_time()
    calls = _count(monkeypatch, "_target")
    assert all(sim.next_event_time() == first for _ in range(50))
    assert calls[0] == 0
    sim.advance(0.0 if first is None else first - sim.now)
    sim.next_event_time()
    assert calls[0] <= 40


@pytest.mark.parametrize(("follower_rate", "leader_rate"), [(300_000, None), (8 * MB, 12 * MB)])
def test_the_quota_times_kept_are_those_a_fresh_solve_finds(
    follower_rate: int, leader_rate: int | None
) -> None:
    """At 300 kB/s the follower quotas go grant by grant (GRANTS); at 8 and 12 MB/s they burst, pause and
    share their rate (WINDOW). After every event each kept time is the one its window gives now."""
    sim = _moving(12, follower_rate=follower_rate, leader_rate=leader_rate)
    checked = 0
    for _ in range(400):
        upcoming = sim.next_event_time()
        if upcoming is None:
            break
        sim.advance(upcoming - sim.now)
        sim.next_event_time()  # reallocated after the event
        now = sim.now
        for key, kept in sim._quota_at.items():
            regime, phase = sim._quota_state[key]
            window, rate = sim._windows[key], sim._quota_rate(key)
            if phase == "pause":  # solved again on every reallocation (its window grows with time)
                continue
            if phase in ("open", "burst"):
                fresh = window.copy().closes_at(now, rate) if window.inflow > rate else math.inf
            else:
                fresh = window.copy().opens_at(now, rate)
            assert fresh == pytest.approx(kept, abs=1e-9), (now, key, regime, phase)
            checked += 1
    assert not sim.list_partition_reassignments(None)
    assert checked >= 5

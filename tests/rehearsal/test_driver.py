"""The rehearsal driver against closed-form durations: one move of S bytes at throttle r, produce w."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassignd.engine import Limits
from reassignd.model import ReassignmentPlan
from reassignd.rehearsal import cluster_from_snapshot, rehearse
from reassignd.sim import SimCluster, load_scenario

MB = 1_000_000


def scenario(size: int, produce: float, partitions: int = 1) -> dict[str, Any]:
    return {
        "seed": 1,
        "brokers": [{"id": b, "rack": f"/dc1/rack{b}"} for b in (1, 2, 3, 4)],
        "topics": [
            {
                "name": "t",
                "partitions": partitions,
                "replication_factor": 2,
                "partition_bytes": size,
                "produce_bytes_per_sec": produce,
                "assignment": [[1, 2]] * partitions,
            }
        ],
    }


def plan_of(moves: dict[int, list[int]]) -> ReassignmentPlan:
    return ReassignmentPlan.from_dict(
        {
            "version": 1,
            "partitions": [{"topic": "t", "partition": p, "replicas": r} for p, r in moves.items()],
        }
    )


def limits(rate: int, **extra: Any) -> Limits:
    return Limits.from_mapping(
        {"follower.reassignment.throttled.rate": rate, "leader.reassignment.throttled.rate": rate, **extra}
    )


@settings(max_examples=30, deadline=None)
@given(
    size=st.integers(10 * MB, 2000 * MB),
    rate=st.integers(5 * MB, 60 * MB),
    produce_share=st.floats(0.0, 0.45),
    interval=st.sampled_from([0.5, 1.0, 5.0, 10.0]),
)
def test_one_move_ends_by_the_first_cycle_after_size_over_what_the_throttles_leave(
    size: int, rate: int, produce_share: float, interval: float
) -> None:
    """Kafka's leader throttle also meters the in-sync follower's replication of the partition (the
    simulator follows it: docs/simulator.md), so the new replica gets rate - produce and closes its lag at
    rate - 2 produce; each throttle's window lets up to one window (12 s) of its rate through early."""
    produce = rate * produce_share
    sim = SimCluster.from_scenario(load_scenario(scenario(size, produce)))
    result = rehearse(sim, plan_of({0: [1, 3]}), limits(rate), cycle_interval=interval)
    catch_up = size / (rate - 2 * produce)
    # the step starts in cycle 0 and is seen complete by the first cycle at or after it caught up
    latest = math.ceil(catch_up / interval - 1e-9) * interval
    assert result.finished, result.ended_because
    assert result.duration_seconds <= latest + 1e-6
    assert result.duration_seconds >= (size - 12.0 * rate) / (rate - produce) - 1e-6
    assert result.steps == 1
    assert result.bytes_in[3] >= size
    # throttles restored: nothing of ours is left on the cluster
    assert all(not b.configs for b in sim.brokers.values())
    assert not any(k.endswith("throttled.replicas") for k in sim.topics["t"].configs)


def test_a_move_whose_throttle_does_not_exceed_the_produce_rate_is_reported_and_the_rehearsal_stops() -> None:
    sim = SimCluster.from_scenario(load_scenario(scenario(100 * MB, 10 * MB)))
    result = rehearse(sim, plan_of({0: [1, 3]}), limits(10 * MB), cycle_interval=5.0)
    assert not result.finished
    assert result.ended_because.startswith("stuck")
    [stuck] = result.never_converging
    assert (stuck.tp.partition, stuck.broker) == (0, 3)
    assert stuck.fetch_bytes_per_sec <= stuck.produce_bytes_per_sec


def test_limits_serialise_moves_into_the_destination_broker() -> None:
    parts = {p: [1, 3] for p in range(4)}
    one_at_a_time = rehearse(
        SimCluster.from_scenario(load_scenario(scenario(100 * MB, 0.0, partitions=4))),
        plan_of(parts),
        limits(10 * MB, **{"reassignment.max.incoming.replica.movements.per.broker": 1}),
        cycle_interval=1.0,
    )
    all_at_once = rehearse(
        SimCluster.from_scenario(load_scenario(scenario(100 * MB, 0.0, partitions=4))),
        plan_of(parts),
        limits(10 * MB, **{"reassignment.max.incoming.replica.movements.per.broker": 4}),
        cycle_interval=1.0,
    )
    # the follower throttle is shared on broker 3: same bytes, same rate, but serial adds a cycle per move
    assert one_at_a_time.peak_incoming[3] == 1
    assert all_at_once.peak_incoming[3] == 4
    assert all_at_once.duration_seconds == pytest.approx(40.0, abs=1.0)
    assert one_at_a_time.duration_seconds == pytest.approx(40.0, abs=4.0)
    assert max(s.incoming.get(3, 0) for s in one_at_a_time.timeline) == 1


def test_a_snapshot_copy_keeps_sizes_and_takes_produce_rates_from_the_caller() -> None:
    original = SimCluster.from_scenario(load_scenario(scenario(100 * MB, 1 * MB, partitions=2)))
    copy = cluster_from_snapshot(original.to_snapshot(), topic_produce_rates={"t": 3 * MB})
    assert [p.log_end for p in copy.topics["t"].partitions] == [100 * MB, 100 * MB]
    assert [p.produce_bytes_per_sec for p in copy.topics["t"].partitions] == [3 * MB, 3 * MB]
    result = rehearse(copy, plan_of({0: [1, 3]}), limits(13 * MB), cycle_interval=1.0)
    # Kafka's throttles as the simulator follows them (docs/simulator.md): the follower's first second brings
    # 13 MB at once, then 13 MB/s; the leader's quota also meters the in-sync follower's 3 MB/s, which the
    # rate the engine writes carries (docs/engine.md, KIP-73), so the leader lets the 13 MB/s through:
    # 100 MB against 3 MB/s of growth, done in ~10 s
    assert result.duration_seconds == pytest.approx(10.0, abs=1.0)


def test_timeline_runs_forward_and_ends_with_nothing_left_and_nothing_moving() -> None:
    sim = SimCluster.from_scenario(load_scenario(scenario(50 * MB, 100_000, partitions=6)))
    result = rehearse(sim, plan_of({p: [1 + p % 2, 3 + p % 2] for p in range(6)}), limits(10 * MB))
    times = [s.time for s in result.timeline]
    assert times == sorted(times) and times[0] == 0.0
    assert result.timeline[0].remaining_bytes >= 6 * 50 * MB
    assert result.timeline[-1].remaining_bytes == 0 and not result.timeline[-1].incoming
    assert max(sum(s.incoming.values()) for s in result.timeline) == sum(result.peak_incoming.values())
    doc = result.to_json_dict(with_timeline=True)
    assert doc["finished"] and doc["predicted_duration_seconds"] == result.duration_seconds
    assert len(doc["timeline"]) == len(result.timeline)
    assert sum(b["bytes_in"] for b in doc["brokers"]) == sum(result.bytes_in.values()) >= 6 * 50 * MB


def test_a_step_blocked_by_an_offline_target_ends_the_rehearsal_with_the_reason() -> None:
    sim = SimCluster.from_scenario(load_scenario(scenario(50 * MB, 0.0)))
    sim.stop_broker(3)
    result = rehearse(sim, plan_of({0: [1, 3]}), limits(10 * MB))
    assert not result.finished
    assert result.ended_because.startswith("waiting for stopped broker(s) 3: 1 partition(s)"), result
    assert "(t-0)" in result.ended_because, "which partitions, to re-target them"


def test_a_bad_cycle_interval_is_refused() -> None:
    sim = SimCluster.from_scenario(load_scenario(scenario(50 * MB, 0.0)))
    with pytest.raises(ValueError, match="cycle_interval"):
        rehearse(sim, plan_of({0: [1, 3]}), limits(10 * MB), cycle_interval=0.0)


class StopsBroker1At5(SimCluster):
    """Broker 1 stops at t=5 s, outside the rehearsal's own actions (as a benchmark's failure would)."""

    def advance(self, seconds: float) -> None:
        end = self.now + seconds
        if self.now < 5.0 <= end and self.brokers[1].online:
            super().advance(5.0 - self.now)
            self.stop_broker(1)
        super().advance(end - self.now)


def test_a_broker_stopping_under_the_rehearsal_is_seen_by_the_engine() -> None:
    data = scenario(100 * MB, 0.0, partitions=2)
    data["topics"][0]["assignment"] = [[3, 2], [1, 2]]  # both move leadership to 2
    data["topics"][0]["partition_bytes"] = [200 * MB, 100 * MB]  # larger first: partition 0 goes first
    sim = StopsBroker1At5.from_scenario(load_scenario(data))
    one_at_a_time = limits(10 * MB, **{"reassignment.max.incoming.replica.movements.per.broker": 1})
    result = rehearse(sim, plan_of({0: [2, 4], 1: [2, 4]}), one_at_a_time, cycle_interval=1.0)
    # partition 1 waited for broker 4; its leader 1 failed over to 2 meanwhile, so its step can start
    assert result.finished, result.ended_because
    assert [list(p.replicas) for p in sim.topics["t"].partitions] == [[2, 4], [2, 4]]


def test_a_rehearsal_moves_replicas_between_log_dirs_under_their_throttle() -> None:
    """The rehearsal runs the daemon's machine, log-dir moves included: 100 MB between two dirs of broker 1
    at a 10 MB/s log-dir throttle takes ten seconds and more, and ends with every replica in its dir."""
    dirs = ["/d/a", "/d/b"]
    sim = SimCluster.from_scenario(
        load_scenario(
            {
                "seed": 1,
                "brokers": [{"id": b, "rack": f"r{b}", "log_dirs": dirs} for b in (1, 2, 3)],
                "topics": [
                    {
                        "name": "t",
                        "partitions": 2,
                        "replication_factor": 2,
                        "partition_bytes": 100 * MB,
                        "produce_bytes_per_sec": 0,
                        "assignment": [[1, 2], [2, 1]],
                        "log_dirs": [["/d/a", "/d/a"], ["/d/a", "/d/a"]],
                    }
                ],
            }
        )
    )
    plan = ReassignmentPlan.from_dict(
        {
            "version": 1,
            "partitions": [
                {"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["/d/b", "any"]},
                {"topic": "t", "partition": 1, "replicas": [3, 1], "log_dirs": ["/d/b", "/d/b"]},
            ],
        }
    )
    limits = Limits.from_mapping(
        {"log.dir.reassignment.throttled.rate": 10 * MB, "follower.reassignment.throttled.rate": 50 * MB}
    )
    result = rehearse(sim, plan, limits, cycle_interval=5.0)
    assert result.finished, result.ended_because
    parts = sim.topics["t"].partitions
    assert [sim.dir_of(parts[0], 1), sim.dir_of(parts[1], 3), sim.dir_of(parts[1], 1)] == ["/d/b"] * 3
    assert result.duration_seconds >= 10
    assert all(
        "replica.alter.log.dirs.io.max.bytes.per.second" not in b.configs for b in sim.brokers.values()
    )


@pytest.mark.parametrize("full", [True, False])
def test_a_read_of_every_size_reads_the_partitions_that_sit_still(full: bool) -> None:
    """The rehearsal's reader kept what could not have changed, sizes included: a partition waiting for
    its turn showed its size at the start at every full read, so the ETA saw no producers there, then all
    their writes since the start at once when it moved (bench/bench_eta.py throttle-drop: 66% high at the
    end). Producers change sizes all the time; a full read gets them, as DescribeLogDirs does."""
    from reassignd.engine.run.reading import ReadRequest
    from reassignd.model import TopicPartition
    from reassignd.rehearsal.driver import SimModel

    sim = SimCluster.from_scenario(load_scenario(scenario(100 * MB, 1 * MB, partitions=2)))
    plan = plan_of({0: [3, 2], 1: [4, 2]})
    model = SimModel(sim, plan)
    tps = tuple(plan.targets)
    first = model.read(ReadRequest(tps, dict.fromkeys(tps, ()), full=True))
    sim.advance(60.0)
    again = model.read(ReadRequest(tps, dict.fromkeys(tps, ()), full=True) if full else ReadRequest(tps, {}))
    waiting = TopicPartition("t", 1)
    grew = again.partitions[waiting].replica_sizes[1] - first.partitions[waiting].replica_sizes[1]
    assert grew == (60 * MB if full else 0)  # between full reads the sizes last read stand in


def test_a_plan_the_live_eta_says_never_finishes_at_this_throttle_ends_the_rehearsal_early() -> None:
    """The guide's drain with the produce rates a live measurement reads against the simulator at 20x:
    producers' traffic alone overfills brokers' links, followers fall out of the ISR and back, and the
    throttles change every cycle, so the driver stepped through every cycle to --max-days (1 day: 57 s of
    CPU, 30 days: half an hour). The daemon's own ETA says the plan never finishes at this throttle:
    held for a stall window with no step finishing, that ends the rehearsal, with its words."""
    from reassignd.demo import drain_plan

    sim = SimCluster.from_scenario(load_scenario(Path(__file__).parents[2] / "examples" / "guide.json"))
    for topic in sim.topics.values():
        for p in topic.partitions:
            sim.set_produce_rate(topic.name, p.index, 20 * p.produce_bytes_per_sec)
    plan = drain_plan(sim.to_snapshot(), (12,))
    rates_in_force = limits(
        50 * MB,
        **{
            "reassignment.max.incoming.replica.movements.per.broker": 2,
            "reassignment.max.outgoing.replica.movements.per.broker": 2,
        },
    )
    began = time.perf_counter()
    result = rehearse(sim, plan, rates_in_force, cycle_interval=10.0, max_seconds=6 * 3600.0)
    assert not result.finished
    assert result.ended_because.startswith("never at this rate: producers write "), result.ended_because
    assert result.duration_seconds < 3 * 3600.0
    assert time.perf_counter() - began < 15.0

"""The cluster's clock: the simulator's when its brokers answer it, the wall clock otherwise, never a jump."""

from __future__ import annotations

from reassignd import config_keys
from reassignd.engine.cluster_clock import ClusterTime, read, without_clock
from reassignd.model import Broker, ClusterSnapshot

CLOCK, SCALE = config_keys.SIM_CLOCK_SECONDS, config_keys.SIM_TIME_SCALE


def snapshot(configs: dict[int, dict[str, str]]) -> ClusterSnapshot:
    return ClusterSnapshot.build([Broker(b, None, True) for b in (1, 2)], [], broker_configs=configs)


def test_a_real_cluster_runs_on_the_wall_clock() -> None:
    assert read(snapshot({1: {}, 2: {}}), 1000.0, None) == ClusterTime(1000.0, 1000.0, 1.0)


def test_the_simulators_clock_is_the_earliest_its_brokers_answered() -> None:
    answered = snapshot({1: {CLOCK: "120.5", SCALE: "20.0"}, 2: {CLOCK: "121.5", SCALE: "20.0"}})
    clock = read(answered, 1000.0, None)
    assert clock == ClusterTime(1000.0, 120.5, 20.0)
    assert clock.to_wall(200.0) == 10.0


def test_a_read_without_the_clock_runs_on_at_the_last_scale_instead_of_jumping_to_the_wall_clock() -> None:
    last = ClusterTime(1000.0, 120.0, 20.0)
    assert read(snapshot({1: {}}), 1002.0, last) == ClusterTime(1002.0, 160.0, 20.0)


def test_a_paused_simulator_has_no_wall_clock_eta() -> None:
    assert ClusterTime(1000.0, 120.0, 0.0).to_wall(60.0) is None


def test_the_clock_is_no_brokers_config_for_the_engine() -> None:
    answered = snapshot({1: {CLOCK: "1.0", SCALE: "1.0", "leader.replication.throttled.rate": "5"}})
    assert dict(without_clock(answered).broker_configs[1]) == {"leader.replication.throttled.rate": "5"}

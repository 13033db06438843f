"""The produce rates a self-healing fix is rehearsed with: leader growth since its condition's onset, on the
cluster's clock."""

from __future__ import annotations

from reassignd import config_keys
from reassignd.daemon.produce_rates import ProduceRates
from reassignd.model import Broker, ClusterSnapshot, PartitionState, TopicPartition

A, B, C = (TopicPartition("t", p) for p in range(3))


def snapshot(sizes: dict[TopicPartition, int], clock: float | None = None) -> ClusterSnapshot:
    """Partitions led by broker 1 with these leader sizes (absent: no size read); the simulator's clock
    answered by broker 1 when given."""
    partitions = [
        PartitionState(tp, (1, 2), (1, 2), 1, replica_sizes={1: sizes[tp]} if tp in sizes else {})
        for tp in (A, B, C)
    ]
    configs = {}
    if clock is not None:
        configs = {1: {config_keys.SIM_CLOCK_SECONDS: str(clock), config_keys.SIM_TIME_SCALE: "20"}}
    return ClusterSnapshot.build([Broker(1), Broker(2)], partitions, broker_configs=configs)


def test_rates_are_the_leaders_growth_since_the_onset_on_the_clusters_clock() -> None:
    rates = ProduceRates()
    rates.begin(rates.clocked(snapshot({A: 1000, B: 5000}, clock=100.0), wall=0.0))
    # one wall second later the simulator at 20x is 20 s on: rates are per second of its clock
    rated, seconds = rates.rated(rates.clocked(snapshot({A: 3000, B: 4000, C: 10}, clock=120.0), wall=1.0))
    assert seconds == 20.0
    got = {tp: p.produce_bytes_per_sec for tp, p in rated.partitions.items()}
    assert got == {A: 100.0, B: 0.0, C: 0.0}  # B shrank (retention): 0; C had no size at the onset: none
    assert not any(config_keys.SIM_CLOCK_SECONDS in c for c in rated.broker_configs.values())


def test_the_onset_is_kept_until_forgotten() -> None:
    rates = ProduceRates()
    rates.begin(rates.clocked(snapshot({A: 1000}), wall=10.0))
    rates.begin(rates.clocked(snapshot({A: 2000}), wall=20.0))  # a later check: the onset stands
    _, seconds = rates.rated(rates.clocked(snapshot({A: 4000}), wall=40.0))
    assert seconds == 30.0
    rates.forget()
    rated, seconds = rates.rated(rates.clocked(snapshot({A: 8000}), wall=50.0))
    assert seconds == 0.0 and rated.partitions[A].produce_bytes_per_sec == 0.0


def test_no_onset_before_a_read_with_sizes() -> None:
    rates = ProduceRates()
    rates.begin(rates.clocked(snapshot({}), wall=0.0))
    rates.begin(rates.clocked(snapshot({A: 1000}), wall=5.0))
    _, seconds = rates.rated(rates.clocked(snapshot({A: 2000}), wall=15.0))
    assert seconds == 10.0


def test_growth_over_a_few_seconds_is_no_rate() -> None:
    """The onset and the proposal read in one check (a threshold of 0): milliseconds apart, not a rate."""
    rates = ProduceRates()
    rates.begin(rates.clocked(snapshot({A: 1000}), wall=100.0))
    rated, seconds = rates.rated(rates.clocked(snapshot({A: 1500}), wall=100.02))
    assert seconds == 0.0 and rated.partitions[A].produce_bytes_per_sec == 0.0

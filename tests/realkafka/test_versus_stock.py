"""Issue 28, part 3: one small scenario of `python -m bench realkafka` run by each tool on a real six-broker
KRaft cluster, judged on correctness, never on timing: the final replica lists are the plan's, reassignd's
concurrent movements stay within its limits where the stock tool's do not, and the throttle configs end as
they began for reassignd. The stock tool's `--verify` removes an operator's broker rate it never set
(ReassignPartitionsCommand `clearAllThrottles`): asserted, so the benchmark table's claim stays true.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench.bench_realkafka import MIB, RACKS, Sizes, _one_run, initial_assignment, target_assignment
from reassignd import config_keys
from reassignd.localkafka.cluster import KafkaCluster
from reassignd.localkafka.probe import ClusterProbe
from reassignd.localkafka.tools import ReassignTool

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

# The rate is low enough for the copies to outlast a quota window (a first window lets ~11 s of the rate
# through at once): each tool runs its moves concurrently for several seconds, where the samples see them.
SIZES = Sizes(partitions=12, partition_bytes=2 * MIB, produce_bytes_per_second=16 * 1024, rate=512 * 1024)
PER_BROKER = 2
LIMITS = {
    config_keys.REASSIGNMENT_MAX_INCOMING_REPLICA_MOVEMENTS_PER_BROKER: PER_BROKER,
    config_keys.REASSIGNMENT_MAX_OUTGOING_REPLICA_MOVEMENTS_PER_BROKER: PER_BROKER,
}
# An operator's rate on broker 3, the drain's receiver, on the side no move of the scenario uses (broker 3
# leads none of the partitions that move): each tool's run starts with it set.
OPERATOR_KEY = "broker 3: leader.replication.throttled.rate"
OPERATOR_RATE = "1000000000"


def test_the_drain_by_each_tool_on_a_real_cluster(
    fresh_kafka_cluster: Callable[..., KafkaCluster],
    probe_of: Callable[[KafkaCluster], ClusterProbe],
    tmp_path: Path,
) -> None:
    start = initial_assignment("drain", SIZES.partitions)
    moving = target_assignment("drain", start)
    assert {r[0] for p, r in start.items() if p in moving}.isdisjoint({3}), "the operator's side is unused"
    assert len(moving) > PER_BROKER, "the scenario must be bounded by the per-broker limit"

    cluster = fresh_kafka_cluster(brokers=6, racks=RACKS, log_dirs_per_broker=1)
    probe = probe_of(cluster)
    tool = ReassignTool(cluster.bootstrap_servers, tmp_path / "tool")

    runs: dict[str, dict[str, Any]] = {}
    for who in ("stock", "reassignd"):
        probe.set_broker_config(3, "leader.replication.throttled.rate", OPERATOR_RATE)
        # _one_run raises unless every partition ends on the plan's replicas
        runs[who] = _one_run(cluster, probe, tool, "drain", who, SIZES, tmp_path, LIMITS)
        assert probe.reassignments() == {}, f"{who}: something still moves"

    ours, stock = runs["reassignd"], runs["stock"]
    assert ours["throttles_left"] == {}, "reassignd must restore every throttle config exactly"
    assert stock["throttles_left"] == {OPERATOR_KEY: None}, "the stock tool's --verify removes it"
    assert max(ours["peak_incoming_per_broker"].values()) <= PER_BROKER, ours["peak_incoming_per_broker"]
    assert ours["peak_moves_per_broker"] <= PER_BROKER, ours
    assert stock["peak_moves_per_broker"] > PER_BROKER, "the stock tool moves everything at once"
    assert ours["producer_errors"] == {}, ours["producer_errors"]

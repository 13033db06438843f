"""The throttle really throttles: `reassignd run` moves one replica of a real KRaft cluster at a set rate, as
the receiving broker writes it (DescribeLogDirs, sampled by the test), and a rate raised with
`reassignd throttle` mid-copy speeds the copy up.

How Kafka enforces it (ReplicationQuotaManager, KIP-73): every broker keeps one quota per direction, a
`SimpleRate` over the last `replication.quota.window.num` x `replication.quota.window.size.seconds` (11 x 1 s,
Kafka's defaults, kept here): the bytes recorded since the oldest sample over the time since then, at least
one window. A receiving broker records only throttled partitions, so its quota starts afresh with our copy:
the copy's first window may take one window's worth at once (3 MiB at 2 MB/s here, then a pause), after that
it runs at the rate (a fetch of up to `replica.fetch.max.bytes`, 1 MiB, each time the quota is not exceeded).
A leader records every follower fetch, throttled bytes or none, so its window always spans the last 11 s and
would let about 11 s' worth through at once: the receiving side is what holds a copy's start (conftest.py,
SHORT_QUOTA_WINDOW). A raised bound applies at the next fetch: the window's history is below it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from reassignd.localkafka.cluster import KafkaCluster
from reassignd.localkafka.load import fill
from reassignd.localkafka.probe import ClusterProbe, Copy, CopySampler, ThrottleSampler
from tests.realkafka.conftest import create_topic
from tests.services.daemon import DaemonProcess

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

RATE = 2_000_000  # bytes/s, leader and follower
RAISED = 6_000_000
RATES = {"leader.reassignment.throttled.rate": RATE, "follower.reassignment.throttled.rate": RATE}
TOLERANCE = 0.25
QUOTA_WINDOW_SECONDS = 11 * 1.0  # replication.quota.window.num x replication.quota.window.size.seconds
CYCLE_SECONDS = 0.2  # DaemonProcess's controller.cycle.interval.seconds
FETCH_BYTES = 1024 * 1024  # replica.fetch.max.bytes: what one fetch may copy past the quota
COPY_BYTES = 20 * 1024 * 1024  # 10 s at the rate: the samples' timing error is a small share of it
DAEMON_START_SECONDS = 90.0  # `reassignd run` imports for tens of seconds on a box loaded 20 times over


def one_partition_topic(
    cluster: KafkaCluster, probe: ClusterProbe, topic: str, replicas: list[int], size: int
) -> int:
    """A one-partition topic filled with `size` bytes; the leader's log size (what a copy must reach)."""
    create_topic(probe, topic, {0: replicas})
    fill(cluster.bootstrap_servers, topic, [0], size)
    leader_size = probe.replica_size(topic, 0, replicas[0])
    assert leader_size is not None and leader_size >= size
    return leader_size


def move(topic: str, replicas: list[int]) -> dict[str, Any]:
    return {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": replicas}]}


def run_plan(daemon: DaemonProcess, plan: dict[str, Any], sampler: CopySampler) -> dict[str, Any]:
    with sampler:
        plan_id = daemon.submit(plan)
        return daemon.wait_for_state(plan_id, {"completed", "cancelled", "failed"}, timeout=120)


def figures(copy: Copy) -> str:
    return f"{copy.size} bytes in {copy.seconds:.2f} s = {copy.rate / 1e6:.2f} MB/s"


@pytest.fixture(scope="module")
def unthrottled(kafka_cluster: KafkaCluster, tmp_path_factory: pytest.TempPathFactory) -> Copy:
    """The control: the same move as the throttled one, through a daemon with no rate, measured the same
    way. How fast this box copies now: a throttle cannot be told from a box that copies no faster."""
    probe = ClusterProbe(kafka_cluster.bootstrap_servers)
    try:
        size = one_partition_topic(kafka_cluster, probe, "throttle-control", [1, 2, 3], COPY_BYTES)
        daemon = DaemonProcess(tmp_path_factory.mktemp("control"), kafka_cluster.bootstrap_servers)
        daemon.start(timeout=DAEMON_START_SECONDS)
        control = CopySampler(probe, "throttle-control", 0, 4)
        try:
            status = run_plan(daemon, move("throttle-control", [1, 2, 4]), control)
        finally:
            daemon.stop()
        assert status["state"] == "completed", status
        assert daemon.log_records("error") == []
        assert not control.errors, control.errors
        return control.copy(size)
    finally:
        probe.close()


def require_capacity(control: Copy, needed: float) -> None:
    if control.rate < needed:
        load = os.getloadavg()[0]
        pytest.skip(
            f"this box copied {control.rate / 1e6:.1f} MB/s unthrottled (load average {load:.0f}), under "
            f"the {needed / 1e6:.0f} MB/s a {RATE / 1e6:.0f} MB/s throttle must be told from: re-run it "
            "when the box is less loaded"
        )


def test_a_throttled_copy_runs_at_the_rate_and_an_unthrottled_one_is_several_times_faster(
    kafka_cluster: KafkaCluster, probe_of: Any, tmp_path: Path, unthrottled: Copy
) -> None:
    require_capacity(unthrottled, 3 * RATE)
    probe = probe_of(kafka_cluster)
    topic = "throttle-slow"
    size = one_partition_topic(kafka_cluster, probe, topic, [1, 2, 3], COPY_BYTES)
    throttles_before = probe.throttle_configs([topic])

    daemon = DaemonProcess(tmp_path / "daemon", kafka_cluster.bootstrap_servers, RATES)
    daemon.start(timeout=DAEMON_START_SECONDS)
    throttled = CopySampler(probe, topic, 0, 4)
    try:
        status = run_plan(daemon, move(topic, [1, 2, 4]), throttled)
    finally:
        daemon.stop()
    assert status["state"] == "completed", status
    assert daemon.log_records("error") == []
    assert probe.replicas(topic) == {0: [1, 2, 4]}
    assert probe.throttle_configs([topic]) == throttles_before

    slow = throttled.copy(size)
    print(f"\nthrottled at {RATE / 1e6} MB/s: {figures(slow)}; unthrottled: {figures(unthrottled)}")
    assert not throttled.errors, throttled.errors
    # Over the whole copy (its first window's burst included) and past that burst (steady state).
    assert abs(slow.rate - RATE) <= TOLERANCE * RATE, figures(slow)
    steady_from = slow.started + 2.0
    steady = slow.rate_between(steady_from, slow.ended)
    assert abs(steady - RATE) <= TOLERANCE * RATE, f"{steady / 1e6:.2f} MB/s from {steady_from:.1f} s"
    # No stretch of the copy ran ahead of the rate by more than the burst Kafka's quota allows.
    for when, copied in slow.samples:
        if copied is not None and when > slow.started:
            allowed = RATE * (max(when - slow.started, 1.0) * (1 + TOLERANCE)) + FETCH_BYTES
            assert copied <= allowed, f"{copied} bytes copied {when - slow.started:.2f} s into the copy"
    assert unthrottled.rate >= 3 * slow.rate, f"unthrottled {figures(unthrottled)}, throttled {figures(slow)}"


def test_raising_the_rate_with_the_cli_mid_copy_speeds_the_copy_up_within_a_quota_window(
    kafka_cluster: KafkaCluster, probe_of: Any, tmp_path: Path, unthrottled: Copy
) -> None:
    """Leader 2 and receiver 3: brokers whose quotas the other test's copy did not use."""
    require_capacity(unthrottled, RAISED)
    probe = probe_of(kafka_cluster)
    topic = "throttle-raise"
    # 40 MiB: some 6 s at the raised rate, so the config sampler sees it on a loaded box (24 MiB: missed once)
    final_size = one_partition_topic(kafka_cluster, probe, topic, [2, 4, 1], 40 * 1024 * 1024)
    throttles_before = probe.throttle_configs([topic])

    daemon = DaemonProcess(tmp_path / "daemon", kafka_cluster.bootstrap_servers, RATES)
    daemon.start(timeout=DAEMON_START_SECONDS)
    sampler = CopySampler(probe, topic, 0, 3)
    # Its own probe: the copy's samples keep their pace while configs are read.
    configs = ThrottleSampler(probe_of(kafka_cluster), (topic,), (2, 3))
    try:
        with sampler, configs:
            plan_id = daemon.submit(move(topic, [2, 4, 3]))
            # 8 MB: 4 s at the old rate, long beside a loaded box's round trips (5 MB read 4.88 MB/s once)
            raised_at, at_raise = wait_for_sample(sampler, lambda size: size >= 8_000_000, timeout=60)
            raised_index = next(i for i, (when, _) in enumerate(sampler.samples) if when == raised_at)
            daemon.cli("throttle", "--leader-rate", f"{RAISED}", "--follower-rate", f"{RAISED}")
            applied_at = sampler.now()
            status = daemon.wait_for_state(plan_id, {"completed", "cancelled", "failed"}, timeout=120)
    finally:
        daemon.stop()
    assert status["state"] == "completed", status
    assert daemon.log_records("error") == []
    assert probe.replicas(topic) == {0: [2, 4, 3]}
    assert probe.throttle_configs([topic]) == throttles_before

    copy = sampler.copy(final_size)
    assert not sampler.errors, sampler.errors
    before = at_raise / (raised_at - copy.started)
    slowest, fastest = sampler.rate_bounds(raised_index)
    # The first second after the raise that copied more than the old rate allows (two fetches of slack).
    faster = next(
        (
            when
            for when, size in copy.samples
            if when > raised_at and (size or 0) - copy.size_at(when - 1.0) > RATE * 1.0 + 2 * FETCH_BYTES
        ),
        None,
    )
    # from the first second faster than the old rate allows: the broker may take up to a quota window
    # to follow the raise (asserted below), and averaging that wait in read 4.49 MB/s once under load
    after = copy.rate_between(applied_at if faster is None else faster - 1.0, copy.ended)
    print(
        f"\nbefore the raise: {before / 1e6:.2f} MB/s over {raised_at - copy.started:.2f} s; the CLI took "
        f"{applied_at - raised_at:.2f} s; faster than {RATE / 1e6} MB/s allows by "
        f"{None if faster is None else round(faster - raised_at, 2)} s after the CLI started, at "
        f"{after / 1e6:.2f} MB/s; copy ended {copy.ended - raised_at:.2f} s after it"
    )
    # judged on every timing the round trips allow, not on their midpoints alone
    assert slowest <= (1 + TOLERANCE) * RATE and fastest >= (1 - TOLERANCE) * RATE, (
        f"{slowest / 1e6:.2f} to {fastest / 1e6:.2f} MB/s before the raise (midpoints: {before / 1e6:.2f})"
    )
    assert faster is not None, f"the copy never outran {RATE} B/s after the raise: {copy.samples}"
    assert faster - applied_at <= QUOTA_WINDOW_SECONDS + CYCLE_SECONDS, (faster, applied_at, copy.samples)
    assert after >= (1 - TOLERANCE) * RAISED, f"{after / 1e6:.2f} MB/s after the raise: {copy.samples}"
    # What the brokers held: our rate, then the raised one, then nothing (as before the plan).
    assert not configs.errors, configs.errors
    assert configs.seen["broker 2: leader.replication.throttled.rate"] == [str(RATE), str(RAISED)], (
        configs.seen
    )
    assert configs.seen["broker 3: follower.replication.throttled.rate"] == [str(RATE), str(RAISED)], (
        configs.seen
    )


def wait_for_sample(sampler: CopySampler, predicate: Any, timeout: float) -> tuple[float, int]:
    """The first sample whose size satisfies `predicate`: (its time, its size)."""
    deadline = time.monotonic() + timeout
    seen = 0
    while time.monotonic() < deadline:
        for when, size in sampler.samples[seen:]:
            if size is not None and predicate(size):
                return when, size
        seen = len(sampler.samples)
        time.sleep(0.05)
    raise AssertionError(f"no sample satisfied the condition in {timeout} s: {sampler.samples}")

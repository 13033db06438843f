"""Issue 28, part 1: reassignd against Kafka's own tool on one real KRaft cluster, with real data.

A controller and six brokers in three racks (reassignd/localkafka/cluster.py), a topic of RF 3 and
min.insync.replicas 2 filled with incompressible records, and a producer with acks=all writing throughout.
Each scenario is run by both tools from the same starting state (the topic is deleted and recreated, and
refilled, before every run), at the same reassignment throttle:

- stock: kafka-tools' ReassignPartitionsCommand `--execute --throttle RATE`, then `--verify` every 2 s until
  it says every partition is done (its own way of clearing the throttles);
- reassignd: `reassignd run` as a child process, the same plan submitted over its API, the same rate as its
  leader and follower reassignment throttle, default limits.

Figures per run: makespan (wall, from submit to done), peak concurrent replica movements per broker
(ListPartitionReassignments every second), peak under-replicated partitions and seconds with a partition under
min ISR (Metadata every second), producer p99 latency and errors, leader skew after (max - min leaders per
broker), throttle configs left behind; for reassignd also the rehearsal's predicted duration and the live
ETA's largest error from 10% progress on. The machine has shared cores: the wall figures are noisy, and the
load average is recorded beside each run.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from reassignd.localkafka.probe import ClusterProbe, Sampler

MIB = 1024 * 1024
TOPIC = "bench"
RACKS = {
    1: "/dc1/rack-a",
    2: "/dc1/rack-b",
    3: "/dc1/rack-c",
    4: "/dc1/rack-a",
    5: "/dc1/rack-b",
    6: "/dc1/rack-c",
}
MIN_ISR = 2
STOCK_VERIFY_INTERVAL = 2.0
# (partitions, bytes each, rate, leader throttle too): copies into one broker, real against simulated
CALIBRATION = [
    (1, 8 * MIB, 1 * MIB, False),
    (4, 8 * MIB, 1 * MIB, False),
    (4, 8 * MIB, 1 * MIB, True),
    (8, 4 * MIB, 4 * MIB, True),
    (2, 2 * MIB, 100 * 1000, False),
]
CALIBRATION_QUICK = [(2, 2 * MIB, 512 * 1024, True)]


# -- pure figures from samples (tested in tests/bench/test_realkafka.py) ------------------------------------


def isr_figures(
    samples: Sequence[tuple[float, Mapping[int, int]]], replication: int, min_isr: int
) -> dict[str, float]:
    """From (time, {partition: ISR size}) samples: the most under-replicated partitions seen at once, and the
    seconds during which some partition was under min ISR (each sample counts until the next one)."""
    peak = 0
    under = 0.0
    for i, (t, sizes) in enumerate(samples):
        peak = max(peak, sum(1 for n in sizes.values() if n < replication))
        if i + 1 < len(samples) and any(n < min_isr for n in sizes.values()):
            under += samples[i + 1][0] - t
    return {"peak_under_replicated": peak, "seconds_under_min_isr": round(under, 1)}


ETA_MIN_SECONDS_LEFT = 5.0
"""The ETA's error is judged where at least this much time is left: the end is seen at the daemon's cycle
(1 s) and the bench's poll (1 s), so with 2 s left a perfect ETA still reads up to 50% off."""


def eta_max_error(
    samples: Sequence[tuple[float, float, float | None]], finished_at: float, min_left: float = 0.0
) -> float | None:
    """From (time, percent done, ETA seconds) samples of one plan: the largest |predicted end - actual end|
    relative to the time that was left, over the samples at 10% progress or more with at least `min_left`
    seconds left (None without one)."""
    errors = []
    for t, percent, eta in samples:
        if percent < 10.0 or eta is None:
            continue
        left = finished_at - t
        if left <= 0 or left < min_left:
            continue
        errors.append(abs(eta - left) / left)
    return round(max(errors), 3) if errors else None


def throttle_changes(before: Mapping[str, str], after: Mapping[str, str]) -> dict[str, str | None]:
    """Every throttle config a run changed, added or removed (None: removed; the stock tool's `--verify`
    removes the broker rates whoever set them)."""
    return {k: after.get(k) for k in sorted({*before, *after}) if before.get(k) != after.get(k)}


def leader_skew(leaders: Mapping[int, int], brokers: Sequence[int]) -> int:
    """max - min leaders per broker, over every broker (one leading nothing counts 0)."""
    counts = Counter(leaders.values())
    per_broker = [counts.get(b, 0) for b in brokers]
    return max(per_broker) - min(per_broker)


def median_or_none(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 3) if present else None


# -- plans ---------------------------------------------------------------------------------------------------


def initial_assignment(scenario: str, partitions: int) -> dict[int, list[int]]:
    """Where the topic starts. drain: over brokers 1-6, each partition in three racks; fill: brokers 1-5 only
    (6 is the new broker); racks: racks a and b only (brokers 1, 2, 4, 5)."""
    if scenario == "fill":
        pool = [1, 2, 3, 4, 5]
        return {p: [pool[(p + i) % 5] for i in range(3)] for p in range(partitions)}
    if scenario == "racks":
        pool = [1, 2, 4, 5]
        return {p: [pool[(p + i) % 4] for i in range(3)] for p in range(partitions)}
    return {p: [(p + i) % 6 + 1 for i in range(3)] for p in range(partitions)}


def target_assignment(scenario: str, start: Mapping[int, list[int]]) -> dict[int, list[int]]:
    """drain: broker 6's replicas to the other broker of its rack (3) or, where 3 holds one already, to a
    broker the partition lacks; fill: every other partition gives its last replica to broker 6; racks: every
    replica on rack b (2, 5) moves to rack c (3, 6)."""
    target: dict[int, list[int]] = {}
    for p, replicas in start.items():
        new = list(replicas)
        if scenario == "drain" and 6 in new:
            spare = [b for b in (3, 1, 2, 4, 5) if b not in new]
            new[new.index(6)] = spare[0]
        elif scenario == "fill" and p % 2 == 0:
            new[-1] = 6
        elif scenario == "racks":
            new = [{2: 3, 5: 6}.get(b, b) for b in new]
        if new != replicas:
            target[p] = new
    return target


def plan_document(target: Mapping[int, list[int]]) -> dict[str, Any]:
    return {
        "version": 1,
        "partitions": [{"topic": TOPIC, "partition": p, "replicas": r} for p, r in sorted(target.items())],
    }


# -- samplers ------------------------------------------------------------------------------------------------


@dataclass
class IsrSampler(Sampler):
    """Metadata of the topic every `interval` seconds in a thread: (time, {partition: ISR size})."""

    probe: ClusterProbe
    interval: float = 1.0
    samples: list[tuple[float, dict[int, int]]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    thread_name = "isr-sampler"

    def sample_once(self) -> None:
        started = time.monotonic()
        self.samples.append((started, {p: len(isr) for p, isr in self.probe.isr(TOPIC).items()}))


# -- one run -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sizes:
    partitions: int
    partition_bytes: int
    produce_bytes_per_second: int
    rate: int  # the reassignment throttle, bytes/s


def _recreate_topic(probe: Any, bootstrap: str, assignment: Mapping[int, list[int]], sizes: Sizes) -> None:
    from reassignd.localkafka.load import fill

    admin = probe.admin
    if TOPIC in admin.list_topics(timeout=15).topics:
        admin.delete_topics([TOPIC])[TOPIC].result(30)
        deadline = time.monotonic() + 60
        while TOPIC in admin.list_topics(timeout=15).topics and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(2)  # the brokers finish deleting the logs
    probe.create_topic(TOPIC, assignment, {"min.insync.replicas": str(MIN_ISR)})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            isr = probe.isr(TOPIC)
            leaders = probe.leaders(TOPIC)
            if len(isr) == len(assignment) and all(
                len(isr[p]) == 3 and leaders[p] == assignment[p][0] for p in assignment
            ):
                break
        except Exception:
            pass
        time.sleep(0.5)
    fill(bootstrap, TOPIC, list(assignment), sizes.partition_bytes)


def _run_stock(tool: Any, plan: dict[str, Any], rate: int) -> tuple[float, dict[str, Any]]:
    """--execute, then --verify every 2 s until done; also how long each verify took (a JVM each)."""
    started = time.monotonic()
    tool.execute(plan, throttle=rate)
    verifies = []
    while True:
        time.sleep(STOCK_VERIFY_INTERVAL)
        asked = time.monotonic()
        out = tool.verify(plan, check=False).stdout
        verifies.append(time.monotonic() - asked)
        if "is still in progress" not in out and "is completed" in out:
            return time.monotonic() - started, {
                "verify_seconds_median": round(statistics.median(verifies), 2)
            }
        if time.monotonic() - started > 1800:
            raise AssertionError(f"stock tool not done after 30 min: {out[-500:]}")


def _simulated(  # noqa: PLR0917  # one run's every input
    who: str, before: Any, plan: dict[str, Any], rate: int, sizes: Sizes, limits: Mapping[str, Any]
) -> float:
    """The simulator's makespan for the same run, from a snapshot of the live cluster: reassignd's
    rehearsal (the daemon's engine over the simulated cluster), or the stock tool's model
    (bench/strategies.py `run_stock_on`: --execute, then --verify every 2 s; done at the verify that
    finds it done)."""
    from bench.strategies import Meter, run_stock_on
    from reassignd.demo_kafka import _rehearsed
    from reassignd.engine import Limits
    from reassignd.model import ReassignmentPlan
    from reassignd.rehearsal import cluster_from_snapshot

    the_plan = ReassignmentPlan.from_dict(plan)
    limits = {**_throttle_limits(rate), **limits}
    produce = sizes.produce_bytes_per_second / sizes.partitions
    if who == "reassignd":
        return _rehearsed(before, the_plan, limits, produce)
    meter = Meter(cluster_from_snapshot(before, produce_rate=produce), the_plan, ())
    run = run_stock_on(meter, Limits.from_mapping(limits), STOCK_VERIFY_INTERVAL, 3600.0)
    return run.cycles * STOCK_VERIFY_INTERVAL


def _throttle_limits(rate: int) -> dict[str, Any]:
    from reassignd import config_keys

    return {
        config_keys.LEADER_REASSIGNMENT_THROTTLED_RATE: rate,
        config_keys.FOLLOWER_REASSIGNMENT_THROTTLED_RATE: rate,
    }


def _run_reassignd(
    bootstrap: str, workdir: Path, plan: dict[str, Any], limits: Mapping[str, Any], predicted: float
) -> tuple[float, dict[str, Any]]:
    from reassignd import config_keys
    from reassignd.client import ApiClient
    from reassignd.demo import DaemonProcess

    workdir.mkdir(parents=True, exist_ok=True)
    daemon = DaemonProcess(workdir, bootstrap, {**limits, config_keys.CONTROLLER_CYCLE_INTERVAL_SECONDS: 1.0})
    daemon.start(timeout=120)
    try:
        client = ApiClient(daemon.api_url, token=daemon.token, timeout=10.0)
        _wait_for_the_writer_right(client)
        started = time.monotonic()
        plan_id = str(client.submit_plan(plan)["plan_id"])
        etas: list[tuple[float, float, float | None]] = []
        eta_trace: list[tuple[float, Any, Any, Any]] = []
        while True:
            status = client.status(plan_id)
            now = time.monotonic()
            progress = status.get("progress") or {}
            etas.append((now, float(progress.get("percent") or 0.0), progress.get("eta_seconds")))
            eta_trace.append(
                (
                    round(now - started, 1),
                    progress.get("percent"),
                    progress.get("eta_seconds"),
                    progress.get("eta_reason"),
                )
            )
            if status["state"] in ("completed", "cancelled"):
                took = now - started
                break
            if now - started > 1800:
                raise AssertionError(f"reassignd not done after 30 min: {status['state']}")
            time.sleep(1.0)
        if status["state"] != "completed":
            raise AssertionError(f"reassignd's plan ended {status['state']}")
        return took, {
            "rehearsal_predicted_s": round(predicted, 1),
            "rehearsal_error": round(abs(predicted - took) / took, 3),
            "eta_max_error_after_10pct": eta_max_error(etas, now, ETA_MIN_SECONDS_LEFT),
            "eta_max_error_after_10pct_any_time_left": eta_max_error(etas, now),
            "eta_trace": eta_trace,
        }
    finally:
        daemon.stop()


def _wait_for_the_writer_right(client: Any, timeout: float = 60.0) -> None:
    """A daemon is long-running: the clock starts once it holds the cluster's writer right, as an operator's
    would, not while its writer group forms (Kafka's group.initial.rebalance.delay.ms, 3 s)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (client.status().get("writer") or {}).get("self"):
            return
        time.sleep(0.2)
    raise AssertionError(f"the daemon did not get the writer right in {timeout} s")


def _one_run(  # noqa: PLR0917  # one run's every input
    cluster: Any,
    probe: Any,
    tool: Any,
    scenario: str,
    who: str,
    sizes: Sizes,
    workdir: Path,
    limits: Mapping[str, Any] = MappingProxyType({}),
) -> dict[str, Any]:
    """One tool's run of one scenario from a fresh topic, with its figures. `limits`: reassignd's other
    than the throttle (its defaults otherwise)."""
    from reassignd.demo_kafka import _read
    from reassignd.localkafka.load import RateProducer
    from reassignd.localkafka.probe import ReassignmentSampler

    bootstrap = cluster.bootstrap_servers
    start = initial_assignment(scenario, sizes.partitions)
    target = target_assignment(scenario, start)
    plan = plan_document(target)
    _recreate_topic(probe, bootstrap, start, sizes)
    throttles_before = probe.throttle_configs([TOPIC])
    simulated = _simulated(who, asyncio.run(_read(bootstrap)), plan, sizes.rate, sizes, limits)
    load_before = os.getloadavg()[0]
    extra: dict[str, Any] = {}
    with (
        RateProducer(bootstrap, TOPIC, list(start), sizes.produce_bytes_per_second) as producer,
        ReassignmentSampler(probe) as moves,
        IsrSampler(probe) as isr,
    ):
        if who == "stock":
            took, extra = _run_stock(tool, plan, sizes.rate)
        else:
            took, extra = _run_reassignd(
                bootstrap,
                workdir / f"daemon-{scenario}-{time.time_ns()}",
                plan,
                {**_throttle_limits(sizes.rate), **limits},
                simulated,
            )
    report = producer.report
    replicas = probe.replicas(TOPIC)
    wrong = {p: replicas[p] for p, r in target.items() if replicas[p] != r}
    if wrong:
        raise AssertionError(f"{who} {scenario}: replicas not the plan's: {wrong}")
    left = throttle_changes(throttles_before, probe.throttle_configs([TOPIC]))
    p99 = report.latency_quantile(0.99)
    figures = {
        "tool": who,
        "makespan_s": round(took, 1),
        "load_1min_before": round(load_before, 2),
        "load_1min_after": round(os.getloadavg()[0], 2),
        "peak_moves_per_broker": max([*moves.peak_incoming.values(), *moves.peak_outgoing.values(), 0]),
        "peak_incoming_per_broker": dict(sorted(moves.peak_incoming.items())),
        "peak_replicas_moving": moves.peak_replicas,
        **isr_figures(isr.samples, 3, MIN_ISR),
        "producer_p99_ms": round(p99 * 1000, 1) if p99 is not None else None,
        "producer_errors": dict(report.errors),
        "leader_skew_after": leader_skew(probe.leaders(TOPIC), sorted(cluster.brokers)),
        "throttles_left": left,
        "simulated_s": round(simulated, 1),
        "simulator_error": round(abs(simulated - took) / took, 3),
        **extra,
    }
    print(f"   {scenario} {who}: {figures['makespan_s']} s, load {figures['load_1min_before']}", flush=True)
    return figures


# -- calibration: the simulator's copy time against the real broker's --------------------------------------


def _simulated_copy(snapshot: Any, topic: str, n: int, rate: int, leader: bool) -> float:
    """The simulator's seconds for the calibration's copies, from a snapshot of the live cluster."""
    from reassignd.rehearsal import cluster_from_snapshot

    sim = cluster_from_snapshot(snapshot, produce_rate=0.0)
    sim.incremental_alter_configs(_TOPIC_RESOURCE, topic, _calibration_topic_configs(n, leader))
    for broker, key in _calibration_rates(leader):
        sim.incremental_alter_configs(_BROKER_RESOURCE, str(broker), [(key, 0, str(rate))])
    started = sim.now
    for p in range(n):
        sim.alter_partition_reassignment(topic, p, [1, 2, 3])
    partitions = sim.topics[topic].partitions
    while any(partitions[p].adding or partitions[p].replicas != [1, 2, 3] for p in range(n)):
        sim.advance(0.1)
    return sim.now - started


_TOPIC_RESOURCE, _BROKER_RESOURCE = 2, 4


def _calibration_topic_configs(n: int, leader: bool) -> list[tuple[str, int, str | None]]:
    ops: list[tuple[str, int, str | None]] = [
        ("follower.replication.throttled.replicas", 0, ",".join(f"{p}:3" for p in range(n)))
    ]
    if leader:
        ops.append(("leader.replication.throttled.replicas", 0, ",".join(f"{p}:1" for p in range(n))))
    return ops


def _calibration_rates(leader: bool) -> list[tuple[int, str]]:
    rates = [(3, "follower.replication.throttled.rate")]
    return [*rates, (1, "leader.replication.throttled.rate")] if leader else rates


def calibrate_copy(cluster: Any, probe: Any, n: int, size: int, rate: int, *, leader: bool) -> dict[str, Any]:
    """N partitions of `size` on brokers [1, 2] each gain a replica on broker 3 at once, behind broker 3's
    follower throttle (and broker 1's leader throttle): the real broker's seconds until the last is done
    (ListPartitionReassignments every 0.1 s) beside the simulator's for the same snapshot and configs. No
    daemon, no producer: the copy model alone."""
    from kafka.structs import TopicPartition as KafkaTopicPartition

    from reassignd.demo_kafka import _read
    from reassignd.localkafka.load import fill

    topic = f"calibration-{n}-{'leader' if leader else 'follower'}"
    probe.create_topic(topic, {p: [1, 2] for p in range(n)}, {})
    time.sleep(2)
    fill(cluster.bootstrap_servers, topic, list(range(n)), size)
    simulated = _simulated_copy(asyncio.run(_read(cluster.bootstrap_servers)), topic, n, rate, leader)
    for key, _op, value in _calibration_topic_configs(n, leader):
        probe.set_topic_config(topic, key, value)
    for broker, key in _calibration_rates(leader):
        probe.set_broker_config(broker, key, str(rate))
    started = time.monotonic()
    probe.kafka_python().alter_partition_reassignments(
        {KafkaTopicPartition(topic, p): [1, 2, 3] for p in range(n)}
    )
    time.sleep(0.3)
    while any(t == topic for t, _ in probe.reassignments()):
        time.sleep(0.1)
    real = time.monotonic() - started
    for broker, key in _calibration_rates(leader):
        probe.set_broker_config(broker, key, None)
    probe.admin.delete_topics([topic])[topic].result(30)
    time.sleep(12)  # the quota windows (11 samples of 1 s) empty before the next copy
    row = {
        "partitions": n,
        "partition_bytes": size,
        "rate": rate,
        "leader_throttle": leader,
        "real_s": round(real, 1),
        "simulated_s": round(simulated, 1),
        "lower_bound_s": round(n * size / rate, 1),
        "simulator_error": round(abs(simulated - real) / real, 3),
    }
    print(f"   calibration {json.dumps(row)}", flush=True)
    return row


def _summary(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    stock = [r for r in runs if r["tool"] == "stock"]
    ours = [r for r in runs if r["tool"] == "reassignd"]

    def med(rows: Sequence[dict[str, Any]], key: str) -> float | None:
        return median_or_none([r.get(key) for r in rows])

    stock_s, ours_s = med(stock, "makespan_s"), med(ours, "makespan_s")
    return {
        "stock_makespan_s": stock_s,
        "reassignd_makespan_s": ours_s,
        "makespan_ratio": round(ours_s / stock_s, 3) if stock_s and ours_s else None,
        "rehearsal_error": med(ours, "rehearsal_error"),
        "rehearsal_predicted_s": med(ours, "rehearsal_predicted_s"),
        "eta_max_error_after_10pct": med(ours, "eta_max_error_after_10pct"),
        "eta_max_error_after_10pct_any_time_left": med(ours, "eta_max_error_after_10pct_any_time_left"),
        "simulated_makespan_s": {"stock": med(stock, "simulated_s"), "reassignd": med(ours, "simulated_s")},
        "simulator_error": {
            "stock": med(stock, "simulator_error"),
            "reassignd": med(ours, "simulator_error"),
        },
        "peak_moves_per_broker": {
            "stock": max((r["peak_moves_per_broker"] for r in stock), default=None),
            "reassignd": max((r["peak_moves_per_broker"] for r in ours), default=None),
        },
        "throttles_left": {
            "stock": [r["throttles_left"] for r in stock],
            "reassignd": [r["throttles_left"] for r in ours],
        },
        "peak_under_replicated": {
            "stock": med(stock, "peak_under_replicated"),
            "reassignd": med(ours, "peak_under_replicated"),
        },
        "seconds_under_min_isr": {
            "stock": med(stock, "seconds_under_min_isr"),
            "reassignd": med(ours, "seconds_under_min_isr"),
        },
        "producer_p99_ms": {
            "stock": med(stock, "producer_p99_ms"),
            "reassignd": med(ours, "producer_p99_ms"),
        },
        "leader_skew_after": {
            "stock": med(stock, "leader_skew_after"),
            "reassignd": med(ours, "leader_skew_after"),
        },
        "load_1min": [r["load_1min_before"] for r in runs],
        "runs": list(runs),
    }


# -- the tables of docs/benchmarks.md and the README ---------------------------------------------------------

_SCENARIO_COLUMNS = (
    "scenario",
    "stock makespan (s)",
    "reassignd makespan (s)",
    "ratio",
    "simulator's makespan (s), error: stock / reassignd (the rehearsal)",
    "live ETA max error from 10%, with >= 5 s left (any time left)",
    "peak moves per broker, stock / reassignd",
    "peak under-replicated, stock / reassignd",
    "s under min ISR, stock / reassignd",
    "producer p99 ms, stock / reassignd",
    "producer errors per run, stock / reassignd",
    "leader skew after, stock / reassignd",
    "throttles changed, stock / reassignd",
    "load 1 min per run",
)


def _pair(values: Mapping[str, Any]) -> str:
    return f"{values.get('stock')} / {values.get('reassignd')}"


def _errors(runs: Sequence[Mapping[str, Any]], tool: str) -> str:
    return "+".join(str(sum(r["producer_errors"].values())) for r in runs if r["tool"] == tool) or "-"


def _left(per_run: Sequence[Mapping[str, Any]]) -> str:
    changed = sorted({k for run in per_run for k in run})
    return ", ".join(changed) if changed else "none"


def scenario_row(name: str, s: Mapping[str, Any]) -> str:
    sim, sim_error = s.get("simulated_makespan_s", {}), s.get("simulator_error", {})
    cells = [
        name,
        s["stock_makespan_s"],
        s["reassignd_makespan_s"],
        s["makespan_ratio"],
        f"{sim.get('stock')}, {sim_error.get('stock')} / "
        f"{sim.get('reassignd')}, {sim_error.get('reassignd')}",
        f"{s['eta_max_error_after_10pct']} ({s.get('eta_max_error_after_10pct_any_time_left')})",
        _pair(s["peak_moves_per_broker"]),
        _pair(s["peak_under_replicated"]),
        _pair(s["seconds_under_min_isr"]),
        _pair(s["producer_p99_ms"]),
        f"{_errors(s['runs'], 'stock')} / {_errors(s['runs'], 'reassignd')}",
        _pair(s["leader_skew_after"]),
        f"{_left(s['throttles_left']['stock'])} / {_left(s['throttles_left']['reassignd'])}",
        ", ".join(str(x) for x in s["load_1min"]),
    ]
    return "| " + " | ".join(str(c) for c in cells) + " |"


def markdown(result: Mapping[str, Any]) -> str:
    """The scenario table and the calibration table of one run's JSON."""
    from reassignd.units import format_rate

    f, m = result["figures"], result["machine"]
    sizes = f["sizes"]
    lines = [
        f"Kafka {f['kafka_version']} (KRaft), {m['cpu']} ({m['machine']}), {m['cpus']} shared CPUs, Python "
        f"{m['python']}, {m['date']} from {m['time_utc']} UTC ({f['wall_seconds']} s in all); "
        f"{sizes['partitions']} partitions of {sizes['partition_bytes'] // MIB} MiB, producer "
        f"{sizes['produce_bytes_per_second'] // 1024} KiB/s, throttle {sizes['rate'] // MIB} MiB/s.",
        "",
        "| " + " | ".join(_SCENARIO_COLUMNS) + " |",
        "|---|" + "--:|" * 12 + "---|",
    ]
    lines += [scenario_row(name, f[name]) for name in ("drain", "fill", "racks") if name in f]
    lines += [
        "",
        "| calibration copy | partitions x MiB | rate | leader throttle too | real (s) | simulated (s) | "
        "error | rate's bound (s) |",
        "|---|--:|--:|---|--:|--:|--:|--:|",
    ]
    for i, c in enumerate(f.get("calibration", []), 1):
        lines.append(
            f"| {i} | {c['partitions']} x {c['partition_bytes'] / MIB:g} | {format_rate(c['rate'])} | "
            f"{'yes' if c['leader_throttle'] else 'no'} | {c['real_s']} | {c['simulated_s']} | "
            f"{c['simulator_error']} | {c['lower_bound_s']} |"
        )
    return "\n".join(lines)


def run(quick: bool = False) -> dict[str, Any]:
    from reassignd.localkafka.cluster import KafkaCluster, kafka_version
    from reassignd.localkafka.tools import ReassignTool

    if quick:
        sizes = Sizes(
            partitions=6, partition_bytes=4 * MIB, produce_bytes_per_second=128 * 1024, rate=4 * MIB
        )
        scenarios, repeats = ["drain"], 1
    else:
        sizes = Sizes(
            partitions=24, partition_bytes=20 * MIB, produce_bytes_per_second=256 * 1024, rate=10 * MIB
        )
        scenarios, repeats = ["drain", "fill", "racks"], 2
    figures: dict[str, Any] = {
        "kafka_version": kafka_version("kraft"),
        "sizes": vars(sizes),
        "load_1min_at_start": round(os.getloadavg()[0], 2),
    }
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-realkafka-") as tmp:
        workdir = Path(tmp)
        cluster = KafkaCluster(workdir / "kafka", brokers=6, racks=RACKS, log_dirs_per_broker=1)
        cluster.start()
        probe = ClusterProbe(cluster.bootstrap_servers)
        try:
            figures["calibration"] = [
                calibrate_copy(cluster, probe, n, size, rate, leader=leader)
                for n, size, rate, leader in (CALIBRATION_QUICK if quick else CALIBRATION)
            ]
            tool = ReassignTool(cluster.bootstrap_servers, workdir / "tool")
            for scenario in scenarios:
                runs = []
                for _ in range(repeats):  # alternate, so a load change hits both tools alike
                    for who in ("stock", "reassignd"):
                        runs.append(_one_run(cluster, probe, tool, scenario, who, sizes, workdir))
                figures[scenario] = _summary(runs)
                brief = {k: v for k, v in figures[scenario].items() if k != "runs"}
                print(f"   {scenario} summary: {json.dumps(brief)}", flush=True)
        finally:
            probe.close()
            cluster.close()
    figures["wall_seconds"] = round(time.monotonic() - started, 1)
    if quick:
        print(
            "   quick: the copies take seconds, so the makespans are mostly start-up (the stock tool's JVMs, "
            "the daemon's first cycle): its ratios and errors say little; the full run measures"
        )
    for scenario in scenarios:
        s = figures[scenario]
        print(
            f"   {scenario}: stock {s['stock_makespan_s']} s, reassignd {s['reassignd_makespan_s']} s "
            f"(ratio {s['makespan_ratio']}), rehearsal error {s['rehearsal_error']}, "
            f"ETA max error {s['eta_max_error_after_10pct']}, load {s['load_1min']}"
        )
    return figures

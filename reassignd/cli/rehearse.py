"""`reassignd rehearse`: how long a plan will take, and what it does on the way, before running it.

A simulated copy of the cluster (from a snapshot file, or read live) runs the plan through the real engine
in virtual time, with the configured limits, throttles and cycle interval (reassignd/rehearsal/).
Exit codes: 0 the plan finishes, 1 it does not (moves that never converge, blocked partitions), 2 bad input.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from reassignd import config_keys
from reassignd.cli._common import load_plan, load_snapshot, print_json, read_at_line, utc_seconds
from reassignd.model import ClusterSnapshot, InvalidInputError, Problem


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "rehearse",
        help="predict a plan's duration and effects on a simulated copy of the cluster",
        description="Runs PLAN through the real engine against a simulated copy of the cluster (sizes and "
        "produce rates included), with the limits, throttles and cycle interval of --config, and reports "
        "the predicted duration, bytes and peak movements per broker, time under min.insync.replicas and "
        "moves that would never converge. Exit 0 when the plan finishes, 1 when it does not, 3 when the "
        "live cluster (--bootstrap-servers) cannot be read.",
    )
    parser.add_argument("plan", help="Kafka reassignment JSON")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--snapshot", help="cluster snapshot JSON (reassignd snapshot --out ...)")
    source.add_argument(
        "--bootstrap-servers",
        help="read the cluster live (HOST:PORT[,...]); the default without --snapshot is the config's",
    )
    parser.add_argument(
        "--config", help="reassignd TOML config: limits, throttles, cycle interval, cluster.*"
    )
    parser.add_argument(
        "--produce-rate",
        action="append",
        default=[],
        metavar="[TOPIC=]RATE",
        help="bytes/s per partition (50MB/s, 1e6): for every topic, or TOPIC=RATE for one (repeatable); "
        "default: the snapshot's rates, measured when reading live",
    )
    parser.add_argument(
        "--measure-seconds",
        type=float,
        default=10.0,
        help="with --bootstrap-servers: seconds between the two snapshots produce rates are measured from",
    )
    parser.add_argument(
        "--cycle-interval",
        type=float,
        help="daemon cycle interval in seconds (default: controller.cycle.interval.seconds of --config, 5)",
    )
    parser.add_argument(
        "--allow-rf-change",
        action="store_true",
        help="accept replication-factor changes (as submit --allow-rf-change; or the config key)",
    )
    parser.add_argument("--max-days", type=float, default=30.0, help="give up after this much cluster time")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--timeline", action="store_true", help="with --json: include the per-cycle timeline")
    parser.add_argument("--chart", help="write a PNG timeline chart here")
    parser.set_defaults(func=_run)


def parse_produce_rates(items: list[str]) -> tuple[float | None, dict[str, float]]:
    """(rate for every topic, rates per topic) from `RATE` and `TOPIC=RATE` items."""
    from reassignd.cli.client import parse_rate

    everywhere: float | None = None
    per_topic: dict[str, float] = {}
    problems = []
    for item in items:
        topic, _, text = item.rpartition("=")
        try:
            rate = 0.0 if text.strip() in ("0", "0B/s") else float(parse_rate(text))
        except (InvalidInputError, ValueError) as exc:
            problems.append(Problem("--produce-rate", item, str(exc)))
            continue
        if topic:
            per_topic[topic] = rate
        else:
            everywhere = rate
    if problems:
        raise InvalidInputError("arguments", problems)
    return everywhere, per_topic


def _config(args: argparse.Namespace) -> Any:
    """The config in force; with --snapshot the cluster is never contacted, so its address may be absent."""
    from reassignd.config import load_config

    if args.bootstrap_servers:
        return load_config(
            args.config, os.environ, {config_keys.CLUSTER_BOOTSTRAP_SERVERS: args.bootstrap_servers}
        )
    try:
        return load_config(args.config, os.environ)
    except InvalidInputError as exc:
        if not any(p.field == config_keys.CLUSTER_BOOTSTRAP_SERVERS for p in exc.problems):
            raise
        if not args.snapshot:
            raise InvalidInputError(
                "arguments",
                [
                    Problem(
                        "rehearse",
                        "--snapshot",
                        "give a snapshot file, --bootstrap-servers, or cluster.bootstrap.servers in --config",
                    )
                ],
            ) from None
        return load_config(
            args.config, os.environ, {config_keys.CLUSTER_BOOTSTRAP_SERVERS: "snapshot-only.invalid:9092"}
        )


async def _read_live(config: Any, seconds: float) -> tuple[ClusterSnapshot, ClusterSnapshot, float]:
    """Two snapshots `seconds` apart, and the seconds between them on the cluster's clock (the simulator's
    runs faster than the wall clock: engine/cluster_clock.py)."""
    from reassignd.cluster.api import BROKER_THROTTLE_KEYS, TOPIC_THROTTLE_KEYS
    from reassignd.cluster.kafka import AdminSettings, KafkaClusterAdmin
    from reassignd.engine.cluster_clock import CLOCK_KEYS, read, without_clock

    admin = KafkaClusterAdmin(AdminSettings.from_config(config))
    keys: dict[str, Any] = {
        "with_sizes": True,
        "broker_config_keys": (*BROKER_THROTTLE_KEYS, config_keys.MIN_INSYNC_REPLICAS, *CLOCK_KEYS),
        "topic_config_keys": (*TOPIC_THROTTLE_KEYS, config_keys.MIN_INSYNC_REPLICAS),
    }
    try:
        # Sizes are read somewhere within each snapshot call, which takes longer on a loaded cluster: the
        # interval is taken between the calls' midpoints, so a slow read does not bias the rates.
        begun = time.monotonic()
        first = await admin.snapshot(None, **keys)
        first_at = (begun + time.monotonic()) / 2
        await asyncio.sleep(seconds)
        begun = time.monotonic()
        second = await admin.snapshot(None, **keys)
        second_at = (begun + time.monotonic()) / 2
        first_clock = read(first, first_at, None)
        elapsed = read(second, second_at, first_clock).now - first_clock.now
        return without_clock(first), without_clock(second), elapsed
    finally:
        await admin.close()


def measured_rates(first: ClusterSnapshot, second: ClusterSnapshot, seconds: float) -> ClusterSnapshot:
    """`second` with each partition's produce rate set from its leader's log growth since `first`."""
    from reassignd.engine.progress import source_size

    updated = []
    for tp, p in second.partitions.items():
        before = first.partitions.get(tp)
        if before is None or seconds <= 0:
            continue
        rate = max(0.0, (source_size(p) - source_size(before)) / seconds)
        updated.append(replace(p, produce_bytes_per_sec=rate))
    return second.with_partitions(updated)


def _say_when_read(snapshot: ClusterSnapshot) -> None:
    """The sizes and rates rehearsed are the snapshot's: say how old they are (producers kept writing)."""
    if snapshot.read_at is not None:
        sys.stderr.write(f"reassignd rehearse: {read_at_line(snapshot.read_at)}\n")


def _run(args: argparse.Namespace) -> int:
    from reassignd.daemon.validation import validate_plan
    from reassignd.rehearsal import cluster_from_snapshot, rehearse
    from reassignd.rehearsal.report import text_report, write_chart

    plan = load_plan(args.plan)
    everywhere, per_topic = parse_produce_rates(args.produce_rate)
    config = _config(args)
    interval = args.cycle_interval or float(config[config_keys.CONTROLLER_CYCLE_INTERVAL_SECONDS])
    if not interval > 0:
        raise InvalidInputError(
            "arguments", [Problem("rehearse", "--cycle-interval", f"must be > 0, got {interval}")]
        )
    if args.snapshot:
        snapshot = load_snapshot(args.snapshot)
        _say_when_read(snapshot)
    else:
        first, second, seconds = asyncio.run(_read_live(config, args.measure_seconds))
        snapshot = measured_rates(first, second, seconds)
    ongoing = [tp for tp, p in snapshot.partitions.items() if p.is_reassigning]
    problems = validate_plan(
        plan,
        snapshot,
        ongoing=ongoing,
        allow_rf_change=args.allow_rf_change
        or bool(config[config_keys.REASSIGNMENT_ALLOW_REPLICATION_FACTOR_CHANGE]),
    )
    if problems:
        raise InvalidInputError("reassignment plan", problems)
    sim = cluster_from_snapshot(snapshot, produce_rate=everywhere, topic_produce_rates=per_topic)
    if not any(sim.topics[tp.topic].partitions[tp.partition].produce_bytes_per_sec for tp in plan.targets):
        sys.stderr.write(
            "reassignd rehearse: no produce rates for the plan's partitions (0 B/s assumed, so the "
            "prediction is a lower bound); give --produce-rate, or read the cluster live to measure them\n"
        )
    result = rehearse(sim, plan, config.limits(), cycle_interval=interval, max_seconds=args.max_days * 86400)
    if args.chart:
        try:
            write_chart(result, args.chart)
        except OSError as exc:
            raise InvalidInputError(
                "output", [Problem(args.chart, "--chart", exc.strerror or str(exc))]
            ) from None
    if args.json:
        report = result.to_json_dict(with_timeline=args.timeline)
        if snapshot.read_at is not None:
            report["cluster_read_at"] = utc_seconds(snapshot.read_at)
        print_json(report)
    else:
        sys.stdout.write("\n".join(text_report(result)) + "\n")
        if args.chart:
            sys.stdout.write(f"chart: {Path(args.chart)}\n")
    return 0 if result.finished else 1

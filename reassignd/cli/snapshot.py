"""`reassignd snapshot`: write the cluster snapshot JSON of a live cluster (sizes from DescribeLogDirs)."""

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
from reassignd.model import InvalidInputError, Problem, TopicPartition, snapshot_to_json


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "snapshot",
        help="write the cluster snapshot JSON of a live cluster",
        description="Reads brokers, racks, partitions with ISR, ongoing reassignments, replica sizes "
        "(DescribeLogDirs) and the throttle and min.insync.replicas configs, and writes the snapshot JSON "
        "(docs/snapshot-format.md). Parts that cannot be read (an offline broker) are listed on stderr; "
        "the exit code is then 3.",
    )
    parser.add_argument("--bootstrap-servers", help="HOST:PORT[,...]; overrides the config file's")
    parser.add_argument("--config", help="reassignd TOML config: cluster.* keys (TLS/SASL, timeouts)")
    parser.add_argument("--out", required=True, help="output file, or - for stdout")
    parser.add_argument("--topics", nargs="+", metavar="TOPIC", help="only these topics (default: all)")
    parser.add_argument("--no-sizes", action="store_true", help="skip DescribeLogDirs (faster)")
    parser.add_argument("--timeout", type=float, help="seconds per admin request (default 15)")
    parser.set_defaults(func=_run)


def _settings(args: argparse.Namespace, command: str = "snapshot") -> Any:
    """AdminSettings from --config, --bootstrap-servers and --timeout (shared with `reassignd verify`)."""
    from reassignd.cluster.kafka import AdminSettings

    if args.config:
        from reassignd.config import load_config

        settings = AdminSettings.from_config(load_config(args.config, os.environ))
        client = dict(settings.client)
    else:
        settings, client = None, {}
    if args.bootstrap_servers:
        client["bootstrap.servers"] = args.bootstrap_servers
    if not client.get("bootstrap.servers"):
        raise InvalidInputError(
            "arguments",
            [Problem(command, "--bootstrap-servers", "required (or cluster.bootstrap.servers in --config)")],
        )
    timeout = args.timeout if args.timeout is not None else (settings.request_timeout if settings else 15.0)
    if not timeout > 0:
        raise InvalidInputError("arguments", [Problem(command, "--timeout", f"must be > 0, got {timeout}")])
    if settings is None:
        return AdminSettings(client=client, request_timeout=timeout)
    return AdminSettings(client=client, request_timeout=timeout, retry=settings.retry)


async def _read(args: argparse.Namespace) -> Any:
    from reassignd.cluster.api import BROKER_THROTTLE_KEYS, TOPIC_THROTTLE_KEYS
    from reassignd.cluster.kafka import KafkaClusterAdmin

    admin = KafkaClusterAdmin(_settings(args))
    try:
        partitions: list[TopicPartition] | None = None
        if args.topics:
            # Metadata for just these topics: the snapshot call narrows to their partitions.
            partitions = await _partitions_of(admin, args.topics)
        return await admin.snapshot_with_errors(
            partitions,
            with_sizes=not args.no_sizes,
            broker_config_keys=(*BROKER_THROTTLE_KEYS, config_keys.MIN_INSYNC_REPLICAS),
            topic_config_keys=(*TOPIC_THROTTLE_KEYS, config_keys.MIN_INSYNC_REPLICAS),
        )
    finally:
        await admin.close()


async def _partitions_of(admin: Any, topics: list[str]) -> list[TopicPartition]:
    found, errors = await admin.topic_partitions(topics)
    if errors:
        raise InvalidInputError(
            "arguments", [Problem("snapshot", "--topics", f"{e.item}: {e.error}") for e in errors]
        )
    return list(found)


def _run(args: argparse.Namespace) -> int:
    result = asyncio.run(_read(args))
    read = replace(result.snapshot, read_at=round(time.time(), 3))  # how old its sizes are, later
    text = snapshot_to_json(read, indent=2) + "\n"
    if args.out == "-":
        sys.stdout.write(text)
    else:
        try:
            Path(args.out).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise InvalidInputError(
                "output", [Problem(args.out, "--out", exc.strerror or str(exc))]
            ) from None
    for error in result.errors:
        print(f"reassignd snapshot: skipped {error}", file=sys.stderr)
    snapshot = result.snapshot
    print(
        f"reassignd snapshot: {len(snapshot.brokers)} brokers, {len(snapshot.topics)} topics, "
        f"{len(snapshot.partitions)} partitions -> {args.out}",
        file=sys.stderr,
    )
    return 3 if result.errors else 0

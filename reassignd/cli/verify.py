"""`reassignd verify PLAN.json`: is this plan applied? Kafka's `--verify`, read from the cluster itself.

Like Kafka's tool it needs only the bootstrap servers (or a reassignd config file for TLS/SASL), no daemon:
it answers whether the daemon runs or not, and for plans applied by any tool. Unlike Kafka's, it changes
nothing (throttles are the daemon's to restore) and tells "not applied" from "diverged" when given the
rollback file `reassignd submit` saved (the pre-plan assignment).

Exit codes: 0 every partition applied; 1 not yet (some in progress, not applied or diverged); 2 bad input;
3 the cluster (or part of it) could not be read (a cluster that cannot be read at all is reported by the
command line's one error shape, reassignd/cli/__init__.py).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from reassignd.cli._common import load_plan, print_json
from reassignd.engine.verify import PartitionVerdict, Verdict, counts, verify_plan
from reassignd.model import ANY_LOG_DIR, ReassignmentPlan

EXIT_NOT_APPLIED = 1
EXIT_UNREADABLE = 3


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "verify",
        help="is a plan applied? per partition: applied, in progress, not applied, diverged",
        description="Reads the plan's partitions from the cluster (metadata, ongoing reassignments, and "
        "the log dirs of replicas the plan places in one) and says per partition whether the plan is "
        "applied. Exit 0 only when every partition is; 1 when not yet; 3 when the cluster cannot be read.",
    )
    parser.add_argument("plan", help="Kafka reassignment JSON (the plan submitted), or - for stdin")
    parser.add_argument("--bootstrap-servers", help="HOST:PORT[,...]; overrides the config file's")
    parser.add_argument("--config", help="reassignd TOML config: cluster.* keys (TLS/SASL, timeouts)")
    parser.add_argument(
        "--rollback",
        metavar="FILE",
        help="the pre-plan assignment (the rollback file submit saved): tells not applied from diverged",
    )
    parser.add_argument("--timeout", type=float, help="seconds per admin request (default 15)")
    parser.add_argument("--json", action="store_true", help="print every partition's verdict as JSON")
    parser.set_defaults(func=_run)


async def _read(args: argparse.Namespace, plan: ReassignmentPlan) -> tuple[Any, dict[Any, str]]:
    from reassignd.cli.snapshot import _settings
    from reassignd.cluster.kafka import KafkaClusterAdmin

    admin = KafkaClusterAdmin(_settings(args, "verify"))
    try:
        return await read_plan_state(admin, plan)
    finally:
        await admin.close()


async def read_plan_state(admin: Any, plan: ReassignmentPlan) -> tuple[Any, dict[Any, str]]:
    """(the plan's partitions as a SnapshotResult, the current dir of each replica the plan names a dir
    for) from any ClusterAdmin."""
    result = await admin.snapshot_with_errors(list(plan.targets))
    named = {
        tp: [b for b, d in zip(plan.targets[tp], dirs, strict=True) if d != ANY_LOG_DIR]
        for tp, dirs in plan.log_dirs.items()
    }
    brokers = sorted({b for replicas in named.values() for b in replicas})
    dirs: dict[Any, str] = {}
    if brokers:
        found = await admin.describe_log_dirs(brokers, [tp for tp, bs in named.items() if bs])
        dirs = {key: r.log_dir for key, r in found.replicas.items() if not r.is_future}
        result = type(result)(result.snapshot, (*result.errors, *_log_dir_errors(found)))
    return result, dirs


def _log_dir_errors(found: Any) -> list[Any]:
    from reassignd.cluster.api import ItemError

    return [ItemError("DescribeLogDirs", f"broker {b}", e) for b, e in sorted(found.errors.items())]


def _run(args: argparse.Namespace) -> int:
    plan = load_plan(args.plan)
    pre_plan = load_plan(args.rollback).targets if args.rollback else None
    result, dirs = asyncio.run(_read(args, plan))
    unreadable = [e for e in result.errors if e.error.name != "UNKNOWN_TOPIC_OR_PARTITION"]
    verdicts = verify_plan(plan, result.snapshot.partitions, pre_plan=pre_plan, log_dirs=dirs)
    tally = counts(verdicts)
    applied = tally[Verdict.APPLIED] == len(verdicts) and not unreadable
    if args.json:
        print_json(
            {
                "applied": applied,
                "counts": tally,
                "unreadable": [str(e) for e in unreadable],
                "partitions": [v.to_json() for v in verdicts],
            }
        )
    else:
        _print_text(verdicts, tally)
    for error in unreadable:
        print(f"reassignd verify: could not read {error}", file=sys.stderr)
    if unreadable:
        return EXIT_UNREADABLE
    return 0 if applied else EXIT_NOT_APPLIED


def _ids(values: tuple[int, ...] | None) -> str:
    return "-" if values is None else ",".join(str(b) for b in values) or "-"


def verdict_line(v: PartitionVerdict) -> str:
    """`t-1  in progress  4,2,3,1 -> 4,2,3  adding 4, removing 1`: where it is, where the plan puts it,
    what moves, and why when that is not plain from the lists."""
    line = f"{v.tp}  {v.verdict.label}  {_ids(v.replicas)}"
    if v.verdict is not Verdict.APPLIED:
        line += f" -> {_ids(v.target)}"
    moving = []
    if v.adding:
        moving.append(f"adding {_ids(v.adding)}")
    if v.removing:
        moving.append(f"removing {_ids(v.removing)}")
    if moving:
        line += "  " + ", ".join(moving)
    if v.detail and not moving and v.verdict is not Verdict.APPLIED:
        line += f"  ({v.detail})"
    elif moving and v.verdict is Verdict.DIVERGED:
        line += "  (not toward the target)"
    return line


def _print_text(verdicts: list[PartitionVerdict], tally: dict[str, int]) -> None:
    """Every partition not applied, one line each (the applied ones only counted: a plan has thousands),
    then the summary Kafka's tool lacks."""
    lines = [verdict_line(v) for v in verdicts if v.verdict is not Verdict.APPLIED]
    summary = ", ".join(f"{n} {Verdict(k).label}" for k, n in tally.items() if n)
    if tally[Verdict.APPLIED] == len(verdicts):
        lines.append(f"plan applied: all {len(verdicts)} partition(s) on their target")
    else:
        lines.append(f"plan not applied: {summary}")
    sys.stdout.write("\n".join(lines) + "\n")

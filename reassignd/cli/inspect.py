"""Offline checks of input files: `validate-plan`, `validate-snapshot`."""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Any

from reassignd.cli._common import load_plan, load_snapshot, print_json
from reassignd.model import InvalidInputError, Problem


def register(subparsers: Any) -> None:
    plan = subparsers.add_parser("validate-plan", help="check a reassignment JSON file (against a snapshot)")
    plan.add_argument("plan", help="Kafka reassignment JSON, or - for stdin")
    plan.add_argument("--snapshot", help="also check topics, partitions and brokers against this snapshot")
    plan.add_argument("--json", action="store_true", help="print a JSON summary")
    plan.set_defaults(func=_validate_plan)

    snap = subparsers.add_parser("validate-snapshot", help="check a cluster snapshot JSON file")
    snap.add_argument("snapshot", help="cluster snapshot JSON, or - for stdin")
    snap.add_argument("--json", action="store_true", help="print a JSON summary")
    snap.set_defaults(func=_validate_snapshot)


def _validate_plan(args: argparse.Namespace) -> int:
    plan = load_plan(args.plan)
    summary: dict[str, Any] = {"partitions": len(plan), "topics": len(plan.topics())}
    if args.snapshot:
        snapshot = load_snapshot(args.snapshot)
        problems = []
        for tp, replicas in sorted(plan.targets.items()):
            if tp not in snapshot.partitions:
                problems.append(Problem(str(tp), "partition", "unknown topic or partition"))
                continue
            unknown = sorted(set(replicas) - set(snapshot.brokers))
            if unknown:
                problems.append(Problem(str(tp), "replicas", f"unknown broker id(s) {unknown}"))
        if problems:
            raise InvalidInputError("reassignment plan", problems)
        moved = sum(
            len(set(replicas) - set(snapshot.partitions[tp].replicas))
            for tp, replicas in plan.targets.items()
        )
        summary["replicas_to_add"] = moved
    if args.json:
        print_json({"valid": True, **summary})
    else:
        print("plan is valid: " + ", ".join(f"{k}={v}" for k, v in summary.items()))
    return 0


def _validate_snapshot(args: argparse.Namespace) -> int:
    snapshot = load_snapshot(args.snapshot)
    racks = Counter(b.rack or "(none)" for b in snapshot.brokers.values())
    summary = {
        "brokers": len(snapshot.brokers),
        "online_brokers": len(snapshot.online_broker_ids()),
        "topics": len(snapshot.topics),
        "partitions": len(snapshot.partitions),
        "replicas": sum(len(p.replicas) for p in snapshot.partitions.values()),
        "bytes": sum(p.size_bytes for p in snapshot.partitions.values()),
        "racks": dict(sorted(racks.items())),
    }
    if args.json:
        print_json({"valid": True, **summary})
    else:
        print("snapshot is valid: " + ", ".join(f"{k}={v}" for k, v in summary.items() if k != "racks"))
    return 0

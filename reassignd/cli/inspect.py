"""Offline checks of input files: `validate-plan`, `validate-snapshot`."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from typing import Any

from reassignd import strictjson
from reassignd.cli._common import load_snapshot, print_json, read_bytes
from reassignd.engine.log_dir_moves import log_dir_problems
from reassignd.model import (
    EMPTY_PLAN,
    MAX_DOCUMENT_BYTES,
    ClusterSnapshot,
    InvalidInputError,
    PlanDraft,
    Problem,
    ReassignmentPlan,
)
from reassignd.placement.rules import spread_violations
from reassignd.placement.topology import Topology


def register(subparsers: Any) -> None:
    plan = subparsers.add_parser("validate-plan", help="check a reassignment JSON file (against a snapshot)")
    plan.add_argument("plan", help="Kafka reassignment JSON, or - for stdin")
    plan.add_argument(
        "--snapshot",
        help="also check topics, partitions and brokers against this snapshot, and warn about replication-"
        "factor changes and rack-spread regressions (KIP-879)",
    )
    plan.add_argument("--json", action="store_true", help="print a JSON summary")
    plan.set_defaults(func=_validate_plan)

    snap = subparsers.add_parser("validate-snapshot", help="check a cluster snapshot JSON file")
    snap.add_argument("snapshot", help="cluster snapshot JSON, or - for stdin")
    snap.add_argument("--json", action="store_true", help="print a JSON summary")
    snap.set_defaults(func=_validate_snapshot)


def _validate_plan(args: argparse.Namespace) -> int:
    """Every problem at once: the document's own and, with --snapshot, what does not fit the cluster (a
    replica list `[-1, 99]` gets both); then warnings that do not make the plan invalid but that an operator
    should see before running it (replication-factor changes, rack-spread regressions)."""
    data = _plan_document(args.plan)
    draft = PlanDraft.parse(data)
    empty = [EMPTY_PLAN] if not draft.targets and not draft.problems else []  # submit refuses it too
    if not args.snapshot:
        if draft.problems or empty:
            raise InvalidInputError("reassignment plan", [*draft.problems, *empty])
        summary: dict[str, Any] = {"partitions": len(draft), "topics": len(draft.topics())}
        return _print_plan_summary(args, summary, [])
    snapshot = load_snapshot(args.snapshot)
    problems = [*draft.problems, *empty, *_against_snapshot(draft, snapshot)]
    if problems:
        raise InvalidInputError("reassignment plan", problems)
    plan = ReassignmentPlan(draft.targets, draft.log_dirs)
    moved = sum(
        len(set(replicas) - set(snapshot.partitions[tp].replicas)) for tp, replicas in plan.targets.items()
    )
    summary = {"partitions": len(plan), "topics": len(plan.topics()), "replicas_to_add": moved}
    return _print_plan_summary(args, summary, plan_warnings(plan, snapshot))


def _plan_document(path: str) -> Any:
    try:
        return strictjson.loads(
            read_bytes(path, "reassignment plan"), "reassignment plan", max_bytes=MAX_DOCUMENT_BYTES
        )
    except InvalidInputError as exc:
        raise InvalidInputError(exc.what, [Problem(path, p.field, p.message) for p in exc.problems]) from None


def _against_snapshot(draft: PlanDraft, snapshot: ClusterSnapshot) -> list[Problem]:
    problems: list[Problem] = []
    known = set(snapshot.brokers)
    for where, ids in sorted(draft.named_brokers.items()):
        unknown = sorted(set(ids) - known)
        if unknown:
            problems.append(Problem(where, "replicas", f"unknown broker id(s) {unknown}"))
    for tp, replicas in sorted(draft.targets.items()):
        if tp not in snapshot.partitions:
            problems.append(Problem(str(tp), "partition", "unknown topic or partition"))
            continue
        unknown = sorted(set(replicas) - known)
        if unknown:
            problems.append(Problem(str(tp), "replicas", f"unknown broker id(s) {unknown}"))
    placed = {tp: d for tp, d in draft.log_dirs.items() if tp in snapshot.partitions and tp in draft.targets}
    problems += log_dir_problems(ReassignmentPlan({tp: draft.targets[tp] for tp in placed}, placed), snapshot)
    return problems


MAX_EXAMPLES = 5


def plan_warnings(plan: ReassignmentPlan, snapshot: ClusterSnapshot) -> list[dict[str, Any]]:
    """What the plan changes that an operator may not mean to.

    `replication_factor`: partitions whose replica count changes (the daemon refuses them unless
    `--allow-rf-change`). `rack_spread`: partitions whose replicas are spread evenly over the rack tree now
    (KIP-879: level by level, within what each subtree can hold) but not after the plan, grouped by the
    level that loses its spread (1: the top level, such as data centres; 2: the racks within them; ...).
    """
    warnings: list[dict[str, Any]] = []
    resized = [
        (tp, len(snapshot.partitions[tp].target_replicas), len(target))
        for tp, target in sorted(plan.targets.items())
        if len(target) != len(snapshot.partitions[tp].target_replicas)
    ]
    if resized:
        warnings.append(
            {
                "kind": "replication_factor",
                "partitions": len(resized),
                "message": f"{len(resized)} partition(s) change their replication factor; the daemon refuses "
                "them unless submitted with --allow-rf-change",
                "examples": [f"{tp}: {old} -> {new}" for tp, old, new in resized[:MAX_EXAMPLES]],
            }
        )
    topology = Topology.from_brokers(b for b in snapshot.brokers.values() if b.online)
    by_level: dict[int, list[str]] = {}
    for tp, target in sorted(plan.targets.items()):
        before = {
            len(v.node) + 1 for v in spread_violations(snapshot.partitions[tp].target_replicas, topology)
        }
        after = spread_violations(target, topology)
        lost = sorted({len(v.node) + 1 for v in after} - before)
        for level in lost:
            example = next(v for v in after if len(v.node) + 1 == level)
            by_level.setdefault(level, []).append(f"{tp} {list(target)}: {example}")
    for level, examples in sorted(by_level.items()):
        warnings.append(
            {
                "kind": "rack_spread",
                "level": level,
                "partitions": len(examples),
                "message": f"{len(examples)} partition(s) evenly spread at rack level {level} now are not "
                "after the plan (KIP-879)",
                "examples": examples[:MAX_EXAMPLES],
            }
        )
    return warnings


def _print_plan_summary(
    args: argparse.Namespace, summary: dict[str, Any], warnings: list[dict[str, Any]]
) -> int:
    if args.json:
        print_json({"valid": True, **summary, "warnings": warnings})
        return 0
    print("plan is valid: " + ", ".join(f"{k}={v}" for k, v in summary.items()))
    for warning in warnings:
        print(f"warning: {warning['message']}", file=sys.stderr)
        for example in warning["examples"]:
            print(f"  e.g. {example}", file=sys.stderr)
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

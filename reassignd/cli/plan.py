"""Planner commands: `place` (KIP-879 CreateReplicaPlacement), `plan` (KIP-166 goals on Spark) and
`show-cluster-state`."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from reassignd.cli._common import load_snapshot, print_json, read_at_line
from reassignd.model import InvalidInputError, Problem, snapshot_to_json


def _threshold(text: str) -> float:
    from reassignd.placement.goals import parse_threshold

    try:
        return parse_threshold(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _regex(text: str) -> str:
    import re

    try:
        re.compile(text)
    except re.error as exc:
        raise argparse.ArgumentTypeError(f"invalid regular expression {text!r}: {exc}") from None
    return text


def _broker_list(text: str) -> list[int]:
    try:
        return [int(x) for x in text.replace(",", " ").split()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"broker ids must be integers, got {text!r}") from None


def register(subparsers: Any) -> None:
    place = subparsers.add_parser(
        "place",
        help="place the replicas of new partitions (KIP-879 CreateReplicaPlacement)",
        description="Runs a replica placer (entry points in group reassignd.placers; default: the "
        "snapshot's broker.replica.placer config, else multi-level) over the snapshot's brokers.",
    )
    place.add_argument("--snapshot", required=True, help="cluster snapshot JSON, or - for stdin")
    place.add_argument("--partitions", type=int, required=True, help="number of partitions")
    place.add_argument("--replication-factor", type=int, required=True)
    place.add_argument("--brokers", type=_broker_list, help="only these broker ids (comma separated)")
    place.add_argument("--force-simple", action="store_true", help="Kafka's rack-unaware algorithm")
    place.add_argument("--placer", help="placer name (kafka-default, kafka-rack-aware, multi-level, ...)")
    place.add_argument("--seed", type=int, help="seed for the rings' random starts (default: random)")
    place.add_argument("--json", action="store_true", help="print the CreateReplicaPlacement response")
    place.set_defaults(func=_place)

    plan = subparsers.add_parser(
        "plan",
        help="compute a balance plan (KIP-166 goals) on Spark",
        description="Reads a snapshot (JSON file, directory of JSON files for a fleet, or the Parquet "
        "layout of docs/planner.md), plans the goal with as few moves as the threshold allows (and among "
        "those the fewest bytes), never worsening rack spread nor passing a capacity limit, and writes "
        "Kafka's reassignment JSON.",
    )
    plan.add_argument(
        "--goal",
        required=True,
        choices=("leader-balance", "replica-balance", "cluster-balance", "drain", "fill"),
    )
    source = plan.add_mutually_exclusive_group(required=True)
    source.add_argument("--snapshot", nargs="+", metavar="PATH", help="snapshot file(s) or directories")
    source.add_argument("--bootstrap-servers", help="read a live snapshot through the cluster adapter")
    plan.add_argument("--out", required=True, help="plan file; a directory when planning several clusters")
    plan.add_argument("--report", metavar="DIR", help="write report.json and PNG charts here")
    plan.add_argument("--spark-master", help="Spark master URL (default local[*] or REASSIGND_SPARK_MASTER)")
    plan.add_argument(
        "--engine",
        choices=("auto", "spark", "local"),
        default="auto",
        help="where to plan: spark, or local (this process, no JVM; the same plans); auto (default) plans "
        "JSON snapshots under 64 MB locally unless a Spark master is given, everything else on Spark",
    )
    plan.add_argument(
        "--threshold",
        type=_threshold,
        default=0.10,
        help="band around the average: a share (0.10) or a percentage (10%%); default 10%%",
    )
    plan.add_argument("--brokers", type=_broker_list, help="balance only these / brokers to drain or fill")
    plan.add_argument(
        "--exclude-brokers",
        type=_broker_list,
        default=[],
        help="brokers that never receive a replica or a preferred leadership (e.g. drained ones)",
    )
    plan.add_argument("--topics", type=_regex, help="only move partitions of topics matching this regex")
    plan.add_argument("--exclude-topics", type=_regex, help="never move partitions of topics matching this")
    plan.add_argument(
        "--capacity",
        metavar="FILE",
        help="broker capacities (JSON: disk bytes, network in/out bytes/s; reassignd's or Cruise "
        "Control's capacity.json): hard goals no move may break",
    )
    plan.add_argument(
        "--leaders",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also balance preferred leaders (a goal the plan is then judged by); default: yes for "
        "leader-balance and cluster-balance, best effort for fill, no for drain and replica-balance, "
        "which change a preferred leader only where they move it",
    )
    plan.add_argument(
        "--size-aware",
        action="store_true",
        help="also balance bytes: replicas sized toward the byte average, then byte quotas",
    )
    plan.add_argument(
        "--byte-threshold",
        type=_threshold,
        default=0.10,
        help="with --size-aware: band around the average of bytes (default 10%%)",
    )
    plan.add_argument("--cluster-name", help="name of the cluster in the output (default: the file name)")
    plan.add_argument("--seed", type=int, default=0, help="seed for the deterministic tie-breaks")
    plan.add_argument("--max-rounds", type=int, default=12)
    plan.add_argument("--json", action="store_true", help="print the figures as JSON")
    plan.set_defaults(func=_plan)

    state = subparsers.add_parser(
        "show-cluster-state", help="per-broker replicas, leaders and bytes, rack-spread violations, scores"
    )
    state.add_argument("--snapshot", required=True, help="cluster snapshot JSON, or - for stdin")
    state.add_argument("--threshold", type=_threshold, default=0.10, help="a share (0.10) or a percentage")
    state.add_argument("--json", action="store_true")
    state.set_defaults(func=_show_state)


def _place(args: argparse.Namespace) -> int:
    from reassignd.placement.api import create_replica_placement

    snapshot = load_snapshot(args.snapshot)
    request: dict[str, Any] = {
        "num_partitions": args.partitions,
        "replication_factor": args.replication_factor,
        "force_simple_placement": args.force_simple,
    }
    for key, value in (("broker_ids", args.brokers), ("placer", args.placer), ("seed", args.seed)):
        if value is not None:
            request[key] = value
    response = create_replica_placement(snapshot, request)
    if args.json:
        print_json(response)
    else:
        print(f"placer {response['placer']}{' (deferred to kafka-default)' if response['deferred'] else ''}")
        for entry in response["replica_placement"]:
            print(f"  partition {entry['partition_id']}: {entry['replicas']}")
    return 0


def _live_snapshot_file(bootstrap: str, directory: str, name: str | None) -> str:
    try:
        from reassignd.cluster.kafka import AdminSettings, KafkaClusterAdmin
    except ImportError:
        raise InvalidInputError(
            "arguments",
            [
                Problem(
                    "plan",
                    "--bootstrap-servers",
                    "live snapshots come with the cluster adapter; use --snapshot",
                )
            ],
        ) from None

    async def read() -> Any:
        admin = KafkaClusterAdmin(AdminSettings(client={"bootstrap.servers": bootstrap}))
        try:
            return await admin.snapshot(with_sizes=True)
        finally:
            await admin.close()

    path = Path(directory) / f"{_safe_name(name or bootstrap.split(',', 1)[0])}.json"
    path.write_text(snapshot_to_json(asyncio.run(read())))
    return str(path)


def _safe_name(text: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "cluster"


class _ProgressLine:
    """One line on a terminal, rewritten in place; nothing at all when stderr is not a terminal."""

    def __init__(self) -> None:
        self.live = sys.stderr.isatty()
        self.started = time.monotonic()

    def __call__(self, message: str) -> None:
        if self.live:
            elapsed = time.monotonic() - self.started
            sys.stderr.write(f"\r\033[K{message} ({elapsed:.0f}s)")
            sys.stderr.flush()

    def clear(self) -> None:
        if self.live:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def _plan(args: argparse.Namespace) -> int:
    import warnings

    from reassignd.pipeline.planner import PlanRequest, plan_files_locally, plan_paths, small_json_files
    from reassignd.pipeline.report import write_report
    from reassignd.pipeline.session import MASTER_ENV, spark_session
    from reassignd.placement.capacity import load_capacities

    warnings.filterwarnings("ignore", message=r"PySpark does not yet fully support pandas")
    request = PlanRequest(
        goal=args.goal,
        threshold=args.threshold,
        brokers=tuple(args.brokers or ()),
        size_aware=args.size_aware,
        byte_threshold=args.byte_threshold,
        seed=args.seed,
        max_rounds=args.max_rounds,
        topics=args.topics,
        exclude_topics=args.exclude_topics,
        exclude_brokers=tuple(args.exclude_brokers or ()),
        capacities=load_capacities(args.capacity) if args.capacity else None,
        leaders=args.leaders,
    )
    request.check()
    started = time.monotonic()
    progress = _ProgressLine()
    try:
        with tempfile.TemporaryDirectory(prefix="reassignd-plan-") as tmp:
            paths = args.snapshot or [_live_snapshot_file(args.bootstrap_servers, tmp, args.cluster_name)]
            files = small_json_files(paths)
            local = args.engine == "local" or (
                args.engine == "auto"
                and files is not None
                and not args.spark_master
                and not os.environ.get(MASTER_ENV)
            )
            if local:
                if files is None:
                    raise InvalidInputError(
                        "arguments", [Problem("plan", "--engine", "local plans JSON snapshots up to 64 MB")]
                    )
                progress("planning")
                outcomes = plan_files_locally(files, request)
            else:
                progress("starting Spark")
                spark = spark_session(args.spark_master)
                outcomes = plan_paths(spark, paths, request, progress)
        if args.cluster_name and len(outcomes) == 1:
            outcomes[0].cluster = outcomes[0].figures["cluster"] = args.cluster_name
        written = _write_plans(outcomes, args.out)
        if args.report:
            progress("writing the report")
            write_report(outcomes, args.report)
    finally:
        progress.clear()
    elapsed = round(time.monotonic() - started, 2)
    if args.json:
        print_json(
            {
                "seconds": elapsed,
                "plans": [str(p) for p in written],
                "clusters": [o.figures for o in outcomes],
            }
        )
    else:
        for o in outcomes:
            print(summary_line(o.cluster, o.figures))
            if o.figures.get("sizes_read_at") is not None:
                print(read_at_line(float(o.figures["sizes_read_at"])), file=sys.stderr)
        print(f"wrote {', '.join(str(p) for p in written)} in {elapsed}s", file=sys.stderr)
    return goal_exit_code([o.figures for o in outcomes])


EXIT_GOAL_NOT_HELD = 1


def goal_exit_code(figures: list[dict[str, Any]]) -> int:
    """0 when every plan reaches every goal it was asked for (hard goals included), else EXIT_GOAL_NOT_HELD
    with one line on stderr naming them: the plan is written all the same (it does what it can)."""
    failed = sorted({g["goal"] for f in figures for g in f["goals"] if g["asked"] and not g["held"]})
    if not failed:
        return 0
    print(f"reassignd: the plan does not reach its goal ({', '.join(failed)} not held)", file=sys.stderr)
    return EXIT_GOAL_NOT_HELD


def _gb(value: float) -> str:
    return f"{value / 1e9:,.1f} GB"


def summary_line(cluster: str, f: dict[str, Any]) -> str:
    """One line per cluster: what moves, against the bound, and every goal asked for that did not hold (a
    best-effort goal, such as fill's leader balance, is in the JSON figures and the report)."""
    ratio = f["moves_over_lower_bound"]
    failed = [g for g in f["goals"] if g["asked"] and not g["held"]]
    goals = "; ".join(f"{g['goal']} not held: {g['detail']}" for g in failed)
    return (
        f"{cluster}: {f['partitions_changed']} partitions, {f['replicas_moved']} replicas moved "
        f"({_gb(f['bytes_moved'])}; lower bound {f['lower_bound']}"
        f"{'' if ratio is None else f', ratio {ratio}'}), {f['preferred_leader_changes']} "
        f"preferred-leader changes; {f['stopped']}{'; ' + goals if goals else ''}"
    )


def _write_plans(outcomes: list[Any], out: str) -> list[Path]:
    target = Path(out)
    try:
        if len(outcomes) == 1:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(outcomes[0].plan.to_json(indent=2) + "\n")
            return [target]
        target.mkdir(parents=True, exist_ok=True)
        written = []
        for o in outcomes:
            path = target / f"{o.cluster}.json"
            path.write_text(o.plan.to_json(indent=2) + "\n")
            written.append(path)
        return written
    except OSError as exc:
        raise InvalidInputError("output", [Problem(out, "--out", exc.strerror or str(exc))]) from None


SPREAD_EXAMPLES_SHOWN = 10


def _show_state(args: argparse.Namespace) -> int:
    from reassignd.placement.state import cluster_state
    from reassignd.units import format_bytes

    state = cluster_state(load_snapshot(args.snapshot), args.threshold)
    if args.json:
        print_json(state)
        return 0
    print(f"{'broker':>7} {'rack':<20} {'replicas':>9} {'leaders':>8} {'preferred':>9} {'bytes':>10}")
    for b in state["brokers"]:
        flag = "" if b["online"] else "  (offline)"
        print(
            f"{b['broker']:>7} {(b['rack'] or '-')[:20]:<20} {b['replicas']:>9} {b['leaders']:>8} "
            f"{b['preferred_leaders']:>9} {format_bytes(b['bytes']):>10}{flag}"
        )
    percent = f"{args.threshold * 100:g}%"
    online = sum(1 for b in state["brokers"] if b["online"])
    for name, score in state["scores"].items():
        if "band" not in score:
            continue
        low, high = score["band"]
        show = format_bytes if name == "bytes" else (lambda v: f"{v:g}")
        print(
            f"{name}: average {show(round(score['average'], 1))}, band ±{percent} "
            f"[{show(low)}, {show(high)}]: {score['outside_band']} of {online} brokers outside"
        )
    spread = state["spread_violations"]
    print(f"partitions with uneven rack spread: {spread['partitions']}")
    for example in spread["examples"][:SPREAD_EXAMPLES_SHOWN]:
        where = f"{example['topic']}-{example['partition']} {example['replicas']}"
        print(f"  {where}: {'; '.join(example['violations'])}"[:80])
    more = spread["partitions"] - min(len(spread["examples"]), SPREAD_EXAMPLES_SHOWN)
    if more > 0:
        print(f"  ... and {more} more (--json lists up to 50)")
    return 0

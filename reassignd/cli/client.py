"""Client commands that steer a running daemon over its HTTP API: submit, status, plans, pause, resume,
cancel, limits, throttle, reassignments, propose.

Exit codes: 0 done, 2 the daemon (or a local check) refused, 3 no daemon could be reached; `status --watch`
ends 0 when the plan completed and 1 when it was cancelled or failed. Errors go to stderr as the error code,
the message and every problem, never as a traceback.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import sys
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from reassignd.cli._common import load_plan, print_json
from reassignd.cli.watch import (
    FOLLOWER_RATE,
    LEADER_RATE,
    format_bytes,
    format_duration,
    format_rate,
    format_table,
    render_status,
    status_lines,
    watch,
)
from reassignd.client import API_ENV, DEFAULT_API, ApiClient, ApiError, ApiUnreachable
from reassignd.daemon import auth
from reassignd.model import InvalidInputError, Problem

EXIT_REFUSED = 2
EXIT_UNREACHABLE = 3

Handler = Callable[[argparse.Namespace, ApiClient], int]


def register(subparsers: Any) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--api",
        default=os.environ.get(API_ENV, DEFAULT_API),
        help=f"the daemon's API URL (default: ${API_ENV} or {DEFAULT_API})",
    )
    common.add_argument(
        "--token-file",
        default=os.environ.get(auth.TOKEN_FILE_ENV),
        help=f"file holding the API token (default: ${auth.TOKEN_FILE_ENV}, else ${auth.TOKEN_ENV})",
    )
    common.add_argument("--json", action="store_true", help="print the API's JSON instead of a table")
    common.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the daemon (10)")

    def add(name: str, handler: Handler, help_text: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = subparsers.add_parser(
            name, parents=[common], help=help_text, description=help_text
        )
        parser.set_defaults(func=functools.partial(_run, handler))
        return parser

    submit = add("submit", _submit, "submit a Kafka reassignment JSON plan to the daemon")
    submit.add_argument("plan", help="Kafka reassignment JSON, or - for stdin")
    submit.add_argument("--dry-run", action="store_true", help="validate against the live cluster only")
    submit.add_argument(
        "--allow-rf-change", action="store_true", help="accept targets that change the replication factor"
    )
    status = add("status", _status, "a plan's progress (the running plan by default)")
    status.add_argument("plan_id", nargs="?", help="plan id (default: the running plan)")
    status.add_argument("--watch", action="store_true", help="follow live until the plan finishes")
    status.add_argument("--interval", type=_positive_seconds, default=2.0, help="seconds between polls (2)")
    add("plans", _plans, "list plans, newest first")
    for action in ("pause", "resume", "cancel"):
        parser = add(
            action, functools.partial(_lifecycle, action), f"{action} a plan (the running one by default)"
        )
        parser.add_argument("plan_id", nargs="?", help="plan id (default: the running plan)")
    limits = add("limits", _limits, "show the reassignment limits, or change them with KEY=VALUE")
    limits.add_argument(
        "changes", nargs="*", metavar="KEY=VALUE", help="e.g. reassignment.parallel.partition.count=8"
    )
    throttle = add(
        "throttle", _throttle, "show or change the throttle rates (50MB/s, 10MiB, 1e6; none removes)"
    )
    throttle.add_argument("--leader-rate", type=_rate_arg, help="leader.reassignment.throttled.rate")
    throttle.add_argument("--follower-rate", type=_rate_arg, help="follower.reassignment.throttled.rate")
    add("reassignments", _reassignments, "reassignments the cluster reports, ours and foreign")
    _register_propose(add)


# ---------------------------------------------------------------------------------------------------------
# Units


_RATE = re.compile(
    r"^\s*(?P<number>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)\s*(?P<unit>[A-Za-z]*?)\s*(?P<per>/s|ps)?\s*$"
)
_MULTIPLIERS = {
    "": 1,
    "B": 1,
    "K": 1000,
    "KB": 1000,
    "M": 1000**2,
    "MB": 1000**2,
    "G": 1000**3,
    "GB": 1000**3,
    "T": 1000**4,
    "TB": 1000**4,
    "KIB": 1024,
    "MIB": 1024**2,
    "GIB": 1024**3,
    "TIB": 1024**4,
}
MAX_RATE = 2**63 - 1  # Kafka's rate configs are longs


def parse_rate(text: str) -> int:
    """`50MB/s`, `10MiB`, `1.5GB/s`, `2e6` -> bytes per second (KB/MB decimal, KiB/MiB binary).

    A lowercase `b` means bits in networking, so `50Mb/s` is refused rather than guessed.
    """
    match = _RATE.match(text)
    if not match:
        raise ValueError(f"not a rate: {text!r} (examples: 50MB/s, 10MiB, 1048576)")
    unit = match["unit"]
    if unit.endswith("b") and not unit.lower().endswith("ib"):
        raise ValueError(f"{text!r}: lowercase b means bits; rates are in bytes (write {unit[:-1]}B)")
    multiplier = _MULTIPLIERS.get(unit.upper())
    if multiplier is None:
        raise ValueError(f"{text!r}: unknown unit {unit!r} (use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)")
    value = Decimal(match["number"]) * multiplier  # exact: 9007199254740993 stays itself
    if value < 1:
        raise ValueError(f"{text!r}: a throttle rate must be at least 1 byte/s")
    if value > MAX_RATE:
        raise ValueError(f"{text!r}: exceeds the largest rate Kafka accepts ({MAX_RATE} bytes/s)")
    return int(value.to_integral_value())


CLEAR = "none"


def _rate_arg(text: str) -> int | str:
    if text.strip().lower() in (CLEAR, "off"):
        return CLEAR
    try:
        return parse_rate(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0.05 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"interval must be between 0.05 and 3600 seconds, got {text}")
    return value


def parse_assignments(items: list[str]) -> dict[str, Any]:
    """KEY=VALUE pairs to a change document; integers stay integers, the daemon validates the rest."""
    changes: dict[str, Any] = {}
    problems: list[Problem] = []
    for item in items:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            problems.append(Problem("limits", item, "must be KEY=VALUE"))
        elif key in changes:
            problems.append(Problem("limits", key, "given twice"))
        else:
            changes[key] = _scalar(value)
    if problems:
        raise InvalidInputError("limit changes", problems)
    return changes


def _scalar(text: str) -> Any:
    """`8` -> 8, `0.5` -> 0.5, `true` -> True, `null` -> None; anything else stays a string."""
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    if re.fullmatch(r"[+-]?(\d+\.\d*|\.\d+|\d+(\.\d*)?[eE][+-]?\d+)", text):
        return float(text)
    return {"true": True, "false": False, "null": None, "none": None}.get(text.lower(), text)


# ---------------------------------------------------------------------------------------------------------
# Running a command


def _run(handler: Handler, args: argparse.Namespace) -> int:
    try:
        token = auth.load_token(args.token_file)
        client = ApiClient(args.api, token=token, timeout=args.timeout)
        return handler(args, client)
    except ApiError as exc:
        _print_refusal(exc)
        return EXIT_REFUSED
    except ApiUnreachable as exc:
        print(f"reassignd: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except ValueError as exc:  # a bad --api URL; InvalidInputError (a ValueError) has its own message
        if isinstance(exc, InvalidInputError):
            raise
        print(f"reassignd: {exc}", file=sys.stderr)
        return EXIT_REFUSED


def _print_refusal(exc: ApiError) -> None:
    print(f"reassignd: {exc.code}: {exc.message}", file=sys.stderr)
    for p in exc.problems:
        print(f"  - {p.get('where')}: {p.get('field')}: {p.get('message')}", file=sys.stderr)
    if exc.code == "unauthorized":
        print(
            f"  hint: pass --token-file, or set ${auth.TOKEN_FILE_ENV} or ${auth.TOKEN_ENV}", file=sys.stderr
        )
    if exc.code == "not_leader" and exc.details.get("leader"):
        print(f"  hint: the leading daemon is at --api {exc.details['leader']}", file=sys.stderr)


def _print_lines(lines: list[str]) -> None:
    sys.stdout.write("\n".join(lines) + "\n")


# ---------------------------------------------------------------------------------------------------------
# Commands


def _submit(args: argparse.Namespace, client: ApiClient) -> int:
    plan = load_plan(args.plan)
    result = client.submit_plan(plan.to_dict(), dry_run=args.dry_run, allow_rf_change=args.allow_rf_change)
    if args.json:
        print_json(result)
        return 0
    steps = result.get("steps") or {}
    what = "dry run" if result.get("plan_id") is None else f"plan {result['plan_id']} {result.get('state')}"
    print(
        f"{what}: {result.get('partitions')} partition(s), "
        f"{result.get('replicas_to_move')} replica(s) to move, "
        f"{format_bytes(result.get('bytes_to_move'))}, {steps.get('total', '?')} step(s)"
    )
    return 0


def _status(args: argparse.Namespace, client: ApiClient) -> int:
    try:
        status = client.status(args.plan_id)
    except ApiError as exc:
        if args.plan_id is None and exc.code == "not_found":
            print_json(None) if args.json else print("no plan is running")
            return 0
        raise
    if args.watch:
        plan_id = status["plan_id"]  # follow this plan to its end, even once another one starts
        first = [status]

        def fetch() -> Any:
            return first.pop() if first else client.status(plan_id)

        return watch(fetch, interval=args.interval, out=sys.stdout, as_json=args.json)
    if args.json:
        print_json(status)
    elif sys.stdout.isatty():
        from rich.console import Console

        Console().print(render_status(status))
    else:
        _print_lines(status_lines(status))
    return 0


def _plans(args: argparse.Namespace, client: ApiClient) -> int:
    plans = client.plans()
    if args.json:
        print_json({"plans": plans})
        return 0
    rows = []
    for p in plans:
        progress = p.get("progress") or {}
        total, moved = progress.get("bytes_total") or 0, progress.get("bytes_moved") or 0
        pct = f"{100.0 * moved / total:.1f}%" if total else "-"
        eta = format_duration(progress.get("eta_seconds")) if p.get("state") == "running" else "-"
        rows.append([p.get("plan_id"), p.get("state"), p.get("submitted_at"), p.get("partitions"), pct, eta])
    _print_lines(format_table(("PLAN", "STATE", "SUBMITTED", "PARTITIONS", "BYTES DONE", "ETA"), rows))
    return 0


def _lifecycle(action: str, args: argparse.Namespace, client: ApiClient) -> int:
    status = client.lifecycle(action, args.plan_id)
    if args.json:
        print_json(status)
    else:
        print(f"{action}: {status_lines(status)[0]}")
    return 0


def _limits(args: argparse.Namespace, client: ApiClient) -> int:
    limits = client.set_limits(parse_assignments(args.changes)) if args.changes else client.limits()
    if args.json:
        print_json(limits)
    else:
        _print_lines(format_table(("LIMIT", "VALUE"), sorted(limits.items())))
    return 0


def _throttle(args: argparse.Namespace, client: ApiClient) -> int:
    changes = {
        key: None if value == CLEAR else value
        for key, value in ((LEADER_RATE, args.leader_rate), (FOLLOWER_RATE, args.follower_rate))
        if value is not None
    }
    throttles = client.set_throttles(changes) if changes else client.throttles()
    if args.json:
        print_json(throttles)
        return 0
    lines = [
        f"{LEADER_RATE} = {format_rate(throttles.get(LEADER_RATE))} ({throttles.get(LEADER_RATE)})",
        f"{FOLLOWER_RATE} = {format_rate(throttles.get(FOLLOWER_RATE))} ({throttles.get(FOLLOWER_RATE)})",
    ]
    applied = throttles.get("applied") or {}
    if applied:
        rows = [
            [broker, format_rate(rates.get("leader")), format_rate(rates.get("follower"))]
            for broker, rates in sorted(applied.items(), key=lambda kv: int(kv[0]))
        ]
        lines += ["", *format_table(("BROKER", "LEADER", "FOLLOWER"), rows)]
    else:
        lines.append("no throttle applied on any broker")
    _print_lines(lines)
    return 0


def _register_propose(add: Callable[[str, Handler, str], argparse.ArgumentParser]) -> None:
    from reassignd.placement.goals import GOALS

    propose = add(
        "propose",
        _propose,
        "a balance plan for the live cluster from the daemon's warm planner (submits nothing)",
    )
    propose.add_argument("--goal", required=True, choices=GOALS)
    propose.add_argument("--threshold", help="band around the average: 0.10 or 10%% (default 10%%)")
    propose.add_argument("--byte-threshold", help="with --size-aware: band around the byte average")
    propose.add_argument("--brokers", help="balance only these / brokers to drain or fill (1,2,3)")
    propose.add_argument("--exclude-brokers", help="brokers that never receive (1,2,3)")
    propose.add_argument("--topics", help="only move partitions of topics matching this regex")
    propose.add_argument("--exclude-topics", help="never move partitions of topics matching this regex")
    propose.add_argument("--size-aware", action="store_true", help="also balance bytes")
    propose.add_argument("--capacity", metavar="FILE", help="broker capacities (JSON) for the hard goals")
    propose.add_argument("--seed", type=int)
    propose.add_argument("--out", metavar="PLAN.json", help="write the proposed plan here (for submit)")
    propose.set_defaults(timeout=600.0)


def _propose(args: argparse.Namespace, client: ApiClient) -> int:
    from pathlib import Path

    from reassignd.cli.plan import summary_line

    body: dict[str, Any] = {"goal": args.goal}
    for name in ("threshold", "byte_threshold", "topics", "exclude_topics", "seed"):
        if getattr(args, name) is not None:
            body[name] = getattr(args, name)
    for name in ("brokers", "exclude_brokers"):
        text = getattr(args, name)
        if text is not None:
            try:
                body[name] = [int(b) for b in text.replace(",", " ").split()]
            except ValueError:
                raise InvalidInputError(
                    "arguments",
                    [Problem("propose", f"--{name.replace('_', '-')}", f"broker ids, got {text!r}")],
                ) from None
    if args.size_aware:
        body["size_aware"] = True
    if args.capacity:
        try:
            body["capacity"] = json.loads(Path(args.capacity).read_text())
        except (OSError, ValueError) as exc:
            raise InvalidInputError("arguments", [Problem(args.capacity, "--capacity", str(exc))]) from None
    result = client.request("POST", "/v1/proposals", body=body)
    if args.out:
        Path(args.out).write_text(json.dumps(result["plan"], indent=2) + "\n")
    if args.json:
        print_json(result)
        return 0
    print(summary_line(str(result["cluster"]), result["figures"]))
    where = f"; wrote {args.out}" if args.out else ""
    print(f"planned in {result['seconds']}s (snapshot {result['snapshot_seconds']}s){where}", file=sys.stderr)
    return 0


def _reassignments(args: argparse.Namespace, client: ApiClient) -> int:
    items = client.reassignments()
    if args.json:
        print_json({"reassignments": items})
        return 0
    if not items:
        print("no reassignment in progress")
        return 0

    def ids(values: Any) -> str:
        return ",".join(str(v) for v in values or []) or "-"

    columns = ("topic", "partition", "replicas", "adding", "removing", "owner", "plan_id")
    rows = [
        [ids(r.get(c)) if c in ("replicas", "adding", "removing") else r.get(c) for c in columns]
        for r in items
    ]
    _print_lines(
        format_table(("TOPIC", "PARTITION", "REPLICAS", "ADDING", "REMOVING", "OWNER", "PLAN"), rows)
    )
    return 0

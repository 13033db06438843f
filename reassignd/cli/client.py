"""Client commands that steer a running daemon over its HTTP API: submit, status, plans, pause, resume,
cancel, limits, throttle, reassignments, propose.

Exit codes: 0 done, 2 the daemon (or a local check) refused, 3 no daemon could be reached; `status --watch`
ends 0 when the plan completed and 1 when it was cancelled or failed. Errors go to stderr as the error code,
the message and every problem, never as a traceback; with `--json` they go to stdout as the API's error
document `{"error": {"code", "message", "problems"?, "details"?}}`, with the same exit codes.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import sys
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from reassignd import config_keys
from reassignd.cli import anomalies
from reassignd.cli._common import load_plan, poll_interval, print_json
from reassignd.cli.watch import (
    UNLIMITED,
    format_duration,
    format_table,
    format_time,
    idle_lines,
    parse_time,
    render_status,
    status_lines,
    watch,
)
from reassignd.client import (
    API_ENV,
    DEFAULT_API,
    TOKEN_ENV,
    TOKEN_FILE_ENV,
    ApiClient,
    ApiError,
    ApiUnreachable,
    client_env,
)
from reassignd.daemon import auth
from reassignd.model import InvalidInputError, Problem, TopicPartition, assignment_document, kafka_json
from reassignd.suggest import unknown_key
from reassignd.units import format_bytes, format_rate

EXIT_REFUSED = 2
EXIT_UNREACHABLE = 3

Handler = Callable[[argparse.Namespace, ApiClient], int]


def register(subparsers: Any) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--api", help=f"the daemon's API URL (default: ${API_ENV} or {DEFAULT_API})")
    common.add_argument(
        "--token-file", help=f"file holding the API token (default: ${TOKEN_FILE_ENV}, else ${TOKEN_ENV})"
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
    submit.add_argument(
        "--allow-decommissioned",
        action="store_true",
        help="accept targets that add a replica on a decommissioned broker (`reassignd brokers`)",
    )
    submit.add_argument(
        "--name", help="a name for people, shown by `reassignd plans` (1-64 letters, digits, spaces, _.@+-)"
    )
    submit.add_argument(
        "--rollback-out",
        metavar="FILE",
        help="save the pre-plan assignment (Kafka's reassignment JSON) here; by default a queued plan's "
        "goes to ./PLAN_ID.rollback.json",
    )
    status = add("status", _status, "a plan's progress (the running plan by default)")
    status.add_argument("plan_id", nargs="?", help="plan id (default: the running plan)")
    status.add_argument("--watch", action="store_true", help="follow live until the plan finishes")
    status.add_argument("--interval", type=poll_interval, default=2.0, help="seconds between polls (2)")
    add("plans", _plans, "list plans, newest first")
    history = add(
        "history",
        _history,
        "what happened, and who did it: the daemon's journal (plans, steps, throttles, limits), oldest first",
    )
    history.add_argument("--plan", metavar="PLAN_ID", help="only this plan's entries")
    history.add_argument(
        "--kind",
        action="append",
        default=[],
        metavar="KIND",
        help="only entries of this kind (repeatable): plan.paused, limits.changed, throttle.set, ...",
    )
    history.add_argument(
        "--since",
        metavar="TIME",
        help="from this time (ISO 8601, UTC unless a zone is given, or Unix seconds)",
    )
    history.add_argument("--until", metavar="TIME", help="up to this time")
    history.add_argument("--limit", type=int, default=50, help="the newest N entries that match (50; 0: all)")
    for action in ("pause", "resume", "cancel"):
        parser = add(
            action, functools.partial(_lifecycle, action), f"{action} a plan (the running one by default)"
        )
        parser.add_argument("plan_id", nargs="?", help="plan id (default: the running plan)")
    parser.add_argument(
        "--foreign",
        action="store_true",
        help="instead: cancel the reassignments another tool started (never the running plan's)",
    )
    parser.add_argument(
        "--topics", metavar="REGEX", help="with --foreign: only topics whose whole name matches"
    )
    limits = add(
        "limits",
        _limits,
        "show the reassignment limits as a config file writes them, or change them with KEY=VALUE "
        "(unlimited for no limit on a count, none for no throttle, rates as 50MB/s)",
    )
    limits.add_argument(
        "changes", nargs="*", metavar="KEY=VALUE", help="e.g. reassignment.parallel.partition.count=8"
    )
    limits.add_argument(
        "--reset",
        action="store_true",
        help="undo runtime changes (of the KEYs given, else all): the config file's values apply again",
    )
    throttle = add(
        "throttle", _throttle, "show or change the throttle rates (50MB/s, 10MiB, 1e6; none removes)"
    )
    throttle.add_argument(
        "--leader-rate", type=_rate_arg, help=config_keys.LEADER_REASSIGNMENT_THROTTLED_RATE
    )
    throttle.add_argument(
        "--follower-rate", type=_rate_arg, help=config_keys.FOLLOWER_REASSIGNMENT_THROTTLED_RATE
    )
    throttle.add_argument(
        "--log-dir-rate",
        type=_rate_arg,
        help=f"{config_keys.LOG_DIR_REASSIGNMENT_THROTTLED_RATE}: moves between the log dirs of a broker "
        f"(written as {config_keys.REPLICA_ALTER_LOG_DIRS_IO_MAX_BYTES_PER_SECOND})",
    )
    reassignments = add(
        "reassignments", _reassignments, "reassignments the cluster reports, ours and foreign"
    )
    reassignments.add_argument(
        "--format",
        choices=("table", "kafka", "kafka-json"),
        default="table",
        help="kafka: the text kafka-reassign-partitions --list prints; kafka-json: their targets as "
        "Kafka's reassignment JSON (for its --verify or --cancel)",
    )
    recover = add(
        "recover",
        _recover,
        "decide on what the daemon's state store found wrong with itself at start (it holds every cluster "
        "write until then; `reassignd status` lists the findings)",
    )
    recover.add_argument(
        "--mode",
        choices=("adopt", "cleanup"),
        help="adopt: take the store as it is and the cluster as it shows, and go on; cleanup: cancel the "
        "reassignments in flight and put back the throttle configs that the cluster's ownership marker "
        "proves our lost plan's, then go on (both journaled)",
    )
    recover.add_argument("--adopt", action="store_true", help="the same as --mode adopt")
    _register_propose(add)
    _register_roles(add)
    anomalies.add_commands(add)


def _register_roles(add: Callable[[str, Handler, str], argparse.ArgumentParser]) -> None:
    brokers = add(
        "brokers",
        _brokers,
        "list brokers with their lasting role, or decommission / recommission one (kept by the daemon's "
        "store: a decommissioned broker receives no replica from any proposal, drain, re-target or "
        "submitted plan until recommissioned)",
    )
    brokers.add_argument(
        "action", nargs="?", choices=("list", "decommission", "recommission"), default="list"
    )
    brokers.add_argument("broker", nargs="?", type=int, help="the broker id (decommission, recommission)")
    brokers.add_argument(
        "--drain", action="store_true", help="decommission: also queue the plan that drains the broker"
    )
    brokers.add_argument("--reason", help="decommission: why (journaled, shown by `reassignd brokers`)")
    retarget = add(
        "retarget",
        _retarget,
        "give the partitions of the running plan that wait on a broker that is gone new targets (rack "
        "spread kept, decommissioned brokers excluded), without restarting the plan",
    )
    retarget.add_argument("plan_id", nargs="?", help="plan id (default: the running plan)")


# ---------------------------------------------------------------------------------------------------------
# Units


_RATE = re.compile(
    r"^\s*(?P<number>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)\s*(?P<unit>[A-Za-z]*?)\s*(?P<per>/s|ps)?\s*$"
)
_PREFIXES = {"": 1, "K": 1000, "M": 1000**2, "G": 1000**3, "T": 1000**4}
_BINARY = {"KI": 1024, "MI": 1024**2, "GI": 1024**3, "TI": 1024**4}
MAX_RATE = 2**63 - 1  # Kafka's rate configs are longs
RATE_UNITS_HELP = (
    "bytes: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB; bits: b, kb, Mb, Gb, Tb or bit, kbit, Mbit, ...; "
    "each may end in /s or ps, prefixes in any case (50MB/s = 50 megabytes/s, "
    "50Mbps = 50 megabits/s = 6.25 MB/s)"
)


def _unit_bytes(unit: str) -> Decimal | None:
    """Bytes per unit: a capital B is bytes, a lowercase b or `bit` is bits (1/8 byte), no letter bytes.
    Prefixes are decimal (K, M, G, T) or binary (Ki, Mi, ...), read in any case: no rate is in millibytes.
    `kib`, `mib`, ... stay bytes: binary prefixes are a byte notation (bits say so: `Mibit`)."""
    if unit.lower().endswith("bit"):
        stem, per_unit = unit[:-3], Decimal(1) / 8
    elif unit.endswith("b") and not unit.lower().endswith("ib"):
        stem, per_unit = unit[:-1], Decimal(1) / 8
    elif unit.upper().endswith("B"):
        stem, per_unit = unit[:-1], Decimal(1)
    else:
        stem, per_unit = unit, Decimal(1)  # 5M, 2e6: bytes
    multiplier = _PREFIXES.get(stem.upper()) or _BINARY.get(stem.upper())
    return None if multiplier is None else per_unit * multiplier


def parse_rate(text: str) -> int:
    """`50MB/s`, `10MiB`, `1.5GB/s`, `2e6`, `50Mbps` -> bytes per second (KB/MB decimal, KiB/MiB binary).

    A capital `B` is bytes, a lowercase `b` (or `bit`) bits, as networking writes them: `50mbps` and
    `50Mbps` are 50 megabits/s, 6.25 MB/s. What the rate is in bytes is what the commands print back.
    """
    match = _RATE.match(text)
    if not match:
        raise ValueError(f"not a rate: {text!r} (examples: 50MB/s, 10MiB, 400Mbps, 1048576)")
    unit = match["unit"]
    per_unit = _unit_bytes(unit)
    if per_unit is None:
        raise ValueError(f"{text!r}: unknown unit {unit!r}; {RATE_UNITS_HELP}")
    value = Decimal(match["number"]) * per_unit  # exact: 9007199254740993 stays itself
    if value < 1:
        raise ValueError(f"{text!r}: a throttle rate must be at least 1 byte/s")
    if value > MAX_RATE:
        raise ValueError(f"{text!r}: exceeds the largest rate Kafka accepts ({MAX_RATE} bytes/s)")
    return int(value.to_integral_value())


CLEAR = "none"
RATE_KEYS = (
    config_keys.LEADER_REASSIGNMENT_THROTTLED_RATE,
    config_keys.FOLLOWER_REASSIGNMENT_THROTTLED_RATE,
    config_keys.LOG_DIR_REASSIGNMENT_THROTTLED_RATE,
)
RATE_COLUMNS = {
    config_keys.LEADER_REASSIGNMENT_THROTTLED_RATE: "leader",
    config_keys.FOLLOWER_REASSIGNMENT_THROTTLED_RATE: "follower",
    config_keys.LOG_DIR_REASSIGNMENT_THROTTLED_RATE: "log_dir",
}
"""Each rate's key under `applied` (GET /v1/throttles): the rate in force on a broker."""


def _rate_arg(text: str) -> int | str:
    if text.strip().lower() in (CLEAR, "off"):
        return CLEAR
    try:
        return parse_rate(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


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
    """`8` -> 8, `0.5` -> 0.5, `true` -> True, `null` -> None; anything else stays a string (units,
    `unlimited` and lists are read per key: `_typed`)."""
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    if re.fullmatch(r"[+-]?(\d+\.\d*|\.\d+|\d+(\.\d*)?[eE][+-]?\d+)", text):
        return float(text)
    return {"true": True, "false": False, "null": None, "none": None}.get(text.lower(), text)


def _typed(changes: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, Any]:
    """Values as the daemon expects them for each key: rates may carry units (`50MB/s`), `unlimited` is
    no limit (no throttle for a rate), lists may be written as in the config file (`["a", "b"]`) or
    comma-separated. The daemon validates the result."""
    typed: dict[str, Any] = {}
    problems: list[Problem] = []
    for key, given in changes.items():
        value = given
        if isinstance(given, str) and given.lower() == "unlimited":
            value = None if key in RATE_KEYS else UNLIMITED  # no throttle; Kafka's largest int
        elif key in RATE_KEYS and isinstance(given, str):
            try:
                value = parse_rate(given)
            except ValueError as exc:
                problems.append(Problem("limits", key, str(exc)))
                continue
        elif isinstance(current.get(key), list) and isinstance(given, str):
            value = [v.strip().strip("\"'") for v in given.strip("[]").split(",") if v.strip()]
        typed[key] = value
    if problems:
        raise InvalidInputError("limit changes", problems)
    return typed


# ---------------------------------------------------------------------------------------------------------
# Running a command


def _run(handler: Handler, args: argparse.Namespace) -> int:
    from reassignd.cli import report_error

    def warn(message: str) -> None:
        print(f"reassignd: warning: {message}", file=sys.stderr)

    try:
        env = {
            name: value
            for name in (TOKEN_FILE_ENV, TOKEN_ENV)
            if (value := client_env(name, os.environ, warn))
        }
        token = auth.load_token(args.token_file, env=env, file_var=TOKEN_FILE_ENV, token_var=TOKEN_ENV)
        api = args.api or client_env(API_ENV, os.environ, warn) or DEFAULT_API
        client = ApiClient(api, token=token, timeout=args.timeout)
        return handler(args, client)
    except ApiError as exc:
        return report_error(
            exc.code,
            exc.message,
            exc.problems,
            details=exc.details,
            hints=_hints(exc),
            as_json=args.json,
            exit_code=EXIT_REFUSED,
        )
    except ApiUnreachable as exc:
        return report_error("unreachable", str(exc), as_json=args.json, exit_code=EXIT_UNREACHABLE)
    except ValueError as exc:  # a bad --api URL; InvalidInputError (a ValueError) has its own report
        if isinstance(exc, InvalidInputError):
            raise
        return report_error("invalid_input", str(exc), as_json=args.json, exit_code=EXIT_REFUSED)


def _hints(exc: ApiError) -> list[str]:
    if exc.code == "unauthorized":
        return [f"pass --token-file, or set ${TOKEN_FILE_ENV} or ${TOKEN_ENV}"]
    if exc.code == "forbidden":
        return ["this is the read token; changes need the operator token (api.token)"]
    if exc.code == "not_leader" and exc.details.get("leader"):
        return [f"the leading daemon is at --api {exc.details['leader']}"]
    return []


def _print_lines(lines: list[str]) -> None:
    sys.stdout.write("\n".join(lines) + "\n")


# ---------------------------------------------------------------------------------------------------------
# Commands


def _submit(args: argparse.Namespace, client: ApiClient) -> int:
    plan = load_plan(args.plan)
    if args.rollback_out and os.path.exists(args.rollback_out):  # before submitting: nothing half-done
        raise InvalidInputError(
            "arguments",
            [Problem(args.rollback_out, "--rollback-out", "exists; a rollback file is never overwritten")],
        )
    result = client.submit_plan(
        plan.to_dict(),
        dry_run=args.dry_run,
        allow_rf_change=args.allow_rf_change,
        name=args.name,
        allow_decommissioned=args.allow_decommissioned,
    )
    plan_id = result.get("plan_id")
    rollback_path = args.rollback_out
    if rollback_path is None and plan_id is not None and not args.json:
        rollback_path = f"{plan_id}.rollback.json"
    saved = _save_rollback(rollback_path, result.get("rollback")) if rollback_path else None
    if args.json:
        print_json(result)
        return 0
    steps = result.get("steps") or {}
    named = f" ({result['name']})" if result.get("name") else ""
    what = "dry run" if plan_id is None else f"plan {plan_id}{named} {result.get('state')}"
    print(
        f"{what}: {result.get('partitions')} partition(s), "
        f"{result.get('replicas_to_move')} replica(s) to move, "
        f"{format_bytes(result.get('bytes_to_move'))}{_read_at(result)}, {steps.get('total', '?')} step(s)"
    )
    if args.dry_run and result.get("rollback") is not None:
        _print_lines(dry_run_diff(plan, result["rollback"]))
    if saved:
        print(f"rollback: saved the current assignment to {saved} (`reassignd submit {saved}` restores it)")
    elif rollback_path and result.get("rollback") is not None:
        # as Kafka's tool does on --execute: print it, so the operator can save it by hand
        print("Current partition replica assignment\n")
        print(kafka_json(result["rollback"]))
        print("\nSave this to submit during rollback")
    return 0


DIFF_LINES = 30


def dry_run_diff(plan: Any, current_document: Mapping[str, Any]) -> list[str]:
    """What a plan would change: current -> target per partition (the first DIFF_LINES that change, then
    how many more), and per broker the replicas it gains and loses."""
    current = {
        (str(e["topic"]), int(e["partition"])): [int(b) for b in e["replicas"]]
        for e in current_document.get("partitions", ())
    }
    changes = []
    gains: dict[int, int] = {}
    losses: dict[int, int] = {}
    for tp, target in sorted(plan.targets.items()):
        before = current.get((tp.topic, tp.partition))
        if before is None or list(target) == before:
            continue
        changes.append(f"  {tp}  {before} -> {list(target)}")
        for broker in set(target) - set(before):
            gains[broker] = gains.get(broker, 0) + 1
        for broker in set(before) - set(target):
            losses[broker] = losses.get(broker, 0) + 1
    lines = [line if len(line) <= 80 else line[:77] + "..." for line in changes[:DIFF_LINES]]
    if len(changes) > DIFF_LINES:
        lines.append(f"  ... and {len(changes) - DIFF_LINES} more (--json has the rollback document)")
    if not changes:
        return ["  every partition is already on its target"]
    rows = [
        [str(b), str(gains.get(b, 0)), str(losses.get(b, 0)), f"{gains.get(b, 0) - losses.get(b, 0):+d}"]
        for b in sorted(set(gains) | set(losses))
    ]
    table = format_table(("BROKER", "GAINS", "LOSES", "NET"), rows, right=(0, 1, 2, 3))
    return [*lines, "per broker: replicas gained and lost", *table]


def _read_at(result: Mapping[str, Any]) -> str:
    """When the sizes were read (topics grow: plan, rehearse and submit each say their moment)."""
    at = result.get("sizes_read_at")
    return f" (sizes read {format_time(at)})" if at else ""


def _save_rollback(path: str, document: Any) -> str | None:
    """Write the rollback document where asked (never over an existing file); None when it cannot be."""
    if document is None:
        return None
    try:
        with open(path, "x", encoding="utf-8") as handle:
            handle.write(kafka_json(document) + "\n")
    except OSError as exc:
        print(f"reassignd: cannot write the rollback file {path}: {exc.strerror or exc}", file=sys.stderr)
        return None
    return path


def _status(args: argparse.Namespace, client: ApiClient) -> int:
    try:
        status = client.status(args.plan_id)
    except ApiError as exc:
        if args.plan_id is None and exc.code == "not_found":  # a daemon older than the idle status
            print_json(None) if args.json else print("no plan is running")
            return 0
        raise
    if status.get("plan_id") is None:  # idle: the cluster's reachability, then that no plan runs
        print_json(status) if args.json else _print_lines(idle_lines(status))
        return 0
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
    if not plans:
        print("no plan submitted yet")
        return 0
    rows: list[list[Any]] = []
    names: dict[int, str] = {}
    for p in plans:
        progress = p.get("progress") or {}
        percent = progress.get("percent")
        done = "-" if percent is None else f"{float(percent):.1f}%"
        rows.append([p.get("plan_id"), p.get("state"), _plan_end(p), _plan_took(p), _moved(progress), done])
        if p.get("name"):
            names[len(rows) - 1] = str(p["name"])
    table = format_table(("PLAN", "STATE", "END (UTC)", "TOOK", "MOVED", "DONE"), rows, right=(3, 4, 5))
    lines = table[:1]
    for index, line in enumerate(table[1:]):
        lines.append(line)
        if index in names:  # a name a person gave (submit --name), under its plan
            lines.append(f"  {names[index]}")
    _print_lines(lines)
    return 0


def _plan_end(plan: Mapping[str, Any]) -> str:
    """When it ended (UTC, to the minute), or for a running plan when it should (the ETA)."""
    if plan.get("finished_at"):
        return format_time(plan["finished_at"], seconds=False)[5:]  # MM-DD HH:MM
    eta = (plan.get("progress") or {}).get("eta_seconds")
    if plan.get("state") == "running" and eta is not None:
        return f"in {format_duration(eta)}"
    return "-"


def _plan_took(plan: Mapping[str, Any]) -> str:
    """From its start to its end, or to now while it runs."""
    started = parse_time(plan.get("started_at"))
    if started is None:
        return "-"
    ended = parse_time(plan.get("finished_at")) or datetime.now(UTC)
    return format_duration(max(0.0, (ended - started).total_seconds()))


def _moved(progress: Mapping[str, Any]) -> str:
    moved = progress.get("bytes_moved")
    return "-" if moved is None else format_bytes(moved)


def _history(args: argparse.Namespace, client: ApiClient) -> int:
    from collections import deque

    params = {name: getattr(args, name) for name in ("plan", "since", "until") if getattr(args, name)}
    if args.kind:
        params["kind"] = ",".join(args.kind)
    if args.limit < 0:
        raise InvalidInputError(
            "arguments", [Problem("history", "--limit", f"must be 0 or more, got {args.limit}")]
        )
    kept: deque[dict[str, Any]] = deque(maxlen=args.limit or None)
    after = 0
    while True:  # pages of 1000, oldest first; only the newest --limit are kept
        page = client.journal({**params, "after": str(after), "limit": "1000"})
        kept.extend(page["entries"])
        if page["next_after"] is None:
            break
        after = int(page["next_after"])
    if args.json:
        print_json(list(kept))
        return 0
    if not kept:
        _print_lines(["no journal entry matches"])
        return 0
    _print_lines([history_line(entry) for entry in kept])
    return 0


def who(by: Mapping[str, Any]) -> str:
    """A journal entry's author as a person reads it."""
    via = by.get("via")
    if via == "api":
        name = by.get("name") or "a client without a name"
        return f"{name} ({by.get('role', '?')} token, {by.get('remote') or '?'})"
    if via == "mqtt":
        return f"MQTT command {by.get('command', '?')} (nonce {str(by.get('nonce', '?'))[:8]})"
    if via == "sighup":
        return "SIGHUP (config reload)"
    return "reassignd"


def history_line(entry: Mapping[str, Any]) -> str:
    """`2026-11-27 02:56:28  plan.paused  plan-... by alice@host (operator token, 10.0.0.7): from running`"""
    data = dict(entry.get("data") or {})
    subject = " ".join(
        str(part) for part in (entry.get("plan_id"), entry.get("partition"), _step(entry.get("step"))) if part
    )
    detail = ", ".join(f"{k}={_short(v)}" for k, v in data.items())
    line = f"{format_time(entry.get('at'))}  {entry.get('kind')}  {subject}".rstrip()
    line += f"  by {who(entry.get('by') or {})}"
    return line + (f": {detail}" if detail else "")


def _step(index: Any) -> str:
    return "" if index is None else f"step {index}"


def _short(value: Any) -> str:
    text = json.dumps(value, separators=(",", ":")) if isinstance(value, dict | list) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


_LIFECYCLE_DONE = {
    "paused": "moves in flight finish, no new one starts; `reassignd resume` goes on",
    "resumed": "new moves start from the next cycle, under the limits in force; "
    "`reassignd status --watch` follows it",
    "cancelling": "partitions go back to their pre-plan list, or finish on their target when nearer; "
    "`reassignd status --watch` follows it",
}


def _lifecycle(action: str, args: argparse.Namespace, client: ApiClient) -> int:
    if action == "cancel" and (args.foreign or args.topics is not None):
        return _cancel_foreign(args, client)
    status = client.lifecycle(action, args.plan_id)
    if args.json:
        print_json(status)
        return 0
    state = str(status.get("state"))
    if action == "resume" and state == "running":
        state = "resumed"
    done = _LIFECYCLE_DONE.get(state)
    print(f"plan {status.get('plan_id')} {state}" + (f": {done}" if done else ""))
    return 0


def _limits(args: argparse.Namespace, client: ApiClient) -> int:
    from reassignd.cli import report_error

    before = client.limits()
    if args.reset:
        return _reset_limits(client, list(args.changes) or None, before, as_json=args.json)
    if not args.changes:
        if args.json:
            print_json(before)
        else:
            _print_lines([line for key, value in before.items() for line in config_lines(key, value)])
        return 0
    changes = parse_assignments(args.changes)
    unknown = [key for key in changes if key not in before]
    if unknown:
        problems = [Problem("limits", key, _unknown_limit(key, before)) for key in unknown]
        return report_error(
            "invalid_input",
            f"limits unchanged: {len(unknown)} unknown key(s)",
            problems,
            as_json=args.json,
            exit_code=EXIT_REFUSED,
        )
    after = client.set_limits(_typed(changes, before))
    if args.json:
        print_json(after)
        return 0
    lines = []
    for key in changes:
        shown = config_lines(key, after.get(key))
        was = config_value(key, before.get(key))
        note = "(unchanged)" if before.get(key) == after.get(key) else f"(was {was})"
        if len(shown[-1]) + 3 + len(note) <= 80:
            shown[-1] = f"{shown[-1]}   {note}"
        else:
            shown.append(f"    {note}")
        lines += shown
    lines.append("in force from the next cycle; moves above a lowered limit finish, none starts")
    _print_lines(lines)
    return 0


def _reset_limits(client: Any, keys: list[str] | None, before: Mapping[str, Any], *, as_json: bool) -> int:
    """Runtime changes undone: each key shown with the config file's value it is back to."""
    after = client.reset_limits(keys)
    if as_json:
        print_json(after)
        return 0
    lines = []
    for key in keys if keys is not None else list(after):
        if keys is None and before.get(key) == after.get(key):
            continue
        shown = config_lines(key, after.get(key))
        if before.get(key) != after.get(key):
            shown[-1] = f"{shown[-1]}   (was {config_value(key, before.get(key))})"
        lines += shown
    lines.append(
        "the config file's values apply from the next cycle" if lines else "no runtime changes to undo"
    )
    _print_lines(lines)
    return 0


def _unknown_limit(key: str, known: Mapping[str, Any]) -> str:
    return unknown_key(key, known, listed_by="`reassignd limits` lists them")


def config_value(key: str, value: Any) -> str:
    """A limit's value as a person reads it, in the config file's notation."""
    if value is None:
        return "none (no throttle)" if key in RATE_KEYS else "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(f'"{v}"' for v in value) + "]"
    if key in RATE_KEYS and isinstance(value, int | float):
        return format_rate(value)
    if isinstance(value, int) and value >= UNLIMITED:
        return "unlimited"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


def config_lines(key: str, value: Any, width: int = 80) -> list[str]:
    """`key = value`, a long list wrapped under its first item as TOML allows."""
    text = f"{key} = {config_value(key, value)}"
    if len(text) <= width or not isinstance(value, list):
        return [text]
    indent = " " * (len(key) + 4)
    lines, current = [], f"{key} = ["
    for index, item in enumerate(value):
        piece = f'"{item}"' + (", " if index < len(value) - 1 else "]")
        if len(current) + len(piece.rstrip()) > width and current.strip() != f"{key} = [":
            lines.append(current.rstrip())
            current = indent
        current += piece
    return [*lines, current.rstrip()]


def _throttle(args: argparse.Namespace, client: ApiClient) -> int:
    changes = {
        key: None if value == CLEAR else value
        for key, value in (
            (config_keys.LEADER_REASSIGNMENT_THROTTLED_RATE, args.leader_rate),
            (config_keys.FOLLOWER_REASSIGNMENT_THROTTLED_RATE, args.follower_rate),
            (config_keys.LOG_DIR_REASSIGNMENT_THROTTLED_RATE, args.log_dir_rate),
        )
        if value is not None
    }
    before = client.throttles() if changes else None
    throttles = client.set_throttles(changes) if changes else client.throttles()
    pending = False
    if changes and not args.json:
        throttles, pending = _until_applied(client, throttles, changes, args.timeout)
    if args.json:
        print_json(throttles)
        return 0
    lines = []
    for key in RATE_KEYS:
        line = f"{key} = {config_value(key, throttles.get(key))}"
        if before is not None and key in changes:
            line += (
                "   (unchanged)"
                if before.get(key) == throttles.get(key)
                else (f"   (was {config_value(key, before.get(key))})")
            )
        lines.append(line)
    applied = throttles.get("applied") or {}
    if applied:
        # the log-dir column only when a broker has that rate: most plans move nothing between log dirs
        shown = [c for c in RATE_COLUMNS.values() if c != "log_dir" or any(c in r for r in applied.values())]
        rows = [
            [broker, *(format_rate(rates.get(column)) for column in shown)]
            for broker, rates in sorted(applied.items(), key=lambda kv: int(kv[0]))
        ]
        headers = ("BROKER", *(column.replace("_", " ").upper() for column in shown))
        title = "in force on the brokers with moves"
        if pending:
            title += " (not all at the new rate yet: it reaches them at the next cycle)"
        lines += ["", title, *format_table(headers, rows, right=(0,))]
    else:
        lines.append("no throttle of ours in force: brokers get these rates when moves start")
    _print_lines(lines)
    return 0


def _until_applied(
    client: ApiClient, throttles: Mapping[str, Any], changes: Mapping[str, Any], timeout: float
) -> tuple[Mapping[str, Any], bool]:
    """The daemon applies new rates in its next cycle (which the change wakes): wait for it, a few
    seconds at most, so the reply shows the rates in force rather than the old ones."""
    deadline = time.monotonic() + min(timeout, 10.0)
    columns = RATE_COLUMNS
    while True:
        applied = throttles.get("applied") or {}
        stale = [
            broker
            for broker, rates in applied.items()
            for key, value in changes.items()
            if columns[key] in rates and rates[columns[key]] != value
        ]
        if not stale or time.monotonic() >= deadline:
            return throttles, bool(stale)
        time.sleep(0.25)
        throttles = client.throttles()


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
    propose.add_argument(
        "--leaders",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also balance preferred leaders (default as for `reassignd plan`: not for drain)",
    )
    propose.add_argument("--capacity", metavar="FILE", help="broker capacities (JSON) for the hard goals")
    propose.add_argument("--seed", type=int)
    propose.add_argument("--out", metavar="PLAN.json", help="write the proposed plan here (for submit)")
    propose.set_defaults(timeout=600.0)


def _propose(args: argparse.Namespace, client: ApiClient) -> int:
    from pathlib import Path

    from reassignd.cli.plan import goal_exit_code, summary_line

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
    if args.leaders is not None:
        body["leaders"] = args.leaders
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
    else:
        print(summary_line(str(result["cluster"]), result["figures"]))
        where = f"; wrote {args.out}" if args.out else ""
        print(
            f"planned in {result['seconds']}s (snapshot {result['snapshot_seconds']}s){where}",
            file=sys.stderr,
        )
    return goal_exit_code([result["figures"]])


# Another tool's throttles outlive the moves cancelled here: reassignd cannot tell them from an operator's, so
# it leaves them; Kafka's tool SETs them on --execute --throttle and DELETEs every one on --verify/--cancel
# (tests/realkafka/test_kafka_tool.py).
FOREIGN_THROTTLES_NOTE = (
    "throttles: none changed. The tool that started these moves may have set some:",
    "its --verify (or --cancel) of the same plan file removes them, and with them",
    "every other replication throttle of the cluster's brokers and of those topics.",
)


def _cancel_foreign(args: argparse.Namespace, client: ApiClient) -> int:
    problems = []
    if not args.foreign:
        problems.append(Problem("cancel", "--topics", "only with --foreign"))
    if args.plan_id is not None:
        problems.append(Problem("cancel", "PLAN_ID", "not with --foreign (it cancels no plan)"))
    if problems:
        raise InvalidInputError("arguments", problems)
    answer = client.cancel_foreign({} if args.topics is None else {"topics": args.topics})
    if args.json:
        print_json(answer)
        return 0
    lines = []
    for entry in answer["cancelled"]:
        lines.append(
            f"cancelled {entry['topic']}-{entry['partition']}: was adding {_ids(entry['adding'])}, "
            f"removing {_ids(entry['removing'])}"
        )
    for entry in answer["failed"]:
        lines.append(f"not cancelled {entry['topic']}-{entry['partition']}: {entry['error']}")
    for entry in answer["skipped"]:
        lines.append(f"left {entry['topic']}-{entry['partition']}: part of plan {entry['plan_id']}")
    if not answer["cancelled"] and not answer["failed"]:
        lines.append(
            "no foreign reassignment to cancel" + (f" in topics {args.topics}" if args.topics else "")
        )
    if answer["cancelled"]:
        lines.extend(FOREIGN_THROTTLES_NOTE)
    _print_lines(lines)
    return EXIT_REFUSED if answer["failed"] else 0


def _ids(values: Any) -> str:
    return ",".join(str(v) for v in values or []) or "-"


def kafka_list_text(items: list[dict[str, Any]]) -> str:
    """What `kafka-reassign-partitions --list` prints (ReassignPartitionsCommand.curReassignmentsToString)."""
    if not items:
        return "No partition reassignments found."
    lines = ["Current partition reassignments:"]
    for r in sorted(items, key=lambda r: (r["topic"], r["partition"])):
        line = f"{r['topic']}-{r['partition']}: replicas: {','.join(str(b) for b in r['replicas'])}."
        if r.get("adding"):
            line += f" adding: {','.join(str(b) for b in r['adding'])}."
        if r.get("removing"):
            line += f" removing: {','.join(str(b) for b in r['removing'])}."
        lines.append(line)
    return "\n".join(lines)


def _recover(args: argparse.Namespace, client: ApiClient) -> int:
    mode = args.mode or ("adopt" if args.adopt else None)
    if mode is None or (args.adopt and mode != "adopt"):
        problem = "required: adopt or cleanup" if mode is None else f"--adopt contradicts --mode {mode}"
        raise InvalidInputError("arguments", [Problem("recover", "--mode", problem)])
    answer = client.recover(mode)
    if args.json:
        print_json(answer)
        return 0
    verb = "adopted" if mode == "adopt" else "cleaned up"
    lines = [f"{verb}: {finding}" for finding in answer["findings"]]
    lines += [f"cancelled the reassignment of {name}" for name in answer.get("cancelled", ())]
    for row in answer.get("restored", ()):
        value = "deleted" if row["value"] is None else f"set back to {row['value']}"
        lines.append(f"{row['resource']} {row['name']} {row['key']}: {value}")
    lines.append("the daemon writes to the cluster again; `reassignd status` shows where it goes on")
    _print_lines(lines)
    return 0


def _brokers(args: argparse.Namespace, client: ApiClient) -> int:
    if args.action == "list":
        if args.broker is not None or args.drain or args.reason is not None:
            raise InvalidInputError(
                "arguments", [Problem("brokers", "action", "say decommission or recommission")]
            )
        answer = client.brokers()
        if args.json:
            print_json(answer)
            return 0
        _print_lines(broker_lines(answer["brokers"]))
        return 0
    if args.broker is None:
        raise InvalidInputError(
            "arguments", [Problem("brokers", "broker", f"{args.action} needs a broker id")]
        )
    if args.action == "recommission":
        if args.drain or args.reason is not None:
            raise InvalidInputError(
                "arguments", [Problem("brokers", "--drain", "--drain and --reason are for decommission")]
            )
        answer = client.recommission(args.broker)
    else:
        answer = client.decommission(args.broker, drain=args.drain, reason=args.reason)
    if args.json:
        print_json(answer)
        return 0
    _print_lines(role_change_lines(answer))
    return 0


def broker_lines(brokers: list[dict[str, Any]]) -> list[str]:
    lines = [f"{'BROKER':>7}  {'STATE':<14}  {'RACK':<16}  {'REPLICAS':>8}  ROLE"]
    for b in brokers:
        role = b["role"]
        if role != "member":
            by = who(b["by"]) if b.get("by") else ""
            extra = ", ".join(x for x in (b.get("reason") or "", f"by {by}" if by else "") if x)
            role += f" ({extra})" if extra else ""
        replicas = "-" if b.get("replicas") is None else str(b["replicas"])
        lines.append(f"{b['id']:>7}  {b['state']:<14}  {b.get('rack') or '-':<16}  {replicas:>8}  {role}")
    return lines


def role_change_lines(answer: Mapping[str, Any]) -> list[str]:
    broker, role = answer["broker"], answer["role"]
    if role == "decommissioned":
        head = (
            f"broker {broker} decommissioned" if answer["changed"] else f"broker {broker} was decommissioned"
        )
        lines = [f"{head}: it receives no replica until `reassignd brokers recommission {broker}`"]
    else:
        head = f"broker {broker} recommissioned" if answer["changed"] else f"broker {broker} had no role"
        lines = [f"{head}: it may receive replicas again (nothing moves now)"]
    drain = answer.get("drain")
    if drain is not None and drain.get("plan_id"):
        lines.append(
            f"drain plan {drain['plan_id']} queued: {drain['partitions']} partition(s); "
            f"`reassignd status {drain['plan_id']}` follows it"
        )
    elif drain is not None:
        lines.append(f"nothing to drain: {drain.get('detail', '')}")
    elif role == "decommissioned":
        lines.append(f"its replicas stay: `reassignd brokers decommission {broker} --drain` moves them off")
    return lines


def _retarget(args: argparse.Namespace, client: ApiClient) -> int:
    answer = client.retarget(args.plan_id)
    if args.json:
        print_json(answer)
        return 0
    lines = []
    if not answer["retargeted"] and not answer["unplaced"]:
        lines.append(f"plan {answer['plan_id']}: no partition waits on a broker that is gone")
    for e in answer["retargeted"]:
        withdrawn = " (its step in flight is reverted first)" if e["withdrawn"] else ""
        lines.append(f"{e['topic']}-{e['partition']}: [{_ids(e['from'])}] -> [{_ids(e['to'])}]{withdrawn}")
    for e in answer["unplaced"]:
        lines.append(f"{e['topic']}-{e['partition']}: left as it is: {e['reason']}")
    if answer["retargeted"]:
        gone = ", ".join(map(str, answer["gone"]))
        lines.append(f"plan {answer['plan_id']} goes on without broker(s) {gone}")
    _print_lines(lines)
    return 0


def _reassignments(args: argparse.Namespace, client: ApiClient) -> int:
    items = client.reassignments()
    if args.format == "kafka":
        print(kafka_list_text(items))
        return 0
    if args.format == "kafka-json":
        removing = {(r["topic"], r["partition"]): set(r.get("removing") or ()) for r in items}
        targets = {
            TopicPartition(r["topic"], r["partition"]): [
                b for b in r["replicas"] if b not in removing[r["topic"], r["partition"]]
            ]
            for r in items
        }
        print(kafka_json(assignment_document(targets)))
        return 0
    if args.json:
        print_json({"reassignments": items})
        return 0
    if not items:
        print("no reassignment in progress")
        return 0

    columns = ("topic", "partition", "replicas", "adding", "removing", "owner", "plan_id")
    rows = [
        [_ids(r.get(c)) if c in ("replicas", "adding", "removing") else r.get(c) for c in columns]
        for r in items
    ]
    _print_lines(
        format_table(("TOPIC", "PARTITION", "REPLICAS", "ADDING", "REMOVING", "OWNER", "PLAN"), rows)
    )
    return 0

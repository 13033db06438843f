"""`reassignd anomalies [list|approve ID] [--watch [ID]]`: what self-healing has seen and the fixes it
proposes (daemon/healing.py, docs/self-healing.md).

`--watch` prints one plain line per anomaly state change, time-stamped (UTC), until Ctrl-C; given an
anomaly's id, only that anomaly's, until it is terminal: exit 0 when it is fixed, 1 when ignored or
expired. The loop takes its fetch, sleep and clock as arguments (`watch_anomalies`), so it is tested
without a daemon.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TextIO

from reassignd.cli._common import poll_interval, print_json
from reassignd.cli.watch import format_duration
from reassignd.client import ApiClient, ApiUnreachable
from reassignd.model import InvalidInputError, Problem
from reassignd.units import format_bytes, format_rate

Handler = Callable[[argparse.Namespace, ApiClient], int]


def add_commands(add: Callable[[str, Handler, str], argparse.ArgumentParser]) -> None:
    anomalies = add(
        "anomalies",
        _anomalies,
        "list what self-healing has seen (a broker offline too long, partitions spanning fewer racks than "
        "they could, ...) with its rehearsed fix, approve a proposed fix (self.healing.mode = propose), or "
        "follow the changes (--watch)",
    )
    anomalies.add_argument("action", nargs="?", default="list", help="list (default), approve, or an id")
    anomalies.add_argument("anomaly_id", nargs="?", help="approve: the anomaly's id, as listed")
    anomalies.add_argument(
        "--watch",
        action="store_true",
        help="a line per state change until Ctrl-C; with an id, until that anomaly is terminal (exit 0 "
        "fixed, 1 ignored or expired)",
    )
    anomalies.add_argument("--interval", type=poll_interval, default=2.0, help="seconds between polls (2)")


def _anomalies(args: argparse.Namespace, client: ApiClient) -> int:
    if args.watch:
        if args.action == "approve":
            raise InvalidInputError("arguments", [Problem("anomalies", "--watch", "approve does not watch")])
        wanted = args.anomaly_id if args.action == "list" else args.action
        return watch_anomalies(client.anomalies, wanted, interval=args.interval, out=sys.stdout)
    if args.action not in ("list", "approve"):
        message = f"must be list or approve (an id only with --watch), got {args.action!r}"
        raise InvalidInputError("arguments", [Problem("anomalies", "action", message)])
    if args.action == "approve":
        if not args.anomaly_id:
            raise InvalidInputError("arguments", [Problem("anomalies", "anomaly_id", "approve needs an id")])
        answer = client.approve_anomaly(args.anomaly_id)
        if args.json:
            print_json(answer)
        else:
            print("\n".join(anomaly_lines(answer)))
        return 0
    if args.anomaly_id:
        raise InvalidInputError("arguments", [Problem("anomalies", "action", "say approve ID")])
    answer = client.anomalies()
    if args.json:
        print_json(answer)
        return 0
    listed = answer["anomalies"]
    count = f"{len(listed)} anomaly" if len(listed) == 1 else f"{len(listed)} anomalies"
    lines = [f"self-healing: {answer['mode']}; {count}"]
    for anomaly in listed:
        lines += anomaly_lines(anomaly)
    print("\n".join(lines))
    return 0


_KINDS = {
    "broker_failure": ("offline too long", "drain"),
    "new_broker": ("running with no replica", "fill"),
    "rack_spread": ("spanning fewer racks than they could", "re-place"),
    "replica_balance": ("outside the replica-balance band", "replica-balance"),
    "leader_balance": ("outside the leader-balance band", "leader-balance"),
    "byte_balance": ("outside the byte band", "byte-balance"),
    "disk_capacity": ("with log dirs used beyond the threshold", "shed-bytes"),
    "under_replicated": ("under-replicated, their brokers online", "elect"),
    "log_dir_offline": ("in a failed log dir of broker", "re-target"),
}
"""kind -> (what the brokers or partitions show, the fix's goal)."""


def described(anomaly: Mapping[str, Any]) -> str:
    """`broker 4 offline too long`, `2 partition(s) spanning fewer racks than they could`, ..."""
    what, _ = _KINDS.get(str(anomaly["kind"]), (str(anomaly["kind"]), "fix"))
    brokers = ", ".join(map(str, anomaly["brokers"]))
    partitions = anomaly.get("partitions") or []
    if anomaly["kind"] == "log_dir_offline":
        if anomaly.get("log_dir"):  # several when the broker had more than one failed dir: comma-separated
            path = anomaly["log_dir"]
            dirs = "dirs" if "," in path else "dir"
            return f"{len(partitions)} partition(s) in failed log {dirs} {path} of broker {brokers}"
        return f"{len(partitions)} partition(s) {what} {brokers}"
    if partitions:
        return f"{len(partitions)} partition(s) {what}"
    return f"broker{'s' if len(anomaly['brokers']) > 1 else ''} {brokers} {what}"


def anomaly_lines(anomaly: Mapping[str, Any]) -> list[str]:
    _, goal = _KINDS.get(str(anomaly["kind"]), (str(anomaly["kind"]), "fix"))
    lines = [f"{anomaly['id']}: {described(anomaly)}: {anomaly['state']}"]
    partitions = anomaly.get("partitions") or []
    if partitions:
        more = f" and {len(partitions) - 10} more" if len(partitions) > 10 else ""
        lines.append(f"  partitions {', '.join(partitions[:10])}{more}; brokers {anomaly['brokers']}")
    if anomaly.get("reason"):
        lines.append(f"  {anomaly['reason']}")
    proposal = anomaly.get("proposal")
    if proposal:
        figures = proposal["rehearsal"]
        lines.append(
            f"  fix: {goal}, {figures.get('partitions', 0)} partition(s), "
            f"{format_bytes(figures.get('bytes_to_move', 0))}, rehearsed "
            f"{format_duration(figures.get('predicted_duration_seconds'))} of cluster time"
            + _producers(figures)
        )
    if anomaly["state"] == "proposed":
        lines.append(f"  `reassignd anomalies approve {anomaly['id']}` runs it")
    plan_id = anomaly.get("plan_id")
    if plan_id:
        told = "shows how it ended" if anomaly.get("state") in TERMINAL else "follows it"
        lines.append(f"  plan {plan_id}: `reassignd status {plan_id}` {told}")
    return lines


TERMINAL = {"fixed": 0, "ignored": 1, "expired": 1}
"""An anomaly's terminal states, and the exit code `--watch ID` ends with."""


def watch_anomalies(
    fetch: Callable[[], Mapping[str, Any]],
    anomaly_id: str | None,
    *,
    interval: float,
    out: TextIO,
    sleep: Callable[[float], None] = time.sleep,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> int:
    """One line per state change (and per anomaly first seen), until interrupted; with `anomaly_id`,
    that anomaly's only, until it is terminal. The first fetch's failure propagates; later ones are said
    once and retried, so a restarting daemon does not end the watch."""
    seen: dict[str, str] = {}
    last: Mapping[str, Any] | None = None
    """The watched anomaly as last listed: a restarted daemon, or the standby that takes over, lists
    none until its first check reads them from the state store."""
    listing, down, missing = fetch(), False, False
    while True:
        found = [a for a in listing["anomalies"] if anomaly_id in (None, a["id"])]
        if anomaly_id is not None and not found:
            if last is None:
                raise InvalidInputError(
                    "arguments", [Problem("anomalies", "anomaly_id", f"no anomaly {anomaly_id!r}")]
                )
            if not missing:
                out.write(
                    f"{now():%Y-%m-%dT%H:%M:%SZ} {anomaly_id}: not listed now (the daemon restarted, or "
                    "another took over?); waiting for its first check to read it from the state store\n"
                )
            missing = True
        elif anomaly_id is not None:
            last, missing = found[0], False
        for anomaly in found:
            if seen.get(anomaly["id"]) != anomaly["state"]:
                seen[anomaly["id"]] = anomaly["state"]
                out.write(watch_line(anomaly, now()) + "\n")
                out.flush()
        if anomaly_id is not None and found and found[0]["state"] in TERMINAL:
            return TERMINAL[found[0]["state"]]
        sleep(interval)
        try:
            listing, down = fetch(), False
        except ApiUnreachable as exc:
            if not down:
                out.write(f"{now():%Y-%m-%dT%H:%M:%SZ} {exc}; retrying\n")
            down = True


def watch_line(anomaly: Mapping[str, Any], at: datetime) -> str:
    line = f"{at:%Y-%m-%dT%H:%M:%SZ} {anomaly['id']}: {described(anomaly)}: {anomaly['state']}"
    if anomaly.get("plan_id"):
        line += f" (plan {anomaly['plan_id']})"
    if anomaly.get("reason"):
        line += f": {anomaly['reason']}"
    return line


def _producers(figures: Mapping[str, Any]) -> str:
    """What producers write in the rehearsal: measured since the condition began, or none (a lower bound)."""
    if "produce_measured_seconds" not in figures:
        return ""
    if not figures["produce_measured_seconds"]:
        return ", no produce rate (a lower bound)"
    return f", producers at {format_rate(figures.get('plan_produce_bytes_per_sec') or 0.0)}"

"""`reassignd anomalies [list|approve ID]`: what self-healing has seen and the fixes it proposes
(daemon/healing.py, docs/self-healing.md)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Any

from reassignd.cli._common import print_json
from reassignd.cli.watch import format_duration
from reassignd.client import ApiClient
from reassignd.model import InvalidInputError, Problem
from reassignd.units import format_bytes

Handler = Callable[[argparse.Namespace, ApiClient], int]


def add_commands(add: Callable[[str, Handler, str], argparse.ArgumentParser]) -> None:
    anomalies = add(
        "anomalies",
        _anomalies,
        "list what self-healing has seen (a broker offline too long) with its rehearsed fix, or approve a "
        "proposed fix (self.healing.mode = propose)",
    )
    anomalies.add_argument("action", nargs="?", choices=("list", "approve"), default="list")
    anomalies.add_argument("anomaly_id", nargs="?", help="approve: the anomaly's id, as listed")


def _anomalies(args: argparse.Namespace, client: ApiClient) -> int:
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


_KINDS = {"broker_failure": ("offline too long", "drain"), "new_broker": ("running with no replica", "fill")}
"""kind -> (what the broker shows, the fix's goal)."""


def anomaly_lines(anomaly: Mapping[str, Any]) -> list[str]:
    brokers = ", ".join(map(str, anomaly["brokers"]))
    what, goal = _KINDS.get(str(anomaly["kind"]), (str(anomaly["kind"]), "fix"))
    lines = [f"{anomaly['id']}: broker {brokers} {what}: {anomaly['state']}"]
    if anomaly.get("reason"):
        lines.append(f"  {anomaly['reason']}")
    proposal = anomaly.get("proposal")
    if proposal:
        figures = proposal["rehearsal"]
        lines.append(
            f"  fix: {goal}, {figures.get('partitions', 0)} partition(s), "
            f"{format_bytes(figures.get('bytes_to_move', 0))}, rehearsed "
            f"{format_duration(figures.get('predicted_duration_seconds'))}"
        )
    if anomaly["state"] == "proposed":
        lines.append(f"  `reassignd anomalies approve {anomaly['id']}` runs it")
    if anomaly.get("plan_id"):
        lines.append(f"  plan {anomaly['plan_id']}: `reassignd status {anomaly['plan_id']}` follows it")
    return lines

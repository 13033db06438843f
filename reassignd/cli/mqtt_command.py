"""`reassignd mqtt-command`: prints a signed MQTT command, ready for `mosquitto_pub -m` (docs/mqtt.md).

The secret is read from a file (never from the command line, where `ps` would show it).
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from reassignd.daemon.mqtt_auth import COMMANDS, sign


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "mqtt-command",
        help="print a signed MQTT command for <prefix>/<cluster>/commands",
    )
    parser.add_argument("command", choices=sorted(COMMANDS))
    parser.add_argument("plan_id", nargs="?", help="the plan to act on (default: the active plan)")
    parser.add_argument("--secret-file", required=True, type=Path, help="file holding the shared HMAC secret")
    parser.add_argument("--plan-id", dest="plan_id_option", help="deprecated: give PLAN_ID as an argument")
    parser.add_argument(
        "--throttle",
        action="append",
        default=[],
        metavar="KEY=BYTES_PER_SEC",
        help="set_throttles: e.g. leader.reassignment.throttled.rate=50000000 (repeatable)",
    )
    parser.add_argument("--broker", type=int, help="decommission, recommission: the broker id")
    parser.add_argument("--drain", action="store_true", help="decommission: also queue its drain plan")
    parser.add_argument("--reason", help="decommission: why (journaled)")
    parser.add_argument("--anomaly", help="approve_anomaly: the anomaly's id (`reassignd anomalies`)")
    parser.set_defaults(func=_mqtt_command)


def _mqtt_command(args: argparse.Namespace) -> int:
    try:
        secret = args.secret_file.read_bytes().strip()
    except OSError as exc:
        print(f"--secret-file: cannot read {args.secret_file}: {exc.strerror}", file=sys.stderr)
        return 2
    if not secret:
        print(f"--secret-file: {args.secret_file} is empty", file=sys.stderr)
        return 2
    throttles: dict[str, int] = {}
    for item in args.throttle:
        key, sep, value = item.partition("=")
        if not sep or not value.isdigit():
            print(f"--throttle: expected KEY=BYTES_PER_SEC, got {item!r}", file=sys.stderr)
            return 2
        throttles[key] = int(value)
    if (args.command == "set_throttles") != bool(throttles):
        print("--throttle is required by set_throttles and only allowed there", file=sys.stderr)
        return 2
    broker_command = args.command in ("decommission", "recommission")
    if broker_command != (args.broker is not None):
        print("--broker is required by decommission and recommission and only allowed there", file=sys.stderr)
        return 2
    if (args.drain or args.reason is not None) and args.command != "decommission":
        print("--drain and --reason are only for decommission", file=sys.stderr)
        return 2
    if (args.command == "approve_anomaly") != bool(args.anomaly):
        print("--anomaly is required by approve_anomaly and only allowed there", file=sys.stderr)
        return 2
    if args.plan_id and args.plan_id_option:
        print("give the plan id once, as an argument", file=sys.stderr)
        return 2
    if args.plan_id_option:
        warning = "reassignd: warning: --plan-id is deprecated; write `mqtt-command COMMAND PLAN_ID`"
        print(warning, file=sys.stderr)
    plan_id = args.plan_id or args.plan_id_option
    body: dict[str, Any] = {"command": args.command, "timestamp": time.time(), "nonce": uuid.uuid4().hex}
    if plan_id:
        body["plan_id"] = plan_id
    if throttles:
        body["throttles"] = throttles
    if args.broker is not None:
        body["broker"] = args.broker
    if args.anomaly:
        body["anomaly"] = args.anomaly
    if args.drain:
        body["drain"] = True
    if args.reason is not None:
        body["reason"] = args.reason
    sys.stdout.write(sign(secret, body).decode() + "\n")
    return 0

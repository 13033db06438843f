"""`reassignd schedule`: a dry run of the engine against an instant, simulated cluster."""

from __future__ import annotations

import argparse
import sys
import tomllib
from typing import Any

from reassignd.cli._common import load_plan, load_snapshot, print_json, read_text
from reassignd.config.loader import MAX_CONFIG_BYTES, is_config_key
from reassignd.engine.dryrun import dry_run
from reassignd.engine.limits import Limits, flatten_toml
from reassignd.model import InvalidInputError, Problem


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "schedule",
        help="dry run: the replica lists every partition of a plan passes through, under the limits",
        description=(
            "Print, for every partition of the plan, the ordered replica lists its KIP-435 steps go through "
            "(first the current assignment, last the plan's), which steps move leadership (marked *) and in "
            "which decision cycle each starts, assuming every move completes at once."
        ),
    )
    parser.add_argument("plan", nargs="?", help="Kafka reassignment JSON")
    parser.add_argument("--snapshot", required=True, help="cluster snapshot JSON, or - for stdin")
    parser.add_argument(
        "--plan", dest="plan_option", metavar="PLAN", help="deprecated: give PLAN as an argument"
    )
    parser.add_argument("--config", help="TOML file with reassignment.* limits (KIP-435 names)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=_schedule)


def load_limits(path: str | None) -> Limits:
    if path is None:
        return Limits()
    text = read_text(path, "limits", max_bytes=MAX_CONFIG_BYTES)
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInputError("limits", [Problem(path, "(file)", f"not TOML: {exc}")]) from None
    except RecursionError:
        raise InvalidInputError("limits", [Problem(path, "(file)", "nested too deep")]) from None
    except ValueError as exc:  # an integer of more than 4300 digits
        raise InvalidInputError(
            "limits", [Problem(path, "(file)", f"not readable: {str(exc)[:80]}")]
        ) from None
    flat = flatten_toml(document)
    for key in sorted(flat):  # a daemon config file is welcome here; a key nothing knows is worth a word
        if not is_config_key(key) and not key.startswith("reassignment."):
            print(f"reassignd: warning: {path}: {key} is not a configuration key; ignored", file=sys.stderr)
    return Limits.from_mapping(flat)  # the one validator of limits, the daemon's


def plan_argument(args: argparse.Namespace, command: str) -> str:
    """PLAN as every command takes it (an argument); `--plan PLAN`, this command's old spelling, still
    works with a warning."""
    if args.plan_option is not None:
        if args.plan is not None:
            raise InvalidInputError(
                "arguments", [Problem(command, "--plan", "give the plan once, as an argument")]
            )
        print(
            f"reassignd: warning: `{command} --plan PLAN` is deprecated; write `{command} PLAN` "
            "as for every other command",
            file=sys.stderr,
        )
        return str(args.plan_option)
    if args.plan is None:
        raise InvalidInputError("arguments", [Problem(command, "PLAN", "the plan file is required")])
    return str(args.plan)


def _schedule(args: argparse.Namespace) -> int:
    plan_path = plan_argument(args, "schedule")
    snapshot = load_snapshot(args.snapshot)
    plan = load_plan(plan_path)
    limits = load_limits(args.config)
    unknown = sorted(str(tp) for tp in plan.targets if tp not in snapshot.partitions)
    if unknown:
        raise InvalidInputError(
            "reassignment plan", [Problem(tp, "partition", "not in the snapshot") for tp in unknown]
        )
    result = dry_run(snapshot, plan, limits)
    partitions: list[dict[str, Any]] = []
    for tp in sorted(plan.targets):
        steps = result.steps.get(tp, [])
        partitions.append(
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "steps": [
                    {"replicas": list(replicas), "moves_leadership": moves, "cycle": cycle}
                    for replicas, moves, cycle in steps
                ],
                "reached_target": bool(steps) and steps[-1][0] == plan.targets[tp],
            }
        )
    blocked = [
        {
            "topic": tp.topic,
            "partition": tp.partition,
            "reason": rec.reason.value if rec.reason else rec.status.value,
            "detail": rec.detail,
        }
        for tp, rec in (result.state.waiting() if result.state else ())
    ]
    summary: dict[str, Any] = {
        "cycles": result.cycles,
        "steps": sum(len(p["steps"]) - 1 for p in partitions),
        "finished": result.state is not None and result.state.finished,
    }
    if args.json:
        print_json({"limits": limits.to_mapping(), **summary, "partitions": partitions, "blocked": blocked})
    else:
        print("replica lists each partition passes through, first the current one (* this step moves the")
        print("partition's leadership to a new broker):")
        for entry in partitions:
            chain = " -> ".join(
                "(" + ",".join(map(str, s["replicas"])) + ")" + ("*" if s["moves_leadership"] else "")
                for s in entry["steps"]
            )
            print(f"{entry['topic']}-{entry['partition']}: {chain}")
        print(
            f"{summary['steps']} steps in {summary['cycles']} decision cycles; "
            f"{'finished' if summary['finished'] else 'NOT finished'}"
        )
        for b in blocked:
            print(f"blocked {b['topic']}-{b['partition']}: {b['reason']}: {b['detail']}")
    return 0 if summary["finished"] else 1

"""The `reassignd` command line.

Each module in this package adds its own subcommands through `register(subparsers)`, so commands of
different areas (simulator, engine, daemon, planner) live beside their code and never collide here.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import re
import sys
import traceback
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from reassignd import __version__, logs
from reassignd.cli._common import error_document
from reassignd.model import InvalidInputError, Problem


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reassignd", description="Execute Kafka partition reassignments safely."
    )
    parser.add_argument("--version", action="version", version=f"reassignd {__version__}")
    parser.add_argument(
        "--log-level",
        help="debug, info, warning or error (default: info for the daemon and the simulator, warning for "
        "one-shot commands, whose output is their own words)",
    )
    parser.add_argument(
        "--log-format", choices=("auto", "json", "console"), default="auto", help="auto: console on a tty"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for module_info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if module_info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(subparsers)
    return parser


EXIT_INVALID = 2
EXIT_INTERNAL = 1
EXIT_UNREADABLE = 3  # the cluster could not be read (verify, snapshot, rehearse and plan from a live cluster)
_LOCAL_CODES = frozenset({"invalid_input", "unreachable", "cannot_start"})
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a reader closing the pipe early (`| head`) gives a C tool


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. Never a traceback on bad input or a closed pipe: an error is one message on stderr,
    or with `--json` the API's error document on stdout, with the same exit code either way."""
    parser = build_parser()
    args = parser.parse_args(argv)
    fmt = {"auto": None, "json": True, "console": False}[args.log_format]
    if args.log_level is None:
        args.log_level = getattr(args, "default_log_level", "warning")
        args.log_level_given = False
    else:
        args.log_level_given = True
    logs.configure(args.log_level, json=fmt)
    as_json = bool(getattr(args, "json", False))
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a reader that closed early is noticed here, not at interpreter exit
        return code
    except InvalidInputError as exc:
        message = f"invalid {exc.what}: {len(exc.problems)} problem(s)"
        return report_error("invalid_input", message, exc.problems, as_json=as_json, exit_code=EXIT_INVALID)
    except BrokenPipeError:
        return _pipe_closed()
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug: one line, the traceback only at --log-level debug
        cluster_failure = _cluster_failure(exc)
        if cluster_failure is not None:
            return report_error("unreachable", cluster_failure, as_json=as_json, exit_code=EXIT_UNREADABLE)
        if args.log_level == "debug":
            traceback.print_exc()
        try:
            return report_error(
                "internal",
                f"unexpected {type(exc).__name__}: {exc} (a bug; --log-level debug shows the traceback)",
                as_json=as_json,
                exit_code=EXIT_INTERNAL,
            )
        except BrokenPipeError:
            return _pipe_closed()


def _cluster_failure(exc: BaseException) -> str | None:
    """A failed cluster call as its one line (the cause and the setting to check, diagnosis.py), else None.
    Commands that never load the cluster adapter do not pay for importing it here."""
    errors = sys.modules.get("reassignd.cluster.errors")
    if errors is None or not isinstance(exc, errors.ClusterCallError):
        return None
    from reassignd.cluster.diagnosis import explain

    return f"cannot read the cluster: {explain(exc)}"


def report_error(
    code: str,
    message: str,
    problems: Iterable[Problem | Mapping[str, Any]] = (),
    *,
    as_json: bool,
    exit_code: int,
    details: Mapping[str, Any] | None = None,
    hints: Iterable[str] = (),
) -> int:
    """The one way a command reports an error; returns `exit_code`."""
    if as_json:
        json.dump(error_document(code, message, problems, details), sys.stdout, indent=2)
        sys.stdout.write("\n")
        sys.stdout.flush()
        return exit_code
    local = code in _LOCAL_CODES  # the message says it all; the daemon's codes are shown as it sent them
    print(_flags(f"reassignd: {message}" if local else f"reassignd: {code}: {message}"), file=sys.stderr)
    for line in problem_lines(problems):
        print(line, file=sys.stderr)
    for hint in hints:
        print(f"  hint: {hint}", file=sys.stderr)
    return exit_code


PLACES_SHOWN = 3
#: The daemon's API options as the CLI spells them, for messages a person reads at a shell.
_CLI_FLAGS = {"allow_rf_change": "--allow-rf-change", "dry_run": "--dry-run"}


def _flags(text: str) -> str:
    return re.sub(r"(?<![\w-])(allow_rf_change|dry_run)\b", lambda m: _CLI_FLAGS[m.group(1)], text)


def problem_lines(problems: Iterable[Problem | Mapping[str, Any]]) -> list[str]:
    """One line per distinct problem: the same field and message at many places (24 partitions that
    change their replication factor) is one line naming the first places and how many there are."""
    grouped: dict[tuple[str, str], list[str]] = {}
    for p in problems:
        where, field, text = (
            (p.where, p.field, p.message)
            if isinstance(p, Problem)
            else (p.get("where"), p.get("field"), p.get("message"))
        )
        grouped.setdefault((str(field), _flags(str(text))), []).append(str(where))
    lines = []
    for (field, text), places in grouped.items():
        shown = ", ".join(places[:PLACES_SHOWN])
        if len(places) > PLACES_SHOWN:
            shown += f" and {len(places) - PLACES_SHOWN} more ({len(places)} in all)"
        lines.append(f"  - {shown}: {field}: {text}")
    return lines


def _pipe_closed() -> int:
    """stdout's reader went away: send what is left to /dev/null so the exit flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_BROKEN_PIPE

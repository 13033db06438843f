"""The `reassignd` command line.

Each module in this package adds its own subcommands through `register(subparsers)`, so commands of
different areas (simulator, engine, daemon, planner) live beside their code and never collide here.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from reassignd import __version__, logs
from reassignd.model import InvalidInputError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reassignd", description="Execute Kafka partition reassignments safely."
    )
    parser.add_argument("--version", action="version", version=f"reassignd {__version__}")
    parser.add_argument("--log-level", default="info", help="debug, info, warning or error")
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    fmt = {"auto": None, "json": True, "console": False}[args.log_format]
    logs.configure(args.log_level, json=fmt)
    try:
        return int(args.func(args) or 0)
    except InvalidInputError as exc:
        print(f"reassignd: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130

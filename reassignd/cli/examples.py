"""`reassignd examples [NAME]`: the scenarios and the example config that ship with reassignd."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from reassignd import examples
from reassignd.model import InvalidInputError, Problem


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "examples",
        help="list the shipped simulator scenarios and example config, or print one",
        description="Without NAME: the shipped files, one per line. With NAME: its content, e.g. "
        "`reassignd examples reassignd.toml > reassignd.toml`. `reassignd sim --scenario guide` and "
        "`reassignd demo --scenario small` take a scenario by its name.",
    )
    parser.add_argument("name", nargs="?", help="a file name from the list (.json may be left out)")
    parser.set_defaults(func=_examples)


def _examples(args: argparse.Namespace) -> int:
    if args.name is None:
        sys.stdout.write("".join(f"{name}\n" for name in examples.names()))
        return 0
    found = examples.path(args.name)
    if found is None:
        known = ", ".join(examples.names())
        raise InvalidInputError(
            "arguments", [Problem("examples", "NAME", f"no example {args.name!r}; shipped: {known}")]
        )
    sys.stdout.write(found.read_text())
    return 0

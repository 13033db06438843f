"""`validate-config FILE` and `config-reference`: check a configuration, print the documentation."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from reassignd.cli._common import print_json
from reassignd.config import load_config
from reassignd.config.reference import render_markdown, render_toml


def register(subparsers: Any) -> None:
    validate = subparsers.add_parser(
        "validate-config", help="check a configuration file (and the REASSIGND_* environment)"
    )
    validate.add_argument("file", help="TOML configuration file")
    validate.add_argument("--no-env", action="store_true", help="ignore REASSIGND_* environment variables")
    validate.add_argument(
        "--show", action="store_true", help="print the effective configuration (secrets shown as ***)"
    )
    validate.add_argument("--json", action="store_true", help="print a JSON summary")
    validate.set_defaults(func=_validate_config)

    reference = subparsers.add_parser("config-reference", help="print the documentation of every config key")
    reference.add_argument(
        "--format",
        choices=("markdown", "toml"),
        default="markdown",
        help="markdown: docs/configuration.md; toml: the commented example config/reassignd.toml",
    )
    reference.set_defaults(func=_config_reference)


def _validate_config(args: argparse.Namespace) -> int:
    config = load_config(args.file, None if args.no_env else os.environ)
    for variable in config.ignored_env:
        print(f"reassignd: warning: {variable} matches no configuration key; ignored", file=sys.stderr)
    notes = []
    if not config["cluster.id"]:
        notes.append(
            "cluster.id is not set: metrics, alerts and MQTT topics will carry the id Kafka reports (an "
            'opaque string such as bSXPc0xJod0nPk2Pq19b2w); set a short name such as "prod-eu1"'
        )
    for note in notes:
        print(f"reassignd: note: {note}", file=sys.stderr)
    if args.json:
        summary: dict[str, Any] = {
            "valid": True,
            "file": args.file,
            "ignored_env": list(config.ignored_env),
            "notes": notes,
        }
        if args.show:
            summary["config"] = config.redacted()
        print_json(summary)
        return 0
    print(f"{args.file}: configuration is valid")
    if args.show:
        for key, value in config.redacted().items():
            print(f"{key} = {value!r}  ({config.source(key)})")
    return 0


def _config_reference(args: argparse.Namespace) -> int:
    sys.stdout.write(render_markdown() if args.format == "markdown" else render_toml())
    return 0

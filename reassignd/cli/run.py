"""`reassignd run`: the long-running daemon."""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any

from reassignd import config_keys, logs
from reassignd.config import load_config
from reassignd.config.loader import run_overrides


def register(subparsers: Any) -> None:
    run = subparsers.add_parser("run", help="run the reassignment daemon")
    run.add_argument("--config", help="TOML config file (see config/reassignd.toml)")
    run.add_argument(
        "--bootstrap-servers", dest="bootstrap_servers", help="override cluster.bootstrap.servers"
    )
    run.add_argument("--api-listen", dest="api_listen", help="override api.listen (HOST:PORT)")
    run.add_argument("--state-dir", dest="state_dir", help="override state.dir")
    run.add_argument("--api-token-file", dest="api_token_file", help="override api.token.file")
    run.set_defaults(func=_run, default_log_level="info")


def _run(args: argparse.Namespace) -> int:
    from reassignd.cli import report_error
    from reassignd.daemon.app import CannotStart, Daemon

    overrides = run_overrides(vars(args))
    config = load_config(args.config, dict(os.environ), overrides)
    if not args.log_level_given and config[config_keys.LOG_LEVEL]:
        fmt = {"json": True, "console": False}.get(str(config[config_keys.LOG_FORMAT]))
        logs.configure(str(config[config_keys.LOG_LEVEL]), json=fmt)
    try:
        return asyncio.run(Daemon(config, overrides=overrides).run())
    except CannotStart as exc:
        return report_error("cannot_start", str(exc), as_json=False, exit_code=1)

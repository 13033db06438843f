"""`reassignd demo`: drain a broker of the built-in simulated cluster, shown live to the end (`make demo`)."""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any


def register(subparsers: Any) -> None:
    demo = subparsers.add_parser(
        "demo",
        help="a reassignment on the built-in simulated cluster, shown live to the end",
        description="Starts a simulated Kafka cluster (the shipped demo.json), the daemon against it, "
        "computes a plan that drains one broker, rehearses it, submits it and shows live progress until it "
        "completes. "
        "Everything it starts is stopped at the end or on Ctrl-C (exit 130).",
    )
    demo.add_argument(
        "--scenario",
        help="scenario JSON file, or a shipped scenario by name (`reassignd examples`); default demo",
    )
    demo.add_argument(
        "--drain",
        type=int,
        action="append",
        default=[],
        help="broker id to drain (repeatable; default the highest)",
    )
    demo.add_argument(
        "--seconds",
        type=float,
        default=100.0,
        help="about how long the move should play, in wall seconds (100)",
    )
    demo.add_argument("--keep", action="store_true", help="keep the temp dir (logs, state, token) afterwards")
    demo.set_defaults(func=_run, default_log_level="info")


def _run(args: argparse.Namespace) -> int:
    from reassignd import examples
    from reassignd.demo import DEMO_SCENARIO, DemoOptions, run_demo

    options = DemoOptions(
        scenario=examples.scenario(args.scenario) if args.scenario else DEMO_SCENARIO,
        drain=tuple(args.drain),
        target_seconds=args.seconds,
        keep_dir=args.keep,
    )

    def interrupted(signum: int, _: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    # A closed terminal (SIGHUP) or a kill (SIGTERM) stops what the demo started, as Ctrl-C does: the
    # simulator and the daemon run in sessions of their own and would outlive us otherwise.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupted)
    try:
        return run_demo(options, sys.stdout)
    except KeyboardInterrupt:
        sys.stdout.write("\ninterrupted: simulator and daemon stopped\n")
        return 130
    except (RuntimeError, TimeoutError, OSError) as exc:
        sys.stderr.write(f"reassignd demo: {exc}\n")
        return 1

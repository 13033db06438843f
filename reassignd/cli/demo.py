"""`reassignd demo`: drain a broker of the built-in simulated cluster, shown live to the end (`make demo`);
with --kafka, of a real Apache Kafka cluster on loopback (`make demo-kafka`)."""

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
        "completes. With --kafka: a real Apache Kafka cluster (KRaft, four brokers) from the jars `make "
        "setup` fetched, a topic of real records, a producer writing throughout, and the move checked from "
        "the cluster's side at the end. "
        "Everything it starts is stopped at the end or on Ctrl-C (exit 130).",
    )
    demo.add_argument(
        "--kafka",
        action="store_true",
        help="on a real local Kafka cluster instead of the simulator (needs Java 17 and `make setup`)",
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
    from reassignd.demo_kafka import KafkaDemoOptions, run_kafka_demo

    if args.kafka and (args.scenario or args.drain):
        sys.stderr.write("reassignd demo: --scenario and --drain are for the simulator, not --kafka\n")
        return 2
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
        if args.kafka:
            return run_kafka_demo(KafkaDemoOptions(keep_dir=args.keep), sys.stdout)
        return run_demo(options, sys.stdout)
    except KeyboardInterrupt:
        sys.stdout.write(f"\ninterrupted: {'Kafka' if args.kafka else 'simulator'} and daemon stopped\n")
        return 130
    except (RuntimeError, TimeoutError, OSError) as exc:
        sys.stderr.write(f"reassignd demo: {exc}\n")
        return 1

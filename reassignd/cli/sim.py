"""`reassignd sim`: serve a simulated Kafka cluster on loopback (Kafka protocol + control API)."""

from __future__ import annotations

import argparse
import math
from typing import Any

from reassignd.model import InvalidInputError, Problem


def register(subparsers: Any) -> None:
    sim = subparsers.add_parser(
        "sim",
        help="serve a simulated Kafka cluster on loopback",
        description="Prints `bootstrap.servers=...` and `control=http://...` when ready; runs until "
        "SIGTERM or SIGINT.",
    )
    sim.add_argument(
        "--scenario",
        required=True,
        help="scenario JSON or cluster snapshot JSON file, or a shipped scenario by name (guide, demo, "
        "small, medium, multi-dc: `reassignd examples`)",
    )
    sim.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        help="simulated seconds per wall second (default 1; 0 starts paused)",
    )
    sim.add_argument("--seed", type=int, default=None, help="random seed (overrides the scenario's)")
    sim.add_argument(
        "--kafka-version",
        default=None,
        help="Kafka release to simulate, e.g. 3.9 (overrides the scenario's; default: the newest)",
    )
    sim.add_argument(
        "--kafka-mode",
        choices=["kraft", "zookeeper"],
        default=None,
        help="controller mode (overrides the scenario's; default: kraft)",
    )
    sim.set_defaults(func=_run, default_log_level="info")


def _run(args: argparse.Namespace) -> int:
    if not math.isfinite(args.time_scale) or args.time_scale < 0:
        raise InvalidInputError(
            "arguments",
            [Problem("--time-scale", "time_scale", f"must be a number >= 0, got {args.time_scale}")],
        )
    from reassignd import examples
    from reassignd.sim.kafka_version import KafkaVersion, KafkaVersionError
    from reassignd.sim.model import SimCluster
    from reassignd.sim.runner import run_simulator
    from reassignd.sim.scenario import load_scenario

    scenario = load_scenario(examples.scenario(args.scenario))
    kafka = None
    if args.kafka_version is not None or args.kafka_mode is not None:
        release = args.kafka_version or scenario.kafka.release
        try:
            kafka = KafkaVersion(".".join(release.split(".")[:2]), args.kafka_mode or scenario.kafka.mode)
        except KafkaVersionError as exc:
            raise InvalidInputError(
                "arguments", [Problem(f"--kafka-{exc.field}", exc.field, str(exc))]
            ) from None
    cluster = SimCluster.from_scenario(scenario, seed=args.seed, kafka=kafka)
    return run_simulator(cluster, time_scale=args.time_scale)

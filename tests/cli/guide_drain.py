"""A drain of broker 12 of the guide's cluster (examples/guide.json), run by the real controller in process
and in virtual time: the status documents the watch view is tested with are the daemon's own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reassignd.daemon.controller import Controller
from tests.daemon.inprocess import InProcessDaemon, plan_of

GUIDE = Path(__file__).resolve().parents[2] / "examples/guide.json"
DRAINED = 12
LIMITS = {
    "reassignment.max.incoming.replica.movements.per.broker": 2,
    "reassignment.max.outgoing.replica.movements.per.broker": 5,
    "leader.reassignment.throttled.rate": 50_000_000,
    "follower.reassignment.throttled.rate": 50_000_000,
}


def drain_targets(scenario: dict[str, Any]) -> dict[tuple[str, int], list[int]]:
    """Every replica on broker 12 moves to another broker, round robin over the others (13-16 first)."""
    others = [b["id"] for b in scenario["brokers"] if b["id"] != DRAINED]
    others = sorted(others, key=lambda b: (b < 13, b))
    targets: dict[tuple[str, int], list[int]] = {}
    turn = 0
    for topic in scenario["topics"]:
        for partition, replicas in enumerate(topic["assignment"]):
            if DRAINED not in replicas:
                continue
            while others[turn % len(others)] in replicas:
                turn += 1
            targets[(topic["name"], partition)] = [
                others[turn % len(others)] if b == DRAINED else b for b in replicas
            ]
            turn += 1
    return targets


async def draining(cycles: int = 3, **limits: Any) -> tuple[InProcessDaemon, str]:
    """The daemon `cycles` cycles into the drain, with the status views of a running plan."""
    scenario = json.loads(GUIDE.read_text())
    daemon = InProcessDaemon(scenario, {**LIMITS, **limits}, cycle_seconds=10.0)
    plan_id = await daemon.submit(plan_of(drain_targets(scenario)))
    for _ in range(cycles):
        await daemon.cycle()
    return daemon, plan_id


def receiving(controller: Controller, plan_id: str) -> set[int]:
    status = controller.plan_status(plan_id)
    return {b["broker"] for b in status["brokers"] if b["moves_in"]}

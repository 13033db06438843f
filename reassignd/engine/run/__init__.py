"""The plan-run machine (machine.py) and the values it runs on (state.py); see docs/engine.md."""

from reassignd.engine.lifecycle import CommandRefused, PlanStatus
from reassignd.engine.run.figures import outcomes, summary_of
from reassignd.engine.run.machine import new_run, owned_partitions, read_request, step
from reassignd.engine.run.state import (
    AutoThrottle,
    Awaiting,
    Command,
    Event,
    Observed,
    Reachability,
    ReadRequest,
    RunState,
    Settings,
    Transition,
    Unreachable,
)

__all__ = [
    "AutoThrottle",
    "Awaiting",
    "Command",
    "CommandRefused",
    "Event",
    "Observed",
    "PlanStatus",
    "Reachability",
    "ReadRequest",
    "RunState",
    "Settings",
    "Transition",
    "Unreachable",
    "new_run",
    "outcomes",
    "owned_partitions",
    "read_request",
    "step",
    "summary_of",
]

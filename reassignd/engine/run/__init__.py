"""The plan-run machine (machine.py), its parts (one module each) and the values it runs on (state.py);
docs/engine.md says how they compose."""

from reassignd.engine.lifecycle import CommandRefused, PlanStatus
from reassignd.engine.run.auto_throttle import AutoThrottle
from reassignd.engine.run.figures import outcomes, summary_of
from reassignd.engine.run.machine import new_run, owned_partitions, read_request, step
from reassignd.engine.run.reachability import Reachability
from reassignd.engine.run.reading import Observed, ReadRequest
from reassignd.engine.run.state import (
    Awaiting,
    Command,
    RunEvent,
    RunState,
    Settings,
    Transition,
)

__all__ = [
    "AutoThrottle",
    "Awaiting",
    "Command",
    "CommandRefused",
    "Observed",
    "PlanStatus",
    "Reachability",
    "ReadRequest",
    "RunEvent",
    "RunState",
    "Settings",
    "Transition",
    "new_run",
    "outcomes",
    "owned_partitions",
    "read_request",
    "step",
    "summary_of",
]

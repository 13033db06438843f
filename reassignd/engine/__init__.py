"""The pure reassignment engine: KIP-435 steps, batches and limits, throttle plans, progress maths.

Nothing here imports asyncio, a client library or the clock; every function takes immutable values and
returns new ones. The daemon, rehearsals and the dry run all execute the plan-run machine of `run/`, which
calls `decide` once per cycle among its parts.
"""

from reassignd.engine.actions import Decision, ElectLeader, StartStep, Waiting
from reassignd.engine.decide import changed_partitions, decide
from reassignd.engine.limits import LIMIT_KEYS, Limits, flatten_toml
from reassignd.engine.state import ExecutionState, PartitionProgress, Status, WaitReason
from reassignd.engine.steps import Step, all_steps, next_step

__all__ = [
    "LIMIT_KEYS",
    "Decision",
    "ElectLeader",
    "ExecutionState",
    "Limits",
    "PartitionProgress",
    "StartStep",
    "Status",
    "Step",
    "WaitReason",
    "Waiting",
    "all_steps",
    "changed_partitions",
    "decide",
    "flatten_toml",
    "next_step",
]

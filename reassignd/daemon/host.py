"""What the command services (plan_commands.py, broker_commands.py) use of the controller: its shared
state, the lock its cycle holds, and the moves that keep the published view true."""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from reassignd.cluster.api import ClusterAdmin
from reassignd.daemon.clock import SteadyClock
from reassignd.daemon.outbox import Outbox
from reassignd.daemon.tuning import Tuning
from reassignd.daemon.view import ControllerView
from reassignd.engine import run as plan_machine
from reassignd.engine.run import RunState
from reassignd.model import ReassignmentPlan
from reassignd.store.aio import AsyncStore
from reassignd.store.base import PlanRecord


class CommandHost(Protocol):
    cluster: ClusterAdmin
    store: AsyncStore
    tuning: Tuning
    clock: SteadyClock
    view: ControllerView
    run: RunState | None
    lock: asyncio.Lock
    """Held by every cycle: a command that changes a run or the store takes it, so no cycle sees half."""
    outbox: Outbox
    """Where `emit` puts events: a command holds them (`outbox.held()`) until it published its view."""

    async def require_writer(self) -> None:
        """Raises the refusal (a ServiceError) unless this daemon may write now."""

    async def drive(self, transition: plan_machine.Transition) -> None:
        """Carries out a transition's effects and keeps the run it leads to."""

    async def run_of(self, record: PlanRecord) -> RunState:
        """The run of `record`: the one in memory, else rebuilt from the store (and kept)."""

    def submitted(self, plan_id: str, plan: ReassignmentPlan) -> None:
        """The plan just queued as `plan_id`, parsed already: its run needs no second parse."""

    async def refresh_records(self) -> None: ...

    def publish(self, last_status: str | None = None) -> None: ...

    def emit(self, kind: str, **data: Any) -> None: ...

    def wake(self) -> None: ...

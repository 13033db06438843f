"""The writer group's member (daemon/writer.py) against a coordinator that stops answering mid-heartbeat,
as a frozen broker or a black-holed route does: what the daemon is told about who holds the right."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from types import SimpleNamespace
from typing import Any

from reassignd.daemon.writer import Writer, WriterLease

SESSION = 0.6  # a lease of 0.3 s, a heartbeat every 0.1 s


class FreezingCoordinator:
    """Lets us join and lead the group, answers `answered` heartbeats, then lets each later one wait out
    its timeout unanswered (as kafka-python does when nothing comes back) until `thaw`."""

    def __init__(self, answered: int) -> None:
        self.answered = answered
        self.thawed = threading.Event()

    def find_coordinator(self, group: str, timeout_seconds: float) -> tuple[int, int]:
        return 0, 1

    def join(self, node_id: int, **request: Any) -> Any:
        member = {"member_id": "m1", "metadata": request["protocols"][0][1]}
        return SimpleNamespace(
            error_code=0, member_id="m1", generation_id=1, leader="m1", members=[SimpleNamespace(**member)]
        )

    def sync(self, node_id: int, **request: Any) -> Any:
        return SimpleNamespace(error_code=0, assignment=request["assignments"]["m1"])

    def heartbeat(self, node_id: int, group: str, generation: int, member_id: str, timeout: float) -> int:
        if self.answered > 0:
            self.answered -= 1
            return 0
        if not self.thawed.wait(timeout):
            raise TimeoutError("no answer")
        return 0

    def leave(self, node_id: int, group: str, member_id: str, timeout: float) -> None:
        return None

    def close(self) -> None:
        self.thawed.set()


async def cluster_id() -> str:
    return "c1"


async def test_our_own_right_whose_lease_ran_out_is_not_reported_as_another_daemon_writing() -> None:
    """A frozen coordinator: our lease runs out unrenewed. The daemon is told nobody is known to hold the
    right, so /readyz says the cluster cannot be reached; it was told the writer is another daemon at its
    own address (tests/realkafka/test_unreachable.py: 200 "another reassignd writes", naming itself)."""
    coordinator = FreezingCoordinator(answered=2)
    lease = WriterLease(coordinator, "n1", session_seconds=SESSION, cluster_id=cluster_id)  # type: ignore[arg-type]
    told: list[tuple[bool, Writer | None]] = []
    twice = asyncio.Event()

    async def changed(holding: bool, writer: Writer | None) -> None:
        told.append((holding, writer))
        if len(told) == 2:
            twice.set()

    running = asyncio.create_task(lease.run(changed, "http://127.0.0.1:1"))
    try:
        async with asyncio.timeout(10):
            await twice.wait()
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
    me = Writer("n1", "http://127.0.0.1:1", "m1")
    assert told == [(True, me), (False, None)], told

"""Issue 27, "Errors": a cluster that does not answer is said at once, idle or not, whatever the cycle does.

Reproduced in process: with every broker's packets dropped, a cycle's read waits in the client's timeouts
and retries (over two minutes with the defaults), and the status kept saying `reachable` all that time; an
idle daemon's status said only `no plan is running`. The reachability probe (daemon/link.py) is what
finds the outage here, under its own short deadline, while the cycle is stuck.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from reassignd.daemon.controller import Controller
from reassignd.engine.lifecycle import PlanStatus
from reassignd.engine.run.reachability import Unreachable
from reassignd.sim.admin import SimClusterAdmin
from tests.daemon.inprocess import InProcessDaemon, plan_of
from tests.daemon.test_failure_paths import MB, daemon, ended

PROBE_TIMEOUT = 0.2  # wall-clock seconds: the probe's deadline is asyncio's, not the simulator's


class Blackhole:
    """The simulator's admin, but while `hung` no call ever answers (packets dropped on the way)."""

    def __init__(self, admin: SimClusterAdmin) -> None:
        self.admin = admin
        self.hung = False
        self.waiting = 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.admin, name)
        if not inspect.iscoroutinefunction(attr):
            return attr

        async def call(*args: Any, **kwargs: Any) -> Any:
            if self.hung:
                self.waiting += 1
                try:
                    await asyncio.Event().wait()  # never set: only a cancel ends it
                finally:
                    self.waiting -= 1
            return await attr(*args, **kwargs)

        return call


def blackholed(d: InProcessDaemon) -> Blackhole:
    """`d` with its controller behind a Blackhole, and a short probe deadline."""
    hole = Blackhole(d.admin)
    d.controller = Controller(
        hole,  # type: ignore[arg-type]
        d.store,
        d.controller.tuning.limits,
        clock=d.steady,
        probe_timeout=PROBE_TIMEOUT,
    )
    return hole


async def test_a_cycle_stuck_in_calls_does_not_hold_the_status() -> None:
    d = daemon([[1, 2, 3]], size=4_000 * MB)
    hole = blackholed(d)
    plan_id = await d.submit(plan_of({("t", 0): [4, 2, 3]}))
    await d.run(lambda: bool(d.reassigning()))
    hole.hung = True
    cycle = asyncio.create_task(d.controller.cycle())
    await asyncio.sleep(0.05)
    assert not cycle.done() and hole.waiting == 1, "the cycle waits in its read"
    assert d.controller.daemon_status()["cluster"]["reachable"] is True, "nothing known yet"

    await d.controller.probe()
    status = d.controller.daemon_status()
    assert next(iter(status)) == "cluster" and status["plan_id"] == plan_id
    assert status["cluster"]["reachable"] is False
    assert status["cluster"]["error"] == f"no broker answered within {PROBE_TIMEOUT:g} s"
    assert d.controller.readiness()["reason"] == "cluster unreachable"
    assert d.controller.metrics["reassignd_cluster_reachable"]._value.get() == 0
    # the stuck read is abandoned: the cycle ends now, not after the client's retries
    assert "cluster unreachable" in await asyncio.wait_for(cycle, 1.0)
    assert hole.waiting == 0
    # while the probe finds no broker, a cycle does not read at all (and holds no lock)
    assert "cluster unreachable" in await asyncio.wait_for(d.controller.cycle(), 1.0)
    assert hole.waiting == 0
    await asyncio.wait_for(d.controller.pause(), 1.0)
    await asyncio.wait_for(d.controller.resume(), 1.0)

    hole.hung = False
    await d.cycle()
    assert d.controller.daemon_status()["cluster"] == {
        "reachable": True,
        "since": d.controller.daemon_status()["cluster"]["since"],
        "unreachable_brokers": [],
        "error": None,
    }
    assert d.controller.metrics["reassignd_cluster_reachable"]._value.get() == 1
    assert await ended(d, plan_id) is PlanStatus.COMPLETED


async def test_an_idle_daemon_says_first_whether_the_cluster_answers() -> None:
    d = daemon([[1, 2, 3]])
    await d.controller.start()
    status = d.controller.daemon_status()
    assert status["plan_id"] is None and status["state"] == "idle"
    assert status["cluster"]["reachable"] is False and status["cluster"]["error"] is None, "not reached yet"
    assert d.controller.readiness()["reason"] == "no cluster contact yet"
    await d.cycle()
    assert d.controller.daemon_status()["cluster"]["reachable"] is True

    for b in list(d.sim.brokers):
        d.sim.stop_broker(b)
    await d.cycle()
    status = d.controller.daemon_status()
    assert list(status) == ["cluster", "store", "plan_id", "state", "decommissioned_brokers", "last_cycle"]
    assert status["cluster"]["reachable"] is False and status["cluster"]["since"] is not None
    assert "no broker of the cluster could be reached" in status["cluster"]["error"]
    assert d.controller.readiness()["reason"] == "cluster unreachable"
    assert d.controller.metrics["reassignd_cluster_reachable"]._value.get() == 0

    for b in list(d.sim.brokers):
        d.sim.start_broker(b)
    await d.cycle()
    assert d.controller.daemon_status()["cluster"]["reachable"] is True


async def test_a_read_that_failed_is_answered_again_by_an_idle_cycle() -> None:
    """A read failed last (say a plan's, before a failover) and nothing is left to read: the idle cycle
    asks the cluster itself, rather than leave the cluster unreachable while the probe answers."""
    d = daemon([[1, 2, 3]])
    await d.controller.start()
    await d.cycle()
    d.controller.link.saw(Unreachable(d.clock(), "read", "timed out"))
    assert d.controller.daemon_status()["cluster"]["reachable"] is False
    await d.cycle()
    assert d.controller.daemon_status()["cluster"]["reachable"] is True


async def test_in_a_full_outage_no_broker_is_shown_online() -> None:
    """Issue 31 item 5: with every broker stopped the status kept the last read's view, every broker
    `online: true` and `unreachable_brokers` empty. None answers the daemon: each is shown unreachable, by
    the read and by the probe alike, and the last read's view comes back when the cluster does."""
    d = daemon([[1, 2, 3]], size=4_000 * MB)
    plan_id = await d.submit(plan_of({("t", 0): [4, 2, 3]}))
    await d.run(lambda: bool(d.reassigning()))
    d.sim.stop_broker(3)  # a follower: a broker that holds no replica is not in the metadata at all
    await d.cycle()
    status = d.controller.daemon_status()
    assert status["cluster"]["unreachable_brokers"] == [3]
    assert [b["online"] for b in status["brokers"]] == [True, True, False, True, True, True]

    for b in list(d.sim.brokers):
        d.sim.stop_broker(b)
    await d.controller.probe()  # the probe finds it first, while a cycle may be stuck
    status = d.controller.daemon_status()
    assert status["cluster"]["reachable"] is False
    assert status["cluster"]["unreachable_brokers"] == [1, 2, 3, 4, 5, 6]
    assert [b["online"] for b in status["brokers"]] == [False] * 6
    await d.cycle()
    status = d.controller.daemon_status()
    assert status["plan_id"] == plan_id and status["cluster"]["unreachable_brokers"] == [1, 2, 3, 4, 5, 6]
    assert [b["online"] for b in status["brokers"]] == [False] * 6

    for b in (1, 2, 4, 5, 6):
        d.sim.start_broker(b)
    await d.controller.probe()
    await d.cycle()
    status = d.controller.daemon_status()
    assert status["cluster"]["reachable"] is True and status["cluster"]["unreachable_brokers"] == [3]
    assert [b["online"] for b in status["brokers"]] == [True, True, False, True, True, True]

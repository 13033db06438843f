"""A step of the system's wall clock is not time passing (issue 31, item 4).

NTP stepping a clock, an operator's `date -s`, a VM resumed from a snapshot: the wall clock jumps while
the copies run on as before. Durations, rates, stall windows and the ETA are measured on the monotonic
clock; the wall clock only stamps what is shown.
"""

from __future__ import annotations

from reassignd.daemon.controller import AutoThrottle
from reassignd.store.base import EventKind, PlanStatus
from tests.daemon.inprocess import InProcessDaemon, plan_of
from tests.daemon.test_e2e import LIMITS, fill_plan, scenario

HOUR = 3600.0


def slow_daemon() -> InProcessDaemon:
    """10 MB copies at 1 MB/s: each takes ten cycles, so a step of the clock falls inside them."""
    limits = {**LIMITS, "follower.reassignment.throttled.rate": 1_000_000}
    return InProcessDaemon(
        scenario(4), limits, cycle_seconds=1.0, auto_throttle=AutoThrottle(1_000_000, 100_000_000)
    )


def targets(partitions: int) -> dict[tuple[str, int], list[int]]:
    return {(e["topic"], e["partition"]): e["replicas"] for e in fill_plan(partitions)["partitions"]}


async def _run_with_steps(d: InProcessDaemon, steps: list[float]) -> list[float]:
    """The plan run to its end, the wall clock stepped by each of `steps` a few cycles apart; the plan's
    rate as status showed it every cycle."""
    plan_id = await d.submit(plan_of(targets(4)))
    rates: list[float] = []
    for step in steps:
        for _ in range(4):
            await d.cycle()
            rates.append(d.controller.plan_status(plan_id)["progress"]["rate_bytes_per_sec"] or 0.0)
        d.wall_step += step
    await d.run(seconds=600)
    return rates


async def test_a_wall_clock_step_forward_is_no_stall_and_raises_no_rate() -> None:
    d = slow_daemon()
    await _run_with_steps(d, [HOUR, HOUR])
    assert await d.journal(EventKind.STALL_DETECTED) == [], "healthy moves flagged stalled"
    raised = [e for e in await d.journal(EventKind.THROTTLE_SET) if e.data.get("auto_throttle")]
    assert raised == [], "auto-throttle raised rates for moves that were not stalled"


async def test_a_wall_clock_step_back_leaves_rates_positive_and_the_end_after_the_start() -> None:
    d = slow_daemon()
    rates = await _run_with_steps(d, [-HOUR, -HOUR])
    assert all(r > 0.0 for r in rates[4:]), f"the rate read no progress while the copies ran: {rates}"
    [record] = await d.store.list_plans()
    assert record.status is PlanStatus.COMPLETED
    assert record.started_at is not None and record.finished_at is not None
    assert record.finished_at >= record.started_at, (record.started_at, record.finished_at)
    assert await d.journal(EventKind.STALL_DETECTED) == []

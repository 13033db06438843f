"""The fixed-rate loop, the supervisor and the signal flags."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal

import pytest
from structlog.testing import capture_logs

from reassignd.daemon.runtime import FixedRateLoop, SignalFlags, Supervisor


async def test_loop_runs_at_fixed_rate_and_survives_failing_cycles() -> None:
    calls: list[float] = []
    loop_clock = asyncio.get_running_loop().time

    async def cycle() -> str:
        calls.append(loop_clock())
        if len(calls) == 2:
            raise RuntimeError("cluster unreachable")
        if len(calls) == 5:
            runner.stop()
        return f"cycle {len(calls)}"

    results: list[tuple[str | None, BaseException | None]] = []
    delays: list[float] = []

    def on_result(status: str | None, _: float, error: BaseException | None) -> None:
        results.append((status, error))
        delays.append(runner.delay())

    runner = FixedRateLoop(cycle, 0.05, clock=loop_clock, on_result=on_result)
    await asyncio.wait_for(runner.run(), timeout=5)
    assert len(calls) == 5
    assert runner.failures == 1 and isinstance(results[1][1], RuntimeError)
    assert results[4][0] == "cycle 5"
    assert delays[:4] == pytest.approx([0.05, 0.1, 0.05, 0.05]), "one failure doubles the next wait only"
    # Scheduled without drift from the first start: never early (a late cycle is followed by a shorter gap).
    elapsed = [at - calls[0] for at in calls[1:]]
    assert all(e >= d - 0.005 for e, d in zip(elapsed, itertools.accumulate(delays), strict=False)), elapsed
    assert elapsed[-1] < 5.0, "and it goes on after the failure"


async def test_failing_cycles_back_off_doubling_up_to_the_bound_and_one_success_ends_it() -> None:
    calls: list[float] = []
    loop_clock = asyncio.get_running_loop().time

    async def cycle() -> str:
        calls.append(loop_clock())
        if len(calls) == 7:
            runner.stop()
        if len(calls) <= 5:
            raise RuntimeError("the store is down")
        return "ok"

    delays: list[float] = []
    runner = FixedRateLoop(
        cycle, 0.02, clock=loop_clock, backoff_max=0.12, on_result=lambda *_: delays.append(runner.delay())
    )
    assert runner.delay() == 0.02
    await asyncio.wait_for(runner.run(), timeout=5)
    assert delays[:6] == pytest.approx([0.04, 0.08, 0.12, 0.12, 0.12, 0.02]), "a good cycle ends the backoff"
    # Scheduled without drift, so a late cycle is followed by a shorter gap; but no cycle comes before
    # its schedule: the k-th starts at least the sum of the k delays before it after the first.
    elapsed = [at - calls[0] for at in calls[1:]]
    assert all(e >= d - 0.005 for e, d in zip(elapsed, itertools.accumulate(delays), strict=False)), (
        elapsed,
        delays,
    )
    assert runner.failing == 0


class CountingCycle:
    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        return "ok"


async def waiting_loop(cycle: CountingCycle) -> tuple[FixedRateLoop, asyncio.Task[None]]:
    """A loop that ran its first cycle and now waits an hour for the next one, or a wake-up."""
    runner = FixedRateLoop(cycle, 3600)
    task = asyncio.create_task(runner.run())
    await asyncio.sleep(0.05)
    return runner, task


async def test_wake_starts_the_next_cycle_early() -> None:
    cycle = CountingCycle()
    runner, task = await waiting_loop(cycle)
    assert cycle.calls == 1
    runner.wake()
    await asyncio.sleep(0.05)
    assert cycle.calls == 2
    runner.stop()
    await asyncio.wait_for(task, timeout=2)


async def test_loop_propagates_cancellation() -> None:
    async def cycle() -> str:
        await asyncio.sleep(10)
        return "never"

    task = asyncio.create_task(FixedRateLoop(cycle, 1).run())
    await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_cancellation_arriving_with_a_wake_up_is_not_swallowed() -> None:
    """Python 3.11's wait_for returns the inner result when the cancellation and the event coincide
    (CPython gh-86296); the loop then ran on after being cancelled, and a daemon's shutdown hung."""
    runner, task = await waiting_loop(CountingCycle())
    runner.wake()
    await asyncio.sleep(0)  # the event's waiter completes...
    task.cancel()  # ...and the cancellation lands in the same step
    done, _ = await asyncio.wait({task}, timeout=2)
    assert done, "the loop ignored its cancellation"
    assert task.cancelled()


async def test_supervisor_surfaces_the_first_failure_and_cancels_the_rest() -> None:
    cancelled = asyncio.Event()

    async def healthy() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def failing() -> None:
        await asyncio.sleep(0.01)
        raise ValueError("boom")

    supervisor = Supervisor()
    supervisor.add("healthy", healthy())
    supervisor.add("failing", failing())
    with pytest.raises(ValueError, match="boom"):
        await asyncio.wait_for(supervisor.run(asyncio.Event()), timeout=2)
    assert cancelled.is_set()


async def test_supervisor_stops_on_request() -> None:
    async def forever() -> None:
        await asyncio.sleep(10)

    stop = asyncio.Event()
    supervisor = Supervisor({"forever": forever()})
    task = asyncio.create_task(supervisor.run(stop))
    await asyncio.sleep(0.01)
    stop.set()
    await asyncio.wait_for(task, timeout=2)


async def test_signals_set_flags_and_a_second_stop_forces() -> None:
    loop = asyncio.get_running_loop()
    flags = SignalFlags()
    flags.install(loop)
    try:
        os.kill(os.getpid(), signal.SIGHUP)
        await asyncio.wait_for(flags.reload.wait(), timeout=2)
        assert not flags.stop.is_set()
        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.wait_for(flags.stop.wait(), timeout=2)
        assert not flags.force.is_set()
        os.kill(os.getpid(), signal.SIGINT)
        await asyncio.wait_for(flags.force.wait(), timeout=2)
    finally:
        flags.uninstall(loop)


async def test_wake_ups_respect_the_minimum_interval() -> None:
    starts: list[float] = []
    clock = asyncio.get_running_loop().time

    async def cycle() -> str:
        starts.append(clock())
        return "ok"

    runner = FixedRateLoop(cycle, 3600, clock=clock, min_interval=0.2)
    task = asyncio.create_task(runner.run())
    for _ in range(10):
        await asyncio.sleep(0.02)
        runner.wake()
    await asyncio.sleep(0.3)
    runner.stop()
    await asyncio.wait_for(task, timeout=2)
    assert 2 <= len(starts) <= 3
    assert all(b - a >= 0.19 for a, b in itertools.pairwise(starts))


@pytest.mark.usefixtures("debug_logs")
async def test_cycle_lines_at_info_only_when_the_situation_changes_or_a_minute_passed() -> None:
    """An idle daemon writes one line when it becomes idle, not one per cycle; a running plan's progress
    shows at info once a minute; everything else at debug."""
    from structlog.testing import capture_logs

    running = ["p1 running: 1%", "p1 running: 2%", "p1 running: 3%"]
    statuses = iter(["idle", "idle", "idle", *running, "p1 paused: 3%", "idle"])
    now = [0.0]

    async def cycle() -> str:
        now[0] += 30.0  # each cycle half a minute later
        status = next(statuses, None)
        if status is None:
            runner.stop()
            return "idle"
        return status

    runner = FixedRateLoop(cycle, 0.0, clock=lambda: now[0], progress_every=60.0)
    with capture_logs() as logs:
        await asyncio.wait_for(runner.run(), timeout=5)
    info = [e["status"] for e in logs if e["event"] == "cycle" and e["log_level"] == "info"]
    debug = [e["status"] for e in logs if e["event"] == "cycle" and e["log_level"] == "debug"]
    assert info == ["idle", "p1 running: 1%", "p1 running: 3%", "p1 paused: 3%", "idle"]
    assert debug == ["idle", "idle", "p1 running: 2%", "idle"]


async def test_a_clean_stop_logs_no_warning() -> None:
    """The issue: a clean SIGTERM logged "background task ended" at warning. A task that ends because the
    daemon is stopping is expected; one that ends by itself while the daemon runs is still a warning."""
    stop, stopping = asyncio.Event(), asyncio.Event()

    async def until_stopped() -> None:  # the controller loop: it ends after its cycle once asked to stop
        await stopping.wait()

    supervisor = Supervisor()
    supervisor.add("cycle-loop", until_stopped())
    with capture_logs() as logs:
        stopping.set()  # SIGTERM; `stop` (the forced stop) is never set on a clean stop
        await supervisor.run(stop, stopping=stopping)
    assert [e for e in logs if e["log_level"] in ("warning", "error")] == []

    async def ends_early() -> None:
        return None

    supervisor = Supervisor()
    supervisor.add("mqtt", ends_early())
    with capture_logs() as logs:
        await supervisor.run(asyncio.Event())
    assert [(e["event"], e["log_level"]) for e in logs] == [("background task ended", "warning")]


async def test_a_cycle_fenced_before_its_write_is_a_warning_not_an_error() -> None:
    """A lapsed right to write (the writer lease while the group coordinator fails over, a lost election)
    stops the cycle safely; the real-Kafka broker-kill test saw it logged as 'cycle failed' at error."""
    from reassignd.cluster.errors import WriteFenced

    async def cycle() -> str:
        runner.stop()
        raise WriteFenced("writer lease expired: last confirmed 6.02s ago (lease 5.00s)")

    runner = FixedRateLoop(cycle, 0.01, clock=asyncio.get_running_loop().time)
    with capture_logs() as logs:
        await asyncio.wait_for(runner.run(), timeout=5)
    assert [e["log_level"] for e in logs if "cycle" in e["event"]] == ["warning"], logs
    assert runner.failures == 1

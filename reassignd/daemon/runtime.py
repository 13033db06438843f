"""Asyncio runtime pieces: a fixed-rate loop that can be woken early, a task supervisor, signal flags.

Kept apart from the controller so the scheduling behaviour (no drift, early wake-ups, overrun warnings,
graceful then forced stop) is tested on its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from reassignd.cluster.errors import WriteFenced
from reassignd.logs import get_logger
from reassignd.store.base import StoreUnavailable

log = get_logger("reassignd.runtime")


class FixedRateLoop:
    """Runs `cycle()` every `interval` seconds, scheduled from the previous start (no drift).

    `wake()` starts the next cycle early (an API call, a completed step), but never sooner than
    `min_interval` after the previous start, so a burst of wake-ups cannot flood the cluster with reads.
    A cycle that raises is logged and the loop goes on: one bad cycle never kills the daemon. After failed
    cycles the next one waits longer, doubling from the interval up to `backoff_max` (a failing cluster or
    store is not hammered); one good cycle ends the backoff. Each cycle returns a short status, logged at
    debug; at info only what a person reading the log wants: the first cycle of a new situation (idle,
    standby, another plan or phase) and, while a plan runs, its progress once every `progress_every`
    seconds. An idle daemon writes one line when it becomes idle, none per cycle (`--log-level debug` shows
    every cycle).
    """

    def __init__(
        self,
        cycle: Callable[[], Awaitable[str]],
        interval: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        on_result: Callable[[str | None, float, BaseException | None], None] | None = None,
        min_interval: float = 0.0,
        backoff_max: float = 60.0,
        progress_every: float = 60.0,
        wakeup: asyncio.Event | None = None,
    ) -> None:
        """`wakeup`: set by whoever wants the next cycle early (`wake` sets it too)."""
        self._cycle = cycle
        self.interval = interval
        self.min_interval = min_interval
        self._clock = clock
        self._wake = wakeup if wakeup is not None else asyncio.Event()
        self._stop = asyncio.Event()
        self._on_result = on_result
        self.backoff_max = backoff_max
        self.cycles = 0
        self.failures = 0
        self.failing = 0
        """Cycles failed in a row."""
        self.last_status: str | None = None
        self.progress_every = progress_every
        self._logged: tuple[str, float] | None = None  # (situation, when) of the last cycle logged at info

    def delay(self) -> float:
        """The time to the next cycle: the interval, doubled for each failed cycle in a row, at most
        `backoff_max` (never below the interval)."""
        if not self.failing:
            return self.interval
        return max(self.interval, min(self.backoff_max, self.interval * 2.0**self.failing))

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def _log_cycle(self, status: str | None, elapsed: float) -> None:
        situation = " ".join(str(status).split(":", 1)[0].split()[:2])  # "<plan> <phase>", "idle", ...
        now = self._clock()
        last = self._logged
        changed = last is None or last[0] != situation
        quiet = situation in ("idle", "standby")
        progress = not quiet and last is not None and now - last[1] >= self.progress_every
        if changed or progress:
            log.info("cycle", status=status, seconds=round(elapsed, 4))
            self._logged = (situation, now)
        else:
            log.debug("cycle", status=status, seconds=round(elapsed, 4))

    async def run(self) -> None:
        next_run = self._clock()
        while not self._stop.is_set():
            started = self._clock()
            self._wake.clear()
            status: str | None = None
            error: BaseException | None = None
            try:
                status = await self._cycle()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                error = exc
                self.failures += 1
                if isinstance(exc, StoreUnavailable):  # logged once per episode by the store's health
                    log.debug("cycle failed: the store is unavailable", error=str(exc))
                elif isinstance(exc, WriteFenced):  # the right to write lapsed (a lease, an election): safe
                    log.warning(
                        "cycle stopped before a write: this daemon may not write now", reason=str(exc)
                    )
                else:
                    log.error("cycle failed", error=repr(exc), exc_info=True)
            self.cycles += 1
            self.failing = 0 if error is None else self.failing + 1
            elapsed = self._clock() - started
            self.last_status = status if error is None else f"error: {error!r}"
            if self._on_result is not None:
                self._on_result(status, elapsed, error)
            if error is None:
                self._log_cycle(status, elapsed)
            next_run += self.delay()
            now = self._clock()
            if next_run < now:
                if elapsed > self.interval:
                    log.warning(
                        "cycle overran its interval", seconds=round(elapsed, 3), interval=self.interval
                    )
                next_run = now
            if self._stop.is_set():
                break
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for swallows a cancellation that arrives
            # as the wake-up fires (CPython gh-86296), and the loop would run on after being cancelled.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(0.0, next_run - self._clock())):
                    await self._wake.wait()
            if self._wake.is_set():
                earliest = started + self.min_interval
                if self._clock() < earliest:
                    await asyncio.sleep(earliest - self._clock())
                next_run = self._clock()


@dataclass
class Supervisor:
    """Runs the daemon's background tasks; the first one to fail unexpectedly stops them all.

    A task that ends with an exception is surfaced (logged and re-raised from `run`), never swallowed, so
    the process exits non-zero and systemd/the container runtime restarts it.
    """

    tasks: dict[str, Coroutine[Any, Any, None]] = field(default_factory=dict)

    def add(self, name: str, coro: Coroutine[Any, Any, None]) -> None:
        self.tasks[name] = coro

    async def run(self, stop: asyncio.Event, stopping: asyncio.Event | None = None) -> None:
        """Until `stop` is set or a task ends. `stopping`: set when a stop was asked for (SIGTERM), so the
        tasks that end because of it (the controller loop finishing its last cycle) are expected, not
        logged as a warning."""
        running: dict[asyncio.Task[Any], str] = {
            asyncio.create_task(coro, name=name): name for name, coro in self.tasks.items()
        }
        stopper: asyncio.Task[Any] = asyncio.create_task(stop.wait(), name="stop-signal")
        try:
            done, _ = await asyncio.wait([*running, stopper], return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if task is stopper or task.cancelled():
                    continue
                exc = task.exception()
                if exc is not None:
                    log.error("background task failed", task=running[task], error=repr(exc))
                    raise exc
                if stop.is_set() or (stopping is not None and stopping.is_set()):  # asked to stop
                    log.debug("background task ended", task=running[task])
                else:
                    log.warning("background task ended", task=running[task])
        finally:
            stopper.cancel()
            for task in running:
                task.cancel()
            await asyncio.gather(*running, stopper, return_exceptions=True)


class SignalFlags:
    """Signal handlers only set flags; the daemon acts on them in its own time (uvicorn's handle_exit).

    SIGTERM/SIGINT ask for a graceful stop; a second one forces. SIGHUP asks for a config reload.
    """

    def __init__(self) -> None:
        self.stop = asyncio.Event()
        self.force = asyncio.Event()
        self.reload = asyncio.Event()
        self._installed: list[int] = []

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._on_stop, sig)
            self._installed.append(sig)
        loop.add_signal_handler(signal.SIGHUP, self.reload.set)
        self._installed.append(signal.SIGHUP)

    def uninstall(self, loop: asyncio.AbstractEventLoop) -> None:
        for sig in self._installed:
            loop.remove_signal_handler(sig)
        self._installed.clear()

    def _on_stop(self, sig: int) -> None:
        if self.stop.is_set():
            self.force.set()
        self.stop.set()

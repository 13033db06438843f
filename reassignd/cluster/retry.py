"""Retries with exponential backoff and full jitter, on retriable errors only.

The policy is a pure value: `delay(retry, draw)` and `decide(error, attempt, draw)` take the random draw as
an argument, so tests pin it. Full jitter (a uniform draw in [0, ceiling]) is what keeps a fleet of clients
from retrying in lock-step after a controller failover (AWS Architecture Blog, "Exponential Backoff And
Jitter"). Only `run_with_retry` touches the clock.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from reassignd.cluster.errors import ClusterCallError
from reassignd.model import InvalidInputError, Problem

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """`attempts` counts every try, the first included; 1 means never retry."""

    attempts: int = 4
    base_delay: float = 0.2
    max_delay: float = 5.0
    multiplier: float = 2.0

    def __post_init__(self) -> None:
        problems = []
        if self.attempts < 1:
            problems.append(Problem("retry", "attempts", f"must be at least 1, got {self.attempts}"))
        if self.base_delay < 0:
            problems.append(Problem("retry", "base_delay", f"must not be negative, got {self.base_delay}"))
        if self.max_delay < self.base_delay:
            problems.append(
                Problem(
                    "retry", "max_delay", f"must be >= base_delay {self.base_delay}, got {self.max_delay}"
                )
            )
        if self.multiplier < 1:
            problems.append(Problem("retry", "multiplier", f"must be at least 1, got {self.multiplier}"))
        if problems:
            raise InvalidInputError("retry policy", problems)

    def ceiling(self, retry: int) -> float:
        """Upper bound of the wait before retry number `retry` (0 for the first retry)."""
        if retry < 0:
            raise ValueError(f"retry must not be negative, got {retry}")
        # Cap the exponent so huge retry numbers cannot overflow a float.
        return min(self.max_delay, self.base_delay * self.multiplier ** min(retry, 64))

    def delay(self, retry: int, draw: float) -> float:
        """Full jitter: `draw` is a uniform sample in [0, 1)."""
        if not 0.0 <= draw <= 1.0:
            raise ValueError(f"draw must be in [0, 1], got {draw}")
        return self.ceiling(retry) * draw

    def decide(self, error: BaseException, attempt: int, draw: float) -> float | None:
        """Seconds to wait before retrying after try `attempt` (1-based) failed; None means give up."""
        if attempt >= self.attempts or not is_retriable(error):
            return None
        return self.delay(attempt - 1, draw)


def is_retriable(error: BaseException) -> bool:
    return isinstance(error, ClusterCallError) and error.retriable


# Jitter draws from a generator of its own: the process-wide `random` state belongs to whoever seeded it
# (a test framework replaying examples, a simulation), and retries run in the background.
_JITTER = random.Random()


async def run_with_retry(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    on_retry: Callable[[BaseException, int, float], None] | None = None,
    draw: Callable[[], float] = _JITTER.random,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> T:
    """Await `call()` until it succeeds, the error is not retriable, or the attempts are used up."""
    attempt = 1
    while True:
        try:
            return await call()
        except ClusterCallError as error:
            wait = policy.decide(error, attempt, draw())
            if wait is None:
                raise
            if on_retry is not None:
                on_retry(error, attempt, wait)
            await sleep(wait)
            attempt += 1

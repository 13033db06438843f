"""The retry policy is pure: delays and decisions from pinned random draws."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reassignd.cluster.errors import ClusterCallError, KafkaErrorInfo
from reassignd.cluster.retry import RetryPolicy, run_with_retry
from reassignd.model import InvalidInputError

RETRIABLE = ClusterCallError("api", KafkaErrorInfo("NOT_CONTROLLER", 41, True))
FATAL = ClusterCallError("api", KafkaErrorInfo("INVALID_REPLICA_ASSIGNMENT", 39, False))


@pytest.mark.parametrize(
    ("retry", "expected"),
    [(0, 0.1), (1, 0.2), (2, 0.4), (3, 0.8), (4, 1.0), (50, 1.0), (10_000, 1.0)],
)
def test_ceiling_grows_exponentially_up_to_the_cap(retry: int, expected: float) -> None:
    policy = RetryPolicy(attempts=5, base_delay=0.1, max_delay=1.0, multiplier=2.0)
    assert policy.ceiling(retry) == pytest.approx(expected)


@pytest.mark.parametrize(("draw", "expected"), [(0.0, 0.0), (0.5, 0.2), (1.0, 0.4)])
def test_full_jitter_scales_the_ceiling_by_the_draw(draw: float, expected: float) -> None:
    policy = RetryPolicy(base_delay=0.1, max_delay=1.0)
    assert policy.delay(2, draw) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("error", "attempt", "expected"),
    [
        (RETRIABLE, 1, 0.05),  # first retry: ceiling 0.1 x draw 0.5
        (RETRIABLE, 2, 0.1),
        (RETRIABLE, 3, None),  # attempts used up
        (FATAL, 1, None),  # never retried
        (ValueError("bug"), 1, None),  # not a cluster error: never retried
    ],
)
def test_decide(error: BaseException, attempt: int, expected: float | None) -> None:
    policy = RetryPolicy(attempts=3, base_delay=0.1, max_delay=1.0)
    decision = policy.decide(error, attempt, 0.5)
    assert decision == (None if expected is None else pytest.approx(expected))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"attempts": 0}, "attempts"),
        ({"base_delay": -1.0}, "base_delay"),
        ({"base_delay": 2.0, "max_delay": 1.0}, "max_delay"),
        ({"multiplier": 0.5}, "multiplier"),
    ],
)
def test_bad_policy_names_the_field(kwargs: dict[str, float], field: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        RetryPolicy(**kwargs)  # type: ignore[arg-type]
    assert [p.field for p in info.value.problems] == [field]


@given(
    retry=st.integers(min_value=0, max_value=500),
    draw=st.floats(min_value=0.0, max_value=1.0),
    base=st.floats(min_value=0.0, max_value=10.0),
    extra=st.floats(min_value=0.0, max_value=100.0),
)
def test_delay_is_within_zero_and_the_cap(retry: int, draw: float, base: float, extra: float) -> None:
    policy = RetryPolicy(base_delay=base, max_delay=base + extra)
    assert 0.0 <= policy.delay(retry, draw) <= policy.max_delay


async def test_run_with_retry_retries_retriable_then_succeeds() -> None:
    calls: list[int] = []
    slept: list[float] = []

    async def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise RETRIABLE
        return "ok"

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    policy = RetryPolicy(attempts=4, base_delay=0.1, max_delay=1.0)
    result = await run_with_retry(flaky, policy, draw=lambda: 1.0, sleep=fake_sleep)
    assert result == "ok"
    assert len(calls) == 3
    assert slept == pytest.approx([0.1, 0.2])


async def test_run_with_retry_gives_up_after_attempts_and_raises_the_last_error() -> None:
    calls: list[int] = []

    async def always_failing() -> None:
        calls.append(1)
        raise RETRIABLE

    async def no_sleep(seconds: float) -> None:
        return None

    with pytest.raises(ClusterCallError) as info:
        await run_with_retry(always_failing, RetryPolicy(attempts=3), draw=lambda: 0.0, sleep=no_sleep)
    assert info.value is RETRIABLE
    assert len(calls) == 3


async def test_run_with_retry_does_not_retry_a_non_retriable_error() -> None:
    calls: list[int] = []

    async def fatal() -> None:
        calls.append(1)
        raise FATAL

    with pytest.raises(ClusterCallError):
        await run_with_retry(fatal, RetryPolicy(attempts=5), draw=lambda: 0.0)
    assert len(calls) == 1

"""The cancel part: reverts held back are said once; refused reverts are said, ended ones are not."""

from __future__ import annotations

import pytest

from reassignd.engine.cancel import Reverts
from reassignd.engine.run.cancelling import Cancel, answered, held
from reassignd.engine.run.effects import Answered, Log
from reassignd.engine.run.outbox import Outbox
from reassignd.store.base import PlanStatus
from tests.daemon.inprocess import InProcessDaemon, plan_of
from tests.engine.helpers import tp

MB = 1_000_000


@pytest.mark.parametrize(
    ("before", "now", "said"),
    [
        ({}, {tp(0): "no leader"}, [tp(0)]),
        ({tp(0): "no leader"}, {tp(0): "no leader"}, []),
        ({tp(0): "no leader"}, {tp(0): "no leader", tp(1): "no leader"}, [tp(1)]),
        ({tp(0): "no leader"}, {}, []),
    ],
)
def test_a_held_revert_is_said_once(before: dict, now: dict, said: list) -> None:
    out = Outbox("p")
    cancel = held(Cancel(held=before), Reverts((), now), out)
    assert dict(cancel.held) == now
    assert [e.fields["partition"] for e in out.after if isinstance(e, Log)] == [str(t) for t in said]


@pytest.mark.parametrize(
    ("error", "said"),
    [(None, False), ("NO_REASSIGNMENT_IN_PROGRESS: nothing to cancel", False), ("REQUEST_TIMED_OUT", True)],
)
def test_a_refused_revert_is_retried(error: str | None, said: bool) -> None:
    out = Outbox("p")
    answered((tp(0),), Answered(1.0, reassign={tp(0): error}), out)
    assert bool(out.after) == said


async def test_a_cancel_ends_within_a_few_cycles_of_reverting_a_step_that_just_started() -> None:
    """One copy of 100 MB at 1 MB/s, cancelled half a second after it started: reverted at once, the plan
    ends (throttles restored) a few cycles later. A revert read back as the step's source was taken for
    Metadata lagging the step's start (scheduling.METADATA_LAG_SECONDS) until the step was 10 s old, and
    the cancel ended only then (found on real Kafka by tests/realkafka/test_cancel.py's between-steps
    test: cancelled 8 s after the revert)."""
    d = InProcessDaemon(
        {
            "brokers": [{"id": b, "rack": f"/dc1/r{b}"} for b in range(1, 4)],
            "topics": [{"name": "t", "partition_bytes": 100 * MB, "assignment": [[1, 2]]}],
        },
        {"leader.reassignment.throttled.rate": MB, "follower.reassignment.throttled.rate": MB},
        cycle_seconds=0.5,
    )
    plan_id = await d.submit(plan_of({("t", 0): [1, 3]}))
    await d.run(lambda: bool(d.reassigning()), seconds=5)
    await d.controller.cancel()
    cancelled_at = d.sim.now
    await d.run(seconds=60)
    assert await d.status_of(plan_id) is PlanStatus.CANCELLED
    assert d.replicas("t", 0) == [1, 2] and d.throttle_configs() == {}
    assert d.sim.now - cancelled_at <= 2.0, d.sim.now - cancelled_at

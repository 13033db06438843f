"""The re-target part's pure functions: the journal's re-targets replayed onto the submitted plan, and what
waits on a gone broker."""

from __future__ import annotations

from typing import Any

import pytest

from reassignd.engine.lifecycle import PlanStatus
from reassignd.engine.run import new_run
from reassignd.engine.run.retarget import gone_waits, replayed
from reassignd.model import ReassignmentPlan, TopicPartition

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
PLAN = ReassignmentPlan({T0: (2, 3, 5), T1: (2, 4, 6)}, {T1: ("/d1", "/d2", "/d3")})


def entry(partition: int, to: list[int], withdraw: int | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {"topic": "t", "partition": partition, "from": [], "to": to}
    if withdraw is not None:
        item["withdraw_step"] = withdraw
    return {"gone": [2], "partitions": [item]}


@pytest.mark.parametrize(
    ("entries", "targets", "withdraw", "dirs"),
    [
        ([], {T0: (2, 3, 5), T1: (2, 4, 6)}, {}, {T1}),
        ([entry(0, [7, 3, 5], 0)], {T0: (7, 3, 5), T1: (2, 4, 6)}, {T0: 0}, {T1}),
        # in order: the last one wins; a re-targeted partition's log dirs go
        ([entry(1, [7, 4, 6]), entry(1, [1, 4, 6])], {T0: (2, 3, 5), T1: (1, 4, 6)}, {}, set()),
        # a partition that is not the plan's is ignored
        (
            [{"partitions": [{"topic": "u", "partition": 0, "to": [1]}]}],
            {T0: (2, 3, 5), T1: (2, 4, 6)},
            {},
            {T1},
        ),
    ],
)
def test_replayed(
    entries: list[dict[str, Any]],
    targets: dict[TopicPartition, tuple[int, ...]],
    withdraw: dict[TopicPartition, int],
    dirs: set[TopicPartition],
) -> None:
    plan, withdrawn = replayed(PLAN, entries)
    assert dict(plan.targets) == targets
    assert dict(withdrawn) == withdraw
    assert set(plan.log_dirs) == dirs


def test_gone_waits_before_the_first_observation_read_the_targets() -> None:
    run = new_run("p", PLAN, PlanStatus.RUNNING)
    assert gone_waits(run, {1, 2, 3, 4, 5, 6}) == {}
    assert gone_waits(run, {1, 3, 4, 5, 6}) == {T0: (2,), T1: (2,)}
    assert gone_waits(run, {2, 3, 4, 5}) == {T1: (6,)}

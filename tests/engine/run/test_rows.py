"""The stored row: one encoder and one decoder that give back the same row, and a decoded store checked
against the plan."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reassignd.engine.run.rows import PartitionRow, decoded_rows
from reassignd.engine.state import MOVING, PartitionProgress, Status
from reassignd.model import InvalidInputError, TopicPartition

brokers = st.lists(st.integers(0, 20), min_size=1, max_size=4, unique=True).map(tuple)
progress = st.builds(
    PartitionProgress,
    st.sampled_from(list(Status)),
    st.integers(0, 9),
    target=brokers,
    source=brokers,
    leader=st.integers(-1, 20),
    moves_leadership=st.booleans(),
)


@given(
    progress,
    st.one_of(st.none(), brokers),
    st.integers(0, 10**12),
    st.one_of(st.none(), brokers),
    st.one_of(st.none(), st.floats(0, 2e9)),
)
def test_a_row_decodes_to_itself(
    rec: PartitionProgress,
    baseline: tuple[int, ...] | None,
    size: int,
    goal: tuple[int, ...] | None,
    began: float | None,
) -> None:
    tp = TopicPartition("t", 3)
    row = PartitionRow.of(tp, rec, baseline=baseline, start_size=size, goal=goal, started_at=began)
    assert PartitionRow.from_json(json.loads(json.dumps(row.to_json()))) == row


@pytest.mark.parametrize(
    ("status", "restored"),
    [
        (Status.PENDING, Status.PENDING),
        (Status.BLOCKED, Status.PENDING),
        (Status.EXTERNAL, Status.PENDING),
        (Status.STARTING, Status.STARTING),
        (Status.IN_FLIGHT, Status.IN_FLIGHT),
        (Status.DONE, Status.DONE),
        (Status.DROPPED, Status.DROPPED),
    ],
)
def test_a_restart_rechecks_what_waited(status: Status, restored: Status) -> None:
    rec = PartitionProgress(status, 2, target=(1, 2), source=(1, 3), leader=1)
    row = PartitionRow.of(TopicPartition("t", 0), rec, baseline=None, start_size=0, goal=None, started_at=5.0)
    back = row.progress
    assert (back.status, back.step) == (restored, 2)
    assert (back.target == rec.target) == (status in MOVING)


def test_only_what_a_restart_needs_is_written() -> None:
    rec = PartitionProgress(Status.BLOCKED, 1, target=(1, 2), source=(1, 3), leader=1, detail="why")
    row = PartitionRow.of(
        TopicPartition("t", 0), rec, baseline=(1, 3), start_size=7, goal=None, started_at=5.0
    )
    assert row.to_json() == {
        "topic": "t",
        "partition": 0,
        "status": "blocked",
        "step": 1,
        "from": [1, 3],
        "size": 7,
    }


def test_the_store_s_rows_are_checked_against_the_plan() -> None:
    ours, other = TopicPartition("t", 0), TopicPartition("u", 0)
    stored = {
        ours: {"topic": "t", "partition": 0, "status": "in_flight", "step": 0},  # no target: malformed
        other: {"topic": "u", "partition": 0, "status": "pending", "step": 0},
    }
    with pytest.raises(InvalidInputError) as raised:
        decoded_rows(stored, {ours: (1, 2)})
    assert [p.field for p in raised.value.problems] == ["(entry)", "partition"]

"""Kafka reassignment JSON: round trips, and every kind of bad input reported at once with its location."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reassignd.model import InvalidInputError, ReassignmentPlan, TopicPartition


def _plan(*entries: dict[str, Any], version: Any = 1) -> dict[str, Any]:
    return {"version": version, "partitions": list(entries)}


def test_parses_kafka_reassignment_json() -> None:
    text = json.dumps(
        _plan(
            {"topic": "orders", "partition": 0, "replicas": [3, 1, 2]},
            {"topic": "orders", "partition": 1, "replicas": [1, 2], "log_dirs": ["any", "any"]},
            {"topic": "audit", "partition": 0, "replicas": [4], "log_dirs": ["/data/a"]},
        )
    )
    plan = ReassignmentPlan.from_json(text)
    assert plan.targets[TopicPartition("orders", 0)] == (3, 1, 2)
    assert plan.targets[TopicPartition("orders", 1)] == (1, 2)
    assert TopicPartition("orders", 1) not in plan.log_dirs  # "any" everywhere means no preference
    assert plan.log_dirs[TopicPartition("audit", 0)] == ("/data/a",)
    assert plan.topics() == {"orders", "audit"}


# (what is wrong, the entry, the field the message must name, a fragment of the message)
BAD_ENTRIES = [
    ("empty replicas", {"topic": "t", "partition": 0, "replicas": []}, "replicas", "must not be empty"),
    ("duplicate replicas", {"topic": "t", "partition": 0, "replicas": [1, 2, 1]}, "replicas", "duplicate"),
    ("negative broker", {"topic": "t", "partition": 0, "replicas": [1, -2]}, "replicas", "negative"),
    ("string broker", {"topic": "t", "partition": 0, "replicas": [1, "2"]}, "replicas", "integers"),
    ("bool broker", {"topic": "t", "partition": 0, "replicas": [True]}, "replicas", "integers"),
    ("replicas not a list", {"topic": "t", "partition": 0, "replicas": 3}, "replicas", "list"),
    ("missing replicas", {"topic": "t", "partition": 0}, "replicas", "list"),
    ("missing topic", {"partition": 0, "replicas": [1]}, "topic", "non-empty string"),
    ("empty topic", {"topic": "", "partition": 0, "replicas": [1]}, "topic", "non-empty string"),
    ("negative partition", {"topic": "t", "partition": -1, "replicas": [1]}, "partition", "negative"),
    ("float partition", {"topic": "t", "partition": 1.5, "replicas": [1]}, "partition", "integer"),
    (
        "log_dirs length",
        {"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["any"]},
        "log_dirs",
        "1 entries",
    ),
    (
        "log_dirs type",
        {"topic": "t", "partition": 0, "replicas": [1], "log_dirs": [1]},
        "log_dirs",
        "strings",
    ),
    ("entry not object", "t-0", "(entry)", "object"),
]


@pytest.mark.parametrize(("case", "entry", "field", "fragment"), BAD_ENTRIES, ids=[c[0] for c in BAD_ENTRIES])
def test_bad_entry_is_reported_with_location_and_field(
    case: str, entry: Any, field: str, fragment: str
) -> None:
    with pytest.raises(InvalidInputError) as info:
        ReassignmentPlan.from_dict(_plan(entry))
    problems = info.value.problems
    assert any(p.field == field and fragment in p.message for p in problems), problems
    assert all(p.where.startswith("partitions[0]") for p in problems)
    if isinstance(entry, dict) and entry.get("topic") == "t" and entry.get("partition") == 0:
        assert all("(t-0)" in p.where for p in problems)


@pytest.mark.parametrize(
    ("document", "field", "fragment"),
    [
        ({"version": 2, "partitions": []}, "version", "must be 1"),
        ({"partitions": []}, "version", "must be 1"),
        ({"version": 1}, "partitions", "list"),
        ({"version": 1, "partitions": {}}, "partitions", "list"),
        ([], "(document)", "object"),
    ],
)
def test_bad_document(document: Any, field: str, fragment: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        ReassignmentPlan.from_dict(document)
    assert any(p.field == field and fragment in p.message for p in info.value.problems)


def test_duplicate_partition_entries_are_rejected() -> None:
    with pytest.raises(InvalidInputError) as info:
        ReassignmentPlan.from_dict(
            _plan(
                {"topic": "t", "partition": 0, "replicas": [1]},
                {"topic": "t", "partition": 0, "replicas": [2]},
            )
        )
    [problem] = info.value.problems
    assert problem.where == "partitions[1] (t-0)" and "duplicate" in problem.message


def test_every_problem_is_reported_at_once_and_nothing_is_returned() -> None:
    with pytest.raises(InvalidInputError) as info:
        ReassignmentPlan.from_dict(
            _plan(
                {"topic": "a", "partition": 0, "replicas": []},
                {"topic": "b", "partition": 0, "replicas": [1, 1]},
                {"topic": "c", "partition": -3, "replicas": [-1]},
                version=7,
            )
        )
    message = str(info.value)
    assert len(info.value.problems) == 5
    for fragment in ("version", "(a-0)", "(b-0)", "partitions[2]", "negative"):
        assert fragment in message


def test_not_json_names_line_and_column() -> None:
    with pytest.raises(InvalidInputError) as info:
        ReassignmentPlan.from_json('{"version": 1,\n "partitions": [}')
    assert "line 2" in info.value.problems[0].field


targets = st.dictionaries(
    st.builds(
        TopicPartition,
        st.text(alphabet="abcxyz-._", min_size=1, max_size=8).filter(lambda t: t not in (".", "..")),
        st.integers(0, 50),
    ),
    st.lists(st.integers(0, 200), min_size=1, max_size=6, unique=True).map(tuple),
    max_size=30,
)


@given(targets)
def test_round_trip(targets_map: dict[TopicPartition, tuple[int, ...]]) -> None:
    plan = ReassignmentPlan(targets=targets_map)
    again = ReassignmentPlan.from_json(plan.to_json())
    assert dict(again.targets) == targets_map
    assert again.to_dict() == plan.to_dict()

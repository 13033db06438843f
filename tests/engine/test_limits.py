"""Limits: KIP names, defaults, validation with every problem at once, TOML flattening."""

from __future__ import annotations

import tomllib

import pytest

from reassignd.engine.limits import LIMIT_KEYS, Limits, flatten_toml
from reassignd.model import InvalidInputError


def test_defaults_and_names() -> None:
    names = [key.name for key in LIMIT_KEYS]
    assert names[:6] == [
        "reassignment.parallel.replica.count",
        "reassignment.parallel.partition.count",
        "reassignment.parallel.leader.movements",
        "reassignment.max.concurrent.replica.movements",
        "reassignment.max.incoming.replica.movements.per.broker",
        "reassignment.max.outgoing.replica.movements.per.broker",
    ]
    limits = Limits.from_mapping({})
    assert limits == Limits()
    assert limits.max_incoming_per_broker == 5 and limits.max_outgoing_per_broker == 5
    assert limits.max_concurrent_replica_movements == 2**31 - 1  # KIP-435: Int.MAX
    assert Limits.from_mapping(limits.to_mapping()) == limits


def test_toml_dotted_keys_flatten_to_kip_names() -> None:
    document = tomllib.loads(
        """
        reassignment.parallel.replica.count = 2
        reassignment.scheduling.mode = "batch"
        reassignment.ordering = ["leader_moves", "smaller_first"]
        leader.reassignment.throttled.rate = 1048576
        [daemon]
        interval = 5
        """
    )
    flat = flatten_toml(document)
    assert flat["reassignment.parallel.replica.count"] == 2
    assert flat["daemon.interval"] == 5
    limits = Limits.from_mapping(flat)  # keys outside the table (daemon.*) are ignored
    assert limits.parallel_replica_count == 2
    assert limits.scheduling_mode == "batch"
    assert limits.ordering == ("leader_moves", "smaller_first")
    assert limits.leader_throttled_rate == 1048576


def test_every_problem_is_reported_with_key_and_value() -> None:
    with pytest.raises(InvalidInputError) as caught:
        Limits.from_mapping(
            {
                "reassignment.parallel.replica.count": 0,
                "reassignment.parallel.partition.count": "3",
                "reassignment.scheduling.mode": "eventually",
                "reassignment.ordering": ["larger_first", "smaller_first"],
                "reassignment.paralel.leader.movements": 1,
                "follower.reassignment.throttled.rate": True,
                "reassignment.stall.window.seconds": -1,
            }
        )
    problems = {p.field: p.message for p in caught.value.problems}
    assert len(problems) == 7
    assert "got 0" in problems["reassignment.parallel.replica.count"]
    assert "'3'" in problems["reassignment.parallel.partition.count"]
    assert "eventually" in problems["reassignment.scheduling.mode"]
    assert "unknown key" in problems["reassignment.paralel.leader.movements"]


def test_rate_minus_one_means_no_throttle() -> None:
    assert Limits.from_mapping({"leader.reassignment.throttled.rate": -1}).leader_throttled_rate is None


@pytest.mark.parametrize(
    ("ordering", "fragment"),
    [
        ([], "names no sort key"),  # issue 31 item 5: PATCH /v1/limits took it
        ("", "names no sort key"),
        (" , ", "names no sort key"),
        (["larger_first", "larger_first"], "names a sort key twice"),
        (["nope"], "unknown sort key(s) ['nope']"),
        ([1], "must be a list of sort-key names"),
    ],
)
def test_a_bad_ordering_is_refused_naming_the_key_and_value(ordering: object, fragment: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        Limits.from_mapping({"reassignment.ordering": ordering})
    [problem] = caught.value.problems
    assert problem.field == "reassignment.ordering" and fragment in problem.message
    assert repr(ordering) in problem.message


@pytest.mark.parametrize(
    ("ordering", "chain"),
    [(["plan_order"], ("plan_order",)), ("leader_moves, larger_first", ("leader_moves", "larger_first"))],
)
def test_a_good_ordering_is_taken(ordering: object, chain: tuple[str, ...]) -> None:
    assert Limits.from_mapping({"reassignment.ordering": ordering}).ordering == chain

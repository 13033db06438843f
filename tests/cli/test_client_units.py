"""Pure parsers of the client commands: throttle rates with units, KEY=VALUE limit changes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reassignd.cli.client import MAX_RATE, parse_assignments, parse_rate
from reassignd.cli.watch import format_bytes, format_duration, format_rate, format_table
from reassignd.model import InvalidInputError

MULTIPLIERS = {
    "": 1,
    "B": 1,
    "KB": 1000,
    "MB": 1000**2,
    "GB": 1000**3,
    "TB": 1000**4,
    "KiB": 1024,
    "MiB": 1024**2,
    "GiB": 1024**3,
    "TiB": 1024**4,
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("50MB/s", 50_000_000),
        ("10MiB", 10_485_760),
        ("10MiB/s", 10_485_760),
        ("1048576", 1_048_576),
        ("1.5GB/s", 1_500_000_000),
        ("2e6", 2_000_000),
        ("750 KB/s", 750_000),
        ("100kB", 100_000),
        ("5M", 5_000_000),
        ("1mib", 1_048_576),
        ("20MBps", 20_000_000),
        (" 3 GiB ", 3 * 1024**3),
        ("1B", 1),
    ],
)
def test_rates_with_units(text: str, expected: int) -> None:
    assert parse_rate(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("50Mb/s", "bits"),
        ("8b", "bits"),
        ("fast", "not a rate"),
        ("", "not a rate"),
        ("-5MB", "not a rate"),
        ("10XB", "unknown unit"),
        ("0", "at least 1"),
        ("0.1B", "at least 1"),
        ("1e30", "largest rate"),
        ("5 MB/h", "not a rate"),
    ],
)
def test_bad_rates_are_refused_with_a_reason(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_rate(text)


@given(st.integers(min_value=1, max_value=10**6), st.sampled_from(sorted(MULTIPLIERS)), st.booleans())
def test_integer_rates_in_any_unit_are_exact(number: int, unit: str, per_second: bool) -> None:
    text = f"{number}{unit}{'/s' if per_second else ''}"
    assert parse_rate(text) == number * MULTIPLIERS[unit]


@given(st.integers(min_value=1, max_value=MAX_RATE))
def test_plain_byte_counts_round_trip(value: int) -> None:
    assert parse_rate(str(value)) == value


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([], {}),
        (["reassignment.parallel.partition.count=8"], {"reassignment.parallel.partition.count": 8}),
        (["a=0.5", "b=true", "c=False", "d=null"], {"a": 0.5, "b": True, "c": False, "d": None}),
        (
            ["reassignment.ordering=leader_moves,larger_first"],
            {"reassignment.ordering": "leader_moves,larger_first"},
        ),
        (["x = -1", "y=1e3", "z=batch"], {"x": -1, "y": 1000.0, "z": "batch"}),
    ],
)
def test_limit_assignments(items: list[str], expected: dict[str, Any]) -> None:
    assert parse_assignments(items) == expected


def test_bad_limit_assignments_report_every_problem() -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_assignments(["a=1", "novalue", "=3", "a=2", "b="])
    assert [(p.field, p.message) for p in caught.value.problems] == [
        ("novalue", "must be KEY=VALUE"),
        ("=3", "must be KEY=VALUE"),
        ("a", "given twice"),
        ("b=", "must be KEY=VALUE"),
    ]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "?"),
        (0, "0 B"),
        (999, "999 B"),
        (1000, "1.0 KB"),
        (6_000_000_000, "6.0 GB"),
        (1.5e15, "1.5 PB"),
    ],
)
def test_format_bytes(value: float | None, text: str) -> None:
    assert format_bytes(value) == text


@pytest.mark.parametrize(
    ("seconds", "text"), [(None, "unknown"), (0, "0s"), (41.4, "41s"), (61, "1m01s"), (3725, "1h02m")]
)
def test_format_duration(seconds: float | None, text: str) -> None:
    assert format_duration(seconds) == text


def test_format_rate_and_table() -> None:
    assert format_rate(None) == "-" and format_rate(50_000_000) == "50.0 MB/s"
    assert format_table(("A", "LONGER"), [[1, None], ["wide cell", "x"]]) == [
        "A          LONGER",
        "1          -",
        "wide cell  x",
    ]

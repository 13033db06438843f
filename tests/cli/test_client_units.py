"""Pure parsers of the client commands: throttle rates with units, KEY=VALUE limit changes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reassignd.cli import problem_lines
from reassignd.cli.client import MAX_RATE, _until_applied, config_lines, parse_assignments, parse_rate
from reassignd.cli.watch import (
    format_duration,
    format_table,
    format_time,
    id_ranges,
)
from reassignd.model import InvalidInputError, Problem
from reassignd.units import format_bytes, format_rate

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
        ("50MB/s", 50_000_000),
        ("50 MBps", 50_000_000),
        ("50mB/s", 50_000_000),  # no rate is in millibytes: prefixes are read in any case
        ("50B/s", 50),
        # bits, as network people write them (lowercase b, or bit): converted to bytes
        ("50mbps", 6_250_000),
        ("50Mbps", 6_250_000),
        ("50Mb/s", 6_250_000),
        ("50 Mbit/s", 6_250_000),
        ("1Gbps", 125_000_000),
        ("1gbit", 125_000_000),
        ("800kbps", 100_000),
        ("8b", 1),
        ("8bps", 1),
        ("10Mibit/s", 1_310_720),
    ],
)
def test_rates_with_units(text: str, expected: int) -> None:
    assert parse_rate(text) == expected


def test_the_unit_error_says_how_to_write_bytes_and_bits() -> None:
    """The issue: `50mbps` was refused with "write mB" (millibytes). Bits are read now; a unit that is
    neither says how to write both."""
    with pytest.raises(ValueError) as caught:
        parse_rate("50mbs")
    message = str(caught.value)
    assert "unknown unit 'mbs'" in message
    assert "bytes: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB" in message
    assert "bits: b, kb, Mb, Gb, Tb or bit, kbit, Mbit" in message
    assert "50Mbps = 50 megabits/s = 6.25 MB/s" in message
    assert "mB" not in message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("4b", "at least 1"),
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
    ("seconds", "text"),
    [
        (None, "unknown"),
        (0, "0s"),
        (41.4, "41s"),
        (61, "1m01s"),
        (3725, "1h02m"),
        (2 * 86400 + 7200, "2d02h"),
    ],
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


def test_times_to_the_second_and_broker_ranges() -> None:
    assert format_time("2026-01-02T03:04:05.123456Z") == "2026-01-02 03:04:05Z"
    assert format_time("2026-01-02T03:04:05+00:00", seconds=False) == "2026-01-02 03:04"
    assert format_time(None) == format_time("garbage") == "-"
    assert id_ranges([5, 1, 2, 3, 9, 10]) == "1-3, 5, 9-10" and id_ranges([]) == ""


def test_the_same_problem_at_many_places_is_one_line_naming_the_cli_flag() -> None:
    message = "changes the replication factor from 3 to 4; submit with allow_rf_change to do that on purpose"
    problems = [Problem(f"orders-{p}", "replicas", message) for p in range(24)]
    problems.append(Problem("orders-30", "replicas", "unknown broker id(s) [99]"))
    assert problem_lines(problems) == [
        "  - orders-0, orders-1, orders-2 and 21 more (24 in all): replicas: changes the replication factor "
        "from 3 to 4; submit with --allow-rf-change to do that on purpose",
        "  - orders-30: replicas: unknown broker id(s) [99]",
    ]


def test_lists_wrap_as_a_config_file_writes_them() -> None:
    items = ["under_min_isr", "leader_moves", "round_robin", "larger_first", "smaller_first", "plan_order"]
    lines = config_lines("reassignment.ordering", items)
    assert all(len(line) <= 80 for line in lines) and len(lines) == 2
    assert lines[0].startswith('reassignment.ordering = ["under_min_isr", ')
    assert all(line.startswith(" " * 25 + '"') for line in lines[1:]) and lines[-1].endswith('"plan_order"]')
    assert config_lines("reassignment.parallel.leader.movements", 2**31 - 1) == [
        "reassignment.parallel.leader.movements = unlimited"
    ]
    assert config_lines("leader.reassignment.throttled.rate", None) == [
        "leader.reassignment.throttled.rate = none (no throttle)"
    ]


class _Daemon:
    """Answers GET /v1/throttles as the real daemon does after a change: the old rates until its next
    cycle has applied the new ones."""

    def __init__(self, answers: list[dict[str, Any]]) -> None:
        self.answers = answers
        self.calls = 0

    def throttles(self) -> dict[str, Any]:
        self.calls += 1
        return self.answers[min(self.calls, len(self.answers) - 1)]


def test_a_throttle_change_is_shown_once_the_brokers_have_it() -> None:
    follower = "follower.reassignment.throttled.rate"
    old = {follower: 20, "applied": {"4": {"follower": 10}, "1": {"leader": 50}}}
    new = {follower: 20, "applied": {"4": {"follower": 20}, "1": {"leader": 50}}}
    daemon = _Daemon([old, old, new])
    shown, pending = _until_applied(daemon, old, {follower: 20}, timeout=10)  # type: ignore[arg-type]
    assert shown == new and not pending and daemon.calls == 2
    stuck = _Daemon([old])
    shown, pending = _until_applied(stuck, old, {follower: 20}, timeout=0.3)  # type: ignore[arg-type]
    assert shown == old and pending, "after the wait, the rates in force are shown as not updated yet"

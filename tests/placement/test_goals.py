"""Plan requests: the threshold as operators type it, and capacity files in both formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reassignd.model import InvalidInputError
from reassignd.placement.capacity import load_capacities, parse_capacities
from reassignd.placement.goals import PlanRequest, parse_threshold


@pytest.mark.parametrize(
    ("text", "value"),
    [("10%", 0.10), ("0.1", 0.1), ("0", 0.0), ("2.5%", 0.025), (" 5% ", 0.05), ("0.99", 0.99), ("0%", 0.0)],
)
def test_threshold_as_a_share_or_a_percentage(text: str, value: float) -> None:
    assert parse_threshold(text) == pytest.approx(value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("10", "write 10% (= 0.1)"),  # KIP-166's tool takes percent: a bare 10 most likely meant 10%
        ("1", "write 1% (= 0.01)"),
        ("-0.1", "must not be negative"),
        ("-5%", "must not be negative"),
        ("100%", "below 100%"),
        ("ten", "a share such as 0.10 or a percentage such as 10%"),
        ("nan", "must be a finite number"),
    ],
)
def test_threshold_refusals_say_what_to_type(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_threshold(text)


def test_the_cli_refuses_a_bare_ten_with_the_hint(capsys: pytest.CaptureFixture[str]) -> None:
    from reassignd.cli import main

    with pytest.raises(SystemExit) as exited:
        main(
            [
                "plan",
                "--goal",
                "replica-balance",
                "--snapshot",
                "x.json",
                "--out",
                "p.json",
                "--threshold",
                "10",
            ]
        )
    assert exited.value.code == 2
    assert "write 10% (= 0.1)" in capsys.readouterr().err


def test_request_problems_are_all_named() -> None:
    with pytest.raises(InvalidInputError) as caught:
        PlanRequest("drain", threshold=1.5, exclude_topics="[", max_rounds=0).check()
    fields = {p.field for p in caught.value.problems}
    assert fields == {"threshold", "brokers", "max_rounds", "exclude_topics"}


def test_topic_filters_match_whole_names() -> None:
    selected = PlanRequest("replica-balance", topics="orders.*", exclude_topics="orders-dlq").topic_filter()
    assert selected("orders") and selected("orders-eu")
    assert not selected("orders-dlq") and not selected("payments") and not selected("xorders")


def test_own_capacity_file(tmp_path: Path) -> None:
    path = tmp_path / "capacity.json"
    path.write_text(
        json.dumps(
            {
                "default": {"disk_bytes": 2e12, "network_in_bytes_per_sec": 1.25e8},
                "brokers": {"12": {"disk_bytes": 4e12}},
                "thresholds": {"disk": 0.7},
            }
        )
    )
    capacities = load_capacities(str(path))
    assert capacities.limit(1, "disk") == pytest.approx(0.7 * 2e12)
    assert capacities.limit(12, "disk") == pytest.approx(0.7 * 4e12)
    assert capacities.limit(12, "network_in") == pytest.approx(0.8 * 1.25e8)  # default, default threshold
    assert capacities.limit(12, "network_out") == float("inf")
    assert capacities.bounded("disk") and not capacities.bounded("network_out")


def test_cruise_control_capacity_file() -> None:
    """Cruise Control's capacity.json: broker -1 is the default, DISK in MB (or per log dir), NW in KB/s."""
    capacities = parse_capacities(
        {
            "brokerCapacities": [
                {
                    "brokerId": "-1",
                    "capacity": {"DISK": "100000", "CPU": "100", "NW_IN": "10000", "NW_OUT": "10000"},
                },
                {"brokerId": "3", "capacity": {"DISK": {"/d1": "100000", "/d2": "50000"}, "NW_IN": "20000"}},
            ]
        }
    )
    assert capacities.of(1).disk == 100000 * 1024 * 1024
    assert capacities.of(3).disk == 150000 * 1024 * 1024
    assert capacities.of(3).network_in == 20000 * 1024
    assert capacities.of(3).network_out == 10000 * 1024  # from the default


def test_capacity_file_problems_name_entry_and_key(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_capacities(
            {
                "default": {"disk_bytes": -1, "disk": 5},
                "brokers": {"x": {}},
                "thresholds": {"disk": 1.5, "cpu": 0.5},
            }
        )
    found = {(p.where, p.field) for p in caught.value.problems}
    assert found == {
        ("default", "disk_bytes"),
        ("default", "disk"),
        ("brokers", "x"),
        ("thresholds", "disk"),
        ("thresholds", "cpu"),
    }
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InvalidInputError, match="invalid JSON"):
        load_capacities(str(bad))

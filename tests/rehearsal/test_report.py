"""What a person reads of a rehearsal: the text report names the real bottleneck in one number format, and
the chart says simulated time, starts its bytes axis at 0, marks stuck moves, counts moves in whole numbers
against the limits, and shows receiving and sending brokers apart."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from reassignd.engine import Limits
from reassignd.model import ReassignmentPlan
from reassignd.rehearsal import rehearse
from reassignd.rehearsal.report import chart_figure, text_report, write_chart
from reassignd.rehearsal.result import RehearsalResult
from reassignd.sim import SimCluster, load_scenario

MB = 1_000_000
RATE = re.compile(r"\d+(?:\.\d)? (?:B|KB|MB|GB|TB)/s")


def brokers() -> list[dict[str, Any]]:
    return [{"id": b, "rack": f"/dc1/rack{b}"} for b in (1, 2, 3, 4)]


def plan(targets: dict[tuple[str, int], list[int]]) -> ReassignmentPlan:
    entries = [{"topic": t, "partition": p, "replicas": r} for (t, p), r in sorted(targets.items())]
    return ReassignmentPlan.from_dict({"version": 1, "partitions": entries})


def saturated_by_another_topic() -> RehearsalResult:
    """`busy` (3 x 40 MB/s) replicates into broker 3; the plan moves three `t` partitions (2 MB/s each)
    there too, unthrottled: 5 MB/s left for three copies that each need more than 2 MB/s."""
    scenario = {
        "seed": 1,
        "brokers": brokers(),
        "topics": [
            {
                "name": "busy",
                "partitions": 3,
                "replication_factor": 3,
                "partition_bytes": 10**9,
                "produce_bytes_per_sec": 40 * MB,
                "assignment": [[1, 2, 3], [2, 4, 3], [4, 1, 3]],
            },
            {
                "name": "t",
                "partitions": 3,
                "replication_factor": 2,
                "partition_bytes": 2 * 10**9,
                "produce_bytes_per_sec": 2 * MB,
                "assignment": [[1, 2]] * 3,
            },
        ],
    }
    sim = SimCluster.from_scenario(load_scenario(scenario))
    limits = Limits.from_mapping({"reassignment.max.incoming.replica.movements.per.broker": 5})
    return rehearse(sim, plan({("t", p): [1, 3] for p in range(3)}), limits, cycle_interval=1)


def finishing() -> RehearsalResult:
    scenario = {
        "seed": 1,
        "brokers": brokers(),
        "topics": [
            {
                "name": "t",
                "partitions": 6,
                "replication_factor": 2,
                "partition_bytes": 200 * MB,
                "produce_bytes_per_sec": 100_000,
                "assignment": [[1, 2]] * 6,
            }
        ],
    }
    sim = SimCluster.from_scenario(load_scenario(scenario))
    limits = Limits.from_mapping(
        {
            "follower.reassignment.throttled.rate": 10 * MB,
            "leader.reassignment.throttled.rate": 100 * MB,
            "reassignment.max.incoming.replica.movements.per.broker": 2,
        }
    )
    return rehearse(sim, plan({("t", p): [1, 3 + p % 2] for p in range(6)}), limits, cycle_interval=5)


def test_the_report_names_the_saturated_network_not_the_throttles() -> None:
    result = saturated_by_another_topic()
    assert not result.finished and len(result.never_converging) == 3
    lines = text_report(result)
    text = "\n".join(lines)
    assert "bound by broker 3's network in: 125.0 MB/s, 120.0 MB/s of it taken by" in text
    assert "throttle" not in text.split("never converge")[1], "no throttle holds these moves"
    assert "t-0 -> broker 3: fetch 1.7 MB/s, produce 2.0 MB/s" in text
    assert max(len(line) for line in lines) <= 80
    section = text.split("never converge")[1]
    numbers = re.findall(r"\d[\d,.]*(?: \w+/s)?", section.split("(rehearsed")[0])
    rates = [n for n in numbers if "/s" in n]
    assert rates and all(RATE.fullmatch(r) for r in rates), rates
    assert "," not in section.split("(rehearsed")[0].replace(", ", ""), "no 1,234,567-style figures"
    stuck = result.to_json_dict()["never_converging"][0]
    assert stuck["bottleneck"] == {
        "resource": "network_in",
        "broker": 3,
        "capacity_bytes_per_sec": 125 * MB,
        "reserved_bytes_per_sec": pytest.approx(120 * MB),
        "shared_by": 3,
    }


def test_the_chart_of_a_plan_that_does_not_finish(tmp_path: Path) -> None:
    figure = chart_figure(saturated_by_another_topic())
    top, incoming, outgoing, *_ = figure.axes  # then the two colorbars
    assert "does NOT finish" in top.get_title() and "simulated" in top.get_title()
    assert top.get_ylim()[0] == 0, "bytes from 0: a flat line reads as flat"
    assert not top.yaxis.get_offset_text().get_text()
    box = "\n".join(t.get_text() for t in top.texts)
    assert "broker 3's network in" in box and "t-0 -> broker 3" in box
    assert [t.get_text() for t in incoming.get_yticklabels()] == ["3 stuck"]
    assert [t.get_text() for t in outgoing.get_yticklabels()] == ["1"], "the leader is not the bottleneck"
    assert "simulated" in outgoing.get_xlabel()
    out = write_chart(saturated_by_another_topic(), tmp_path / "stuck.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_chart_of_a_plan_that_finishes(tmp_path: Path) -> None:
    result = finishing()
    assert result.finished
    figure = chart_figure(result)
    top, incoming, outgoing, incoming_bar, outgoing_bar = figure.axes
    assert "finishes after" in top.get_title() and "simulated" in top.get_title()
    assert not top.texts
    assert [t.get_text() for t in incoming.get_yticklabels()] == ["3", "4"], "only brokers that receive"
    assert [t.get_text() for t in outgoing.get_yticklabels()] == ["1"], "only brokers that send"
    labels = [t.get_text() for t in incoming_bar.get_yticklabels()]
    assert labels == ["0", "1", "2 = limit"], "whole moves, the limit marked"
    assert "5 = limit" in [t.get_text() for t in outgoing_bar.get_yticklabels()]
    write_chart(result, tmp_path / "done.png")

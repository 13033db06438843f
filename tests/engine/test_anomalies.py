"""Self-healing's pure decisions: the anomaly table, detection, the operator's gates, the one-fix rule."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reassignd.engine.anomalies import (
    Anomaly,
    AnomalyBook,
    AnomalyKind,
    AnomalyState,
    HealingSettings,
    IllegalAnomalyChange,
    adopted,
    gate_refusals,
    may_start_fix,
    observe,
)

S = AnomalyState
SETTINGS = HealingSettings(
    broker_failure_seconds=60.0, max_bytes=1000, max_partitions=10, max_duration_seconds=600
)


@pytest.mark.parametrize(
    ("start", "end", "allowed"),
    [
        (S.DETECTED, S.PROPOSED, True),
        (S.DETECTED, S.EXECUTING, True),  # execute mode, gates passed
        (S.PROPOSED, S.APPROVED, True),
        (S.APPROVED, S.EXECUTING, True),
        (S.EXECUTING, S.FIXED, True),
        (S.EXECUTING, S.IGNORED, True),  # its plan was cancelled
        (S.PROPOSED, S.EXPIRED, True),
        (S.EXECUTING, S.EXPIRED, False),  # a fix that started is followed to its end
        (S.PROPOSED, S.EXECUTING, False),  # never without approval
        (S.FIXED, S.DETECTED, False),
        (S.EXPIRED, S.PROPOSED, False),
    ],
)
def test_the_one_table_of_changes(start: AnomalyState, end: AnomalyState, allowed: bool) -> None:
    anomaly = Anomaly("a", AnomalyKind.BROKER_FAILURE, (1,), 0.0, 0.0, start)
    if allowed:
        assert anomaly.to(end, 5.0).state is end
    else:
        with pytest.raises(IllegalAnomalyChange):
            anomaly.to(end, 5.0)


def test_a_broker_is_an_anomaly_once_offline_for_the_threshold_and_only_once() -> None:
    book = observe(AnomalyBook(), [3], 100.0, SETTINGS)
    assert book.anomalies == () and book.offline_since == {3: 100.0}
    book = observe(book, [3], 159.0, SETTINGS)
    assert book.anomalies == ()
    book = observe(book, [3], 160.0, SETTINGS)
    assert [(a.brokers, a.state, a.first_seen) for a in book.anomalies] == [((3,), S.DETECTED, 100.0)]
    assert observe(book, [3], 500.0, SETTINGS).anomalies == book.anomalies


def test_a_broker_back_expires_an_open_anomaly_but_not_a_started_fix() -> None:
    book = observe(observe(AnomalyBook(), [3, 4], 0.0, SETTINGS), [3, 4], 60.0, SETTINGS)
    _, four = sorted(book.anomalies, key=lambda a: a.brokers)
    book = book.with_anomaly(four.to(S.EXECUTING, 61.0, plan_id="p"))
    book = observe(book, [], 70.0, SETTINGS)
    states = {a.brokers: a.state for a in book.anomalies}
    assert states == {(3,): S.EXPIRED, (4,): S.EXECUTING} and book.offline_since == {}
    assert observe(book, [3], 71.0, SETTINGS).offline_since == {3: 71.0}  # a new outage counts anew


@pytest.mark.parametrize(
    ("figures", "refused"),
    [
        ({"finished": True, "bytes_to_move": 1000, "partitions": 10, "predicted_duration_seconds": 600}, []),
        ({"finished": True, "bytes_to_move": 1001}, ["self.healing.max.bytes"]),
        ({"finished": True, "partitions": 11}, ["self.healing.max.partitions"]),
        ({"finished": True, "predicted_duration_seconds": 601}, ["self.healing.max.duration.seconds"]),
        ({"finished": False, "ended_because": "stuck"}, ["did not finish: stuck"]),
        ({"finished": True, "under_min_isr_seconds": 5.0}, ["under min ISR"]),
        ({"finished": True, "rack_spread_worse": 2}, ["fewer racks"]),
    ],
)
def test_the_gates(figures: dict[str, Any], refused: list[str]) -> None:
    said = gate_refusals(figures, SETTINGS)
    assert len(said) == len(refused) and all(r in s for r, s in zip(refused, said, strict=True)), said


@given(
    busy=st.booleans(),
    last=st.none() | st.floats(0, 1000),
    now=st.floats(0, 2000),
    cooldown=st.floats(0, 1000),
)
def test_a_fix_starts_only_when_no_plan_runs_and_the_cooldown_passed(
    busy: bool, last: float | None, now: float, cooldown: float
) -> None:
    book = AnomalyBook(last_fix_started=last)
    settings = HealingSettings(cooldown_seconds=cooldown)
    allowed = may_start_fix(book, now, settings, busy)
    assert allowed == (not busy and (last is None or now - last >= cooldown))


def test_a_new_empty_broker_is_an_anomaly_only_when_its_detector_is_on() -> None:
    on = HealingSettings(detectors=frozenset(AnomalyKind), new_broker_seconds=60.0)
    off = HealingSettings(new_broker_seconds=60.0)
    book = observe(AnomalyBook(), [], 0.0, on, empty=[7])
    assert observe(book, [], 60.0, off, empty=[7]).anomalies == ()
    found = observe(book, [], 60.0, on, empty=[7])
    assert [(a.kind, a.brokers, a.id) for a in found.anomalies] == [
        (AnomalyKind.NEW_BROKER, (7,), "new-broker-7-0")
    ]
    filled = observe(found, [], 61.0, on, empty=[])
    assert [(a.state, a.reason) for a in filled.anomalies] == [
        (S.EXPIRED, "the broker holds replicas now, or stopped")
    ]


@pytest.mark.parametrize(
    ("anomaly_id", "kind", "broker"),
    [
        ("broker-failure-5-1795783832", AnomalyKind.BROKER_FAILURE, 5),
        ("new-broker-7-0", AnomalyKind.NEW_BROKER, 7),
        ("hand-written", AnomalyKind.BROKER_FAILURE, -1),
    ],
)
def test_an_anomaly_is_read_back_from_the_id_its_fix_carries(
    anomaly_id: str, kind: AnomalyKind, broker: int
) -> None:
    back = adopted(anomaly_id, 9.0)
    assert (back.id, back.kind, back.brokers, back.state) == (anomaly_id, kind, (broker,), S.DETECTED)

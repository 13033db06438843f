"""The ETA's terms kept between cycles (eta.py) give what computing every term again gives, on the shipped
benchmark scenarios (a drain, a failed broker that comes back, a receiver that fails), cycle by cycle."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.strategies import load_cases, make_meter
from reassignd.engine.eta import estimate
from reassignd.engine.limits import Limits
from reassignd.engine.run import progress as run_progress
from reassignd.engine.run.progress import with_eta
from reassignd.engine.run.state import RunState
from reassignd.engine.state import ExecutionState
from reassignd.engine.tracking import Tracking
from reassignd.model import ReassignmentPlan
from reassignd.rehearsal import rehearse
from tests.engine.helpers import cluster, eta_checked_afresh, tp


@pytest.mark.parametrize("name", ["drain-broker", "broker-failure", "move-topic-to-new-racks"])
def test_the_kept_terms_give_the_estimate_of_all_terms_at_every_cycle(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_progress, "with_eta", eta_checked_afresh(run_progress.with_eta))
    [case] = load_cases([name])
    meter = make_meter(case)
    checked: list[float | None] = []

    def on_run(run: RunState, elapsed: float) -> None:
        checked.append(run.progress.tracking.eta)

    result = rehearse(
        meter.sim, case.plan, case.limits, cycle_interval=case.cycle_interval, on_run=on_run, every_cycle=True
    )
    assert result.finished
    assert len([eta for eta in checked if eta]) > 20  # the check ran on a real estimate, many times


def test_terms_are_updated_only_for_the_candidates() -> None:
    """A change outside the candidates is not seen until the terms are made again: what the caller must
    name (why the progress part passes every changed, moving or reported partition)."""
    a, b = tp(0), tp(1)
    before = cluster(range(1, 5), {a: (1, 2), b: (1, 2)}, sizes={a: 100, b: 100})
    targets = {a: (3, 4), b: (3, 4)}
    kwargs = {
        "ended": lambda _: False,
        "sources": {},
        "rate_in": lambda _: 10.0,
        "rate_out": lambda _: 10.0,
        "produce": {},
        "replica_count": 1,
        "concurrent_in": 5,
        "concurrent_out": 5,
    }
    first, terms = estimate(before, targets, **kwargs)  # type: ignore[arg-type]
    assert first.seconds == pytest.approx(40.0)  # 400 bytes leave broker 1 at 10 B/s
    after = before.with_partitions([before.partitions[b].with_sizes(300, {1: 300, 2: 300})])
    missed, _ = estimate(after, targets, previous=terms, candidates=[a], **kwargs)  # type: ignore[arg-type]
    seen, _ = estimate(after, targets, previous=terms, candidates=[b], **kwargs)  # type: ignore[arg-type]
    assert missed.seconds == pytest.approx(40.0)
    assert seen.seconds == pytest.approx(80.0) == estimate(after, targets, **kwargs)[0].seconds  # type: ignore[arg-type]


MB = 1_000_000


def _never_kwargs(produce: dict[object, float], rate: float, concurrent: int = 5) -> dict[str, object]:
    return {
        "ended": lambda _: False,
        "sources": {},
        "rate_in": lambda _: rate,
        "rate_out": lambda _: 100 * MB,
        "produce": produce,
        "replica_count": 1,
        "concurrent_in": concurrent,
        "concurrent_out": concurrent,
    }


def test_producers_outpacing_a_copy_give_never_at_this_rate_not_six_digit_days() -> None:
    """Issue 27: a 14 GB partition written at 2 MB/s behind a 1.5 MB/s throttle showed `ETA 160980d21h`
    (its chain at the floor of 1 byte/s). No rate finishes it: the estimate says so, with the figures."""
    a = tp(0)
    snapshot = cluster(range(1, 5), {a: (1, 2)}, sizes={a: 14 * 10**9})
    found, _ = estimate(snapshot, {a: (1, 3)}, **_never_kwargs({a: 2 * MB}, 1.5 * MB))  # type: ignore[arg-type]
    assert (found.seconds, found.bottleneck) == (
        None,
        "never at this rate: producers write 2.0 MB/s into t-0, its copy into broker 3 gets at most 1.5 MB/s",
    )


def test_producers_outpacing_a_brokers_copies_together_give_never_at_this_rate() -> None:
    """Each of five partitions alone is slower than the throttle; the five copies into broker 3 at once
    take 2.0 MB/s of producers' writes from its 1.5 MB/s: none of them catches up."""
    parts = [tp(p) for p in range(5)]
    snapshot = cluster(range(1, 5), dict.fromkeys(parts, (1, 2)), sizes=dict.fromkeys(parts, 10**9))
    produce = dict.fromkeys(parts, 0.4 * MB)
    found, _ = estimate(snapshot, dict.fromkeys(parts, (1, 3)), **_never_kwargs(produce, 1.5 * MB))  # type: ignore[arg-type]
    assert found.seconds is None
    assert found.bottleneck == (
        "never at this rate: producers write 2.0 MB/s into the copies entering broker 3 at once, "
        "which get 1.5 MB/s"
    )
    # one copy at a time: 0.4 MB/s of the 1.5 go to producers, the rest copies, and each copy waiting
    # grows by 0.4 MB/s until its turn: 909 s, 1240, 1690, 2305, 3143 (5 GB at 1.1 MB/s was 4545 s)
    found, _ = estimate(snapshot, dict.fromkeys(parts, (1, 3)), **_never_kwargs(produce, 1.5 * MB, 1))  # type: ignore[arg-type]
    assert found.seconds == pytest.approx(9287.8, abs=0.1)


def _rounds(copies: int, concurrent: int, size: float, produce: float, rate: float) -> float:
    """The copies into one broker, `concurrent` at a time, sharing `rate`, each partition written at
    `produce` from the start on: what they take, round by round."""
    elapsed, left = 0.0, copies
    while left:
        running = min(concurrent, left)
        grown = size + produce * elapsed  # a waiting partition grew until its round started
        elapsed += running * grown / (rate - running * produce)
        left -= running
    return elapsed


@settings(max_examples=200, deadline=None)
@given(
    rounds=st.integers(1, 12),
    concurrent=st.integers(1, 6),
    size=st.integers(10**6, 10**10),
    produce_share=st.floats(0.0, 0.6),
)
def test_waiting_copies_are_counted_with_what_producers_write_until_their_turn(
    rounds: int, concurrent: int, size: int, produce_share: float
) -> None:
    """Issue 27 (bench/bench_eta.py throttle-drop: 5-10% low for most of the plan): a copy waiting for its
    turn grows with its partition; counting producers only into the copies in flight ran low. For equal
    partitions the estimate is what the copies take round by round."""
    copies, rate = rounds * concurrent, 10 * MB
    produce = produce_share * rate / concurrent
    parts = [tp(p) for p in range(copies)]
    snapshot = cluster(range(1, 5), dict.fromkeys(parts, (1, 2)), sizes=dict.fromkeys(parts, size))
    kwargs = _never_kwargs(dict.fromkeys(parts, produce), rate, concurrent)
    kwargs["rate_out"] = lambda _: 10**6 * MB
    found, _ = estimate(snapshot, dict.fromkeys(parts, (1, 3)), **kwargs)  # type: ignore[arg-type]
    assert found.bottleneck in ("into broker 3", "steps of t-0")  # one copy: its chain, the same time
    assert found.seconds == pytest.approx(_rounds(copies, concurrent, size, produce, rate), rel=1e-6)


def test_copies_that_grow_faster_while_waiting_than_they_are_copied_give_never_at_this_rate() -> None:
    parts = [tp(p) for p in range(400)]
    snapshot = cluster(range(1, 5), dict.fromkeys(parts, (1, 2)), sizes=dict.fromkeys(parts, 10**9))
    produce = dict.fromkeys(parts, 0.2 * MB)
    found, _ = estimate(snapshot, dict.fromkeys(parts, (1, 3)), **_never_kwargs(produce, 1.5 * MB, 1))  # type: ignore[arg-type]
    assert found.seconds is None
    assert found.bottleneck.startswith("never at this rate: producers write 80.0 MB/s into the copies ")


def test_the_rate_put_back_gives_the_estimate_made_afresh() -> None:
    """The terms kept from a cycle at the low rate are not reused at the new one: no memory of the old."""
    a = tp(0)
    snapshot = cluster(range(1, 5), {a: (1, 2)}, sizes={a: 14 * 10**9})
    targets = {a: (1, 3)}
    _, terms = estimate(snapshot, targets, **_never_kwargs({a: 2 * MB}, 1.5 * MB))  # type: ignore[arg-type]
    kept, _ = estimate(
        snapshot, targets, previous=terms, candidates=[], **_never_kwargs({a: 2 * MB}, 20 * MB)
    )  # type: ignore[arg-type]
    fresh, _ = estimate(snapshot, targets, **_never_kwargs({a: 2 * MB}, 20 * MB))  # type: ignore[arg-type]
    assert kept == fresh and fresh.seconds == pytest.approx(14 * 10**9 / (18 * MB))


def test_with_balanced_sources_the_eta_counts_the_planned_source_not_the_leader() -> None:
    """Broker 9 leads the six partitions a drain moves; with `reassignment.balance.sources` brokers 1 and 2
    serve four of the copies (sources.py): the plan takes two copies' time, not six on broker 9."""
    size = 10**9
    parts = {tp(i): (9, 1, 2) for i in range(6)}
    snapshot = cluster(12, parts, sizes=dict.fromkeys(parts, size))
    plan = ReassignmentPlan({tp(i): (3 + i, 1, 2) for i in range(6)})
    for balance, copies in ((True, 2), (False, 6)):
        limits = Limits(
            leader_throttled_rate=10 * MB,
            follower_throttled_rate=10 * MB,
            max_outgoing_per_broker=6,
            balance_sources=balance,
        )
        state = ExecutionState.initial(plan, snapshot)
        tracking, _ = with_eta(Tracking(), snapshot, state, limits, {})
        assert tracking.eta == pytest.approx(copies * size / (10 * MB)), (balance, tracking.eta_reason)


def test_work_left_with_no_rate_known_anywhere_has_no_estimate_not_zero() -> None:
    """An unthrottled plan's first cycle, before any copy rate is measured, showed `0 B of 638.3 MB,
    rate -, ETA 0s` (every broker without a rate was skipped and 0 s was left). Nothing bounds the copies
    yet: no estimate, with the reason."""
    a = tp(0)
    snapshot = cluster(range(1, 5), {a: (1, 2)}, sizes={a: 10**9})
    kwargs = {**_never_kwargs({}, 0.0), "rate_out": lambda _: None}
    found, _ = estimate(snapshot, {a: (1, 3)}, **kwargs)  # type: ignore[arg-type]
    assert found.seconds is None
    assert found.bottleneck == "no rate known yet for broker 3: no throttle set and no copy measured"

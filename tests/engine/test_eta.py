"""The ETA's terms kept between cycles (eta.py) give what computing every term again gives, on the shipped
benchmark scenarios (a drain, a failed broker that comes back, a receiver that fails), cycle by cycle."""

from __future__ import annotations

import pytest

from bench.strategies import load_cases, make_meter
from reassignd.engine.eta import estimate
from reassignd.engine.run import progress as run_progress
from reassignd.engine.run.state import RunState
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

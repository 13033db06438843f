"""The run's auto-throttle part: a move that cannot converge gets its brokers' rates raised."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from reassignd.engine.journal import Event, EventKind
from reassignd.engine.run.effects import Effect, Log, Notify
from reassignd.engine.run.state import RunState, Settings
from reassignd.engine.throttle import FOLLOWER_RATE, LEADER_RATE
from reassignd.model import ClusterSnapshot


def raise_stalled_rates(
    run: RunState, snapshot: ClusterSnapshot, settings: Settings, now: float
) -> tuple[RunState, list[Event], list[Effect]]:
    """Auto-throttle: a move that cannot converge gets its brokers' rates raised, one step per window."""
    auto = settings.auto_throttle
    if auto is None or not run.tracking.stalled:
        return run, [], []
    limits = settings.limits
    window = limits.stall_window_seconds
    base = {LEADER_RATE: limits.leader_throttled_rate, FOLLOWER_RATE: limits.follower_throttled_rate}
    raised: dict[int, dict[str, int]] = {}
    for move in run.tracking.stalled:
        p = snapshot.partitions.get(move.tp)
        for broker, key in ((move.broker, FOLLOWER_RATE), (p.leader if p else None, LEADER_RATE)):
            start = base[key]
            if broker is None or start is None or now - run.boosted_at.get(broker, -1e18) < window:
                continue
            current = run.boosts.get(broker, {}).get(key, start)
            new = min(auto.ceiling, current + auto.step)
            if new > current:
                raised.setdefault(broker, {})[key] = new
    if not raised:
        return run, [], []
    boosts = {b: dict(r) for b, r in run.boosts.items()}
    boosted_at = dict(run.boosted_at)
    events: list[Event] = []
    notes: list[Effect] = []
    for broker, rates in sorted(raised.items()):
        boosts.setdefault(broker, {}).update(rates)
        boosted_at[broker] = now
        events.append(
            Event(
                EventKind.THROTTLE_SET,
                run.plan_id,
                None,
                None,
                {"auto_throttle": True, "broker": broker, **rates},
            )
        )
        notes += [
            Log(
                "warning",
                "auto-throttle raised rates for a stalled move",
                {"plan": run.plan_id, "broker": broker, "rates": rates},
            ),
            Notify("throttle.auto_raised", {"plan_id": run.plan_id, "broker": broker, "rates": rates}),
        ]
    updated = replace(run, boosts=MappingProxyType(boosts), boosted_at=MappingProxyType(boosted_at))
    return updated, events, notes


# -- answers -----------------------------------------------------------------------------------------------

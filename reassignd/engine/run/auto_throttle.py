"""The auto-throttle part: a move that cannot converge (stalled: its follower grows no faster than
producers write) gets its brokers' rates raised, one step per stall window, up to a ceiling.

The raised rates are ours alone: the throttle part writes them in place of the configured ones on those
brokers (throttle_book.py) and restores the originals at the end like any rate of ours.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from reassignd import config_keys
from reassignd.engine.journal import Event, EventKind
from reassignd.engine.limits import Limits
from reassignd.engine.run.effects import Log, Notify
from reassignd.engine.run.outbox import Outbox
from reassignd.engine.tracking import Tracking
from reassignd.model import ClusterSnapshot

_EMPTY: Mapping[Any, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class AutoThrottle:
    """Raise a stalled move's rates in steps of `step` up to `ceiling` (bytes/s), once per stall window."""

    step: int
    ceiling: int


@dataclass(frozen=True, slots=True)
class Boosts:
    rates: Mapping[int, Mapping[str, int]] = field(default_factory=lambda: _EMPTY)
    """Per broker, the rates raised (by config key)."""
    at: Mapping[int, float] = field(default_factory=lambda: _EMPTY)
    """When each broker's rates were last raised."""


def raised(
    boosts: Boosts,
    tracking: Tracking,
    full: ClusterSnapshot,
    limits: Limits,
    out: Outbox,
    *,
    auto: AutoThrottle | None,
    now: float,
) -> Boosts:
    if auto is None or not tracking.stalled:
        return boosts
    window = limits.stall_window_seconds
    base = {
        config_keys.LEADER_REPLICATION_THROTTLED_RATE: limits.leader_throttled_rate,
        config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE: limits.follower_throttled_rate,
    }
    raising: dict[int, dict[str, int]] = {}
    for move in tracking.stalled:
        p = full.partitions.get(move.tp)
        for broker, key in (
            (move.broker, config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE),
            (p.leader if p else None, config_keys.LEADER_REPLICATION_THROTTLED_RATE),
        ):
            start = base[key]
            if broker is None or start is None or now - boosts.at.get(broker, -1e18) < window:
                continue
            current = boosts.rates.get(broker, {}).get(key, start)
            new = min(auto.ceiling, current + auto.step)
            if new > current:
                raising.setdefault(broker, {})[key] = new
    if not raising:
        return boosts
    rates = {b: dict(r) for b, r in boosts.rates.items()}
    at = dict(boosts.at)
    for broker, raised_now in sorted(raising.items()):
        rates.setdefault(broker, {}).update(raised_now)
        at[broker] = now
        _journal_raise(broker, raised_now, out)
    return Boosts(MappingProxyType(rates), MappingProxyType(at))


def _journal_raise(broker: int, rates: Mapping[str, int], out: Outbox) -> None:
    data = {"auto_throttle": True, "broker": broker, **rates}
    out.journal(Event(EventKind.THROTTLE_SET, out.plan_id, None, None, data))
    out.say(
        Log(
            "warning",
            "auto-throttle raised rates for a stalled move",
            {"plan": out.plan_id, "broker": broker, "rates": rates},
        ),
        Notify("throttle.auto_raised", {"plan_id": out.plan_id, "broker": broker, "rates": rates}),
    )

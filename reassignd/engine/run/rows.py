"""What the machine persists per partition, and the ETA it reports (from eta.py)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from reassignd.engine.actions import StartStep
from reassignd.engine.effects import (
    Effect,
    Log,
    Notify,
)
from reassignd.engine.eta import EtaTerms, Sizes, estimate
from reassignd.engine.journal import Event, EventKind
from reassignd.engine.limits import Limits
from reassignd.engine.run.state import Replicas, Row, RunState, Settings
from reassignd.engine.state import (
    ENDED,
    MOVING,
    ExecutionState,
)
from reassignd.engine.throttle import (
    FOLLOWER_RATE,
    LEADER_RATE,
)
from reassignd.engine.tracking import Tracking
from reassignd.model import ClusterSnapshot, TopicPartition, copy_of


def with_eta(
    tracking: Tracking,
    view: ClusterSnapshot,
    state: ExecutionState,
    limits: Limits,
    produce: Mapping[TopicPartition, float],
    *,
    sizes: Sizes | None = None,
    previous: EtaTerms | None = None,
    candidates: Collection[TopicPartition] | None = None,
) -> tuple[Tracking, EtaTerms | None]:
    """The ETA: the work left at the rates in force (eta.py), and its terms for the next cycle to update
    (`previous`, `candidates`: see `estimate`; `produce` is the plan's produce rates, the same object until
    they are read again). The slowest copy's own pace is no guide while it shares its broker's rate with
    others (it speeds up as they finish), so it counts only when no rate is known at all."""

    def rate(broker: int, key: str, ours: int | None, seen: Mapping[int, float]) -> float | None:
        configured = view.broker_config(broker, key) if view.configs_known("broker", str(broker)) else None
        for value in (configured, ours):
            if value is not None and float(value) > 0:
                return float(value)
        return seen.get(broker)

    def ended(tp: TopicPartition) -> bool:
        return state[tp].status in ENDED

    waits = state.offline_waits()
    if waits:
        brokers = ", ".join(map(str, sorted({b for down in waits.values() for b in down})))
        reason = f"{len(waits)} partition(s) wait for offline broker(s) {brokers}"
        return replace(tracking, eta=None, eta_reason=reason), None

    found, terms = estimate(
        view,
        state.plan.targets,
        ended,
        {tp: rec.leader for tp, rec in state.in_flight()},
        rate_in=lambda b: rate(b, FOLLOWER_RATE, limits.follower_throttled_rate, tracking.seen_in),
        rate_out=lambda b: rate(b, LEADER_RATE, limits.leader_throttled_rate, tracking.seen_out),
        produce=copy_of(produce) | dict(tracking.produce),  # a C-level copy, not key by key
        replica_count=limits.step_size,
        concurrent_in=limits.max_incoming_per_broker,
        concurrent_out=limits.max_outgoing_per_broker,
        sizes=sizes,
        previous=previous,
        candidates=candidates,
        epoch=produce,
    )
    if found.seconds == 0.0 and tracking.slowest_copy:
        # no rate known anywhere (unthrottled, not yet seen): the copies' own pace is all there is
        return replace(tracking, eta=tracking.slowest_copy, eta_reason="the slowest copy in flight"), terms
    if found.seconds is None or found.seconds == 0.0:
        return replace(tracking, eta=found.seconds, eta_reason=found.bottleneck), terms
    # the plan ends at the cycle that sees its last copy done (and restores the throttles): one cycle more
    samples = tracking.plan_samples
    cycle = samples[-1].time - samples[-2].time if len(samples) >= 2 else 0.0
    return replace(tracking, eta=found.seconds + cycle, eta_reason=found.bottleneck), terms


def replicas_of(
    run: RunState, full: ClusterSnapshot, changed: Collection[TopicPartition] | None
) -> Mapping[TopicPartition, Replicas]:
    """Each plan partition's replica list now: updated where the view changed (`changed`; None: all)."""
    if changed is None or not run.replicas_now:
        keys: Iterable[TopicPartition] = run.plan.targets
    else:
        keys = (tp for tp in changed if tp in run.plan.targets)
    updated = [(tp, p.replicas) for tp in keys if (p := full.partitions.get(tp)) is not None]
    if not updated and run.replicas_now:
        return run.replicas_now
    return MappingProxyType(copy_of(run.replicas_now) | dict(updated))


def row_of(run: RunState, state: ExecutionState, tp: TopicPartition, now: float) -> dict[str, Any]:
    row = state.entry(tp)
    if tp in run.baseline:
        row["from"] = list(run.baseline[tp])
        row["size"] = run.start_sizes.get(tp, 0)
    if run.goals is not None and tp in run.goals:
        row["goal"] = list(run.goals[tp])
    rec = state[tp]
    if rec.status in MOVING:
        began = run.step_started_at.get(tp)
        row["started_at"] = now if began is None else began
    return row


def changed_rows(
    run: RunState,
    state: ExecutionState,
    previous: ExecutionState,
    *,
    changed: set[TopicPartition] | None,
    report: Mapping[str, tuple[Any, ...]],
    now: float,
    starts: tuple[StartStep, ...],
) -> dict[TopicPartition, Row | None]:
    """Rows to write: a record changes only where the decision reconciled (changed) or acted."""
    if changed is None or not run.rows:
        touched_now = set(state.plan.targets)
    else:
        touched_now = set(changed).union(
            (s.tp for s in starts),
            report["completed"],
            report["aborted"],
            report["dropped"],
            report["recovered"],
        )
        touched_now |= {tp for tp in state.in_flight_set if tp not in previous.in_flight_set}
    out: dict[TopicPartition, Row | None] = {}
    for tp in touched_now:
        if tp not in state.rank_of:
            continue
        row = row_of(run, state, tp, now)
        if run.rows.get(tp) != row:
            out[tp] = row
    return out


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

"""The run's progress part: figures over time, the ETA and stalls (tracking.py and eta.py do the maths)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace

from reassignd.engine.eta import EtaTerms, Sizes, estimate
from reassignd.engine.limits import Limits
from reassignd.engine.state import ENDED, ExecutionState
from reassignd.engine.throttle import FOLLOWER_RATE, LEADER_RATE
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

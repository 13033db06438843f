"""The progress part: the plan's figures over time, its ETA and its stalls (tracking.py, eta.py and
progress.py do the maths; figures.py shows them).

Once cancelling, the plan's percentage stays where the cancel found it and the ETA is the cancel's. While
paused the rate and ETA hold still (the copies in flight are still watched for stalls), and the ETA's terms
are made afresh on resume: what changed meanwhile was not applied to them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from reassignd import config_keys
from reassignd.engine.cluster_clock import ClusterTime
from reassignd.engine.eta import EtaTerms, Sizes, estimate
from reassignd.engine.journal import Event, EventKind
from reassignd.engine.limits import Limits
from reassignd.engine.run.effects import Log, Notify
from reassignd.engine.run.outbox import Outbox
from reassignd.engine.run.reading import Reading, Sight
from reassignd.engine.run.scheduling import Decided
from reassignd.engine.sources import planned_source
from reassignd.engine.state import ENDED, ExecutionState, Status
from reassignd.engine.tracking import Tracking, observe
from reassignd.model import ClusterSnapshot, ReassignmentPlan, TopicPartition, copy_of


@dataclass(frozen=True, slots=True)
class Progress:
    tracking: Tracking = field(default_factory=Tracking)
    eta_terms: EtaTerms | None = None
    """The last ETA's terms, which the next cycle updates where something changed (eta.py)."""
    saved_summary: Mapping[str, Any] | None = None
    """The figures as the store has them (they are saved again once they differ enough)."""


def observed(
    progress: Progress,
    sight: Sight,
    decided: Decided,
    limits: Limits,
    out: Outbox,
    *,
    reading: Reading,
    plan: ReassignmentPlan,
    cancelling: bool,
    paused: bool,
) -> Progress:
    """The figures after this observation's decisions, the ETA unless paused, new stalls journaled."""
    state = decided.state
    counting = not cancelling
    changed = decided.changed
    recompute = None if changed is None else set(reading.fresh) | set(changed)
    before = progress.tracking
    tracking = observe(
        before,
        sight.clock.now,
        sight.full,
        plan.targets if counting else state.plan.targets,
        watched=[tp for tp, _ in state.in_flight()],
        recompute=recompute,
        done=lambda tp: counting and state[tp].status is Status.DONE,
        dropped=decided.report.dropped if counting else (),
        finished_copies=decided.finished_copies,
        produce=reading.produce,
        moving=not paused,
        count_work=counting,
    )
    eta_terms = None  # not kept across a pause: what changes meanwhile is not applied to them
    if not paused:
        # the terms of partitions sitting still are kept until sizes and produce rates are read again
        candidates = None if changed is None or sight.full_read else recompute
        if candidates is not None:
            candidates = {*candidates, *decided.changed_partitions()}
        # the view with the sizes it carries: no term rebuilds its partition from `sizes` (a full read's
        # stripped view made 100,000 of them, each a new PartitionState)
        tracking, eta_terms = with_eta(
            tracking,
            sight.full,
            state,
            limits,
            reading.produce,
            sizes=reading.sizes,
            previous=progress.eta_terms,
            candidates=candidates,
        )
        tracking = _on_wall_clock(tracking, sight.clock)
    _journal_stalls(tracking, before, out)
    return replace(progress, tracking=tracking, eta_terms=eta_terms)


def _on_wall_clock(tracking: Tracking, clock: ClusterTime) -> Tracking:
    """The ETA, counted in the cluster's seconds, in wall-clock seconds (cluster_clock.py)."""
    if tracking.eta is None or clock.scale == 1.0:
        return tracking
    wall = clock.to_wall(tracking.eta)
    if wall is None:
        return replace(tracking, eta=None, eta_reason="the cluster's clock stands still (simulator paused)")
    return replace(tracking, eta=wall)


def _journal_stalls(tracking: Tracking, before: Tracking, out: Outbox) -> None:
    for move in tracking.stalled:
        if (move.tp, move.broker) in before.stalled_keys:
            continue
        out.journal(Event(EventKind.STALL_DETECTED, out.plan_id, move.tp, None, move.to_json()))
        where = {"plan": out.plan_id, "partition": str(move.tp), "broker": move.broker}
        out.say(
            Notify("stall.detected", {"plan_id": out.plan_id, **move.to_json()}),
            Log("warning", "move stalled: catch-up does not exceed the produce rate", where),
        )


def _sources(view: ClusterSnapshot, state: ExecutionState, limits: Limits) -> dict[TopicPartition, int]:
    """Who serves each partition's copies: in flight, the step's source; waiting, the balanced source its
    step will be given (sources.py), where it is not the leader."""
    sources = {tp: rec.leader for tp, rec in state.in_flight()}
    online = view.online_broker_ids()
    for tp, server in state.servers.items():
        p = view.partitions.get(tp)
        if tp in sources or p is None or state[tp].status in ENDED:
            continue
        final = state.plan.targets[tp]
        chosen = planned_source(server, p, final=final, leader=p.leader, limits=limits, online=online)
        if chosen != p.leader:
            sources[tp] = chosen
    return sources


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
        _sources(view, state, limits),
        rate_in=lambda b: rate(
            b,
            config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE,
            limits.follower_throttled_rate,
            tracking.seen_in,
        ),
        rate_out=lambda b: rate(
            b, config_keys.LEADER_REPLICATION_THROTTLED_RATE, limits.leader_throttled_rate, tracking.seen_out
        ),
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

"""Self-healing's decisions (issue 29), pure: which anomalies the cluster shows, and what may be done about
each. The daemon (daemon/healing.py) reads the cluster, plans and rehearses the fix, and carries out what
this module decides; nothing here reads a clock or the cluster.

An anomaly's states, and the one table of changes between them::

    detected ──propose──> proposed ──approve──> approved ──submit──> executing ──fixed──> fixed
       │  │                  │  │                  │                    └──ended──> ignored
       │  └──refuse──> ignored   └──refuse──> ignored
       └──gone──> expired    proposed/approved ──gone──> expired

`refuse`: the rehearsed fix breaks one of the operator's gates, or cannot be planned; `gone`: the anomaly
disappeared before its fix started (the broker came back, or was filled); `ended`: the fix's plan ended
without completing (an operator cancelled it). The kinds (`AnomalyKind`): a broker offline for longer than
`self.healing.broker.failure.seconds` (its fix drains it), and, when enabled, a running broker with no
replica for longer than `self.healing.new.broker.seconds` (its fix fills it).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Final


class HealingMode(StrEnum):
    OFF = "off"
    PROPOSE = "propose"
    EXECUTE = "execute"


class AnomalyKind(StrEnum):
    BROKER_FAILURE = "broker_failure"
    """A broker offline for longer than `broker_failure_seconds`: its fix drains it."""
    NEW_BROKER = "new_broker"
    """A running broker with no replica for longer than `new_broker_seconds` (a broker added to the
    cluster, not decommissioned): its fix fills it."""

    @property
    def goal(self) -> str:
        """The planner goal of its fix."""
        return "drain" if self is AnomalyKind.BROKER_FAILURE else "fill"


class AnomalyState(StrEnum):
    DETECTED = "detected"
    PROPOSED = "proposed"
    APPROVED = "approved"
    EXECUTING = "executing"
    FIXED = "fixed"
    IGNORED = "ignored"
    EXPIRED = "expired"

    @property
    def open(self) -> bool:
        """Its fix has not started: it may still expire."""
        return self in (AnomalyState.DETECTED, AnomalyState.PROPOSED, AnomalyState.APPROVED)

    @property
    def terminal(self) -> bool:
        return not _NEXT[self]


_NEXT: Final[Mapping[AnomalyState, frozenset[AnomalyState]]] = MappingProxyType(
    {
        AnomalyState.DETECTED: frozenset(
            {AnomalyState.PROPOSED, AnomalyState.IGNORED, AnomalyState.EXPIRED, AnomalyState.EXECUTING}
        ),
        AnomalyState.PROPOSED: frozenset({AnomalyState.APPROVED, AnomalyState.IGNORED, AnomalyState.EXPIRED}),
        AnomalyState.APPROVED: frozenset(
            {AnomalyState.EXECUTING, AnomalyState.IGNORED, AnomalyState.EXPIRED}
        ),
        AnomalyState.EXECUTING: frozenset({AnomalyState.FIXED, AnomalyState.IGNORED}),
        AnomalyState.FIXED: frozenset(),
        AnomalyState.IGNORED: frozenset(),
        AnomalyState.EXPIRED: frozenset(),
    }
)
"""detected -> executing: `execute` mode submits a fix that passed its gates without a proposal."""


class IllegalAnomalyChange(ValueError):
    pass


@dataclass(frozen=True)
class HealingSettings:
    mode: HealingMode = HealingMode.OFF
    broker_failure_seconds: float = 600.0
    detectors: frozenset[AnomalyKind] = frozenset({AnomalyKind.BROKER_FAILURE})
    new_broker_seconds: float = 300.0
    max_bytes: int | None = None
    max_partitions: int | None = None
    max_duration_seconds: float | None = None
    cooldown_seconds: float = 600.0


@dataclass(frozen=True)
class Anomaly:
    id: str
    kind: AnomalyKind
    brokers: tuple[int, ...]
    first_seen: float
    last_seen: float
    state: AnomalyState = AnomalyState.DETECTED
    reason: str = ""
    """Why it is where it is: the gate a fix broke, why it expired or was ignored."""
    proposal: Mapping[str, Any] | None = None
    """The fix's plan and its rehearsal's figures, once rehearsed."""
    plan_id: str | None = None

    def to(self, state: AnomalyState, now: float, **changes: Any) -> Anomaly:
        if state not in _NEXT[self.state]:
            raise IllegalAnomalyChange(f"anomaly {self.id}: cannot go from {self.state} to {state}")
        return replace(self, state=state, last_seen=now, **changes)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind.value,
            "brokers": list(self.brokers),
            "state": self.state.value,
            "first_seen": self.first_seen,
            "last_seen": self.last_seen,
            "reason": self.reason or None,
            "plan_id": self.plan_id,
            "proposal": dict(self.proposal) if self.proposal is not None else None,
        }


@dataclass(frozen=True)
class AnomalyBook:
    """Every anomaly seen, and since when each broker has been offline."""

    anomalies: tuple[Anomaly, ...] = ()
    offline_since: Mapping[int, float] = field(default_factory=lambda: MappingProxyType({}))
    empty_since: Mapping[int, float] = field(default_factory=lambda: MappingProxyType({}))
    last_fix_started: float | None = None

    def open_for(self, broker: int) -> Anomaly | None:
        return next((a for a in self.anomalies if broker in a.brokers and not a.state.terminal), None)

    def get(self, anomaly_id: str) -> Anomaly | None:
        return next((a for a in self.anomalies if a.id == anomaly_id), None)

    def with_anomaly(self, anomaly: Anomaly) -> AnomalyBook:
        kept = tuple(a for a in self.anomalies if a.id != anomaly.id)
        return replace(self, anomalies=(*kept, anomaly))


def observe(
    book: AnomalyBook,
    offline: Collection[int],
    now: float,
    settings: HealingSettings,
    empty: Collection[int] = (),
) -> AnomalyBook:
    """The brokers offline now, and the running brokers with no replica (`empty`): each detector enabled
    makes an anomaly of a broker so for its threshold (one per broker while it is open); an anomaly whose
    condition is gone expires unless its fix started."""
    seen = {AnomalyKind.BROKER_FAILURE: set(offline), AnomalyKind.NEW_BROKER: set(empty)}
    book = replace(
        book,
        offline_since=MappingProxyType({b: book.offline_since.get(b, now) for b in offline}),
        empty_since=MappingProxyType({b: book.empty_since.get(b, now) for b in empty}),
    )
    for anomaly in book.anomalies:
        if anomaly.state.open and not set(anomaly.brokers) & seen[anomaly.kind]:
            book = book.with_anomaly(anomaly.to(AnomalyState.EXPIRED, now, reason=_GONE[anomaly.kind]))
    for kind in sorted(settings.detectors & set(AnomalyKind)):
        since, threshold = _SINCE[kind](book), _THRESHOLD[kind](settings)
        for broker, first in sorted(since.items()):
            if now - first >= threshold and book.open_for(broker) is None:
                anomaly_id = _id_of(kind, broker, first)
                if book.get(anomaly_id) is None:
                    book = book.with_anomaly(Anomaly(anomaly_id, kind, (broker,), first, now))
    return book


def _id_of(kind: AnomalyKind, broker: int, first: float) -> str:
    return f"{kind.value.replace('_', '-')}-{broker}-{int(first)}"


def adopted(anomaly_id: str, now: float) -> Anomaly:
    """An anomaly known only by its id, which its fix's plan carries (the daemon restarted, or took over as
    writer): its kind and broker are read back from it."""
    kind_text, _, rest = anomaly_id.rpartition("-")[0].rpartition("-")
    try:
        kind, broker = AnomalyKind(kind_text.replace("-", "_")), int(rest)
    except ValueError:  # not an id this module made: kept, but about no known broker
        kind, broker = AnomalyKind.BROKER_FAILURE, -1
    return Anomaly(anomaly_id, kind, (broker,), now, now)


_GONE: Final = {
    AnomalyKind.BROKER_FAILURE: "the broker is back",
    AnomalyKind.NEW_BROKER: "the broker holds replicas now, or stopped",
}
_SINCE: Final = {
    AnomalyKind.BROKER_FAILURE: lambda book: book.offline_since,
    AnomalyKind.NEW_BROKER: lambda book: book.empty_since,
}
_THRESHOLD: Final = {
    AnomalyKind.BROKER_FAILURE: lambda settings: settings.broker_failure_seconds,
    AnomalyKind.NEW_BROKER: lambda settings: settings.new_broker_seconds,
}


def gate_refusals(figures: Mapping[str, Any], settings: HealingSettings) -> list[str]:
    """The operator's gates a rehearsed fix breaks (none: it may run). `figures`: the rehearsal's
    `finished`, `bytes_to_move`, `partitions`, `predicted_duration_seconds`, `under_min_isr_seconds`,
    `rack_spread_worse` (partitions whose replicas would span fewer racks)."""
    refusals = []
    if not figures.get("finished"):
        refusals.append(f"the rehearsal did not finish: {figures.get('ended_because') or 'unknown'}")
    limits = (
        ("bytes_to_move", settings.max_bytes, "self.healing.max.bytes"),
        ("partitions", settings.max_partitions, "self.healing.max.partitions"),
        ("predicted_duration_seconds", settings.max_duration_seconds, "self.healing.max.duration.seconds"),
    )
    for field_name, limit, key in limits:
        value = figures.get(field_name)
        if limit is not None and value is not None and value > limit:
            refusals.append(f"{field_name} {value:g} is over {key} = {limit:g}")
    if figures.get("under_min_isr_seconds", 0) > 0:
        refusals.append(
            f"partitions under min ISR for {figures['under_min_isr_seconds']:g} s in the rehearsal"
        )
    if figures.get("rack_spread_worse", 0) > 0:
        refusals.append(f"{figures['rack_spread_worse']} partitions would span fewer racks")
    return refusals


def may_start_fix(book: AnomalyBook, now: float, settings: HealingSettings, plan_in_progress: bool) -> bool:
    """Never two plans at once, and a cool-down between fixes."""
    if plan_in_progress:
        return False
    last = book.last_fix_started
    return last is None or now - last >= settings.cooldown_seconds

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
replica for longer than `self.healing.new.broker.seconds` (its fix fills it), partitions spanning fewer
racks than they could, a balance goal's band broken, partitions under-replicated with their brokers online
(engine/detectors.py finds those in a snapshot), a log dir offline for longer than
`self.healing.log.dir.failure.seconds` (its fix moves the dir's replicas to other brokers).

An anomaly is about a kind and a subject: a broker (the broker-level kinds, one anomaly per broker), one
log dir of a broker (`<broker>_<dir>`, the dir's path with every character but letters, digits, `_` and
`.` as `_`: one anomaly per dir) or the cluster (the partition-level and balance kinds, one per kind); it
lists its brokers and partitions. Its id,
`<kind>-<subject>-<first seen>`, stays the same while the condition lasts, and `adopted` reads it back.
Detectors hand `Finding`s to `observe`, which times them (a partition from when it was first seen) and
keeps at most one open anomaly per kind and subject.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
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
    RACK_SPREAD = "rack_spread"
    """Partitions whose replicas span fewer racks / data centres than the placer could give them (KIP-879
    levels, over the online brokers not decommissioned) for `violation_seconds`: its fix re-places them."""
    REPLICA_BALANCE = "replica_balance"
    """A broker's replica count outside the replica-balance goal's band (KIP-166, `balance_threshold`) for
    `violation_seconds`: its fix is that goal's plan."""
    LEADER_BALANCE = "leader_balance"
    """A broker's preferred-leader count outside the leader-balance goal's band, as above."""
    DISK_CAPACITY = "disk_capacity"
    """Brokers whose log dirs' volumes are used beyond `disk_capacity_threshold` of their total (KIP-827
    total and usable bytes) for `violation_seconds`: its fix sheds bytes through the planner's hard disk
    goal, never onto a broker it would take past the threshold."""
    BYTE_BALANCE = "byte_balance"
    """A broker's bytes outside the planner's byte band (its size-aware balance, `byte_balance_threshold`)
    for `violation_seconds`: its fix is the planner's size-aware replica-balance plan."""
    UNDER_REPLICATED = "under_replicated"
    """Partitions under-replicated for `under_replicated_seconds` with every replica's broker online: its
    fix elects the preferred leader where it is in sync and not leading; else nothing moves."""
    LOG_DIR_OFFLINE = "log_dir_offline"
    """A running broker's log dir answered KAFKA_STORAGE_ERROR (failed) for `log_dir_failure_seconds`: its
    fix moves the replicas that were in it to other brokers (Kafka can neither move them to another dir of
    the broker nor delete them)."""

    @property
    def goal(self) -> str:
        """The planner goal of its fix."""
        return _GOALS[self]

    @property
    def about_partitions(self) -> bool:
        """A partition-level kind: one anomaly for the cluster (subject `cluster`), its partitions listed,
        each timed on its own; a broker-level kind has one anomaly per broker (per log dir for
        `log_dir_offline`)."""
        return self not in (AnomalyKind.BROKER_FAILURE, AnomalyKind.NEW_BROKER, AnomalyKind.LOG_DIR_OFFLINE)


_GOALS: Final = {
    AnomalyKind.BROKER_FAILURE: "drain",
    AnomalyKind.NEW_BROKER: "fill",
    AnomalyKind.RACK_SPREAD: "re-place",
    AnomalyKind.REPLICA_BALANCE: "replica-balance",
    AnomalyKind.LEADER_BALANCE: "leader-balance",
    AnomalyKind.BYTE_BALANCE: "byte-balance",
    AnomalyKind.DISK_CAPACITY: "shed-bytes",
    AnomalyKind.UNDER_REPLICATED: "elect",
    AnomalyKind.LOG_DIR_OFFLINE: "re-target",
}
CLUSTER: Final = "cluster"
"""The subject of a partition-level anomaly (its id: `rack-spread-cluster-<first seen>`)."""


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
    detectors: frozenset[AnomalyKind] = frozenset({AnomalyKind.BROKER_FAILURE, AnomalyKind.LOG_DIR_OFFLINE})
    new_broker_seconds: float = 300.0
    max_bytes: int | None = None
    max_partitions: int | None = None
    max_duration_seconds: float | None = None
    cooldown_seconds: float = 600.0
    violation_seconds: float = 600.0
    """How long a rack-spread or balance violation lasts before it is an anomaly."""
    under_replicated_seconds: float = 600.0
    """How long a partition stays under-replicated (every replica's broker online) before it counts."""
    balance_threshold: float = 0.10
    """The balance goals' threshold (KIP-166: a share of the average), for the detectors and their fixes."""
    byte_balance_threshold: float = 0.10
    """The byte band's threshold (the planner's `byte_threshold`), for `byte_balance` and its fix."""
    disk_capacity_threshold: float = 0.80
    """The share of a broker's log-dir volumes used past which `disk_capacity` makes an anomaly, and up to
    which its fix fills the others."""
    log_dir_failure_seconds: float = 600.0
    """How long a log dir of a running broker stays offline before it is an anomaly."""
    anomaly_retention_seconds: float = 7 * 86400.0
    """How long an anomaly that ended is kept in the state store after its last change."""
    cycle_interval_seconds: float = 5.0
    """The daemon's `controller.cycle.interval.seconds`: a fix is rehearsed stepping as the daemon steps."""

    @property
    def gates(self) -> tuple[int | None, int | None, float | None]:
        """The operator's `self.healing.max.*` gates: bytes, partitions, duration (`GATES` names them)."""
        return self.max_bytes, self.max_partitions, self.max_duration_seconds


@dataclass(frozen=True)
class Finding:
    """What one detector sees now about one subject: a broker (broker-level kinds, `subject` its id) or
    the cluster (partition-level kinds and the balance goals). `partitions`: each partition involved
    ("topic-partition") with its replicas' brokers; a finding with partitions counts each from when it
    was first seen, one without counts from when the subject was."""

    kind: AnomalyKind
    subject: str
    brokers: tuple[int, ...] = ()
    partitions: Mapping[str, tuple[int, ...]] = field(default_factory=lambda: MappingProxyType({}))
    log_dir: str = ""
    """The failed dir's path (log_dir_offline): the subject holds it made safe for an id only."""

    @property
    def key(self) -> tuple[str, str]:
        return (self.kind.value, self.subject)


def broker_findings(offline: Collection[int], empty: Collection[int] = ()) -> list[Finding]:
    """The broker-level findings: brokers offline now, running brokers with no replica."""
    return [Finding(AnomalyKind.BROKER_FAILURE, str(b), (b,)) for b in sorted(offline)] + [
        Finding(AnomalyKind.NEW_BROKER, str(b), (b,)) for b in sorted(empty)
    ]


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
    partitions: tuple[str, ...] = ()
    """The partitions involved ("topic-partition"), for a partition-level kind."""
    subject: str = ""
    """A broker's id, or `cluster`: with the kind, what the anomaly is about (also in its id)."""
    log_dir: str = ""
    """The failed dir's path, for log_dir_offline ("" when read back from a store that did not keep it)."""

    @property
    def key(self) -> tuple[str, str]:
        return (self.kind.value, self.subject or (str(self.brokers[0]) if self.brokers else CLUSTER))

    def to(self, state: AnomalyState, now: float, **changes: Any) -> Anomaly:
        if state not in _NEXT[self.state]:
            raise IllegalAnomalyChange(f"anomaly {self.id}: cannot go from {self.state} to {state}")
        return replace(self, state=state, last_seen=now, **changes)

    def to_json(self) -> dict[str, Any]:
        dirs = {"log_dir": self.log_dir or None} if self.kind is AnomalyKind.LOG_DIR_OFFLINE else {}
        return {
            "id": self.id,
            "kind": self.kind.value,
            "brokers": list(self.brokers),
            "partitions": list(self.partitions),
            "state": self.state.value,
            "first_seen": self.first_seen,
            "last_seen": self.last_seen,
            "reason": self.reason or None,
            "plan_id": self.plan_id,
            "proposal": dict(self.proposal) if self.proposal is not None else None,
            **dirs,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Anomaly:
        """An anomaly as `to_json` wrote it (the state store keeps them: a restart or a failover reads
        them back; its subject is its broker, or the cluster for a partition-level kind); a ValueError
        naming the field and its value for anything else."""
        anomaly_id = data.get("id")
        if not isinstance(anomaly_id, str) or not anomaly_id:
            raise ValueError(f"stored anomaly: id must be a non-empty string, got {anomaly_id!r}")
        try:
            kind: AnomalyKind = _member(AnomalyKind, data, "kind")
            brokers = _brokers(data)
            if not kind.about_partitions and not brokers:
                raise ValueError(f"brokers must name the broker of a {kind.value} anomaly, got []")
            return cls(
                anomaly_id,
                kind,
                brokers,
                _seconds(data, "first_seen"),
                _seconds(data, "last_seen"),
                _member(AnomalyState, data, "state"),
                reason=str(data.get("reason") or ""),
                proposal=_optional_mapping(data, "proposal"),
                plan_id=None if data.get("plan_id") is None else str(data["plan_id"]),
                partitions=tuple(str(p) for p in data.get("partitions") or ()),
                subject=_subject_of(kind, anomaly_id, brokers),
                log_dir=str(data.get("log_dir") or "") if kind is AnomalyKind.LOG_DIR_OFFLINE else "",
            )
        except ValueError as exc:
            raise ValueError(f"stored anomaly {anomaly_id}: {exc}") from None


def dir_subject(broker: int, path: str) -> str:
    """The subject of a `log_dir_offline` anomaly: `<broker>_<dir>`, the dir's path with every character
    but letters, digits, `_` and `.` as `_` (an id holds letters, digits, `.`, `_` and `-` only, and its
    parts are split at `-`: store/base.py's ANOMALY_ID)."""
    slug = "".join(c if c.isascii() and (c.isalnum() or c in "_.") else "_" for c in path.strip("/"))
    return f"{broker}_{slug or '_'}"


def _subject_of(kind: AnomalyKind, anomaly_id: str, brokers: tuple[int, ...]) -> str:
    if kind.about_partitions:
        return CLUSTER
    if kind is AnomalyKind.LOG_DIR_OFFLINE:  # read back from its id, `log-dir-offline-<subject>-<first>`
        return anomaly_id.rpartition("-")[0].rpartition("-")[2]
    return str(brokers[0])


def _member(enum: type[StrEnum], data: Mapping[str, Any], name: str) -> Any:
    value = data.get(name)
    if value not in {m.value for m in enum}:
        raise ValueError(f"{name} must be one of {[m.value for m in enum]}, got {value!r}")
    return enum(value)


def _brokers(data: Mapping[str, Any]) -> tuple[int, ...]:
    brokers = data.get("brokers")
    if not isinstance(brokers, list) or not all(type(b) is int for b in brokers):
        raise ValueError(f"brokers must be a list of broker ids, got {brokers!r}")
    return tuple(brokers)


def _seconds(data: Mapping[str, Any], name: str) -> float:
    value = data.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a time in seconds, got {value!r}")
    return float(value)


def _optional_mapping(data: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    value = data.get(name)
    if value is not None and not isinstance(value, Mapping):
        raise ValueError(f"{name} must be an object or null, got {value!r}")
    return value


_Key = tuple[str, ...]


@dataclass(frozen=True)
class AnomalyBook:
    """Every anomaly seen, and since when each condition has held: `since[(kind, subject)]`, and for a
    partition-level finding `since[(kind, subject, partition)]` too."""

    anomalies: tuple[Anomaly, ...] = ()
    since: Mapping[_Key, float] = field(default_factory=lambda: MappingProxyType({}))
    last_fix_started: float | None = None

    @property
    def offline_since(self) -> Mapping[int, float]:
        return self._brokers_since(AnomalyKind.BROKER_FAILURE)

    @property
    def empty_since(self) -> Mapping[int, float]:
        return self._brokers_since(AnomalyKind.NEW_BROKER)

    def _brokers_since(self, kind: AnomalyKind) -> Mapping[int, float]:
        return {int(k[1]): t for k, t in self.since.items() if len(k) == 2 and k[0] == kind.value}

    def open_for(self, broker: int) -> Anomaly | None:
        """The broker-level anomaly about `broker` whose fix has not ended."""
        return next(
            (
                a
                for a in self.anomalies
                if not a.kind.about_partitions and broker in a.brokers and not a.state.terminal
            ),
            None,
        )

    def open_about(self, key: tuple[str, str]) -> Anomaly | None:
        return next((a for a in self.anomalies if a.key == key and not a.state.terminal), None)

    def get(self, anomaly_id: str) -> Anomaly | None:
        return next((a for a in self.anomalies if a.id == anomaly_id), None)

    def with_anomaly(self, anomaly: Anomaly) -> AnomalyBook:
        kept = tuple(a for a in self.anomalies if a.id != anomaly.id)
        return replace(self, anomalies=(*kept, anomaly))


def restored(anomalies: Collection[Anomaly], last_fix_started: float | None) -> AnomalyBook:
    """The book of a daemon that takes over (a restart, a failover) from the anomalies the state store
    kept: each open anomaly's condition held since its first seen (its listed partitions too, each aged
    already when listed), so it neither expires nor is made again while the condition lasts. A condition
    that was not yet an anomaly counts anew from the new daemon's first check."""
    since: dict[_Key, float] = {}
    for anomaly in anomalies:
        if anomaly.state.open:
            since[anomaly.key] = anomaly.first_seen
            for partition in anomaly.partitions:
                since[(*anomaly.key, partition)] = anomaly.first_seen
    return AnomalyBook(tuple(anomalies), MappingProxyType(since), last_fix_started)


def observe(
    book: AnomalyBook,
    offline: Collection[int],
    now: float,
    settings: HealingSettings,
    empty: Collection[int] = (),
    *,
    findings: Collection[Finding] = (),
    unjudged: Collection[AnomalyKind] = (),
) -> AnomalyBook:
    """The brokers offline now, the running brokers with no replica (`empty`) and the other detectors'
    `findings`: each detector enabled makes an anomaly of a condition held for its threshold (one per
    subject while it is open); an anomaly whose condition is gone expires unless its fix started.
    `unjudged`: kinds that cannot be judged now (a reassignment is in flight): left as they were."""
    enabled = settings.detectors
    seen = [f for f in (*broker_findings(offline, empty), *findings) if f.kind in enabled]
    book = replace(book, since=MappingProxyType(_clocks(book.since, seen, now, unjudged)))
    present = {f.key: f for f in seen}
    for anomaly in book.anomalies:
        if anomaly.kind in unjudged or not anomaly.state.open:
            continue
        finding = present.get(anomaly.key)
        aged = _aged(book, finding, now, settings) if finding is not None else None
        if aged is None:
            book = book.with_anomaly(anomaly.to(AnomalyState.EXPIRED, now, reason=_GONE[anomaly.kind]))
        elif anomaly.state is AnomalyState.DETECTED and anomaly.kind.about_partitions:
            book = book.with_anomaly(replace(anomaly, brokers=aged[0], partitions=aged[1], last_seen=now))
    for finding in sorted(seen, key=lambda f: (f.kind.value, f.subject)):
        aged = _aged(book, finding, now, settings)
        if aged is None or book.open_about(finding.key) is not None:
            continue
        if any(book.open_for(b) is not None for b in finding.brokers if not finding.kind.about_partitions):
            continue
        if _mended(book, finding):
            continue
        first = book.since[finding.key]
        anomaly_id = _id_of(finding.kind, finding.subject, first)
        if book.get(anomaly_id) is None:
            anomaly = Anomaly(anomaly_id, finding.kind, aged[0], first, now, partitions=aged[1])
            book = book.with_anomaly(replace(anomaly, subject=finding.subject, log_dir=finding.log_dir))
    return book


def _mended(book: AnomalyBook, finding: Finding) -> bool:
    """A failed log dir whose fix ran and that holds nothing now: its anomaly stays `fixed` while the dir
    stays failed, and no second one is made (a restarted daemon counts the dir anew from its first
    check, so the id of the fixed one, its first-seen time, does not match)."""
    if finding.kind is not AnomalyKind.LOG_DIR_OFFLINE or finding.partitions:
        return False
    return any(a.key == finding.key and a.state is AnomalyState.FIXED for a in book.anomalies)


def _clocks(
    since: Mapping[_Key, float], seen: Collection[Finding], now: float, unjudged: Collection[AnomalyKind]
) -> dict[_Key, float]:
    """Since when each condition seen now has held; a condition not seen now is forgotten (counts anew
    when seen again), unless its kind is unjudged."""
    kept = {k: t for k, t in since.items() if AnomalyKind(k[0]) in unjudged}
    for finding in seen:
        kept[finding.key] = since.get(finding.key, now)
        for partition in finding.partitions:
            key = (*finding.key, partition)
            kept[key] = since.get(key, now)
    return kept


def _by_number(partition: str) -> tuple[str, int]:
    """ "topic-partition" ordered as a TopicPartition is (t-3 before t-10), not as text."""
    topic, _, index = partition.rpartition("-")
    return (topic, int(index)) if index.isdigit() else (partition, -1)


def _aged(
    book: AnomalyBook, finding: Finding, now: float, settings: HealingSettings
) -> tuple[tuple[int, ...], tuple[str, ...]] | None:
    """(brokers, partitions) of the part of `finding` held for its threshold, None when none is."""
    threshold = _THRESHOLD[finding.kind](settings)
    if not finding.partitions:
        return (finding.brokers, ()) if now - book.since[finding.key] >= threshold else None
    old = sorted(
        (p for p in finding.partitions if now - book.since[(*finding.key, p)] >= threshold), key=_by_number
    )
    if not old:
        return None
    if not finding.kind.about_partitions:  # a log dir's: about its broker, whatever else holds them
        return finding.brokers, tuple(old)
    brokers = {b for p in old for b in finding.partitions[p]}
    return tuple(sorted(brokers)), tuple(old)


def _id_of(kind: AnomalyKind, subject: str, first: float) -> str:
    return f"{kind.value.replace('_', '-')}-{subject}-{int(first)}"


def adopted(anomaly_id: str, now: float) -> Anomaly:
    """An anomaly known only by its id (`kind-subject-first`), which its fix's plan carries (the daemon
    restarted, or took over as writer): its kind and subject (a broker, or the cluster) are read back."""
    kind_text, _, subject = anomaly_id.rpartition("-")[0].rpartition("-")
    try:
        kind = AnomalyKind(kind_text.replace("-", "_"))
        brokers = () if kind.about_partitions else (int(subject.partition("_")[0]),)
        if kind.about_partitions and subject != CLUSTER:
            raise ValueError(subject)
    except ValueError:  # not an id this module made: kept, but about no known broker
        kind, brokers, subject = AnomalyKind.BROKER_FAILURE, (-1,), "-1"
    return Anomaly(anomaly_id, kind, brokers, now, now, subject=subject)


_GONE: Final = {
    AnomalyKind.BROKER_FAILURE: "the broker is back",
    AnomalyKind.NEW_BROKER: "the broker holds replicas now, or stopped",
    AnomalyKind.RACK_SPREAD: "every partition spans as many racks as it can now",
    AnomalyKind.REPLICA_BALANCE: "every broker's replica count is within the band now",
    AnomalyKind.LEADER_BALANCE: "every broker's preferred-leader count is within the band now",
    AnomalyKind.BYTE_BALANCE: "every broker's bytes are within the byte band now",
    AnomalyKind.DISK_CAPACITY: "no broker's log dirs are used beyond the threshold now",
    AnomalyKind.UNDER_REPLICATED: "no partition stayed under-replicated with its brokers online",
    AnomalyKind.LOG_DIR_OFFLINE: "the log dir is back online, or its broker is not running",
}
_THRESHOLD: Final[Mapping[AnomalyKind, Callable[[HealingSettings], float]]] = {
    AnomalyKind.BROKER_FAILURE: lambda settings: settings.broker_failure_seconds,
    AnomalyKind.NEW_BROKER: lambda settings: settings.new_broker_seconds,
    AnomalyKind.RACK_SPREAD: lambda settings: settings.violation_seconds,
    AnomalyKind.REPLICA_BALANCE: lambda settings: settings.violation_seconds,
    AnomalyKind.LEADER_BALANCE: lambda settings: settings.violation_seconds,
    AnomalyKind.BYTE_BALANCE: lambda settings: settings.violation_seconds,
    AnomalyKind.DISK_CAPACITY: lambda settings: settings.violation_seconds,
    AnomalyKind.UNDER_REPLICATED: lambda settings: settings.under_replicated_seconds,
    AnomalyKind.LOG_DIR_OFFLINE: lambda settings: settings.log_dir_failure_seconds,
}


def anew(book: AnomalyBook, anomaly: Anomaly) -> AnomalyBook:
    """`anomaly` (ignored: its fix went stale before it started) kept, and its condition counted anew: a
    new anomaly, with a fix planned on the cluster as it is then, after its threshold."""
    book = book.with_anomaly(anomaly)
    since = {k: t for k, t in book.since.items() if k[:2] != anomaly.key}
    return replace(book, since=MappingProxyType(since))


def regated(book: AnomalyBook, gates: HealingSettings) -> AnomalyBook:
    """The gates changed: each anomaly `gates` refused (ignored, its rehearsal over one of them) whose
    condition has held since it was first seen counts anew, to be judged again by the new gates."""
    for anomaly in book.anomalies:
        if anomaly.state is not AnomalyState.IGNORED or anomaly.proposal is None:
            continue
        held = book.since.get(anomaly.key) == anomaly.first_seen
        if held and gate_refusals(anomaly.proposal.get("rehearsal") or {}, gates):
            book = anew(book, anomaly)
    return book


def fix_ended(book: AnomalyBook, anomaly: Anomaly, now: float, fixed: bool, reason: str = "") -> AnomalyBook:
    """Its fix's plan ended: `fixed` (completed) or ignored (cancelled, failed). A partition-level or
    balance condition that still holds then counts anew (a new anomaly after its threshold, with a new id:
    what its fix could not mend is seen, not hidden behind a `fixed` one); a broker's does not (its fix
    did what could be done while the broker is as it is)."""
    state = AnomalyState.FIXED if fixed else AnomalyState.IGNORED
    book = book.with_anomaly(anomaly.to(state, now, reason=reason))
    if not anomaly.kind.about_partitions:
        return book
    since = {k: t for k, t in book.since.items() if k[:2] != anomaly.key}
    return replace(book, since=MappingProxyType(since))


GATES = (
    ("bytes_to_move", "self.healing.max.bytes"),
    ("partitions", "self.healing.max.partitions"),
    ("predicted_duration_seconds", "self.healing.max.duration.seconds"),
)
"""The rehearsal's figure each of `HealingSettings.gates` bounds, and the gate's key."""


def gate_refusals(figures: Mapping[str, Any], settings: HealingSettings) -> list[str]:
    """The operator's gates a rehearsed fix breaks (none: it may run). `figures`: the rehearsal's
    `finished`, `bytes_to_move`, `partitions`, `predicted_duration_seconds`, `under_min_isr_seconds`,
    `rack_spread_worse` (partitions whose replicas would span fewer racks)."""
    refusals = []
    if not figures.get("finished"):
        refusals.append(f"the rehearsal did not finish: {figures.get('ended_because') or 'unknown'}")
    for (field_name, key), limit in zip(GATES, settings.gates, strict=True):
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

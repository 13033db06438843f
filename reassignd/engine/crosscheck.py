"""The store cross-checked against the cluster at start (issue 31: the store tells the truth about itself).

The writer keeps an ownership marker in Kafka (daemon/ownership.py writes it, cluster/marker.py carries it):
the store's journal sequence number, the plan and its state, and the throttle configs the store holds an
original for (what each was before our first write; None: absent). It is rewritten after each store commit
that changes a plan's state or the throttle originals, before the next cluster write. A starting writer
reads it back and compares it, here, with what its store and the cluster say. Pure: snapshots in, words out.

What is ours: a throttle config the marker names (we recorded its original before writing it), and a
reassignment in flight on a topic whose throttled-replicas list the marker names (the plan throttled that
topic) whose partition that list names now (our writes add each moving partition's entries): another
tool's move of a partition no list names is not ours. A marker too large for Kafka's
`offset.metadata.max.bytes` leaves configs out and says so (`partial`); cleanup never touches a config it
cannot prove is ours.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from reassignd.model import TopicPartition

MARKER_VERSION: Final = 1
METADATA_BUDGET: Final = 4000
"""Bytes of marker text at most: Kafka refuses offset metadata over `offset.metadata.max.bytes` (4096)."""
ACTIVE_STATES: Final = frozenset({"running", "paused", "cancelling"})

ConfigKey = tuple[str, str, str]
"""(resource type `broker` | `topic`, resource name, config key)."""

_EMPTY: Mapping[Any, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Marker:
    """What the writer last said about its store, kept in Kafka."""

    seq: int
    """The store's newest journal sequence number when the marker was written."""
    plan: str | None = None
    state: str | None = None
    """The plan's status then (`running`, `completed`, ...), or `recovered` after `reassignd recover`."""
    written: Mapping[ConfigKey, str | None] = field(default_factory=lambda: _EMPTY)
    """The throttle configs we wrote, each with its value before our first write (None: absent)."""
    partial: bool = False
    """Some configs were left out (too many for the marker): cleanup leaves what it cannot prove ours."""
    node: str = ""

    @property
    def topics(self) -> frozenset[str]:
        return frozenset(name for kind, name, _ in self.written if kind == "topic")

    def encode(self, budget: int = METADATA_BUDGET) -> str:
        """JSON within `budget` bytes: configs left out (largest originals first) until it fits."""
        items = sorted(self.written.items(), key=lambda kv: len(kv[1] or ""))
        partial = self.partial
        while True:
            body = {
                "v": MARKER_VERSION,
                "seq": self.seq,
                "plan": self.plan,
                "state": self.state,
                "node": self.node,
                "partial": partial,
                "written": [[*key, value] for key, value in items],
            }
            text = json.dumps(body, separators=(",", ":"), sort_keys=True)
            if len(text.encode()) <= budget or not items:
                return text
            items, partial = items[: max(0, len(items) * 3 // 4)], True

    @classmethod
    def decode(cls, text: str) -> Marker:
        """Raises ValueError on a marker this release cannot read."""
        body = json.loads(text)
        if not isinstance(body, dict) or body.get("v") != MARKER_VERSION:
            raise ValueError(f"unknown marker version {body.get('v') if isinstance(body, dict) else body!r}")
        written: dict[ConfigKey, str | None] = {}
        for kind, name, key, value in body.get("written") or ():
            written[(str(kind), str(name), str(key))] = None if value is None else str(value)
        return cls(
            seq=int(body["seq"]),
            plan=body.get("plan"),
            state=body.get("state"),
            written=MappingProxyType(written),
            partial=bool(body.get("partial")),
            node=str(body.get("node") or ""),
        )


@dataclass(frozen=True, slots=True)
class StoreSide:
    seq: int
    """The store's newest journal sequence number (0: an empty store)."""
    plans: Mapping[str, str]
    """Plan id → status, as the store has them."""
    originals: frozenset[ConfigKey]
    """The throttle configs the store holds an original for."""
    active: bool = False
    """The store has a plan queued, running, paused or cancelling: something it would go on with."""


@dataclass(frozen=True, slots=True)
class ClusterSide:
    in_flight: frozenset[TopicPartition]
    """Reassignments Kafka has in progress."""
    configs: Mapping[ConfigKey, str | None]
    """The current value of each config the marker names (None: absent)."""


def ours_in_flight(marker: Marker, cluster: ClusterSide) -> tuple[TopicPartition, ...]:
    """The reassignments in flight on a topic the marker names whose partition is on that topic's
    throttled-replicas lists now (our writes add every moving partition's entries to what was there). A
    move on a partition no list names is another tool's (`kafka-reassign-partitions` without --throttle,
    say) and is not ours to cancel; a `*` list cannot tell, and counts every move on the topic."""
    named: dict[str, set[int]] = {}
    wildcard: set[str] = set()
    for (kind, name, _key), value in cluster.configs.items():
        if kind != "topic" or name not in marker.topics:
            continue
        entries = [e.strip() for e in (value or "").split(",") if e.strip()]
        if "*" in entries:
            wildcard.add(name)
        partitions = (p for p, _, _b in (e.partition(":") for e in entries))
        named.setdefault(name, set()).update(int(p) for p in partitions if p.isdigit())

    def ours(tp: TopicPartition) -> bool:
        if tp.topic not in marker.topics:
            return False
        return tp.topic in wildcard or tp.partition in named.get(tp.topic, set())

    return tuple(sorted(tp for tp in cluster.in_flight if ours(tp)))


def still_set(marker: Marker, cluster: ClusterSide) -> tuple[ConfigKey, ...]:
    """The marker's configs whose value is not (or no longer known to be) what was there before us."""
    return tuple(sorted(k for k, before in marker.written.items() if cluster.configs.get(k) != before))


def findings(marker: Marker | None, store: StoreSide, cluster: ClusterSide) -> tuple[str, ...]:
    """What the comparison found, in words an operator can act on; () when the store explains the cluster.
    No marker (a cluster reassignd never wrote to, or one whose marker Kafka expired): nothing to compare.
    A store older than the marker is a finding unless nothing can mislead: the marker's plan had ended,
    the store has no plan to go on with, and the cluster shows nothing of ours (no move on the marker's
    topics, every config it names as before us): a new store on a cluster whose last writer finished
    cleanly (a replaced host, the next test on a shared cluster) starts as any new store does."""
    if marker is None:
        return ()
    plan = f"plan {marker.plan} ({marker.state})" if marker.plan else f"state {marker.state}"
    moving, left = ours_in_flight(marker, cluster), still_set(marker, cluster)
    reasons: list[str] = []
    if marker.seq > store.seq and (marker.state in ACTIVE_STATES or store.active or moving or left):
        what = "an empty store" if store.seq == 0 else f"the store ends at journal entry #{store.seq}"
        reasons.append(
            f"{what}, but this cluster's ownership marker says the writer's store reached #{marker.seq} "
            f"({plan}): the store lost its newest transactions (a restored backup, a replaced file, a "
            "damaged log, or a new state.dir)"
        )
    if marker.plan and marker.state in ACTIVE_STATES and marker.plan not in store.plans:
        reasons.append(f"the marker's {plan} is not in the store")
    unknown = [k for k in still_set(marker, cluster) if k not in store.originals]
    if unknown and not reasons:
        reasons.append(
            f"{len(unknown)} throttle config(s) our writes set are on the cluster with no original in the "
            f"store: {_listed(unknown)}"
        )
    if not reasons:
        return ()
    seen = (
        f"the cluster shows {len(moving)} reassignment(s) in flight on topics that plan throttled"
        f"{' (' + _moves(moving) + ')' if moving else ''} and {len(left)} throttle config(s) it set"
        f"{' (' + _listed(left) + ')' if left else ''}"
    )
    if marker.partial:
        seen += "; the marker could not list every config it set (only those listed are cleaned up)"
    action = (
        "`reassignd recover --mode cleanup` cancels those reassignments and restores those configs; "
        "`--mode adopt` goes on from the store as it is"
    )
    return (f"{'; '.join(reasons)}; {seen}. {action}",)


@dataclass(frozen=True, slots=True)
class Cleanup:
    """What `recover --mode cleanup` writes: reassignments cancelled, configs put back."""

    cancel: tuple[TopicPartition, ...]
    restore: Mapping[ConfigKey, str | None]
    """Each config's value before our first write (None: delete it)."""


def cleanup(marker: Marker | None, cluster: ClusterSide) -> Cleanup:
    if marker is None:
        return Cleanup((), _EMPTY)
    restore = {key: marker.written[key] for key in still_set(marker, cluster)}
    return Cleanup(ours_in_flight(marker, cluster), MappingProxyType(restore))


def _listed(keys: list[ConfigKey] | tuple[ConfigKey, ...], shown: int = 6) -> str:
    names = [f"{kind} {name} {key}" for kind, name, key in keys[:shown]]
    return ", ".join(names) + (f" and {len(keys) - shown} more" if len(keys) > shown else "")


def _moves(moves: tuple[TopicPartition, ...], shown: int = 6) -> str:
    names = [f"{tp.topic}-{tp.partition}" for tp in moves[:shown]]
    return ", ".join(names) + (f" and {len(moves) - shown} more" if len(moves) > shown else "")

"""The idle machine: what runs while no plan does. It restores the throttles a daemon that died after a
plan's end left behind (their originals are still in the store); whether the cluster answers is the
daemon's link (reachability.py), watched whatever runs.

    step(idle, event, limits) -> IdleTransition(idle, effects)

Events: `Contacted` (a snapshot of the leftovers' configs, read while there are any), `Answered`. It is
the throttle part of the plan-run machine, so a leftover is restored exactly as a plan's end restores it:
originals recorded and intents committed before the writes, applied writes journaled, originals forgotten
once nothing of ours is left.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from reassignd.engine.limits import Limits
from reassignd.engine.run import throttles
from reassignd.engine.run.effects import Answered, Effect, Log
from reassignd.engine.run.outbox import Outbox
from reassignd.engine.throttle_book import ThrottleBook, ThrottleSync
from reassignd.model import ClusterSnapshot


@dataclass(frozen=True, slots=True)
class Leftovers:
    """Throttles of ended plans still in the store: the book, and every stored plan's partitions."""

    book: ThrottleBook
    owned: Mapping[str, frozenset[int]]


@dataclass(frozen=True, slots=True)
class IdleRun:
    leftovers: Leftovers | None = None
    """None: nothing left to restore."""
    awaiting: ThrottleSync | None = None


@dataclass(frozen=True, slots=True)
class IdleRead:
    """What an idle cycle reads: with leftovers, the configs of their topics (every partition of them) and
    of the brokers; nothing (None) without."""

    topics: tuple[str, ...] | None


@dataclass(frozen=True, slots=True)
class Contacted:
    now: float
    snapshot: ClusterSnapshot
    """The leftovers' configs."""


IdleEvent = Contacted | Answered


@dataclass(frozen=True, slots=True)
class IdleTransition:
    idle: IdleRun
    effects: tuple[Effect, ...] = ()

    @property
    def awaits_answer(self) -> bool:
        return self.idle.awaiting is not None


def read(idle: IdleRun) -> IdleRead:
    left = idle.leftovers
    return IdleRead(None if left is None else tuple(sorted(left.book.originals.topics)))


def step(idle: IdleRun, event: IdleEvent, limits: Limits) -> IdleTransition:
    out = Outbox(None)
    if isinstance(event, Answered):
        return _restored(idle, event, out)
    left = idle.leftovers
    if left is None:
        return IdleTransition(idle)
    sync = throttles.synced(left.book, event.snapshot, (), limits, out, owned=left.owned)
    return IdleTransition(replace(idle, awaiting=sync), out.effects())


def _restored(idle: IdleRun, answer: Answered, out: Outbox) -> IdleTransition:
    left, sync = idle.leftovers, idle.awaiting
    if left is None or sync is None:
        return IdleTransition(idle)
    outcome = throttles.answered(sync, answer, out)
    fields = {"writes": len(outcome.applied), "restored": outcome.restored}
    out.say(Log("info", "start-up reconcile of leftover throttles", fields))
    after = None if outcome.restored else replace(left, book=outcome.book)
    return IdleTransition(replace(idle, leftovers=after, awaiting=None), out.effects())

"""The reachability part: whether the cluster answers the daemon, since when, why not, which brokers are
stopped. It is the daemon's link to the cluster, not a plan's: one value, whatever runs (a plan, the
idle machine, nothing yet), stepped by what the daemon learns of the cluster.

Two sources report, each on its own: the cycle's reads (`read`: a plan's snapshot, the idle machine's
read), and the reachability probe (`probe`: one cheap request with a short deadline every few seconds,
independent of the cycle, so a cycle stuck in client retries cannot hide an outage). The cluster is
reachable while neither source's last attempt failed: a failure of either makes it unreachable at once,
and it is reachable again once every source that failed has answered since. Each change is said once
(logged and notified), not every cycle; the first failure is said at once, also before any contact.

While it is unreachable no broker answers the daemon: every broker the last read listed is shown
unreachable (`offline_brokers`), not the few that read found stopped; once the cluster answers again, the
last read's view is shown until the next read.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from reassignd.engine.run.effects import Log, Notify

Source = Literal["read", "probe"]


@dataclass(frozen=True, slots=True)
class Reachability:
    reachable: bool = False
    """False until the cluster first answered, and while a source's last attempt failed."""
    since: float | None = None
    """When `reachable` last changed (or the daemon started, before the first answer)."""
    unreachable_brokers: tuple[int, ...] = ()
    """Stopped brokers, as the last snapshot read reported them."""
    error: str | None = None
    """Why the cluster cannot be read, while it cannot (None before the first failure)."""
    failing: frozenset[Source] = frozenset()
    """The sources whose last attempt failed."""
    contacted: bool = False
    """The cluster answered once since the daemon started."""
    brokers: tuple[int, ...] = ()
    """Every broker the last snapshot read listed (running or stopped)."""

    @property
    def offline_brokers(self) -> tuple[int, ...]:
        """The brokers that do not answer the daemon: those the last read found stopped while the cluster
        is reachable; every broker it listed while it is not (none answers)."""
        if self.reachable:
            return self.unreachable_brokers
        return tuple(sorted({*self.brokers, *self.unreachable_brokers}))

    def to_json(self) -> dict[str, Any]:
        return {
            "reachable": self.reachable,
            "since": self.since,
            "unreachable_brokers": list(self.offline_brokers),
            "error": None if self.reachable else self.error,
        }


def starting(now: float) -> Reachability:
    """The daemon's link before any answer: not reachable yet, since its start."""
    return Reachability(since=now)


@dataclass(frozen=True, slots=True)
class Reached:
    """A source's attempt answered; `stopped`: the brokers a snapshot reports stopped, `brokers`: every
    broker it lists (None: not read)."""

    now: float
    source: Source
    stopped: tuple[int, ...] | None = None
    brokers: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class Unreachable:
    """A source's attempt failed (or was abandoned because the other source found the cluster gone)."""

    now: float
    source: Source
    error: str


LinkEvent = Reached | Unreachable


@dataclass(frozen=True, slots=True)
class LinkTransition:
    link: Reachability
    said: tuple[Log | Notify, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.said)


def step(link: Reachability, event: LinkEvent, plan_id: str | None = None) -> LinkTransition:
    """The link after `event`, and what to say about it (`plan_id`: the plan in progress, named in the
    lines and notifications)."""
    if isinstance(event, Unreachable):
        return _lost(link, event, plan_id)
    return _reached(link, event, plan_id)


def _reached(link: Reachability, event: Reached, plan_id: str | None) -> LinkTransition:
    said: list[Log | Notify] = []
    failing = link.failing - {event.source}
    brokers = link.unreachable_brokers if event.stopped is None else event.stopped
    listed = link.brokers if event.brokers is None else event.brokers
    now = link
    if not link.reachable and not failing:
        if link.error is not None:
            said += [
                Log("info", "the cluster is reachable again", _fields(plan_id)),
                Notify("cluster.reachable", _about(plan_id)),
            ]
        now = replace(link, reachable=True, since=event.now, error=None, contacted=True)
    if brokers != link.unreachable_brokers:
        said.append(Log("warning" if brokers else "info", "brokers offline", {"brokers": list(brokers)}))
    return LinkTransition(
        replace(now, failing=failing, unreachable_brokers=brokers, brokers=listed), tuple(said)
    )


def _lost(link: Reachability, event: Unreachable, plan_id: str | None) -> LinkTransition:
    failing = link.failing | {event.source}
    if not link.reachable and link.error is not None:  # said when it first failed; the cause may change
        return LinkTransition(replace(link, failing=failing, error=event.error))
    since = event.now if link.reachable or link.since is None else link.since
    said = (
        Log("error", "the cluster cannot be reached", {**_fields(plan_id), "error": event.error}),
        Notify("cluster.unreachable", {**_about(plan_id), "error": event.error}),
    )
    return LinkTransition(
        replace(link, reachable=False, since=since, error=event.error, failing=failing), said
    )


def _fields(plan_id: str | None) -> dict[str, str]:
    return {} if plan_id is None else {"plan": plan_id}


def _about(plan_id: str | None) -> dict[str, str]:
    return {} if plan_id is None else {"plan_id": plan_id}

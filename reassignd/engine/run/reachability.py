"""The reachability part: whether the cluster answers, since when, and which brokers are stopped.

A read that fails makes the cluster unreachable; the next one that succeeds makes it reachable again.
Each change is logged and notified once, not every cycle. The plan-run machine and the idle machine
(idle.py) both keep one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reassignd.engine.run.effects import Log, Notify
from reassignd.engine.run.outbox import Outbox


@dataclass(frozen=True, slots=True)
class Reachability:
    reachable: bool = True
    since: float | None = None
    unreachable_brokers: tuple[int, ...] = ()
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "reachable": self.reachable,
            "since": self.since,
            "unreachable_brokers": list(self.unreachable_brokers),
        }


def reached(cluster: Reachability, now: float, down: tuple[int, ...] | None, out: Outbox) -> Reachability:
    """The cluster answered; `down` are the brokers it reports stopped (None: not asked)."""
    since = cluster.since
    if not cluster.reachable:
        since = now
        out.before += [
            Log("info", "the cluster is reachable again", out.plan_fields),
            Notify("cluster.reachable", out.about),
        ]
    elif since is None:
        since = now
    if down is None:
        return Reachability(True, since)
    if down != cluster.unreachable_brokers:
        out.before.append(Log("warning" if down else "info", "brokers offline", {"brokers": list(down)}))
    return Reachability(True, since, down)


def lost(cluster: Reachability, now: float, error: str, out: Outbox) -> Reachability:
    """The cluster could not be read: unreachable since now, or since it first failed."""
    if not cluster.reachable:
        return cluster
    out.before += [
        Log("error", "the cluster cannot be reached", {**out.plan_fields, "error": error}),
        Notify("cluster.unreachable", {**out.about, "error": error}),
    ]
    return Reachability(False, now, cluster.unreachable_brokers, error)

"""What the controller shows of itself: an immutable view it publishes after every cycle and every change
it makes. Status, listing and the foreign cancel read only this; a request served while a cycle runs
sees the state before the cycle, which is what the store holds."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from reassignd.daemon.service import JSON
from reassignd.engine import Limits
from reassignd.engine.run import Reachability, RunState
from reassignd.engine.throttle_book import ThrottleBook
from reassignd.model import TopicPartition
from reassignd.store.aio import StoreState
from reassignd.store.base import PlanSummary

_EMPTY: Mapping[Any, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ControllerView:
    records: Mapping[str, PlanSummary] = field(default_factory=lambda: _EMPTY)
    """Every plan the store keeps, by id."""
    run: RunState | None = None
    """The run this daemon executes, if any (ended or not)."""
    limits: Limits = field(default_factory=Limits)
    cluster: Reachability = field(default_factory=Reachability)
    last_status: str = "starting"
    is_leader: bool = True
    leader_address: str | None = None
    writer: JSON | None = None
    """Who holds the cluster's writer right: {"self", "node", "url"} (None: this daemon takes no part)."""
    store: StoreState = field(default_factory=StoreState)
    findings: tuple[str, ...] = ()
    """What the store found wrong with itself at open; every cluster write held until `recover`."""
    decommissioned: tuple[int, ...] = ()
    """The brokers marked decommissioned (daemon/roles.py): they receive no replica."""

    @property
    def active(self) -> RunState | None:
        """The run of the plan in progress (not ended)."""
        return self.run if self.run is not None and not self.run.ended else None

    @property
    def throttles(self) -> ThrottleBook:
        return self.run.throttles if self.run is not None else ThrottleBook()

    def ours(self) -> dict[TopicPartition, str]:
        """The partitions of the plan in progress, with its id."""
        active = self.active
        return dict.fromkeys(active.plan.targets, active.plan_id) if active else {}

    def health(self) -> JSON:
        return {"status": "ok", "last_cycle": self.last_status}

    def readiness(self) -> JSON:
        if not self.store.available:
            return {
                "ready": False,
                "reason": "store unavailable",
                "role": "leader" if self.is_leader else "standby",
                "leader": None if self.is_leader else self.leader_address,
                "store": store_view(self.store, self.findings),
            }
        if not self.is_leader and not self.waits_for_the_writer_right():
            reason = "another reassignd writes" if self.writer else "standby"
            return {"ready": True, "reason": reason, "role": "standby", "leader": self.leader_address}
        if self.cluster.reachable:
            if not self.is_leader:  # the cluster answers; the writer group has not decided yet
                return {"ready": True, "reason": "standby", "role": "standby", "leader": None}
            return {"ready": True, "reason": "ok", "role": "leader", "leader": None}
        role = "leader" if self.is_leader else "standby"
        if self.cluster.error is None:
            return {"ready": False, "reason": "no cluster contact yet", "role": role, "leader": None}
        return {
            "ready": False,
            "reason": "cluster unreachable",
            "role": role,
            "leader": None,
            "cluster": cluster_view(self.cluster),
        }

    def waits_for_the_writer_right(self) -> bool:
        """Takes part in the writer group and nobody holds the right yet (at start, or while the cluster
        cannot be reached): readiness is then the cluster's, as for the writer itself."""
        writer = self.writer
        no_leader_named = self.leader_address is None  # an HA standby names the elected one
        return no_leader_named and writer is not None and not writer["self"] and writer.get("node") is None


def cluster_view(cluster: Reachability) -> JSON:
    """Reachability for the API: since when, and why the cluster cannot be read (the cause and the setting
    to check, as the cluster adapter words it) while it cannot."""
    return {**cluster.to_json(), "since": iso_time(cluster.since)}


def store_view(store: StoreState, findings: tuple[str, ...] = ()) -> JSON:
    """The store for the API: available, or unavailable since when and why (the storage's own words);
    what it found wrong with itself at open (every cluster write held until `reassignd recover`)."""
    return {
        "available": store.available,
        "since": iso_time(store.since),
        "error": store.error,
        "findings": list(findings),
    }


def iso_time(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).isoformat().replace("+00:00", "Z")

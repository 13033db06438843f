"""The boundary between the controller and everything that steers it (HTTP API, CLI, MQTT commands).

Operators' front ends call only this protocol; the controller implements it. Results are JSON-ready dicts
whose shapes are documented in the OpenAPI document (reassignd/daemon/openapi.json), so every front end
speaks the same language. Failures raise `ServiceError` with a stable code; the API maps them to HTTP
statuses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from reassignd.model import Problem, ReassignmentPlan

JSON = dict[str, Any]


@dataclass
class ServiceError(Exception):
    """A refusal with a stable, machine-readable code.

    codes and the HTTP status the API gives them:
      invalid_plan 422 (details.problems lists every problem), invalid_request 400, not_found 404,
      conflict 409 (e.g. the plan overlaps the running one, nothing to pause), not_leader 421 (details.leader
      holds the leader's API address), unavailable 503 (no cluster contact yet).
    """

    code: str
    message: str
    problems: tuple[Problem, ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def to_json(self) -> JSON:
        body: JSON = {"code": self.code, "message": self.message}
        if self.problems:
            body["problems"] = [
                {"where": p.where, "field": p.field, "message": p.message} for p in self.problems
            ]
        if self.details:
            body["details"] = dict(self.details)
        return {"error": body}


class ControllerService(Protocol):
    """What the daemon offers its operators. Mutations are only accepted by the leading daemon."""

    # --- plans -------------------------------------------------------------------------------------------
    async def submit_plan(
        self,
        plan: ReassignmentPlan,
        *,
        dry_run: bool = False,
        allow_rf_change: bool = False,
        name: str | None = None,
        allow_decommissioned: bool = False,
    ) -> JSON:
        """Validate the whole plan against the live cluster, then queue it (or, with dry_run, only report).

        Returns {"plan_id", "state", "partitions", "replicas_to_move", "bytes_to_move", "steps": {...}}.
        Raises ServiceError("invalid_plan", problems=...) listing every problem; nothing is applied. A replica
        added on a decommissioned broker is a problem unless `allow_decommissioned`.
        """
        ...

    def list_plans(self) -> list[JSON]:
        """Every plan, newest first: {"plan_id", "state", "submitted_at", "partitions", "progress": {...}}."""
        ...

    async def journal(self, query: Mapping[str, Any]) -> JSON:
        """A page of the journal: {"entries": [{"seq", "at", "kind", "plan_id", "partition", "step", "by",
        "data"}], "next_after"}; `query` as daemon/journal.py's parse_query returns it."""
        ...

    def plan_status(self, plan_id: str | None = None) -> JSON:
        """One plan (the running one when plan_id is None) with progress in partitions and bytes, ETA,
        per-broker movements and limits, throttle rates, stalled moves, waiting reasons."""
        ...

    def daemon_status(self) -> JSON:
        """`GET /v1/status`: the cluster's reachability first, then the plan in progress (as
        `plan_status()`), or `{"cluster", "plan_id": null, "state": "idle", "last_cycle"}` when none is."""
        ...

    async def pause(self, plan_id: str | None = None) -> JSON: ...

    async def resume(self, plan_id: str | None = None) -> JSON: ...

    async def cancel(self, plan_id: str | None = None) -> JSON: ...

    # --- live tuning ---------------------------------------------------------------------------------------
    def limits(self) -> JSON:
        """The reassignment limits in force, by their KIP names."""
        ...

    async def set_limits(self, changes: Mapping[str, Any]) -> JSON:
        """Change limits (KIP names) from the next decision on; all-or-nothing validation."""
        ...

    async def reset_limits(self, keys: list[str] | None = None) -> JSON:
        """Undo runtime changes of `keys` (all when None): the config file's values apply again."""
        ...

    def throttles(self) -> JSON:
        """The rates in force by their KIP names, and per broker what is applied: {"applied": {...}}."""
        ...

    async def set_throttles(self, changes: Mapping[str, Any]) -> JSON:
        """Change throttle rates; applied at once to in-flight moves."""
        ...

    # --- cluster view --------------------------------------------------------------------------------------
    async def cluster_reassignments(self) -> list[JSON]:
        """Reassignments the cluster reports, each {"topic", "partition", "replicas", "adding", "removing",
        "owner": "reassignd" | "foreign", "plan_id"}."""
        ...

    async def cancel_foreign(self, request: Mapping[str, Any]) -> JSON:
        """Cancel the reassignments reassignd does not own that `request` selects ({"topics"?: regex,
        "partitions"?: [...]}), never one on a partition of the running plan; journaled. Answers
        {"cancelled", "failed", "skipped"}."""
        ...

    async def place(self, request: Mapping[str, Any]) -> JSON:
        """KIP-879 CreateReplicaPlacement over the live cluster view."""
        ...

    async def recover(self, request: Mapping[str, Any]) -> JSON:
        """The operator's decision on what the store found wrong with itself at start ({"mode":
        "adopt"}): the hold on cluster writes ends. Answers {"mode", "adopted", "status"}."""
        ...

    # --- brokers' roles and re-targets (daemon/roles.py) -----------------------------------------------
    async def broker_roles(self) -> JSON:
        """Every broker with its lasting role: {"brokers": [...], "decommissioned": [ids]}."""
        ...

    async def decommission(self, broker: Any, request: Mapping[str, Any]) -> JSON:
        """Mark a broker decommissioned ({"drain"?: bool, "reason"?: str}); with drain, queue its drain plan
        in the same commit. Answers {"broker", "role", "changed", "drain"?}."""
        ...

    async def recommission(self, broker: Any) -> JSON:
        """Take the decommissioned role away; nothing moves. Answers {"broker", "role", "changed"}."""
        ...

    async def retarget(self, plan_id: str | None = None) -> JSON:
        """New targets for the partitions of the running plan that wait on a broker that is gone, swapped
        into the run. Answers {"plan_id", "gone", "retargeted", "unplaced"}."""
        ...

    # --- self-healing (daemon/healing.py) -------------------------------------------------------------------
    def anomalies(self) -> JSON:
        """{"mode", "anomalies": [{"id", "kind", "brokers", "state", "first_seen", "last_seen", "reason",
        "plan_id", "proposal": {"plan", "rehearsal"} | None}]}."""
        ...

    async def approve_anomaly(self, anomaly_id: str) -> JSON:
        """`propose` mode: the operator's go for a proposed fix; answers the anomaly (executing once
        queued)."""
        ...

    # --- health --------------------------------------------------------------------------------------------
    def health(self) -> JSON:
        """Liveness: the process and its supervisor run. {"status": "ok", ...}."""
        ...

    def readiness(self) -> JSON:
        """{"ready": bool, "reason": str, "role": "leader" | "standby", "leader": address | None}."""
        ...

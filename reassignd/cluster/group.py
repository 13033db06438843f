"""Kafka's group membership requests for the one-writer lease (reassignd/daemon/writer.py), on a kafka-python
client of their own: a JoinGroup parks on the coordinator for up to the rebalance timeout, and must hold
none of the admin calls' connections meanwhile. Blocking calls: run them off the event loop."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reassignd.cluster._kafka_python import (
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    KafkaAdminClient,
    LeaveGroupRequest,
    SyncGroupRequest,
)
from reassignd.cluster.errors import from_exception
from reassignd.cluster.replaceable import ReplaceableClient

GROUP_KEY_TYPE = 0
NONE, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOADING = 0, 16, 15, 14
ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS, MEMBER_ID_REQUIRED = 22, 25, 27, 79
COORDINATOR_ERRORS = frozenset({NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOADING})
"""Kafka's answers that the group's coordinator is elsewhere or not ready yet: ask FindCoordinator again."""
FENCING_ERRORS = frozenset({ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID})
"""Kafka's answers that the member asking is not (or no longer) the group's member in that generation."""


class GroupTransport:
    """Sends one group request at a time to the group's coordinator (or any broker, for FindCoordinator)."""

    def __init__(self, kafka_python_config: Mapping[str, Any]) -> None:
        self._client = ReplaceableClient(kafka_python_config, KafkaAdminClient, _closed_error)

    def send(self, request: Any, node_id: int | None, timeout_seconds: float) -> Any:
        """One request; a failure the broker did not answer itself (no Kafka code) replaces the client.
        kafka-python's metadata forgets a broker that stopped and, asked for it once it is back, answers
        UnknownBrokerIdError until a refresh that never came: after a full outage the writer group
        retried its coordinator for minutes (tests/daemon/test_e2e_failures.py, the one-minute outage)."""
        client = self._client.get()
        manager = client._manager
        timeout_ms = int(timeout_seconds * 1000)

        async def call() -> Any:
            future = manager.send(request, node_id=node_id, request_timeout_ms=timeout_ms)
            return await manager.wait_for(future, timeout_ms + 1000)

        try:
            return manager.run(call)
        except Exception as exc:
            if from_exception(exc).code is None:
                self._client.discard(client)
            raise

    def find_coordinator(self, group: str, timeout_seconds: float) -> tuple[int, int]:
        """(error code, coordinator node id)."""
        request = FindCoordinatorRequest(key=group, key_type=GROUP_KEY_TYPE, coordinator_keys=[group])
        response = self.send(request, None, timeout_seconds)
        rows = getattr(response, "coordinators", None)
        row = rows[0] if rows else response
        return int(row.error_code), int(row.node_id)

    def join(
        self,
        node_id: int,
        *,
        group: str,
        member_id: str,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        session_ms: int,
        rebalance_ms: int,
        timeout_seconds: float,
    ) -> Any:
        request = JoinGroupRequest(
            group_id=group,
            session_timeout_ms=session_ms,
            rebalance_timeout_ms=rebalance_ms,
            member_id=member_id,
            group_instance_id=None,
            protocol_type=protocol_type,
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name=n, metadata=m) for n, m in protocols],
            min_version=4,  # a known member id is required (MEMBER_ID_REQUIRED), KIP-394
        )
        return self.send(request, node_id, timeout_seconds)

    def sync(
        self,
        node_id: int,
        *,
        group: str,
        generation: int,
        member_id: str,
        protocol_type: str,
        protocol_name: str,
        assignments: Mapping[str, bytes],
        timeout_seconds: float,
    ) -> Any:
        request = SyncGroupRequest(
            group_id=group,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=None,
            protocol_type=protocol_type,
            protocol_name=protocol_name,
            assignments=[
                SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a)
                for m, a in assignments.items()
            ],
        )
        return self.send(request, node_id, timeout_seconds)

    def heartbeat(self, node_id: int, group: str, generation: int, member_id: str, timeout: float) -> int:
        request = HeartbeatRequest(
            group_id=group, generation_id=generation, member_id=member_id, group_instance_id=None
        )
        return int(self.send(request, node_id, timeout).error_code)

    def leave(self, node_id: int, group: str, member_id: str, timeout: float) -> None:
        request = LeaveGroupRequest(
            group_id=group,
            member_id=member_id,
            members=[LeaveGroupRequest.MemberIdentity(member_id=member_id, reason="reassignd stopping")],
        )
        self.send(request, node_id, timeout)

    def close(self) -> None:
        """Never waits for a client still bootstrapping (replaceable.py); closes the current one."""
        client = self._client.close()
        if client is not None:
            client.close()


def _closed_error() -> RuntimeError:
    return RuntimeError("the group client is closed")

"""Kafka's classic group membership protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), for the groups
of dynamic members that reassignd uses as its one-writer lease (docs/ha.md, "One writer per cluster").

The rules are Kafka's, from apache/kafka group-coordinator/src/main/java/org/apache/kafka/coordinator/group/
GroupMetadataManager.java (classicGroupJoin*, completeClassicGroupJoin, prepareRebalance,
classicGroupSyncToClassicGroup, classicGroupHeartbeatToClassicGroup, expireClassicGroupMemberHeartbeat) and
classic/ClassicGroup.java (add, remove, maybeElectNewJoinedLeader, hasAllMembersJoined, initNextGeneration):

- a new dynamic member (JoinGroup v4+) is first given a member id with MEMBER_ID_REQUIRED and joins with it;
- a group that was Empty waits `group.initial.rebalance.delay.ms` (3 s), extended while members keep
  arriving, before its first generation; later rebalances complete once every member rejoined, or at the
  rebalance timeout (the largest of the members'), when members that did not rejoin are removed;
- the leader stays the leader across rebalances while it rejoins; a leader removed (session expired, left,
  did not rejoin) is replaced by another member (the first remaining; Kafka's HashMap order is arbitrary);
- Heartbeat: REBALANCE_IN_PROGRESS while preparing a rebalance (the session is still extended), NONE while
  completing one or stable, ILLEGAL_GENERATION for another generation, UNKNOWN_MEMBER_ID for a stranger;
- a member's session expires `session.timeout.ms` after its last heartbeat (or join or sync), except while it
  awaits a JoinGroup or SyncGroup answer; a new member awaiting its first join may expire;
- SyncGroup: the leader's assignments are handed to every member; followers wait for them.

Not modelled: static members (group.instance.id), the consumer (KIP-848) protocol, group size limits, the
pending-sync expiry, and moving the group's state between coordinators (it is one state here; the
coordinator is the broker FindCoordinator names, which moves only when that broker stops). Time is the
broker's clock (wall time), not the simulation's: group timeouts are what the daemon's lease is measured
against, on the wall clock of both sides.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

NONE = 0
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
ILLEGAL_GENERATION = 22
OFFSET_METADATA_TOO_LARGE = 12
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
GROUP_ID_NOT_FOUND = 69
MEMBER_ID_REQUIRED = 79

EMPTY, PREPARING_REBALANCE = "Empty", "PreparingRebalance"
COMPLETING_REBALANCE, STABLE = "CompletingRebalance", "Stable"

# Kafka's broker defaults (GroupCoordinatorConfig): group.initial.rebalance.delay.ms,
# group.min.session.timeout.ms, group.max.session.timeout.ms
INITIAL_REBALANCE_DELAY_MS = 3000
MIN_SESSION_TIMEOUT_MS = 6000
MAX_SESSION_TIMEOUT_MS = 1_800_000
OFFSET_METADATA_MAX_BYTES = 4096  # offset.metadata.max.bytes
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000  # GroupCoordinatorConfig.CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS

Reply = Callable[[dict[str, Any]], None]


@dataclass
class Member:
    member_id: str
    client_id: str
    protocols: list[tuple[str, bytes]]
    session_ms: int
    rebalance_ms: int
    expires_at: float
    is_new: bool = True
    join_reply: Reply | None = None
    sync_reply: Reply | None = None
    assignment: bytes = b""

    def metadata(self, protocol: str | None) -> bytes:
        return next((m for name, m in self.protocols if name == protocol), b"")


@dataclass
class Group:
    group_id: str
    state: str = EMPTY
    previous_state: str = EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    pending: dict[str, float] = field(default_factory=dict)  # member ids handed out, not yet joined
    join_deadline: float | None = None
    initial_remaining_ms: int = 0
    new_member_added: bool = False

    def transition(self, state: str) -> None:
        self.previous_state, self.state = self.state, state

    def rebalance_ms(self) -> int:
        return max((m.rebalance_ms for m in self.members.values()), default=0)

    def all_joined(self) -> bool:
        return all(m.join_reply is not None for m in self.members.values()) and not self.pending

    def remove(self, member_id: str) -> None:
        self.members.pop(member_id, None)
        self.pending.pop(member_id, None)
        if self.leader == member_id:
            self.leader = next(iter(self.members), None)


class GroupCoordinator:
    """Every group of the simulated cluster; `tick()` fires the timers (call it often, and it is called on
    every request). `clock` is in seconds."""

    def __init__(
        self, clock: Callable[[], float], initial_rebalance_delay_ms: int = INITIAL_REBALANCE_DELAY_MS
    ) -> None:
        self.clock = clock
        self.initial_delay_ms = initial_rebalance_delay_ms
        self.groups: dict[str, Group] = {}
        self.offsets: dict[str, dict[tuple[str, int], tuple[int, str | None]]] = {}
        """Committed offsets per group: (topic, partition) → (offset, metadata). Kept while the group is
        Empty (Kafka keeps them until offsets.retention.minutes after it emptied; never expired here)."""
        self._ids = itertools.count(1)

    # -- requests ------------------------------------------------------------------------------------

    def join(
        self,
        *,
        group_id: str,
        member_id: str,
        client_id: str,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        session_ms: int,
        rebalance_ms: int,
        reply: Reply,
        requires_known_member_id: bool = True,
    ) -> None:
        """`reply` is called with the JoinGroup answer, now or when the join phase completes."""
        self.tick()
        if not group_id:
            return reply({"error": INVALID_GROUP_ID, "member_id": member_id})
        if not MIN_SESSION_TIMEOUT_MS <= session_ms <= MAX_SESSION_TIMEOUT_MS:
            return reply({"error": INVALID_SESSION_TIMEOUT, "member_id": member_id})
        group = self.groups.get(group_id)
        if group is None:
            if member_id:
                return reply({"error": UNKNOWN_MEMBER_ID, "member_id": member_id})
            group = self.groups[group_id] = Group(group_id)
        if not protocols or (group.members and group.protocol_type != protocol_type):
            return reply({"error": INCONSISTENT_GROUP_PROTOCOL, "member_id": member_id})
        if not member_id:
            new_id = f"{client_id}-{next(self._ids):08d}"
            if requires_known_member_id:
                group.pending[new_id] = self.clock() + session_ms / 1000
                return reply({"error": MEMBER_ID_REQUIRED, "member_id": new_id})
            member_id = new_id
        if member_id in group.pending:
            group.pending.pop(member_id)
            self._add(
                group,
                member_id=member_id,
                client_id=client_id,
                protocol_type=protocol_type,
                protocols=protocols,
                session_ms=session_ms,
                rebalance_ms=rebalance_ms,
                reply=reply,
            )
            return None
        member = group.members.get(member_id)
        if member is None:
            return reply({"error": UNKNOWN_MEMBER_ID, "member_id": member_id})
        changed = member.protocols != protocols
        member.protocols, member.session_ms, member.rebalance_ms = protocols, session_ms, rebalance_ms
        if group.state == PREPARING_REBALANCE:
            member.join_reply = reply
            self._maybe_complete_join(group)
        elif not changed and (
            group.state == COMPLETING_REBALANCE or (group.state == STABLE and group.leader != member_id)
        ):
            reply(self._join_answer(group, member))
        else:  # the leader rejoining, or new metadata: a rebalance
            member.join_reply = reply
            self._prepare_rebalance(group)
        return None

    def sync(
        self,
        *,
        group_id: str,
        generation: int,
        member_id: str,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes],
        reply: Reply,
    ) -> None:
        self.tick()
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group else None
        if group is None or member is None:
            return reply({"error": UNKNOWN_MEMBER_ID})
        if generation != group.generation:
            return reply({"error": ILLEGAL_GENERATION})
        if (protocol_type is not None and protocol_type != group.protocol_type) or (
            protocol_name is not None and protocol_name != group.protocol_name
        ):
            return reply({"error": INCONSISTENT_GROUP_PROTOCOL})
        if group.state == PREPARING_REBALANCE:
            return reply({"error": REBALANCE_IN_PROGRESS})
        if group.state == STABLE:
            self._reschedule(member)
            return reply(self._sync_answer(group, member, NONE))
        member.sync_reply = reply
        if group.leader == member_id:
            for each in group.members.values():
                each.assignment = assignments.get(each.member_id, b"")
            self._propagate(group, NONE)
            group.transition(STABLE)
        return None

    def heartbeat(self, group_id: str, generation: int, member_id: str) -> int:
        self.tick()
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group else None
        if group is None or member is None:
            return UNKNOWN_MEMBER_ID
        if generation != group.generation:
            return ILLEGAL_GENERATION
        if group.state == EMPTY:
            return UNKNOWN_MEMBER_ID
        self._reschedule(member)
        return REBALANCE_IN_PROGRESS if group.state == PREPARING_REBALANCE else NONE

    def leave(self, group_id: str, member_ids: list[str]) -> list[int]:
        self.tick()
        group = self.groups.get(group_id)
        errors = []
        for member_id in member_ids:
            member = group.members.get(member_id) if group else None
            if group is None or (member is None and member_id not in group.pending):
                errors.append(UNKNOWN_MEMBER_ID)
                continue
            if member is not None:
                self._remove_member(group, member)
            else:
                group.pending.pop(member_id, None)
                if group.state == PREPARING_REBALANCE:
                    self._maybe_complete_join(group)
            errors.append(NONE)
        return errors

    def commit_offsets(
        self,
        group_id: str,
        member_id: str,
        generation: int,
        offsets: dict[tuple[str, int], tuple[int, str | None]],
        *,
        api_version: int = 9,
    ) -> int:
        """OffsetCommit's group checks, as OffsetMetadataManager.validateOffsetCommit and
        ClassicGroup.validateOffsetCommit make them: no check of the protocol type, so a group of ours
        (protocol type `reassignd`) commits as a consumer group does. Returns the error code (0: stored)."""
        self.tick()
        group = self.groups.get(group_id)
        if group is None:
            if generation >= 0:
                return GROUP_ID_NOT_FOUND if api_version >= 9 else ILLEGAL_GENERATION
            group = self.groups[group_id] = Group(group_id)  # a "simple" group, Empty
        if not (generation < 0 and group.state == EMPTY):
            if generation >= 0 or member_id:
                if member_id not in group.members:
                    return UNKNOWN_MEMBER_ID
                if generation != group.generation:
                    return ILLEGAL_GENERATION
            elif group.state != EMPTY:
                return UNKNOWN_MEMBER_ID
            if group.state == COMPLETING_REBALANCE:
                return REBALANCE_IN_PROGRESS
        if any(len((meta or "").encode()) > OFFSET_METADATA_MAX_BYTES for _, meta in offsets.values()):
            return OFFSET_METADATA_TOO_LARGE
        self.offsets.setdefault(group_id, {}).update(offsets)
        return NONE

    def fetch_offsets(self, group_id: str) -> dict[tuple[str, int], tuple[int, str | None]]:
        return dict(self.offsets.get(group_id, {}))

    def describe(self, group_id: str) -> dict[str, Any] | None:
        group = self.groups.get(group_id)
        if group is None:
            return None
        return {
            "state": group.state,
            "generation": group.generation,
            "leader": group.leader,
            "members": list(group.members),
        }

    # -- timers ----------------------------------------------------------------------------------------

    def tick(self) -> None:
        now = self.clock()
        for group in list(self.groups.values()):
            for member_id, deadline in list(group.pending.items()):
                if now >= deadline:
                    group.pending.pop(member_id)
                    if group.state == PREPARING_REBALANCE:
                        self._maybe_complete_join(group)
            for member in list(group.members.values()):
                awaiting = member.join_reply is not None or member.sync_reply is not None
                satisfied = not member.is_new and awaiting
                if now >= member.expires_at and not satisfied and member.member_id in group.members:
                    self._remove_member(group, member)
            if group.join_deadline is not None and now >= group.join_deadline:
                group.join_deadline = None
                if group.initial_remaining_ms and group.new_member_added:
                    group.new_member_added = False
                    delay = min(self.initial_delay_ms, group.initial_remaining_ms)
                    group.initial_remaining_ms = max(group.initial_remaining_ms - delay, 0)
                    group.join_deadline = now + delay / 1000
                else:
                    group.initial_remaining_ms = 0
                    self._complete_join(group)

    # -- Kafka's state machine -------------------------------------------------------------------------

    def _add(
        self,
        group: Group,
        *,
        member_id: str,
        client_id: str,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        session_ms: int,
        rebalance_ms: int,
        reply: Reply,
    ) -> None:
        if group.state == PREPARING_REBALANCE and group.previous_state == EMPTY:
            group.new_member_added = True
        if not group.members:
            group.protocol_type = protocol_type
        # a new member parked in its first JoinGroup cannot heartbeat: it expires after the new-member
        # join timeout instead (addMemberThenRebalanceOrCompleteJoin)
        expires = self.clock() + NEW_MEMBER_JOIN_TIMEOUT_MS / 1000
        member = Member(member_id, client_id, protocols, session_ms, rebalance_ms, expires)
        member.join_reply = reply
        group.members[member_id] = member
        if group.leader is None:
            group.leader = member_id
        if group.state in (EMPTY, STABLE, COMPLETING_REBALANCE):
            self._prepare_rebalance(group)
        else:
            self._maybe_complete_join(group)

    def _prepare_rebalance(self, group: Group) -> None:
        if group.state == COMPLETING_REBALANCE:
            for member in group.members.values():
                member.assignment = b""
            self._propagate(group, REBALANCE_IN_PROGRESS)
        initial = group.state == EMPTY
        group.transition(PREPARING_REBALANCE)
        if initial:
            group.initial_remaining_ms = max(group.rebalance_ms() - self.initial_delay_ms, 0)
            group.join_deadline = self.clock() + self.initial_delay_ms / 1000
        elif group.all_joined():
            self._complete_join(group)
        else:
            group.join_deadline = self.clock() + group.rebalance_ms() / 1000

    def _maybe_complete_join(self, group: Group) -> None:
        if group.state == PREPARING_REBALANCE and group.previous_state != EMPTY and group.all_joined():
            self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        group.join_deadline = None
        for member in [m for m in group.members.values() if m.join_reply is None]:
            group.remove(member.member_id)  # did not rejoin in time
        if group.leader is not None and group.leader not in group.members:
            group.leader = next(iter(group.members), None)
        group.generation += 1
        if not group.members:
            group.protocol_name = None
            group.transition(EMPTY)
            return
        group.protocol_name = self._select_protocol(group)
        group.transition(COMPLETING_REBALANCE)
        for member in list(group.members.values()):
            reply, member.join_reply = member.join_reply, None
            self._reschedule(member)
            member.is_new = False
            if reply is not None:
                reply(self._join_answer(group, member))

    def _remove_member(self, group: Group, member: Member) -> None:
        reply, member.join_reply = member.join_reply, None
        if reply is not None:
            reply({"error": UNKNOWN_MEMBER_ID, "member_id": ""})
        group.remove(member.member_id)
        if group.state in (STABLE, COMPLETING_REBALANCE):
            self._prepare_rebalance(group)
        elif group.state == PREPARING_REBALANCE and group.all_joined():
            self._complete_join(group)

    def _select_protocol(self, group: Group) -> str:
        """The protocol all members support with the most first-choice votes (ClassicGroup.selectProtocol)."""
        common = set.intersection(*({n for n, _ in m.protocols} for m in group.members.values()))
        votes: dict[str, int] = {}
        for member in group.members.values():
            choice = next(n for n, _ in member.protocols if n in common)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda n: votes[n])

    def _reschedule(self, member: Member) -> None:
        member.expires_at = self.clock() + member.session_ms / 1000

    def _propagate(self, group: Group, error: int) -> None:
        for member in group.members.values():
            reply, member.sync_reply = member.sync_reply, None
            if reply is not None:
                reply(self._sync_answer(group, member, error))
                self._reschedule(member)

    def _join_answer(self, group: Group, member: Member) -> dict[str, Any]:
        leader = group.leader == member.member_id
        return {
            "error": NONE,
            "generation": group.generation,
            "protocol_type": group.protocol_type,
            "protocol_name": group.protocol_name,
            "leader": group.leader or "",
            "member_id": member.member_id,
            "members": [(m.member_id, m.metadata(group.protocol_name)) for m in group.members.values()]
            if leader
            else [],
        }

    @staticmethod
    def _sync_answer(group: Group, member: Member, error: int) -> dict[str, Any]:
        ok = error == NONE
        return {
            "error": error,
            "protocol_type": group.protocol_type if ok else None,
            "protocol_name": group.protocol_name if ok else None,
            "assignment": member.assignment if ok else b"",
        }

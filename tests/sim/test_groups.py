"""The simulator's classic group coordinator (reassignd/sim/groups.py) on Kafka's rules, in virtual time: what
reassignd's one-writer lease relies on (docs/ha.md)."""

from __future__ import annotations

from typing import Any

from reassignd.sim import groups as g

SESSION_MS = 6000


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def join(coordinator: g.GroupCoordinator, member_id: str, client: str) -> list[dict[str, Any]]:
    answers: list[dict[str, Any]] = []
    coordinator.join(
        group_id="reassignd.c",
        member_id=member_id,
        client_id=client,
        protocol_type="reassignd",
        protocols=[("writer-v1", client.encode())],
        session_ms=SESSION_MS,
        rebalance_ms=SESSION_MS,
        reply=answers.append,
    )
    return answers


def joined(coordinator: g.GroupCoordinator, clock: Clock, client: str) -> tuple[str, list[dict[str, Any]]]:
    """A new member: MEMBER_ID_REQUIRED, then the join with the id handed out."""
    (first,) = join(coordinator, "", client)
    assert first["error"] == g.MEMBER_ID_REQUIRED
    return first["member_id"], join(coordinator, first["member_id"], client)


def test_the_leader_stays_when_a_second_member_joins_and_a_silent_one_is_replaced_after_its_session() -> None:
    clock = Clock()
    coordinator = g.GroupCoordinator(clock)
    a, answers_a = joined(coordinator, clock, "a")
    assert answers_a == []  # parked: the initial rebalance delay
    clock.now += 3.1
    coordinator.tick()
    assert answers_a[0]["leader"] == a and answers_a[0]["generation"] == 1
    synced: list[dict[str, Any]] = []
    coordinator.sync(
        group_id="reassignd.c",
        generation=1,
        member_id=a,
        protocol_type="reassignd",
        protocol_name="writer-v1",
        assignments={a: b"a writes"},
        reply=synced.append,
    )
    assert synced[0]["error"] == g.NONE and synced[0]["assignment"] == b"a writes"

    clock.now += 1
    b, answers_b = joined(coordinator, clock, "b")
    assert answers_b == []  # waits for the rebalance: a must rejoin
    assert coordinator.heartbeat("reassignd.c", 1, a) == g.REBALANCE_IN_PROGRESS
    answers_a = join(coordinator, a, "a")
    assert answers_a[0]["leader"] == a and answers_b[0]["leader"] == a, "the leader keeps leading"
    assert answers_a[0]["generation"] == answers_b[0]["generation"] == 2

    # a falls silent (partitioned from the brokers) right after its last heartbeat answered NONE
    last_ok = clock.now
    assert coordinator.heartbeat("reassignd.c", 2, a) == g.NONE
    while clock.now + 0.5 < last_ok + SESSION_MS / 1000:
        clock.now += 0.5
        assert coordinator.heartbeat("reassignd.c", 2, b) in (g.NONE, g.REBALANCE_IN_PROGRESS)
        assert coordinator.describe("reassignd.c")["leader"] == a, "no takeover within a's session"
    clock.now = last_ok + SESSION_MS / 1000 + 0.01
    coordinator.tick()
    assert coordinator.heartbeat("reassignd.c", 2, b) == g.REBALANCE_IN_PROGRESS
    answers_b = join(coordinator, b, "b")
    assert answers_b[0]["leader"] == b and answers_b[0]["generation"] == 3
    assert coordinator.heartbeat("reassignd.c", 2, a) == g.UNKNOWN_MEMBER_ID


def test_a_member_that_leaves_hands_the_lead_over_at_once() -> None:
    clock = Clock()
    coordinator = g.GroupCoordinator(clock)
    a, answers_a = joined(coordinator, clock, "a")
    b, answers_b = joined(coordinator, clock, "b")
    clock.now += 3.1
    coordinator.tick()
    assert answers_a == [], "a member that joined during the initial delay extends it (once more, 3 s)"
    clock.now += 3.1
    coordinator.tick()
    assert answers_a[0]["leader"] == answers_b[0]["leader"] == a
    assert coordinator.leave("reassignd.c", [a]) == [g.NONE]
    answers_b = join(coordinator, b, "b")
    assert answers_b[0]["leader"] == b


def test_offset_commits_follow_kafkas_checks_whatever_the_protocol_type() -> None:
    """ClassicGroup.validateOffsetCommit: no protocol-type check (a `reassignd` group keeps offsets); a
    member commits in its generation only; no member and generation -1 only while the group is Empty."""
    clock = Clock()
    coordinator = g.GroupCoordinator(clock)
    marker = {("__consumer_offsets", 0): (7, '{"v":1}')}
    assert coordinator.commit_offsets("reassignd.c", "", -1, marker) == g.NONE  # Empty (a simple group)
    assert coordinator.commit_offsets("reassignd.none", "m", 1, marker) == g.GROUP_ID_NOT_FOUND
    a, _ = joined(coordinator, clock, "a")
    clock.now += 3.1
    coordinator.tick()
    assert coordinator.describe("reassignd.c")["state"] == g.COMPLETING_REBALANCE
    assert coordinator.commit_offsets("reassignd.c", a, 1, marker) == g.REBALANCE_IN_PROGRESS
    synced: list[dict[str, Any]] = []
    coordinator.sync(
        group_id="reassignd.c",
        generation=1,
        member_id=a,
        protocol_type="reassignd",
        protocol_name="writer-v1",
        assignments={a: b""},
        reply=synced.append,
    )
    newer = {("__consumer_offsets", 0): (9, '{"v":1,"seq":9}')}
    assert coordinator.commit_offsets("reassignd.c", "", -1, newer) == g.UNKNOWN_MEMBER_ID
    assert coordinator.commit_offsets("reassignd.c", "stranger", 1, newer) == g.UNKNOWN_MEMBER_ID
    assert coordinator.commit_offsets("reassignd.c", a, 0, newer) == g.ILLEGAL_GENERATION
    assert coordinator.fetch_offsets("reassignd.c") == marker
    assert coordinator.commit_offsets("reassignd.c", a, 1, newer) == g.NONE
    assert coordinator.fetch_offsets("reassignd.c") == newer
    too_big = {("__consumer_offsets", 0): (10, "x" * 4097)}
    assert coordinator.commit_offsets("reassignd.c", a, 1, too_big) == g.OFFSET_METADATA_TOO_LARGE

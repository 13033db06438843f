"""The log-dir step rules (log_dir_moves.py), one snapshot at a time."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reassignd.engine.limits import Limits
from reassignd.engine.log_dir_moves import (
    Key,
    LogDirMoves,
    LogDirRequests,
    answered,
    decide_log_dirs,
    log_dir_problems,
    not_hosted_yet,
)
from reassignd.model import Broker, ClusterSnapshot, PartitionState, ReassignmentPlan, TopicPartition

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
PLAN = ReassignmentPlan(
    {T0: (1, 2, 3), T1: (1, 2, 4)},
    {T0: ("/b", "any", "/b"), T1: ("/b", "/b", "/b")},
)


def snapshot(
    *,
    t1: PartitionState | None = None,
    dirs: dict[tuple[TopicPartition, int], str] | None = None,
    futures: dict[tuple[TopicPartition, int], str] | None = None,
    offline: tuple[int, ...] = (),
) -> ClusterSnapshot:
    parts = [PartitionState(T0, (1, 2, 3), (1, 2, 3), 1), t1 or PartitionState(T1, (1, 2, 4), (1, 2, 4), 1)]
    on_a = {(tp, b): "/a" for tp in (T0, T1) for b in (1, 2, 3, 4)}
    return ClusterSnapshot.build(
        [Broker(b, None, b not in offline) for b in (1, 2, 3, 4)],
        parts,
        replica_dirs={**on_a, **(dirs or {})},
        future_dirs=futures or {},
        broker_dirs=dict.fromkeys((1, 2, 3, 4), ("/a", "/b")),
    )


def limits(per_broker: int = 1) -> Limits:
    return Limits(max_log_dir_movements_per_broker=per_broker)


def test_every_named_replica_is_wanted_and_any_is_not() -> None:
    assert set(LogDirMoves.of(PLAN).wanted) == {(T0, 1), (T0, 3), (T1, 1), (T1, 2), (T1, 4)}


@pytest.mark.parametrize(
    ("per_broker", "started"),
    [(1, {(T0, 1), (T0, 3), (T1, 2), (T1, 4)}), (2, {(T0, 1), (T0, 3), (T1, 1), (T1, 2), (T1, 4)})],
)
def test_the_per_broker_limit_binds(per_broker: int, started: set[tuple[TopicPartition, int]]) -> None:
    decision = decide_log_dirs(LogDirMoves.of(PLAN), snapshot(), limits(per_broker), may_start=True)
    assert set(decision.requests.move) == started
    assert decision.moves.running == started


def test_a_replica_being_added_waits_for_its_step_and_a_stopped_broker_gets_nothing() -> None:
    moving = PartitionState(T1, (1, 2, 4, 3), (1, 2, 3), 1, adding=(4,), removing=(3,))
    decision = decide_log_dirs(
        LogDirMoves.of(PLAN), snapshot(t1=moving, offline=(2,)), limits(2), may_start=True
    )
    assert set(decision.requests.move) == {(T0, 1), (T0, 3), (T1, 1)}


def test_nothing_starts_unless_the_plan_runs() -> None:
    decision = decide_log_dirs(LogDirMoves.of(PLAN), snapshot(), limits(), may_start=False)
    assert not decision.requests and not decision.moves.running


def test_in_flight_while_its_future_log_is_there_done_once_in_place_restarted_if_it_vanished() -> None:
    moves = decide_log_dirs(LogDirMoves.of(PLAN), snapshot(), limits(), may_start=True).moves
    read = snapshot(dirs={(T0, 1): "/b"}, futures={(T0, 3): "/b", (T1, 4): "/b"})  # (T1, 2) vanished
    decision = decide_log_dirs(moves, read, limits(), may_start=False)
    assert decision.finished == ((T0, 1),)
    assert decision.restarted == ((T1, 2),)
    assert decision.moves.running == {(T0, 3), (T1, 4)}
    assert decision.moves.to_json() == {"total": 5, "done": 1, "in_flight": 2, "waiting": 2, "dropped": 0}


def test_a_refused_move_waits_to_start_again_and_a_deleted_topic_drops_its_moves() -> None:
    moves = decide_log_dirs(LogDirMoves.of(PLAN), snapshot(), limits(), may_start=True).moves
    sent = LogDirRequests(move={(T0, 1): "/b", (T0, 3): "/b"})
    moves = answered(moves, sent, {(T0, 1): "LOG_DIR_NOT_FOUND", (T0, 3): None}).moves
    assert (T0, 1) not in moves.running and (T0, 3) in moves.running
    gone = decide_log_dirs(moves, snapshot(), limits(), may_start=False, deleted_topics={"t"})
    assert gone.moves.unfinished == 0 and not gone.moves.running


def test_a_dir_the_broker_does_not_have_is_a_problem_naming_field_and_value() -> None:
    bad = ReassignmentPlan({T0: (1, 2, 3)}, {T0: ("/b", "/nope", "any")})
    problems = log_dir_problems(bad, snapshot())
    assert [(p.where, p.field, p.message) for p in problems] == [
        ("t-0", "log_dirs", "broker 2 has no log dir '/nope' (its log dirs: /a, /b)")
    ]


def test_a_partition_is_pending_until_every_replica_named_a_dir_is_in_it() -> None:
    moves = LogDirMoves.of(PLAN)
    assert moves.pending == {T0, T1}
    one = decide_log_dirs(moves, snapshot(dirs={(T0, 1): "/b"}), limits(), may_start=False).moves
    assert one.pending == {T0, T1}
    both = decide_log_dirs(one, snapshot(dirs={(T0, 1): "/b", (T0, 3): "/b"}), limits(), may_start=False)
    assert both.moves.pending == {T1}
    assert both.finished == ((T0, 3),), "a move seen done once is not reported again"


# -- a replica a step adds gets its dir before the step (placed); a cancel sends moves back ----------------

ADDS_4 = PartitionState(T1, (1, 2, 4, 3), (1, 2, 3), 1, adding=(4,), removing=(3,))
"""T1 while the step that adds 4 (and drops 3) runs."""
BEFORE_STEP = PartitionState(T1, (1, 2, 3), (1, 2, 3), 1)


def t1_only(moves: LogDirMoves) -> LogDirMoves:
    """Only T1's replica on broker 4 left to place: the others are in their dirs."""
    done = frozenset(k for k in moves.wanted if k != (T1, 4))
    return LogDirMoves(
        wanted=moves.wanted,
        by_broker=moves.by_broker,
        done=done,
        pending=frozenset({T1}),
        replicas_of=moves.replicas_of,
    )


def placed_moves() -> LogDirMoves:
    """T1's replica on 4 placed: Kafka answered REPLICA_NOT_AVAILABLE to the dir sent before its step."""
    moves = t1_only(LogDirMoves.of(PLAN))
    decision = decide_log_dirs(moves, snapshot(t1=BEFORE_STEP), limits(), may_start=True, adding={T1: (4,)})
    return answered(decision.moves, decision.requests, {(T1, 4): "REPLICA_NOT_AVAILABLE: x"}).moves


def test_a_replica_a_starting_step_adds_is_given_its_dir_before_the_step_and_takes_no_slot() -> None:
    moves = t1_only(LogDirMoves.of(PLAN))
    moves = LogDirMoves(
        **{**{f: getattr(moves, f) for f in moves.__slots__}, "running": frozenset({(T0, 1)})}
    )
    decision = decide_log_dirs(moves, snapshot(t1=BEFORE_STEP), limits(1), may_start=True, adding={T1: (4,)})
    assert decision.requests == LogDirRequests(place={(T1, 4): "/b"})
    assert decision.moves.running == {(T0, 1)}, "placed on answer, not before; and no move slot taken"


@pytest.mark.parametrize(
    ("when", "may_start", "cancelling", "adding", "offline"),
    [
        ("paused", False, False, {T1: (4,)}, ()),
        ("cancelling", False, True, {T1: (4,)}, ()),
        ("the broker is stopped", True, False, {T1: (4,)}, (4,)),
        ("a step adds a replica given no dir", True, False, {T1: (3,)}, ()),
    ],
)
def test_no_dir_is_given_early(
    when: str,
    may_start: bool,
    cancelling: bool,
    adding: dict[TopicPartition, tuple[int, ...]],
    offline: tuple[int, ...],
) -> None:
    moves = t1_only(LogDirMoves.of(PLAN))
    decision = decide_log_dirs(
        moves,
        snapshot(t1=BEFORE_STEP, offline=offline),
        limits(),
        may_start=may_start,
        cancelling=cancelling,
        adding=adding,
    )
    assert not decision.requests.place, when


@pytest.mark.parametrize(
    ("answer", "running", "placed", "failed"),
    [
        ("REPLICA_NOT_AVAILABLE: The replica is not available.", False, True, False),
        (None, True, False, False),  # the broker hosted it already: a future log copies it
        ("LOG_DIR_NOT_FOUND: Log dir /b is not found in the config.", False, False, True),
    ],
)
def test_kafka_s_answer_to_a_dir_given_before_the_step(
    answer: str | None, running: bool, placed: bool, failed: bool
) -> None:
    key = (T1, 4)
    outcome = answered(t1_only(LogDirMoves.of(PLAN)), LogDirRequests(place={key: "/b"}), {key: answer})
    assert (key in outcome.moves.running, key in outcome.moves.placed, bool(outcome.failed)) == (
        running,
        placed,
        failed,
    )
    assert outcome.moves.in_flight == int(running or placed)


@pytest.mark.parametrize(
    ("read", "t1", "expected"),
    [
        # not created yet (the step has not reached the broker): what we knew stands
        (None, ADDS_4, "placed"),
        # created in the dir given: done, while its step still copies
        ("/b", ADDS_4, "done"),
        # created elsewhere (its broker restarted and forgot the dir): moved, but only after its step
        ("/a", ADDS_4, "misplaced"),
        # ... and once the step is over
        ("/a", PartitionState(T1, (1, 2, 4), (1, 2, 4), 1), "misplaced, moved"),
        # its step was reverted or refused: forgotten, given its dir again when a step adds it
        (None, BEFORE_STEP, "forgotten"),
    ],
)
def test_a_placed_replica_as_it_is_read(read: str | None, t1: PartitionState, expected: str) -> None:
    key = (T1, 4)
    read_now = snapshot(t1=t1, dirs={key: read} if read else {})
    if read is None:
        read_now = _without(read_now, key)
    decision = decide_log_dirs(placed_moves(), read_now, limits(), may_start=True)
    moves = decision.moves
    seen = {
        "placed": key in moves.placed,
        "done": key in moves.done and decision.finished == (key,),
        "misplaced": key in decision.misplaced and key not in moves.placed,
        "moved": key in decision.requests.move,
    }
    assert {name for name, true in seen.items() if true} == set(expected.split(", ")) - {"forgotten"}


def _without(s: ClusterSnapshot, key: Key) -> ClusterSnapshot:
    return replace(s, replica_dirs={k: v for k, v in s.replica_dirs.items() if k != key})


def test_a_cancel_sends_each_move_in_flight_back_to_the_dir_of_its_current_log() -> None:
    moves = decide_log_dirs(LogDirMoves.of(PLAN), snapshot(), limits(), may_start=True).moves
    running = {(T0, 1), (T0, 3), (T1, 2), (T1, 4)}
    assert moves.running == running
    in_flight = snapshot(futures=dict.fromkeys(running, "/b"))
    decision = decide_log_dirs(moves, in_flight, limits(), may_start=False, cancelling=True)
    assert decision.requests == LogDirRequests(send_back=dict.fromkeys(running, "/a"))
    outcome = answered(
        decision.moves, decision.requests, {**dict.fromkeys(running), (T1, 4): "KAFKA_STORAGE_ERROR: x"}
    )
    assert outcome.moves.running == {(T1, 4)}, "refused: sent back again next cycle"
    assert set(outcome.moves.sent_back) == running - {(T1, 4)}
    assert outcome.moves.copying and outcome.moves.in_flight == 4


@pytest.mark.parametrize(
    ("future", "now", "copying", "done"),
    [
        (None, "/a", False, False),  # the future log dropped: back where it was, waiting
        ("/a", "/b", True, False),  # it had arrived as it was sent back: it copies back, still ours
        (None, "/b", False, True),  # it arrived, and nothing copies back
    ],
)
def test_a_move_sent_back_is_read_until_no_future_log_of_it_is_left(
    future: str | None, now: str, copying: bool, done: bool
) -> None:
    key = (T0, 1)
    moves = decide_log_dirs(LogDirMoves.of(PLAN), snapshot(), limits(), may_start=True).moves
    outcome = answered(moves, LogDirRequests(send_back={key: "/a"}), {key: None})
    others = moves.running - {key}
    read = snapshot(
        dirs={key: now}, futures={**dict.fromkeys(others, "/b"), **({key: future} if future else {})}
    )
    after = decide_log_dirs(outcome.moves, read, limits(), may_start=False, cancelling=True).moves
    assert (key in after.sent_back, key in after.done) == (copying, done)
    assert (1 in after.watched_partitions().get(T0, ())) == copying
    assert (1 in after.copying_brokers()) == copying


@pytest.mark.parametrize(
    ("error", "hosted_yet"),
    [
        ("REPLICA_NOT_AVAILABLE", False),
        ("REPLICA_NOT_AVAILABLE: The replica is not available.", False),
        ("LOG_DIR_NOT_FOUND: Log dir /x is not found in the config.", True),
        (None, True),
    ],
)
def test_replica_not_available_means_not_hosted_yet(error: str | None, hosted_yet: bool) -> None:
    assert not_hosted_yet(error) is not hosted_yet


@pytest.mark.parametrize("how", ["running", "sent back"])
def test_a_move_whose_replica_left_its_broker_copies_no_more(how: str) -> None:
    """A cancel's revert takes broker 4 out of T1: its future log went with the replica (Kafka deletes both),
    so it is neither sent back nor waited for: the cancelled plan can end."""
    key = (T1, 4)
    moves = t1_only(LogDirMoves.of(PLAN))
    moves = replace(moves, running=frozenset({key}))
    if how == "sent back":
        moves = answered(moves, LogDirRequests(send_back={key: "/a"}), {key: None}).moves
    assert moves.copying
    left = _without(snapshot(t1=BEFORE_STEP), key)
    decision = decide_log_dirs(moves, left, limits(), may_start=False, cancelling=True)
    assert not decision.requests and not decision.moves.copying and decision.moves.in_flight == 0
    assert decision.moves.waiting == 1, "not in its dir: still to do if a step brings it back"

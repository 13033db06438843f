"""The log-dir step rules (log_dir_moves.py), one snapshot at a time."""

from __future__ import annotations

import pytest

from reassignd.engine.limits import Limits
from reassignd.engine.log_dir_moves import LogDirMoves, decide_log_dirs, log_dir_problems, refused
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
    assert set(decision.start) == started
    assert decision.moves.running == started


def test_a_replica_being_added_waits_for_its_step_and_a_stopped_broker_gets_nothing() -> None:
    moving = PartitionState(T1, (1, 2, 4, 3), (1, 2, 3), 1, adding=(4,), removing=(3,))
    decision = decide_log_dirs(
        LogDirMoves.of(PLAN), snapshot(t1=moving, offline=(2,)), limits(2), may_start=True
    )
    assert set(decision.start) == {(T0, 1), (T0, 3), (T1, 1)}


def test_nothing_starts_unless_the_plan_runs() -> None:
    decision = decide_log_dirs(LogDirMoves.of(PLAN), snapshot(), limits(), may_start=False)
    assert not decision.start and not decision.moves.running


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
    moves = refused(moves, {(T0, 1): "LOG_DIR_NOT_FOUND", (T0, 3): None})
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

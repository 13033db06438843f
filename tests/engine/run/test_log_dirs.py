"""The log-dir part: what it journals for each of Kafka's answers, by why the replica was asked (a move, a
dir given before the step that adds the replica, a cancelled move sent back), and what it asks for on a
snapshot."""

from __future__ import annotations

import pytest

from reassignd.engine.journal import EventKind
from reassignd.engine.limits import Limits
from reassignd.engine.log_dir_moves import LogDirMoves, LogDirRequests
from reassignd.engine.run.effects import Answered, MoveLogDirs, Notify, Reassign
from reassignd.engine.run.log_dirs import answered, observed
from reassignd.engine.run.outbox import Outbox
from reassignd.model import Broker, ClusterSnapshot, PartitionState, ReassignmentPlan
from tests.engine.helpers import tp

PLAN = ReassignmentPlan({tp(0): (1, 2)}, log_dirs={tp(0): ("/d2", "any")})
KEY = (tp(0), 1)


def with_running(moves: LogDirMoves) -> LogDirMoves:
    return LogDirMoves(**{**{f: getattr(moves, f) for f in moves.__slots__}, "running": frozenset({KEY})})


@pytest.mark.parametrize(
    ("asked", "error", "journaled", "state"),
    [
        ("move", None, EventKind.LOG_DIR_STARTED, "running"),
        ("move", "LOG_DIR_NOT_FOUND: Log dir /d2 is not found in the config.", EventKind.ERROR, "waiting"),
        ("place", "REPLICA_NOT_AVAILABLE: The replica is not available.", EventKind.LOG_DIR_PLACED, "placed"),
        ("place", None, EventKind.LOG_DIR_STARTED, "running"),
        ("place", "LOG_DIR_NOT_FOUND: Log dir /d2 is not found in the config.", EventKind.ERROR, "waiting"),
        ("send_back", None, EventKind.LOG_DIR_CANCELLED, "sent back"),
        ("send_back", "KAFKA_STORAGE_ERROR: Log dir /d1 is offline", EventKind.ERROR, "running"),
    ],
)
def test_kafka_s_answer_by_why_the_replica_was_asked(
    asked: str, error: str | None, journaled: EventKind, state: str
) -> None:
    moves = LogDirMoves.of(PLAN)
    if asked != "place":
        moves = with_running(moves)  # a move was decided (or is in flight, for a send-back)
    path = "/d1" if asked == "send_back" else "/d2"
    sent = LogDirRequests(**{asked: {KEY: path}})
    out = Outbox("p")
    after = answered(moves, sent, Answered(1.0, log_dirs={KEY: error}), out)
    assert [e.kind for e in out.events] == [journaled]
    assert out.events[0].data["log_dir"] == path
    states = {
        "running": KEY in after.running,
        "placed": KEY in after.placed,
        "sent back": KEY in after.sent_back,
    }
    assert {name for name, true in states.items() if true} == ({state} - {"waiting"})
    notified = [e.kind for e in out.after if isinstance(e, Notify)]
    assert notified == ([] if journaled is EventKind.ERROR else [journaled.value])


def test_a_step_adding_a_named_replica_has_it_given_its_dir_in_the_effects_before_the_step() -> None:
    plan = ReassignmentPlan({tp(0): (1, 3)}, log_dirs={tp(0): ("any", "/d2")})
    snapshot = ClusterSnapshot.build(
        [Broker(b, None, True) for b in (1, 2, 3)],
        [PartitionState(tp(0), (1, 2), (1, 2), 1)],
        broker_dirs=dict.fromkeys((1, 2, 3), ("/d1", "/d2")),
    )
    out = Outbox("p")
    out.reassign[tp(0)] = (1, 3, 2)
    moves = observed(
        LogDirMoves.of(plan),
        snapshot,
        Limits(),
        frozenset(),
        out,
        may_start=True,
        cancelling=False,
        adding={tp(0): (3,)},
    )
    assert out.log_dirs == LogDirRequests(place={(tp(0), 3): "/d2"})
    assert not moves.running and not moves.placed, "placed once Kafka answered"
    writes = [e for e in out.effects() if isinstance(e, MoveLogDirs | Reassign)]
    assert [type(e) for e in writes] == [MoveLogDirs, Reassign]

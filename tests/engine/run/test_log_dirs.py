"""The log-dir part's answers: an accepted move journaled as started, a refused one retried."""

from __future__ import annotations

import pytest

from reassignd.engine.journal import EventKind
from reassignd.engine.log_dir_moves import LogDirMoves
from reassignd.engine.run.effects import Answered
from reassignd.engine.run.log_dirs import answered
from reassignd.engine.run.outbox import Outbox
from reassignd.model import ReassignmentPlan
from tests.engine.helpers import tp

PLAN = ReassignmentPlan({tp(0): (1, 2)}, log_dirs={tp(0): ("/d2", "any")})


@pytest.mark.parametrize(
    ("error", "journaled", "running"),
    [(None, EventKind.LOG_DIR_STARTED, True), ("LOG_DIR_NOT_FOUND", EventKind.ERROR, False)],
)
def test_kafka_s_answer_to_a_move(error: str | None, journaled: EventKind, running: bool) -> None:
    key = (tp(0), 1)
    moves = LogDirMoves.of(PLAN)
    moves = moves.__class__(
        **{**{f: getattr(moves, f) for f in moves.__slots__}, "running": frozenset({key})}
    )
    out = Outbox("p")
    after = answered(moves, {key: "/d2"}, Answered(1.0, log_dirs={key: error}), out)
    assert [e.kind for e in out.events] == [journaled]
    assert (key in after.running) == running

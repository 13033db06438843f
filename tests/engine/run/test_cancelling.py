"""The cancel part: reverts held back are said once; refused reverts are said, ended ones are not."""

from __future__ import annotations

import pytest

from reassignd.engine.cancel import Reverts
from reassignd.engine.run.cancelling import Cancel, answered, held
from reassignd.engine.run.effects import Answered, Log
from reassignd.engine.run.outbox import Outbox
from tests.engine.helpers import tp


@pytest.mark.parametrize(
    ("before", "now", "said"),
    [
        ({}, {tp(0): "no leader"}, [tp(0)]),
        ({tp(0): "no leader"}, {tp(0): "no leader"}, []),
        ({tp(0): "no leader"}, {tp(0): "no leader", tp(1): "no leader"}, [tp(1)]),
        ({tp(0): "no leader"}, {}, []),
    ],
)
def test_a_held_revert_is_said_once(before: dict, now: dict, said: list) -> None:
    out = Outbox("p")
    cancel = held(Cancel(held=before), Reverts((), now), out)
    assert dict(cancel.held) == now
    assert [e.fields["partition"] for e in out.after if isinstance(e, Log)] == [str(t) for t in said]


@pytest.mark.parametrize(
    ("error", "said"),
    [(None, False), ("NO_REASSIGNMENT_IN_PROGRESS: nothing to cancel", False), ("REQUEST_TIMED_OUT", True)],
)
def test_a_refused_revert_is_retried(error: str | None, said: bool) -> None:
    out = Outbox("p")
    answered((tp(0),), Answered(1.0, reassign={tp(0): error}), out)
    assert bool(out.after) == said

"""The plan lifecycle's one table: every change it lists and nothing else, commands and their refusals."""

from __future__ import annotations

import pytest

from reassignd.engine.lifecycle import LIFECYCLE, TRANSITIONS, CommandRefused, PlanStatus

Q, R, P, CING, DONE, CED = (
    PlanStatus.QUEUED,
    PlanStatus.RUNNING,
    PlanStatus.PAUSED,
    PlanStatus.CANCELLING,
    PlanStatus.COMPLETED,
    PlanStatus.CANCELLED,
)


@pytest.mark.parametrize(
    ("source", "target", "event"),
    [
        (Q, R, "plan.started"),
        (Q, CED, "plan.cancelled"),
        (R, P, "plan.paused"),
        (P, R, "plan.resumed"),
        (R, CING, "plan.cancelling"),
        (P, CING, "plan.cancelling"),
        (R, DONE, "plan.completed"),
        (CING, CED, "plan.cancelled"),
    ],
)
def test_each_change_of_the_table_has_its_event(source: PlanStatus, target: PlanStatus, event: str) -> None:
    change = source.change_to(target)
    assert change is not None and change.event == event


def test_nothing_else_changes() -> None:
    listed = {(c.source, c.target) for c in LIFECYCLE}
    for source in PlanStatus:
        for target in PlanStatus:
            assert (source.change_to(target) is not None) == ((source, target) in listed)
            assert (target in TRANSITIONS[source]) == ((source, target) in listed)


@pytest.mark.parametrize(
    ("status", "verb", "target"),
    [
        (R, "pause", P),
        (P, "resume", R),
        (R, "cancel", CING),
        (P, "cancel", CING),
        (P, "pause", None),
        (R, "resume", None),
        (CING, "cancel", None),
        (Q, "cancel", None),  # a queued plan is cancelled by the controller, not the machine
        (DONE, "resume", None),
        (R, "explode", None),
    ],
)
def test_commands(status: PlanStatus, verb: str, target: PlanStatus | None) -> None:
    if target is None:
        with pytest.raises(CommandRefused):
            status.command("p", verb)
    else:
        assert status.command("p", verb).target is target


@pytest.mark.parametrize(
    ("status", "terminal", "active"),
    [
        (Q, False, False),
        (R, False, True),
        (P, False, True),
        (CING, False, True),
        (DONE, True, False),
        (CED, True, False),
    ],
)
def test_terminal_and_active(status: PlanStatus, terminal: bool, active: bool) -> None:
    assert (status.terminal, status.active) == (terminal, active)

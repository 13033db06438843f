"""The outbox hands effects over in the safe order, whatever order the parts added them in."""

from __future__ import annotations

from reassignd.engine.journal import Event, EventKind
from reassignd.engine.log_dir_moves import LogDirRequests
from reassignd.engine.run.effects import Elect, Log, MoveLogDirs, Notify, Persist, Reassign, WriteThrottles
from reassignd.engine.run.outbox import Outbox
from reassignd.engine.throttle import ConfigWrite
from reassignd.model import TopicPartition

TP = TopicPartition("t", 0)


def test_said_first_then_the_commit_then_said_then_throttles_dirs_steps_elections() -> None:
    """Log dirs before the steps: a replica a step adds must have its dir before the step creates it."""
    out = Outbox("p")
    out.elect = (TP,)
    out.log_dirs = LogDirRequests(move={(TP, 1): "/d2"})
    out.reassign[TP] = (1, 2)
    out.throttle_writes = (ConfigWrite("broker", "1", "leader.replication.throttled.rate", "SET", "10"),)
    out.say(Notify("step.started"))
    out.journal(Event(EventKind.ERROR, "p"))
    out.before.append(Log("info", "first"))
    kinds = [type(e) for e in out.effects()]
    assert kinds == [Log, Persist, Notify, WriteThrottles, MoveLogDirs, Reassign, Elect]


def test_a_transition_without_a_commit_says_only() -> None:
    out = Outbox("p")
    out.before.append(Log("error", "down"))
    assert [type(e) for e in out.effects(commit=False)] == [Log]


def test_an_empty_commit_is_still_handed_over_and_is_false() -> None:
    (persist,) = Outbox("p").effects()
    assert isinstance(persist, Persist) and not persist and persist.plan_id == "p"

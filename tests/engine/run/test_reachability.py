"""The reachability part: the daemon's link to the cluster, stepped by the cycle's reads and the probe; each
change said once, unreachable while either source's last attempt failed."""

from __future__ import annotations

import pytest

from reassignd.engine.run.effects import Log, Notify
from reassignd.engine.run.reachability import (
    LinkEvent,
    Reachability,
    Reached,
    Unreachable,
    starting,
    step,
)

UP = Reachability(True, 10.0, contacted=True)
DOWN = Reachability(False, 20.0, (3,), "timed out", frozenset({"probe"}), contacted=True)
NEVER = starting(5.0)


@pytest.mark.parametrize(
    ("before", "event", "after", "said"),
    [
        # the first answer: reachable since then, nothing to say (no failure was said)
        (NEVER, Reached(50.0, "probe"), Reachability(True, 50.0, contacted=True), []),
        (UP, Reached(50.0, "read", ()), UP, []),
        (
            UP,
            Reached(50.0, "read", (2,)),
            Reachability(True, 10.0, (2,), contacted=True),
            [("warning", "brokers offline")],
        ),
        (
            Reachability(True, 10.0, (2,), contacted=True),
            Reached(50.0, "read", ()),
            UP,
            [("info", "brokers offline")],
        ),
        # a probe's answer keeps the brokers the last read saw stopped
        (Reachability(True, 10.0, (2,), contacted=True), Reached(50.0, "probe"), None, []),
        (
            DOWN,
            Reached(50.0, "probe", ()),
            Reachability(True, 50.0, contacted=True),
            [("info", "the cluster is reachable again"), "cluster.reachable", ("info", "brokers offline")],
        ),
        # the probe failed and the read failed: back only once both answered
        (
            Reachability(False, 20.0, (), "refused", frozenset({"probe", "read"}), contacted=True),
            Reached(50.0, "probe"),
            Reachability(False, 20.0, (), "refused", frozenset({"read"}), contacted=True),
            [],
        ),
        (
            UP,
            Unreachable(50.0, "probe", "refused"),
            Reachability(False, 50.0, (), "refused", frozenset({"probe"}), contacted=True),
            [("error", "the cluster cannot be reached"), "cluster.unreachable"],
        ),
        # said once; a later cause replaces the first
        (DOWN, Unreachable(60.0, "read", "refused"), None, []),
        # before any answer: the first failure is said at once, unreachable since the start
        (
            NEVER,
            Unreachable(7.0, "probe", "refused"),
            Reachability(False, 5.0, (), "refused", frozenset({"probe"})),
            [("error", "the cluster cannot be reached"), "cluster.unreachable"],
        ),
    ],
)
def test_step(before: Reachability, event: LinkEvent, after: Reachability | None, said: list[object]) -> None:
    transition = step(before, event, "p")
    if after is None:  # as before, but for what the event changes
        failing = before.failing | {event.source} if isinstance(event, Unreachable) else before.failing
        error = event.error if isinstance(event, Unreachable) else before.error
        after = Reachability(
            before.reachable, before.since, before.unreachable_brokers, error, failing, before.contacted
        )
    assert transition.link == after
    assert [(e.level, e.message) if isinstance(e, Log) else e.kind for e in transition.said] == said


def test_lines_name_the_plan_in_progress_and_none_without() -> None:
    log, notify = step(UP, Unreachable(50.0, "probe", "refused"), "p").said
    assert isinstance(log, Log) and dict(log.fields) == {"plan": "p", "error": "refused"}
    assert isinstance(notify, Notify) and dict(notify.data) == {"plan_id": "p", "error": "refused"}
    log, notify = step(UP, Unreachable(50.0, "probe", "refused")).said
    assert isinstance(log, Log) and dict(log.fields) == {"error": "refused"}
    assert isinstance(notify, Notify) and dict(notify.data) == {"error": "refused"}


def test_the_error_shows_only_while_unreachable() -> None:
    assert DOWN.to_json() == {
        "reachable": False,
        "since": 20.0,
        "unreachable_brokers": [3],
        "error": "timed out",
    }
    back = step(DOWN, Reached(30.0, "probe")).link
    assert back.to_json()["error"] is None


@pytest.mark.parametrize(
    ("events", "offline"),
    [
        # reachable: the brokers the last read found stopped
        ([Reached(1.0, "read", (3,), (1, 2, 3))], (3,)),
        # no broker answers (issue 31 item 5): every broker the last read listed, by either source
        ([Reached(1.0, "read", (3,), (1, 2, 3)), Unreachable(2.0, "probe", "refused")], (1, 2, 3)),
        ([Reached(1.0, "read", (), (1, 2, 3)), Unreachable(2.0, "read", "refused")], (1, 2, 3)),
        # back: the last read's view until the next read
        (
            [Reached(1.0, "read", (3,), (1, 2, 3)), Unreachable(2.0, "probe", "x"), Reached(3.0, "probe")],
            (3,),
        ),
        ([Reached(1.0, "read", (3,), (1, 2, 3)), Reached(2.0, "read", (), (1, 2, 3, 4))], ()),
        # a probe's answer keeps the brokers the last read listed
        ([Reached(1.0, "read", (), (1, 2)), Reached(2.0, "probe"), Unreachable(3.0, "probe", "x")], (1, 2)),
        # never read: none known
        ([Unreachable(2.0, "probe", "refused")], ()),
    ],
)
def test_offline_brokers(events: list[LinkEvent], offline: tuple[int, ...]) -> None:
    link = NEVER
    for event in events:
        link = step(link, event).link
    assert link.offline_brokers == offline
    assert link.to_json()["unreachable_brokers"] == list(offline)

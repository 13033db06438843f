"""The reachability part: each change of reachability said once, the times it keeps."""

from __future__ import annotations

import pytest

from reassignd.engine.run.effects import Log, Notify
from reassignd.engine.run.outbox import Outbox
from reassignd.engine.run.reachability import Reachability, lost, reached

UP = Reachability(True, 10.0)
DOWN = Reachability(False, 20.0, (3,), "timed out")


@pytest.mark.parametrize(
    ("before", "down", "after", "said"),
    [
        (Reachability(), (), Reachability(True, 50.0), []),
        (UP, (), UP, []),
        (UP, (2,), Reachability(True, 10.0, (2,)), [("warning", "brokers offline")]),
        (Reachability(True, 10.0, (2,)), (), UP, [("info", "brokers offline")]),
        (
            DOWN,
            (),
            Reachability(True, 50.0),
            [("info", "the cluster is reachable again"), "cluster.reachable", ("info", "brokers offline")],
        ),
        (
            DOWN,
            None,
            Reachability(True, 50.0),
            [("info", "the cluster is reachable again"), "cluster.reachable"],
        ),
    ],
)
def test_reached(
    before: Reachability, down: tuple[int, ...] | None, after: Reachability, said: list[object]
) -> None:
    out = Outbox("p")
    assert reached(before, 50.0, down, out) == after
    assert _said(out) == said


@pytest.mark.parametrize(
    ("before", "after", "said"),
    [
        (
            UP,
            Reachability(False, 50.0, (), "refused"),
            [("error", "the cluster cannot be reached"), "cluster.unreachable"],
        ),
        (DOWN, DOWN, []),  # unreachable since it first failed, said once
    ],
)
def test_lost(before: Reachability, after: Reachability, said: list[object]) -> None:
    out = Outbox("p")
    assert lost(before, 50.0, "refused", out) == after
    assert _said(out) == said


def test_without_a_plan_the_lines_name_none() -> None:
    out = Outbox(None)
    lost(UP, 50.0, "refused", out)
    log, notify = out.before
    assert isinstance(log, Log) and dict(log.fields) == {"error": "refused"}
    assert isinstance(notify, Notify) and dict(notify.data) == {"error": "refused"}


def _said(out: Outbox) -> list[object]:
    return [
        (e.level, e.message) if isinstance(e, Log) else e.kind
        for e in out.before
        if isinstance(e, Log | Notify)
    ]

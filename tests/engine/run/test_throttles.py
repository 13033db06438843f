"""The throttle part's answers: each write Kafka applied journaled as set or restored, failures said."""

from __future__ import annotations

import pytest

from reassignd import config_keys
from reassignd.engine.journal import EventKind
from reassignd.engine.limits import Limits
from reassignd.engine.run.effects import Answered, Log, Notify
from reassignd.engine.run.outbox import Outbox
from reassignd.engine.run.throttles import answered, synced
from reassignd.engine.throttle import Move
from reassignd.engine.throttle_book import ThrottleBook, ThrottleSync
from tests.engine.helpers import cluster, tp

SNAPSHOT = cluster(range(1, 4), {tp(0): (1, 2)}, broker_configs={1: {}, 2: {}, 3: {}})
LIMITS = Limits(leader_throttled_rate=100, follower_throttled_rate=100)
MOVE = Move(tp(0), source=(1, 2), adding=(3,))


def _sync(out: Outbox) -> ThrottleSync:
    return synced(ThrottleBook(), SNAPSHOT, [MOVE], LIMITS, out, owned={"t": frozenset({0})})


def test_a_sync_records_originals_before_its_writes() -> None:
    out = Outbox("p")
    sync = _sync(out)
    assert out.record_originals and out.written and out.throttle_writes == sync.writes
    keys = {(w.name, w.key) for w in out.throttle_writes}
    assert ("1", config_keys.LEADER_REPLICATION_THROTTLED_RATE) in keys and (
        "3",
        config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE,
    ) in keys


@pytest.mark.parametrize(("failed", "journaled", "said"), [(False, True, Notify), (True, False, Log)])
def test_answers(failed: bool, journaled: bool, said: type) -> None:
    sync = _sync(Outbox("p"))
    out = Outbox("p")
    errors = {(w.resource, w.name): "timed out" for w in sync.writes}
    answered(sync, Answered(1.0, throttles=errors if failed else {}), out)
    kinds = {e.kind for e in out.events}
    assert (kinds == {EventKind.THROTTLE_SET}) == journaled
    assert {type(e) for e in out.after} == {said}

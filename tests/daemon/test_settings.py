"""Runtime settings are durable: a restart, a failover and a SIGHUP keep them, by the documented rule."""

from __future__ import annotations

from typing import Any

import pytest
from structlog.testing import capture_logs

from reassignd import config_keys
from reassignd.daemon import settings
from reassignd.daemon.service import ServiceError
from reassignd.daemon.settings import FileSettings
from reassignd.engine import Limits
from reassignd.store.base import EventKind, StoreError, WriteBatch
from tests.daemon.inprocess import InProcessDaemon

INCOMING = "reassignment.max.incoming.replica.movements.per.broker"
OUTGOING = "reassignment.max.outgoing.replica.movements.per.broker"
RATE = "follower.reassignment.throttled.rate"
SCENARIO: dict[str, Any] = {"brokers": [{"id": 1}], "topics": []}
FILE = {INCOMING: 2, OUTGOING: 2, RATE: 50_000_000}


def file_settings(**changes: Any) -> FileSettings:
    return FileSettings(Limits.from_mapping({**FILE, **changes}), None, 10, 100)


def daemon() -> InProcessDaemon:
    return InProcessDaemon(SCENARIO, FILE)


# -- the rule, pure ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("file_now", "kept"),
    [
        ({}, True),  # the file did not change: the runtime value stands
        ({OUTGOING: 3}, True),  # the file changed something else: still stands
        ({INCOMING: 4}, False),  # the file changed this key: the file wins
    ],
)
def test_a_runtime_change_stands_until_the_files_own_value_changes(
    file_now: dict[str, Any], kept: bool
) -> None:
    document, _ = settings.changed({}, file_settings(), {INCOMING: 1}, at=0.0)
    outcome = settings.reconcile(document, file_settings(**file_now))
    assert (INCOMING in outcome.kept, INCOMING in outcome.dropped) == (kept, not kept)
    in_force = settings.effective(outcome.document, file_settings(**file_now))
    assert in_force.limits.max_incoming_per_broker == (1 if kept else file_now[INCOMING])


def test_changes_are_all_or_nothing_and_name_every_problem() -> None:
    with pytest.raises(Exception) as info:
        settings.changed(
            {}, file_settings(), {INCOMING: 0, config_keys.AUTO_THROTTLE_STEP_BYTES_PER_SECOND: -5}, at=0.0
        )
    fields = {p.field for p in info.value.problems}  # type: ignore[attr-defined]
    assert fields == {INCOMING, config_keys.AUTO_THROTTLE_STEP_BYTES_PER_SECOND}


def test_an_unknown_key_gets_the_likely_one_suggested() -> None:
    with pytest.raises(Exception) as info:
        settings.changed(
            {}, file_settings(), {"reassignment.max.incomng.replica.movements.per.broker": 1}, 0.0
        )
    (problem,) = info.value.problems  # type: ignore[attr-defined]
    assert problem.message == f"unknown key; did you mean {INCOMING}?"


# -- the daemon --------------------------------------------------------------------------------------


async def test_the_api_suggests_the_likely_key_for_a_typo() -> None:
    """The issue: an unknown limit key over the API (and so MQTT, and curl) got the list of every key and no
    suggestion; only the CLI guessed. One helper says it everywhere."""
    d = daemon()
    await d.controller.start()
    for change in (d.controller.set_limits, d.controller.set_throttles):
        with pytest.raises(ServiceError) as refused:
            await change({"reassignment.max.incomng.replica.movements.per.broker": 1})
        (problem,) = refused.value.problems
        assert problem.field == "reassignment.max.incomng.replica.movements.per.broker"
        assert "did you mean" in problem.message or "known:" in problem.message
    with pytest.raises(ServiceError) as refused:
        await d.controller.set_limits({"reassignment.max.incomng.replica.movements.per.broker": 1})
    assert refused.value.problems[0].message == f"unknown key; did you mean {INCOMING}?"
    with pytest.raises(ServiceError) as refused:
        await d.controller.set_throttles({"follower.reassignment.throttle.rate": 1})
    assert refused.value.problems[0].message == f"unknown key; did you mean {RATE}?"


async def test_a_runtime_limit_survives_a_restart() -> None:
    d = daemon()
    await d.controller.start()
    await d.controller.set_limits({INCOMING: 1})
    await d.controller.set_throttles({RATE: 20_000_000})
    d.crash()
    with capture_logs() as logs:
        await d.controller.start()
    assert d.controller.limits_in_force.max_incoming_per_broker == 1
    assert d.controller.limits_in_force.follower_throttled_rate == 20_000_000
    kept = {e["key"] for e in logs if e["event"] == "runtime setting kept"}
    assert kept == {INCOMING, RATE}


async def test_a_runtime_limit_survives_a_failover() -> None:
    d = daemon()
    await d.controller.start()
    await d.controller.set_limits({INCOMING: 1})
    standby = d._new_controller()  # another daemon on the same store
    await standby.leadership_changed(False, "http://leader")
    assert standby.limits_in_force.max_incoming_per_broker == 1, "a standby shows the limits in force"
    await standby.leadership_changed(True)
    assert standby.limits_in_force.max_incoming_per_broker == 1


async def test_a_sighup_keeps_a_runtime_limit_unless_it_changes_that_key_and_says_why() -> None:
    d = daemon()
    await d.controller.start()
    await d.controller.set_limits({INCOMING: 1})
    with capture_logs() as logs:
        await d.controller.config_reloaded(file_settings(**{OUTGOING: 3}))
    assert d.controller.limits_in_force.max_incoming_per_broker == 1
    assert d.controller.limits_in_force.max_outgoing_per_broker == 3
    [kept] = [e for e in logs if e["event"] == "runtime setting kept"]
    assert kept["key"] == INCOMING and "config file still says 2" in kept["why"]
    [after] = [e for e in logs if e["event"] == "settings after reload"]
    assert after["changed"] == {OUTGOING: [2, 3]} and after["runtime"] == [INCOMING]

    with capture_logs() as logs:
        await d.controller.config_reloaded(file_settings(**{OUTGOING: 3, INCOMING: 4}))
    assert d.controller.limits_in_force.max_incoming_per_broker == 4
    [dropped] = [e for e in logs if e["event"] == "runtime setting dropped"]
    assert dropped["key"] == INCOMING and "changed it from 2 to 4" in dropped["why"]
    d.crash()
    await d.controller.start()
    assert d.controller.limits_in_force.max_incoming_per_broker == 2, "the file's value from the start"


async def test_a_reset_gives_the_files_values_back_for_good() -> None:
    d = daemon()
    await d.controller.start()
    await d.controller.set_limits({INCOMING: 1, OUTGOING: 1})
    await d.controller.reset_limits([INCOMING])
    assert d.controller.limits_in_force.max_incoming_per_broker == 2
    assert d.controller.limits_in_force.max_outgoing_per_broker == 1
    await d.controller.reset_limits(None)
    d.crash()
    await d.controller.start()
    assert (
        d.controller.limits_in_force.max_incoming_per_broker,
        d.controller.limits_in_force.max_outgoing_per_broker,
    ) == (2, 2)
    journal = await d.journal(EventKind.LIMITS_CHANGED)
    assert [e.data for e in journal] == [{INCOMING: 1, OUTGOING: 1}, {"reset": [INCOMING]}, {"reset": "all"}]


async def test_a_change_the_store_refuses_applies_nothing() -> None:
    d = daemon()
    await d.controller.start()
    real = d.store.commit

    async def refuse(batch: WriteBatch) -> Any:
        raise StoreError("the store is down")

    d.store.commit = refuse  # type: ignore[method-assign]
    with pytest.raises(StoreError):
        await d.controller.set_limits({INCOMING: 1})
    assert d.controller.limits_in_force.max_incoming_per_broker == 2
    d.store.commit = real  # type: ignore[method-assign]
    with pytest.raises(ServiceError):
        await d.controller.set_limits({INCOMING: 1, "reassignment.stall.window.seconds": float("nan")})
    assert d.controller.limits_in_force.max_incoming_per_broker == 2


async def test_a_change_waits_for_the_running_cycle() -> None:
    """Swapped in between cycles: a cycle holding the lock never sees the limits change under it."""
    import asyncio

    d = daemon()
    await d.controller.start()
    async with d.controller.lock:
        change = asyncio.create_task(d.controller.set_limits({INCOMING: 1}))
        await asyncio.sleep(0.01)
        assert d.controller.limits_in_force.max_incoming_per_broker == 2
    await change
    assert d.controller.limits_in_force.max_incoming_per_broker == 1

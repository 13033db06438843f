"""Issue 31 item 2: kill -9 mid-plan, then 64 bytes damaged at the end of `reassignd.db-wal`. SQLite's
recovery drops the last committed transactions; on main the daemon started healthy and went on from the
older store with no word (or idle, its throttles left on the brokers). Now it says what it found, holds
every cluster write, shows it in status, a metric and `/readyz`-independent alerting, and goes on only
once an operator runs `reassignd recover --adopt`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import structlog

from reassignd.daemon.controller import HELD, Controller
from reassignd.daemon.service import ServiceError
from reassignd.engine import Limits
from reassignd.store.aio import AsyncStore
from reassignd.store.base import EventKind, PlanStatus
from reassignd.store.sqlite import SqliteStore
from tests.daemon.inprocess import InProcessDaemon, plan_of
from tests.daemon.test_failure_paths import MB, daemon


def _store(state: Path) -> AsyncStore:
    store = SqliteStore(state)
    store._db.execute("PRAGMA wal_autocheckpoint = 0")
    return AsyncStore(store)


async def _mid_plan(tmp_path: Path) -> tuple[InProcessDaemon, Path, str]:
    d = daemon([[1, 2, 3], [1, 2, 3], [1, 2, 3]], size=2_000 * MB)
    live = tmp_path / "live"
    live.mkdir()
    d.store = _store(live)  # type: ignore[assignment]
    d.controller = Controller(d.admin, d.store, Limits.from_mapping(d.limits), clock=d.clock)  # type: ignore[arg-type]
    plan_id = await d.submit(plan_of({("t", 0): [4, 2, 3], ("t", 1): [5, 2, 3], ("t", 2): [6, 2, 3]}))
    await d.run(lambda: len(d.reassigning()) >= 2)
    return d, live, plan_id


def _killed_copy(live: Path, to: Path, damage: bool) -> Path:
    to.mkdir()
    for name in ("reassignd.db", "reassignd.db-wal"):
        shutil.copyfile(live / name, to / name)
    if damage:
        wal = to / "reassignd.db-wal"
        data = bytearray(wal.read_bytes())
        data[-64:] = bytes(b ^ 0xFF for b in data[-64:])
        wal.write_bytes(bytes(data))
    return to


async def test_a_damaged_wal_end_holds_every_write_until_recover(tmp_path: Path) -> None:
    d, live, plan_id = await _mid_plan(tmp_path)
    before = d.throttle_configs()
    state = _killed_copy(live, tmp_path / "killed", damage=True)
    store = AsyncStore(SqliteStore(state))
    with structlog.testing.capture_logs() as logs:
        controller = Controller(d.admin, store, Limits.from_mapping(d.limits), clock=d.clock)  # type: ignore[arg-type]
        await controller.start()
    said = [e for e in logs if e["log_level"] == "error"]
    assert len(said) == 1 and "does not explain itself" in said[0]["event"], logs
    assert "reassignd.db-wal" in said[0]["findings"][0]

    for _ in range(5):  # held: no step, no throttle, no restore, whatever the cluster does meanwhile
        await controller.probe()
        assert await controller.cycle() == HELD
        d.sim.advance(5)
    assert d.throttle_configs() == before
    status = controller.daemon_status()
    assert status["store"]["findings"] and "committed transaction" in status["store"]["findings"][0]
    assert status["last_cycle"] == HELD
    assert controller.metrics["reassignd_store_findings"]._value.get() == 1
    with pytest.raises(ServiceError, match="reassignd recover") as refused:
        await controller.pause(plan_id)
    assert refused.value.code == "conflict"
    with pytest.raises(ServiceError, match="mode"):
        await controller.recover({"mode": "clean"})

    answer = await controller.recover({"mode": "adopt"})
    assert answer["adopted"] and controller.daemon_status()["store"]["findings"] == []
    assert controller.metrics["reassignd_store_findings"]._value.get() == 0
    journaled = await store.journal(kinds=[EventKind.ERROR])
    assert journaled[-1].data["recovered"] == "adopt"
    d.controller, d.store = controller, store  # type: ignore[assignment]
    await d.run(seconds=7200)
    assert (await store.get_plan(plan_id)).status is PlanStatus.COMPLETED  # type: ignore[union-attr]
    assert d.replicas("t", 0) == [4, 2, 3] and d.replicas("t", 2) == [6, 2, 3]
    with pytest.raises(ServiceError, match="nothing to recover"):
        await controller.recover({"mode": "adopt"})


async def test_an_intact_wal_after_kill_9_resumes_without_a_hold(tmp_path: Path) -> None:
    d, live, plan_id = await _mid_plan(tmp_path)
    state = _killed_copy(live, tmp_path / "killed", damage=False)
    store = AsyncStore(SqliteStore(state))
    controller = Controller(d.admin, store, Limits.from_mapping(d.limits), clock=d.clock)  # type: ignore[arg-type]
    await controller.start()
    assert controller.findings == ()
    d.controller, d.store = controller, store  # type: ignore[assignment]
    await d.run(seconds=7200)
    assert (await store.get_plan(plan_id)).status is PlanStatus.COMPLETED  # type: ignore[union-attr]

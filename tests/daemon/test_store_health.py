"""Issue 31 item 3: a store that cannot commit is visible. On main a full disk showed only as
`cannot rollback - no transaction is active` logged every cycle, the status said `running`, `/readyz`
stayed ready, and the retention task ended the daemon; a store locked elsewhere showed nothing at all.
SQLite's `max_page_count` gives its real SQLITE_FULL ('database or disk is full') without root."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import structlog

from reassignd.daemon.app import prune_history
from reassignd.daemon.controller import Controller
from reassignd.engine import Limits
from reassignd.store.aio import AsyncStore, StoreHealth
from reassignd.store.base import PlanStatus, StoreUnavailable
from reassignd.store.sqlite import SqliteStore
from tests.daemon.inprocess import InProcessDaemon, plan_of
from tests.daemon.test_failure_paths import MB, daemon, ended


def _fill(d: InProcessDaemon) -> None:
    """No page beyond the current ones, and every free byte in them taken: any row added fails."""
    db = d.store.store._db  # type: ignore[attr-defined]
    db.execute("CREATE TABLE IF NOT EXISTS ballast (b BLOB)")
    db.execute(f"PRAGMA max_page_count = {db.execute('PRAGMA page_count').fetchone()[0]}")
    size = 4096
    while size:
        try:
            db.execute("INSERT INTO ballast VALUES (zeroblob(?))", (size,))
        except sqlite3.OperationalError:
            size //= 2


def _room(d: InProcessDaemon) -> None:
    d.store.store._db.execute("PRAGMA max_page_count = 1073741823")  # type: ignore[attr-defined]


async def test_a_full_disk_mid_plan_is_visible_and_the_plan_resumes_when_it_has_room() -> None:
    d = daemon([[1, 2, 3], [1, 2, 3]], size=2_000 * MB)
    plan_id = await d.submit(plan_of({("t", 0): [4, 2, 3], ("t", 1): [5, 2, 3]}))
    await d.run(lambda: bool(d.reassigning()))
    _fill(d)
    failures: list[StoreUnavailable] = []
    with structlog.testing.capture_logs() as logs:
        for _ in range(60):  # cycles that change nothing commit nothing; a step's end does
            try:
                await d.cycle()
            except StoreUnavailable as exc:
                failures.append(exc)
                if len(failures) == 4:
                    break
    assert len(failures) == 4
    assert await d.status_of(plan_id) is PlanStatus.RUNNING, "its end is not committed while full"
    assert all("database or disk is full" in str(e) for e in failures), failures
    unavailable = [e for e in logs if e["log_level"] == "error"]
    assert len(unavailable) == 1, logs  # once per episode, with the storage's own words
    assert "database or disk is full" in unavailable[0]["error"]
    status = d.controller.daemon_status()
    assert status["store"]["available"] is False
    assert status["store"]["since"] is not None and "full" in status["store"]["error"]
    ready = d.controller.readiness()
    assert ready["ready"] is False and ready["reason"] == "store unavailable"
    assert d.controller.metrics["reassignd_store_available"]._value.get() == 0

    _room(d)
    with structlog.testing.capture_logs() as logs:
        # the episode ends with the first committed write (a step's end), which a cycle may not have
        await d.run(lambda: any(e["log_level"] == "info" for e in logs), seconds=600)
    assert [e["event"] for e in logs if e["log_level"] == "info"][:1] == [
        "the state store is available again"
    ]
    assert d.controller.daemon_status()["store"] == {
        "available": True,
        "since": None,
        "error": None,
        "findings": [],
    }
    assert d.controller.readiness()["ready"] is True
    assert d.controller.metrics["reassignd_store_available"]._value.get() == 1
    assert await ended(d, plan_id) is PlanStatus.COMPLETED
    assert d.replicas("t", 0) == [4, 2, 3] and d.replicas("t", 1) == [5, 2, 3]
    assert d.store.replays == []


async def test_the_retention_task_outlives_a_store_it_cannot_write(tmp_path: Path) -> None:
    """On main a store error that was not a StoreError (here SQLite's 'database is locked', from a lock
    another process holds; in the issue 'cannot rollback' after a full disk) ended the retention task,
    and with it the daemon (exit 1)."""
    store = AsyncStore(SqliteStore(tmp_path, busy_timeout=0.01))
    d = daemon([[1, 2, 3]])
    controller = Controller(d.admin, store, Limits.from_mapping(d.limits), clock=d.clock)  # type: ignore[arg-type]
    other = sqlite3.connect(tmp_path / "reassignd.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    config: Any = {"store.retention.days": 0.0, "store.retention.plans": 0}
    task = asyncio.create_task(prune_history(controller, lambda: config, interval=0.001))
    await asyncio.sleep(0.2)
    assert not task.done(), repr(task.exception()) if task.done() else None
    assert controller.daemon_status()["store"]["available"] is False
    assert "database is locked" in controller.daemon_status()["store"]["error"]
    other.execute("COMMIT")
    for _ in range(100):  # the task's next commit succeeds (0.2 s was too short at a load of 28)
        if controller.daemon_status()["store"]["available"]:
            break
        await asyncio.sleep(0.05)
    assert controller.daemon_status()["store"]["available"] is True
    task.cancel()
    other.close()
    await store.close()


class _LockHolder:
    """Holds SQLite's write lock on `db` from another connection of this process, or from another process
    (POSIX locks are per process: SQLite shares them between a process's own connections by itself)."""

    def __init__(self, db: Path, in_process: bool) -> None:
        self.in_process = in_process
        if in_process:
            self.conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
            self.conn.execute("BEGIN IMMEDIATE")
            return
        code = (
            "import sqlite3, sys\n"
            f"c = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
            "c.execute('BEGIN IMMEDIATE')\n"
            "print('locked', flush=True)\n"
            "sys.stdin.readline()\n"
            "c.execute('COMMIT')\n"
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "locked"

    def release(self) -> None:
        if self.in_process:
            self.conn.execute("COMMIT")
            return
        assert self.proc.stdin is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        if self.in_process:
            self.conn.close()
        else:
            self.proc.communicate(timeout=10)  # closes its pipes


@pytest.mark.parametrize("in_process", [True, False], ids=["another connection", "another process"])
async def test_a_store_locked_by_another_process_shows_while_the_call_waits(
    tmp_path: Path, in_process: bool
) -> None:
    """Another connection or process holds SQLite's write lock (a backup tool, a second daemon started on
    the same state dir): the commit waits for it. Within `stall_after` seconds it shows: log line, status,
    metric, `/readyz`; released, it goes through and the store is available again."""
    SqliteStore(tmp_path).close()
    store = AsyncStore(SqliteStore(tmp_path, busy_timeout=30.0), StoreHealth(stall_after=0.3))
    d = daemon([[1, 2, 3]])
    controller = Controller(d.admin, store, Limits.from_mapping(d.limits), clock=d.clock)  # type: ignore[arg-type]
    holder = _LockHolder(tmp_path / "reassignd.db", in_process)
    release = threading.Timer(1.0, holder.release)
    with structlog.testing.capture_logs() as logs:
        submit = asyncio.create_task(controller.submit_plan(plan_of({("t", 0): [4, 2, 3]})))
        await asyncio.sleep(0.5)
        controller.store.health.check_stalls()
        assert not submit.done()
        assert controller.daemon_status()["store"]["available"] is False
        assert "has not answered" in controller.daemon_status()["store"]["error"]
        assert controller.readiness()["reason"] == "store unavailable"
        assert controller.metrics["reassignd_store_available"]._value.get() == 0
        release.start()
        await submit
    release.join()
    errors = [e for e in logs if e["log_level"] == "error"]
    assert len(errors) == 1 and "does not answer" in errors[0]["event"], logs
    assert controller.daemon_status()["store"]["available"] is True
    assert controller.readiness()["reason"] != "store unavailable"
    holder.close()
    await store.close()


def _run_daemon(state_dir: Path) -> tuple[int, str]:
    """`reassignd run` in this process, as far as its store: (exit code, stderr)."""
    import contextlib
    import io
    import socket

    from reassignd.cli import main

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(
            [
                "run",
                "--state-dir",
                str(state_dir),
                "--bootstrap-servers",
                "127.0.0.1:1",
                "--api-listen",
                f"127.0.0.1:{port}",
            ]
        )
    return code, err.getvalue()


def test_a_garbage_database_is_named_at_start_not_called_a_bug(tmp_path: Path) -> None:
    (tmp_path / "reassignd.db").write_bytes(b"garbage" * 1000)
    code, err = _run_daemon(tmp_path)
    assert code == 1
    assert "(a bug)" not in err and str(tmp_path / "reassignd.db") in err, err
    assert "file is not a database" in err and "move it aside" in err, err


def test_a_state_dir_that_cannot_be_created_is_named(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    code, err = _run_daemon(tmp_path / "file" / "state")
    assert code == 1
    assert "(a bug)" not in err and "state.dir" in err and str(tmp_path / "file" / "state") in err, err


def test_a_database_that_cannot_be_opened_is_named(tmp_path: Path) -> None:
    (tmp_path / "reassignd.db").mkdir()
    code, err = _run_daemon(tmp_path)
    assert code == 1
    assert "(a bug)" not in err and str(tmp_path / "reassignd.db") in err, err

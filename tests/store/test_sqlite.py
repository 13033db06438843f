"""SQLite specifics: durability under kill -9, two connections at once, pragmas, append-only journal."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from reassignd.model import TopicPartition
from reassignd.store import Event, EventKind, SqliteStore, StepReplayError, StoreError, replayed_steps
from reassignd.store.base import PlanStatus, WriteBatch
from tests.store.crash_writer import PARTITIONS, PLAN_ID

ROOT = Path(__file__).resolve().parents[2]


def _run_writer_until_killed(
    db: Path, first: int, acknowledged_before_kill: int
) -> tuple[list[int], list[int]]:
    """Start the writer, SIGKILL it after that many acknowledgements; (acknowledged, replayed)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.store.crash_writer", str(db), str(first)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    acked: list[int] = []
    replayed: list[int] = []
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        while len(acked) < acknowledged_before_kill:
            line = proc.stdout.readline()
            assert line, "writer exited early"
            if line.startswith("replay"):
                replayed.append(int(line.split()[1]))
            else:
                acked.append(int(line))
        os.kill(proc.pid, signal.SIGKILL)
        # read() drains what readline() already buffered; communicate(timeout=...) reads the raw pipe and
        # dropped it: acknowledged writes then looked like replays (a loaded run failed on it)
        rest = proc.stdout.read()
        proc.stdout.close()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None and not proc.stdout.closed:
            proc.stdout.close()
    for line in rest.splitlines():  # acknowledged between our last read and the kill
        if line.startswith("replay"):
            replayed.append(int(line.split()[1]))
        elif line.strip():
            acked.append(int(line))
    assert proc.returncode == -signal.SIGKILL
    return acked, replayed


def _check_durable(db: Path, acked: list[int]) -> None:
    store = SqliteStore(db)
    try:
        assert store.integrity_check() == "ok"
        started = {
            e.step_index: e for e in store.journal(kinds=[EventKind.STEP_STARTED]) if e.step_index is not None
        }
        missing = [i for i in acked if i not in started]
        assert missing == [], f"acknowledged writes lost: {missing[:10]}"
        assert replayed_steps(store.journal()) == []
        # Each write is one transaction: its partition state and original config are there too.
        states = store.partition_states(PLAN_ID)
        originals = {key for (_, key) in store.original_configs()}
        for i in acked:
            assert states[TopicPartition("t", i % PARTITIONS)]["i"] >= i
            assert f"key.{i}" in originals
        highest = max(started)
        assert sorted(started) == list(range(highest + 1)), "a gap: a write half-applied or skipped"
    finally:
        store.close()


@pytest.mark.slow
def test_kill_9_loses_no_acknowledged_write(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    first = 0
    all_acked: list[int] = []
    for kill_after in (37, 150, 301):  # three different moments
        acked, replayed = _run_writer_until_killed(db, first, kill_after)
        assert replayed in ([], [first]), "only the one unacknowledged write may have been committed"
        all_acked += acked
        _check_durable(db, all_acked)
        first = max(all_acked) + 1  # restart from the first unacknowledged write: it may be a replay


def test_two_connections_write_concurrently(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    stores = [SqliteStore(db, busy_timeout=60), SqliteStore(db, busy_timeout=60)]
    stores[0].submit_plan("p", {"version": 1, "partitions": []})
    tp = TopicPartition("t", 0)
    outcomes: list[list[str]] = [[], []]
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for step in range(60):
                stores[n].append(Event(EventKind.THROTTLE_SET, "p", data={"writer": n, "i": step}))
                try:
                    stores[n].append(Event(EventKind.STEP_STARTED, "p", tp, step, {"writer": n}))
                    outcomes[n].append("won")
                except StepReplayError:
                    outcomes[n].append("replay")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    # Every step was started exactly once, by one writer or the other.
    assert outcomes[0].count("won") + outcomes[1].count("won") == 60
    journal = stores[1].journal()
    assert [e.seq for e in journal] == sorted({e.seq for e in journal})
    throttles = [e for e in journal if e.kind is EventKind.THROTTLE_SET]
    assert len(throttles) == 120
    for n in (0, 1):  # each writer's own entries keep their order
        assert [e.data["i"] for e in throttles if e.data["writer"] == n] == list(range(60))
    assert replayed_steps(journal) == []
    for store in stores:
        store.close()


def test_pragmas_and_directory_path(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    assert store.path == tmp_path / "reassignd.db"
    raw = sqlite3.connect(store.path)
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    raw.close()
    assert store._db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    store.close()
    with pytest.raises(ValueError, match="synchronous"):
        SqliteStore(tmp_path / "x.db", synchronous="OFF")


def test_journal_is_append_only_even_to_raw_sql(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    store.append(Event(EventKind.ERROR, data={"m": "x"}))
    store.close()
    raw = sqlite3.connect(tmp_path / "s.db")
    for statement in ("UPDATE journal SET kind = 'x'", "DELETE FROM journal"):
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            raw.execute(statement)
    raw.close()


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    SqliteStore(tmp_path / "s.db").close()
    raw = sqlite3.connect(tmp_path / "s.db")
    raw.execute("PRAGMA user_version = 99")
    raw.close()
    with pytest.raises(StoreError, match="schema version 99"):
        SqliteStore(tmp_path / "s.db")


def test_a_version_1_database_is_migrated_in_place(tmp_path: Path) -> None:
    """A state dir written by the previous release: everything kept, plans gain their partition counts."""
    path = tmp_path / "reassignd.db"
    old = sqlite3.connect(path)
    old.executescript((Path(__file__).parent / "schema_v1.sql").read_text())
    old.executescript(
        """
        INSERT INTO plans VALUES ('p', 1,
            '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]}]}',
            '{}', 'completed', 1, 2, 1, 2, NULL);
        INSERT INTO original_configs VALUES ('broker', '1', 'follower.replication.throttled.rate', NULL, 1);
        INSERT INTO journal (at, kind, plan_id, data_json) VALUES (1, 'plan.submitted', 'p', '{}');
        PRAGMA user_version=1;
        """
    )
    old.close()
    store = SqliteStore(path)
    [summary] = store.list_plans()
    assert (summary.status, summary.summary, summary.partitions) == (PlanStatus.COMPLETED, None, 1)
    [original] = store.original_configs().values()
    assert (original.value, original.written) == (None, None)
    assert [e.kind.value for e in store.journal()] == ["plan.submitted"]
    assert store.broker_roles() == {}  # version 3: the brokers' lasting roles
    assert store.anomalies() == {}  # version 4: self-healing's anomalies
    store.commit(WriteBatch().put_anomaly("broker-failure-1-1", {"id": "broker-failure-1-1"}))
    assert list(store.anomalies()) == ["broker-failure-1-1"]
    store.close()

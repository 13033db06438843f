"""The SQLite store tells the truth about itself (issue 31, items 2 and 3): a full disk shows as itself, a
file that is not a sound database is named, and a WAL whose committed end SQLite will drop is reported."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from reassignd.model import TopicPartition
from reassignd.store import Event, EventKind, SqliteStore, StoreError, WriteBatch
from reassignd.store.base import PlanStatus, StoreCorrupt, StoreUnavailable
from reassignd.store.sqlite import inspect_wal


def _big_plan(n: int = 400) -> dict[str, object]:
    return {
        "version": 1,
        "partitions": [{"topic": f"t{i}", "partition": i, "replicas": [1, 2, 3]} for i in range(n)],
    }


def _fill(store: SqliteStore) -> None:
    """SQLite's own SQLITE_FULL ('database or disk is full'), without root: no page beyond the current."""
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]
    store._db.execute(f"PRAGMA max_page_count = {pages}")


def test_a_full_disk_is_reported_as_itself_not_as_a_failed_rollback(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    _fill(store)
    with pytest.raises(StoreUnavailable, match="full") as raised:
        store.commit(WriteBatch().submit_plan("p1", _big_plan(), {}))
    assert "cannot rollback" not in str(raised.value)
    assert str(store.path) in str(raised.value)
    assert not store._db.in_transaction
    # the disk has room again: the next commit goes through on the same connection
    store._db.execute("PRAGMA max_page_count = 1073741823")
    store.commit(WriteBatch().submit_plan("p1", _big_plan(), {}))
    assert store.get_plan("p1") is not None
    store.close()


def test_pruning_while_full_raises_a_store_error(tmp_path: Path) -> None:
    """The retention task catches StoreError: a raw sqlite3 error would end the daemon."""
    store = SqliteStore(tmp_path)
    for i in range(3):
        store.commit(WriteBatch().submit_plan(f"p{i}", _big_plan(50), {}))
        store.commit(WriteBatch().set_status(f"p{i}", PlanStatus.CANCELLED))
    store.append(*[Event(EventKind.ERROR, data={"m": "x" * 2000}) for _ in range(50)])
    _fill(store)
    store._db.execute("PRAGMA max_page_count = 1")  # below the current size: every write fails
    try:
        store.prune(before=1e12, keep_plans=0, limit=5)
    except StoreError as exc:
        assert "cannot rollback" not in str(exc)
    store.close()


def test_a_garbage_database_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "reassignd.db"
    path.write_bytes(b"this is not a database" * 500)
    with pytest.raises(StoreCorrupt, match=str(path)):
        SqliteStore(tmp_path)


def test_a_read_only_state_dir_is_named(tmp_path: Path) -> None:
    tmp_path.chmod(0o500)
    try:
        if (tmp_path / "probe").parent.stat().st_uid == 0 and _root():
            pytest.skip("root writes anywhere")
        with pytest.raises(StoreUnavailable, match=str(tmp_path / "reassignd.db")):
            SqliteStore(tmp_path)
    finally:
        tmp_path.chmod(0o700)


def test_a_state_dir_whose_database_cannot_be_opened_is_named(tmp_path: Path) -> None:
    (tmp_path / "reassignd.db").mkdir()  # what root cannot be kept from by permissions
    with pytest.raises(StoreUnavailable, match=str(tmp_path / "reassignd.db")):
        SqliteStore(tmp_path)


def _root() -> bool:
    import os

    return os.geteuid() == 0


def test_a_damaged_page_fails_the_integrity_check_at_open(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    for i in range(5):
        store.commit(WriteBatch().submit_plan(f"p{i}", _big_plan(200), {}))
    store.close()
    path = tmp_path / "reassignd.db"
    data = bytearray(path.read_bytes())
    page = 4096
    assert len(data) > 4 * page
    for first in (page, 2 * page, 3 * page):  # b-tree page headers and their cell pointers
        for offset in range(first, first + 40):
            data[offset] = 0xA5
    path.write_bytes(bytes(data))
    with pytest.raises(StoreCorrupt, match=str(path)):
        SqliteStore(tmp_path)


def _crashed_copy(tmp_path: Path, commits: int) -> Path:
    """A state dir as kill -9 leaves it: the database and its WAL, never checkpointed into the file."""
    live = tmp_path / "live"
    live.mkdir()
    store = SqliteStore(live)
    store._db.execute("PRAGMA wal_autocheckpoint = 0")
    store.commit(WriteBatch().submit_plan("p1", _big_plan(20), {}))
    for i in range(commits):
        store.commit(
            WriteBatch().put_partition_state(
                "p1", TopicPartition(f"t{i}", i), {"status": "in_flight", "i": i}
            )
        )
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    for name in ("reassignd.db", "reassignd.db-wal"):
        shutil.copyfile(live / name, crashed / name)
    store.close()
    return crashed


def test_an_intact_wal_after_kill_9_is_replayed_and_reports_nothing(tmp_path: Path) -> None:
    crashed = _crashed_copy(tmp_path, commits=5)
    assert inspect_wal(crashed / "reassignd.db-wal").dropped_commits == 0
    store = SqliteStore(crashed)
    assert store.findings == ()
    assert len(store.partition_states("p1")) == 5
    store.close()


def test_damage_at_the_end_of_the_wal_is_reported_not_silently_dropped(tmp_path: Path) -> None:
    """Issue 31 item 2: kill -9 mid-plan, 64 bytes damaged at the end of reassignd.db-wal; SQLite drops the
    last transaction. On main the store opened with no word of it."""
    crashed = _crashed_copy(tmp_path, commits=5)
    wal = crashed / "reassignd.db-wal"
    data = bytearray(wal.read_bytes())
    data[-64:] = bytes(b ^ 0xFF for b in data[-64:])
    wal.write_bytes(bytes(data))
    report = inspect_wal(wal)
    assert report.dropped_commits == 1
    store = SqliteStore(crashed)
    assert len(store.partition_states("p1")) == 4  # what SQLite kept
    assert len(store.findings) == 1
    assert "reassignd.db-wal" in store.findings[0] and "1 committed transaction" in store.findings[0]
    store.close()


def test_damage_earlier_in_the_wal_counts_every_transaction_lost(tmp_path: Path) -> None:
    crashed = _crashed_copy(tmp_path, commits=5)
    wal = crashed / "reassignd.db-wal"
    report = inspect_wal(wal)
    data = bytearray(wal.read_bytes())
    frame = 24 + report.page_size
    offset = 32 + (report.valid_frames - 4) * frame + 24 + 100  # page data of a frame 4 from the end
    data[offset : offset + 64] = bytes(b ^ 0xFF for b in data[offset : offset + 64])
    wal.write_bytes(bytes(data))
    assert inspect_wal(wal).dropped_commits >= 2
    store = SqliteStore(crashed)
    assert store.findings
    store.close()


def test_sqlite_itself_drops_the_damaged_end_silently(tmp_path: Path) -> None:
    """Why the store inspects the WAL itself: SQLite's own checks say nothing."""
    crashed = _crashed_copy(tmp_path, commits=3)
    wal = crashed / "reassignd.db-wal"
    data = bytearray(wal.read_bytes())
    data[-64:] = bytes(b ^ 0xFF for b in data[-64:])
    wal.write_bytes(bytes(data))
    raw = sqlite3.connect(crashed / "reassignd.db")
    assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    raw.close()

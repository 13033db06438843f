"""The embedded state store: one SQLite file in WAL mode (stdlib sqlite3).

Durability. A commit returns only after SQLite has written the transaction to the WAL and, with
`synchronous=FULL` (the default here), fsynced it. kill -9 of the daemon can therefore lose nothing that
was acknowledged: the WAL is on disk, and the next open replays it. (Against kill -9 alone even NORMAL
would do — the data sits in the OS page cache, which survives the process — but NORMAL in WAL mode may lose
the last transactions on power loss or a kernel crash, and losing a journaled "step started" would let a
restarted daemon apply that step again. The price of FULL is one fsync per commit, and the controller
commits once per cycle, every few seconds, so it is negligible.) Every multi-row update is one
`BEGIN IMMEDIATE` transaction: a crash mid-commit leaves either all of it or none of it.

Concurrency. One connection per store object, guarded by a lock so worker threads may share it; several
store objects (or processes) on one file are serialised by SQLite's write lock and wait up to
`busy_timeout` seconds for it. Readers never block the writer (WAL).

Truth about itself. The storage's own failures (a full disk, a lock held by another process, an I/O error,
a read-only directory) raise `StoreUnavailable` and a file that is not a sound database `StoreCorrupt`,
each naming the file and SQLite's own words; after a failed statement SQLite may already have rolled the
transaction back, so ours only rolls back what is still open (a failing ROLLBACK once replaced "database
or disk is full" with "cannot rollback - no transaction is active"). At open, `PRAGMA quick_check` runs,
and the WAL is read before SQLite recovers it (store/wal.py): committed transactions that recovery will
drop (a damaged end of the log) are reported in `findings`, which the daemon shows and acts on.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final, NoReturn

from reassignd.model import TopicPartition
from reassignd.store import actor
from reassignd.store.base import (
    BrokerRole,
    CommitResult,
    ConfigResource,
    DuplicatePlanError,
    Event,
    EventKind,
    Fence,
    FencedError,
    JournalEntry,
    OriginalValue,
    PlanRecord,
    PlanStatus,
    PlanSummary,
    Pruned,
    SettingsConflict,
    SettingsRecord,
    StateStore,
    StepReplayError,
    StoreCorrupt,
    StoreError,
    StoreUnavailable,
    Unfenced,
    UnknownPlanError,
    WriteBatch,
    oldest_prunable,
    partition_count,
    role_event,
    status_change,
    submitted_event,
)
from reassignd.store.wal import WalReport, inspect_wal

__all__ = ["DB_FILE_NAME", "SqliteStore", "WalReport", "inspect_wal"]

SCHEMA_VERSION: Final = 4
#: Statements that take a database from the version before each to it.
_JOURNAL_DELETE_GUARD: Final = """
CREATE TRIGGER journal_no_delete BEFORE DELETE ON journal
    WHEN NOT ((OLD.plan_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM plans WHERE id = OLD.plan_id))
              OR EXISTS (SELECT 1 FROM meta WHERE key = 'pruning' AND value = '1'))
    BEGIN SELECT RAISE(ABORT, 'the journal is append-only (retention prunes ended plans only)'); END;
"""
_MIGRATIONS: Final = {
    2: (
        "ALTER TABLE plans ADD COLUMN summary_json TEXT",
        "ALTER TABLE plans ADD COLUMN partitions INTEGER NOT NULL DEFAULT 0",
        "UPDATE plans SET partitions = COALESCE(json_array_length(plan_json, '$.partitions'), 0)",
        "CREATE INDEX plans_by_status ON plans (status, ordinal)",
        "ALTER TABLE original_configs ADD COLUMN written_json TEXT",
        "CREATE TABLE settings (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL, "
        "document_json TEXT NOT NULL)",
        "DROP TRIGGER journal_no_delete",
        _JOURNAL_DELETE_GUARD.strip(),
    ),
    3: (
        "CREATE TABLE broker_roles (broker INTEGER PRIMARY KEY, role TEXT NOT NULL, since REAL NOT NULL, "
        "data_json TEXT NOT NULL)",
    ),
    4: ("CREATE TABLE anomalies (id TEXT PRIMARY KEY, updated_at REAL NOT NULL, data_json TEXT NOT NULL)",),
}
DB_FILE_NAME: Final = "reassignd.db"

_SCHEMA: Final = (
    """
CREATE TABLE plans (
    id TEXT PRIMARY KEY,
    ordinal INTEGER NOT NULL UNIQUE,
    plan_json TEXT NOT NULL,
    options_json TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN
        ('queued', 'running', 'paused', 'cancelling', 'cancelled', 'completed', 'failed')),
    submitted_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    started_at REAL,
    finished_at REAL,
    error TEXT,
    summary_json TEXT,
    partitions INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX plans_by_status ON plans (status, ordinal);
CREATE TABLE settings (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL,
    document_json TEXT NOT NULL
);
CREATE TABLE broker_roles (
    broker INTEGER PRIMARY KEY,
    role TEXT NOT NULL,
    since REAL NOT NULL,
    data_json TEXT NOT NULL
);
CREATE TABLE anomalies (
    id TEXT PRIMARY KEY,
    updated_at REAL NOT NULL,
    data_json TEXT NOT NULL
);
CREATE TABLE partition_states (
    plan_id TEXT NOT NULL REFERENCES plans(id),
    topic TEXT NOT NULL,
    partition INTEGER NOT NULL,
    state_json TEXT NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (plan_id, topic, partition)
) WITHOUT ROWID;
CREATE TABLE original_configs (
    resource_type TEXT NOT NULL CHECK (resource_type IN ('broker', 'topic')),
    resource_name TEXT NOT NULL,
    config_key TEXT NOT NULL,
    value TEXT,
    recorded_at REAL NOT NULL,
    written_json TEXT,
    PRIMARY KEY (resource_type, resource_name, config_key)
) WITHOUT ROWID;
CREATE TABLE journal (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    kind TEXT NOT NULL,
    plan_id TEXT,
    topic TEXT,
    partition INTEGER,
    step_index INTEGER,
    data_json TEXT NOT NULL,
    idempotency_key TEXT UNIQUE
);
CREATE INDEX journal_by_plan ON journal (plan_id, seq);
CREATE TRIGGER journal_no_update BEFORE UPDATE ON journal
    BEGIN SELECT RAISE(ABORT, 'the journal is append-only'); END;
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
"""
    + _JOURNAL_DELETE_GUARD
    + """
"""
)

_SUMMARY_COLUMNS: Final = (
    "id, options_json, status, submitted_at, updated_at, started_at, finished_at, error, summary_json, "
    "partitions"
)
_JOURNAL_COLUMNS: Final = "seq, at, kind, plan_id, topic, partition, step_index, data_json"


def _statements(script: str) -> list[str]:
    """Split a script into statements (executescript would commit our open transaction first)."""
    statements, pending = [], ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    return statements


def _dumps(value: Any, what: str) -> str:
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{what} is not JSON-serialisable: {exc}") from None


#: SQLite's words for a file that is not a sound database (anything else it raises is the storage now).
_CORRUPT: Final = ("file is not a database", "malformed", "corrupt")


def _raise_store_error(path: Path, exc: sqlite3.Error, doing: str) -> NoReturn:
    """A storage failure as the store's error, naming the file, what was being done and SQLite's words."""
    name = getattr(exc, "sqlite_errorname", None)
    words = f"{exc}" + (f" ({name})" if name else "")
    if any(marker in str(exc).lower() for marker in _CORRUPT):
        raise StoreCorrupt(f"state store {path}: {doing}: {words}") from exc
    raise StoreUnavailable(f"state store {path}: {doing}: {words}") from exc


def _storage_error(exc: BaseException) -> bool:
    """SQLite's errors about the storage, not about what we asked (constraint and programming errors
    are ours and keep their type)."""
    return isinstance(exc, sqlite3.OperationalError) or (
        type(exc) is sqlite3.DatabaseError  # "file is not a database", "database disk image is malformed"
    )


class SqliteStore(StateStore):
    def __init__(
        self,
        path: str | Path,
        *,
        fence: Fence | None = None,
        synchronous: str = "FULL",
        busy_timeout: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`path` is the database file, or a directory (`state.dir`) to hold `reassignd.db`."""
        target = Path(path)
        if target.is_dir():
            target = target / DB_FILE_NAME
        if synchronous.upper() not in ("FULL", "NORMAL", "EXTRA"):
            raise ValueError(f"synchronous must be FULL, NORMAL or EXTRA, got {synchronous!r}")
        self.path = target
        self._fence: Fence = fence or Unfenced()
        self._clock = clock
        self._lock = threading.Lock()
        self.wal = _settled_wal_report(target.with_name(target.name + "-wal"))
        self.findings: tuple[str, ...] = ()
        """What the store found wrong with itself at open (a WAL whose committed end SQLite dropped)."""
        if self.wal.dropped_commits:
            self.findings = (
                f"{target.name}-wal: {self.wal.dropped_commits} committed transaction(s) "
                f"({self.wal.dropped_frames} frame(s)) at the end of the log are damaged and were dropped by "
                f"SQLite's recovery: the store in {target.parent} may be older than what this daemon did",
            )
        try:
            self._db = sqlite3.connect(
                target, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            _raise_store_error(target, exc, "cannot open")
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous.upper()}")
            self._db.execute("PRAGMA foreign_keys=ON")
            problems = [row[0] for row in self._db.execute("PRAGMA quick_check(5)").fetchall()]
            if problems != ["ok"]:
                raise StoreCorrupt(
                    f"state store {target}: the integrity check failed: {'; '.join(problems)}; restore it "
                    "from a backup or move it aside (a new one starts empty)"
                )
            self._migrate()
        except BaseException as exc:
            self._db.close()
            if isinstance(exc, sqlite3.Error) and _storage_error(exc):
                _raise_store_error(target, exc, "cannot open")
            raise

    @contextlib.contextmanager
    def _transaction(self, doing: str) -> Iterator[None]:
        """BEGIN IMMEDIATE ... COMMIT under the lock; on any error, a rollback of what is still open."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                yield
                self._db.execute("COMMIT")
            except BaseException as exc:
                if self._db.in_transaction:  # SQLite rolls back on its own after SQLITE_FULL, IOERR...
                    with contextlib.suppress(sqlite3.Error):
                        self._db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error) and _storage_error(exc):
                    _raise_store_error(self.path, exc, doing)
                raise

    def _migrate(self) -> None:
        with self._transaction("cannot open"):
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version == 0:
                for statement in _statements(_SCHEMA):
                    self._db.execute(statement)
                self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            elif version == SCHEMA_VERSION:
                return  # nothing written: a store on a full disk opens, and shows as unavailable on use
            elif version > SCHEMA_VERSION:
                raise StoreError(f"{self.path}: schema version {version} is newer than this reassignd")
            else:
                for target in range(version + 1, SCHEMA_VERSION + 1):
                    for statement in _MIGRATIONS[target]:
                        self._db.execute(statement)
                self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    # -----------------------------------------------------------------------------------------------------
    # Writes

    def commit(self, batch: WriteBatch) -> CommitResult:
        with self._transaction("cannot commit"):
            now = self._clock()
            self._check_fence()
            for plan_id, plan, options in batch.new_plans:
                self._insert_plan(plan_id, plan, options, now)
            for plan_id, status, error in batch.status_changes:
                self._change_status(plan_id, status, error, now)
            self._write_partition_states(batch.partition_states, now)
            for plan_id, summary in batch.summaries.items():
                self._write_summary(plan_id, summary)
            for read_version, document in batch.new_settings:
                self._write_settings(read_version, document)
            recorded = self._write_originals(batch, now)
            for broker, (role, reason) in batch.broker_roles.items():
                self._write_role(broker, role, reason, now)
            for anomaly_id, record in batch.anomalies.items():
                self._db.execute(
                    "INSERT OR REPLACE INTO anomalies (id, updated_at, data_json) VALUES (?, ?, ?)",
                    (anomaly_id, now, _dumps(record, f"anomaly {anomaly_id}")),
                )
            seqs = tuple(self._insert_event(event, now) for event in batch.events)
        return CommitResult(seqs, recorded)

    def _check_fence(self) -> None:
        epoch = self._fence.epoch()
        row = self._db.execute("SELECT value FROM meta WHERE key = 'fence_epoch'").fetchone()
        seen = int(row[0]) if row else -1
        if epoch < seen:
            raise FencedError(f"fence epoch {epoch} is older than epoch {seen} that already wrote")
        if epoch > seen:
            self._db.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('fence_epoch', ?)", (str(epoch),)
            )

    def _insert_plan(
        self, plan_id: str, plan: Mapping[str, Any], options: Mapping[str, Any], now: float
    ) -> None:
        if self._db.execute("SELECT 1 FROM plans WHERE id = ?", (plan_id,)).fetchone():
            raise DuplicatePlanError(f"plan {plan_id} already exists")
        ordinal = self._db.execute("SELECT COALESCE(MAX(ordinal), 0) + 1 FROM plans").fetchone()[0]
        self._db.execute(
            "INSERT INTO plans (id, ordinal, plan_json, options_json, status, submitted_at, updated_at, "
            "partitions) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                plan_id,
                ordinal,
                _dumps(plan, "plan"),
                _dumps(options, "options"),
                PlanStatus.QUEUED,
                now,
                now,
                partition_count(plan),
            ),
        )
        self._insert_event(submitted_event(plan_id, plan), now)

    def _change_status(self, plan_id: str, status: PlanStatus, error: str | None, now: float) -> None:
        row = self._db.execute("SELECT status, started_at FROM plans WHERE id = ?", (plan_id,)).fetchone()
        if row is None:
            raise UnknownPlanError(f"plan {plan_id} does not exist")
        change = status_change(plan_id, PlanStatus(row[0]), status, started_at=row[1], error=error, now=now)
        self._db.execute(
            "UPDATE plans SET status = ?, updated_at = ?, started_at = ?, finished_at = ?, "
            "error = COALESCE(?, error) WHERE id = ?",
            (change.status, change.updated_at, change.started_at, change.finished_at, change.error, plan_id),
        )
        self._insert_event(change.event, now)

    def _write_settings(self, read_version: int, document: Mapping[str, Any]) -> None:
        row = self._db.execute("SELECT version FROM settings WHERE id = 1").fetchone()
        current = row[0] if row else 0
        if current != read_version:
            raise SettingsConflict(f"settings are at version {current}, not {read_version}")
        self._db.execute(
            "INSERT OR REPLACE INTO settings (id, version, document_json) VALUES (1, ?, ?)",
            (current + 1, _dumps(document, "settings")),
        )

    def _write_role(self, broker: int, role: str | None, reason: str, now: float) -> None:
        if role is None:
            self._db.execute("DELETE FROM broker_roles WHERE broker = ?", (broker,))
        else:
            record = BrokerRole(broker, role, now, reason, actor.current())
            self._db.execute(
                "INSERT OR REPLACE INTO broker_roles (broker, role, since, data_json) VALUES (?, ?, ?, ?)",
                (broker, role, now, _dumps(record.to_json(), "broker role")),
            )
        self._insert_event(role_event(broker, role, reason), now)

    def _write_summary(self, plan_id: str, summary: Mapping[str, Any]) -> None:
        cursor = self._db.execute(
            "UPDATE plans SET summary_json = ? WHERE id = ?", (_dumps(summary, "summary"), plan_id)
        )
        if not cursor.rowcount:
            raise UnknownPlanError(f"plan {plan_id} does not exist")

    def _write_partition_states(
        self, states: Mapping[tuple[str, TopicPartition], Mapping[str, Any] | None], now: float
    ) -> None:
        for plan_id in {plan_id for plan_id, _ in states}:
            if not self._db.execute("SELECT 1 FROM plans WHERE id = ?", (plan_id,)).fetchone():
                raise UnknownPlanError(f"plan {plan_id} does not exist")
        for (plan_id, tp), state in states.items():
            if state is None:
                self._db.execute(
                    "DELETE FROM partition_states WHERE plan_id = ? AND topic = ? AND partition = ?",
                    (plan_id, tp.topic, tp.partition),
                )
                continue
            self._db.execute(
                "INSERT INTO partition_states (plan_id, topic, partition, state_json, updated_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (plan_id, topic, partition) "
                "DO UPDATE SET state_json = excluded.state_json, updated_at = excluded.updated_at",
                (plan_id, tp.topic, tp.partition, _dumps(state, f"state of {tp}"), now),
            )

    def _write_originals(self, batch: WriteBatch, now: float) -> tuple[tuple[ConfigResource, str], ...]:
        # Forgets first: forgetting and recording one key in one batch replaces its original.
        for resource, key in batch.originals_to_forget:
            self._db.execute(
                "DELETE FROM original_configs "
                "WHERE resource_type = ? AND resource_name = ? AND config_key = ?",
                (resource.type, resource.name, key),
            )
        recorded = []
        for resource, key, value in batch.originals_to_record:
            cursor = self._db.execute(
                "INSERT OR IGNORE INTO original_configs "
                "(resource_type, resource_name, config_key, value, recorded_at) VALUES (?, ?, ?, ?, ?)",
                (resource.type, resource.name, key, value, now),
            )
            if cursor.rowcount:
                recorded.append((resource, key))
        for (resource, key), values in batch.written.items():
            cursor = self._db.execute(
                "UPDATE original_configs SET written_json = ? "
                "WHERE resource_type = ? AND resource_name = ? AND config_key = ?",
                (_dumps(list(values), "written values"), resource.type, resource.name, key),
            )
            if not cursor.rowcount:
                raise StoreError(f"{resource.type} {resource.name} {key}: written before its original")
        return tuple(recorded)

    def _insert_event(self, event: Event, now: float) -> int:
        tp = event.tp
        try:
            cursor = self._db.execute(
                "INSERT INTO journal (at, kind, plan_id, topic, partition, step_index, data_json, "
                "idempotency_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    event.at if event.at is not None else now,
                    event.kind.value,
                    event.plan_id,
                    tp.topic if tp else None,
                    tp.partition if tp else None,
                    event.step_index,
                    _dumps(actor.stamped(event.data), f"data of {event.kind.value}"),
                    event.idempotency_key,
                ),
            )
        except sqlite3.IntegrityError:
            existing = self._find_step(event)
            if existing is None:
                raise
            raise StepReplayError(existing) from None
        seq = cursor.lastrowid
        assert seq is not None
        return seq

    def _find_step(self, event: Event) -> JournalEntry | None:
        row = self._db.execute(
            f"SELECT {_JOURNAL_COLUMNS} FROM journal WHERE idempotency_key = ?", (event.idempotency_key,)
        ).fetchone()
        return _entry(row) if row else None

    # -----------------------------------------------------------------------------------------------------
    # Reads

    def _query(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        with self._lock:
            try:
                return self._db.execute(sql, tuple(params)).fetchall()
            except sqlite3.Error as exc:
                if _storage_error(exc):
                    _raise_store_error(self.path, exc, "cannot read")
                raise

    def get_plan(self, plan_id: str) -> PlanRecord | None:
        rows = self._query(f"SELECT {_SUMMARY_COLUMNS}, plan_json FROM plans WHERE id = ?", (plan_id,))
        if not rows:
            return None
        *head, body = rows[0]
        return PlanRecord(**_summary_fields(head), plan=json.loads(body))

    def list_plans(self, statuses: Iterable[PlanStatus] | None = None) -> list[PlanSummary]:
        if statuses is None:
            rows = self._query(f"SELECT {_SUMMARY_COLUMNS} FROM plans ORDER BY ordinal")
        else:
            wanted = sorted({PlanStatus(s).value for s in statuses})
            marks = ", ".join("?" * len(wanted))
            rows = self._query(
                f"SELECT {_SUMMARY_COLUMNS} FROM plans WHERE status IN ({marks}) ORDER BY ordinal", wanted
            )
        return [PlanSummary(**_summary_fields(row)) for row in rows]

    def settings(self) -> SettingsRecord:
        rows = self._query("SELECT version, document_json FROM settings WHERE id = 1")
        return SettingsRecord(rows[0][0], json.loads(rows[0][1])) if rows else SettingsRecord()

    def broker_roles(self) -> dict[int, BrokerRole]:
        rows = self._query("SELECT data_json FROM broker_roles ORDER BY broker")
        return {(r := BrokerRole.from_json(json.loads(row[0]))).broker: r for row in rows}

    def anomalies(self) -> dict[str, Mapping[str, Any]]:
        rows = self._query("SELECT id, data_json FROM anomalies ORDER BY id")
        return {anomaly_id: json.loads(data) for anomaly_id, data in rows}

    def prune(self, before: float, keep_plans: int, limit: int) -> Pruned:
        ended = tuple(s.value for s in PlanStatus if s.terminal)
        marks = ", ".join("?" * len(ended))
        with self._transaction("cannot prune"):
            self._check_fence()
            rows = self._db.execute(
                f"SELECT id, finished_at FROM plans WHERE status IN ({marks}) ORDER BY ordinal DESC",
                ended,
            ).fetchall()
            doomed = [
                plan_id
                for index, (plan_id, finished) in enumerate(rows)
                if index >= keep_plans or (finished if finished is not None else 0.0) < before
            ]
            doomed = list(reversed(doomed))[:limit]
            entries = 0
            for plan_id in doomed:
                self._db.execute("DELETE FROM partition_states WHERE plan_id = ?", (plan_id,))
                self._db.execute("DELETE FROM plans WHERE id = ?", (plan_id,))
                entries += self._db.execute("DELETE FROM journal WHERE plan_id = ?", (plan_id,)).rowcount
            self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('pruning', '1')")
            entries += self._db.execute(
                "DELETE FROM journal WHERE plan_id IS NULL AND at < ? AND seq IN "
                "(SELECT seq FROM journal WHERE plan_id IS NULL AND at < ? ORDER BY seq LIMIT ?)",
                (before, before, limit * 100),
            ).rowcount
            self._db.execute("DELETE FROM meta WHERE key = 'pruning'")
        return Pruned(tuple(doomed), entries)

    def prune_anomalies(self, before: float, limit: int) -> tuple[str, ...]:
        with self._transaction("cannot prune anomalies"):
            self._check_fence()
            rows = self._db.execute("SELECT id, data_json FROM anomalies").fetchall()
            records = {anomaly_id: json.loads(data) for anomaly_id, data in rows}
            doomed = oldest_prunable(records, before, limit)
            for anomaly_id in doomed:
                self._db.execute("DELETE FROM anomalies WHERE id = ?", (anomaly_id,))
        return doomed

    def partition_states(self, plan_id: str) -> dict[TopicPartition, Mapping[str, Any]]:
        rows = self._query(
            "SELECT topic, partition, state_json FROM partition_states WHERE plan_id = ? "
            "ORDER BY topic, partition",
            (plan_id,),
        )
        return {TopicPartition(topic, partition): json.loads(state) for topic, partition, state in rows}

    def last_seq(self) -> int:
        """AUTOINCREMENT's high-water mark: it survives the pruning of every entry."""
        rows = self._query("SELECT seq FROM sqlite_sequence WHERE name = 'journal'")
        return int(rows[0][0]) if rows else 0

    def original_configs(self) -> dict[tuple[ConfigResource, str], OriginalValue]:
        rows = self._query(
            "SELECT resource_type, resource_name, config_key, value, recorded_at, written_json "
            "FROM original_configs ORDER BY resource_type, resource_name, config_key"
        )
        return {
            (ConfigResource(t, n), k): OriginalValue(v, at, None if w is None else tuple(json.loads(w)))
            for t, n, k, v, at, w in rows
        }

    def journal(
        self,
        after_seq: int = 0,
        *,
        plan_id: str | None = None,
        kinds: Iterable[EventKind] | None = None,
        limit: int | None = None,
    ) -> list[JournalEntry]:
        sql = f"SELECT {_JOURNAL_COLUMNS} FROM journal WHERE seq > ?"
        params: list[Any] = [after_seq]
        if plan_id is not None:
            sql += " AND plan_id = ?"
            params.append(plan_id)
        if kinds is not None:
            names = [EventKind(k).value for k in kinds]
            sql += f" AND kind IN ({','.join('?' * len(names))})"
            params.extend(names)
        sql += " ORDER BY seq"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [_entry(row) for row in self._query(sql, params)]

    def step_entry(
        self, kind: EventKind, plan_id: str, tp: TopicPartition, step_index: int
    ) -> JournalEntry | None:
        probe = Event(kind, plan_id, tp, step_index)
        if probe.idempotency_key is None:
            raise ValueError(f"{kind.value} entries are not keyed by step")
        with self._lock:
            return self._find_step(probe)

    def integrity_check(self) -> str:
        """SQLite's own consistency check of the file: 'ok' when sound."""
        return str(self._query("PRAGMA integrity_check")[0][0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _settled_wal_report(wal: Path) -> WalReport:
    """The WAL's report, trusted only if the file did not change while it was read (a live writer in
    another process is mid-commit, not a damaged end)."""

    def stamp() -> tuple[int, int] | None:
        try:
            st = wal.stat()
        except FileNotFoundError:
            return None
        return st.st_size, st.st_mtime_ns

    before = stamp()
    if before is None:
        return WalReport()
    report = inspect_wal(wal)
    if report.dropped_commits and stamp() != before:
        return WalReport(report.page_size, report.valid_frames)
    return report


def _summary_fields(row: Any) -> dict[str, Any]:
    plan_id, options_json, status, submitted, updated, started, finished, error, summary, partitions = row
    return {
        "id": plan_id,
        "options": json.loads(options_json),
        "status": PlanStatus(status),
        "submitted_at": submitted,
        "updated_at": updated,
        "started_at": started,
        "finished_at": finished,
        "error": error,
        "summary": json.loads(summary) if summary else None,
        "partitions": partitions,
    }


def _entry(row: Any) -> JournalEntry:
    seq, at, kind, plan_id, topic, partition, step_index, data_json = row
    return JournalEntry(
        seq=seq,
        at=at,
        kind=EventKind(kind),
        plan_id=plan_id,
        tp=TopicPartition(topic, partition) if topic is not None else None,
        step_index=step_index,
        data=json.loads(data_json),
    )

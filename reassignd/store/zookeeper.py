"""The shared state store of HA daemons: the same interface as SQLite, kept in ZooKeeper (kazoo).

Layout under the store's root (one per cluster, `<ha.zookeeper.path>/<cluster>/state`)::

    head                        {"epoch", "seq", "ordinal"}: rewritten by every commit (version-checked)
    settings                    {"version", "document"}: the runtime settings record (compare and set)
    brokers                     {"roles": {id: role record}}: the brokers' lasting roles (decommissioned)
    anomalies/<id>              self-healing's anomaly records, each as last put (JSON, zlib-compressed)
    plans/<plan>                the plan's record (status, times, error, ordinal, partitions, summary); small
    plandata/<plan>             the submitted plan JSON, zlib-compressed; immutable (cached by readers)
    states/<plan>/b<NN>         partition states of the plan, hashed into 32 buckets, zlib-compressed JSON
    originals/<type>|<name>|<key>
    journal/c<N>/e<seq>         journal entries, 1,000 per chunk (a listing stays far below jute.maxbuffer)
    steps/<sha256>              idempotency key of a step.started / step.finished entry -> its seq

Atomicity and fencing. A commit is ONE ZooKeeper multi-op transaction: `setData(head, version=v)` — the
version read before the commit, so two concurrent committers cannot both succeed and journal sequence
numbers stay gap-free and monotonic — plus the fence's own `check` ops (the HA coordinator adds a check of
this daemon's ephemeral election node: it vanishes with the session, so a leader whose session expired can
write nothing), plus every create/set/delete of the batch. The head also records the highest fence epoch
that wrote; a commit with a lower epoch is refused with FencedError. Step idempotency is a `create` of
`steps/<key>` inside the transaction: an existing node fails the whole transaction (StepReplayError).

Validation (unknown plan, illegal transition, duplicate) runs on reads made before the transaction; the
head's version check makes them consistent: if anything committed in between, the transaction fails and is
rebuilt from fresh reads.

Caches are bounded (plan bodies, journal entries: least recently used out), so a daemon running for a year
holds what it reads now, not everything it ever read. Retention (`prune`) deletes an ended plan's record,
body and states in one transaction, and the journal a chunk at a time once every entry of the chunk
belongs to a pruned plan or is older than the retention (with the step keys of its entries).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Protocol
from urllib.parse import quote, unquote

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, NotEmptyError, RolledBackError

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
    StoreError,
    Unfenced,
    UnknownPlanError,
    WriteBatch,
    oldest_prunable,
    partition_count,
    role_event,
    status_change,
    submitted_event,
)
from reassignd.store.cache import LruCache

BUCKETS: Final = 32
CHUNK: Final = 1000
BODY_CACHE: Final = 16
ENTRY_CACHE: Final = 20_000
#: ZooKeeper refuses a request above jute.maxbuffer (1 MiB by default) by dropping the connection.
MAX_TRANSACTION_BYTES: Final = 900_000
COMMIT_ATTEMPTS: Final = 20  # only a deposed leader racing the new one contends; it then fails its check


class ZooKeeperChecks(Protocol):
    """Optional extension of a Fence: (path, version) pairs checked inside every commit's transaction."""

    def checks(self) -> Sequence[tuple[str, int]]: ...


def node_name(text: str) -> str:
    """Any string as one znode name ('/' and '.' escaped, so '.' and '..' cannot occur)."""
    return quote(text, safe="").replace(".", "%2E")


def _dumps(value: Any, what: str) -> str:
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{what} is not JSON-serialisable: {exc}") from None


def _bucket(tp: TopicPartition) -> str:
    return f"b{zlib.crc32(f'{tp.topic}:{tp.partition}'.encode()) % BUCKETS:02d}"


def _step_node(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class _Tx:
    """The operations of one commit, with the facts the validation needs and a size estimate."""

    def __init__(self) -> None:
        self.ops: list[tuple[str, str, bytes | None, int]] = []  # (op, path, data, version)
        self.size = 0
        self.step_ops: dict[int, Event] = {}

    def add(self, op: str, path: str, data: bytes | None = None, version: int = -1) -> int:
        self.ops.append((op, path, data, version))
        self.size += len(path) + (len(data) if data else 0) + 32
        return len(self.ops) - 1


class _Commit:
    """One commit attempt being built on the head it read: its transaction, the journal entries it adds
    (numbered from the head's sequence) and the plan records it reads or changes."""

    def __init__(self, store: ZooKeeperStore, head: Mapping[str, Any], now: float) -> None:
        self.store = store
        self.head_seq = int(head["seq"])
        self.now = now
        self.tx = _Tx()
        self.seq = self.head_seq
        self.ordinal = int(head["ordinal"])
        self.records: dict[str, dict[str, Any]] = {}
        self.written: list[JournalEntry] = []
        self._steps: dict[str, JournalEntry] = {}
        self._new_chunks: set[int] = set()

    def journal(self, event: Event) -> int:
        """The event as the next journal entry (a step's also under its idempotency key); its seq."""
        self.seq += 1
        seq, store = self.seq, self.store
        entry = JournalEntry(
            seq=seq,
            at=event.at if event.at is not None else self.now,
            kind=event.kind,
            plan_id=event.plan_id,
            tp=event.tp,
            step_index=event.step_index,
            data=json.loads(_dumps(actor.stamped(event.data), f"data of {event.kind.value}")),
        )
        chunk = seq // CHUNK
        if self.head_seq < max(1, chunk * CHUNK) and chunk not in self._new_chunks:
            self._new_chunks.add(chunk)  # the first entry of this chunk
            self.tx.add("create", store._p("journal", f"c{chunk}"), b"")
        self.tx.add("create", store._p("journal", f"c{chunk}", f"e{seq:012d}"), _entry_bytes(entry))
        self.written.append(entry)
        key = event.idempotency_key
        if key is not None:
            if key in self._steps:
                raise StepReplayError(self._steps[key])
            self._steps[key] = entry
            index = self.tx.add("create", store._p("steps", _step_node(key)), str(seq).encode())
            self.tx.step_ops[index] = event
        return seq

    def record(self, plan_id: str) -> dict[str, Any]:
        """The plan's record, read once per commit."""
        if plan_id not in self.records:
            try:
                raw = self.store.client.get(self.store._p("plans", node_name(plan_id)))[0]
            except NoNodeError:
                raise UnknownPlanError(f"plan {plan_id} does not exist") from None
            self.records[plan_id] = json.loads(raw)
        return self.records[plan_id]


class ZooKeeperStore(StateStore):
    def __init__(
        self,
        client: KazooClient,
        root: str,
        *,
        fence: Fence | None = None,
        clock: Callable[[], float] = time.time,
        owns_client: bool = False,
    ) -> None:
        """`client` must be started; `root` is this cluster's state path (created if missing)."""
        self.client = client
        self.root = root.rstrip("/")
        self._fence: Fence = fence or Unfenced()
        self._clock = clock
        self._owns_client = owns_client
        self._lock = threading.Lock()
        self._plan_bodies: LruCache[str, Mapping[str, Any]] = LruCache(BODY_CACHE)
        self._entries: LruCache[int, JournalEntry] = LruCache(ENTRY_CACHE)
        for child in ("plans", "plandata", "states", "originals", "journal", "steps", "anomalies"):
            client.ensure_path(f"{self.root}/{child}")
        with contextlib.suppress(NodeExistsError):
            client.create(
                f"{self.root}/settings", _dumps({"version": 0, "document": {}}, "settings").encode()
            )
        with contextlib.suppress(NodeExistsError):
            client.create(f"{self.root}/brokers", _dumps({"roles": {}}, "broker roles").encode())
        with contextlib.suppress(NodeExistsError):
            client.create(f"{self.root}/head", _dumps({"epoch": -1, "seq": 0, "ordinal": 0}, "head").encode())

    def _p(self, *parts: str) -> str:
        return "/".join((self.root, *parts))

    # -----------------------------------------------------------------------------------------------------
    # Writes

    def commit(self, batch: WriteBatch) -> CommitResult:
        with self._lock:
            for attempt in range(COMMIT_ATTEMPTS):
                result = self._try_commit(batch)
                if result is not None:
                    return result
                time.sleep(random.uniform(0, 0.005 * (attempt + 1)))  # jitter: two writers do not livelock
            raise StoreError(f"commit lost the race for {self._p('head')} {COMMIT_ATTEMPTS} times")

    def _try_commit(self, batch: WriteBatch) -> CommitResult | None:
        """One attempt: the whole batch as one multi-op on the head read now; None when another commit
        changed the head first (the caller tries again from fresh reads)."""
        epoch = self._fence.epoch()
        raw, stat = self.client.get(self._p("head"))
        head = json.loads(raw)
        if epoch < head["epoch"]:
            raise FencedError(f"fence epoch {epoch} is older than epoch {head['epoch']} that already wrote")
        c = _Commit(self, head, self._clock())
        head_op = c.tx.add("set", self._p("head"), None, stat.version)
        checks: Sequence[tuple[str, int]] = self._fence.checks() if hasattr(self._fence, "checks") else ()
        check_ops = [c.tx.add("check", path, None, version) for path, version in checks]
        new_plan_ids = self._stage_new_plans(c, batch)
        self._stage_plan_records(c, batch, new_plan_ids)
        self._stage_settings(c.tx, batch)
        self._stage_partition_states(c.tx, batch, c.record, new_plan_ids)
        recorded = self._stage_originals(c.tx, batch, c.now)
        self._stage_roles(c, batch)
        self._stage_anomalies(c.tx, batch)
        seqs = [c.journal(event) for event in batch.events]
        new_head = {"epoch": max(epoch, head["epoch"]), "seq": c.seq, "ordinal": c.ordinal}
        c.tx.ops[head_op] = ("set", self._p("head"), _dumps(new_head, "head").encode(), stat.version)
        if c.tx.size > MAX_TRANSACTION_BYTES:
            raise StoreError(
                f"commit of about {c.tx.size} bytes exceeds ZooKeeper's request limit "
                f"({MAX_TRANSACTION_BYTES} bytes kept below jute.maxbuffer)"
            )
        results = self._run(c.tx)
        failures = [(i, r) for i, r in enumerate(results) if isinstance(r, Exception)]
        if not failures:
            for plan_id, body, _ in batch.new_plans:
                self._plan_bodies[plan_id] = json.loads(_dumps(body, "plan"))
            for entry in c.written:
                self._entries[entry.seq] = entry
            return CommitResult(tuple(seqs), recorded)
        return self._failed(c.tx, failures, head_op, check_ops)

    def _failed(
        self, tx: _Tx, failures: list[tuple[int, Any]], head_op: int, check_ops: list[int]
    ) -> CommitResult | None:
        """Why the transaction failed, as the store's error (None: the head moved, try again)."""
        real = [(i, r) for i, r in failures if not isinstance(r, RolledBackError)]
        index, failure = real[0] if real else failures[0]
        if index == head_op and isinstance(failure, BadVersionError):
            return None  # another commit came first: rebuild from fresh reads
        if index in check_ops:
            raise FencedError(f"leadership check failed on {tx.ops[index][1]}: {type(failure).__name__}")
        if index in tx.step_ops and isinstance(failure, NodeExistsError):
            event = tx.step_ops[index]
            existing = self._find_step(event)
            if existing is not None:
                raise StepReplayError(existing)
        raise StoreError(f"ZooKeeper transaction failed at {tx.ops[index][1]}: {type(failure).__name__}")

    def _stage_new_plans(self, c: _Commit, batch: WriteBatch) -> set[str]:
        new_plan_ids: set[str] = set()
        for plan_id, plan, options in batch.new_plans:
            if plan_id in new_plan_ids or self.client.exists(self._p("plans", node_name(plan_id))):
                raise DuplicatePlanError(f"plan {plan_id} already exists")
            new_plan_ids.add(plan_id)
            c.ordinal += 1
            c.records[plan_id] = {
                "id": plan_id,
                "ordinal": c.ordinal,
                "options": json.loads(_dumps(options, "options")),
                "status": PlanStatus.QUEUED.value,
                "submitted_at": c.now,
                "updated_at": c.now,
                "started_at": None,
                "finished_at": None,
                "error": None,
                "partitions": partition_count(plan),
            }
            name = node_name(plan_id)
            c.tx.add("create", self._p("plandata", name), zlib.compress(_dumps(plan, "plan").encode()))
            c.tx.add("create", self._p("states", name), b"")
            c.journal(submitted_event(plan_id, plan))
        return new_plan_ids

    def _stage_plan_records(self, c: _Commit, batch: WriteBatch, new_plan_ids: set[str]) -> None:
        """Status changes (checked, journaled) and figures, then every plan record they changed."""
        changed_records = set(new_plan_ids)
        for plan_id, status, error in batch.status_changes:
            current_record = c.record(plan_id)
            change = status_change(
                plan_id,
                PlanStatus(current_record["status"]),
                status,
                started_at=current_record["started_at"],
                error=error,
                now=c.now,
            )
            current_record.update(
                status=change.status.value,
                started_at=change.started_at,
                finished_at=change.finished_at,
                updated_at=change.updated_at,
            )
            if error is not None:
                current_record["error"] = error
            changed_records.add(plan_id)
            c.journal(change.event)
        for plan_id, summary in batch.summaries.items():
            c.record(plan_id)["summary"] = json.loads(_dumps(summary, "summary"))
            changed_records.add(plan_id)
        for plan_id in changed_records:
            path = self._p("plans", node_name(plan_id))
            encoded = _dumps(c.records[plan_id], "plan record").encode()
            c.tx.add("create" if plan_id in new_plan_ids else "set", path, encoded)

    def _stage_roles(self, c: _Commit, batch: WriteBatch) -> None:
        """The roles record rewritten whole (small: one entry per decommissioned broker), each change
        journaled, as SQLite does."""
        if not batch.broker_roles:
            return
        raw, stat = self.client.get(self._p("brokers"))
        roles: dict[str, Any] = dict(json.loads(raw).get("roles") or {})
        for broker, (role, reason) in batch.broker_roles.items():
            if role is None:
                roles.pop(str(broker), None)
            else:
                roles[str(broker)] = BrokerRole(broker, role, c.now, reason, actor.current()).to_json()
            c.journal(role_event(broker, role, reason))
        data = _dumps({"roles": roles}, "broker roles").encode()
        c.tx.add("set", self._p("brokers"), data, stat.version)

    def _stage_anomalies(self, tx: _Tx, batch: WriteBatch) -> None:
        """Each anomaly's node created or replaced whole (its proposal may hold a plan: compressed)."""
        if not batch.anomalies:
            return
        paths = {anomaly_id: self._p("anomalies", node_name(anomaly_id)) for anomaly_id in batch.anomalies}
        stored = self._get_many(list(paths.values()))
        for (anomaly_id, record), old in zip(batch.anomalies.items(), stored, strict=True):
            data = zlib.compress(_dumps(record, f"anomaly {anomaly_id}").encode())
            tx.add("create" if old is None else "set", paths[anomaly_id], data)

    def _stage_settings(self, tx: _Tx, batch: WriteBatch) -> None:
        for read_version, document in batch.new_settings:
            raw_settings, settings_stat = self.client.get(self._p("settings"))
            current_version = int(json.loads(raw_settings)["version"])
            if current_version != read_version:
                raise SettingsConflict(f"settings are at version {current_version}, not {read_version}")
            data = {"version": current_version + 1, "document": json.loads(_dumps(document, "settings"))}
            tx.add("set", self._p("settings"), _dumps(data, "settings").encode(), settings_stat.version)

    def _run(self, tx: _Tx) -> list[Any]:
        request = self.client.transaction()
        for op, path, data, version in tx.ops:
            if op == "create":
                request.create(path, data or b"")
            elif op == "set":
                request.set_data(path, data or b"", version)
            elif op == "delete":
                request.delete(path, version)
            else:
                request.check(path, version)
        return list(request.commit())

    def _stage_partition_states(
        self,
        tx: _Tx,
        batch: WriteBatch,
        record: Callable[[str], dict[str, Any]],
        new_plan_ids: set[str],
    ) -> None:
        touched: dict[tuple[str, str], dict[TopicPartition, Mapping[str, Any] | None]] = {}
        for (plan_id, tp), state in batch.partition_states.items():
            record(plan_id)
            touched.setdefault((plan_id, _bucket(tp)), {})[tp] = state
        for (plan_id, bucket), changes in sorted(touched.items()):
            path = self._p("states", node_name(plan_id), bucket)
            exists = False
            rows: dict[TopicPartition, Any] = {}
            if plan_id not in new_plan_ids:
                try:
                    rows = _decode_bucket(self.client.get(path)[0])
                    exists = True
                except NoNodeError:
                    pass
            for tp, state in changes.items():
                if state is None:
                    rows.pop(tp, None)
                else:
                    rows[tp] = json.loads(_dumps(state, f"state of {tp}"))
            data = zlib.compress(
                _dumps([[tp.topic, tp.partition, rows[tp]] for tp in sorted(rows)], "states").encode()
            )
            tx.add("set" if exists else "create", path, data)

    def _stage_originals(
        self, tx: _Tx, batch: WriteBatch, now: float
    ) -> tuple[tuple[ConfigResource, str], ...]:
        """As SQLite: forgets first (forget + record in one batch replaces), then records (first wins)."""
        stored: dict[str, bool] = {}
        final: dict[str, bytes | None] = {}

        def present(name: str) -> bool:
            if name not in final:
                raw = self._get_many([self._p("originals", name)])[0]
                stored[name] = raw is not None
                final[name] = raw
            return final[name] is not None

        for resource, key in batch.originals_to_forget:
            name = _original_name(resource, key)
            present(name)
            final[name] = None
        recorded = []
        for resource, key, value in batch.originals_to_record:
            name = _original_name(resource, key)
            if not present(name):
                final[name] = _dumps({"value": value, "at": now}, "original").encode()
                recorded.append((resource, key))
        changed = {_original_name(r, k) for r, k in batch.originals_to_forget} | {
            _original_name(r, k) for r, k in recorded
        }
        for (resource, key), values in batch.written.items():
            name = _original_name(resource, key)
            if not present(name):
                raise StoreError(f"{resource.type} {resource.name} {key}: written before its original")
            data = json.loads(final[name] or b"{}")
            data["written"] = json.loads(_dumps(list(values), "written values"))
            final[name] = _dumps(data, "original").encode()
            changed.add(name)
        for name in changed:
            data, path = final[name], self._p("originals", name)
            if data is None and stored[name]:
                tx.add("delete", path)
            elif data and stored[name]:
                tx.add("set", path, data)
            elif data:
                tx.add("create", path, data)
        return tuple(recorded)

    # -----------------------------------------------------------------------------------------------------
    # Reads

    def _get_many(self, paths: Sequence[str]) -> list[bytes | None]:
        """Pipelined reads (one round trip for all); None for a node that does not exist."""
        pending = [self.client.get_async(path) for path in paths]
        out: list[bytes | None] = []
        for result in pending:
            try:
                out.append(result.get()[0])
            except NoNodeError:
                out.append(None)
        return out

    def get_plan(self, plan_id: str) -> PlanRecord | None:
        try:
            raw = self.client.get(self._p("plans", node_name(plan_id)))[0]
        except NoNodeError:
            return None
        data = json.loads(raw)
        body = self._body(plan_id)
        return PlanRecord(**self._summary_fields(data, body), plan=body)

    def _body(self, plan_id: str) -> Mapping[str, Any]:
        body = self._plan_bodies.get(plan_id)
        if body is None:
            raw = self.client.get(self._p("plandata", node_name(plan_id)))[0]
            body = self._plan_bodies[plan_id] = json.loads(zlib.decompress(raw))
        return body

    def _summary_fields(
        self, data: Mapping[str, Any], body: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        partitions = data.get("partitions")
        if partitions is None:  # a record written before the count was kept
            partitions = partition_count(body if body is not None else self._body(str(data["id"])))
        return {
            "id": str(data["id"]),
            "options": data["options"],
            "status": PlanStatus(data["status"]),
            "submitted_at": data["submitted_at"],
            "updated_at": data["updated_at"],
            "started_at": data["started_at"],
            "finished_at": data["finished_at"],
            "error": data["error"],
            "summary": data.get("summary"),
            "partitions": int(partitions),
        }

    def list_plans(self, statuses: Iterable[PlanStatus] | None = None) -> list[PlanSummary]:
        names = self.client.get_children(self._p("plans"))
        raws = self._get_many([self._p("plans", name) for name in names])
        data = sorted((json.loads(raw) for raw in raws if raw is not None), key=lambda d: d["ordinal"])
        wanted = None if statuses is None else {PlanStatus(s) for s in statuses}
        return [
            PlanSummary(**self._summary_fields(d))
            for d in data
            if wanted is None or PlanStatus(d["status"]) in wanted
        ]

    def settings(self) -> SettingsRecord:
        data = json.loads(self.client.get(self._p("settings"))[0])
        return SettingsRecord(int(data["version"]), data["document"])

    def broker_roles(self) -> dict[int, BrokerRole]:
        try:
            raw = self.client.get(self._p("brokers"))[0]
        except NoNodeError:
            return {}
        roles = (BrokerRole.from_json(r) for r in (json.loads(raw).get("roles") or {}).values())
        return {r.broker: r for r in sorted(roles, key=lambda r: r.broker)}

    def anomalies(self) -> dict[str, Mapping[str, Any]]:
        try:
            names = sorted(self.client.get_children(self._p("anomalies")))
        except NoNodeError:
            return {}
        raws = self._get_many([self._p("anomalies", name) for name in names])
        return {
            unquote(name): json.loads(zlib.decompress(raw))
            for name, raw in zip(names, raws, strict=True)
            if raw is not None
        }

    def partition_states(self, plan_id: str) -> dict[TopicPartition, Mapping[str, Any]]:
        base = self._p("states", node_name(plan_id))
        try:
            buckets = self.client.get_children(base)
        except NoNodeError:
            return {}
        rows: dict[TopicPartition, Mapping[str, Any]] = {}
        for raw in self._get_many([f"{base}/{b}" for b in buckets]):
            if raw is not None:
                rows.update(_decode_bucket(raw))
        return dict(sorted(rows.items()))

    def last_seq(self) -> int:
        """The head's journal sequence number (every commit rewrites it)."""
        raw, _ = self.client.get(self._p("head"))
        return int(json.loads(raw)["seq"])

    def original_configs(self) -> dict[tuple[ConfigResource, str], OriginalValue]:
        names = sorted(self.client.get_children(self._p("originals")))
        out = {}
        for name, raw in zip(names, self._get_many([self._p("originals", n) for n in names]), strict=True):
            if raw is None:
                continue
            kind, resource, key = (unquote(part) for part in name.split("|"))
            data = json.loads(raw)
            written = data.get("written")
            out[(ConfigResource(kind, resource), key)] = OriginalValue(
                data["value"], data["at"], None if written is None else tuple(written)
            )
        return dict(sorted(out.items()))

    def journal(
        self,
        after_seq: int = 0,
        *,
        plan_id: str | None = None,
        kinds: Iterable[EventKind] | None = None,
        limit: int | None = None,
    ) -> list[JournalEntry]:
        wanted = None if kinds is None else {EventKind(k) for k in kinds}
        chunks = sorted(int(c[1:]) for c in self.client.get_children(self._p("journal")))
        out: list[JournalEntry] = []
        for chunk in chunks:
            if (chunk + 1) * CHUNK - 1 <= after_seq:
                continue
            base = self._p("journal", f"c{chunk}")
            seqs = sorted(int(n[1:]) for n in self.client.get_children(base))
            missing = [s for s in seqs if s > after_seq and s not in self._entries]
            for s, raw in zip(missing, self._get_many([f"{base}/e{s:012d}" for s in missing]), strict=True):
                if raw is not None:
                    self._entries[s] = _decode_entry(raw)
            for s in seqs:
                entry = self._entries.get(s)
                if s <= after_seq or entry is None:
                    continue
                if plan_id is not None and entry.plan_id != plan_id:
                    continue
                if wanted is not None and entry.kind not in wanted:
                    continue
                out.append(entry)
                if limit is not None and len(out) >= limit:
                    return out
        return out

    def step_entry(
        self, kind: EventKind, plan_id: str, tp: TopicPartition, step_index: int
    ) -> JournalEntry | None:
        probe = Event(kind, plan_id, tp, step_index)
        if probe.idempotency_key is None:
            raise ValueError(f"{kind.value} entries are not keyed by step")
        return self._find_step(probe)

    def _find_step(self, event: Event) -> JournalEntry | None:
        assert event.idempotency_key is not None
        try:
            seq = int(self.client.get(self._p("steps", _step_node(event.idempotency_key)))[0])
        except NoNodeError:
            return None
        if seq not in self._entries:
            raw = self.client.get(self._p("journal", f"c{seq // CHUNK}", f"e{seq:012d}"))[0]
            self._entries[seq] = _decode_entry(raw)
        return self._entries[seq]

    def prune(self, before: float, keep_plans: int, limit: int) -> Pruned:
        with self._lock:
            self._fence.epoch()  # raises FencedError when leadership is not held
            ended = [p for p in self.list_plans() if p.status.terminal]
            ended.reverse()  # newest first
            doomed = [
                p.id
                for index, p in enumerate(ended)
                if index >= keep_plans or (p.finished_at if p.finished_at is not None else 0.0) < before
            ]
            pruned: list[str] = []
            for plan_id in list(reversed(doomed))[:limit]:
                tx = self._checked_tx()
                name = node_name(plan_id)
                states = self._p("states", name)
                with contextlib.suppress(NoNodeError):
                    for bucket in self.client.get_children(states):
                        tx.add("delete", f"{states}/{bucket}")
                    tx.add("delete", states)
                tx.add("delete", self._p("plandata", name))
                tx.add("delete", self._p("plans", name))
                if any(isinstance(r, Exception) for r in self._run(tx)):
                    break
                self._plan_bodies.pop(plan_id)
                pruned.append(plan_id)
            entries = self._prune_journal(before, limit)
        return Pruned(tuple(pruned), entries)

    def prune_anomalies(self, before: float, limit: int) -> tuple[str, ...]:
        with self._lock:
            self._fence.epoch()  # raises FencedError when leadership is not held
            doomed = oldest_prunable(self.anomalies(), before, limit)
            if not doomed:
                return ()
            tx = self._checked_tx()
            for anomaly_id in doomed:
                tx.add("delete", self._p("anomalies", node_name(anomaly_id)))
            if any(isinstance(r, Exception) for r in self._run(tx)):
                return ()
        return doomed

    def _checked_tx(self) -> _Tx:
        tx = _Tx()
        if hasattr(self._fence, "checks"):
            for path, version in self._fence.checks():
                tx.add("check", path, None, version)
        return tx

    def _prune_journal(self, before: float, limit: int) -> int:
        """Entries of pruned plans and plan-less entries older than `before` (at most `limit` * 1,000 a
        call), with the step keys of their entries; then chunks left empty, never the newest."""
        kept = {unquote(n) for n in self.client.get_children(self._p("plans"))}
        doomed = [
            e
            for e in self.journal()
            if (e.plan_id is not None and e.plan_id not in kept) or (e.plan_id is None and e.at < before)
        ][: limit * CHUNK]
        deleted = 0
        for start in range(0, len(doomed), CHUNK // 2):
            tx = self._checked_tx()
            batch = doomed[start : start + CHUNK // 2]
            for entry in batch:
                tx.add("delete", self._p("journal", f"c{entry.seq // CHUNK}", f"e{entry.seq:012d}"))
                key = _step_key(entry)
                if key is not None and self.client.exists(self._p("steps", _step_node(key))):
                    tx.add("delete", self._p("steps", _step_node(key)))
            if any(isinstance(r, Exception) for r in self._run(tx)):
                break
            for entry in batch:
                self._entries.pop(entry.seq)
            deleted += len(batch)
        chunks = sorted(int(c[1:]) for c in self.client.get_children(self._p("journal")))[:-1]
        for chunk in chunks:
            with contextlib.suppress(NoNodeError, NotEmptyError):
                self.client.delete(self._p("journal", f"c{chunk}"))
        return deleted

    def close(self) -> None:
        if self._owns_client:
            self.client.stop()
            self.client.close()


def _step_key(entry: JournalEntry) -> str | None:
    if entry.plan_id is None or entry.tp is None or entry.step_index is None:
        return None
    return Event(entry.kind, entry.plan_id, entry.tp, entry.step_index).idempotency_key


def _original_name(resource: ConfigResource, key: str) -> str:
    return "|".join(node_name(part) for part in (resource.type, resource.name, key))


def _decode_bucket(raw: bytes) -> dict[TopicPartition, Any]:
    return {TopicPartition(str(t), int(p)): state for t, p, state in json.loads(zlib.decompress(raw))}


def _entry_bytes(entry: JournalEntry) -> bytes:
    tp = entry.tp
    return _dumps(
        {
            "seq": entry.seq,
            "at": entry.at,
            "kind": entry.kind.value,
            "plan_id": entry.plan_id,
            "topic": tp.topic if tp else None,
            "partition": tp.partition if tp else None,
            "step_index": entry.step_index,
            "data": entry.data,
        },
        "journal entry",
    ).encode()


def _decode_entry(raw: bytes) -> JournalEntry:
    d = json.loads(raw)
    return JournalEntry(
        seq=d["seq"],
        at=d["at"],
        kind=EventKind(d["kind"]),
        plan_id=d["plan_id"],
        tp=TopicPartition(d["topic"], d["partition"]) if d["topic"] is not None else None,
        step_index=d["step_index"],
        data=d["data"],
    )

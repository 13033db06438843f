"""Throttle hygiene as pure decisions: what to record, write, report and forget, given what we last wrote.

`throttle.py` says what the KIP-73 configs should be for the moves in flight. This module keeps the book
that makes that safe across cycles, crashes and broker restarts:

- the original value of every config is recorded (by the caller, in the store) *before* our first write to
  it, so a crash at any point can still restore exactly what was there;
- `expected` is what each config may hold because of our writes: the value we wrote last, and the values
  before it until a read shows that one (Kafka answers a write before the brokers show it: `_expecting`).
  The caller persists it with the originals (`intents` before the writes, `notes` after), so a restarted
  daemon still knows its own values. A value read that is none of
  them is someone else's change, reported. A list is adopted as their original (we neither remove their
  entries now nor later; only entries we added stay ours). A rate is adopted only when `rate_adopted`
  says so: lower than the original and nothing of ours in flight there. Any other rate (a raise, such as
  another reassignd's rate added to ours, or a change racing our own write) is not theirs to keep: ours
  is written again and the original restored at the end, so no rate ever ends above what the broker had
  before our plan first touched it;
- a resource whose configs could not be read (a stopped broker, a failed request) says nothing: it is
  never compared, never written, never first-touched, and its expected value is kept as it was. When the
  broker comes back, the value it kept is the one we wrote, so it is recognised as ours and restored
  (remembering "unset" there instead would adopt our own rate as an operator's, and leave it for good);
- when nothing of ours is in flight and every readable config is back at its original (and none is
  unreadable), the originals are forgotten.

The caller executes a `ThrottleSync` (record originals, then the writes) and reports which resources failed
with `written`, which returns the book after the writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from reassignd import config_keys
from reassignd.engine.limits import Limits
from reassignd.engine.throttle import (
    BROKER_KEYS,
    TOPIC_KEYS,
    ConfigWrite,
    Move,
    ThrottleOriginals,
    ThrottlePlan,
    apply_writes,
    config_writes,
    split_entries,
    steadied,
    throttle_plan,
)
from reassignd.model import ClusterSnapshot, TopicPartition

Key = tuple[str, str, str]
"""(resource type, resource name, config key)."""
Resource = tuple[str, str]
Values = tuple[str | None, ...]
Note = tuple[str, str, str, Values]
"""(resource type, name, key, the values our writes may have left there): persisted with the original."""


@dataclass(frozen=True, slots=True)
class ForeignChange:
    key: Key
    expected: str | None
    found: str | None
    ours: Values = ()
    adopted: bool = True
    """Taken as the operator's original (restored at the end); False: ours is written again over it."""


@dataclass(frozen=True, slots=True)
class ThrottleBook:
    originals: ThrottleOriginals = field(default_factory=ThrottleOriginals)
    expected: Mapping[Key, Values] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def holds_originals(self) -> bool:
        return bool(self.originals.topics or self.originals.brokers)

    def applied_rates(self) -> tuple[dict[int, float], dict[int, float]]:
        """(follower rate per receiving broker, leader rate per serving broker) we expect in force."""
        incoming: dict[int, float] = {}
        outgoing: dict[int, float] = {}
        for (kind, name, key), values in self.expected.items():
            value = values[-1]
            if kind != "broker" or value is None:
                continue
            if key == config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE:
                incoming[int(name)] = float(value)
            elif key == config_keys.LEADER_REPLICATION_THROTTLED_RATE:
                outgoing[int(name)] = float(value)
        return incoming, outgoing

    def applied_log_dir_rates(self) -> dict[int, int]:
        """`replica.alter.log.dirs.io.max.bytes.per.second` per broker we expect in force (ours, or an
        operator's plus ours under the `add` policy) while a log-dir move of ours runs there."""
        key = config_keys.REPLICA_ALTER_LOG_DIRS_IO_MAX_BYTES_PER_SECOND
        return {
            int(name): int(float(values[-1]))
            for (kind, name, config), values in self.expected.items()
            if kind == "broker" and config == key and values[-1]
        }


@dataclass(frozen=True, slots=True)
class ThrottleSync:
    """One cycle's throttle work: record `record` and forget `forget` (one commit), then apply `writes`."""

    book: ThrottleBook
    """The book with this sync's originals; `expected` changes only once the writes are answered."""
    record: tuple[tuple[str, str, str, str | None], ...]
    forget: tuple[tuple[str, str, str], ...]
    foreign: tuple[ForeignChange, ...]
    writes: tuple[ConfigWrite, ...]
    skipped: tuple[ConfigWrite, ...]
    view: ClusterSnapshot
    """The configs as we believe them now: read where readable, expected elsewhere."""
    planned: tuple[tuple[str, str], ...]
    moving: bool
    intents: tuple[Note, ...] = ()
    """What the writes will leave, before they are sent: persist these first."""
    unread: tuple[tuple[str, str], ...] = ()
    """Resources with originals that this snapshot could not read: nothing there can be known restored
    (after a restart we may not even know what we wrote there)."""


def sync_throttles(
    book: ThrottleBook,
    snapshot: ClusterSnapshot,
    moves: Iterable[Move],
    limits: Limits,
    owned: Mapping[str, frozenset[int]],
    *,
    boosts: Mapping[int, Mapping[str, int]] | None = None,
    log_dir_brokers: frozenset[int] = frozenset(),
    produce: Mapping[TopicPartition, float] | None = None,
) -> ThrottleSync:
    """What to record, write and report so the configs become what `moves` need (originals when none).

    `boosts` (auto-throttle) raise our rate on single brokers; an operator's rate is never touched.
    `log_dir_brokers` have a move between their log dirs running (throttle.py's log-dir rate).
    `produce`: the moving partitions' produce rates, for the in-sync replication our quotas meter.
    """
    moves = tuple(moves)
    record: list[tuple[str, str, str, str | None]] = []
    forget: list[tuple[str, str, str]] = []
    book = _forget_deleted_topics(book, snapshot.deleted_topics, forget)
    view = _believed(snapshot, book)
    foreign = _foreign_changes(book, snapshot)
    if foreign:
        foreign = [_judged(book, c) for c in foreign]
        book = _adopt(book, view, [c for c in foreign if c.adopted], record, forget)
    plan = _boosted(
        throttle_plan(
            view, moves, limits, book.originals, owned, log_dir_brokers=log_dir_brokers, produce=produce
        ),
        limits,
        boosts,
    )
    plan = steadied(plan, view)
    plan = _without_unknown_firsts(plan, book.originals, snapshot)
    for topic, values in plan.originals.topics.items():
        for config, value in values.items():
            if config not in book.originals.topics.get(topic, {}):
                record.append(("topic", topic, config, value))
    for broker, values in plan.originals.brokers.items():
        for config, value in values.items():
            if config not in book.originals.brokers.get(broker, {}):
                record.append(("broker", str(broker), config, value))
    writes = config_writes(plan, view)
    skipped = tuple(w for w in writes if not snapshot.configs_known(w.resource, w.name))
    planned = tuple(("topic", t) for t in plan.topics) + tuple(("broker", str(b)) for b in plan.brokers)
    unread = tuple(r for r in planned if not snapshot.configs_known(*r))
    sending = tuple(w for w in writes if w not in skipped)
    after = apply_writes(view, sending)
    intents = []
    sent = {(w.resource, w.name, w.key) for w in sending}
    # an adopted config is recorded anew (forget, record): what it holds now is the value ours are part of;
    # one not adopted gets ours again: either way, what a read showed before our write is what it showed
    adopted = {c.key for c in foreign}
    for kind, name, key in sorted(sent | adopted):
        k = (kind, name, key)
        shown, then = _config(view, kind, name, key), _config(after, kind, name, key)
        prev = None if k in adopted else book.expected.get(k)
        intents.append((kind, name, key, _expecting(prev, shown, then, wrote=k in sent)))
    return ThrottleSync(
        book=replace(book, originals=plan.originals),
        record=tuple(record),
        forget=tuple(forget),
        foreign=tuple(foreign),
        writes=sending,
        skipped=skipped,
        view=view,
        planned=planned,
        moving=bool(moves) or bool(log_dir_brokers and limits.log_dir_throttled_rate is not None),
        unread=unread,
        intents=tuple(intents),
    )


@dataclass(frozen=True, slots=True)
class Written:
    book: ThrottleBook
    applied: tuple[ConfigWrite, ...]
    restored: bool
    """Nothing of ours is left anywhere: the originals are forgotten (`forget`)."""
    forget: tuple[tuple[str, str, str], ...] = ()
    notes: tuple[Note, ...] = ()
    """What our writes left where we wrote or adopted: persist these with the originals."""


def written(sync: ThrottleSync, failed: Iterable[Resource]) -> Written:
    """The book once `sync.writes` were sent and the resources in `failed` refused them."""
    failed = set(failed)
    applied = tuple(w for w in sync.writes if (w.resource, w.name) not in failed)
    after = apply_writes(sync.view, applied)
    expected = dict(sync.book.expected)
    written_to = {(w.resource, w.name) for w in applied}
    wrote = {(w.resource, w.name, w.key) for w in applied}
    adopted = {c.key for c in sync.foreign}
    for kind, name in sync.planned:
        if (kind, name) in sync.unread and (kind, name) not in written_to:
            continue  # not read, not written: what we expected there still stands
        keys = TOPIC_KEYS if kind == "topic" else sync.book.originals.brokers.get(int(name), BROKER_KEYS)
        for key in keys:
            k = (kind, name, key)
            expected[k] = _expecting(
                None if k in adopted else sync.book.expected.get(k),
                _config(sync.view, kind, name, key),
                _config(after, kind, name, key),
                wrote=k in wrote,
            )
    book = replace(sync.book, expected=MappingProxyType(expected))
    touched = {(w.resource, w.name, w.key) for w in sync.writes} | {c.key for c in sync.foreign}
    notes = tuple(
        (k, n, key, expected[(k, n, key)]) for k, n, key in sorted(touched) if (k, n, key) in expected
    )
    if sync.moving or sync.skipped or failed or sync.unread:
        return Written(book, applied, restored=False, notes=notes)
    forget = _restored(book, after)
    if forget is None:
        return Written(book, applied, restored=False, notes=notes)
    return Written(ThrottleBook(), applied, restored=True, forget=forget)


def _expecting(prev: Values | None, shown: str | None, now: str | None, *, wrote: bool) -> Values:
    """What a config may hold once we leave `now` there, when this cycle's read showed `shown`.

    Kafka answers a config write before the brokers show it: a broker answers DescribeConfigs from its own
    copy, which takes the change a moment later (KRaft: the controller's record replayed; ZooKeeper mode: the
    change notification processed). Measured on 4.4 and 3.9, the first read after the answer still showed
    the old value 16 and 20 times in 20, for up to about a second. So a value of ours is expected until a
    read shows our last write: until then the older values stay acceptable, not someone else's change."""
    pending = prev if prev is not None and shown in prev[:-1] else (shown,)
    if not wrote:
        return pending if len(pending) > 1 else (now,)
    return (*(v for v in pending if v != now), now)


def _config(snapshot: ClusterSnapshot, kind: str, name: str, key: str) -> str | None:
    if kind == "topic":
        return snapshot.topic_config(name, key)
    return snapshot.broker_config(int(name), key)


def _believed(snapshot: ClusterSnapshot, book: ThrottleBook) -> ClusterSnapshot:
    """`snapshot` with the configs we could not read filled in with what we expect them to hold."""
    unknown: dict[Resource, dict[str, str | None]] = {}
    for (kind, name, key), acceptable in book.expected.items():
        if not snapshot.configs_known(kind, name):
            unknown.setdefault((kind, name), {})[key] = acceptable[-1]
    if not unknown:
        return snapshot
    topics = dict(snapshot.topics)
    brokers = {b: dict(c) for b, c in snapshot.broker_configs.items()}
    for (kind, name), values in unknown.items():
        if kind == "topic":
            info = topics.get(name)
            if info is None:
                continue
            configs = {**info.configs, **{k: v for k, v in values.items() if v is not None}}
            topics[name] = replace(info, configs=configs)
        else:
            brokers[int(name)] = {k: v for k, v in values.items() if v is not None}
    return replace(snapshot, topics=topics, broker_configs=brokers)


def _foreign_changes(book: ThrottleBook, snapshot: ClusterSnapshot) -> list[ForeignChange]:
    """Configs holding none of the values we may have left there. A config with an original but nothing
    expected yet (a restart before our first write to it) can only hold its original."""
    expected = dict(book.expected)
    for topic, topic_originals in book.originals.topics.items():
        for config, original in topic_originals.items():
            expected.setdefault(("topic", topic, config), (original,))
    for broker, broker_originals in book.originals.brokers.items():
        for config, original in broker_originals.items():
            expected.setdefault(("broker", str(broker), config), (original,))
    changed = []
    for key, acceptable in expected.items():
        kind, name, config = key
        if not snapshot.configs_known(kind, name):
            continue  # says nothing: a stopped broker kept what it had
        found = _config(snapshot, kind, name, config)
        if not any(_same(kind, found, value) for value in acceptable):
            changed.append(ForeignChange(key, acceptable[-1], found, acceptable))
    return changed


def _same(kind: str, found: str | None, value: str | None) -> bool:
    """A topic's throttled-replicas list is a set: Kafka keeps its entries in an order of its own."""
    if kind != "topic" or found is None or value is None:
        return found == value
    return sorted(split_entries(found)) == sorted(split_entries(value))


def rate_adopted(original: str | None, ours: Values, found: str | None) -> bool:
    """Whether another writer's broker rate `found` becomes the operator's original in place of
    `original` (the one recorded before our plan first touched the broker, or one adopted since), where
    `ours` are the values our writes may have left there.

    Only a lower rate, found while nothing of ours is in flight there (a read showed our last write:
    `ours` holds one value). No throttle config at all counts lowest (an operator who removes their rate
    gets no rate back), and any rate is higher than none. A raise is never theirs: another reassignd's
    rate is the one it read (ours, or an operator's) plus its own, or its own where there was none, and an
    operator who wants more for our moves sets our rate through us (`reassignd throttle`). A change racing
    our own write cannot be told from one made of our value. So the original only ever goes down, and
    no rate is restored above what the broker had before our plan began there."""
    if len(ours) > 1:
        return False
    was, now = _rate_rank(original), _rate_rank(found)
    return was is not None and now is not None and now < was


def _rate_rank(value: str | None) -> int | None:
    """A rate's place in the order of `rate_adopted`: unset lowest; None for a value that is no rate."""
    if value is None:
        return -1
    try:
        return int(value)
    except ValueError:
        return None


def _judged(book: ThrottleBook, change: ForeignChange) -> ForeignChange:
    kind, name, config = change.key
    if kind != "broker":
        return change
    original = book.originals.brokers.get(int(name), {}).get(config)
    return replace(change, adopted=rate_adopted(original, change.ours, change.found))


def _adopt(
    book: ThrottleBook,
    view: ClusterSnapshot,
    foreign: list[ForeignChange],
    record: list[tuple[str, str, str, str | None]],
    forget: list[tuple[str, str, str]],
) -> ThrottleBook:
    """What another tool now has is theirs: recorded as the original, so we neither remove it now nor
    overwrite it later, and restore it at the end. Only entries we added stay ours."""
    topics = {t: dict(v) for t, v in book.originals.topics.items()}
    brokers = {b: dict(v) for b, v in book.originals.brokers.items()}
    for change in foreign:
        kind, name, config = change.key
        current = change.found
        if kind == "topic":
            original = topics.setdefault(name, {}).get(config)
            ours = {e for value in change.ours or (change.expected,) for e in split_entries(value)}
            added_by_us = ours - set(split_entries(original))
            theirs = [e for e in split_entries(current) if e not in added_by_us]
            adopted = ",".join(theirs) if theirs else None
            topics[name][config] = adopted
        else:
            adopted = current
            brokers.setdefault(int(name), {})[config] = adopted
        forget.append((kind, name, config))
        record.append((kind, name, config, adopted))
    originals = ThrottleOriginals(topics=topics, brokers=brokers, partitions=book.originals.partitions)
    return replace(book, originals=originals)


def _forget_deleted_topics(
    book: ThrottleBook, deleted: frozenset[str], forget: list[tuple[str, str, str]]
) -> ThrottleBook:
    """A deleted topic's configs went with it: nothing is left to restore there, and its vanished throttles
    are nobody's change."""
    stale = [k for k in book.expected if k[0] == "topic" and k[1] in deleted]
    gone = sorted((deleted & set(book.originals.topics)) | {k[1] for k in stale})
    if not gone:
        return book
    for topic in gone:
        for config in book.originals.topics.get(topic, {}):
            forget.append(("topic", topic, config))
    originals = ThrottleOriginals(
        topics={t: v for t, v in book.originals.topics.items() if t not in deleted},
        brokers=book.originals.brokers,
        partitions={t: v for t, v in book.originals.partitions.items() if t not in deleted},
    )
    expected = {k: v for k, v in book.expected.items() if not (k[0] == "topic" and k[1] in deleted)}
    return ThrottleBook(originals, MappingProxyType(expected))


def _without_unknown_firsts(
    plan: ThrottlePlan, known: ThrottleOriginals, snapshot: ClusterSnapshot
) -> ThrottlePlan:
    """A resource touched for the first time while unreadable has no original we could trust: it waits
    until it is read (its writes would be skipped anyway)."""
    topics = {t: v for t, v in plan.topics.items() if t in known.topics or snapshot.configs_known("topic", t)}
    brokers = {
        b: v
        for b, v in plan.brokers.items()
        if b in known.brokers or snapshot.configs_known("broker", str(b))
    }
    if len(topics) == len(plan.topics) and len(brokers) == len(plan.brokers):
        return plan
    originals = ThrottleOriginals(
        {t: v for t, v in plan.originals.topics.items() if t in topics},
        {b: v for b, v in plan.originals.brokers.items() if b in brokers},
        plan.originals.partitions,
    )
    return ThrottlePlan(MappingProxyType(topics), MappingProxyType(brokers), originals)


def _boosted(
    plan: ThrottlePlan, limits: Limits, boosts: Mapping[int, Mapping[str, int]] | None
) -> ThrottlePlan:
    if not boosts:
        return plan
    ours = {
        config_keys.LEADER_REPLICATION_THROTTLED_RATE: limits.leader_throttled_rate,
        config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE: limits.follower_throttled_rate,
    }
    brokers = dict(plan.brokers)
    for broker, rates in boosts.items():
        desired = dict(brokers.get(broker, {}))
        metered = plan.metered.get(broker, {})
        for key, rate in rates.items():
            base = ours[key]
            extra = metered.get(key, 0)
            if desired.get(key) is not None and base is not None and desired.get(key) == str(base + extra):
                desired[key] = str(rate + extra)
        brokers[broker] = desired
    return replace(plan, brokers=brokers)


def _restored(book: ThrottleBook, after: ClusterSnapshot) -> tuple[tuple[str, str, str], ...] | None:
    """The originals to forget when every config is back as it was, else None."""
    forget: list[tuple[str, str, str]] = []
    for topic, values in book.originals.topics.items():
        owned = book.originals.partitions.get(topic, frozenset())
        for key, original in values.items():
            if _ours_left(after.topic_config(topic, key), original, owned):
                return None
            forget.append(("topic", topic, key))
    for broker, values in book.originals.brokers.items():
        for key, original in values.items():
            if after.broker_config(broker, key) == original or original is not None:
                forget.append(("broker", str(broker), key))
            else:
                return None
    return tuple(forget)


def _ours_left(current: str | None, original: str | None, owned: frozenset[int]) -> bool:
    """Whether `current` still holds entries of ours: not the operator's, for partitions we moved; or is the
    empty value a SUBTRACT of all of them leaves, where the key was unset."""
    if current == "" and original is None:
        return True
    theirs = set(split_entries(original))
    for entry in split_entries(current):
        if entry in theirs or entry == "*":
            continue
        partition = entry.split(":", 1)[0]
        if partition.isdigit() and int(partition) in owned:
            return True
    return False

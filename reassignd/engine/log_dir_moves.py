"""Moves between the log dirs of one broker (a plan's `log_dirs`): a kind of step of their own.

Kafka moves a replica between the log dirs of its broker with AlterReplicaLogDirs: the broker creates a
future log in the new dir, copies the current log into it at most at its
`replica.alter.log.dirs.io.max.bytes.per.second` and swaps the two once the copy has caught up
(sim/log_dirs.py cites Kafka's rules). For each replica a plan names a dir for (`"any"` names none):

- the move starts once the replica is on its broker: in the partition's replica list and not being added
  (at once for a replica the plan keeps on its broker; after the step that adds it for one it moves
  there), never to a stopped broker, and only while the plan runs (paused or cancelling: none starts);
- at most `reassignment.max.log.dir.movements.per.broker` run on one broker at once;
- it runs while DescribeLogDirs shows a future log in the named dir and ends when the current log is there;
  a move whose future log vanished without arriving (dropped by the broker, or replaced by someone else's
  AlterReplicaLogDirs) waits to be started again;
- nothing is persisted: which moves run is read back from the cluster (a future log in the named dir is
  ours), so a restarted daemon adopts them as they are.

A partition is done when its replica list is its target and every replica named a dir is in it. Pure: the
plan-run machine's log-dir part (run/log_dirs.py) feeds each snapshot in and sends the starts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from reassignd.engine.limits import Limits
from reassignd.model import ANY_LOG_DIR, ClusterSnapshot, Problem, ReassignmentPlan, TopicPartition

Key = tuple[TopicPartition, int]
"""(partition, broker): one replica."""


def wanted_dirs(plan: ReassignmentPlan) -> dict[Key, str]:
    """Every replica the plan names a log dir for, with that dir."""
    wanted: dict[Key, str] = {}
    for tp, dirs in plan.log_dirs.items():
        for broker, path in zip(plan.targets[tp], dirs, strict=True):
            if path != ANY_LOG_DIR:
                wanted[(tp, broker)] = path
    return wanted


def log_dir_problems(plan: ReassignmentPlan, snapshot: ClusterSnapshot) -> list[Problem]:
    """Dirs the plan names that their broker does not have (Kafka would answer LOG_DIR_NOT_FOUND). A broker
    whose log dirs were not read (offline, or a snapshot without them) cannot be checked."""
    problems: list[Problem] = []
    for tp, dirs in sorted(plan.log_dirs.items()):
        for broker, path in zip(plan.targets[tp], dirs, strict=True):
            known = snapshot.broker_dirs.get(broker)
            if path != ANY_LOG_DIR and known is not None and path not in known:
                problems.append(
                    Problem(
                        str(tp),
                        "log_dirs",
                        f"broker {broker} has no log dir {path!r} (its log dirs: {', '.join(known)})",
                    )
                )
    return problems


@dataclass(frozen=True, slots=True)
class LogDirMoves:
    wanted: Mapping[Key, str] = field(default_factory=lambda: MappingProxyType({}))
    by_broker: Mapping[int, tuple[Key, ...]] = field(default_factory=lambda: MappingProxyType({}))
    """The wanted replicas of each broker, in plan order: the order their moves start in."""
    cursor: Mapping[int, int] = field(default_factory=lambda: MappingProxyType({}))
    """Per broker, how many of its first replicas have ended: never looked at again."""
    running: frozenset[Key] = frozenset()
    """Sent (or found under way) and not yet seen in place."""
    done: frozenset[Key] = frozenset()
    """Seen in the named dir."""
    dropped: frozenset[Key] = frozenset()
    """Of a partition that no longer exists (topic deleted): nothing left to move."""
    deleted_topics: frozenset[str] = frozenset()
    """Topics whose moves were dropped."""
    pending: frozenset[TopicPartition] = frozenset()
    """Partitions with a replica not yet in its dir."""
    replicas_of: Mapping[TopicPartition, tuple[int, ...]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    """Per partition, the brokers of its replicas given a dir."""

    @classmethod
    def of(cls, plan: ReassignmentPlan) -> LogDirMoves:
        wanted = wanted_dirs(plan)
        by_broker: dict[int, list[Key]] = {}
        named: dict[TopicPartition, tuple[int, ...]] = {}
        for tp, broker in wanted:
            by_broker.setdefault(broker, []).append((tp, broker))
            named[tp] = (*named.get(tp, ()), broker)
        return cls(
            wanted=MappingProxyType(wanted),
            by_broker=MappingProxyType({b: tuple(keys) for b, keys in by_broker.items()}),
            pending=frozenset(named),
            replicas_of=MappingProxyType(named),
        )

    def wanted_of(self, partitions: Iterable[TopicPartition]) -> list[Key]:
        """The wanted replicas of these partitions."""
        return [(tp, b) for tp in partitions for b in self.replicas_of.get(tp, ())]

    def ended(self, key: Key) -> bool:
        return key in self.done or key in self.dropped

    @property
    def unfinished(self) -> int:
        return len(self.wanted) - len(self.done) - len(self.dropped)

    @property
    def waiting(self) -> int:
        return self.unfinished - len(self.running)

    def running_brokers(self) -> frozenset[int]:
        return frozenset(b for _, b in self.running)

    def running_partitions(self) -> dict[TopicPartition, tuple[int, ...]]:
        """The replicas to read each cycle (DescribeLogDirs on their brokers), per partition."""
        out: dict[TopicPartition, tuple[int, ...]] = {}
        for tp, b in sorted(self.running):
            out[tp] = (*out.get(tp, ()), b)
        return out

    def to_json(self) -> dict[str, int]:
        return {
            "total": len(self.wanted),
            "done": len(self.done),
            "in_flight": len(self.running),
            "waiting": self.waiting,
            "dropped": len(self.dropped),
        }


@dataclass(frozen=True, slots=True)
class LogDirDecision:
    moves: LogDirMoves
    start: Mapping[Key, str]
    """AlterReplicaLogDirs to send: replica -> dir."""
    finished: tuple[Key, ...]
    """Moves seen in place this cycle."""
    restarted: tuple[Key, ...]
    """Moves whose future log vanished without arriving: they wait to start again."""


@dataclass
class _Cycle:
    """One decision's working sets: what ended, runs and started."""

    moves: LogDirMoves
    running: set[Key]
    done: set[Key] = field(default_factory=set)
    dropped: set[Key] = field(default_factory=set)
    finished: list[Key] = field(default_factory=list)
    restarted: list[Key] = field(default_factory=list)
    start: dict[Key, str] = field(default_factory=dict)

    def ended(self, key: Key) -> bool:
        return self.moves.ended(key) or key in self.done or key in self.dropped


def decide_log_dirs(
    moves: LogDirMoves,
    snapshot: ClusterSnapshot,
    limits: Limits,
    *,
    may_start: bool,
    deleted_topics: Iterable[str] = (),
) -> LogDirDecision:
    """Take in what `snapshot` read of the wanted replicas' dirs, then start what the limit allows.

    Cost: the replicas read (all of them at a full read, those in flight otherwise) plus, per broker with a
    free slot, its replicas from the first one not ended to the last one started."""
    if not moves.wanted:
        return LogDirDecision(moves, MappingProxyType({}), (), ())
    cycle = _Cycle(moves, set(moves.running))
    deleted = frozenset(deleted_topics) - moves.deleted_topics
    _drop_deleted(cycle, deleted)
    _take_in(cycle, snapshot)
    cursor = dict(moves.cursor)
    if may_start:
        _start(cycle, snapshot, limits.max_log_dir_movements_per_broker, cursor)
    done, dropped = cycle.done, cycle.dropped
    pending = moves.pending
    if done or dropped:
        left = {tp for tp, _ in done | dropped}
        for tp, broker in moves.wanted_of(left):
            if not cycle.ended((tp, broker)):
                left.discard(tp)
        pending = pending - left
    updated = replace(
        moves,
        pending=pending,
        running=frozenset(cycle.running),
        done=moves.done | done if done else moves.done,
        dropped=moves.dropped | dropped if dropped else moves.dropped,
        cursor=MappingProxyType(cursor),
        deleted_topics=moves.deleted_topics | deleted if deleted else moves.deleted_topics,
    )
    return LogDirDecision(
        updated, MappingProxyType(cycle.start), tuple(cycle.finished), tuple(cycle.restarted)
    )


def _drop_deleted(cycle: _Cycle, deleted: frozenset[str]) -> None:
    if not deleted:
        return
    for key in cycle.moves.wanted:
        if key[0].topic in deleted and not cycle.moves.ended(key):
            cycle.dropped.add(key)
            cycle.running.discard(key)


def _take_in(cycle: _Cycle, snapshot: ClusterSnapshot) -> None:
    """Each replica read: in its dir (done), its future log in the dir (ours, running, perhaps started
    before a restart), or a move that vanished without arriving (to start again)."""
    wanted = cycle.moves.wanted
    read = snapshot.replica_dirs
    seen = read if len(read) < len(wanted) else wanted
    for key in seen:
        path = wanted.get(key)
        now = read.get(key)
        if path is None or now is None or cycle.ended(key):
            continue  # not ours, or not read this cycle: what we knew stands
        if now == path:
            cycle.done.add(key)
            cycle.running.discard(key)
            cycle.finished.append(key)
        elif snapshot.future_dirs.get(key) == path:
            cycle.running.add(key)
        elif key in cycle.running:
            cycle.running.discard(key)
            cycle.restarted.append(key)


def _start(cycle: _Cycle, snapshot: ClusterSnapshot, cap: int, cursor: dict[int, int]) -> None:
    """Per online broker, the next replicas on it, in plan order, up to the free slots."""
    online = snapshot.online_broker_ids()
    load: dict[int, int] = {}
    for _, b in cycle.running:
        load[b] = load.get(b, 0) + 1
    for broker, keys in cycle.moves.by_broker.items():
        free = cap - load.get(broker, 0)
        if broker not in online or free <= 0:
            continue
        first = cursor.get(broker, 0)
        while first < len(keys) and cycle.ended(keys[first]):
            first += 1
        cursor[broker] = first
        for index in range(first, len(keys)):
            key = keys[index]
            if key in cycle.running or cycle.ended(key):
                continue
            p = snapshot.partitions.get(key[0])
            if p is None or broker not in p.replicas or broker in p.adding or broker in p.removing:
                continue  # not on the broker yet (or leaving it)
            cycle.start[key] = cycle.moves.wanted[key]
            cycle.running.add(key)
            free -= 1
            if free == 0:
                break


def refused(moves: LogDirMoves, answers: Mapping[Key, str | None]) -> LogDirMoves:
    """Kafka's answer to the moves started: a refused one waits to be started again."""
    failed = {key for key, error in answers.items() if error is not None}
    if not failed & moves.running:
        return moves
    return replace(moves, running=moves.running - failed)

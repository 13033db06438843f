"""Moves between the log dirs of one broker (a plan's `log_dirs`): a kind of step of their own.

Kafka moves a replica between the log dirs of its broker with AlterReplicaLogDirs: the broker creates a
future log in the new dir, copies the current log into it at most at its
`replica.alter.log.dirs.io.max.bytes.per.second` and swaps the two once the copy has caught up
(sim/log_dirs.py cites Kafka's rules). For each replica a plan names a dir for (`"any"` names none):

- a replica the plan adds to a broker is given its dir just before the step that adds it: the broker
  answers REPLICA_NOT_AVAILABLE but keeps the dir (ReplicaManager.alterReplicaLogDirs calls
  LogManager.maybeUpdatePreferredLogDir before it looks for the replica) and creates the replica in it
  (LogManager.getOrCreateLog: the preferred dir wins over KRaft's directory assignment), so it is copied
  once, not into another dir first and then again (`placed`). Kafka's own tool sends the dir after the
  reassignment and retries while REPLICA_NOT_AVAILABLE (ReassignPartitionsCommand.executeMoves): a broker
  that has created the replica by then answers NONE and copies it a second time;
- a replica already on its broker (or one its broker forgot the dir of: a broker restart clears it) moves
  once it is in the partition's replica list and not being added: never to a stopped broker, only while
  the plan runs (paused: none starts), at most `reassignment.max.log.dir.movements.per.broker` on one broker;
- a move runs while DescribeLogDirs shows a future log in the named dir and ends when the current log is
  there; a move whose future log vanished without arriving (dropped by the broker, or replaced by someone
  else's AlterReplicaLogDirs) waits to be started again;
- a cancelled plan sends its moves in flight back, as `kafka-reassign-partitions.sh --cancel` does:
  AlterReplicaLogDirs to the dir the current log is in drops the future log (`sent_back`);
- nothing is persisted: which moves run is read back from the cluster (a future log in the named dir is
  ours), so a restarted daemon adopts them as they are.

A partition is done when its replica list is its target and every replica named a dir is in it. Pure: the
plan-run machine's log-dir part (run/log_dirs.py) feeds each snapshot in and sends the starts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Final

from reassignd.engine.limits import Limits
from reassignd.model import ANY_LOG_DIR, ClusterSnapshot, Problem, ReassignmentPlan, TopicPartition

Key = tuple[TopicPartition, int]
"""(partition, broker): one replica."""

REPLICA_NOT_AVAILABLE: Final = "REPLICA_NOT_AVAILABLE"
_NONE: Mapping[Key, str] = MappingProxyType({})


def not_hosted_yet(error: str | None) -> bool:
    """Kafka's answer to AlterReplicaLogDirs for a replica its broker does not host (yet): the broker has
    kept the dir for the replica it creates next (errors come as "NAME: message")."""
    return error is not None and error.split(":", 1)[0].strip() == REPLICA_NOT_AVAILABLE


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
    """Sent (or found under way) and not yet seen in place: a future log copies the replica."""
    placed: frozenset[Key] = frozenset()
    """Given their dir before the step that adds them (answered REPLICA_NOT_AVAILABLE): their broker
    creates them in it. Not yet seen there."""
    sent_back: Mapping[Key, str] = field(default_factory=lambda: _NONE)
    """Moves of a cancelled plan sent back to the dir of their current log (the future log dropped): read
    until no future log of them is left."""
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
    def in_flight(self) -> int:
        """Copying into their dir, being created in it, or going back from it (a cancel)."""
        return len(self.running) + len(self.placed) + len(self.sent_back)

    @property
    def waiting(self) -> int:
        return self.unfinished - self.in_flight

    @property
    def copying(self) -> bool:
        """A future log of ours may still copy: the plan cannot end, and its throttle is still ours."""
        return bool(self.running or self.sent_back)

    def copying_brokers(self) -> frozenset[int]:
        """The brokers a future log of ours may copy on: they need the log-dir throttle."""
        return frozenset(b for _, b in (*self.running, *self.sent_back))

    def in_flight_partitions(self) -> frozenset[TopicPartition]:
        return frozenset(tp for tp, _ in (*self.running, *self.placed, *self.sent_back))

    def watched_partitions(self) -> dict[TopicPartition, tuple[int, ...]]:
        """The replicas to read each cycle (DescribeLogDirs on their brokers), per partition: those in
        flight."""
        out: dict[TopicPartition, tuple[int, ...]] = {}
        for tp, b in sorted({*self.running, *self.placed, *self.sent_back}):
            out[tp] = (*out.get(tp, ()), b)
        return out

    def to_json(self) -> dict[str, int]:
        return {
            "total": len(self.wanted),
            "done": len(self.done),
            "in_flight": self.in_flight,
            "waiting": self.waiting,
            "dropped": len(self.dropped),
        }


@dataclass(frozen=True, slots=True)
class LogDirRequests:
    """One cycle's AlterReplicaLogDirs (replica -> dir), by why each replica is asked: Kafka's answer means
    something else for each."""

    move: Mapping[Key, str] = field(default_factory=lambda: _NONE)
    """Replicas on their broker: a future log copies each into the dir."""
    place: Mapping[Key, str] = field(default_factory=lambda: _NONE)
    """Replicas a step starting now adds: sent before the step, their broker keeps the dir for them."""
    send_back: Mapping[Key, str] = field(default_factory=lambda: _NONE)
    """Moves of a cancelled plan, to the dir of their current log: the broker drops their future log."""

    def __bool__(self) -> bool:
        return bool(self.move or self.place or self.send_back)

    def all(self) -> dict[Key, str]:
        return {**self.move, **self.place, **self.send_back}


@dataclass(frozen=True, slots=True)
class LogDirDecision:
    moves: LogDirMoves
    requests: LogDirRequests
    finished: tuple[Key, ...]
    """Moves seen in place this cycle."""
    restarted: tuple[Key, ...]
    """Moves whose future log vanished without arriving: they wait to start again."""
    misplaced: tuple[Key, ...]
    """Placed replicas their broker created in another dir (it forgot the dir: restarted): they wait to move
    once their step is over."""


@dataclass
class _Cycle:
    """One decision's working sets: what ended, runs, was placed and is asked for."""

    moves: LogDirMoves
    running: set[Key]
    placed: set[Key]
    sent_back: dict[Key, str]
    done: set[Key] = field(default_factory=set)
    dropped: set[Key] = field(default_factory=set)
    finished: list[Key] = field(default_factory=list)
    restarted: list[Key] = field(default_factory=list)
    misplaced: list[Key] = field(default_factory=list)
    start: dict[Key, str] = field(default_factory=dict)
    place: dict[Key, str] = field(default_factory=dict)
    send_back: dict[Key, str] = field(default_factory=dict)

    def ended(self, key: Key) -> bool:
        return self.moves.ended(key) or key in self.done or key in self.dropped

    def arrived(self, key: Key) -> None:
        self.done.add(key)
        self.running.discard(key)
        self.placed.discard(key)
        self.finished.append(key)


def decide_log_dirs(
    moves: LogDirMoves,
    snapshot: ClusterSnapshot,
    limits: Limits,
    *,
    may_start: bool,
    cancelling: bool = False,
    adding: Mapping[TopicPartition, tuple[int, ...]] = MappingProxyType({}),
    deleted_topics: Iterable[str] = (),
) -> LogDirDecision:
    """Take in what `snapshot` read of the wanted replicas' dirs; then, while the plan runs, give the
    replicas the starting steps add (`adding`) their dir and start the moves the limit allows, or, once
    cancelling, send the moves in flight back.

    Cost: the replicas read (all of them at a full read, those in flight otherwise) plus, per broker with a
    free slot, its replicas from the first one not ended to the last one started."""
    if not moves.wanted:
        return LogDirDecision(moves, LogDirRequests(), (), (), ())
    cycle = _Cycle(moves, set(moves.running), set(moves.placed), dict(moves.sent_back))
    deleted = frozenset(deleted_topics) - moves.deleted_topics
    _drop_deleted(cycle, deleted)
    _take_in(cycle, snapshot)
    _forget_left(cycle, snapshot)
    cursor = dict(moves.cursor)
    if cancelling:
        _send_back(cycle, snapshot)
    elif may_start:
        _place(cycle, snapshot, adding)
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
        placed=frozenset(cycle.placed),
        sent_back=MappingProxyType(cycle.sent_back),
        done=moves.done | done if done else moves.done,
        dropped=moves.dropped | dropped if dropped else moves.dropped,
        cursor=MappingProxyType(cursor),
        deleted_topics=moves.deleted_topics | deleted if deleted else moves.deleted_topics,
    )
    requests = LogDirRequests(
        MappingProxyType(cycle.start), MappingProxyType(cycle.place), MappingProxyType(cycle.send_back)
    )
    return LogDirDecision(
        updated, requests, tuple(cycle.finished), tuple(cycle.restarted), tuple(cycle.misplaced)
    )


def _drop_deleted(cycle: _Cycle, deleted: frozenset[str]) -> None:
    if not deleted:
        return
    for key in cycle.moves.wanted:
        if key[0].topic in deleted and not cycle.moves.ended(key):
            cycle.dropped.add(key)
            cycle.running.discard(key)
            cycle.placed.discard(key)
            cycle.sent_back.pop(key, None)


def _take_in(cycle: _Cycle, snapshot: ClusterSnapshot) -> None:
    """Each replica read: in its dir (done), its future log in the dir (ours, running, perhaps started
    before a restart), a move that vanished without arriving (to start again), a placed replica created
    elsewhere (to move after its step), or a move sent back that is over."""
    wanted = cycle.moves.wanted
    read = snapshot.replica_dirs
    seen = read if len(read) < len(wanted) else wanted
    for key in seen:
        path = wanted.get(key)
        now = read.get(key)
        if path is None or now is None or cycle.ended(key):
            continue  # not ours, or not read this cycle: what we knew stands
        future = snapshot.future_dirs.get(key)
        back = cycle.sent_back.get(key)
        if back is not None:
            if future == back:
                continue  # it had arrived when it was sent back: it copies back, still ours
            del cycle.sent_back[key]
        if now == path:
            cycle.arrived(key)
        elif future == path:
            cycle.running.add(key)
            cycle.placed.discard(key)
        elif key in cycle.running:
            cycle.running.discard(key)
            cycle.restarted.append(key)
        elif key in cycle.placed:
            cycle.placed.discard(key)
            cycle.misplaced.append(key)


def _forget_left(cycle: _Cycle, snapshot: ClusterSnapshot) -> None:
    """Replicas in flight that are no longer on their broker: a placed one whose step did not add it after
    all (refused, reverted) is given its dir again when a step adds it; a move's future log, or one sent
    back, went with its replica (ReplicaManager.stopPartitions stops the alter-log-dirs fetcher and
    LogManager.asyncDelete deletes both logs), so nothing of ours copies there any more."""
    for key in [*cycle.placed, *cycle.running, *cycle.sent_back]:
        p = snapshot.partitions.get(key[0])
        if p is not None and key[1] not in p.replicas:
            cycle.placed.discard(key)
            cycle.running.discard(key)
            cycle.sent_back.pop(key, None)


def _place(
    cycle: _Cycle, snapshot: ClusterSnapshot, adding: Mapping[TopicPartition, tuple[int, ...]]
) -> None:
    """The replicas the steps starting now add, to their dir: sent before the steps."""
    online = snapshot.online_broker_ids()
    wanted = cycle.moves.wanted
    for tp, brokers in adding.items():
        for broker in brokers:
            key = (tp, broker)
            path = wanted.get(key)
            if path is not None and broker in online and not cycle.ended(key) and key not in cycle.running:
                cycle.place[key] = path


def _send_back(cycle: _Cycle, snapshot: ClusterSnapshot) -> None:
    """Each move in flight to the dir its current log is in (read this cycle), as Kafka's --cancel does."""
    for key in sorted(cycle.running):
        now = snapshot.replica_dirs.get(key)
        if now is not None and now != cycle.moves.wanted[key]:
            cycle.send_back[key] = now


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
            if key in cycle.running or key in cycle.placed or cycle.ended(key):
                continue
            p = snapshot.partitions.get(key[0])
            if p is None or broker not in p.replicas or broker in p.adding or broker in p.removing:
                continue  # not on the broker yet (or leaving it)
            cycle.start[key] = cycle.moves.wanted[key]
            cycle.running.add(key)
            free -= 1
            if free == 0:
                break


@dataclass(frozen=True, slots=True)
class LogDirAnswers:
    """Kafka's answers to one cycle's requests, by what they mean."""

    moves: LogDirMoves
    started: tuple[Key, ...] = ()
    """A future log copies them (a move, or a placed replica its broker already hosted)."""
    placed: tuple[Key, ...] = ()
    sent_back: tuple[Key, ...] = ()
    failed: tuple[tuple[Key, str], ...] = ()
    """Refused: a move waits to start again, a placement makes it a move after its step, a send-back is
    sent again next cycle."""


def answered(
    moves: LogDirMoves, requests: LogDirRequests, answers: Mapping[Key, str | None]
) -> LogDirAnswers:
    """What each answer to `requests` makes of its replica."""
    if not requests:
        return LogDirAnswers(moves)
    running, placed, sent_back = set(moves.running), set(moves.placed), dict(moves.sent_back)
    started: list[Key] = []
    placed_now: list[Key] = []
    back: list[Key] = []
    failed: list[tuple[Key, str]] = []
    for key in requests.move:
        error = answers.get(key)
        if error is None:
            started.append(key)
        else:
            running.discard(key)
            failed.append((key, error))
    for key in requests.place:
        error = answers.get(key)
        if error is None:
            running.add(key)
            started.append(key)
        elif not_hosted_yet(error):
            placed.add(key)
            placed_now.append(key)
        else:
            failed.append((key, error))
    for key, path in requests.send_back.items():
        error = answers.get(key)
        if error is None:
            running.discard(key)
            sent_back[key] = path
            back.append(key)
        else:
            failed.append((key, error))
    updated = replace(
        moves,
        running=frozenset(running),
        placed=frozenset(placed),
        sent_back=MappingProxyType(sent_back),
    )
    return LogDirAnswers(updated, tuple(started), tuple(placed_now), tuple(back), tuple(failed))

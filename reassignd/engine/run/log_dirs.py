"""The log-dir part: the plan's moves between the log dirs of a broker (log_dir_moves.py has the rules),
seen in place, placed before their step, started, sent back on cancel, and answered."""

from __future__ import annotations

from collections.abc import Mapping

from reassignd.engine.journal import Event, EventKind
from reassignd.engine.limits import Limits
from reassignd.engine.log_dir_moves import LogDirMoves, LogDirRequests, decide_log_dirs
from reassignd.engine.log_dir_moves import answered as answers_to
from reassignd.engine.run.effects import Answered, Log, Notify
from reassignd.engine.run.outbox import Outbox
from reassignd.model import ClusterSnapshot, TopicPartition


def observed(
    moves: LogDirMoves,
    full: ClusterSnapshot,
    limits: Limits,
    deleted_topics: frozenset[str],
    out: Outbox,
    *,
    may_start: bool,
    cancelling: bool,
    adding: Mapping[TopicPartition, tuple[int, ...]],
) -> LogDirMoves:
    """Moves seen in place are journaled, vanished ones wait to start again; the replicas the starting steps
    add get their dir, new moves are sent, or, once cancelling, those in flight are sent back."""
    dirs = decide_log_dirs(
        moves,
        full,
        limits,
        may_start=may_start,
        cancelling=cancelling,
        adding=adding,
        deleted_topics=deleted_topics,
    )
    for tp, broker in dirs.finished:
        data = {"broker": broker, "log_dir": moves.wanted[(tp, broker)]}
        out.journal(Event(EventKind.LOG_DIR_FINISHED, out.plan_id, tp, None, data))
        out.say(
            Log("info", "log dir move finished", {"plan": out.plan_id, "partition": str(tp), **data}),
            Notify("log_dir.finished", {"plan_id": out.plan_id, "tp": tp, **data}),
        )
    for tp, broker in dirs.restarted:
        out.say(
            Log(
                "warning",
                "log dir move ended before its replica reached the dir; started again",
                {"plan": out.plan_id, "partition": str(tp), "broker": broker},
            )
        )
    for tp, broker in dirs.misplaced:
        out.say(
            Log(
                "warning",
                "replica created in another log dir than the one given before its step (its broker "
                "restarted?); moved there after the step",
                {"plan": out.plan_id, "partition": str(tp), "broker": broker},
            )
        )
    out.log_dirs = dirs.requests
    return dirs.moves


def answered(moves: LogDirMoves, sent: LogDirRequests, answer: Answered, out: Outbox) -> LogDirMoves:
    """Moves Kafka accepted are journaled as started, replicas it will create in their dir as placed, moves
    it dropped as cancelled; a refused request is journaled and tried again."""
    outcome = answers_to(moves, sent, answer.log_dirs or {})
    where = {"plan": out.plan_id}
    asked = sent.all()
    said = (
        (outcome.started, EventKind.LOG_DIR_STARTED, "log dir move started"),
        (outcome.placed, EventKind.LOG_DIR_PLACED, "log dir given before the step that adds the replica"),
        (outcome.sent_back, EventKind.LOG_DIR_CANCELLED, "log dir move sent back to its current dir"),
    )
    for keys, kind, line in said:
        for tp, broker in keys:
            data = {"broker": broker, "log_dir": asked[(tp, broker)]}
            out.journal(Event(kind, out.plan_id, tp, None, data))
            out.say(
                Log("info", line, {**where, "partition": str(tp), **data}),
                Notify(kind.value, {"plan_id": out.plan_id, "tp": tp, **data}),
            )
    for (tp, broker), error in outcome.failed:
        data = {"broker": broker, "log_dir": asked[(tp, broker)]}
        failure = {"api": "alter_replica_log_dirs", "error": error, **data}
        out.journal(Event(EventKind.ERROR, out.plan_id, tp, None, failure))
        out.say(
            Log(
                "warning",
                "log dir request refused by Kafka; tried again later",
                {**where, "partition": str(tp), "error": error, **data},
            )
        )
    return outcome.moves

"""The log-dir part: the plan's moves between the log dirs of a broker (log_dir_moves.py has the rules),
seen in place, started and answered."""

from __future__ import annotations

from collections.abc import Mapping

from reassignd.engine.journal import Event, EventKind
from reassignd.engine.limits import Limits
from reassignd.engine.log_dir_moves import Key, LogDirMoves, decide_log_dirs, refused
from reassignd.engine.run.effects import Answered, Log, Notify
from reassignd.engine.run.outbox import Outbox
from reassignd.model import ClusterSnapshot


def observed(
    moves: LogDirMoves,
    full: ClusterSnapshot,
    limits: Limits,
    deleted_topics: frozenset[str],
    out: Outbox,
    *,
    may_start: bool,
) -> LogDirMoves:
    """Moves seen in place are journaled, vanished ones wait to start again, new ones are sent."""
    dirs = decide_log_dirs(moves, full, limits, may_start=may_start, deleted_topics=deleted_topics)
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
    out.log_dir_moves = dirs.start
    return dirs.moves


def answered(moves: LogDirMoves, sent: Mapping[Key, str], answer: Answered, out: Outbox) -> LogDirMoves:
    """Moves Kafka accepted are journaled as started; a refused one waits to be started again."""
    answers = answer.log_dirs or {}
    for (tp, broker), path in sent.items():
        error = answers.get((tp, broker))
        data = {"broker": broker, "log_dir": path}
        where = {"plan": out.plan_id, "partition": str(tp)}
        if error is None:
            out.journal(Event(EventKind.LOG_DIR_STARTED, out.plan_id, tp, None, data))
            out.say(
                Log("info", "log dir move started", {**where, **data}),
                Notify("log_dir.started", {"plan_id": out.plan_id, "tp": tp, **data}),
            )
        else:
            failure = {"api": "alter_replica_log_dirs", "error": error, **data}
            out.journal(Event(EventKind.ERROR, out.plan_id, tp, None, failure))
            out.say(
                Log("warning", "log dir move refused by Kafka; retried", {**where, "error": error, **data})
            )
    if not sent:
        return moves
    return refused(moves, {k: answers.get(k) for k in sent})

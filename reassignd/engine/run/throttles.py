"""The throttle part: the KIP-73 configs our moves need, kept by the book of throttle_book.py.

Each observation syncs the book with the configs read: the originals to record and forget go into the
cycle's commit, with what the writes will leave (`intents`), before the writes; someone else's change is
journaled, with `adopted` (false for a rate `rate_adopted` refuses: ours goes back over it). Kafka's
answer tells which writes applied (journaled as set or restored) and, once nothing of ours is left
anywhere, the originals are forgotten. The plan-run machine and the idle machine (idle.py, throttles left
behind) both use it.

A step that copies starts only once the throttles it needs are written: when steps start, the machine sends
the throttle writes alone first, and `held_back` keeps back the steps whose topic, serving leader or
receiving brokers could not be written (an ACL missing, a failed request) or whose configs could not be
read; they wait, pending, and are tried again next cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from reassignd.engine.actions import StartStep
from reassignd.engine.journal import Event, EventKind
from reassignd.engine.limits import Limits
from reassignd.engine.run.effects import Answered, Log, Notify
from reassignd.engine.run.outbox import Outbox
from reassignd.engine.throttle import Move
from reassignd.engine.throttle_book import ThrottleBook, ThrottleSync, Written, sync_throttles, written
from reassignd.model import ClusterSnapshot, TopicPartition


def synced(
    book: ThrottleBook,
    read: ClusterSnapshot,
    moves: Iterable[Move],
    limits: Limits,
    out: Outbox,
    *,
    owned: Mapping[str, frozenset[int]],
    boosts: Mapping[int, Mapping[str, int]] | None = None,
    log_dir_brokers: frozenset[int] = frozenset(),
    produce: Mapping[TopicPartition, float] | None = None,
) -> ThrottleSync:
    """What to record, write and report so the configs become what `moves` need (the book's originals
    when there are none); `produce`: the moving partitions' produce rates (tracking.py)."""
    sync = sync_throttles(
        book,
        read,
        moves,
        limits,
        owned,
        boosts=boosts,
        log_dir_brokers=log_dir_brokers,
        produce=produce,
    )
    for change in sync.foreign:
        kind, name, config = change.key
        data = {
            "resource": kind,
            "name": name,
            "config": config,
            "expected": change.expected,
            "found": change.found,
            "adopted": change.adopted,
        }
        out.journal(Event(EventKind.FOREIGN_CHANGE, out.plan_id, None, None, data))
        out.say(Log("warning", "throttle changed by someone else", data))
    if sync.foreign:
        configs = [list(c.key) for c in sync.foreign]
        out.say(Notify("throttle.foreign_change", {**out.about, "configs": configs}))
    out.record_originals, out.forget_originals, out.written = sync.record, sync.forget, sync.intents
    out.throttle_writes = sync.writes
    return sync


def throttled(limits: Limits) -> bool:
    """Whether our steps need throttle configs at all (a rate is set)."""
    return limits.leader_throttled_rate is not None or limits.follower_throttled_rate is not None


def held_back(
    starts: Iterable[StartStep],
    sync: ThrottleSync,
    answer: Answered,
    limits: Limits,
    out: Outbox,
) -> dict[TopicPartition, str]:
    """The steps not to send, with why: a resource their throttle needs (the topic's lists, the serving
    leader's rate, each receiving broker's rate) refused its write, or its configs could not be read (an
    error read, not merely absent: a model without configs holds nothing back). Said once a cycle."""
    failed = dict(answer.throttles or {})
    unread = {(w.resource, w.name) for w in sync.skipped} | sync.view.unread_configs
    held: dict[TopicPartition, str] = {}
    for start in starts:
        if not start.adding:
            continue  # only reorders the replicas: nothing to copy, nothing to throttle
        needs = [("topic", start.tp.topic)]
        if limits.leader_throttled_rate is not None:
            needs.append(("broker", str(start.leader)))
        if limits.follower_throttled_rate is not None:
            needs += [("broker", str(b)) for b in start.adding]
        why = [
            f"{kind} {name}: {failed[(kind, name)]}" if (kind, name) in failed else f"{kind} {name}: not read"
            for kind, name in dict.fromkeys(needs)
            if (kind, name) in failed or (kind, name) in unread
        ]
        if why:
            held[start.tp] = "its throttle cannot be written (" + "; ".join(why) + ")"
    if held:
        first = next(iter(held.items()))
        fields = {"steps": len(held), "partition": str(first[0]), "why": first[1]}
        out.say(
            Log("warning", "steps wait: their throttles could not be written", {**out.plan_fields, **fields})
        )
    return held


def answered(sync: ThrottleSync, answer: Answered, out: Outbox) -> Written:
    """The book once Kafka answered the writes: applied ones journaled, failed ones tried next cycle."""
    failed = dict(answer.throttles or {})
    outcome = written(sync, failed)
    for write in outcome.applied:
        event = EventKind.THROTTLE_SET if write.op in ("SET", "APPEND") else EventKind.THROTTLE_RESTORED
        data = {
            "resource": write.resource,
            "name": write.name,
            "config": write.key,
            "op": write.op,
            "value": write.value,
        }
        out.journal(Event(event, out.plan_id, None, None, data))
    if outcome.applied:
        out.say(Notify("throttle.changed", {**out.about, "writes": len(outcome.applied)}))
    for (kind, name), error in sorted(failed.items()):
        fields = {"resource": kind, "name": name, "error": error}
        out.say(Log("warning", "throttle write failed; retried next cycle", fields))
    out.forget_originals, out.written = outcome.forget, outcome.notes
    return outcome

"""Throttle hygiene across cycles: our writes stay ours, through unreadable brokers, deletions, operators."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassignd.config_keys import (
    FOLLOWER_REPLICATION_THROTTLED_RATE,
    FOLLOWER_REPLICATION_THROTTLED_REPLICAS,
    LEADER_REPLICATION_THROTTLED_RATE,
    LEADER_REPLICATION_THROTTLED_REPLICAS,
)
from reassignd.engine import Limits
from reassignd.engine.throttle import ConfigWrite, Move, apply_writes
from reassignd.engine.throttle_book import (
    ThrottleBook,
    ThrottleSync,
    rate_adopted,
    sync_throttles,
    written,
)
from reassignd.model import Broker, ClusterSnapshot, PartitionState, TopicInfo, TopicPartition

LIMITS = Limits(leader_throttled_rate=1_000_000, follower_throttled_rate=1_000_000)
T0 = TopicPartition("t", 0)
OWNED = {"t": frozenset({0, 1})}
MOVE = Move(T0, source=(1, 2, 3), adding=(4,))


def cluster(
    broker_configs: dict[int, dict[str, str]] | None = None, topic: dict[str, str] | None = None
) -> ClusterSnapshot:
    return ClusterSnapshot.build(
        [Broker(b) for b in (1, 2, 3, 4)],
        [PartitionState(T0, (1, 2, 3), (1, 2, 3), 1)],
        [TopicInfo("t", configs=topic or {})],
        broker_configs={b: dict((broker_configs or {}).get(b, {})) for b in (1, 2, 3, 4)},
    )


def apply(snapshot: ClusterSnapshot, sync: ThrottleSync) -> ClusterSnapshot:
    return apply_writes(snapshot, sync.writes)


def run(
    book: ThrottleBook, snapshot: ClusterSnapshot, moves: list[Move], limits: Limits = LIMITS
) -> tuple[ThrottleBook, ClusterSnapshot, ThrottleSync, bool]:
    sync = sync_throttles(book, snapshot, moves, limits, OWNED)
    outcome = written(sync, ())
    return outcome.book, apply(snapshot, sync), sync, outcome.restored


def offline(snapshot: ClusterSnapshot, broker: int) -> ClusterSnapshot:
    """As the adapter reads a stopped broker: listed offline, its configs not read."""
    brokers = {**snapshot.brokers, broker: Broker(broker, online=False)}
    configs = {b: c for b, c in snapshot.broker_configs.items() if b != broker}
    return replace(snapshot, brokers=brokers, broker_configs=configs)


def test_our_writes_are_ours_and_are_restored_when_the_moves_end() -> None:
    book, after, sync, _ = run(ThrottleBook(), cluster(), [MOVE])
    assert {(w.name, w.key) for w in sync.writes} >= {
        ("4", FOLLOWER_REPLICATION_THROTTLED_RATE),
        ("1", LEADER_REPLICATION_THROTTLED_RATE),
        ("t", FOLLOWER_REPLICATION_THROTTLED_REPLICAS),
    }
    book, after, sync, _ = run(book, after, [MOVE])
    assert not sync.foreign and not sync.writes
    book, after, sync, restored = run(book, after, [])
    assert restored and not book.holds_originals
    assert after.broker_configs == cluster().broker_configs
    assert after.topic_config("t", LEADER_REPLICATION_THROTTLED_REPLICAS) is None


def test_a_broker_that_was_down_keeps_our_rate_and_gets_it_removed_when_back() -> None:
    """The reproduction of issue 13: the old keeper remembered "unset" for a broker it could not read and,
    when it came back with our rate still on it, adopted that rate as an operator's, for good."""
    book, after, _, _ = run(ThrottleBook(), cluster(), [MOVE])
    assert after.broker_config(4, FOLLOWER_REPLICATION_THROTTLED_RATE) == "1000000"
    down = offline(after, 4)  # the receiving broker stops; the move ends meanwhile
    book, down_after, sync, restored = run(book, down, [])
    assert not sync.foreign and not restored, "nothing can be restored on a broker we cannot read"
    assert any(w.name == "4" for w in sync.skipped)
    assert book.expected[("broker", "4", FOLLOWER_REPLICATION_THROTTLED_RATE)][-1] == "1000000", (
        "what we wrote is still expected"
    )
    back = replace(
        down_after,
        brokers=after.brokers,
        broker_configs={**down_after.broker_configs, 4: after.broker_configs[4]},
    )
    book, final, sync, restored = run(book, back, [])
    assert not sync.foreign, "our own rate is not someone else's"
    assert restored and final.broker_config(4, FOLLOWER_REPLICATION_THROTTLED_RATE) is None


def test_a_broker_first_touched_while_unreadable_records_no_original() -> None:
    snapshot = offline(cluster({4: {FOLLOWER_REPLICATION_THROTTLED_RATE: "5"}}), 4)
    sync = sync_throttles(ThrottleBook(), snapshot, [MOVE], LIMITS, OWNED)
    assert not any(kind == "broker" and name == "4" for kind, name, _, _ in sync.record)
    assert 4 not in sync.book.originals.brokers


def test_an_operators_change_is_adopted_and_restored_as_theirs() -> None:
    """Their entries in a list, and their rate where they lowered it (a raise is not adopted: below)."""
    book, after, _, _ = run(
        ThrottleBook(), cluster({4: {FOLLOWER_REPLICATION_THROTTLED_RATE: "5000"}}), [MOVE]
    )
    book, after, _, _ = run(book, after, [MOVE])  # a read shows our writes: nothing of ours in flight
    configs = {**after.broker_configs, 4: {FOLLOWER_REPLICATION_THROTTLED_RATE: "777"}}
    topic = {
        **after.topics["t"].configs,
        FOLLOWER_REPLICATION_THROTTLED_REPLICAS: after.topic_config(
            "t", FOLLOWER_REPLICATION_THROTTLED_REPLICAS
        )
        + ",1:2",
    }
    operator = replace(after, broker_configs=configs, topics={"t": replace(after.topics["t"], configs=topic)})
    book, after2, sync, _ = run(book, operator, [MOVE])
    assert {c.key for c in sync.foreign} == {
        ("broker", "4", FOLLOWER_REPLICATION_THROTTLED_RATE),
        ("topic", "t", FOLLOWER_REPLICATION_THROTTLED_REPLICAS),
    }
    book, final, _, restored = run(book, after2, [])
    assert restored
    assert final.broker_config(4, FOLLOWER_REPLICATION_THROTTLED_RATE) == "777"
    assert final.topic_config("t", FOLLOWER_REPLICATION_THROTTLED_REPLICAS) == "1:2"


def test_a_deleted_topics_throttles_are_forgotten_not_reported() -> None:
    book, after, _, _ = run(ThrottleBook(), cluster(), [MOVE])
    gone = replace(after, topics={}, partitions={}, deleted_topics=frozenset({"t"}))
    sync = sync_throttles(book, gone, [], LIMITS, OWNED)
    assert not sync.foreign
    assert ("topic", "t", FOLLOWER_REPLICATION_THROTTLED_REPLICAS) in sync.forget
    outcome = written(sync, ())
    assert outcome.restored


def test_a_failed_write_keeps_the_book_honest() -> None:
    sync = sync_throttles(ThrottleBook(), cluster(), [MOVE], LIMITS, OWNED)
    outcome = written(sync, [("broker", "4")])
    assert outcome.book.expected[("broker", "4", FOLLOWER_REPLICATION_THROTTLED_RATE)] == (None,), (
        "not written, not expected"
    )
    # written: ours, and what was there until a read shows ours (Kafka answers before the broker shows it)
    assert outcome.book.expected[("broker", "1", LEADER_REPLICATION_THROTTLED_RATE)] == (None, "1000000")
    assert ("broker", "4", FOLLOWER_REPLICATION_THROTTLED_RATE, (None, "1000000")) in sync.intents, (
        "both, until Kafka answers"
    )
    assert ("broker", "4", FOLLOWER_REPLICATION_THROTTLED_RATE, (None,)) in outcome.notes


def test_a_restarted_daemon_tells_its_own_entries_from_an_operators_added_meanwhile() -> None:
    """Crash after recording the originals and the intended writes: an operator's entry added before the
    restart is theirs (it is none of the values our write could have left), ours are removed."""
    sync = sync_throttles(ThrottleBook(), cluster(), [MOVE], LIMITS, OWNED)
    written_before_crash = apply(cluster(), sync)
    topic = {**written_before_crash.topics["t"].configs}
    topic[LEADER_REPLICATION_THROTTLED_REPLICAS] = topic[LEADER_REPLICATION_THROTTLED_REPLICAS] + ",0:7"
    operator = replace(
        written_before_crash, topics={"t": replace(written_before_crash.topics["t"], configs=topic)}
    )
    restarted = ThrottleBook(sync.book.originals, {(k, n, key): v for k, n, key, v in sync.intents})
    _, after, again, _ = run(restarted, operator, [])
    assert [c.key for c in again.foreign] == [("topic", "t", LEADER_REPLICATION_THROTTLED_REPLICAS)]
    assert after.topic_config("t", LEADER_REPLICATION_THROTTLED_REPLICAS) == "0:7"
    assert after.topic_config("t", FOLLOWER_REPLICATION_THROTTLED_REPLICAS) is None


def test_after_a_restart_a_broker_that_cannot_be_read_is_never_taken_as_restored() -> None:
    """A restarted daemon has the originals (store) but not what it wrote: a broker down then may still
    hold our rate, so nothing is restored, and forgotten, until it can be read."""
    _, after, _, _ = run(ThrottleBook(), cluster(), [MOVE])
    recorded = sync_throttles(ThrottleBook(), cluster(), [MOVE], LIMITS, OWNED).book.originals
    restarted = ThrottleBook(originals=recorded)
    down = offline(after, 1)
    outcome = written(sync_throttles(restarted, down, [], LIMITS, OWNED), ())
    assert not outcome.restored and outcome.book.holds_originals


def test_after_a_restart_a_config_we_never_wrote_is_not_taken_back_to_its_original() -> None:
    """The originals were recorded, then the daemon died before writing; an operator lowers a rate we had
    planned to leave alone. It is theirs: adopted, never taken back."""
    before = cluster({1: {FOLLOWER_REPLICATION_THROTTLED_RATE: "5000"}})
    sync = sync_throttles(ThrottleBook(), before, [MOVE], LIMITS, OWNED)
    restarted = ThrottleBook(sync.book.originals, {(k, n, key): v for k, n, key, v in sync.intents})
    operator = cluster({1: {FOLLOWER_REPLICATION_THROTTLED_RATE: "777"}})
    _, final, again, _ = run(restarted, operator, [])
    assert [c.key for c in again.foreign] == [("broker", "1", FOLLOWER_REPLICATION_THROTTLED_RATE)]
    assert final.broker_config(1, FOLLOWER_REPLICATION_THROTTLED_RATE) == "777"


def test_a_rate_set_by_someone_else_where_there_was_none_is_reported_and_not_kept() -> None:
    """A rate on a broker that had none before our plan is higher than what it had: whoever wrote it
    (another reassignd adds its own; kafka-configs by hand), it is not adopted, and nothing is left."""
    book, after, _, _ = run(ThrottleBook(), cluster(), [MOVE])
    book, after, _, _ = run(book, after, [MOVE])
    configs = {**after.broker_configs, 4: {FOLLOWER_REPLICATION_THROTTLED_RATE: "2000000"}}
    book, during, sync, _ = run(book, replace(after, broker_configs=configs), [MOVE])
    [change] = sync.foreign
    assert change.key == ("broker", "4", FOLLOWER_REPLICATION_THROTTLED_RATE) and not change.adopted
    assert not sync.record and not sync.forget, "the original stays what it was"
    assert during.broker_config(4, FOLLOWER_REPLICATION_THROTTLED_RATE) == "1000000", "ours again"
    book, final, sync, restored = run(book, during, [])
    assert not sync.foreign and restored
    assert final.broker_configs == cluster().broker_configs


def test_an_adopted_config_keeps_its_record_of_our_entries() -> None:
    """Adoption records the config anew; what it holds now (ours among it) must be persisted with it, or a
    restart would take our entries for the operator's and leave them behind."""
    book, after, _, _ = run(ThrottleBook(), cluster(), [MOVE])
    topic = {
        **after.topics["t"].configs,
        LEADER_REPLICATION_THROTTLED_REPLICAS: after.topic_config("t", LEADER_REPLICATION_THROTTLED_REPLICAS)
        + ",0:7",
    }
    operator = replace(after, topics={"t": replace(after.topics["t"], configs=topic)})
    sync = sync_throttles(book, operator, [MOVE], LIMITS, OWNED)
    assert (
        "topic",
        "t",
        LEADER_REPLICATION_THROTTLED_REPLICAS,
        (topic[LEADER_REPLICATION_THROTTLED_REPLICAS],),
    ) in sync.intents


T1 = TopicPartition("t", 1)


def two_partitions() -> ClusterSnapshot:
    return ClusterSnapshot.build(
        [Broker(b) for b in (1, 2, 3, 4, 5)],
        [PartitionState(T0, (1, 2, 3), (1, 2, 3), 1), PartitionState(T1, (2, 3, 1), (2, 3, 1), 2)],
        [TopicInfo("t", configs={})],
        broker_configs={b: {} for b in (1, 2, 3, 4, 5)},
    )


def test_a_read_that_does_not_show_our_write_yet_is_not_someone_elses_change() -> None:
    """Kafka answers IncrementalAlterConfigs before the broker DescribeConfigs asks shows the new value
    (measured: the first read after the answer still showed the old one 16 times in 20 on KRaft 4.4 and 20 in
    20 on ZooKeeper-mode 3.9, for up to about a second). Such a read is our write under way: taken for an
    operator's change, our own rate was adopted as their original and left on the broker after the plan
    (tests/realkafka/test_kafka_tool.py, the stock tool's wipe in the middle of a plan)."""
    moving = [MOVE, Move(T1, source=(2, 3, 1), adding=(5,))]
    before = two_partitions()
    book, shown, _, _ = run(ThrottleBook(), before, moving)
    assert shown.broker_config(4, FOLLOWER_REPLICATION_THROTTLED_RATE) == "1000000"

    book, _, sync, _ = run(book, before, moving)  # the brokers do not show our writes yet
    assert not sync.foreign, "our own write under way"
    book, shown, sync, _ = run(book, shown, moving)  # now they do
    assert not sync.foreign and not sync.writes

    book, removed, sync, restored = run(book, shown, moving[1:])  # the copy to 4 ends: its rate goes
    assert ("4", FOLLOWER_REPLICATION_THROTTLED_RATE, "DELETE") in {
        (w.name, w.key, w.op) for w in sync.writes
    } and not restored
    book, _, sync, _ = run(book, shown, moving[1:])  # broker 4 still shows our rate a moment
    assert not sync.foreign, "our own rate, being removed, is not an operator's"
    book, removed, sync, _ = run(book, removed, moving[1:])
    assert not sync.foreign

    book, final, sync, restored = run(book, removed, [])
    assert restored and not book.holds_originals
    assert final.broker_configs == before.broker_configs
    assert (
        final.topic_config("t", FOLLOWER_REPLICATION_THROTTLED_REPLICAS) is None
        and final.topic_config("t", LEADER_REPLICATION_THROTTLED_REPLICAS) is None
    )


def test_a_list_kafka_left_empty_where_there_was_none_is_deleted_before_the_originals_go() -> None:
    """Kafka keeps a list config that a SUBTRACT emptied, with the value "" (IncrementalAlterConfigs); on a
    loaded real cluster a read lagging our own writes made the restore end there, and the plan left
    follower.replication.throttled.replicas="" on a topic that had none. Unset before, unset after."""
    book, during, _, _ = run(ThrottleBook(), cluster(), [MOVE])
    key = FOLLOWER_REPLICATION_THROTTLED_REPLICAS
    assert during.topic_config("t", key)
    topic = during.topics["t"]
    emptied = replace(during, topics={"t": replace(topic, configs={**topic.configs, key: ""})})
    book, after, _, restored = run(book, emptied, [])
    assert after.topic_config("t", key) is None
    assert restored and not book.holds_originals


def test_our_entries_in_another_order_are_not_someone_elses_change() -> None:
    """Kafka keeps a throttled-replicas list in its own order (seen on Kafka 4.4: our APPENDs read back as
    '0:1,11:1,11:2,11:4,9:2,...' where we expected '0:1,9:2,...,11:4'): the same entries are no change."""
    book, during, _, _ = run(
        ThrottleBook(), cluster(topic={LEADER_REPLICATION_THROTTLED_REPLICAS: "5:1"}), [MOVE]
    )
    key = LEADER_REPLICATION_THROTTLED_REPLICAS
    entries = during.topic_config("t", key).split(",")
    assert len(entries) > 1
    topic = during.topics["t"]
    shuffled = replace(
        during, topics={"t": replace(topic, configs={**topic.configs, key: ",".join(reversed(entries))})}
    )
    _, _, sync, _ = run(book, shuffled, [MOVE])
    assert not sync.foreign and not sync.writes


# -- rates another writer changed (issue 31): never adopted upwards, never while ours is in flight ------

RAISED = "52345678"


@pytest.mark.parametrize(
    ("original", "ours", "found", "adopted"),
    [
        # nothing of ours in flight (a read showed our last write)
        ("12345678", ("32345678",), "10000000", True),  # the operator lowered theirs
        ("12345678", ("32345678",), None, True),  # ... or removed it: no throttle is the lowest
        ("12345678", ("32345678",), "12345677", True),
        ("12345678", ("32345678",), "12345678", False),  # their own value again: nothing new
        ("12345678", ("32345678",), RAISED, False),  # another `add` daemon: ours plus its own
        ("12345678", ("32345678",), "20000000", False),  # below ours, above theirs: still a raise
        (None, ("20000000",), "40000000", False),  # no throttle before: any rate is higher
        (None, ("20000000",), "1", False),
        (None, ("20000000",), None, False),
        ("12345678", ("32345678",), "not a number", False),
        # our write in flight (answered, not shown yet): whatever the value, it cannot be told apart
        ("12345678", ("12345678", "32345678"), "10000000", False),
        ("12345678", ("12345678", "32345678"), None, False),
        ("12345678", ("12345678", "32345678"), RAISED, False),
    ],
)
def test_which_foreign_rate_becomes_the_original(
    original: str | None, ours: tuple[str | None, ...], found: str | None, adopted: bool
) -> None:
    assert rate_adopted(original, ours, found) is adopted


def rank(value: str | None) -> int:
    return -1 if value is None else int(value)


@settings(max_examples=200, deadline=None)
@given(
    before=st.sampled_from([None, "12345678"]),
    events=st.lists(
        st.tuples(
            st.sampled_from(["between", "in flight"]),
            st.one_of(st.none(), st.integers(1, 200).map(lambda m: str(m * 1_000_000 + 7))),
        ),
        max_size=6,
    ),
    policy=st.sampled_from(["add", "keep"]),
)
def test_no_rate_is_restored_above_what_the_broker_had_before_the_plan(
    before: str | None, events: list[tuple[str, str | None]], policy: str
) -> None:
    """Whatever other writers do to broker 1's leader rate during the plan, the end is the value before the
    plan, or a lower one set while nothing of ours was in flight: never higher, never a sum."""
    limits = replace(LIMITS, operator_rate_policy=policy)
    key = LEADER_REPLICATION_THROTTLED_RATE
    configs = {1: {key: before}} if before is not None else {}
    snapshot = cluster(configs)
    book = ThrottleBook()
    lowered = [before]
    for when, value in events:
        sync = sync_throttles(book, snapshot, [MOVE], limits, OWNED)
        outcome = written(sync, ())
        snapshot = apply_writes(snapshot, outcome.applied)
        foreign = ConfigWrite("broker", "1", key, "SET" if value is not None else "DELETE", value)
        ours_sent = any(w.name == "1" and w.key == key for w in outcome.applied)
        in_flight = ours_sent and when == "in flight"
        if not in_flight:  # a read shows ours first
            book, snapshot, _, _ = run(outcome.book, snapshot, [MOVE], limits)
        else:
            book = outcome.book
        if not in_flight and rank(value) < rank(lowered[-1]):
            lowered.append(value)
        snapshot = apply_writes(snapshot, [foreign])
        for write in sync_throttles(book, snapshot, [MOVE], limits, OWNED).writes:
            if write.name == "1" and write.key == key and write.value is not None:
                ceiling = rank(lowered[-1]) if policy == "add" and lowered[-1] is not None else 0
                assert int(write.value) <= ceiling + 1_000_000 or write.value == lowered[-1], (
                    "ours on the operator's rate at most"
                )
    for _ in range(3):
        book, snapshot, _, restored = run(book, snapshot, [], limits)
    assert restored
    end = snapshot.broker_config(1, key)
    assert rank(end) <= rank(before), "never above what was there before the plan"
    assert end in lowered, "what was there before, or a lower value set while nothing of ours was in flight"

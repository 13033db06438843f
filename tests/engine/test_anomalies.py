"""Self-healing's pure decisions: the anomaly table, detection, the operator's gates, the one-fix rule."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reassignd.engine.anomalies import (
    CLUSTER,
    Anomaly,
    AnomalyBook,
    AnomalyKind,
    AnomalyState,
    Finding,
    HealingSettings,
    IllegalAnomalyChange,
    adopted,
    dir_subject,
    fix_ended,
    gate_refusals,
    may_start_fix,
    observe,
    regated,
    restored,
)
from reassignd.engine.detectors import (
    SNAPSHOT_KINDS,
    balance_loads,
    byte_loads,
    detect,
    disk_capacity,
    disk_limits,
    elections,
    eligible_brokers,
    log_dir_offline,
    rack_spread,
    unbalanced,
    under_replicated,
    urp_advice,
)
from reassignd.model import Broker, ClusterSnapshot, PartitionState, TopicPartition
from reassignd.placement.balance import outside_band
from reassignd.placement.respread import respread_targets, uneven_partitions
from reassignd.placement.rules import spread_violations
from reassignd.placement.topology import Topology

S = AnomalyState
SETTINGS = HealingSettings(
    broker_failure_seconds=60.0, max_bytes=1000, max_partitions=10, max_duration_seconds=600
)


@pytest.mark.parametrize(
    ("start", "end", "allowed"),
    [
        (S.DETECTED, S.PROPOSED, True),
        (S.DETECTED, S.EXECUTING, True),  # execute mode, gates passed
        (S.PROPOSED, S.APPROVED, True),
        (S.APPROVED, S.EXECUTING, True),
        (S.EXECUTING, S.FIXED, True),
        (S.EXECUTING, S.IGNORED, True),  # its plan was cancelled
        (S.PROPOSED, S.EXPIRED, True),
        (S.EXECUTING, S.EXPIRED, False),  # a fix that started is followed to its end
        (S.PROPOSED, S.EXECUTING, False),  # never without approval
        (S.FIXED, S.DETECTED, False),
        (S.EXPIRED, S.PROPOSED, False),
    ],
)
def test_the_one_table_of_changes(start: AnomalyState, end: AnomalyState, allowed: bool) -> None:
    anomaly = Anomaly("a", AnomalyKind.BROKER_FAILURE, (1,), 0.0, 0.0, start)
    if allowed:
        assert anomaly.to(end, 5.0).state is end
    else:
        with pytest.raises(IllegalAnomalyChange):
            anomaly.to(end, 5.0)


def test_a_broker_is_an_anomaly_once_offline_for_the_threshold_and_only_once() -> None:
    book = observe(AnomalyBook(), [3], 100.0, SETTINGS)
    assert book.anomalies == () and book.offline_since == {3: 100.0}
    book = observe(book, [3], 159.0, SETTINGS)
    assert book.anomalies == ()
    book = observe(book, [3], 160.0, SETTINGS)
    assert [(a.brokers, a.state, a.first_seen) for a in book.anomalies] == [((3,), S.DETECTED, 100.0)]
    assert observe(book, [3], 500.0, SETTINGS).anomalies == book.anomalies


def test_a_broker_back_expires_an_open_anomaly_but_not_a_started_fix() -> None:
    book = observe(observe(AnomalyBook(), [3, 4], 0.0, SETTINGS), [3, 4], 60.0, SETTINGS)
    _, four = sorted(book.anomalies, key=lambda a: a.brokers)
    book = book.with_anomaly(four.to(S.EXECUTING, 61.0, plan_id="p"))
    book = observe(book, [], 70.0, SETTINGS)
    states = {a.brokers: a.state for a in book.anomalies}
    assert states == {(3,): S.EXPIRED, (4,): S.EXECUTING} and book.offline_since == {}
    assert observe(book, [3], 71.0, SETTINGS).offline_since == {3: 71.0}  # a new outage counts anew


@pytest.mark.parametrize(
    ("figures", "refused"),
    [
        ({"finished": True, "bytes_to_move": 1000, "partitions": 10, "predicted_duration_seconds": 600}, []),
        ({"finished": True, "bytes_to_move": 1001}, ["self.healing.max.bytes"]),
        ({"finished": True, "partitions": 11}, ["self.healing.max.partitions"]),
        ({"finished": True, "predicted_duration_seconds": 601}, ["self.healing.max.duration.seconds"]),
        ({"finished": False, "ended_because": "stuck"}, ["did not finish: stuck"]),
        ({"finished": True, "under_min_isr_seconds": 5.0}, ["under min ISR"]),
        ({"finished": True, "rack_spread_worse": 2}, ["fewer racks"]),
    ],
)
def test_the_gates(figures: dict[str, Any], refused: list[str]) -> None:
    said = gate_refusals(figures, SETTINGS)
    assert len(said) == len(refused) and all(r in s for r, s in zip(refused, said, strict=True)), said


def test_a_change_of_gates_counts_anew_only_the_fixes_they_refused_whose_condition_still_holds() -> None:
    book = observe(observe(AnomalyBook(), [3, 4], 0.0, SETTINGS), [3, 4], 60.0, SETTINGS)
    three, four = sorted(book.anomalies, key=lambda a: a.brokers)
    over = {"rehearsal": {"finished": True, "partitions": 11}}  # over SETTINGS' max_partitions
    within = {"rehearsal": {"finished": True, "partitions": 10}}  # ignored for another reason
    book = book.with_anomaly(three.to(S.IGNORED, 61.0, reason="over", proposal=over))
    book = book.with_anomaly(four.to(S.IGNORED, 61.0, reason="stale", proposal=within))
    assert regated(book, SETTINGS).offline_since == {4: 0.0}  # 3's outage counts anew, from the next check
    back = observe(observe(book, [4], 70.0, SETTINGS), [3, 4], 80.0, SETTINGS)  # 3 back, then down again
    assert regated(back, SETTINGS).offline_since == {3: 80.0, 4: 0.0}  # a new outage keeps its clock


@given(
    busy=st.booleans(),
    last=st.none() | st.floats(0, 1000),
    now=st.floats(0, 2000),
    cooldown=st.floats(0, 1000),
)
def test_a_fix_starts_only_when_no_plan_runs_and_the_cooldown_passed(
    busy: bool, last: float | None, now: float, cooldown: float
) -> None:
    book = AnomalyBook(last_fix_started=last)
    settings = HealingSettings(cooldown_seconds=cooldown)
    allowed = may_start_fix(book, now, settings, busy)
    assert allowed == (not busy and (last is None or now - last >= cooldown))


def test_a_new_empty_broker_is_an_anomaly_only_when_its_detector_is_on() -> None:
    on = HealingSettings(detectors=frozenset(AnomalyKind), new_broker_seconds=60.0)
    off = HealingSettings(new_broker_seconds=60.0)
    book = observe(AnomalyBook(), [], 0.0, on, empty=[7])
    assert observe(book, [], 60.0, off, empty=[7]).anomalies == ()
    found = observe(book, [], 60.0, on, empty=[7])
    assert [(a.kind, a.brokers, a.id) for a in found.anomalies] == [
        (AnomalyKind.NEW_BROKER, (7,), "new-broker-7-0")
    ]
    filled = observe(found, [], 61.0, on, empty=[])
    assert [(a.state, a.reason) for a in filled.anomalies] == [
        (S.EXPIRED, "the broker holds replicas now, or stopped")
    ]


@pytest.mark.parametrize(
    ("anomaly_id", "kind", "broker"),
    [
        ("broker-failure-5-1795783832", AnomalyKind.BROKER_FAILURE, 5),
        ("new-broker-7-0", AnomalyKind.NEW_BROKER, 7),
        ("hand-written", AnomalyKind.BROKER_FAILURE, -1),
    ],
)
def test_an_anomaly_is_read_back_from_the_id_its_fix_carries(
    anomaly_id: str, kind: AnomalyKind, broker: int
) -> None:
    back = adopted(anomaly_id, 9.0)
    assert (back.id, back.kind, back.brokers, back.state) == (anomaly_id, kind, (broker,), S.DETECTED)


# -- partition-level and balance kinds (issue 29's other detectors) ----------------------------------------

ALL = HealingSettings(detectors=frozenset(AnomalyKind), violation_seconds=60.0, under_replicated_seconds=60.0)


def urp(*partitions: str) -> Finding:
    return Finding(AnomalyKind.UNDER_REPLICATED, CLUSTER, (), dict.fromkeys(partitions, (1, 2)))


def test_a_partition_counts_from_when_it_was_first_seen_and_the_id_stays_across_cycles() -> None:
    book = observe(AnomalyBook(), [], 0.0, ALL, findings=[urp("t-0")])
    book = observe(book, [], 30.0, ALL, findings=[urp("t-0", "t-1")])
    (anomaly,) = observe(book, [], 60.0, ALL, findings=[urp("t-0", "t-1")]).anomalies
    assert (anomaly.id, anomaly.partitions, anomaly.brokers) == (
        "under-replicated-cluster-0",
        ("t-0",),
        (1, 2),
    )
    book = observe(book, [], 90.0, ALL, findings=[urp("t-0", "t-1")])
    (later,) = book.anomalies
    assert later.id == anomaly.id and later.partitions == ("t-0", "t-1")  # t-1 aged in too
    assert adopted(later.id, 1.0).key == later.key == ("under_replicated", "cluster")


def test_an_anomalys_partitions_are_listed_by_topic_then_partition_number() -> None:
    listed = ("a-b-2", "a-b-10", "t-3", "t-10", "t-22")  # not "t-10" before "t-3", as text would have it
    book = observe(AnomalyBook(), [], 0.0, ALL, findings=[urp(*reversed(listed))])
    (anomaly,) = observe(book, [], 60.0, ALL, findings=[urp(*reversed(listed))]).anomalies
    assert anomaly.partitions == listed


def test_a_partition_back_in_sync_for_a_moment_counts_anew() -> None:
    book = observe(AnomalyBook(), [], 0.0, ALL, findings=[urp("t-0")])
    book = observe(book, [], 50.0, ALL, findings=[])
    book = observe(book, [], 60.0, ALL, findings=[urp("t-0")])
    assert book.anomalies == () and book.since[("under_replicated", "cluster", "t-0")] == 60.0


def test_an_unjudged_kind_neither_expires_nor_restarts_its_clock() -> None:
    spread = Finding(AnomalyKind.RACK_SPREAD, CLUSTER, (1, 2), {"t-0": (1, 2)})
    book = observe(observe(AnomalyBook(), [], 0.0, ALL, findings=[spread]), [], 60.0, ALL, findings=[spread])
    (anomaly,) = book.anomalies
    during = observe(book, [], 100.0, ALL, unjudged=[AnomalyKind.RACK_SPREAD])
    assert during.anomalies == (anomaly,) and during.since == book.since
    after = observe(during, [], 110.0, ALL)
    assert [a.state for a in after.anomalies] == [S.EXPIRED]


def test_a_detector_that_is_off_makes_no_anomaly() -> None:
    off = HealingSettings(violation_seconds=0.0)
    balance = Finding(AnomalyKind.REPLICA_BALANCE, CLUSTER, (3,))
    assert observe(AnomalyBook(), [], 0.0, off, findings=[balance]).anomalies == ()
    (found,) = observe(
        AnomalyBook(), [], 0.0, replace(off, detectors=ALL.detectors), findings=[balance]
    ).anomalies
    assert (found.id, found.brokers, found.partitions) == ("replica-balance-cluster-0", (3,), ())


def test_a_partition_condition_its_fix_did_not_mend_is_seen_again_as_a_new_anomaly() -> None:
    book = observe(
        observe(AnomalyBook(), [], 0.0, ALL, findings=[urp("t-0")]), [], 60.0, ALL, findings=[urp("t-0")]
    )
    (anomaly,) = book.anomalies
    book = book.with_anomaly(anomaly.to(S.PROPOSED, 61.0).to(S.APPROVED, 61.0).to(S.EXECUTING, 62.0))
    book = fix_ended(book, book.anomalies[0], 70.0, fixed=True)
    book = observe(book, [], 80.0, ALL, findings=[urp("t-0")])
    assert [a.state for a in book.anomalies] == [S.FIXED]
    book = observe(book, [], 140.0, ALL, findings=[urp("t-0")])
    assert [(a.id, a.state) for a in book.anomalies] == [
        ("under-replicated-cluster-0", S.FIXED),
        ("under-replicated-cluster-80", S.DETECTED),
    ]


def test_a_broker_fix_that_ended_does_not_restart_its_clock() -> None:
    book = observe(observe(AnomalyBook(), [3], 0.0, SETTINGS), [3], 60.0, SETTINGS)
    (anomaly,) = book.anomalies
    book = fix_ended(book, anomaly.to(S.EXECUTING, 61.0), 70.0, fixed=True)
    assert book.offline_since == {3: 0.0}
    assert len(observe(book, [3], 1000.0, SETTINGS).anomalies) == 1


@pytest.mark.parametrize(
    ("anomaly_id", "kind", "brokers"),
    [
        ("rack-spread-cluster-12", AnomalyKind.RACK_SPREAD, ()),
        ("replica-balance-cluster-0", AnomalyKind.REPLICA_BALANCE, ()),
        ("leader-balance-cluster-5", AnomalyKind.LEADER_BALANCE, ()),
        ("under-replicated-cluster-7", AnomalyKind.UNDER_REPLICATED, ()),
        ("rack-spread-4-7", AnomalyKind.BROKER_FAILURE, (-1,)),  # a partition kind is about the cluster
    ],
)
def test_a_partition_level_anomaly_is_read_back_from_its_id(
    anomaly_id: str, kind: AnomalyKind, brokers: tuple[int, ...]
) -> None:
    back = adopted(anomaly_id, 0.0)
    assert (back.kind, back.brokers) == (kind, brokers)


@given(
    schedule=st.lists(
        st.tuples(st.integers(1, 40), st.sets(st.sampled_from(["t-0", "t-1", "u-0"]))), max_size=25
    )
)
def test_whatever_the_schedule_one_open_anomaly_per_kind_and_subject_and_each_partition_aged(
    schedule: list[tuple[int, set[str]]],
) -> None:
    book, now = AnomalyBook(), 0.0
    for step, partitions in schedule:
        now += step
        findings = [urp(*sorted(partitions))] if partitions else []
        book = observe(book, [], now, ALL, findings=findings)
        open_ = [a for a in book.anomalies if not a.state.terminal]
        assert len({a.key for a in open_}) == len(open_) <= 1
        for anomaly in open_:
            assert set(anomaly.partitions) <= partitions
            for p in anomaly.partitions:
                assert now - book.since[(*anomaly.key, p)] >= ALL.under_replicated_seconds
            assert anomaly.id == f"under-replicated-cluster-{int(anomaly.first_seen)}"


# -- the detectors over one snapshot, and the rack-spread fix (placement/respread.py) -----------------------

TWO_DCS = {1: "/a/r1", 2: "/a/r2", 3: "/b/r1", 4: "/b/r2", 5: "/a/r1", 6: "/b/r1"}


def snapshot(
    parts: dict[str, tuple[int, ...]],
    *,
    racks: dict[int, str] = TWO_DCS,
    offline: tuple[int, ...] = (),
    isr: dict[str, tuple[int, ...]] | None = None,
    leaders: dict[str, int] | None = None,
) -> ClusterSnapshot:
    def state(name: str, rs: tuple[int, ...]) -> PartitionState:
        topic, _, number = name.rpartition("-")
        in_sync = (isr or {}).get(name, rs)
        return PartitionState(
            TopicPartition(topic, int(number)), rs, in_sync, (leaders or {}).get(name, rs[0])
        )

    return ClusterSnapshot(
        brokers={b: Broker(b, r, b not in offline) for b, r in racks.items()},
        partitions={s.tp: s for s in (state(n, rs) for n, rs in parts.items())},
    )


@pytest.mark.parametrize(
    ("replicas", "uneven"),
    [
        ((1, 3, 2), False),  # both data centres, three racks
        ((1, 2, 5), True),  # one data centre while the other has room
        ((1, 5, 3), True),  # two in rack /a/r1 while /a/r2 has room
        ((1, 3), False),
        ((1, 6), False),  # RF 2 over two data centres: racks below do not matter
        ((1, 4, 7), False),  # broker 7 unknown (not eligible): left to the broker-level kinds
    ],
)
def test_rack_spread_finds_partitions_spanning_fewer_racks_than_the_placer_would_give(
    replicas: tuple[int, ...], uneven: bool
) -> None:
    found = rack_spread(snapshot({"t-0": replicas}), frozenset(TWO_DCS))
    assert (found is not None) == uneven, found
    if found is not None:
        assert (found.partitions, found.brokers) == ({"t-0": replicas}, tuple(sorted(replicas)))


def test_rack_spread_judges_the_racks_as_they_are_without_decommissioned_or_offline_brokers() -> None:
    """With the second data centre's brokers all banned or down, one data centre is the best there is."""
    shot = snapshot({"t-0": (1, 2, 5)}, offline=(3, 4))
    assert rack_spread(shot, eligible_brokers(shot, banned=[6])) is None
    assert rack_spread(shot, eligible_brokers(shot, banned=[])) is not None


@given(
    racks=st.dictionaries(
        st.integers(1, 12), st.sampled_from(["/a/r1", "/a/r2", "/b/r1", "/b/r2", "/c/r1"]), min_size=4
    ),
    data=st.data(),
)
def test_respread_evens_every_partition_it_can_with_valid_moves_onto_eligible_brokers_only(
    racks: dict[int, str], data: st.DataObject
) -> None:
    brokers = sorted(racks)
    banned = set(data.draw(st.sets(st.sampled_from(brokers), max_size=len(brokers) - 3)))
    eligible = frozenset(brokers) - banned
    targets = {
        TopicPartition("t", i): tuple(
            data.draw(st.permutations(sorted(eligible)))[: data.draw(st.integers(1, 3))]
        )
        for i in range(data.draw(st.integers(1, 6)))
    }
    out = respread_targets(targets, racks, eligible, {})
    topology = Topology.from_racks({b: racks[b] for b in eligible})
    for tp, before in targets.items():
        after = out.targets.get(tp, before)
        assert len(after) == len(set(after)) == len(before) and set(after) <= eligible
        assert tp in out.unplaced or not spread_violations(after, topology), (before, after)
        kept = [a for a, b in zip(after, before, strict=True) if a == b]
        assert set(before) - set(kept) == set(before) - set(after)  # the rest keep their places
    assert set(uneven_partitions(targets, racks, eligible)) >= set(out.targets)


@pytest.mark.parametrize(
    ("kind", "replicas", "outside"),
    [
        (
            AnomalyKind.REPLICA_BALANCE,
            {"t-0": (1, 2), "t-1": (1, 3), "t-2": (1, 4), "t-3": (1, 2)},
            [1, 3, 4],
        ),
        (AnomalyKind.REPLICA_BALANCE, {"t-0": (1, 2), "t-1": (3, 4)}, []),
        (AnomalyKind.LEADER_BALANCE, {"t-0": (1, 2), "t-1": (1, 3), "t-2": (1, 4), "t-3": (2, 1)}, [1, 3, 4]),
        (AnomalyKind.LEADER_BALANCE, {"t-0": (1, 2), "t-1": (2, 3), "t-2": (3, 4), "t-3": (4, 1)}, []),
    ],
)
def test_balance_is_judged_by_the_planners_band(
    kind: AnomalyKind, replicas: dict[str, tuple[int, ...]], outside: list[int]
) -> None:
    racks = dict.fromkeys((1, 2, 3, 4), "/a")
    shot = snapshot(replicas, racks=racks)
    found = unbalanced(shot, frozenset(racks), kind, 0.10)
    assert (list(found.brokers) if found else []) == outside
    assert outside_band(balance_loads(shot, frozenset(racks), kind), 0.10)[1] == outside  # the one formula


def test_under_replicated_needs_every_replica_online_and_elects_only_an_in_sync_preferred() -> None:
    shot = snapshot(
        {"t-0": (1, 2, 3), "t-1": (1, 2, 3), "t-2": (4, 1, 2), "t-3": (1, 2, 3)},
        offline=(4,),
        isr={"t-0": (2, 3), "t-1": (1, 2), "t-2": (1, 2), "t-3": (1, 2)},
        leaders={"t-0": 2, "t-1": 2, "t-3": 1},
    )
    found = under_replicated(shot)
    assert found is not None and sorted(found.partitions) == ["t-0", "t-1", "t-3"]  # t-2: broker 4 down
    elect, checks = elections(shot, ["t-0", "t-1", "t-3"])
    assert elect == {TopicPartition("t", 1): (1, 2, 3)}
    assert checks == [
        "t-0: replica(s) on broker(s) [1] out of sync (leader 2)",
        "t-3: replica(s) on broker(s) [3] out of sync (leader 1)",
    ]
    assert "throttle" in urp_advice(checks) and "t-3" in urp_advice(checks)


def test_while_a_partition_is_reassigned_the_snapshot_kinds_are_not_judged() -> None:
    shot = snapshot({"t-0": (1, 2, 5)})
    moving = replace(shot, partitions={tp: replace(p, adding=(3,)) for tp, p in shot.partitions.items()})
    assert detect(shot, (), ALL.detectors, 0.1)[1] == frozenset()
    assert detect(moving, (), ALL.detectors, 0.1) == ([], SNAPSHOT_KINDS)


# -- anomalies kept in the state store (a restart or a failover reads them back) ----------------------------


def _with_subject(anomaly: Anomaly) -> Anomaly:
    subject = CLUSTER if anomaly.kind.about_partitions else str(anomaly.brokers[0])
    if anomaly.kind is AnomalyKind.LOG_DIR_OFFLINE:  # a broker's dir: read back from its id
        subject = anomaly.id.rpartition("-")[0].rpartition("-")[2]
    return replace(anomaly, subject=subject)


anomalies_st = st.builds(
    Anomaly,
    id=st.from_regex(r"[a-z-]{1,20}-[0-9]{1,4}-[0-9]{1,10}", fullmatch=True),
    kind=st.sampled_from(AnomalyKind),
    brokers=st.lists(st.integers(0, 99), min_size=1, max_size=4).map(tuple),
    first_seen=st.floats(0, 2e9),
    last_seen=st.floats(0, 2e9),
    state=st.sampled_from(AnomalyState),
    reason=st.text(max_size=20),
    proposal=st.none() | st.fixed_dictionaries({"plan": st.just({"version": 1, "partitions": []})}),
    plan_id=st.none() | st.text(min_size=1, max_size=10),
    partitions=st.lists(st.sampled_from(["t-0", "t-1", "u-0"]), unique=True).map(tuple),
).map(_with_subject)


@given(anomaly=anomalies_st)
def test_an_anomaly_reads_back_from_its_json_as_it_was(anomaly: Anomaly) -> None:
    assert Anomaly.from_json(anomaly.to_json()) == anomaly


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"kind": "disk_full"}, "kind"),
        ({"state": "done"}, "state"),
        ({"first_seen": "yesterday"}, "first_seen"),
        ({"brokers": [1, "two"]}, "brokers"),
        ({"id": ""}, "id"),
        ({"brokers": []}, "brokers"),
    ],
)
def test_a_bad_stored_anomaly_is_refused_naming_the_field_and_value(
    change: dict[str, Any], named: str
) -> None:
    good = Anomaly("broker-failure-1-10", AnomalyKind.BROKER_FAILURE, (1,), 10.0, 70.0, subject="1").to_json()
    with pytest.raises(ValueError, match=re.escape(f"{named}") + ".*" + re.escape(repr(change[named]))):
        Anomaly.from_json({**good, **change})


def test_a_restored_book_keeps_each_open_anomaly_and_its_clock_so_it_neither_expires_nor_doubles() -> None:
    """A daemon that takes over mid-outage: the broker still down, the anomaly stays what it was (its
    id, first seen, state); one whose condition is gone expires as it would have."""
    book = observe(AnomalyBook(), [1, 2], 0.0, SETTINGS)
    book = observe(book, [1, 2], 61.0, SETTINGS)
    first = {a.brokers[0]: a for a in book.anomalies}
    proposed = first[1].to(S.PROPOSED, 61.0)
    stored = [Anomaly.from_json(a.to_json()) for a in (proposed, first[2])]
    taken_over = restored(stored, last_fix_started=30.0)
    assert taken_over.last_fix_started == 30.0
    after = observe(taken_over, [1], 70.0, SETTINGS)
    by_broker = {a.brokers[0]: a for a in after.anomalies}
    assert len(after.anomalies) == 2
    assert (by_broker[1].id, by_broker[1].state, by_broker[1].first_seen) == (proposed.id, S.PROPOSED, 0.0)
    assert by_broker[2].state is S.EXPIRED  # broker 2 came back during the failover


@given(
    schedule=st.lists(
        st.tuples(st.integers(1, 40), st.sets(st.sampled_from([1, 2, 3])), st.booleans()), max_size=25
    )
)
def test_whatever_the_schedule_a_failover_keeps_every_anomaly_as_one_daemon_would_have_it(
    schedule: list[tuple[int, set[int], bool]],
) -> None:
    """Observing with the book read back from the store at any check (a failover) keeps every anomaly
    made before it exactly as a daemon that never stopped has it (id, state, first and last seen).
    Only a condition not yet an anomaly counts anew from the new daemon's first check."""
    kept, failed_over, now = AnomalyBook(), AnomalyBook(), 0.0
    made_before: set[str] = set()
    for step, offline, failover in schedule:
        now += step
        if failover:
            stored = [Anomaly.from_json(a.to_json()) for a in failed_over.anomalies]
            failed_over = restored(stored, failed_over.last_fix_started)
            made_before = {a.id for a in kept.anomalies if failed_over.get(a.id) == a}
        kept = observe(kept, offline, now, SETTINGS)
        failed_over = observe(failed_over, offline, now, SETTINGS)
        for anomaly_id in made_before:
            assert failed_over.get(anomaly_id) == kept.get(anomaly_id)
        open_ = [a for a in failed_over.anomalies if not a.state.terminal]
        assert len({a.key for a in open_}) == len(open_)


# -- byte balance: bytes per broker outside the planner's byte band (KIP-166) --------------------------


def sized(
    parts: dict[str, tuple[tuple[int, ...], int]], brokers: tuple[int, ...] = (1, 2, 3)
) -> ClusterSnapshot:
    """Partitions with their replicas and size (every replica holds its partition's size, as the
    planner weighs them)."""
    shot = snapshot({name: rs for name, (rs, _) in parts.items()}, racks={b: f"/r{b}" for b in brokers})
    sizes = {
        TopicPartition(n.rpartition("-")[0], int(n.rpartition("-")[2])): s for n, (_, s) in parts.items()
    }
    return replace(shot, partitions={tp: p.with_sizes(sizes[tp], {}) for tp, p in shot.partitions.items()})


EVEN = {"t-0": ((1, 2), 100), "t-1": ((2, 3), 100), "t-2": ((3, 1), 100)}


@pytest.mark.parametrize(
    ("parts", "banned", "outside"),
    [
        (EVEN, (), []),
        ({"t-0": ((1, 2), 105), "t-1": ((2, 3), 100), "t-2": ((3, 1), 95)}, (), []),  # 5% off: in the band
        ({"t-0": ((1, 2), 1000), "t-1": ((2, 3), 10), "t-2": ((3, 1), 10)}, (), [1, 2, 3]),  # counts even
        ({**EVEN, "t-3": ((4,), 900)}, (4,), []),  # broker 4 decommissioned: neither it nor its bytes judged
        ({**EVEN, "t-3": ((4,), 900)}, (), [1, 2, 3, 4]),  # 200 each against 900: all outside
    ],
)
def test_byte_balance_finds_the_brokers_outside_the_byte_band(
    parts: dict[str, tuple[tuple[int, ...], int]], banned: tuple[int, ...], outside: list[int]
) -> None:
    shot = sized(parts, brokers=tuple(sorted({b for rs, _ in parts.values() for b in rs})))
    found = unbalanced(shot, eligible_brokers(shot, banned), AnomalyKind.BYTE_BALANCE, 0.10)
    assert (list(found.brokers) if found is not None else []) == outside
    if found is not None:
        assert (found.kind, found.subject, dict(found.partitions)) == (AnomalyKind.BYTE_BALANCE, CLUSTER, {})


@given(
    assignment=st.lists(
        st.tuples(st.lists(st.integers(1, 5), min_size=1, max_size=3, unique=True), st.integers(0, 10**9)),
        min_size=1,
        max_size=12,
    ),
    threshold=st.sampled_from([0.0, 0.05, 0.1, 0.3]),
)
def test_byte_balance_is_the_planners_band_over_each_brokers_bytes(
    assignment: list[tuple[list[int], int]], threshold: float
) -> None:
    parts = {f"t-{i}": (tuple(rs), size) for i, (rs, size) in enumerate(assignment)}
    shot = sized(parts, brokers=(1, 2, 3, 4, 5))
    loads = {b: sum(size for rs, size in parts.values() if b in rs) for b in range(1, 6)}
    found = detect(shot, (), {AnomalyKind.BYTE_BALANCE}, 0.5, byte_threshold=threshold)[0]
    assert [list(f.brokers) for f in found] == (
        [outside_band(loads, threshold)[1]] if outside_band(loads, threshold)[1] else []
    )
    assert byte_loads(shot, frozenset(range(1, 6))) == loads


# -- disk capacity: a broker's log dirs fuller than the threshold (KIP-827 total and usable bytes) -----------

GIB = 1024**3


def with_volumes(shot: ClusterSnapshot, volumes: dict[tuple[int, str], tuple[int, int]]) -> ClusterSnapshot:
    return replace(shot, dir_volumes=volumes)


@pytest.mark.parametrize(
    ("volumes", "over"),
    [
        ({(1, "/d"): (100 * GIB, 20 * GIB)}, [1]),  # 80% used
        ({(1, "/d"): (100 * GIB, 30 * GIB)}, []),  # 70% used: at the threshold is not over
        ({(1, "/a"): (100 * GIB, 0), (1, "/b"): (100 * GIB, 100 * GIB)}, []),  # one full dir of two: 50%
        ({(1, "/d"): (100 * GIB, 20 * GIB), (2, "/d"): (100 * GIB, 10 * GIB)}, [1, 2]),
        ({(4, "/d"): (100 * GIB, 0)}, []),  # broker 4 offline: its drain is broker_failure's
        ({}, []),  # no broker said (Kafka before 3.3 answers -1): not judged
    ],
)
def test_disk_capacity_finds_the_brokers_whose_log_dirs_are_fuller_than_the_threshold(
    volumes: dict[tuple[int, str], tuple[int, int]], over: list[int]
) -> None:
    shot = with_volumes(snapshot({"t-0": (1, 2, 3)}, offline=(4,)), volumes)
    found = disk_capacity(shot, 0.70)
    assert (list(found.brokers) if found is not None else []) == over
    if found is not None:
        assert (found.kind, found.subject) == (AnomalyKind.DISK_CAPACITY, CLUSTER)
    assert [f.brokers for f in detect(shot, (), {AnomalyKind.DISK_CAPACITY}, 0.1, disk_threshold=0.7)[0]] == (
        [tuple(over)] if over else []
    )


def test_the_planners_disk_limits_leave_a_brokers_other_data_where_it_is() -> None:
    """Broker 1: 100 GiB, 20 GiB usable, of the 80 used 30 are the replicas the planner counts (its
    partitions' sizes) and 50 other data: at 0.70 the replicas may hold 70 - 50 = 20 GiB."""
    shot = snapshot({"t-0": (1, 2)}, racks={1: "/r1", 2: "/r2"})
    shot = replace(shot, partitions={tp: p.with_sizes(30 * GIB, {}) for tp, p in shot.partitions.items()})
    shot = with_volumes(shot, {(1, "/d"): (100 * GIB, 20 * GIB), (2, "/d"): (100 * GIB, 60 * GIB)})
    limits = disk_limits(shot, 0.70)
    assert limits == {1: pytest.approx(20 * GIB), 2: pytest.approx(60 * GIB)}  # 2: 70 - (40 - 30) other


@given(
    used=st.dictionaries(st.integers(1, 5), st.floats(0.0, 1.0), min_size=1),
    threshold=st.floats(0.05, 0.95),
)
def test_disk_capacity_is_exactly_the_online_brokers_used_beyond_the_threshold(
    used: dict[int, float], threshold: float
) -> None:
    shot = snapshot({"t-0": (1, 2)}, racks={b: f"/r{b}" for b in range(1, 6)})
    volumes = {(b, "/d"): (1000 * GIB, round((1 - u) * 1000 * GIB)) for b, u in used.items()}
    found = disk_capacity(with_volumes(shot, volumes), threshold)
    expected = sorted(b for b, (t, u) in ((b, volumes[(b, "/d")]) for b in used) if (t - u) / t > threshold)
    assert (list(found.brokers) if found is not None else []) == expected


# -- log_dir_offline: a failed log dir of a running broker ---------------------------------------------------


def failed_dirs(
    shot: ClusterSnapshot,
    offline_dirs: set[tuple[int, str]],
    listed: dict[tuple[str, int], str] | None = None,
    adding: dict[str, tuple[int, ...]] | None = None,
) -> ClusterSnapshot:
    """`shot` with the dirs DescribeLogDirs answered KAFKA_STORAGE_ERROR and the replicas the live dirs
    list (`listed`: (partition, broker) -> dir)."""
    dirs = {
        (TopicPartition(n.rpartition("-")[0], int(n.rpartition("-")[2])), b): d
        for (n, b), d in (listed or {}).items()
    }
    parts = {tp: replace(p, adding=(adding or {}).get(str(tp), ())) for tp, p in shot.partitions.items()}
    return replace(shot, partitions=parts, offline_dirs=frozenset(offline_dirs), replica_dirs=dirs)


DIRS_PARTS = {"t-0": (1, 2, 3), "t-1": (2, 1, 3), "t-2": (1, 3, 2), "u-0": (2, 3, 4)}


@pytest.mark.parametrize(
    ("offline_dirs", "isr", "seen", "expected"),
    [
        (
            {(1, "/b")},
            {"t-0": (2, 3), "t-1": (2, 3)},
            {"listed": {("t-2", 1): "/a"}},
            {"1_b": ["t-0", "t-1"]},
        ),
        # in sync, or listed in a live dir: not in the failed dir
        ({(1, "/b")}, {"t-1": (2, 3)}, {"listed": {("t-0", 1): "/a"}}, {"1_b": ["t-1"]}),
        # being added: perhaps not created yet
        ({(1, "/b")}, {"t-0": (2, 3), "t-1": (2, 3)}, {"adding": {"t-1": (1,)}}, {"1_b": ["t-0"]}),
        # two failed dirs of one broker: the first lists them, the other none
        (
            {(1, "/b"), (1, "/a")},
            {"t-0": (2, 3), "t-1": (2, 3), "t-2": (3, 2)},
            {},
            {"1_a": ["t-0", "t-1", "t-2"], "1_b": []},
        ),
        ({(1, "/b")}, {"t-0": (2, 3)}, {"down": (1,)}, {}),  # a broker down is broker_failure's
        (set(), {"t-0": (2, 3)}, {}, {}),  # out of sync, no dir failed: under_replicated's
        ({(4, "/var/lib/kafka/data-2")}, {"u-0": (2, 3)}, {}, {"4_var_lib_kafka_data_2": ["u-0"]}),
    ],
)
def test_log_dir_offline_lists_each_failed_dir_and_the_replicas_in_it(
    offline_dirs: set[tuple[int, str]],
    isr: dict[str, tuple[int, ...]],
    seen: dict[str, Any],
    expected: dict[str, list[str]],
) -> None:
    """`seen`: the replicas the live dirs list, the replicas being added, the brokers down."""
    racks = {b: f"/r{b}" for b in (1, 2, 3, 4)}
    shot = snapshot(DIRS_PARTS, racks=racks, isr=isr, offline=seen.get("down", ()))
    found = log_dir_offline(failed_dirs(shot, offline_dirs, seen.get("listed"), seen.get("adding")))
    assert {f.subject: sorted(f.partitions) for f in found} == expected
    assert all(f.kind is AnomalyKind.LOG_DIR_OFFLINE and len(f.brokers) == 1 for f in found)
    assert all(f.subject.startswith(f"{f.brokers[0]}_") for f in found)


@pytest.mark.parametrize(
    ("path", "subject"),
    [("/b", "3_b"), ("/var/lib/kafka/data-2", "3_var_lib_kafka_data_2"), ("/", "3__"), ("/d\u00e9", "3_d_")],
)
def test_a_dirs_subject_has_no_dash_or_slash(path: str, subject: str) -> None:
    assert dir_subject(3, path) == subject


DIR_SETTINGS = HealingSettings(
    detectors=frozenset({AnomalyKind.LOG_DIR_OFFLINE}), log_dir_failure_seconds=60.0
)


def dir_finding(*partitions: str, subject: str = "1_b") -> Finding:
    return Finding(AnomalyKind.LOG_DIR_OFFLINE, subject, (1,), dict.fromkeys(partitions, (1, 2, 3)))


def test_a_failed_dir_is_an_anomaly_about_its_broker_after_its_threshold_and_expires_when_back() -> None:
    book = observe(AnomalyBook(), [], 0.0, DIR_SETTINGS, findings=[dir_finding("t-0", "t-1")])
    book = observe(book, [], 59.0, DIR_SETTINGS, findings=[dir_finding("t-0", "t-1")])
    assert book.anomalies == ()
    book = observe(book, [], 60.0, DIR_SETTINGS, findings=[dir_finding("t-0", "t-1")])
    (anomaly,) = book.anomalies
    assert (anomaly.id, anomaly.brokers, anomaly.partitions) == (
        "log-dir-offline-1_b-0",
        (1,),
        ("t-0", "t-1"),
    )
    assert book.open_for(1) is anomaly  # one broker-level anomaly at a time: no broker_failure beside it
    back = observe(book, [], 61.0, DIR_SETTINGS)
    assert [(a.state, a.reason) for a in back.anomalies] == [
        (S.EXPIRED, "the log dir is back online, or its broker is not running")
    ]


def test_a_failed_dirs_fix_that_ended_is_not_made_again_while_the_dir_stays_failed() -> None:
    """Its replicas moved off, the dir is still offline (Kafka brings it back with a restart only): the
    anomaly stays fixed, and no new one is made of the same failure."""
    book = observe(AnomalyBook(), [], 0.0, DIR_SETTINGS, findings=[dir_finding("t-0")])
    book = observe(book, [], 60.0, DIR_SETTINGS, findings=[dir_finding("t-0")])
    (anomaly,) = book.anomalies
    book = fix_ended(book, anomaly.to(S.EXECUTING, 61.0, plan_id="p"), 90.0, fixed=True)
    book = observe(book, [], 200.0, DIR_SETTINGS, findings=[dir_finding()])
    assert [(a.id, a.state) for a in book.anomalies] == [(anomaly.id, S.FIXED)]


@pytest.mark.parametrize(
    ("anomaly_id", "broker", "subject"),
    [
        ("log-dir-offline-3_var_lib_kafka_data_2-1795783832", 3, "3_var_lib_kafka_data_2"),
        ("log-dir-offline-12_b-0", 12, "12_b"),
    ],
)
def test_a_dirs_anomaly_is_read_back_from_its_id_and_its_json(
    anomaly_id: str, broker: int, subject: str
) -> None:
    back = adopted(anomaly_id, 9.0)
    assert (back.kind, back.brokers, back.subject) == (AnomalyKind.LOG_DIR_OFFLINE, (broker,), subject)
    stored = Anomaly(
        anomaly_id, AnomalyKind.LOG_DIR_OFFLINE, (broker,), 1.0, 2.0, partitions=("t-0",), subject=subject
    )
    assert Anomaly.from_json(stored.to_json()) == stored


def test_a_dirs_anomaly_keeps_the_dirs_path_through_the_store() -> None:
    stored = Anomaly(
        "log-dir-offline-3_data_kafka_2-1",
        AnomalyKind.LOG_DIR_OFFLINE,
        (3,),
        1.0,
        2.0,
        partitions=("t-0",),
        subject="3_data_kafka_2",
        log_dir="/data/kafka-2",
    )
    assert stored.to_json()["log_dir"] == "/data/kafka-2"
    assert Anomaly.from_json(stored.to_json()) == stored
    older = {k: v for k, v in stored.to_json().items() if k != "log_dir"}  # stored before it was kept
    assert Anomaly.from_json(older) == replace(stored, log_dir="")


def test_the_first_of_two_failed_dirs_says_its_replicas_may_be_in_either() -> None:
    """Kafka's answers do not say which failed dir held a replica: the finding listing them names both
    dirs (comma-separated, as `log.dirs` lists them), not the first alone as if it held them all."""
    racks = {b: f"/r{b}" for b in (1, 2, 3, 4)}
    shot = snapshot(DIRS_PARTS, racks=racks, isr={"t-0": (2, 3), "t-1": (2, 3), "t-2": (3, 2)})
    found = log_dir_offline(failed_dirs(shot, {(1, "/b"), (1, "/a")}))
    assert [(f.subject, f.log_dir) for f in found] == [("1_a", "/a,/b"), ("1_b", "/b")]
    (one,) = log_dir_offline(failed_dirs(shot, {(1, "/b")}))
    assert one.log_dir == "/b"

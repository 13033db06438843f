"""decide(): limits, batch collection, modes, safety, external moves, elections, restarts."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from reassignd.engine.decide import acknowledge, changed_partitions, decide
from reassignd.engine.dryrun import apply_starts, complete, elect
from reassignd.engine.limits import Limits
from reassignd.engine.run.rows import PartitionRow
from reassignd.engine.state import ExecutionState, Status, WaitReason
from reassignd.model import Broker, ReassignmentPlan

from .helpers import check_invariants, cluster, drive, tp


def first_decision(snapshot, plan, limits, changed=None):  # type: ignore[no-untyped-def]
    state = ExecutionState.initial(plan, snapshot, tuple(limits.ordering))
    decision = decide(snapshot, plan, state, limits, changed)
    check_invariants(decision, snapshot, limits)
    return decision


def test_kip_example_through_decide() -> None:
    snapshot = cluster(10, {tp(0): (0, 1, 2, 3, 4)})
    plan = ReassignmentPlan({tp(0): (5, 6, 7, 8, 9)})
    final, state, decisions = drive(snapshot, plan, Limits(parallel_replica_count=2))
    started = [(s.target, s.moves_leadership, s.step_index) for d in decisions for s in d.start]
    assert started == [
        ((5, 0, 1, 2, 3, 4), True, 0),
        ((5, 6, 2, 3, 4), False, 1),
        ((5, 6, 7, 8, 4), False, 2),
        ((5, 6, 7, 8, 9), False, 3),
    ]
    elections = [e for d in decisions for e in d.elect]
    assert [(e.leader, e.reason) for e in elections] == [(5, "step")]
    assert state.finished and final.partitions[tp(0)].replicas == (5, 6, 7, 8, 9)
    assert final.partitions[tp(0)].leader == 5
    assert state[tp(0)].step == 4


def test_partition_limit_and_continuous_refill() -> None:
    parts = {tp(i): (0, 1) for i in range(6)}
    snapshot = cluster(8, parts)
    plan = ReassignmentPlan({key: (0, 2 + i) for i, key in enumerate(parts)})
    limits = Limits(parallel_partition_count=2)
    decision = first_decision(snapshot, plan, limits)
    assert len(decision.start) == 2
    assert {w.reason for w in decision.waiting} <= {WaitReason.LIMITS}
    # one of the two completes: continuous mode refills that slot only
    done = decision.start[0].tp
    snapshot2 = complete(apply_starts(snapshot, decision.start), {done})
    second = decide(snapshot2, plan, decision.state, limits, {done})
    check_invariants(second, snapshot2, limits)
    assert second.completed == (done,)
    assert len(second.start) == 1


def test_batch_mode_waits_for_the_whole_batch() -> None:
    parts = {tp(i): (0, 1) for i in range(4)}
    snapshot = cluster(8, parts)
    plan = ReassignmentPlan({key: (0, 2 + i) for i, key in enumerate(parts)})
    limits = Limits(parallel_partition_count=2, scheduling_mode="batch")
    decision = first_decision(snapshot, plan, limits)
    assert len(decision.start) == 2
    running = apply_starts(snapshot, decision.start)
    one = decision.start[0].tp
    partial = complete(running, {one})
    second = decide(partial, plan, decision.state, limits, {one})
    assert second.completed == (one,) and second.start == ()
    both = complete(partial)
    third = decide(both, plan, second.state, limits, {decision.start[1].tp})
    assert len(third.start) == 2


def test_leader_moves_fill_first_up_to_their_limit() -> None:
    # partitions 0-3 move leadership (new preferred leader), 4-7 keep their leader
    parts = {tp(i): (0, 1) for i in range(8)}
    snapshot = cluster(12, parts)
    targets = {tp(i): (2 + i, 1) for i in range(4)} | {tp(i): (0, 2 + i) for i in range(4, 8)}
    plan = ReassignmentPlan(targets)
    limits = Limits(
        parallel_partition_count=4,
        parallel_leader_movements=2,
        max_outgoing_per_broker=100,
        max_incoming_per_broker=100,
    )
    decision = first_decision(snapshot, plan, limits)
    moves = [s.moves_leadership for s in decision.start]
    assert moves.count(True) == 2 and moves.count(False) == 2
    assert moves[:2] == [True, True]  # leader movements are collected first (KIP-435)


def test_per_broker_incoming_and_outgoing_limits() -> None:
    # everything moves onto broker 9: only 2 may come in at once
    parts = {tp(i): (i % 4, 4 + i % 4) for i in range(10)}
    snapshot = cluster(10, parts)
    plan = ReassignmentPlan({key: (*replicas, 9) for key, replicas in parts.items()})
    limits = Limits(max_incoming_per_broker=2)
    decision = first_decision(snapshot, plan, limits)
    assert len(decision.start) == 2
    assert any("incoming" in w.detail and "broker 9" in w.detail for w in decision.waiting)
    # outgoing: all partitions led by broker 0
    parts = {tp(i): (0, 1) for i in range(10)}
    snapshot = cluster(14, parts)
    plan = ReassignmentPlan({key: (0, 1, 2 + i) for i, key in enumerate(parts)})
    decision = first_decision(snapshot, plan, Limits(max_outgoing_per_broker=3, balance_sources=False))
    assert len(decision.start) == 3
    assert any("outgoing" in w.detail and "broker 0" in w.detail for w in decision.waiting)
    # Balanced sources: broker 0 would serve 10 copies, broker 1 (in sync) none. Half the partitions get a
    # leadership step first (reorder, elect 1: no copy, no slot), then each leader serves up to its limit.
    limits = Limits(max_outgoing_per_broker=3)
    decision = first_decision(snapshot, plan, limits)
    copies = [s for s in decision.start if s.adding]
    handed = [s for s in decision.start if not s.adding]
    assert [s.leader for s in copies] == [0, 0, 0]
    assert len(handed) == 5 and all(s.target[0] == 1 and s.moves_leadership for s in handed)
    assert sorted(e.leader for e in decision.elect) == [1] * 5
    after = elect(apply_starts(snapshot, decision.start), decision.elect)
    assert sum(p.leader == 1 for p in after.partitions.values()) == 5
    changed = {s.tp for s in decision.start}
    following = decide(complete(after, {s.tp for s in handed}), plan, decision.state, limits, changed)
    assert sorted(s.leader for s in following.start if s.adding) == [1, 1, 1]


def test_global_replica_movement_limit() -> None:
    parts = {tp(i): (0, 1, 2) for i in range(6)}
    snapshot = cluster(20, parts)
    plan = ReassignmentPlan({key: (0, 3 + 2 * i, 4 + 2 * i) for i, key in enumerate(parts)})
    limits = Limits(parallel_replica_count=2, max_concurrent_replica_movements=5, max_outgoing_per_broker=50)
    decision = first_decision(snapshot, plan, limits)
    assert sum(len(s.adding) for s in decision.start) <= 5
    assert decision.state.load.replica_moves == sum(len(s.adding) for s in decision.start)


def test_round_robin_spreads_destinations() -> None:
    # 6 partitions move to broker 8, 6 to broker 9: with 4 slots, both brokers get two
    parts = {tp(i): (i % 4, 4 + i % 4) for i in range(12)}
    snapshot = cluster(10, parts)
    plan = ReassignmentPlan({key: (*parts[key], 8 if i < 6 else 9) for i, key in enumerate(sorted(parts))})
    limits = Limits(parallel_partition_count=4, ordering=("round_robin", "plan_order"))
    decision = first_decision(snapshot, plan, limits)
    destinations = sorted(s.adding[0] for s in decision.start)
    assert destinations == [8, 8, 9, 9]


def test_offline_target_waits_and_others_go_on() -> None:
    parts = {tp(0): (0, 1), tp(1): (0, 1)}
    snapshot = cluster(4, parts, offline=[3])
    plan = ReassignmentPlan({tp(0): (0, 3), tp(1): (0, 2)})
    limits = Limits()
    decision = first_decision(snapshot, plan, limits)
    assert [s.tp for s in decision.start] == [tp(1)]
    waits = {w.tp: w for w in decision.waiting}
    assert waits[tp(0)].reason is WaitReason.OFFLINE_TARGET and "[3]" in waits[tp(0)].detail
    assert decision.state[tp(0)].status is Status.BLOCKED
    # broker 3 returns: the blocked partition is re-examined without being in `changed`
    back = snapshot.with_brokers([replace(snapshot.brokers[3], online=True)])
    second = decide(back, plan, decision.state, limits, changed=set())
    assert [s.tp for s in second.start] == [tp(0)]


def test_offline_partition_waits() -> None:
    snapshot = cluster(4, {tp(0): (0, 1)}, offline=[0, 1])
    plan = ReassignmentPlan({tp(0): (2, 3)})
    decision = first_decision(snapshot, plan, Limits())
    assert decision.start == ()
    assert decision.waiting[0].reason is WaitReason.PARTITION_OFFLINE


def test_under_min_insync_partition_gets_priority_and_extra_replicas() -> None:
    parts = {tp(0): (0, 1, 2), tp(1): (0, 1, 2)}
    snapshot = cluster(8, parts, min_insync=2, isr={tp(1): (0,)})
    plan = ReassignmentPlan({tp(0): (0, 3, 4), tp(1): (0, 5, 6)})
    limits = Limits(parallel_partition_count=1)
    decision = first_decision(snapshot, plan, limits)
    assert [s.tp for s in decision.start] == [tp(1)]
    start = decision.start[0]
    # R = 1, but only 0 is in sync of min.insync 2: the out-of-sync 1 goes, 5 comes, ISR will be 2
    assert len(start.adding) >= 1 and 0 in start.target


def test_min_insync_safety_blocks_a_step() -> None:
    # 2 is the only in-sync replica and the only excess: dropping it would leave none in sync
    snapshot = cluster(4, {tp(0): (0, 1, 2)}, isr={tp(0): (2,)}, min_insync=2)
    snapshot = snapshot.with_partitions([replace(snapshot.partitions[tp(0)], leader=2)])
    plan = ReassignmentPlan({tp(0): (0, 1)})
    decision = first_decision(snapshot, plan, Limits())
    assert decision.start == ()
    assert decision.waiting[0].reason is WaitReason.MIN_INSYNC


def test_external_reassignment_is_reported_not_touched() -> None:
    snapshot = cluster(6, {tp(0): (0, 1), tp(1): (0, 1)})
    theirs = replace(snapshot.partitions[tp(0)], replicas=(4, 0, 1), adding=(4,), removing=(0, 1))
    snapshot = snapshot.with_partitions([theirs])
    plan = ReassignmentPlan({tp(0): (2, 3), tp(1): (0, 2)})
    decision = first_decision(snapshot, plan, Limits())
    assert decision.external == (tp(0),)
    assert all(s.tp != tp(0) for s in decision.start)
    assert decision.state[tp(0)].status is Status.EXTERNAL
    # their move ends: the partition is ours again and starts from where they left it
    ended = snapshot.with_partitions(
        [replace(theirs, replicas=(4,), isr=(4,), leader=4, adding=(), removing=())]
    )
    second = decide(ended, plan, decision.state, Limits(), {tp(0)})
    assert [s.tp for s in second.start] == [tp(0)]
    assert second.start[0].source == (4,)


def test_a_deleted_topic_is_dropped_and_an_unreadable_one_waited_for() -> None:
    parts = {tp(0): (0, 1), tp(1): (0, 1), tp(0, "u"): (0, 1), tp(0, "v"): (0, 1)}
    snapshot = cluster(4, parts)
    plan = ReassignmentPlan({tp(0): (2, 3), tp(1): (0, 2), tp(0, "u"): (0, 3), tp(0, "v"): (1, 0)})
    limits = Limits(max_outgoing_per_broker=10, max_incoming_per_broker=10)
    first = first_decision(snapshot, plan, limits)
    assert {s.tp for s in first.start} == set(plan.targets)
    running = apply_starts(snapshot, first.start)
    # Topic t is deleted (Kafka said so) while its copies run; topic u only failed to be read.
    gone = [tp(0), tp(1), tp(0, "u")]
    after = replace(
        running,
        partitions={k: p for k, p in running.partitions.items() if k not in gone},
        topics={n: i for n, i in running.topics.items() if n != "t"},
        deleted_topics=frozenset({"t"}),
    )
    second = decide(after, plan, acknowledge(running, first.state, limits, {}), limits, set(gone))
    check_invariants(second, after, limits)
    assert set(second.dropped) == {tp(0), tp(1)}
    assert all(second.state[k].status is Status.DROPPED for k in second.dropped)
    # u's move still runs in Kafka: unreadable for now, it keeps its slots until it is read again
    assert second.state[tp(0, "u")].status is Status.IN_FLIGHT
    assert second.state.load.partitions == 2
    assert "dropped 2 (topic deleted)" in second.summary()
    # A full reconcile later (a restart) leaves the dropped partitions dropped, reporting them once.
    again = decide(after, plan, second.state, limits)
    assert again.dropped == () and again.state[tp(0)].status is Status.DROPPED
    # A partition that was never sent and cannot be read waits, holding nothing.
    unsent = decide(after, plan, first.state, limits, set(gone))
    assert unsent.state[tp(0, "u")].status is Status.BLOCKED
    assert [w.reason for w in unsent.waiting] == [WaitReason.MISSING]


def test_cancelled_step_starts_over_under_the_next_index() -> None:
    snapshot = cluster(4, {tp(0): (0, 1)})
    plan = ReassignmentPlan({tp(0): (0, 2)})
    decision = first_decision(snapshot, plan, Limits())
    running = apply_starts(snapshot, decision.start)
    state = acknowledge(running, decision.state, Limits(), {})
    cancelled = running.with_partitions([snapshot.partitions[tp(0)]])  # back to the original replicas
    second = decide(cancelled, plan, state, Limits(), {tp(0)})
    assert second.aborted == (tp(0),)
    assert [(s.tp, s.step_index) for s in second.start] == [(tp(0), 1)]  # started again, as step 1


def test_a_step_read_as_its_source_just_after_it_started_is_read_again() -> None:
    """Kafka 4.4: the step completed before the broker answering Metadata replayed its start, so the read
    shows the source and the controller's listing nothing. While the step is recent (`recent`) that is read
    again, and the completion is seen once Metadata shows it; later, the same read is a revert."""
    snapshot = cluster(4, {tp(0): (0, 1)})
    plan = ReassignmentPlan({tp(0): (0, 2)})
    decision = first_decision(snapshot, plan, Limits())
    running = apply_starts(snapshot, decision.start)
    state = acknowledge(running, decision.state, Limits(), {})
    stale = running.with_partitions([snapshot.partitions[tp(0)]])  # Metadata from before the step
    second = decide(stale, plan, state, Limits(), {tp(0)}, recent={tp(0)})
    assert (second.aborted, second.start, second.completed) == ((), (), ())
    assert second.state[tp(0)].status is Status.IN_FLIGHT
    third = decide(complete(running), plan, second.state, Limits(), {tp(0)}, recent={tp(0)})
    assert third.completed == (tp(0),) and third.state[tp(0)].status is Status.DONE
    later = decide(stale, plan, state, Limits(), {tp(0)})
    assert later.aborted == (tp(0),)


def test_a_torn_read_of_a_completing_step_is_not_a_cancel() -> None:
    """Metadata read before the move completed, the reassignments after: [target + removed], no move."""
    snapshot = cluster(4, {tp(0): (0, 1)})
    plan = ReassignmentPlan({tp(0): (0, 2)})  # one step: drop 1, add 2; [0, 2, 1] while it runs
    limits = Limits()
    decision = first_decision(snapshot, plan, limits)
    running = apply_starts(snapshot, decision.start)
    assert running.partitions[tp(0)].replicas == (0, 2, 1)
    state = acknowledge(running, decision.state, limits, {})
    torn = running.with_partitions([replace(running.partitions[tp(0)], adding=(), removing=())])
    second = decide(torn, plan, state, limits, {tp(0)})
    assert second.aborted == () and second.start == ()
    assert second.state[tp(0)].status is Status.IN_FLIGHT


def test_a_completed_step_whose_added_replica_reads_out_of_sync_is_read_again() -> None:
    """Real KRaft: the controller's listing (read after Metadata) no longer shows a step that only adds,
    while the broker's Metadata, a moment behind, still has the ISR without the added replica. Kafka completes
    a move only once its whole target is in sync, so that read is torn. Taken as complete, the step's new
    preferred leader was never elected: the election is decided when the completion is seen."""
    snapshot = cluster(5, {tp(0): (0, 1)})
    plan = ReassignmentPlan({tp(0): (2, 3)})
    limits = Limits(parallel_replica_count=1)
    d1 = first_decision(snapshot, plan, limits)
    assert [x.target for x in d1.start] == [(2, 0, 1)]
    running = apply_starts(snapshot, d1.start)
    state = acknowledge(running, d1.state, limits, {})
    torn = running.with_partitions([replace(running.partitions[tp(0)], adding=(), removing=())])
    assert torn.partitions[tp(0)].replicas == (2, 0, 1) and 2 not in torn.partitions[tp(0)].isr
    d2 = decide(torn, plan, state, limits, {tp(0)})
    assert (d2.completed, d2.start, d2.elect) == ((), (), ())
    assert d2.state[tp(0)].status is Status.IN_FLIGHT
    d3 = decide(complete(running), plan, d2.state, limits, {tp(0)})
    assert d3.completed == (tp(0),)
    assert [(e.leader, e.reason) for e in d3.elect] == [(2, "step")]


def test_a_completed_step_whose_added_broker_stopped_is_complete() -> None:
    """The added replica out of the ISR because its broker stopped right after the move completed: nothing
    to wait for, the step is done (and its leader cannot be elected yet)."""
    snapshot = cluster(5, {tp(0): (0, 1)})
    plan = ReassignmentPlan({tp(0): (2, 3)})
    limits = Limits(parallel_replica_count=1)
    d1 = first_decision(snapshot, plan, limits)
    running = apply_starts(snapshot, d1.start)
    state = acknowledge(running, d1.state, limits, {})
    stopped = running.with_partitions([replace(running.partitions[tp(0)], adding=(), removing=())])
    stopped = stopped.with_brokers([Broker(2, online=False)])
    d2 = decide(stopped, plan, state, limits, {tp(0)})
    assert d2.completed == (tp(0),)
    assert d2.elect == ()


def test_a_finished_partition_whose_preferred_leader_died_is_elected_once_it_is_back_in_sync() -> None:
    """Real KRaft (tests/realkafka/test_failures.py): a partition finished with its new preferred leader,
    whose broker was killed a moment later; leadership went to another replica, and the broker's return put
    it back in sync while the plan still ran, but nothing elected it: the plan completed with the partition
    led by another replica (auto.leader.rebalance.enable=false, or for up to its 300 s check otherwise)."""
    snapshot = cluster(6, {tp(0): (1, 0), tp(1): (3, 0)})
    plan = ReassignmentPlan({tp(0): (1, 2), tp(1): (3, 4)})
    limits = Limits()
    d1 = first_decision(snapshot, plan, limits)
    running = apply_starts(snapshot, d1.start)
    state = acknowledge(running, d1.state, limits, {})
    finished = complete(running, {tp(0)})
    d2 = decide(finished, plan, state, limits, {tp(0)})
    assert d2.state[tp(0)].status is Status.DONE and d2.elect == ()
    died = finished.with_partitions([replace(finished.partitions[tp(0)], isr=(2,), leader=2)])
    died = died.with_brokers([Broker(1, online=False)])
    d3 = decide(died, plan, d2.state, limits, {tp(0)})
    assert d3.elect == ()  # nothing to elect while it is away
    back = died.with_partitions([replace(died.partitions[tp(0)], isr=(1, 2))]).with_brokers([Broker(1)])
    d4 = decide(back, plan, d3.state, limits, {tp(0)})
    assert [(e.tp, e.leader, e.reason) for e in d4.elect] == [(tp(0), 1, "finished")]
    assert d4.state[tp(0)].status is Status.DONE


def test_a_step_written_as_starting_is_sent_again_only_when_kafka_never_saw_it() -> None:
    snapshot = cluster(4, {tp(0): (0, 1)})
    plan = ReassignmentPlan({tp(0): (0, 2)})
    decision = first_decision(snapshot, plan, Limits())
    assert decision.state[tp(0)].status is Status.STARTING
    # restart before the reassignment was sent: the same step (index 0) starts again
    unsent = decide(snapshot, plan, decision.state, Limits(), None)
    assert [(s.tp, s.step_index) for s in unsent.start] == [(tp(0), 0)] and unsent.recovered == ()
    # restart after it was sent: it is in flight, recovered
    sent = decide(apply_starts(snapshot, decision.start), plan, decision.state, Limits(), None)
    assert sent.start == () and sent.recovered == (tp(0),)
    assert sent.state[tp(0)].status is Status.IN_FLIGHT


def test_a_refused_step_waits_with_kafkas_reason_under_the_same_index() -> None:
    snapshot = cluster(4, {tp(0): (0, 1)})
    plan = ReassignmentPlan({tp(0): (0, 2)})
    decision = first_decision(snapshot, plan, Limits())
    state = acknowledge(snapshot, decision.state, Limits(), {tp(0): "INVALID_REPLICA_ASSIGNMENT: no"})
    rec = state[tp(0)]
    assert (rec.status, rec.step, rec.reason) == (Status.PENDING, 0, WaitReason.REFUSED)
    assert state.load.partitions == 0


def test_an_illegal_transition_raises() -> None:
    from reassignd.engine.state import IllegalTransition, PartitionProgress, check_partition_change

    with pytest.raises(IllegalTransition):
        check_partition_change(tp(0), PartitionProgress(Status.DONE), PartitionProgress(Status.PENDING))
    with pytest.raises(IllegalTransition):
        check_partition_change(
            tp(0), PartitionProgress(Status.PENDING, 3), PartitionProgress(Status.PENDING, 2)
        )


def test_someone_else_retargets_our_step() -> None:
    snapshot = cluster(5, {tp(0): (0, 1)})
    plan = ReassignmentPlan({tp(0): (0, 2)})
    decision = first_decision(snapshot, plan, Limits())
    other = replace(snapshot.partitions[tp(0)], replicas=(0, 4, 1), adding=(4,), removing=(1,))
    second = decide(snapshot.with_partitions([other]), plan, decision.state, Limits(), {tp(0)})
    assert second.external == (tp(0),)
    assert second.state.load.partitions == 0


def test_election_after_finish_is_configurable() -> None:
    # final target (1, 0): same replicas, new order: Kafka keeps leader 0 until an election
    snapshot = cluster(3, {tp(0): (0, 1)})
    plan = ReassignmentPlan({tp(0): (1, 0)})
    for wanted in (True, False):
        _, _, decisions = drive(snapshot, plan, Limits(elect_after_finish=wanted))
        finished = [e for d in decisions for e in d.elect if e.reason == "finished"]
        assert bool(finished) == wanted


def test_state_survives_a_restart_mid_flight() -> None:
    parts = {tp(i): (0, 1, 2) for i in range(5)}
    snapshot = cluster(10, parts)
    plan = ReassignmentPlan({key: (3 + i, 1, 2) for i, key in enumerate(parts)})
    limits = Limits(parallel_partition_count=2, balance_sources=False)  # two copy steps in flight
    decision = first_decision(snapshot, plan, limits)
    running = apply_starts(snapshot, decision.start)
    state = decision.state
    rows = [
        PartitionRow.of(tp, state[tp], baseline=None, start_size=0, goal=None, started_at=None)
        for tp in plan.targets
    ]
    saved = json.loads(json.dumps([row.to_json() for row in rows]))
    rows = [PartitionRow.from_json(row) for row in saved]
    restored = ExecutionState.initial(plan, running, state.ordering, {row.tp: row.progress for row in rows})
    assert restored.load == decision.state.load
    again = decide(running, plan, restored, limits, None)
    assert again.start == () and again.external == ()  # nothing doubled, nothing mistaken for foreign
    finished = complete(running)
    third = decide(finished, plan, again.state, limits, None)
    assert sorted(third.completed) == sorted(s.tp for s in decision.start)


def test_lost_record_of_our_own_step_is_adopted() -> None:
    snapshot = cluster(5, {tp(0): (0, 1)})
    plan = ReassignmentPlan({tp(0): (0, 2)})
    decision = first_decision(snapshot, plan, Limits())
    running = apply_starts(snapshot, decision.start)
    fresh = ExecutionState.initial(plan, running)  # the daemon crashed before saving
    again = decide(running, plan, fresh, Limits(), None)
    assert again.state[tp(0)].status is Status.IN_FLIGHT and again.external == ()


def test_changed_partitions() -> None:
    snapshot = cluster(4, {tp(0): (0, 1), tp(1): (0, 1)})
    moved = snapshot.with_partitions([replace(snapshot.partitions[tp(1)], isr=(0,))])
    assert changed_partitions(snapshot, moved) == {tp(1)}
    assert changed_partitions(None, moved) == {tp(0), tp(1)}
    from reassignd.model import ClusterSnapshot

    shrunk = ClusterSnapshot(brokers=moved.brokers, partitions={tp(0): moved.partitions[tp(0)]})
    assert changed_partitions(moved, shrunk) == {tp(1)}
    # equal but rebuilt: unchanged; one gone and one new at once: both
    rebuilt = snapshot.with_partitions([replace(p) for p in snapshot.partitions.values()])
    assert changed_partitions(snapshot, rebuilt) == set()
    swapped = ClusterSnapshot(
        brokers=moved.brokers,
        partitions={tp(0): moved.partitions[tp(0)], tp(2): replace(moved.partitions[tp(1)], tp=tp(2))},
    )
    assert changed_partitions(moved, swapped) == {tp(1), tp(2)}


def test_decide_is_pure() -> None:
    parts = {tp(i): (0, 1) for i in range(20)}
    snapshot = cluster(8, parts)
    plan = ReassignmentPlan({key: (2 + i % 6, 1) for i, key in enumerate(parts)})
    state = ExecutionState.initial(plan, snapshot)
    limits = Limits(parallel_partition_count=5)
    one = decide(snapshot, plan, state, limits)
    two = decide(snapshot, plan, state, limits)
    assert one.start == two.start
    assert state.counts[Status.PENDING] == 20  # the input state is unchanged
    assert state.load.partitions == 0


def test_next_step_starts_with_the_election_and_is_served_by_the_new_leader() -> None:
    # The daemon sends the cycle's reassignments, then its elections: the step after the one that brought
    # the preferred leader in need not wait a cycle for the election to show in the snapshot.
    snapshot = cluster(5, {tp(0): (0, 1)})
    plan = ReassignmentPlan({tp(0): (2, 3)})
    limits = Limits(parallel_replica_count=1)
    d1 = first_decision(snapshot, plan, limits)
    assert [x.target for x in d1.start] == [(2, 0, 1)]
    s = complete(apply_starts(snapshot, d1.start))
    d2 = decide(s, plan, d1.state, limits, {tp(0)})
    assert [e.leader for e in d2.elect] == [2]
    assert [(x.target, x.leader, x.moves_leadership) for x in d2.start] == [((2, 1), 2, False)]
    s = elect(apply_starts(s, d2.start), d2.elect)
    assert s.partitions[tp(0)].leader == 2


def test_limits_change_between_decisions() -> None:
    parts = {tp(i): (0, 1) for i in range(8)}
    snapshot = cluster(12, parts)
    plan = ReassignmentPlan({key: (0, 2 + i) for i, key in enumerate(parts)})
    wide = Limits(parallel_partition_count=4)
    decision = first_decision(snapshot, plan, wide)
    assert len(decision.start) == 4
    running = apply_starts(snapshot, decision.start)
    # lowered: nothing in flight is touched, nothing new starts until the load is under the new limit
    narrow = Limits(parallel_partition_count=2, ordering=("smaller_first",))
    second = decide(running, plan, decision.state, narrow, set())
    assert second.start == () and second.state.load.partitions == 4
    assert second.state.ordering == ("smaller_first",)
    done = [s.tp for s in decision.start[:3]]
    third = decide(complete(running, set(done)), plan, second.state, narrow, set(done))
    check_invariants(third, running, narrow)
    assert len(third.start) == 1  # 1 still running + 1 new = the new limit of 2


@pytest.mark.parametrize(
    ("current", "final", "starts"),
    [
        ((0, 1, 3), (0, 2, 3), True),  # adds 2 (online), keeps 3 (stopped): the copy overlaps the outage
        ((0, 1, 3), (0, 3), False),  # keeps 3 and adds nothing: it could only wait, holding a slot
        ((0, 1), (0, 3), False),  # adds 3, which is stopped: nothing can be sent to it
        ((3, 0, 1), (2, 0, 1), True),  # drains the stopped broker: it leaves in the step (no wait for it)
    ],
    ids=["copies-beside-stopped", "only-waits", "adds-stopped", "removes-stopped"],
)
def test_a_stopped_broker_blocks_a_step_only_when_the_step_could_not_progress(
    current: tuple[int, ...], final: tuple[int, ...], starts: bool
) -> None:
    snapshot = cluster(5, {tp(0): current}, offline=[3])
    decision = first_decision(snapshot, ReassignmentPlan({tp(0): final}), Limits())
    assert bool(decision.start) is starts, decision.waiting
    if starts and 3 not in final:
        assert 3 not in decision.start[0].target, "a stopped broker being drained leaves in the first step"
    if not starts:
        [wait] = decision.waiting
        assert wait.reason is WaitReason.OFFLINE_TARGET and "[3]" in wait.detail


def test_a_copied_step_waiting_for_a_stopped_broker_frees_its_movement_slots() -> None:
    """Kafka completes the step only when broker 3 is back in sync; its copy to 2 is done, so broker 2 may
    receive the next partition under a limit of one incoming move."""
    parts = {tp(0): (0, 1, 3), tp(1): (0, 1, 4)}
    snapshot = cluster(5, parts, offline=[3])
    plan = ReassignmentPlan({tp(0): (0, 2, 3), tp(1): (0, 2, 4)})
    limits = Limits(max_incoming_per_broker=1)
    first = first_decision(snapshot, plan, limits)
    assert [s.tp for s in first.start] == [tp(0)]
    assert {w.tp: w.reason for w in first.waiting}[tp(1)] is WaitReason.LIMITS
    moving = apply_starts(snapshot, first.start)
    p = moving.partitions[tp(0)]
    copied = moving.with_partitions([replace(p, isr=(*p.isr, 2))])  # 2 caught up; 3 is still down
    second = decide(copied, plan, first.state, limits, {tp(0)})
    check_invariants(second, copied, limits)
    assert second.state[tp(0)].status is Status.IN_FLIGHT and second.state[tp(0)].copied
    assert second.state.load.incoming.get(2, 0) == 1, "only the new step's copy holds broker 2"
    assert [s.tp for s in second.start] == [tp(1)]

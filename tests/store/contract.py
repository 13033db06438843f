"""The StateStore contract: every implementation (SQLite now, ZooKeeper with the HA issue) must pass it.

A test module subclasses `StateStoreContract` and provides a `make_store` fixture: a callable
`make_store(fence=None) -> StateStore`; calling it again opens another store on the same backing data (a
restart, or a second daemon). See tests/store/conftest.py for the parametrised implementations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reassignd.model import TopicPartition
from reassignd.store import (
    DECOMMISSIONED,
    TRANSITIONS,
    ConfigResource,
    DuplicatePlanError,
    Event,
    EventKind,
    Fence,
    FencedError,
    IllegalTransitionError,
    PlanStatus,
    SettingsConflict,
    StateStore,
    StepReplayError,
    StoreError,
    UnknownPlanError,
    WriteBatch,
    replayed_steps,
)

MakeStore = Callable[..., StateStore]
PLAN = {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2, 3]}]}
TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)
BROKER1 = ConfigResource("broker", "1")
TOPIC_T = ConfigResource("topic", "t")


OPEN_STATES = ("detected", "proposed", "approved", "executing")
"""An anomaly's states before it ended: retention never prunes one of these."""


class SettableFence:
    def __init__(self, epoch: int = 1) -> None:
        self.current: int | None = epoch

    def epoch(self) -> int:
        if self.current is None:
            raise FencedError("leadership lost")
        return self.current


def kinds(store: StateStore, plan_id: str | None = None) -> list[str]:
    return [e.kind.value for e in store.journal(plan_id=plan_id)]


class StateStoreContract:
    def test_submit_get_and_list_in_submission_order(self, make_store: MakeStore) -> None:
        store = make_store()
        for plan_id in ("p-b", "p-a", "p-c"):
            store.submit_plan(plan_id, PLAN, {"dry_run": False})
        record = store.get_plan("p-a")
        assert record is not None
        assert record.plan == PLAN and record.options == {"dry_run": False}
        assert record.status is PlanStatus.QUEUED and record.started_at is None
        assert [p.id for p in store.list_plans()] == ["p-b", "p-a", "p-c"]
        assert store.get_plan("nope") is None
        assert kinds(store, "p-a") == ["plan.submitted"]
        assert store.journal(plan_id="p-a")[0].data == {"partitions": 1}

    def test_duplicate_plan_is_rejected(self, make_store: MakeStore) -> None:
        store = make_store()
        store.submit_plan("p", PLAN)
        with pytest.raises(DuplicatePlanError):
            store.submit_plan("p", {"version": 1, "partitions": []})
        assert store.get_plan("p").plan == PLAN  # type: ignore[union-attr]

    def test_lists_hold_summaries_and_a_get_the_body(self, make_store: MakeStore) -> None:
        store = make_store()
        two = {
            "version": 1,
            "partitions": [*PLAN["partitions"], {"topic": "t", "partition": 1, "replicas": [1]}],
        }
        store.submit_plan("p", two)
        [summary] = store.list_plans()
        assert summary.partitions == 2 and not hasattr(summary, "plan")
        record = store.get_plan("p")
        assert record is not None and record.plan == two and record.partitions == 2
        assert store.active_plan() is None
        store.set_plan_status("p", PlanStatus.RUNNING)
        active = store.active_plan()
        assert active is not None and active.plan == two
        assert [s.id for s in store.list_plans([PlanStatus.RUNNING])] == ["p"]
        assert store.list_plans([PlanStatus.QUEUED]) == []

    def test_the_settings_record_is_compare_and_set(self, make_store: MakeStore) -> None:
        store = make_store()
        assert (store.settings().version, dict(store.settings().document)) == (0, {})
        store.commit(WriteBatch().put_settings(0, {"overrides": {"k": {"value": 1}}}))
        assert store.settings().version == 1
        store.submit_plan("p", PLAN)
        stale = WriteBatch().put_settings(0, {"overrides": {}}).set_status("p", PlanStatus.RUNNING)
        with pytest.raises(SettingsConflict):
            store.commit(stale)
        assert store.get_plan("p").status is PlanStatus.QUEUED  # type: ignore[union-attr]
        assert store.settings().document == {"overrides": {"k": {"value": 1}}}
        store.commit(WriteBatch().put_settings(1, {"overrides": {}}))
        reopened = make_store()
        assert (reopened.settings().version, dict(reopened.settings().document)) == (2, {"overrides": {}})

    def test_broker_roles_last_are_journaled_with_who_and_go_with_a_recommission(
        self, make_store: MakeStore
    ) -> None:
        from reassignd.store.actor import acting_as

        store = make_store()
        assert store.broker_roles() == {}
        with acting_as({"via": "api", "name": "ops@host"}):
            store.commit(WriteBatch().set_broker_role(12, DECOMMISSIONED, "disk failing"))
        reopened = make_store()  # a restart, or the standby that takes over
        [role] = reopened.broker_roles().values()
        assert (role.broker, role.role, role.reason, role.by) == (
            12,
            DECOMMISSIONED,
            "disk failing",
            {"via": "api", "name": "ops@host"},
        )
        [entry] = reopened.journal(kinds=[EventKind.BROKER_DECOMMISSIONED])
        assert entry.data == {
            "broker": 12,
            "reason": "disk failing",
            "by": {"via": "api", "name": "ops@host"},
        }
        reopened.commit(WriteBatch().set_broker_role(12, None))
        assert make_store().broker_roles() == {}
        assert kinds(reopened)[-1] == "broker.recommissioned"

    def test_a_failing_batch_gives_no_role(self, make_store: MakeStore) -> None:
        store = make_store()
        with pytest.raises(UnknownPlanError):
            store.commit(
                WriteBatch().set_broker_role(3, DECOMMISSIONED).set_status("nope", PlanStatus.RUNNING)
            )
        assert store.broker_roles() == {}
        assert kinds(store) == []

    @pytest.mark.parametrize(("broker", "role"), [(-1, DECOMMISSIONED), (True, DECOMMISSIONED), (1, "gone")])
    def test_a_bad_role_is_refused_naming_it(self, make_store: MakeStore, broker: int, role: str) -> None:
        with pytest.raises(StoreError, match=repr(role) if role == "gone" else "broker id"):
            WriteBatch().set_broker_role(broker, role)

    def test_anomalies_last_across_a_reopen_and_a_change_replaces_the_record(
        self, make_store: MakeStore
    ) -> None:
        """Self-healing's anomalies (issue 29): a restart or the standby that takes over reads each back
        as it was written, with the batch that journaled its change."""
        store = make_store()
        assert store.anomalies() == {}
        proposed = {
            "id": "broker-failure-1-100",
            "state": "proposed",
            "first_seen": 100.0,
            "last_seen": 160.0,
        }
        other = {"id": "rack-spread-cluster-90", "state": "detected", "first_seen": 90.0, "last_seen": 160.0}
        batch = WriteBatch().put_anomaly(proposed["id"], proposed).put_anomaly(other["id"], other)
        store.commit(batch.append(Event(EventKind.ANOMALY, data={"anomaly": proposed["id"]})))
        reopened = make_store()
        assert reopened.anomalies() == {proposed["id"]: proposed, other["id"]: other}
        executing = {**proposed, "state": "executing", "last_seen": 200.0, "plan_id": "p"}
        reopened.commit(WriteBatch().put_anomaly(proposed["id"], executing))
        assert make_store().anomalies() == {proposed["id"]: executing, other["id"]: other}

    def test_a_failing_batch_writes_no_anomaly(self, make_store: MakeStore) -> None:
        store = make_store()
        with pytest.raises(UnknownPlanError):
            store.commit(
                WriteBatch().put_anomaly("a-1-1", {"id": "a-1-1"}).set_status("nope", PlanStatus.RUNNING)
            )
        assert store.anomalies() == {}

    @pytest.mark.parametrize("anomaly_id", ["", 7, "a/b"])
    def test_a_bad_anomaly_id_is_refused_naming_it(self, make_store: MakeStore, anomaly_id: Any) -> None:
        with pytest.raises(StoreError, match="anomaly id"):
            WriteBatch().put_anomaly(anomaly_id, {"id": anomaly_id})

    def test_retention_prunes_ended_anomalies_oldest_first_and_never_an_open_one(
        self, make_store: MakeStore
    ) -> None:
        """`self.healing.anomaly.retention.seconds`: an anomaly that ended (fixed, ignored, expired) and
        last changed before the horizon goes, up to `limit` a call, the oldest first; one still open
        (detected, proposed, approved, executing) stays however old, as does one changed since."""
        store = make_store()

        def anomaly(anomaly_id: str, state: str, last_seen: float) -> dict[str, Any]:
            return {"id": anomaly_id, "state": state, "first_seen": 10.0, "last_seen": last_seen}

        records = [
            anomaly("broker-failure-1-10", "fixed", 300.0),
            anomaly("broker-failure-2-10", "expired", 100.0),
            anomaly("rack-spread-cluster-10", "ignored", 200.0),
            anomaly("log-dir-offline-3_b-10", "fixed", 1000.0),  # changed after the horizon
            *(anomaly(f"new-broker-{i}-10", state, 50.0) for i, state in enumerate(OPEN_STATES)),
        ]
        batch = WriteBatch()
        for record in records:
            batch.put_anomaly(record["id"], record)
        store.commit(batch)
        assert store.prune_anomalies(before=500.0, limit=2) == (
            "broker-failure-2-10",
            "rack-spread-cluster-10",
        )
        assert store.prune_anomalies(before=500.0, limit=2) == ("broker-failure-1-10",)
        assert store.prune_anomalies(before=500.0, limit=2) == ()
        kept = make_store().anomalies()
        assert sorted(kept) == sorted(
            ["log-dir-offline-3_b-10", *(f"new-broker-{i}-10" for i in range(len(OPEN_STATES)))]
        )
        assert store.prune_anomalies(before=1e12, limit=100) == ("log-dir-offline-3_b-10",)
        assert sorted(make_store().anomalies()) == sorted(
            f"new-broker-{i}-10" for i in range(len(OPEN_STATES))
        )

    def test_anomaly_retention_is_fenced_like_a_commit(self, make_store: MakeStore) -> None:
        fence = SettableFence(epoch=5)
        store = make_store(fence=fence)
        done = {"id": "broker-failure-1-10", "state": "fixed", "first_seen": 10.0, "last_seen": 20.0}
        store.commit(WriteBatch().put_anomaly(done["id"], done))
        fence.current = None
        with pytest.raises(FencedError):
            store.prune_anomalies(before=100.0, limit=10)
        assert list(store.anomalies()) == [done["id"]]

    def test_retention_prunes_ended_plans_whole_and_never_an_unfinished_one(
        self, make_store: MakeStore
    ) -> None:
        now = [1000.0]
        store = make_store(clock=lambda: now[0])
        for index in range(5):
            plan_id = f"old{index}"
            store.submit_plan(plan_id, PLAN)
            store.commit(
                WriteBatch()
                .set_status(plan_id, PlanStatus.RUNNING)
                .put_partition_state(plan_id, TP0, {"step": 1})
                .append(Event(EventKind.STEP_STARTED, plan_id, TP0, 0))
            )
            store.set_plan_status(plan_id, PlanStatus.COMPLETED)
            now[0] += 10
        store.append(Event(EventKind.LIMITS_CHANGED, data={"old": True}))
        store.submit_plan("running", PLAN)
        store.set_plan_status("running", PlanStatus.RUNNING)
        now[0] = 5000.0
        store.submit_plan("new", PLAN)
        store.set_plan_status("new", PlanStatus.CANCELLED)
        # keep the 3 newest ended plans, and none that ended before 1025: old0, old1, old2 go, in batches
        first = store.prune(before=1025.0, keep_plans=3, limit=2)
        assert first.plans == ("old0", "old1")
        second = store.prune(before=1025.0, keep_plans=3, limit=2)
        assert second.plans == ("old2",)
        assert store.prune(before=1025.0, keep_plans=3, limit=2).plans == ()
        assert [p.id for p in store.list_plans()] == ["old3", "old4", "running", "new"]
        assert store.partition_states("old0") == {} and store.get_plan("old0") is None
        assert store.step_entry(EventKind.STEP_STARTED, "old0", TP0, 0) is None
        assert store.step_entry(EventKind.STEP_STARTED, "old3", TP0, 0) is not None
        assert {e.plan_id for e in store.journal()} <= {"old3", "old4", "running", "new", None}
        # a plan that ran long ago but has not ended is never pruned
        assert store.prune(before=4000.0, keep_plans=1, limit=10).plans == ("old3", "old4")
        assert [p.id for p in store.list_plans()] == ["running", "new"]

    def test_lifecycle_is_journaled(self, make_store: MakeStore) -> None:
        store = make_store()
        store.submit_plan("p", PLAN)
        for status in (PlanStatus.RUNNING, PlanStatus.PAUSED, PlanStatus.RUNNING, PlanStatus.COMPLETED):
            store.set_plan_status("p", status)
        record = store.get_plan("p")
        assert record is not None and record.status is PlanStatus.COMPLETED
        assert record.started_at is not None and record.finished_at is not None
        assert record.started_at <= record.finished_at
        assert kinds(store, "p") == [
            "plan.submitted",
            "plan.started",
            "plan.paused",
            "plan.resumed",
            "plan.completed",
        ]
        assert store.active_plan() is None

    def test_a_status_change_keeps_its_error(self, make_store: MakeStore) -> None:
        store = make_store()
        store.submit_plan("p", PLAN)
        store.set_plan_status("p", PlanStatus.RUNNING)
        assert store.active_plan().id == "p"  # type: ignore[union-attr]
        store.set_plan_status("p", PlanStatus.CANCELLING, error="broker 7 is gone")
        assert store.get_plan("p").error == "broker 7 is gone"  # type: ignore[union-attr]
        assert store.journal(plan_id="p")[-1].data["error"] == "broker 7 is gone"

    @settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
    @given(st.lists(st.sampled_from(list(PlanStatus)), max_size=6))
    def test_only_table_transitions_are_accepted(self, make_store: MakeStore, path: list[PlanStatus]) -> None:
        store = self._shared(make_store)
        plan_id = f"p{len(store.list_plans())}"
        store.submit_plan(plan_id, PLAN)
        current = PlanStatus.QUEUED
        for status in path:
            if status in TRANSITIONS[current]:
                store.set_plan_status(plan_id, status)
                current = status
            else:
                with pytest.raises(IllegalTransitionError):
                    store.set_plan_status(plan_id, status)
            assert store.get_plan(plan_id).status is current  # type: ignore[union-attr]

    _shared_store: StateStore | None = None

    def _shared(self, make_store: MakeStore) -> StateStore:
        if self._shared_store is None:
            self._shared_store = make_store()
        return self._shared_store

    def test_unknown_plan(self, make_store: MakeStore) -> None:
        store = make_store()
        with pytest.raises(UnknownPlanError):
            store.set_plan_status("ghost", PlanStatus.RUNNING)
        with pytest.raises(UnknownPlanError):
            store.commit(WriteBatch().put_partition_state("ghost", TP0, {"step": 0}))

    def test_a_failing_batch_writes_nothing(self, make_store: MakeStore) -> None:
        store = make_store()
        store.submit_plan("p", PLAN)
        before = store.journal()
        batch = (
            WriteBatch()
            .append(Event(EventKind.THROTTLE_SET, "p", data={"broker": 1}))
            .put_partition_state("p", TP0, {"step": 1})
            .record_original(BROKER1, "leader.replication.throttled.rate", None)
            .set_status("p", PlanStatus.COMPLETED)  # illegal from queued
        )
        with pytest.raises(IllegalTransitionError):
            store.commit(batch)
        assert store.journal() == before
        assert store.partition_states("p") == {}
        assert store.original_configs() == {}
        with pytest.raises(StoreError):
            store.append(Event(EventKind.ERROR, "p", data={"bad": object()}))
        assert store.journal() == before

    def test_partition_states(self, make_store: MakeStore) -> None:
        store = make_store()
        store.submit_plan("p", PLAN)
        store.submit_plan("q", PLAN)
        store.commit(
            WriteBatch()
            .put_partition_state("p", TP0, {"step": 0, "target": [1, 2, 4]})
            .put_partition_state("p", TP1, {"step": 0})
            .put_partition_state("q", TP0, {"step": 5})
        )
        store.commit(
            WriteBatch().put_partition_state("p", TP0, {"step": 1}).put_partition_state("p", TP1, None)
        )
        assert store.partition_states("p") == {TP0: {"step": 1}}
        assert store.partition_states("q") == {TP0: {"step": 5}}
        assert store.partition_states("none") == {}

    def test_summaries_replace_each_other_and_survive_status_changes(self, make_store: MakeStore) -> None:
        store = make_store()
        store.submit_plan("p", PLAN)
        assert store.get_plan("p").summary is None  # type: ignore[union-attr]
        store.commit(WriteBatch().set_status("p", PlanStatus.RUNNING).set_summary("p", {"percent": 1.5}))
        store.commit(WriteBatch().set_summary("p", {"percent": 40.0, "bytes_total": 7}))
        store.commit(WriteBatch().set_status("p", PlanStatus.COMPLETED))
        record = store.get_plan("p")
        assert record is not None and record.summary == {"percent": 40.0, "bytes_total": 7}
        assert [r.summary for r in store.list_plans()] == [{"percent": 40.0, "bytes_total": 7}]
        with pytest.raises(UnknownPlanError):
            store.commit(WriteBatch().set_summary("none", {}))

    def test_what_we_wrote_is_kept_with_the_original_and_goes_with_it(self, make_store: MakeStore) -> None:
        store = make_store()
        rate = "follower.replication.throttled.rate"
        store.commit(
            WriteBatch().record_original(BROKER1, rate, None).note_written(BROKER1, rate, (None, "10"))
        )
        assert store.original_configs()[(BROKER1, rate)].written == (None, "10")
        store.commit(WriteBatch().note_written(BROKER1, rate, ("10",)))
        original = store.original_configs()[(BROKER1, rate)]
        assert (original.value, original.written) == (None, ("10",))
        with pytest.raises(StoreError):
            store.commit(
                WriteBatch().note_written(TOPIC_T, "leader.replication.throttled.replicas", ("0:1",))
            )
        store.commit(WriteBatch().forget_original(BROKER1, rate))
        assert store.original_configs() == {}

    def test_original_configs_first_recording_wins(self, make_store: MakeStore) -> None:
        store = make_store()
        rate = "leader.replication.throttled.rate"
        assert store.record_original(BROKER1, rate, None) is True
        assert store.record_original(BROKER1, rate, "1000") is False
        assert store.record_original(TOPIC_T, "leader.replication.throttled.replicas", "0:1,0:2") is True
        originals = store.original_configs()
        assert originals[(BROKER1, rate)].value is None
        assert originals[(TOPIC_T, "leader.replication.throttled.replicas")].value == "0:1,0:2"
        store.commit(WriteBatch().forget_original(BROKER1, rate))
        assert (BROKER1, rate) not in store.original_configs()
        assert store.record_original(BROKER1, rate, "5000") is True
        assert store.original_configs()[(BROKER1, rate)].value == "5000"
        with pytest.raises(ValueError, match="broker or topic"):
            ConfigResource("cluster", "")

    def test_forget_and_record_in_one_batch_replaces_an_original(self, make_store: MakeStore) -> None:
        store = make_store()
        key = "follower.replication.throttled.replicas"
        store.record_original(TOPIC_T, key, "0:1")
        store.commit(WriteBatch().forget_original(TOPIC_T, key).record_original(TOPIC_T, key, "0:1,19:1"))
        assert store.original_configs()[(TOPIC_T, key)].value == "0:1,19:1"

    def test_journal_sequence_and_filters(self, make_store: MakeStore) -> None:
        store = make_store()
        store.submit_plan("p", PLAN)
        seqs = store.append(
            Event(EventKind.THROTTLE_SET, "p", data={"broker": 1, "rate": 100}),
            Event(EventKind.FOREIGN_CHANGE, None, TP0, data={"by": "someone"}),
            Event(EventKind.ERROR, "p", data={"message": "timeout"}, at=123.0),
        )
        assert list(seqs) == sorted(seqs) and len(set(seqs)) == 3
        entries = store.journal()
        assert [e.seq for e in entries] == sorted(e.seq for e in entries)
        assert entries[-1].at == 123.0 and entries[-1].data == {"message": "timeout"}
        assert [e.kind for e in store.journal(kinds=[EventKind.FOREIGN_CHANGE])] == [EventKind.FOREIGN_CHANGE]
        assert store.journal(kinds=[EventKind.FOREIGN_CHANGE])[0].tp == TP0
        assert [e.seq for e in store.journal(after_seq=seqs[0])] == list(seqs[1:])
        assert len(store.journal(limit=2)) == 2
        assert all(e.plan_id == "p" for e in store.journal(plan_id="p"))

    def test_the_last_seq_is_the_newest_ever_given_and_pruning_never_lowers_it(
        self, make_store: MakeStore
    ) -> None:
        """What the ownership marker compares with (engine/crosscheck.py)."""
        now = [1000.0]
        store = make_store(clock=lambda: now[0])
        assert store.last_seq() == 0
        store.submit_plan("p", PLAN)
        store.set_plan_status("p", PlanStatus.RUNNING)
        store.set_plan_status("p", PlanStatus.COMPLETED)
        newest = store.journal()[-1].seq
        assert store.last_seq() == newest
        now[0] = 9000.0
        assert store.prune(before=8000.0, keep_plans=0, limit=10).plans == ("p",)
        assert store.journal() == [] and store.last_seq() == newest

    def test_a_step_is_started_at_most_once(self, make_store: MakeStore) -> None:
        store = make_store()
        store.submit_plan("p", PLAN)
        started = Event(EventKind.STEP_STARTED, "p", TP0, 0, {"target": [1, 2, 4]})
        (seq,) = store.append(started)
        assert store.step_entry(EventKind.STEP_STARTED, "p", TP0, 0).seq == seq  # type: ignore[union-attr]
        assert store.step_entry(EventKind.STEP_FINISHED, "p", TP0, 0) is None
        with pytest.raises(StepReplayError) as replay:
            store.commit(
                WriteBatch()
                .put_partition_state("p", TP0, {"step": 99})
                .append(Event(EventKind.STEP_STARTED, "p", TP0, 0, {"target": [9]}))
            )
        assert replay.value.existing.seq == seq
        assert replay.value.existing.data == {"target": [1, 2, 4]}
        assert store.partition_states("p") == {}
        store.append(Event(EventKind.STEP_STARTED, "p", TP0, 1), Event(EventKind.STEP_STARTED, "p", TP1, 0))
        store.append(Event(EventKind.STEP_FINISHED, "p", TP0, 0, {"bytes": 10, "seconds": 1.5}))
        with pytest.raises(StepReplayError):
            store.append(Event(EventKind.STEP_FINISHED, "p", TP0, 0))
        assert replayed_steps(store.journal()) == []
        with pytest.raises(ValueError, match="needs plan_id"):
            Event(EventKind.STEP_STARTED, "p")

    def test_fencing(self, make_store: MakeStore) -> None:
        fence = SettableFence(epoch=5)
        store = make_store(fence=fence)
        store.submit_plan("p", PLAN)
        fence.current = None
        with pytest.raises(FencedError):
            store.append(Event(EventKind.THROTTLE_SET, "p"))
        fence.current = 5
        assert kinds(store, "p") == ["plan.submitted"]
        newer: Fence = SettableFence(epoch=6)
        other = make_store(fence=newer)
        other.set_plan_status("p", PlanStatus.RUNNING)
        with pytest.raises(FencedError):  # the old leader, after a newer one wrote
            store.set_plan_status("p", PlanStatus.PAUSED)
        assert store.get_plan("p").status is PlanStatus.RUNNING  # type: ignore[union-attr]

    def test_everything_survives_a_reopen(self, make_store: MakeStore) -> None:
        store = make_store()
        store.submit_plan("p", PLAN, {"throttle": 100})
        store.commit(
            WriteBatch()
            .set_status("p", PlanStatus.RUNNING)
            .put_partition_state("p", TP0, {"step": 2})
            .record_original(BROKER1, "follower.replication.throttled.rate", "77")
            .append(Event(EventKind.STEP_STARTED, "p", TP0, 2))
        )
        journal = store.journal()
        store.close()
        reopened = make_store()
        assert reopened.get_plan("p").status is PlanStatus.RUNNING  # type: ignore[union-attr]
        assert reopened.partition_states("p") == {TP0: {"step": 2}}
        assert reopened.original_configs()[(BROKER1, "follower.replication.throttled.rate")].value == "77"
        assert reopened.journal() == journal
        seq = reopened.append(Event(EventKind.ERROR))[0]
        assert seq > journal[-1].seq

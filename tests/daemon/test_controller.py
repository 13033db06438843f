"""The controller in process, in virtual time: what used to take a simulator and a daemon process each.

The same scenario and plan as the end-to-end tests (test_e2e.py); what happened is read from the
simulator's model, never from the daemon's report of itself.
"""

from __future__ import annotations

from typing import Any

import pytest

from reassignd.cluster.errors import ClusterCallError, error_for_code
from reassignd.daemon.service import ServiceError
from reassignd.daemon.view import iso_time
from reassignd.model import TopicPartition
from reassignd.sim import errors
from reassignd.sim.errors import KafkaError
from reassignd.store.base import EventKind, PlanStatus
from tests.daemon.inprocess import InProcessDaemon, plan_of
from tests.daemon.test_e2e import LIMITS, fill_plan, scenario

TOPIC_LIST = "follower.replication.throttled.replicas"


def daemon(
    partitions: int, limits: dict[str, Any] | None = None, kafka_mode: str | None = None
) -> InProcessDaemon:
    return InProcessDaemon(
        scenario(partitions), {**LIMITS, **(limits or {})}, cycle_seconds=1.0, kafka_mode=kafka_mode
    )


def targets(plan: dict[str, Any]) -> dict[tuple[str, int], list[int]]:
    return {(e["topic"], e["partition"]): e["replicas"] for e in plan["partitions"]}


async def test_the_under_min_isr_gauge_follows_the_cluster() -> None:
    """Counted incrementally (only changed partitions are re-checked): it must rise when brokers go and
    fall back when they return, matching the simulator's own count for the plan's partitions. The brokers'
    Metadata shows the controller's state at once here (no delay): the simulator counts on the latter."""
    d = InProcessDaemon({**scenario(30), "metadata_delay_seconds": 0}, LIMITS, cycle_seconds=1.0)
    plan = fill_plan(30)
    await d.submit(plan_of(targets(plan)))
    await d.cycle()
    gauge = d.controller.metrics["reassignd_under_min_isr_partitions"]
    planned = set(targets(plan))

    def sim_count() -> int:
        under = d.sim.observed()["under_min_isr"]
        return sum(1 for u in under if u["under_now"] and (u["topic"], u["partition"]) in planned)

    d.sim.stop_broker(2)
    d.sim.stop_broker(3)
    await d.controller.cycle()
    expected = sim_count()
    assert expected > 0 and gauge._value.get() == expected
    for _ in range(3):  # more cycles: the count must stay right, not drift
        await d.controller.cycle()
        assert gauge._value.get() == sim_count() == expected
    d.sim.start_broker(2)
    d.sim.start_broker(3)
    await d.run(lambda: gauge._value.get() == 0, seconds=600)
    assert sim_count() == 0


async def test_someone_elses_change_to_our_throttles_is_reported_and_repaired(kafka_mode: str) -> None:
    d = daemon(20, {"follower.reassignment.throttled.rate": 1_000_000}, kafka_mode=kafka_mode)
    plan_id = await d.submit(plan_of(targets(fill_plan(20))))

    def ours() -> str:
        return d.sim.topics["logs"].configs.get(TOPIC_LIST, "")

    await d.run(lambda: ours() != "", seconds=60)
    d.sim.incremental_alter_configs(2, "logs", [(TOPIC_LIST, 0, "19:1")])  # another tool SETs the list
    await d.cycle()
    assert ours() != "19:1" and "19:1" in ours().split(","), "our entries put back beside the other tool's"
    await d.controller.cancel()
    await d.run(seconds=3600)
    assert await d.status_of(plan_id) is PlanStatus.CANCELLED
    assert ours() == "19:1", "the other tool's entry is not ours to remove; nothing of ours stays"
    foreign = await d.journal(EventKind.FOREIGN_CHANGE)
    assert any(e.data.get("config") == TOPIC_LIST for e in foreign), foreign


async def test_a_stopped_target_broker_waits_while_others_complete(kafka_mode: str) -> None:
    d = daemon(30, kafka_mode=kafka_mode)
    before = d.throttle_configs()
    plan = targets(fill_plan(30))
    plan_id = await d.submit(plan_of(plan))
    await d.cycle()
    d.sim.stop_broker(6)  # mid-plan: moves onto it may have started or not
    on_6 = {tp for tp, replicas in plan.items() if 6 in replicas}
    others = set(plan) - on_6
    await d.run(lambda: all(d.replicas(*tp) == plan[tp] for tp in others), seconds=3600)
    assert sum(d.replicas(*tp) == plan[tp] for tp in on_6) <= 2, "moves onto the stopped broker wait"
    status = d.controller.plan_status(plan_id)
    assert status["state"] == "running"
    assert {w["reason"] for w in status["waiting"]} >= {"offline_target"}
    assert status["progress"]["eta_seconds"] is None and "offline" in status["progress"]["eta_reason"]
    d.sim.start_broker(6)
    await d.run(seconds=3600)
    assert await d.status_of(plan_id) is PlanStatus.COMPLETED
    assert all(d.replicas(*tp) == plan[tp] for tp in plan)
    assert d.throttle_configs() == before


async def test_a_broker_lost_mid_plan_leaves_exactly_the_partitions_keeping_it_and_says_which(
    kafka_mode: str,
) -> None:
    """Broker 2 stops for good: every partition whose target does not keep it completes (those draining it
    too), the others copy what they can and wait, listed in status as what the operator must re-target."""
    d = daemon(30, kafka_mode=kafka_mode)
    before = d.throttle_configs()
    plan = targets(fill_plan(30))
    plan_id = await d.submit(plan_of(plan))
    await d.cycle()
    d.sim.stop_broker(2)
    keeping = {tp for tp, replicas in plan.items() if 2 in replicas}
    others = set(plan) - keeping
    assert keeping and others
    await d.run(lambda: all(d.replicas(*tp) == plan[tp] for tp in others), seconds=3600)
    for _ in range(60):  # a minute on: nothing more finishes while broker 2 is down
        await d.cycle()
    status = d.controller.plan_status(plan_id)
    assert status["state"] == "running"
    waits = status["offline_waits"]
    unfinished = {tp for tp in keeping if d.replicas(*tp) != plan[tp]}
    assert waits["brokers"] == [2] and waits["partitions"] == len(unfinished) > 0
    assert {(w["topic"], w["partition"]) for w in waits["shown"]} <= unfinished
    assert (
        status["progress"]["eta_seconds"] is None
        and "offline broker(s) 2" in status["progress"]["eta_reason"]
    )
    d.sim.start_broker(2)
    await d.run(seconds=3600)
    assert await d.status_of(plan_id) is PlanStatus.COMPLETED
    assert all(d.replicas(*tp) == plan[tp] for tp in plan)
    assert d.throttle_configs() == before


async def test_status_never_says_more_than_the_store_holds() -> None:
    """A status read while a cycle's effects are being carried out shows the state before them: the plan is
    never reported completed before its completion is committed (a failover test read the journal after
    status said completed and found no plan.completed yet)."""
    d = daemon(6)
    plan_id = await d.submit(plan_of(targets(fill_plan(6))))
    seen: list[tuple[str, str]] = []
    commit = d.store.commit

    async def observed(batch: Any) -> Any:
        stored = d.store.store.get_plan(plan_id)
        shown = d.controller.plan_status(plan_id)["state"]
        seen.append((shown, stored.status.value if stored else "none"))
        return await commit(batch)

    d.store.commit = observed  # type: ignore[method-assign]
    await d.run(seconds=3600)
    assert await d.status_of(plan_id) is PlanStatus.COMPLETED
    assert seen and all(shown != "completed" or stored == "completed" for shown, stored in seen), seen


async def test_draining_a_broker_that_is_already_dead_completes() -> None:
    """Broker 1 died before the plan: every replica on it is rebuilt on broker 4 (its rack) from the
    surviving replicas. Kafka completes a step only with its whole target in sync, so the dead replica
    must leave in the step that adds its replacement, wherever it stands in the list."""
    d = daemon(12)
    d.sim.stop_broker(1)
    state = {(t.name, p.index): list(p.replicas) for t in d.sim.topics.values() for p in t.partitions}
    plan = {tp: [4 if b == 1 else b for b in replicas] for tp, replicas in state.items() if 1 in replicas}
    plan_id = await d.submit(plan_of(plan))
    await d.run(seconds=3600)
    assert await d.status_of(plan_id) is PlanStatus.COMPLETED
    assert all(d.replicas(*tp) == replicas for tp, replicas in plan.items())


async def test_a_topic_deleted_mid_plan_is_dropped_and_the_plan_completes(kafka_mode: str) -> None:
    """The topic goes while copies of it run under our throttle. At 1 MB/s a 10 MB copy spans cycles: at
    the plan's usual rates Kafka's quota windows let each copy through within the cycle it starts in
    (docs/engine.md, KIP-73), and no cycle would end with one running."""
    slow = {
        "leader.reassignment.throttled.rate": 1_000_000,
        "follower.reassignment.throttled.rate": 1_000_000,
    }
    d = daemon(30, slow, kafka_mode=kafka_mode)
    before = d.throttle_configs()
    plan = targets(fill_plan(30))
    plan_id = await d.submit(plan_of(plan))

    def logs_copying_under_our_throttle() -> bool:
        moving = [p for p in d.sim.topics["logs"].partitions if p.adding]
        return bool(moving) and bool(d.sim.topics["logs"].configs.get(TOPIC_LIST))

    await d.run(logs_copying_under_our_throttle, seconds=600)
    try:
        d.sim.delete_topic("logs")
    except KafkaError as exc:  # ZooKeeper mode: queued until its moves are over (TopicDeletionManager)
        assert kafka_mode == "zookeeper" and exc.code == errors.REQUEST_TIMED_OUT, exc
        assert "logs" in d.sim.topics_to_delete
    await d.run(seconds=3600)
    assert await d.status_of(plan_id) is PlanStatus.COMPLETED
    assert all(d.replicas(*tp) == plan[tp] for tp in plan if tp[0] == "events")
    before.pop("topic logs", None)
    assert d.throttle_configs() == before, "no throttle left behind"
    entries = await d.journal()
    dropped = {
        (e.tp.topic, e.tp.partition) for e in entries if e.kind is EventKind.PARTITION_DROPPED and e.tp
    }
    reached = {
        (e.tp.topic, e.tp.partition)
        for e in entries
        if e.kind is EventKind.STEP_FINISHED
        and e.tp
        and e.data["target"] == plan[(e.tp.topic, e.tp.partition)]
    }
    logs = {tp for tp in plan if tp[0] == "logs"}
    assert dropped and dropped <= logs and not dropped & reached
    assert logs <= dropped | reached, "every partition of the deleted topic either got there or was dropped"
    progress = d.controller.plan_status(plan_id)["progress"]
    assert progress["partitions_dropped"] == len(dropped)
    assert progress["partitions_done"] == len(plan) - len(dropped)
    assert not await d.journal(EventKind.FOREIGN_CHANGE)


def drain_plan(partitions: int, broker: int = 3, to: int = 6) -> dict[tuple[str, int], list[int]]:
    """Every replica on `broker` moves to `to` (same rack), order kept: a leader there moves too."""
    current = assignment(scenario(partitions))
    return {tp: [to if b == broker else b for b in replicas] for tp, replicas in current.items()}


def assignment(scenario_: dict[str, Any]) -> dict[tuple[str, int], list[int]]:
    return {
        (t["name"], i): list(replicas)
        for t in scenario_["topics"]
        for i, replicas in enumerate(t["assignment"])
    }


async def cycles(d: InProcessDaemon, count: int) -> None:
    for _ in range(count):
        await d.cycle()


@pytest.mark.parametrize("ending", ["completes", "cancelled"])
async def test_a_drain_survives_the_controller_broker_failing(kafka_mode: str, ending: str) -> None:
    """Drain broker 3 while broker 1 (the controller, a source and leader of a third of the partitions)
    stops and comes back; then let it finish, or cancel it while broker 1 is down."""
    d = daemon(12, kafka_mode=kafka_mode)
    before, pre = d.throttle_configs(), assignment(scenario(12))
    plan = drain_plan(12)
    plan_id = await d.submit(plan_of(plan))
    await d.run(lambda: sum(d.replicas(*tp) == plan[tp] for tp in plan) >= 4, seconds=600)
    d.sim.stop_broker(1)
    assert d.sim.controller_id != 1
    await cycles(d, 30)
    if ending == "cancelled":
        await d.controller.cancel()
        await cycles(d, 30)
    d.sim.start_broker(1)
    await d.run(seconds=3600)
    expected = PlanStatus.COMPLETED if ending == "completes" else PlanStatus.CANCELLED
    assert await d.status_of(plan_id) is expected
    for tp in plan:
        now = d.replicas(*tp)
        assert now == plan[tp] or (ending == "cancelled" and now == pre[tp]), (tp, now)
        p = d.sim.topics[tp[0]].partitions[tp[1]]
        assert p.leader in p.replicas and sorted(p.isr) == sorted(p.replicas), p
    assert not d.reassigning()
    assert d.throttle_configs() == before, "every throttle config as before the plan"
    assert not d.store.replays, "no step was started twice"


async def test_a_submit_journals_one_plan_submitted() -> None:
    d = daemon(5)
    plan_id = await d.submit(plan_of(targets(fill_plan(5))))
    submitted = await d.journal(EventKind.PLAN_SUBMITTED)
    assert [(e.plan_id, dict(e.data)) for e in submitted] == [(plan_id, {"partitions": 10})]


async def test_idle_cycles_read_nothing_from_the_store() -> None:
    """History must not cost a daemon that has nothing to do: its idle cycle reads no plan list."""
    d = daemon(5)
    plan_id = await d.submit(plan_of(targets(fill_plan(5))))
    await d.run(seconds=3600)
    assert await d.status_of(plan_id) is PlanStatus.COMPLETED
    calls: list[str] = []
    real = d.store.store.list_plans

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append("list_plans")
        return real(*args, **kwargs)

    d.store.store.list_plans = counting  # type: ignore[method-assign]
    for _ in range(5):
        assert await d.controller.cycle() == "idle"
    assert calls == []


async def test_a_step_waits_while_its_throttle_cannot_be_written() -> None:
    """The daemon may not alter the configs of topic "logs" (an ACL missing: TOPIC_AUTHORIZATION_FAILED):
    no step of "logs" starts, status says why, and the rest of the plan goes on. Once the write goes
    through, its steps start under their throttle and the plan completes with every config restored
    (tests/realkafka/test_security.py asks the same of a secured real cluster)."""
    d = daemon(12)
    before = d.throttle_configs()
    plan = targets(fill_plan(12))
    plan_id = await d.submit(plan_of(plan))
    alter = d.admin.alter_topic_configs

    async def refused(topic: str, ops: Any) -> None:
        if topic == "logs":
            raise ClusterCallError(
                "incremental_alter_configs", error_for_code(29, "Topic authorization failed.")
            )
        await alter(topic, ops)

    d.admin.alter_topic_configs = refused  # type: ignore[method-assign]
    for _ in range(30):
        await d.cycle()
        assert not [p.index for p in d.sim.topics["logs"].partitions if p.adding], "a step copies unthrottled"
    events = {tp for tp in plan if tp[0] == "events"}
    assert all(d.replicas(*tp) == plan[tp] for tp in events), "the other topic's moves went on"
    waiting = d.controller.plan_status(plan_id)["waiting"]
    held = [w for w in waiting if w["reason"] == "throttle"]
    assert held and {w["topic"] for w in held} == {"logs"}
    assert "topic logs" in held[0]["detail"] and "TOPIC_AUTHORIZATION_FAILED" in held[0]["detail"]
    assert not [e for e in await d.journal(EventKind.STEP_STARTED) if e.tp and e.tp.topic == "logs"]
    d.admin.alter_topic_configs = alter  # type: ignore[method-assign]
    await d.run(seconds=3600)
    assert await d.status_of(plan_id) is PlanStatus.COMPLETED
    assert all(d.replicas(*tp) == plan[tp] for tp in plan)
    assert d.throttle_configs() == before


async def test_a_submit_says_when_it_read_the_sizes_it_counts() -> None:
    """Topics grow: the same plan is more bytes a minute later, so the figure says its moment (issue 27)."""
    d = daemon(4)
    await d.controller.start()
    d.sim.advance(90.0)
    result = await d.controller.submit_plan(plan_of(targets(fill_plan(4))), dry_run=True)
    assert result["bytes_to_move"] > 0
    assert result["sizes_read_at"] == iso_time(d.clock())


async def test_a_plan_naming_a_partition_another_tool_is_reassigning_is_refused() -> None:
    """What the submit reads as ongoing must include another tool's reassignment (KIP-455's list)."""
    d = daemon(4)
    await d.controller.start()
    await d.admin.alter_partition_reassignments({TopicPartition("logs", 1): [4, 2, 3]})
    assert TopicPartition("logs", 1) in d.reassigning()
    with pytest.raises(ServiceError) as refused:
        await d.controller.submit_plan(plan_of(targets(fill_plan(4))))
    assert "logs-1" in str(refused.value.problems) and "someone else" in str(refused.value.problems)
    assert d.controller.records == {}


async def test_a_submit_takes_the_ongoing_reassignments_from_its_snapshot() -> None:
    """The snapshot already lists every ongoing reassignment (one request for all of them); asking again
    by name cost a 100,000-partition submit a second request naming every partition (1.1-1.5 s on
    bench.profile_daemon), and a second moment the two reads could disagree about."""
    d = daemon(4)
    await d.controller.start()
    asked: list[object] = []
    listed = d.admin.list_partition_reassignments

    async def by_name(partitions: Any = None) -> Any:
        asked.append(partitions)
        return await listed(partitions)

    d.admin.list_partition_reassignments = by_name  # type: ignore[method-assign]
    result = await d.controller.submit_plan(plan_of(targets(fill_plan(4))), dry_run=True)
    assert result["partitions"] == 8
    assert [a for a in asked if a is not None] == [], "no second read of the ongoing reassignments by name"

"""The failure paths operators judge a reassignment tool by, reproduced in process and in virtual time.

Each test is a reproduction from issue 13 ("Failure paths done right"): cancel, a broker that bounces, a
cluster outage, and what status claims. They drive the real controller over the simulator's model
(tests/daemon/inprocess.py) and judge the outcome from the cluster's side.
"""

from __future__ import annotations

from typing import Any

from reassignd.engine.run.effects import Effect, Reassign
from reassignd.store.base import EventKind, PlanStatus, replayed_steps
from tests.daemon.inprocess import InProcessDaemon, plan_of

MB = 1_000_000
RATE = 20 * MB


def scenario(
    assignment: list[list[int]], *, brokers: int = 6, size: int = 400 * MB, produce: float = 50_000.0
) -> dict[str, Any]:
    return {
        "seed": 1,
        "brokers": [{"id": b, "rack": f"/dc1/r{b}"} for b in range(1, brokers + 1)],
        "topics": [
            {
                "name": "t",
                "partitions": len(assignment),
                "replication_factor": len(assignment[0]),
                "partition_bytes": size,
                "produce_bytes_per_sec": produce,
                "assignment": assignment,
            }
        ],
    }


LIMITS: dict[str, Any] = {
    "reassignment.parallel.replica.count": 1,
    "leader.reassignment.throttled.rate": RATE,
    "follower.reassignment.throttled.rate": RATE,
}


def daemon(
    assignment: list[list[int]],
    limits: dict[str, Any] | None = None,
    kafka_mode: str | None = None,
    **kw: Any,
) -> InProcessDaemon:
    return InProcessDaemon(scenario(assignment, **kw), {**LIMITS, **(limits or {})}, kafka_mode=kafka_mode)


async def cycles(d: InProcessDaemon, count: int) -> None:
    for _ in range(count):
        await d.cycle()


async def ended(d: InProcessDaemon, plan_id: str) -> PlanStatus:
    await d.run(seconds=4 * 3600)
    return await d.status_of(plan_id)


# -- 1. cancel leaves every partition on its pre-plan list or its target, nothing in between -------------


async def test_a_cancel_between_two_steps_leaves_no_partition_half_moved(kafka_mode: str) -> None:
    d = daemon([[1, 2, 3]], kafka_mode=kafka_mode)
    before = d.throttle_configs()
    plan_id = await d.submit(plan_of({("t", 0): [4, 2, 3]}))  # two steps: [4,2,3,1], then [4,2,3]
    await d.cycle()
    await d.controller.pause()
    await d.run(lambda: d.replicas("t", 0) == [4, 2, 3, 1] and not d.reassigning())
    await d.controller.cancel()
    assert await ended(d, plan_id) is PlanStatus.CANCELLED
    assert d.replicas("t", 0) in ([1, 2, 3], [4, 2, 3]), "replication factor back to 3, on a list we know"
    assert not d.reassigning()
    assert d.throttle_configs() == before


async def test_a_cancel_inside_a_step_restores_the_replica_order(kafka_mode: str) -> None:
    d = daemon([[1, 2, 3]], kafka_mode=kafka_mode)
    plan_id = await d.submit(plan_of({("t", 0): [2, 3, 4]}))  # one step: drop 1, add 4
    await d.run(lambda: bool(d.reassigning()))
    await d.controller.cancel()
    assert await ended(d, plan_id) is PlanStatus.CANCELLED
    assert d.replicas("t", 0) == [1, 2, 3], "the preferred leader (1) is unchanged"
    partition = d.sim.topics["t"].partitions[0]
    assert sorted(partition.isr) == [1, 2, 3] and partition.leader == 1


async def test_a_cancel_never_reverts_a_step_with_no_original_replica_in_sync(kafka_mode: str) -> None:
    """[1,2,3] -> [4,5,6]: 4 is added and in sync when 2, 3 and then 1 stop, so 4 leads; 1 comes back, not yet
    in sync, and the plan is cancelled. Reverting now leaves only 1, 2, 3, none in sync: KRaft refuses
    (`PartitionReassignmentRevert`: it would need an unclean election), ZooKeeper mode accepts and the
    partition has no leader until an unclean election (`KafkaController.onPartitionReassignment`)."""
    d = daemon([[1, 2, 3]], kafka_mode=kafka_mode)
    partition = d.sim.topics["t"].partitions[0]
    plan_id = await d.submit(plan_of({("t", 0): [4, 5, 6]}))
    await d.run(lambda: bool(d.reassigning()), seconds=60)
    d.sim.stop_broker(2)
    d.sim.stop_broker(3)
    await d.run(lambda: 4 in partition.isr, seconds=600)
    d.sim.stop_broker(1)
    await d.cycle()
    d.sim.start_broker(1)
    assert partition.isr == [4] and partition.leader == 4 and d.reassigning()
    sent = len(d.admin.calls)
    await d.controller.cancel()
    await d.cycle()
    assert partition.leader == 4, "the revert waits for an original replica to be in sync"
    reverts = [args for name, args in d.admin.calls[sent:] if name == "alter_partition_reassignments"]
    assert not reverts, "nothing sent that KRaft refuses or that leaves ZooKeeper mode without a leader"
    waiting = d.controller.plan_status(plan_id)["waiting"]
    assert [(w["partition"], w["reason"]) for w in waiting] == [(0, "unsafe_revert")], waiting
    assert "in sync" in waiting[0]["detail"]
    d.sim.start_broker(2)
    d.sim.start_broker(3)
    assert await ended(d, plan_id) is PlanStatus.CANCELLED
    assert d.replicas("t", 0) in ([1, 2, 3], [4, 5, 6])
    assert partition.leader != -1 and sorted(partition.isr) == sorted(partition.replicas)


async def test_a_step_whose_new_broker_stops_before_it_is_sent_waits_for_it(kafka_mode: str) -> None:
    """Broker 4 stops between the read and the step's send: KRaft takes the step and it waits for 4; ZooKeeper
    mode refuses it ("Replica assignment has brokers that are not alive", `KafkaController.validateReplicas`)
    and the daemon shows the refusal, then waits for 4 without sending it again; both end once 4 is back."""
    d = daemon([[1, 2, 3]], kafka_mode=kafka_mode)
    plan_id = await d.submit(plan_of({("t", 0): [2, 3, 4]}))

    def stop_4_before_the_send(effect: Effect) -> None:
        if isinstance(effect, Reassign) and 4 in d.sim.brokers and d.sim.brokers[4].online:
            d.sim.stop_broker(4)

    d.controller.effect_hook = stop_4_before_the_send
    await d.cycle()
    d.controller.effect_hook = None
    assert not d.sim.brokers[4].online
    if kafka_mode == "zookeeper":
        waiting = d.controller.plan_status(plan_id)["waiting"]
        assert [w["reason"] for w in waiting] == ["refused"] and "not alive" in waiting[0]["detail"], waiting
    await cycles(d, 24)  # two minutes of cluster time
    sent = [a for name, a in d.admin.calls if name == "alter_partition_reassignments"]
    assert len(sent) == 1, f"sent once, never again while broker 4 is down: {sent}"
    status = d.controller.plan_status(plan_id)
    assert status["state"] == "running"
    if kafka_mode == "zookeeper":
        assert not d.reassigning()
        assert [w["reason"] for w in status["waiting"]] == ["offline_target"], status["waiting"]
    else:
        assert d.reassigning(), "accepted: the move waits for broker 4 in Kafka"
    d.sim.start_broker(4)
    assert await ended(d, plan_id) is PlanStatus.COMPLETED
    assert d.replicas("t", 0) == [2, 3, 4]


# -- 2. a throttle written to a broker that goes down and comes back is removed ----------------------


async def _bounce(broker: int, kafka_mode: str) -> None:
    d = daemon([[1, 2, 3], [2, 3, 1]], size=2_000 * MB, kafka_mode=kafka_mode)
    before = d.throttle_configs()
    plan_id = await d.submit(plan_of({("t", 0): [4, 2, 3], ("t", 1): [2, 3, 4]}))
    await d.run(lambda: f"broker {broker}" in d.throttle_configs(), seconds=600)
    d.sim.stop_broker(broker)
    for _ in range(48):  # four minutes of cluster time
        await d.cycle()
    d.sim.start_broker(broker)
    assert await ended(d, plan_id) is PlanStatus.COMPLETED
    assert d.throttle_configs() == before, "every throttle config byte-identical to before the plan"
    assert not await d.journal(EventKind.FOREIGN_CHANGE), "our own writes are never someone else's"


async def test_a_receiving_broker_that_bounces_keeps_no_throttle(kafka_mode: str) -> None:
    await _bounce(4, kafka_mode)


async def test_a_serving_broker_that_bounces_keeps_no_throttle(kafka_mode: str) -> None:
    await _bounce(3, kafka_mode)


# -- 3. a cluster outage is visible ---------------------------------------------------------------------


async def test_a_cluster_outage_shows_in_status_readiness_and_metrics() -> None:
    d = daemon([[1, 2, 3]], size=4_000 * MB)
    await d.submit(plan_of({("t", 0): [4, 2, 3]}))
    await d.run(lambda: bool(d.reassigning()))
    for b in list(d.sim.brokers):
        d.sim.stop_broker(b)
    for _ in range(12):  # a minute of cluster time
        await d.cycle()
    status = d.controller.plan_status()
    assert status["cluster"]["reachable"] is False
    assert status["cluster"]["since"] is not None
    assert d.controller.readiness()["ready"] is False
    assert d.controller.metrics["reassignd_cluster_reachable"]._value.get() == 0
    for b in list(d.sim.brokers):
        d.sim.start_broker(b)
    await d.cycle()
    status = d.controller.plan_status()
    assert status["cluster"] == {
        "reachable": True,
        "since": status["cluster"]["since"],
        "unreachable_brokers": [],
        "error": None,
    }
    assert d.controller.metrics["reassignd_cluster_reachable"]._value.get() == 1


# -- 4. status says what is true -----------------------------------------------------------------------


async def test_moves_held_by_a_limit_are_listed_as_waiting_with_the_limit() -> None:
    d = daemon(
        [[1, 2, 3]] * 6,
        limits={"reassignment.max.incoming.replica.movements.per.broker": 1},
    )
    await d.submit(plan_of({("t", p): [4, 2, 3] for p in range(6)}))
    await d.run(lambda: bool(d.reassigning()))
    await d.cycle()
    status = d.controller.plan_status()
    progress = status["progress"]
    assert progress["partitions_in_flight"] == 1
    assert progress["partitions_waiting"] == 5
    assert len(status["waiting"]) == 5
    assert all("incoming" in w["detail"] and "broker 4" in w["detail"] for w in status["waiting"])


async def test_each_step_starts_once_even_when_a_read_is_torn() -> None:
    """The adapter reads metadata, then the reassignments a moment later: a step completing in between is
    seen as replicas [target + removed] with no reassignment. That is not a cancelled step."""
    d = daemon([[1, 2, 3], [2, 3, 1], [3, 1, 2]], size=100 * MB)
    d.admin.read_skew = 3.0
    plan_id = await d.submit(plan_of({("t", 0): [4, 2, 3], ("t", 1): [2, 3, 5], ("t", 2): [3, 6, 2]}))
    assert await ended(d, plan_id) is PlanStatus.COMPLETED
    started = await d.journal(EventKind.STEP_STARTED)
    assert replayed_steps(started) == []
    assert not await d.journal(EventKind.STEP_CANCELLED), "no step was cancelled"
    assert d.controller.metrics["reassignd_steps_started_total"]._value.get() == len(started)


async def test_total_bytes_are_fixed_at_the_start_and_the_percentage_never_falls() -> None:
    d = daemon([[1, 2, 3], [2, 3, 1]], size=1_000 * MB, produce=2 * MB)
    plan_id = await d.submit(plan_of({("t", 0): [4, 2, 3], ("t", 1): [2, 3, 4]}))
    totals, percents = set(), []
    while (await d.status_of(plan_id)) is not PlanStatus.COMPLETED:
        await d.cycle()
        progress = d.controller.plan_status(plan_id)["progress"]
        if progress["bytes_total"] is not None:
            totals.add(progress["bytes_total"])
            percents.append(progress["percent"])
    assert len(totals) == 1
    assert percents == sorted(percents) and percents[-1] == 100.0


async def test_the_eta_is_frozen_while_paused() -> None:
    d = daemon([[1, 2, 3]], size=4_000 * MB)
    plan_id = await d.submit(plan_of({("t", 0): [4, 2, 3]}))
    await d.run(lambda: d.controller.plan_status(plan_id)["progress"]["eta_seconds"] is not None, seconds=60)
    await d.controller.pause()
    await d.cycle()
    eta = d.controller.plan_status(plan_id)["progress"]["eta_seconds"]
    for _ in range(10):
        await d.cycle()
        assert d.controller.plan_status(plan_id)["progress"]["eta_seconds"] == eta


async def test_partitions_of_a_deleted_topic_count_as_dropped_not_done() -> None:
    d = daemon([[1, 2, 3], [2, 3, 1]], size=1_000 * MB)
    plan_id = await d.submit(plan_of({("t", 0): [4, 2, 3], ("t", 1): [2, 3, 4]}))
    await d.run(lambda: bool(d.reassigning()))
    d.sim.delete_topic("t")
    assert await ended(d, plan_id) is PlanStatus.COMPLETED
    progress = d.controller.plan_status(plan_id)["progress"]
    assert progress["partitions_dropped"] == 2
    assert progress["partitions_done"] == 0


async def test_a_finished_plan_keeps_its_figures_across_a_restart() -> None:
    d = daemon([[1, 2, 3]], size=200 * MB)
    plan_id = await d.submit(plan_of({("t", 0): [4, 2, 3]}))
    assert await ended(d, plan_id) is PlanStatus.COMPLETED
    figures = d.controller.plan_status(plan_id)["progress"]
    d.crash()
    await d.controller.start()
    again = d.controller.plan_status(plan_id)["progress"]
    assert again["bytes_total"] == figures["bytes_total"] and again["bytes_total"] > 0
    assert again["bytes_moved"] == figures["bytes_moved"]


async def test_a_plan_event_goes_out_once_the_status_says_it() -> None:
    """A subscriber that reads the plan's status on each event (an MQTT consumer, a script) finds what the
    event says: `plan.paused` with the plan paused, `plan.completed` with it completed. Events went out as
    their commit landed, before the status views were published (a fresh-clone run read "running" on
    `plan.paused`)."""
    d = daemon([[1, 2, 3]], size=400 * MB)
    plan_id = await d.submit(plan_of({("t", 0): [4, 2, 3]}))
    seen: list[tuple[str, str]] = []

    def read_status_on(event: dict[str, Any]) -> None:
        if event["event"] in {"plan.paused", "plan.resumed", "plan.completed"}:
            seen.append((event["event"], d.controller.plan_status(plan_id)["state"]))

    d.controller.outbox.send = read_status_on
    await d.run(lambda: bool(d.reassigning()))
    await d.controller.pause()
    await d.controller.resume()
    assert await ended(d, plan_id) is PlanStatus.COMPLETED
    assert seen == [("plan.paused", "paused"), ("plan.resumed", "running"), ("plan.completed", "completed")]

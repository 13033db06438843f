"""Self-healing, gated by rehearsal (issue 29): a broker offline past `self.healing.broker.failure.seconds`
becomes an anomaly whose fix (its drain plan) is rehearsed, checked against the operator's gates, then
proposed or queued. In process, over the simulator's model in virtual time."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any

import pytest

from reassignd.cli.anomalies import described
from reassignd.cluster.errors import ClusterCallError, error_for_code
from reassignd.daemon.app import prune_history
from reassignd.daemon.controller import Controller
from reassignd.daemon.service import ServiceError
from reassignd.engine.anomalies import AnomalyKind, HealingMode, HealingSettings
from reassignd.engine.detectors import balance_loads, byte_loads, eligible_brokers
from reassignd.model import TopicPartition
from reassignd.placement.balance import outside_band
from reassignd.store.base import EventKind, PlanStatus
from tests.daemon.inprocess import InProcessDaemon

MB = 1_000_000
RACKS = {1: "/r1", 2: "/r1", 3: "/r2", 4: "/r2", 5: "/r3", 6: "/r3"}
LIMITS: dict[str, Any] = {
    "leader.reassignment.throttled.rate": 20 * MB,
    "follower.reassignment.throttled.rate": 20 * MB,
}
FAILURE_SECONDS = 60.0


T_TOPIC: dict[str, Any] = {
    "name": "t",
    "partitions": 4,
    "replication_factor": 3,
    "partition_bytes": 200 * MB,
    "produce_bytes_per_sec": 10_000.0,
    "assignment": [[1, 3, 5], [3, 1, 6], [5, 4, 1], [2, 4, 6]],
}
"""The topic both scenarios spread over three racks; broker 1 holds one replica of each of t-0..t-2."""


def daemon(mode: HealingMode, **gates: Any) -> InProcessDaemon:
    scenario = {
        "seed": 3,
        "brokers": [{"id": b, "rack": r} for b, r in sorted(RACKS.items())],
        "topics": [
            T_TOPIC,
            {  # its only replica on the broker that dies: nothing can copy it until the broker is back
                "name": "solo",
                "partitions": 1,
                "replication_factor": 1,
                "partition_bytes": 10 * MB,
                "assignment": [[1]],
            },
        ],
    }
    settings = HealingSettings(mode, broker_failure_seconds=FAILURE_SECONDS, cooldown_seconds=0.0, **gates)
    return InProcessDaemon(scenario, LIMITS, healing=settings)


async def checked_for(d: InProcessDaemon, seconds: float) -> None:
    """Cycles with a self-healing check after each, for `seconds` of cluster time."""
    deadline = d.sim.now + seconds
    while d.sim.now < deadline:
        await d.cycle()
        await d.controller.check_anomalies()


def the_anomaly(d: InProcessDaemon) -> dict[str, Any]:
    listed = d.controller.anomalies()["anomalies"]
    assert len(listed) == 1, listed
    return dict(listed[0])


def spans_three_racks(d: InProcessDaemon) -> bool:
    return all(len({RACKS[b] for b in d.replicas("t", p)}) == 3 for p in range(4))


async def test_a_dead_broker_is_proposed_drained_after_approval_and_the_anomaly_is_fixed() -> None:
    d = daemon(HealingMode.PROPOSE)
    await d.controller.start()
    before = d.throttle_configs()
    d.sim.stop_broker(1)
    await checked_for(d, FAILURE_SECONDS - 10)
    assert d.controller.anomalies()["anomalies"] == []  # not yet: the broker may come back
    await checked_for(d, 20)
    proposed = the_anomaly(d)
    assert proposed["state"] == "proposed" and proposed["brokers"] == [1], proposed
    rehearsal = proposed["proposal"]["rehearsal"]
    assert rehearsal["finished"] and rehearsal["partitions"] == 3 and rehearsal["rack_spread_worse"] == 0
    assert proposed["proposal"]["unrecoverable"] == ["solo-0"]
    assert "solo-0" in proposed["reason"]
    assert d.controller.records == {}  # propose: nothing queued before the operator says so

    approved = await d.controller.approve_anomaly(proposed["id"])
    assert approved["state"] == "executing" and approved["plan_id"]
    assert approved["reason"] == f"approved by an operator; {proposed['reason']}"  # what it leaves out kept
    await d.run(seconds=3600)
    await d.controller.check_anomalies()
    assert the_anomaly(d)["state"] == "fixed"
    assert await d.status_of(approved["plan_id"]) is PlanStatus.COMPLETED
    assert all(1 not in d.replicas("t", p) for p in range(4)) and spans_three_racks(d)
    assert d.replicas("solo", 0) == [1]  # left for the broker's return
    assert d.throttle_configs() == before
    journaled = [e.data["state"] for e in await d.journal(EventKind.ANOMALY)]
    assert journaled == ["proposed", "executing", "fixed"], journaled  # `reassignd history --kind anomaly`


async def test_a_fix_is_rehearsed_at_the_daemons_cycle_interval_with_the_produce_rates_since_its_onset() -> (
    None
):
    """The rehearsal the gates judge steps as the daemon does and counts what producers write while the
    fix runs: it stepped every 5 s whatever `controller.cycle.interval.seconds` said, with no producer, so
    `self.healing.max.duration.seconds` judged a figure that could only be too short."""
    d = daemon(HealingMode.PROPOSE, cycle_interval_seconds=10.0)
    await d.controller.start()
    d.sim.stop_broker(1)
    await checked_for(d, FAILURE_SECONDS + 10)
    rehearsal = the_anomaly(d)["proposal"]["rehearsal"]
    assert rehearsal["cycle_interval_seconds"] == 10.0
    # t-0..t-2 each lose their replica on broker 1 and are written at 10 kB/s (T_TOPIC), measured from the
    # check that first saw the broker down to the proposal's read, a minute on
    assert rehearsal["plan_produce_bytes_per_sec"] == pytest.approx(30_000, rel=0.1), rehearsal
    assert rehearsal["produce_measured_seconds"] >= FAILURE_SECONDS, rehearsal


async def test_an_onset_read_that_fails_is_logged_and_measured_from_a_later_check() -> None:
    """The check that first sees a broker down reads its partitions' sizes (the onset of the produce
    rates): a cluster that cannot answer it is logged and read again at the next check, as the proposal's
    read is; it did not end the check with the error."""
    d = daemon(HealingMode.PROPOSE)
    await d.controller.start()
    cluster = d.controller.healing.host.cluster
    read, failed = cluster.snapshot, []

    async def failing_once(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("with_sizes") and not failed:
            failed.append(kwargs["with_sizes"])
            raise ClusterCallError("describe_log_dirs", error_for_code(7, "Request timed out."))
        return await read(*args, **kwargs)

    cluster.snapshot = failing_once  # type: ignore[method-assign]
    d.sim.stop_broker(1)
    await d.cycle()
    await d.controller.check_anomalies()
    assert failed, "no onset read"
    await checked_for(d, FAILURE_SECONDS + 10)
    rehearsal = the_anomaly(d)["proposal"]["rehearsal"]
    assert rehearsal["plan_produce_bytes_per_sec"] == pytest.approx(30_000, rel=0.1), rehearsal
    assert rehearsal["produce_measured_seconds"] >= FAILURE_SECONDS - 10, rehearsal


async def test_a_conditions_rates_are_measured_from_its_own_onset_not_an_older_conditions() -> None:
    """Broker 2 down for long (its fix proposed, never approved), then broker 1: broker 1's fix is
    rehearsed with its own partitions' rates measured since broker 1 went down. The onset was the one read
    when broker 2 went down, of broker 2's partitions only: broker 1's had no rate (`producers at 0 B/s`),
    over a window as old as broker 2's condition."""
    d = daemon(HealingMode.PROPOSE)
    await d.controller.start()
    d.sim.stop_broker(2)
    await checked_for(d, 10 * FAILURE_SECONDS)
    assert the_anomaly(d)["state"] == "proposed"
    d.sim.stop_broker(1)
    await checked_for(d, FAILURE_SECONDS + 10)
    (fix,) = [a for a in d.controller.anomalies()["anomalies"] if a["brokers"] == [1]]
    rehearsal = fix["proposal"]["rehearsal"]
    assert rehearsal["plan_produce_bytes_per_sec"] == pytest.approx(30_000, rel=0.1), rehearsal
    assert FAILURE_SECONDS <= rehearsal["produce_measured_seconds"] <= FAILURE_SECONDS + 20, rehearsal


async def test_every_state_change_of_an_anomaly_is_an_event_for_mqtt() -> None:
    """Issue 29: MQTT events for every state change (`anomaly.<state>`, docs/self-healing.md), each
    naming its anomaly, kind and brokers, the fix's plan once it has one."""
    d = daemon(HealingMode.PROPOSE)
    await d.controller.start()
    events: list[dict[str, Any]] = []
    d.controller.outbox.send = events.append
    d.sim.stop_broker(1)
    await checked_for(d, FAILURE_SECONDS + 10)
    proposed = the_anomaly(d)
    approved = await d.controller.approve_anomaly(proposed["id"])
    await d.run(seconds=3600)
    await d.controller.check_anomalies()
    said = [e for e in events if e["event"].startswith("anomaly.")]
    assert [e["event"] for e in said] == ["anomaly.proposed", "anomaly.executing", "anomaly.fixed"], said
    assert all(e["anomaly"] == proposed["id"] and e["brokers"] == [1] for e in said), said
    assert [e.get("plan") for e in said] == [None, approved["plan_id"], approved["plan_id"]], said


async def test_a_broker_back_before_its_threshold_is_no_anomaly_and_nothing_runs() -> None:
    """Issue 29: a broker back before `self.healing.broker.failure.seconds` -> no action, in either mode;
    a later outage counts from its own start, not from the first one's."""
    d = daemon(HealingMode.EXECUTE)
    await d.controller.start()
    d.sim.stop_broker(1)
    await checked_for(d, FAILURE_SECONDS - 20)
    d.sim.start_broker(1)
    await checked_for(d, 2 * FAILURE_SECONDS)
    assert d.controller.anomalies()["anomalies"] == []
    d.sim.stop_broker(1)
    await checked_for(d, FAILURE_SECONDS - 20)
    assert d.controller.anomalies()["anomalies"] == []
    assert d.controller.records == {} and d.reassigning() == []
    assert await d.journal(EventKind.ANOMALY) == []


async def test_a_broker_back_before_its_fix_starts_expires_the_anomaly() -> None:
    d = daemon(HealingMode.PROPOSE)
    await d.controller.start()
    d.sim.stop_broker(1)
    await checked_for(d, FAILURE_SECONDS + 10)
    anomaly_id = the_anomaly(d)["id"]
    d.sim.start_broker(1)
    await checked_for(d, 10)
    expired = the_anomaly(d)
    assert expired["state"] == "expired" and expired["reason"] == "the broker is back"
    with pytest.raises(ServiceError) as refused:
        await d.controller.approve_anomaly(anomaly_id)
    assert refused.value.code == "conflict"
    assert d.controller.records == {}


@pytest.mark.parametrize(
    ("gate", "said"),
    [
        ({"max_partitions": 2}, "self.healing.max.partitions"),
        ({"max_bytes": 100 * MB}, "self.healing.max.bytes"),
        ({"max_duration_seconds": 5.0}, "self.healing.max.duration.seconds"),
    ],
)
async def test_a_fix_over_the_operators_gates_is_not_run_and_says_which(
    gate: dict[str, Any], said: str
) -> None:
    d = daemon(HealingMode.EXECUTE, **gate)
    await d.controller.start()
    d.sim.stop_broker(1)
    await checked_for(d, FAILURE_SECONDS + 10)
    ignored = the_anomaly(d)
    assert ignored["state"] == "ignored", ignored
    assert said in ignored["reason"], ignored["reason"]
    assert d.controller.records == {}


async def test_a_fix_refused_by_a_gate_is_proposed_anew_once_a_reload_changes_the_gates() -> None:
    """The guide's reader leaves `self.healing.max.bytes` at its default, the fix is `ignored`, and they
    raise the gate and reload (`kill -HUP`): the broker is still down, so its condition counts anew and a
    new anomaly is proposed after its threshold, judged by the new gates, as a restart would have it. A
    reload that leaves the gates as they were proposes nothing anew."""
    d = daemon(HealingMode.PROPOSE, max_partitions=2)
    await d.controller.start()
    d.sim.stop_broker(1)
    await checked_for(d, FAILURE_SECONDS + 10)
    ignored = the_anomaly(d)
    assert ignored["state"] == "ignored" and "self.healing.max.partitions" in ignored["reason"], ignored
    same = HealingSettings(HealingMode.PROPOSE, broker_failure_seconds=FAILURE_SECONDS, cooldown_seconds=0.0)
    d.controller.healing.reload(replace(same, max_partitions=2), d.controller.healing.interval)
    await checked_for(d, FAILURE_SECONDS + 10)
    assert the_anomaly(d)["id"] == ignored["id"]  # the gates did not change: nothing anew

    d.controller.healing.reload(same, d.controller.healing.interval)
    await checked_for(d, FAILURE_SECONDS + 10)
    listed = {a["id"]: a for a in d.controller.anomalies()["anomalies"]}
    assert listed.pop(ignored["id"])["state"] == "ignored"
    (proposed,) = listed.values()
    assert proposed["state"] == "proposed" and proposed["brokers"] == [1], proposed
    assert d.controller.records == {}
    approved = await d.controller.approve_anomaly(proposed["id"])
    assert approved["state"] == "executing", approved


async def test_execute_mode_queues_the_fix_itself_and_a_crash_mid_fix_queues_no_second_plan() -> None:
    d = daemon(HealingMode.EXECUTE)
    await d.controller.start()
    d.sim.stop_broker(1)
    await checked_for(d, FAILURE_SECONDS + 10)
    executing = the_anomaly(d)
    assert executing["state"] == "executing", executing
    left = "solo-0 left as they are: no live replica to copy from"
    assert executing["reason"] == f"approved by self.healing.mode = execute; {left}", executing
    d.crash()  # kill -9 mid-fix: the new daemon knows the fix only from its plan
    await d.controller.start()
    await checked_for(d, 30)
    assert [a["state"] for a in d.controller.anomalies()["anomalies"]] == ["executing"]
    assert len(d.controller.records) == 1
    await d.run(seconds=3600)
    await d.controller.check_anomalies()
    assert the_anomaly(d)["state"] == "fixed"
    assert all(1 not in d.replicas("t", p) for p in range(4)) and spans_three_racks(d)


async def test_an_approved_fix_is_checked_again_when_queued() -> None:
    """Between the proposal and the approval an operator decommissioned a broker the fix fills: the fix
    is checked as any plan is when queued, refused, and the anomaly says why; nothing is queued."""
    d = daemon(HealingMode.PROPOSE)
    await d.controller.start()
    d.sim.stop_broker(1)
    await checked_for(d, FAILURE_SECONDS + 10)
    proposed = the_anomaly(d)
    before = {("t", p): d.replicas("t", p) for p in range(4)}
    fills = {
        b
        for row in proposed["proposal"]["plan"]["partitions"]
        for b in row["replicas"]
        if b not in before[(row["topic"], row["partition"])]
    }
    await d.controller.decommission(min(fills), {})
    ignored = await d.controller.approve_anomaly(proposed["id"])
    assert ignored["state"] == "ignored" and "no longer holds" in ignored["reason"], ignored
    assert str(min(fills)) in ignored["reason"]
    assert d.controller.records == {}


async def test_a_reload_checks_at_once_not_after_the_old_interval() -> None:
    """Turned on by a reload, self-healing checks at once: the guide's daemon slept out the old 30 s
    interval first, and its anomaly came 30 s later than the guide said."""
    d = daemon(HealingMode.OFF)
    await d.controller.start()
    d.controller.healing.interval = 3600.0
    watcher = asyncio.create_task(d.controller.watch_anomalies())
    try:
        await asyncio.sleep(0.05)  # the first check (off) ran; the watcher sleeps its hour
        d.sim.stop_broker(1)
        d.controller.healing.reload(HealingSettings(HealingMode.PROPOSE, broker_failure_seconds=0.0), 3600.0)
        # at once: seconds, not the hour; the proposal's rehearsal took over 0.5 s once in a loaded run
        deadline = time.monotonic() + 10
        while [a["state"] for a in d.controller.anomalies()["anomalies"]] != ["proposed"]:
            assert time.monotonic() < deadline, d.controller.anomalies()
            await asyncio.sleep(0.05)
    finally:
        watcher.cancel()


async def test_a_new_empty_broker_is_filled_once_its_detector_is_on() -> None:
    """`new_broker` in `self.healing.detectors`: a running broker with no replica for
    `new_broker_seconds` gets its share of replicas through a rehearsed, approved fill."""
    scenario = daemon(HealingMode.OFF).scenario
    brokers = [*scenario["brokers"], {"id": 7, "rack": "/r1"}]
    settings = HealingSettings(
        HealingMode.PROPOSE,
        detectors=frozenset(AnomalyKind),
        new_broker_seconds=FAILURE_SECONDS,
        cooldown_seconds=0.0,
    )
    d = InProcessDaemon({**scenario, "brokers": brokers}, LIMITS, healing=settings)
    await d.controller.start()
    await checked_for(d, FAILURE_SECONDS + 10)
    proposed = the_anomaly(d)
    assert (proposed["kind"], proposed["brokers"], proposed["state"]) == ("new_broker", [7], "proposed")
    approved = await d.controller.approve_anomaly(proposed["id"])
    assert approved["state"] == "executing"
    await d.run(seconds=3600)
    await d.controller.check_anomalies()
    assert the_anomaly(d)["state"] == "fixed"
    held = [(t, p) for t in ("t", "solo") for p in range(4 if t == "t" else 1) if 7 in d.replicas(t, p)]
    assert held, "broker 7 still holds nothing"
    (record,) = d.controller.records.values()
    assert record.options["name"] == "self-healing: fill broker 7"


# -- the partition-level and balance kinds -----------------------------------------------------------------

BANNED = 7
"""A decommissioned broker in the first rack with no replica: a fix that ignored its role would pick it
first (the emptiest broker, in the rack that has room)."""


def kinds_daemon(
    kinds: set[AnomalyKind], mode: HealingMode = HealingMode.PROPOSE, *, extra: list[Any] | None = None
) -> InProcessDaemon:
    scenario = daemon(HealingMode.OFF).scenario
    brokers = [*scenario["brokers"], {"id": BANNED, "rack": "/r3"}]
    settings = HealingSettings(
        mode,
        detectors=frozenset(kinds),
        violation_seconds=FAILURE_SECONDS,
        under_replicated_seconds=FAILURE_SECONDS,
        cooldown_seconds=0.0,
    )
    topics = [*scenario["topics"], *(extra or [])]
    return InProcessDaemon({**scenario, "brokers": brokers, "topics": topics}, LIMITS, healing=settings)


async def detected_fixed(d: InProcessDaemon) -> dict[str, Any]:
    """Decommission the banned broker, wait past the threshold: the fix proposed, approved, run, fixed."""
    await d.controller.start()
    await d.controller.decommission(BANNED, {})
    before = d.throttle_configs()
    await checked_for(d, FAILURE_SECONDS - 10)
    assert d.controller.anomalies()["anomalies"] == []  # not yet: under the threshold
    await checked_for(d, 20)
    proposed = the_anomaly(d)
    assert proposed["state"] == "proposed", proposed
    assert proposed["proposal"]["rehearsal"]["finished"]
    approved = await d.controller.approve_anomaly(proposed["id"])
    assert approved["state"] == "executing" and approved["plan_id"], approved
    await d.run(seconds=3600)
    await d.controller.check_anomalies()
    fixed = the_anomaly(d)
    assert fixed["state"] == "fixed", fixed
    assert await d.status_of(approved["plan_id"]) is PlanStatus.COMPLETED
    assert d.throttle_configs() == before
    everything = [("t", p) for p in range(4)] + [("solo", 0)]
    everything += [("spread", p) for p in range(2) if "spread" in {t["name"] for t in d.scenario["topics"]}]
    assert all(BANNED not in d.replicas(t, p) for t, p in everything)
    return proposed


SPREAD = {  # two replicas in rack /r1 while /r3 has room: spans fewer racks than the placer gives
    "name": "spread",
    "partitions": 2,
    "replication_factor": 3,
    "partition_bytes": 20 * MB,
    "assignment": [[3, 1, 2], [4, 1, 5]],
}


async def test_a_partition_spanning_fewer_racks_than_it_could_is_re_placed_keeping_the_rest() -> None:
    d = kinds_daemon({AnomalyKind.RACK_SPREAD}, extra=[SPREAD])
    proposed = await detected_fixed(d)
    assert (proposed["kind"], proposed["partitions"], proposed["brokers"]) == (
        "rack_spread",
        ["spread-0"],
        [1, 2, 3],
    )
    assert proposed["id"].startswith("rack-spread-cluster-")
    (row,) = proposed["proposal"]["plan"]["partitions"]
    assert row["replicas"][:2] == [3, 1] and row["replicas"][2] in (5, 6)  # the last of /r1 moved, to /r3
    assert len({{**RACKS, BANNED: "/r3"}[b] for b in d.replicas("spread", 0)}) == 3
    assert d.replicas("spread", 1) == [4, 1, 5]
    (record,) = d.controller.records.values()
    assert record.options["name"] == "self-healing: re-place 1 partition(s)"


@pytest.mark.parametrize("kind", [AnomalyKind.REPLICA_BALANCE, AnomalyKind.LEADER_BALANCE])
async def test_a_broker_beyond_a_balance_goals_threshold_gets_that_goals_plan(kind: AnomalyKind) -> None:
    """Broker 1 holds 4 replicas and 2 preferred leaderships, broker 2 one replica, 4 and 6 no preferred
    leadership: outside the band of either goal at 10%. The banned broker 7, empty, is never filled."""
    d = kinds_daemon({kind})
    proposed = await detected_fixed(d)
    assert proposed["kind"] == kind.value and proposed["partitions"] == [] and 1 in proposed["brokers"]
    snapshot = d.sim.to_snapshot()
    eligible = eligible_brokers(snapshot, [BANNED])
    assert outside_band(balance_loads(snapshot, eligible, kind), 0.10)[1] == []
    assert spans_three_racks(d)
    await checked_for(d, FAILURE_SECONDS + 10)
    assert [a["state"] for a in d.controller.anomalies()["anomalies"]] == ["fixed"]  # mended: none anew


async def test_under_replicated_partitions_with_their_brokers_online_get_an_election_or_stay_detected() -> (
    None
):
    """Broker 1 stops a moment: t-0's lead goes to broker 3, and stays there once 1 is back in sync.
    Then broker 5 slows to a trickle: t-0 [1, 3, 5] and urp-0 [3, 5, 2] fall out of sync with every
    broker online. t-0's preferred (1) is in sync and not leading: elected. urp-0's leader is its
    preferred: nothing moves; nor for t-0 once elected: the anomaly seen anew says what to check."""
    lagging = {
        "name": "urp",
        "partitions": 1,
        "replication_factor": 3,
        "partition_bytes": MB,
        "produce_bytes_per_sec": 10_000.0,
        "assignment": [[3, 5, 2]],
    }
    d = kinds_daemon({AnomalyKind.UNDER_REPLICATED}, HealingMode.EXECUTE, extra=[lagging])
    await d.controller.start()
    d.sim.stop_broker(1)
    await checked_for(d, 5)
    d.sim.start_broker(1)
    await checked_for(d, 30)
    assert d.sim.to_snapshot().partitions[TopicPartition("t", 0)].leader != 1
    d.sim.set_network(5, 1.0, None)
    await checked_for(d, 3 * FAILURE_SECONDS)
    listed = d.controller.anomalies()["anomalies"]
    executing = [a for a in listed if a["plan_id"]]
    assert executing and executing[0]["kind"] == "under_replicated", [
        (a["state"], a["reason"]) for a in listed
    ]
    (row,) = executing[0]["proposal"]["plan"]["partitions"]
    assert (row["topic"], row["partition"], row["replicas"]) == ("t", 0, [1, 3, 5])
    await d.run(seconds=600)
    await checked_for(d, 2 * FAILURE_SECONDS)
    assert d.sim.to_snapshot().partitions[TopicPartition("t", 0)].leader == 1  # elected, nothing moved
    assert d.replicas("t", 0) == [1, 3, 5] and d.replicas("urp", 0) == [3, 5, 2]
    states = [a["state"] for a in d.controller.anomalies()["anomalies"]]
    assert states == ["fixed", "detected"], states
    still = d.controller.anomalies()["anomalies"][-1]
    assert still["partitions"] == ["t-0", "urp-0"] and "no fix moves data" in still["reason"], still
    assert "[5] out of sync" in still["reason"] and "throttle" in still["reason"]


async def test_a_proposal_the_cluster_moved_past_is_not_queued_on_approval_and_is_proposed_anew() -> None:
    """A fix is planned, rehearsed and gated on the cluster as it was when proposed; the operator may
    approve it much later. On reassignd sim a leader-balance fix proposed as `0 B` (a reorder of
    uneven-2 [1, 2, 4] to [4, 1, 2]) was approved after the rack-spread fix had moved uneven-2 to
    [1, 7, 4]: the stale target moved 640 MB back and undid the rack-spread fix (a new rack-spread
    anomaly followed). Here an operator's tool moves the partition a rack-spread fix names between the
    proposal and the approval: the stale plan must not be queued, and the condition, still there, is
    proposed anew from the cluster as it is."""
    d = kinds_daemon({AnomalyKind.RACK_SPREAD}, extra=[SPREAD])
    await d.controller.start()
    await d.controller.decommission(BANNED, {})
    await checked_for(d, FAILURE_SECONDS + 10)
    proposed = the_anomaly(d)
    assert proposed["state"] == "proposed" and proposed["partitions"] == ["spread-0"], proposed
    await d.admin.alter_partition_reassignments({TopicPartition("spread", 0): [2, 1, 4]})
    await d.run(lambda: not d.reassigning(), seconds=600)
    assert d.replicas("spread", 0) == [2, 1, 4]  # still two replicas in /r1: still uneven

    answer = await d.controller.approve_anomaly(proposed["id"])
    assert answer["state"] == "ignored" and "changed since" in answer["reason"], answer
    assert d.controller.records == {}  # the stale target was not queued
    assert d.replicas("spread", 0) == [2, 1, 4]

    await checked_for(d, FAILURE_SECONDS + 10)
    anew = [a for a in d.controller.anomalies()["anomalies"] if a["id"] != proposed["id"]]
    assert [a["state"] for a in anew] == ["proposed"], d.controller.anomalies()
    (row,) = anew[0]["proposal"]["plan"]["partitions"]
    assert row["replicas"] in ([2, 5, 4], [2, 6, 4]), row  # the last of /r1 moved to /r3, planned on now


async def failover(d: InProcessDaemon, standby: Controller | None = None) -> Controller:
    """The standby on the same store takes over: the old leader loses its leadership, then the standby
    (a new daemon, whose memory holds none of the old one's anomalies, unless given) wins the election.
    Returns the old leader, now standing by."""
    old = d.controller
    if standby is None:
        standby = d._new_controller()
        await standby.leadership_changed(False, "http://leader")
    await d.controller.leadership_changed(False, "http://standby")
    await standby.leadership_changed(True)
    d.controller = standby
    return old


async def test_a_failover_mid_fix_keeps_each_anomaly_and_the_new_leader_carries_on_with_no_second_plan() -> (
    None
):
    """Issue 29: the anomalies are in the state store. A standby that takes over while a fix waits for
    approval lists the same anomaly (id, state, first seen) and queues the fix on approval; a second
    failover while the fix runs finds it executing from the store, and the fix ends `fixed` with one
    plan in all."""
    d = daemon(HealingMode.PROPOSE)
    await d.controller.start()
    d.sim.stop_broker(1)
    await checked_for(d, FAILURE_SECONDS + 10)
    proposed = the_anomaly(d)
    assert proposed["state"] == "proposed", proposed

    await failover(d)
    await checked_for(d, 10)
    after = the_anomaly(d)
    assert (after["id"], after["state"], after["first_seen"]) == (
        proposed["id"],
        "proposed",
        proposed["first_seen"],
    )
    assert after["proposal"] == proposed["proposal"]
    approved = await d.controller.approve_anomaly(proposed["id"])
    assert approved["state"] == "executing" and approved["plan_id"], approved

    await d.run(lambda: bool(d.reassigning()), seconds=600)
    await failover(d)  # mid-fix: its plan is moving
    await checked_for(d, 10)
    executing = the_anomaly(d)
    assert (executing["id"], executing["state"], executing["plan_id"]) == (
        proposed["id"],
        "executing",
        approved["plan_id"],
    )
    await d.run(seconds=3600)
    await d.controller.check_anomalies()
    fixed = the_anomaly(d)
    assert (fixed["id"], fixed["state"], fixed["first_seen"]) == (
        proposed["id"],
        "fixed",
        proposed["first_seen"],
    )
    assert len(d.controller.records) == 1
    assert all(1 not in d.replicas("t", p) for p in range(4)) and spans_three_racks(d)
    journaled = [e.data["state"] for e in await d.journal(EventKind.ANOMALY)]
    assert journaled == ["proposed", "executing", "fixed"], journaled


async def test_a_daemon_leading_again_measures_the_produce_rates_from_its_own_checks_onset() -> None:
    """A daemon that read a condition's onset, stood by while another led (the broker came back meanwhile),
    then leads again as the broker goes down anew: its fix's rates are measured since this outage, not from
    the onset it kept from the last one, minutes before, which it had no check to forget in between."""
    d = daemon(HealingMode.PROPOSE)
    await d.controller.start()
    d.sim.stop_broker(1)
    await checked_for(d, 20)  # the onset read, the condition not yet an anomaly
    first = await failover(d)
    d.sim.start_broker(1)
    await checked_for(d, 10 * FAILURE_SECONDS)
    await failover(d, standby=first)
    d.sim.stop_broker(1)
    await checked_for(d, FAILURE_SECONDS + 10)
    rehearsal = the_anomaly(d)["proposal"]["rehearsal"]
    assert FAILURE_SECONDS <= rehearsal["produce_measured_seconds"] <= FAILURE_SECONDS + 20, rehearsal


async def test_a_restart_keeps_an_anomaly_waiting_for_approval() -> None:
    """kill -9 while a fix waits for approval: the restarted daemon lists it as it was and queues its
    plan, as proposed, on approval; no second anomaly for the same broker."""
    d = daemon(HealingMode.PROPOSE)
    await d.controller.start()
    d.sim.stop_broker(1)
    await checked_for(d, FAILURE_SECONDS + 10)
    proposed = the_anomaly(d)
    d.crash()
    await d.controller.start()
    await checked_for(d, FAILURE_SECONDS + 10)
    assert the_anomaly(d)["id"] == proposed["id"]
    approved = await d.controller.approve_anomaly(proposed["id"])
    assert approved["state"] == "executing", approved
    (record,) = d.controller.records.values()
    plan = proposed["proposal"]["plan"]
    assert len(plan["partitions"]) == 3 and record.partitions == 3


async def test_a_daemon_back_as_leader_reads_the_anomalies_the_other_changed_meanwhile() -> None:
    """A leads and proposes a fix; B takes over and sees the broker back: the anomaly expires. When A
    leads again, its memory says `proposed`: it must read the store, and refuse the approval."""
    d = daemon(HealingMode.PROPOSE)
    await d.controller.start()
    d.sim.stop_broker(1)
    await checked_for(d, FAILURE_SECONDS + 10)
    proposed = the_anomaly(d)
    first = await failover(d)
    d.sim.start_broker(1)
    await checked_for(d, 10)
    assert the_anomaly(d)["state"] == "expired"
    await failover(d, first)
    with pytest.raises(ServiceError) as refused:
        await d.controller.approve_anomaly(proposed["id"])
    assert refused.value.code == "conflict" and "expired" in refused.value.message
    assert d.controller.records == {}


# -- byte balance ------------------------------------------------------------------------------------------

GB = 1000 * MB


def bytes_daemon(mode: HealingMode = HealingMode.PROPOSE, **gates: Any) -> InProcessDaemon:
    """Every broker holds two replicas (the replica band holds), but brokers 1, 3 and 5 hold the big
    partitions: 1 GB each against 20 MB on 2, 4 and 6, far outside the byte band at 10%."""
    scenario = {
        "seed": 5,
        "brokers": [{"id": b, "rack": r} for b, r in sorted(RACKS.items())],
        "topics": [
            {
                "name": "big",
                "partitions": 3,
                "replication_factor": 2,
                "partition_bytes": 500 * MB,
                "assignment": [[1, 3], [3, 5], [5, 1]],
            },
            {
                "name": "small",
                "partitions": 3,
                "replication_factor": 2,
                "partition_bytes": 10 * MB,
                "assignment": [[2, 4], [4, 6], [6, 2]],
            },
        ],
    }
    settings = HealingSettings(
        mode,
        detectors=frozenset({AnomalyKind.BYTE_BALANCE}),
        violation_seconds=FAILURE_SECONDS,
        cooldown_seconds=0.0,
        **gates,
    )
    return InProcessDaemon(scenario, LIMITS, healing=settings)


def bytes_outside(d: InProcessDaemon) -> list[int]:
    snapshot = d.sim.to_snapshot()
    return outside_band(byte_loads(snapshot, eligible_brokers(snapshot, [])), 0.10)[1]


async def test_brokers_beyond_the_byte_band_get_the_planners_size_aware_balance_once_approved() -> None:
    d = bytes_daemon()
    await d.controller.start()
    assert bytes_outside(d) == [1, 2, 3, 4, 5, 6]
    await checked_for(d, FAILURE_SECONDS - 10)
    assert d.controller.anomalies()["anomalies"] == []  # not yet: under the threshold
    await checked_for(d, 20)
    proposed = the_anomaly(d)
    assert (proposed["kind"], proposed["state"], proposed["brokers"]) == (
        "byte_balance",
        "proposed",
        [1, 2, 3, 4, 5, 6],
    ), proposed
    assert proposed["proposal"]["rehearsal"]["finished"]
    assert d.controller.records == {}  # propose: nothing queued before the operator says so
    approved = await d.controller.approve_anomaly(proposed["id"])
    assert approved["state"] == "executing", approved
    await d.run(seconds=3600)
    await d.controller.check_anomalies()
    assert the_anomaly(d)["state"] == "fixed"
    assert bytes_outside(d) == []
    (record,) = d.controller.records.values()
    assert record.options["name"] == "self-healing: byte-balance"
    counts = {b: sum(b in d.replicas(t, p) for t in ("big", "small") for p in range(3)) for b in RACKS}
    assert set(counts.values()) == {2}, counts  # the replica band still holds


async def test_a_byte_balance_fix_over_the_bytes_gate_is_not_run_and_says_so() -> None:
    d = bytes_daemon(HealingMode.EXECUTE, max_bytes=100 * MB)
    await d.controller.start()
    await checked_for(d, FAILURE_SECONDS + 10)
    ignored = the_anomaly(d)
    assert ignored["state"] == "ignored" and "self.healing.max.bytes" in ignored["reason"], ignored
    assert d.controller.records == {}


# -- disk capacity ---------------------------------------------------------------------------------------

VOLUME = 2000 * MB
DISK_THRESHOLD = 0.5


def disk_daemon(mode: HealingMode = HealingMode.PROPOSE, **gates: Any) -> InProcessDaemon:
    """Every broker has one 2 GB volume; broker 1 holds three 400 MB replicas (60% used), the others one
    each (20%): over a 50% threshold only broker 1 is."""
    scenario = {
        "seed": 9,
        "brokers": [
            {"id": b, "rack": r, "log_dirs": [{"path": "/var/lib/kafka", "total_bytes": VOLUME}]}
            for b, r in sorted(RACKS.items())
        ],
        "topics": [
            {
                "name": "big",
                "partitions": 4,
                "replication_factor": 2,
                "partition_bytes": 400 * MB,
                "assignment": [[1, 3], [1, 5], [4, 1], [2, 6]],
            },
        ],
    }
    settings = HealingSettings(
        mode,
        detectors=frozenset({AnomalyKind.DISK_CAPACITY}),
        violation_seconds=FAILURE_SECONDS,
        disk_capacity_threshold=DISK_THRESHOLD,
        cooldown_seconds=0.0,
        **gates,
    )
    return InProcessDaemon(scenario, LIMITS, healing=settings)


async def disk_used(d: InProcessDaemon) -> dict[int, float]:
    snapshot = await d.admin.snapshot(with_sizes=True)
    used: dict[int, list[int]] = {}
    for (broker, _), (total, usable) in snapshot.dir_volumes.items():
        used.setdefault(broker, [0, 0])
        used[broker][0] += total - usable
        used[broker][1] += total
    return {b: u / t for b, (u, t) in sorted(used.items())}


async def test_a_broker_fuller_than_the_disk_threshold_sheds_bytes_onto_brokers_that_stay_under_it() -> None:
    d = disk_daemon()
    await d.controller.start()
    assert [b for b, u in (await disk_used(d)).items() if u > DISK_THRESHOLD] == [1]
    await checked_for(d, FAILURE_SECONDS - 10)
    assert d.controller.anomalies()["anomalies"] == []  # not yet: under the threshold
    await checked_for(d, 20)
    proposed = the_anomaly(d)
    assert (proposed["kind"], proposed["state"], proposed["brokers"]) == ("disk_capacity", "proposed", [1])
    assert proposed["proposal"]["rehearsal"]["finished"]
    assert d.controller.records == {}
    approved = await d.controller.approve_anomaly(proposed["id"])
    assert approved["state"] == "executing", approved
    await d.run(seconds=3600)
    await d.controller.check_anomalies()
    assert the_anomaly(d)["state"] == "fixed"
    used = await disk_used(d)
    assert max(used.values()) <= DISK_THRESHOLD, used
    (record,) = d.controller.records.values()
    assert record.options["name"] == "self-healing: shed-bytes"


async def test_a_disk_capacity_fix_over_the_partitions_gate_is_not_run() -> None:
    d = disk_daemon(HealingMode.EXECUTE, max_partitions=0)
    await d.controller.start()
    await checked_for(d, FAILURE_SECONDS + 10)
    ignored = the_anomaly(d)
    assert ignored["state"] == "ignored" and "self.healing.max.partitions" in ignored["reason"], ignored
    assert d.controller.records == {}


# -- a log dir offline (log_dir_offline) --------------------------------------------------------------------

DIR_SECONDS = 60.0


def dir_daemon(mode: HealingMode, second: str = "/b", **settings: Any) -> InProcessDaemon:
    """Broker 1 has two log dirs: t-0, t-1 and t-2 have their replica on it in /b (`second`), keep-0 in /a
    (its first dir, the metadata log dir: failing /b leaves the broker up, Kafka >= 3.7 with KRaft)."""
    scenario = {
        "seed": 3,
        "brokers": [
            {"id": b, "rack": r, **({"log_dirs": ["/a", second]} if b == 1 else {})}
            for b, r in sorted(RACKS.items())
        ],
        "topics": [
            {
                **T_TOPIC,
                "log_dirs": [
                    [second, "any", "any"],
                    ["any", second, "any"],
                    ["any", "any", second],
                    ["any"] * 3,
                ],
            },
            {
                "name": "keep",
                "partitions": 1,
                "replication_factor": 3,
                "partition_bytes": 10 * MB,
                "assignment": [[1, 4, 6]],
                "log_dirs": [["/a", "any", "any"]],
            },
        ],
    }
    healing = HealingSettings(
        mode,
        detectors=frozenset({AnomalyKind.LOG_DIR_OFFLINE}),
        log_dir_failure_seconds=DIR_SECONDS,
        cooldown_seconds=0.0,
        **settings,
    )
    return InProcessDaemon(scenario, LIMITS, healing=healing)


async def test_a_failed_log_dir_is_moved_off_its_broker_and_every_partition_is_fully_replicated_again() -> (
    None
):
    d = dir_daemon(HealingMode.EXECUTE)
    await d.controller.start()
    before = d.throttle_configs()
    d.sim.fail_log_dir(1, "/b")
    assert d.sim.brokers[1].online
    await checked_for(d, DIR_SECONDS - 10)
    assert d.controller.anomalies()["anomalies"] == []  # not yet: it may come back
    await checked_for(d, 20)
    executing = the_anomaly(d)
    assert executing["state"] == "executing", executing
    assert executing["id"].startswith("log-dir-offline-1_b-") and executing["brokers"] == [1]
    assert executing["partitions"] == ["t-0", "t-1", "t-2"]
    assert executing["proposal"]["rehearsal"]["finished"]
    await d.run(seconds=3600)
    await d.controller.check_anomalies()
    assert the_anomaly(d)["state"] == "fixed"
    assert await d.status_of(executing["plan_id"]) is PlanStatus.COMPLETED
    for p in range(3):
        assert 1 not in d.replicas("t", p)  # off the broker: Kafka can neither move nor delete them there
        assert len(d.replicas("t", p)) == 3
    assert d.sim._logs_in_dir.get((1, "/b"), 0) == 0  # nothing of the failed dir left on broker 1
    assert d.replicas("keep", 0) == [1, 4, 6]  # its replica on broker 1 is in the live dir: left
    for topic in d.sim.topics.values():
        assert all(sorted(p.isr) == sorted(p.replicas) for p in topic.partitions)  # full replication
    assert spans_three_racks(d)
    assert d.throttle_configs() == before
    journaled = [e.data["state"] for e in await d.journal(EventKind.ANOMALY)]
    assert journaled == ["executing", "fixed"], journaled


async def test_the_failed_log_dir_is_named_by_its_path_in_the_anomaly_and_its_fix_plan() -> None:
    """The id holds the dir's path made safe (`1_data_kafka_2`); what a user reads names the path itself."""
    d = dir_daemon(HealingMode.PROPOSE, second="/data/kafka-2")
    await d.controller.start()
    d.sim.fail_log_dir(1, "/data/kafka-2")
    await checked_for(d, DIR_SECONDS + 10)
    proposed = the_anomaly(d)
    assert proposed["id"].startswith("log-dir-offline-1_data_kafka_2-"), proposed
    assert proposed["log_dir"] == "/data/kafka-2"
    assert described(proposed) == "3 partition(s) in failed log dir /data/kafka-2 of broker 1"
    await d.controller.approve_anomaly(proposed["id"])
    (record,) = d.controller.records.values()
    assert (
        record.options["name"]
        == "self-healing: re-target 3 partition(s) off broker 1's log dir /data/kafka-2"
    )


async def test_the_log_dir_check_reads_no_size_until_a_dir_fails_then_only_of_its_broker() -> None:
    d = dir_daemon(HealingMode.PROPOSE)
    await d.controller.start()
    cluster = d.controller.healing.host.cluster
    read, asked = cluster.snapshot, []

    async def recorded(*args: Any, **kwargs: Any) -> Any:
        asked.append(kwargs.get("with_sizes", False))
        return await read(*args, **kwargs)

    cluster.snapshot = recorded  # type: ignore[method-assign]
    await d.controller.check_anomalies()
    assert asked == [False]
    d.sim.fail_log_dir(1, "/b")
    asked.clear()
    await d.controller.check_anomalies()
    assert asked[0] is False and len(asked) == 2, asked
    assert {frozenset(brokers) for brokers in asked[1].values()} == {frozenset({1})}
    assert set(asked[1]) == {TopicPartition("t", p) for p in range(3)} | {TopicPartition("keep", 0)}


async def test_a_restart_during_a_log_dirs_fix_leaves_one_anomaly_fixed_while_the_dir_stays_failed() -> None:
    """kill -9 while the fix runs: the restarted daemon follows it to `fixed`; the dir, still failed and now
    empty, is no second anomaly (it was: `0 partition(s) in failed log dir /b`, ignored, `nothing to
    move`, once the new daemon's clock for the dir passed the threshold)."""
    d = dir_daemon(HealingMode.EXECUTE)
    await d.controller.start()
    d.sim.fail_log_dir(1, "/b")
    await checked_for(d, DIR_SECONDS + 10)
    executing = the_anomaly(d)
    assert executing["state"] == "executing", executing
    assert executing["reason"].startswith("approved by self.healing.mode = execute"), executing
    d.crash()
    await d.controller.start()
    await d.run(seconds=3600)
    await checked_for(d, 2 * DIR_SECONDS)
    assert [(a["id"], a["state"]) for a in d.controller.anomalies()["anomalies"]] == [
        (executing["id"], "fixed")
    ]


async def test_a_log_dir_back_before_its_threshold_is_no_anomaly() -> None:
    d = dir_daemon(HealingMode.EXECUTE)
    await d.controller.start()
    d.sim.fail_log_dir(1, "/b")
    await checked_for(d, DIR_SECONDS - 20)
    d.sim.restore_log_dir(1, "/b")
    await checked_for(d, 2 * DIR_SECONDS)
    assert d.controller.anomalies()["anomalies"] == []
    assert d.controller.records == {}


async def test_a_log_dir_back_before_its_fix_starts_expires_the_anomaly() -> None:
    d = dir_daemon(HealingMode.PROPOSE)
    await d.controller.start()
    d.sim.fail_log_dir(1, "/b")
    await checked_for(d, DIR_SECONDS + 10)
    proposed = the_anomaly(d)
    assert proposed["state"] == "proposed", proposed
    d.sim.restore_log_dir(1, "/b")
    await checked_for(d, 10)
    expired = the_anomaly(d)
    assert expired["state"] == "expired", expired
    assert expired["reason"] == "the log dir is back online, or its broker is not running"
    with pytest.raises(ServiceError):
        await d.controller.approve_anomaly(proposed["id"])
    assert d.controller.records == {}


# -- retention: anomalies that ended are pruned (self.healing.anomaly.retention.seconds) ---------------------

RETENTION = 3600.0


async def test_retention_prunes_an_ended_anomaly_from_the_store_and_the_book_never_an_open_one() -> None:
    d = daemon(HealingMode.PROPOSE, anomaly_retention_seconds=RETENTION)
    await d.controller.start()
    d.sim.stop_broker(1)
    await checked_for(d, FAILURE_SECONDS + 10)
    d.sim.start_broker(1)
    await checked_for(d, 10)
    (expired,) = d.controller.anomalies()["anomalies"]
    assert expired["state"] == "expired"
    d.sim.stop_broker(2)
    await checked_for(d, FAILURE_SECONDS + 10)
    assert await d.controller.healing.prune() == ()  # nothing ended long enough ago
    await checked_for(d, RETENTION)
    assert await d.controller.healing.prune() == (expired["id"],)
    (still,) = d.controller.anomalies()["anomalies"]
    assert still["state"] == "proposed" and still["brokers"] == [2]  # open, older than the retention: kept
    assert list(await d.store.anomalies()) == [still["id"]]
    await checked_for(d, RETENTION)
    assert await d.controller.healing.prune() == ()


async def test_a_pruning_while_a_new_leader_reads_the_anomalies_does_not_bring_the_pruned_one_back() -> None:
    """A check after a change of role reads the store's anomalies; a pruning that ran while that read was
    on its way must not be undone by it (it was, in memory, until the next restart)."""
    d = daemon(HealingMode.PROPOSE, anomaly_retention_seconds=RETENTION)
    await d.controller.start()
    d.sim.stop_broker(1)
    await checked_for(d, FAILURE_SECONDS + 10)
    d.sim.start_broker(1)
    await checked_for(d, RETENTION + 10)
    (expired,) = d.controller.anomalies()["anomalies"]
    assert expired["state"] == "expired"
    healing, read = d.controller.healing, d.store.anomalies
    read_once = asyncio.Event()

    async def slow_read() -> Any:
        found = await read()
        read_once.set()
        await asyncio.sleep(0.05)  # the answer is on its way back while the pruning runs
        return found

    d.store.anomalies = slow_read  # type: ignore[method-assign]
    healing.forget()  # a change of role: the book is read again by the next check
    check = asyncio.create_task(d.controller.check_anomalies())
    await read_once.wait()
    assert await healing.prune() == (expired["id"],)
    await check
    assert d.controller.anomalies()["anomalies"] == []
    assert await read() == {}


async def test_a_pruned_fix_is_not_made_again_from_its_plan_after_a_restart() -> None:
    """The fix's plan outlives its anomaly in the store (`store.retention.days`): a restarted daemon that
    follows the plans' anomalies does not bring a pruned one back."""
    d = dir_daemon(HealingMode.EXECUTE, anomaly_retention_seconds=RETENTION)
    await d.controller.start()
    d.sim.fail_log_dir(1, "/b")
    await checked_for(d, DIR_SECONDS + 10)
    await d.run(seconds=3600)
    await checked_for(d, RETENTION + 10)
    (fixed,) = d.controller.anomalies()["anomalies"]
    assert fixed["state"] == "fixed"
    assert await d.controller.healing.prune() == (fixed["id"],)
    assert d.controller.anomalies()["anomalies"] == []
    d.crash()
    await d.controller.start()
    await checked_for(d, 10)
    assert d.controller.anomalies()["anomalies"] == []
    assert await d.store.anomalies() == {}
    assert [r.status for r in d.controller.records.values()] == [PlanStatus.COMPLETED]


async def test_the_leaders_retention_task_prunes_anomalies_with_the_plans_history() -> None:
    """app.prune_history, the task that prunes ended plans, prunes ended anomalies too."""
    d = daemon(HealingMode.PROPOSE, anomaly_retention_seconds=RETENTION)
    await d.controller.start()
    d.sim.stop_broker(1)
    await checked_for(d, FAILURE_SECONDS + 10)
    d.sim.start_broker(1)
    await checked_for(d, RETENTION + 10)
    assert [a["state"] for a in d.controller.anomalies()["anomalies"]] == ["expired"]
    config: Any = {"store.retention.days": 90.0, "store.retention.plans": 100}
    task = asyncio.create_task(prune_history(d.controller, lambda: config, interval=0.001))
    try:
        for _ in range(200):
            if not await d.store.anomalies():
                break
            await asyncio.sleep(0.01)
    finally:
        task.cancel()
    assert await d.store.anomalies() == {}
    assert d.controller.anomalies()["anomalies"] == []

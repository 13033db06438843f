"""The scheduling part: the limits a decision runs under, steps Kafka accepted or refused, elections."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from reassignd.engine.actions import ElectLeader
from reassignd.engine.decide import decide
from reassignd.engine.drive import cycle
from reassignd.engine.dryrun import InstantCluster
from reassignd.engine.journal import EventKind
from reassignd.engine.lifecycle import PlanStatus
from reassignd.engine.limits import Limits
from reassignd.engine.run import Settings, new_run
from reassignd.engine.run.effects import Answered, Reassign
from reassignd.engine.run.outbox import Outbox
from reassignd.engine.run.restart import PlanStart
from reassignd.engine.run.scheduling import (
    METADATA_LAG_SECONDS,
    Schedule,
    answered,
    elected,
    in_force_now,
)
from reassignd.engine.state import ExecutionState, Status
from reassignd.model import ReassignmentPlan, TopicPartition
from tests.engine.helpers import cluster, tp


@pytest.mark.parametrize(
    ("status", "starts_new"),
    [(PlanStatus.RUNNING, True), (PlanStatus.CANCELLING, True), (PlanStatus.PAUSED, False)],
)
def test_a_paused_plan_starts_nothing(status: PlanStatus, starts_new: bool) -> None:
    limits = Limits(parallel_partition_count=7)
    assert (in_force_now(limits, status).parallel_partition_count == 7) == starts_new


@pytest.mark.parametrize(
    ("error", "status", "journaled"),
    [(None, Status.IN_FLIGHT, EventKind.STEP_STARTED), ("NOT_CONTROLLER", Status.PENDING, EventKind.ERROR)],
)
def test_kafka_s_answer_to_a_step(error: str | None, status: Status, journaled: EventKind) -> None:
    snapshot = cluster(4, {tp(0): (0, 1)})
    plan = ReassignmentPlan({tp(0): (0, 2)})
    decision = decide(snapshot, plan, ExecutionState.initial(plan, snapshot), Limits(), None)
    schedule = Schedule(decision.state)
    out = Outbox("p")
    answer = Answered(30.0, reassign={tp(0): error})
    schedule, refused = answered(
        schedule, answer, Limits(), out, starts=decision.start, view=snapshot, start=PlanStart(), goals=None
    )
    assert schedule.execution is not None and schedule.execution[tp(0)].status is status
    assert [e.kind for e in out.events] == [journaled]
    assert (tp(0) in refused) == (error is not None)
    assert (schedule.started_at.get(tp(0)) == 30.0) == (error is None)
    assert schedule.rows[tp(0)].status is status  # the row says what the commit records


def test_elections_are_journaled_with_kafka_s_answer() -> None:
    elect = (ElectLeader(tp(0), 1, "step"), ElectLeader(tp(1), 0, "finished"))
    out = Outbox("p")
    elected(elect, Answered(1.0, elect={tp(0): None, tp(1): "ELECTION_NOT_NEEDED"}), out)
    assert [(e.kind, e.tp, e.data["error"]) for e in out.events] == [
        (EventKind.LEADER_ELECTED, tp(0), None),
        (EventKind.LEADER_ELECTED, tp(1), "ELECTION_NOT_NEEDED"),
    ]


def test_a_step_read_as_its_source_is_reverted_only_once_metadata_must_show_it() -> None:
    """Kafka accepted the step and the reads keep showing the partition as before it, not moving. Within
    METADATA_LAG_SECONDS of the start that is brokers' Metadata behind the controller (the step may have
    completed): read again. After it, the step was reverted (someone cancelled it), though the read has
    not changed since: it is journaled as cancelled and started again under the next index."""

    class Reverted(InstantCluster):
        def reassign(self, effect: Reassign) -> Mapping[TopicPartition, str | None]:
            return dict.fromkeys(effect.targets)  # accepted, and reverted at once

    model = Reverted(cluster(4, {tp(0): (0, 1)}))
    run = new_run("p", ReassignmentPlan({tp(0): (0, 2)}), PlanStatus.RUNNING)
    settings = Settings(Limits())
    kinds = []
    for now in (0.0, 1.0, METADATA_LAG_SECONDS - 1, METADATA_LAG_SECONDS + 1):
        done = cycle(run, model, settings, now)
        run = done.run
        kinds.append([(e.kind, e.step_index) for c in done.effects for e in getattr(c, "events", ())])
    assert kinds == [
        [(EventKind.STEP_STARTED, 0)],
        [],
        [],
        [(EventKind.STEP_CANCELLED, 0), (EventKind.STEP_STARTED, 1)],
    ]

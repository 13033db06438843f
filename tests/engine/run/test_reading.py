"""The plan-run machine's observation between full size reads (run_progress.py): what it knows of the
partitions sitting still is what the last full read found, whatever this cycle's read carries."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import pytest

from reassignd.engine.decide import decide
from reassignd.engine.drive import cycle
from reassignd.engine.dryrun import InstantCluster
from reassignd.engine.lifecycle import PlanStatus
from reassignd.engine.limits import Limits
from reassignd.engine.run import ReadRequest, Settings, new_run, reading
from reassignd.engine.run import progress as run_progress
from reassignd.engine.run.reading import SIZE_REFRESH_CYCLES, Reading
from reassignd.engine.state import ExecutionState
from reassignd.model import ClusterSnapshot, ReassignmentPlan
from tests.engine.helpers import cluster, eta_checked_afresh, tp


@dataclass
class SizedReads(InstantCluster):
    """Reads as the Kafka adapter does: between full reads (a mapping of partitions in flight), log-dir
    sizes only for the partitions named, none for the rest."""

    def read(self, request: ReadRequest) -> ClusterSnapshot:
        if not isinstance(request.with_sizes, Mapping):
            return self.snapshot
        named = request.with_sizes
        stripped = [p.with_sizes(0, {}) for t, p in self.snapshot.partitions.items() if t not in named]
        return self.snapshot.with_partitions(stripped)


def test_a_live_ordering_change_between_full_reads_ranks_by_the_sizes_last_read() -> None:
    """`reassignment.ordering` changed to larger_first (PATCH /v1/limits) on a cycle that reads sizes of the
    partitions in flight only: the others are ranked by the sizes the last full read found, not as empty."""
    small, large, medium = tp(0), tp(1), tp(2)
    sizes = {small: 100, large: 300, medium: 200}
    start = cluster(range(1, 5), dict.fromkeys(sizes, (1, 2)), sizes=sizes)
    model = SizedReads(start)
    plan = ReassignmentPlan(dict.fromkeys(sizes, (3, 4)))
    one_at_a_time = Limits(parallel_partition_count=1, ordering=("plan_order",))
    run = new_run("p", plan, PlanStatus.RUNNING)
    run = cycle(run, model, Settings(one_at_a_time), 0.0).run  # a full read; the small one starts
    assert run.execution is not None and set(run.execution.in_flight_set) == {small}
    larger_first = Settings(replace(one_at_a_time, ordering=("larger_first",)))
    run = cycle(run, model, larger_first, 10.0).run  # sizes of the small one only
    assert run.execution is not None
    assert run.execution.ranked == (large, medium, small)


def test_the_eta_follows_a_partition_that_changed_without_moving(monkeypatch: pytest.MonkeyPatch) -> None:
    """A waiting partition whose leader changed between full reads (an operator's election) is served by
    its new leader: the kept terms follow it, as all terms made again do."""
    monkeypatch.setattr(run_progress, "with_eta", eta_checked_afresh(run_progress.with_eta))
    moving, waiting = tp(0), tp(1)
    sizes = {moving: 100, waiting: 1000}
    model = SizedReads(cluster(range(1, 7), dict.fromkeys(sizes, (1, 2)), sizes=sizes))
    plan = ReassignmentPlan({moving: (3, 4), waiting: (5, 6)})
    limits = Limits(
        parallel_partition_count=1,
        parallel_replica_count=2,
        ordering=("plan_order",),
        leader_throttled_rate=10,
        follower_throttled_rate=10,
    )
    run = cycle(new_run("p", plan, PlanStatus.RUNNING), model, Settings(limits), 0.0).run
    assert run.execution is not None and set(run.execution.in_flight_set) == {moving}
    assert (
        run.progress.tracking.eta_reason == "out of broker 1"
    )  # both partitions' copies leave their leader, 1
    elected = model.snapshot.partitions[waiting]
    model.snapshot = model.snapshot.with_partitions([replace(elected, leader=2, isr=(2, 1))])
    run = cycle(run, model, Settings(limits), 10.0).run  # sizes of the moving one only; ETA checked afresh
    assert run.progress.eta_terms is not None and run.progress.eta_terms.terms[waiting].source == 2


@pytest.mark.parametrize(
    ("cycles", "started", "full"),
    [(0, False, True), (5, True, False), (30, True, True), (31, True, False)],
    ids=["before the first decision", "between full reads", "every 30 cycles", "after a full read"],
)
def test_which_sizes_a_cycle_reads(cycles: int, started: bool, full: bool) -> None:
    moving, still = tp(0), tp(1)
    snapshot = cluster(range(1, 5), {moving: (1, 2), still: (1, 2)})
    plan = ReassignmentPlan({moving: (3, 4), still: (1, 2)})
    execution = None
    if started:
        execution = decide(snapshot, plan, ExecutionState.initial(plan, snapshot), Limits(), None).state
    sized = Reading(cycles=cycles, sizes={moving: (1000, {})})
    asked = reading.request(sized, plan, execution, {}, SIZE_REFRESH_CYCLES)
    assert asked.partitions == (moving, still)
    assert asked.full is full
    if full and not started:
        assert dict(asked.with_sizes) == {moving: (), still: ()}  # type: ignore[arg-type]  # leaders only
    elif full:
        assert dict(asked.with_sizes) == {moving: (3,), still: ()}  # type: ignore[arg-type]
    else:
        assert dict(asked.with_sizes) == {moving: (3,)}  # type: ignore[arg-type]  # the step adds 3 alone


def test_a_broker_listed_as_stopped_is_in_no_isr_though_metadata_still_shows_it() -> None:
    """Broker 2 stopped a moment ago: the broker list lacks it, brokers' Metadata still has it in the ISR
    (Kafka 4.4: Metadata trails the controller). The step that brings in the new preferred leader drops the
    stopped replica with it, as for any replica out of sync; kept, it would hold the step until broker 2
    came back, though the plan's target does not keep it (tests/daemon/test_controller.py, broker lost)."""
    moving = tp(8)
    stale = cluster(range(1, 7), {moving: (3, 1, 2)}, offline=[2], isr={moving: (3, 1, 2)})
    plan = ReassignmentPlan({moving: (6, 1, 4)})
    run = cycle(new_run("p", plan, PlanStatus.RUNNING), InstantCluster(stale), Settings(Limits()), 0.0).run
    assert run.execution is not None
    assert run.execution[moving].target == (6, 1, 3)
    seen = reading.stopped_out_of_sync(stale)
    assert seen.partitions[moving].isr == (3, 1)
    assert reading.stopped_out_of_sync(seen) is seen, "nothing to take out: the same snapshot"

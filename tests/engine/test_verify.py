"""`verify_plan`: one verdict per partition, table-driven, and a property: a plan verified against the
cluster it describes is applied, and against its own pre-plan (unchanged partitions aside) not applied."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reassignd.engine.verify import Verdict, counts, verify_plan
from reassignd.model import PartitionState, ReassignmentPlan, TopicPartition

TP = TopicPartition("orders", 0)
TARGET = (4, 2, 3)
PRE = (1, 2, 3)


def state(
    replicas: tuple[int, ...], adding: tuple[int, ...] = (), removing: tuple[int, ...] = ()
) -> PartitionState:
    return PartitionState(TP, replicas, replicas, replicas[0], adding=adding, removing=removing)


def plan(target: tuple[int, ...] = TARGET, dirs: tuple[str, ...] | None = None) -> ReassignmentPlan:
    return ReassignmentPlan({TP: target}, {TP: dirs} if dirs else {})


@pytest.mark.parametrize(
    ("current", "pre_plan", "verdict", "detail"),
    [
        (state((4, 2, 3)), PRE, Verdict.APPLIED, ""),
        (state((4, 2, 3)), None, Verdict.APPLIED, ""),
        (state((4, 2, 3, 1), adding=(4,), removing=(1,)), PRE, Verdict.IN_PROGRESS, "in flight toward"),
        # a KIP-435 step of reassignd's: toward an intermediate list, adding only target replicas
        (state((4, 1, 2, 3), adding=(4,)), PRE, Verdict.IN_PROGRESS, "in flight toward"),
        (state((4, 1, 2, 3), adding=(4,)), None, Verdict.IN_PROGRESS, "in flight toward"),
        (state((4, 1, 2, 3)), PRE, Verdict.IN_PROGRESS, "between two steps"),
        (state((1, 2, 3)), PRE, Verdict.NOT_APPLIED, "pre-plan"),
        (state((1, 2, 3)), None, Verdict.NOT_APPLIED, "nothing in flight"),
        (state((2, 4, 3)), PRE, Verdict.IN_PROGRESS, "between two steps"),  # the leader step is left
        (state((5, 2, 3, 1), adding=(5,), removing=(1,)), PRE, Verdict.DIVERGED, "other brokers"),
        (state((5, 2, 3, 1), adding=(5,), removing=(1,)), None, Verdict.DIVERGED, "other brokers"),
        (state((4, 2, 3, 1), adding=(1,), removing=(4,)), PRE, Verdict.DIVERGED, "other brokers"),  # cancel
        (state((5, 2, 3)), PRE, Verdict.DIVERGED, "neither"),
        (None, PRE, Verdict.DIVERGED, "no such partition"),
    ],
)
def test_verdicts(
    current: PartitionState | None, pre_plan: tuple[int, ...] | None, verdict: Verdict, detail: str
) -> None:
    partitions = {TP: current} if current is not None else {}
    [got] = verify_plan(plan(), partitions, pre_plan=None if pre_plan is None else {TP: pre_plan})
    assert (got.verdict, detail in got.detail) == (verdict, True), got


def test_a_replica_in_another_log_dir_than_the_plans_is_not_applied() -> None:
    with_dirs = plan(dirs=("/data/b", "any", "any"))
    [wrong] = verify_plan(with_dirs, {TP: state(TARGET)}, log_dirs={(TP, 4): "/data/a"})
    assert wrong.verdict is Verdict.NOT_APPLIED and "replica 4: /data/a, not /data/b" in wrong.detail
    [unknown] = verify_plan(with_dirs, {TP: state(TARGET)}, log_dirs={})
    assert unknown.verdict is Verdict.NOT_APPLIED and "replica 4: unknown" in unknown.detail
    [right] = verify_plan(with_dirs, {TP: state(TARGET)}, log_dirs={(TP, 4): "/data/b", (TP, 2): "/x"})
    assert right.verdict is Verdict.APPLIED


def test_json_and_counts() -> None:
    verdicts = verify_plan(plan(), {TP: state(PRE)}, pre_plan={TP: PRE})
    assert counts(verdicts) == {"applied": 0, "in_progress": 0, "not_applied": 1, "diverged": 0}
    assert verdicts[0].to_json() == {
        "topic": "orders",
        "partition": 0,
        "state": "not_applied",
        "replicas": [1, 2, 3],
        "target": [4, 2, 3],
        "adding": [],
        "removing": [],
        "pre_plan": [1, 2, 3],
        "detail": "untouched: on its pre-plan list",
    }


lists = st.lists(st.integers(1, 8), min_size=1, max_size=4, unique=True).map(tuple)


@given(st.dictionaries(st.integers(0, 20), st.tuples(lists, lists), min_size=1, max_size=8))
def test_a_plan_is_applied_on_its_targets_and_not_applied_on_its_pre_plan(
    parts: dict[int, tuple[tuple[int, ...], tuple[int, ...]]],
) -> None:
    tps = {TopicPartition("t", p): pair for p, pair in parts.items()}
    the_plan = ReassignmentPlan({tp: target for tp, (_, target) in tps.items()})
    pre = {tp: before for tp, (before, _) in tps.items()}

    def cluster(which: int) -> dict[TopicPartition, PartitionState]:
        return {tp: PartitionState(tp, pair[which], pair[which], pair[which][0]) for tp, pair in tps.items()}

    assert {v.verdict for v in verify_plan(the_plan, cluster(1), pre_plan=pre)} == {Verdict.APPLIED}
    for v in verify_plan(the_plan, cluster(0), pre_plan=pre):
        expected = Verdict.APPLIED if pre[v.tp] == the_plan.targets[v.tp] else Verdict.NOT_APPLIED
        assert v.verdict is expected

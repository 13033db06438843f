"""The engine's real ExecutionState survives the store, written incrementally, and reads back equal."""

from __future__ import annotations

from pathlib import Path

from reassignd.engine.state import ExecutionState, PartitionProgress, Status
from reassignd.model import Broker, ClusterSnapshot, PartitionState, ReassignmentPlan, TopicPartition
from reassignd.store import SqliteStore, WriteBatch
from reassignd.store.execution import join_state_document, split_state_document, stage_state_changes

TPS = [TopicPartition("t", i) for i in range(6)]


def _setup() -> tuple[ReassignmentPlan, ClusterSnapshot]:
    snapshot = ClusterSnapshot.build(
        [Broker(b) for b in range(1, 6)],
        [PartitionState(tp, (1, 2, 3), (1, 2, 3), leader=1) for tp in TPS],
    )
    plan = ReassignmentPlan.from_dict(
        {
            "version": 1,
            "partitions": [
                {"topic": tp.topic, "partition": tp.partition, "replicas": [4, 2, 3]} for tp in TPS
            ],
        }
    )
    return plan, snapshot


def test_only_changed_partitions_are_written_and_the_state_reads_back(tmp_path: Path) -> None:
    plan, snapshot = _setup()
    store = SqliteStore(tmp_path)
    store.submit_plan("p", plan.to_dict())
    state = ExecutionState.initial(plan, snapshot)
    batch = WriteBatch()
    previous = stage_state_changes(batch, "p", state.to_json_dict(), {})
    assert len(batch.partition_states) == len(TPS)
    store.commit(batch)

    progress = {
        TPS[0]: PartitionProgress(Status.IN_FLIGHT, 0, target=(4, 2, 3, 1), source=(1, 2, 3), leader=1),
        TPS[1]: PartitionProgress(Status.DONE, 1),
    }
    moved = ExecutionState.initial(plan, snapshot, progress=progress)
    batch = WriteBatch()
    previous = stage_state_changes(batch, "p", moved.to_json_dict(), previous)
    assert {tp for _, tp in batch.partition_states} == {TPS[0], TPS[1]}
    store.commit(batch)

    header, _ = split_state_document(moved.to_json_dict())
    document = join_state_document(header, store.partition_states("p"))
    restored = ExecutionState.from_json_dict(document, plan, snapshot)
    assert restored.to_json_dict() == moved.to_json_dict()
    assert restored[TPS[0]].status is Status.IN_FLIGHT and restored[TPS[0]].target == (4, 2, 3, 1)
    assert previous == split_state_document(moved.to_json_dict())[1]
    store.close()


def test_rows_that_disappear_are_deleted() -> None:
    batch = WriteBatch()
    stage_state_changes(batch, "p", {"version": 1, "partitions": []}, {TPS[0]: {"step": 1}})
    assert batch.partition_states == {("p", TPS[0]): None}

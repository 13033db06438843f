"""Persisting the engine's execution state one partition at a time.

The engine serialises its whole `ExecutionState` as one JSON document (`to_json_dict`: a header plus one
entry per partition). Writing that whole document every cycle would cost O(plan) bytes per fsync — megabytes
for a 10,000-partition plan — so the controller stores each partition's entry as its own row and commits
only the entries that changed since the last commit. The store never interprets an entry: the engine owns
its state machine and its format; this module only splits, diffs and joins.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reassignd.model import TopicPartition
from reassignd.store.base import WriteBatch

Rows = Mapping[TopicPartition, Mapping[str, Any]]


def split_state_document(document: Mapping[str, Any]) -> tuple[dict[str, Any], dict[TopicPartition, Any]]:
    """(header without the partitions, entry per partition) of an engine `to_json_dict` document."""
    header = {k: v for k, v in document.items() if k != "partitions"}
    rows = {
        TopicPartition(str(e["topic"]), int(e["partition"])): dict(e) for e in document.get("partitions", [])
    }
    return header, rows


def join_state_document(header: Mapping[str, Any], rows: Rows) -> dict[str, Any]:
    """The document `ExecutionState.from_json_dict` reads, from a header and the stored rows."""
    return {**header, "partitions": [dict(rows[tp]) for tp in sorted(rows)]}


def stage_state_changes(
    batch: WriteBatch, plan_id: str, document: Mapping[str, Any], previous: Rows
) -> dict[TopicPartition, Any]:
    """Add to `batch` the rows that differ from `previous` (deleting rows no longer present).

    Returns the new rows: pass them as `previous` next time, once the batch has committed.
    """
    _, rows = split_state_document(document)
    for tp, row in rows.items():
        if previous.get(tp) != row:
            batch.put_partition_state(plan_id, tp, row)
    for tp in previous.keys() - rows.keys():
        batch.put_partition_state(plan_id, tp, None)
    return rows

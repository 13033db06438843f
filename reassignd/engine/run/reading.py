"""The run's reading part: what the run reads of the cluster and what it keeps of what it read."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from types import MappingProxyType

from reassignd.engine.run.state import Replicas, RunState
from reassignd.model import ClusterSnapshot, TopicPartition, copy_of


def replicas_of(
    run: RunState, full: ClusterSnapshot, changed: Collection[TopicPartition] | None
) -> Mapping[TopicPartition, Replicas]:
    """Each plan partition's replica list now: updated where the view changed (`changed`; None: all)."""
    if changed is None or not run.replicas_now:
        keys: Iterable[TopicPartition] = run.plan.targets
    else:
        keys = (tp for tp in changed if tp in run.plan.targets)
    updated = [(tp, p.replicas) for tp in keys if (p := full.partitions.get(tp)) is not None]
    if not updated and run.replicas_now:
        return run.replicas_now
    return MappingProxyType(copy_of(run.replicas_now) | dict(updated))

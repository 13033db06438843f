"""cancel.unsafe_revert: a revert keeps only the original replicas, so it waits until one is in sync."""

from __future__ import annotations

import pytest

from reassignd.engine.cancel import unsafe_revert
from reassignd.model import PartitionState, TopicPartition

TP = TopicPartition("t", 0)
MOVING = {"replicas": (4, 1, 2, 3), "adding": (4,)}  # [1,2,3] -> [4,1,2,3] in flight


@pytest.mark.parametrize(
    ("partition", "online", "safe", "why"),
    [
        ({**MOVING, "isr": (1, 2, 3), "leader": 1}, {1, 2, 3, 4}, True, "all originals in sync"),
        ({**MOVING, "isr": (1, 4), "leader": 1}, {1, 4}, True, "one original in sync is enough"),
        ({**MOVING, "isr": (4,), "leader": 4}, {1, 4}, False, "only the added replica is in sync"),
        ({**MOVING, "isr": (1,), "leader": -1}, {4}, False, "the original in the ISR is offline"),
        ({"replicas": (1, 2, 3), "isr": (4,), "leader": -1}, {1}, True, "nothing to revert: no move"),
    ],
)
def test_a_revert_is_unsafe_only_when_no_original_replica_is_online_and_in_sync(
    partition: dict[str, tuple[int, ...] | int], online: set[int], safe: bool, why: str
) -> None:
    p = PartitionState(TP, **partition)  # type: ignore[arg-type]
    held = unsafe_revert((1, 2, 3), p, frozenset(online))
    assert (held is None) is safe, why
    if held is not None:
        assert "[1, 2, 3]" in held and "in sync" in held


def test_an_unreadable_partition_waits_until_it_can_be_read() -> None:
    held = unsafe_revert((1, 2, 3), None, frozenset({1, 2, 3}))
    assert held is not None and "cannot be read" in held

"""Throttle config writes (daemon/throttles.py): many resources at once, brokers before topics, and a lost
right to write stops the batch as the error the runtime knows (WriteFenced), never wrapped."""

from __future__ import annotations

import asyncio
from collections.abc import Collection

import pytest

from reassignd.cluster.api import ConfigOp
from reassignd.cluster.errors import ClusterCallError, KafkaErrorInfo, WriteFenced
from reassignd.daemon import throttles
from reassignd.engine.throttle import ConfigWrite


class RecordingCluster:
    """alter_*_configs that take `delay` seconds each and record what was written and how many at once."""

    def __init__(self, failing: Collection[str] = (), delay: float = 0.01) -> None:
        self.written: list[tuple[str, str]] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.failing = set(failing)
        self.delay = delay

    async def _write(self, kind: str, name: str) -> None:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
            if name in self.failing:
                error = KafkaErrorInfo("BROKER_NOT_AVAILABLE", 8, True, f"{kind} {name} refused")
                raise ClusterCallError("incremental_alter_configs", error)
            self.written.append((kind, name))
        finally:
            self.in_flight -= 1

    async def alter_broker_configs(self, broker_id: int, ops: Collection[ConfigOp]) -> None:
        await self._write("broker", str(broker_id))

    async def alter_topic_configs(self, topic: str, ops: Collection[ConfigOp]) -> None:
        await self._write("topic", topic)


def _writes(brokers: int, topics: int) -> list[ConfigWrite]:
    return [
        *(
            ConfigWrite("broker", str(b), "leader.replication.throttled.rate", "SET", "1")
            for b in range(brokers)
        ),
        *(
            ConfigWrite("topic", f"t{t}", "leader.replication.throttled.replicas", "SET", "0:1")
            for t in range(topics)
        ),
    ]


async def _no_guard() -> None:
    return None


def test_many_resources_are_written_at_once_brokers_before_topics_and_failures_reported() -> None:
    cluster = RecordingCluster(failing={"3"})
    failed = asyncio.run(throttles.write_throttles(cluster, _writes(40, 5), _no_guard))  # type: ignore[arg-type]
    assert set(failed) == {("broker", "3")}
    assert cluster.most_in_flight == throttles.WRITES_IN_FLIGHT
    kinds = [kind for kind, _ in cluster.written]
    assert kinds == sorted(kinds), "every broker before any topic"
    assert len(cluster.written) == 44


def test_a_lost_right_to_write_stops_the_batch_as_write_fenced_and_nothing_is_written_after() -> None:
    cluster = RecordingCluster()
    calls = 0

    async def guard() -> None:
        nonlocal calls
        calls += 1
        if calls > 20:
            raise WriteFenced("writer lease expired")

    with pytest.raises(WriteFenced):  # not an ExceptionGroup: the runtime tells a fence by its class
        asyncio.run(throttles.write_throttles(cluster, _writes(40, 5), guard))  # type: ignore[arg-type]
    assert len(cluster.written) <= 20
    assert all(kind == "broker" for kind, _ in cluster.written)

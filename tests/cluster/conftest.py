"""A simulated cluster in a subprocess and an adapter connected to it over TCP."""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from reassignd.cluster.kafka import AdminSettings, KafkaClusterAdmin
from reassignd.cluster.retry import RetryPolicy
from tests.services.simulator import SimProcess

# 4 brokers on 2 racks; explicit assignments so tests know every replica list.
SCENARIO: dict[str, Any] = {
    "cluster_id": "adapter-test-cluster",
    "brokers": [
        {"id": 1, "rack": "r1"},
        {"id": 2, "rack": "r2"},
        {"id": 3, "rack": "r1"},
        {"id": 4, "rack": "r2"},
    ],
    "topics": [
        {
            "name": "orders",
            "partitions": 6,
            "replication_factor": 3,
            "partition_bytes": [1000, 2000, 3000, 4000, 5000, 6000],
            "produce_bytes_per_sec": 0,
            "assignment": [[1, 2, 3], [2, 3, 4], [3, 4, 1], [4, 1, 2], [1, 3, 2], [2, 4, 3]],
            "configs": {"min.insync.replicas": "2"},
        },
        {
            "name": "events",
            "partitions": 4,
            "replication_factor": 2,
            "partition_bytes": 500,
            "produce_bytes_per_sec": 0,
            "assignment": [[1, 2], [2, 3], [3, 4], [4, 1]],
            "configs": {"follower.replication.throttled.replicas": "0:2"},
        },
    ],
    "broker_configs": {"1": {"leader.replication.throttled.rate": "1000000"}},
    "cluster_broker_configs": {"follower.replication.throttled.rate": "5000000"},
}

TEST_TIMEOUT = 5.0


def make_admin(sim: SimProcess, **settings: Any) -> KafkaClusterAdmin:
    return KafkaClusterAdmin(
        AdminSettings(
            client={"bootstrap.servers": sim.bootstrap_servers, **settings.pop("client", {})},
            request_timeout=settings.pop("request_timeout", TEST_TIMEOUT),
            retry=settings.pop("retry", RetryPolicy(attempts=2, base_delay=0.05, max_delay=0.2)),
            **settings,
        )
    )


@pytest.fixture(autouse=True)
def _quiet_kafka_python() -> Iterator[None]:
    """kafka-python logs every lost connection at ERROR with its transport object as an argument; pytest's
    log capture keeps those records, and with them the sockets, until the session ends. Tests that stop
    brokers would then see ResourceWarnings at exit that belong to no test."""
    logger = logging.getLogger("kafka")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


@pytest.fixture(scope="module")
def shared_sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    """Paused (time scale 0): the state only changes through the tests' own calls. Read-only tests and
    tests that restore what they change share it."""
    with SimProcess(SCENARIO, workdir=tmp_path_factory.mktemp("sim"), time_scale=0) as sim:
        yield sim


@pytest.fixture
def own_sim(tmp_path: Path) -> Iterator[SimProcess]:
    """A private simulator for tests that move replicas or stop brokers."""
    with SimProcess(SCENARIO, workdir=tmp_path / "sim", time_scale=0) as sim:
        yield sim


@pytest.fixture
async def admin(shared_sim: SimProcess) -> AsyncIterator[KafkaClusterAdmin]:
    client = make_admin(shared_sim)
    try:
        yield client
    finally:
        await client.close()
        gc.collect()


@pytest.fixture
async def own_admin(own_sim: SimProcess) -> AsyncIterator[KafkaClusterAdmin]:
    client = make_admin(own_sim)
    try:
        yield client
    finally:
        await client.close()
        gc.collect()  # surface kafka-python's leaked sockets here (see test_kafka_admin.pytestmark)

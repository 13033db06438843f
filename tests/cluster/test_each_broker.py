"""Requests sent to every broker at once (ClientCalls._each_broker), against the simulator over TCP: a
broker's failure stays that broker's error, whatever the other brokers and the calls sharing the client do."""

from __future__ import annotations

import asyncio
import gc

import pytest

from reassignd.cluster.api import FOLLOWER_THROTTLED_RATE, LEADER_THROTTLED_RATE
from tests.cluster.conftest import make_admin
from tests.services.simulator import SimProcess

# kafka-python 3.0.12 leaks the socket of a refused connection (see test_kafka_admin.pytestmark).
pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings(
        "ignore:Exception ignored in. <socket.socket:pytest.PytestUnraisableExceptionWarning"
    ),
]

KEYS = (LEADER_THROTTLED_RATE, FOLLOWER_THROTTLED_RATE)


async def test_concurrent_snapshots_share_the_client_without_failing(own_sim: SimProcess) -> None:
    """The daemon's cycle and HTTP status reads snapshot at once on one kafka-python client. Each snapshot
    has a request in flight to every broker at once; kafka-python refuses a request beyond its in-flight
    limit on a connection (NodeNotReadyError 'Node paused'), which read as a stale client: the client was
    replaced, cancelling the other calls' requests, and snapshots failed."""
    admin = make_admin(own_sim)
    try:
        await admin.snapshot_with_errors(with_sizes=True, broker_config_keys=KEYS)
        client = admin._kp
        results = await asyncio.gather(
            *(admin.snapshot_with_errors(with_sizes=True, broker_config_keys=KEYS) for _ in range(8))
        )
        assert [r.errors for r in results] == [()] * 8
        assert admin._kp is client  # never replaced: no request was refused
    finally:
        await admin.close()
        gc.collect()

"""The write fence is checked when a write can leave, not before it waits.

Kafka's admin API takes no fencing token, so the daemon's last line against a deposed leader's write is the
fence (the HA lease) checked right before the request is written. Anything a write waits for after that
check (a connection to its broker, a controller lookup, another thread) is time in which the lease can run
out unnoticed: a leader paused there (GC, VM stall, SIGSTOP) wakes and writes after a standby took over.
librdkafka queued a write for a broker that was down and sent it once the broker was back.

Here the wait is made long and deterministic: the broker a write must reach is down when the write is asked
and back after the lease ran out. On a ZooKeeper-mode cluster, so that the controller is one broker, which
every controller write must reach (Kafka 3.9: another broker answers NOT_CONTROLLER)."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from reassignd import config_keys
from reassignd.cluster.api import ConfigOp
from reassignd.cluster.errors import WriteFenced
from reassignd.cluster.kafka import KafkaClusterAdmin
from reassignd.cluster.retry import RetryPolicy
from reassignd.model import TopicPartition
from tests.cluster.conftest import SCENARIO, make_admin
from tests.services.simulator import ControlRequestError, SimProcess

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings(
        "ignore:Exception ignored in. <socket.socket:pytest.PytestUnraisableExceptionWarning"
    ),
]

# Shorter than most retries' backoff (full jitter): a write is mostly refused, but one checked within the
# lease may leave, and must leave at once.
LEASE_SECONDS = 0.1
RETRY = RetryPolicy(attempts=40, base_delay=0.3, max_delay=0.3)  # tries until the broker is back
DOWN_SECONDS = 1.5
SENDING_SECONDS = 0.5  # from a check within the lease to the simulator's receipt, at most (measured: ms)
TP = TopicPartition("orders", 0)  # replicas 1, 2, 3


class LeaseExpired(WriteFenced):
    pass


class Lease:
    """A lease granted when the write is asked, as the HA guard grants one; refuses once it ran out."""

    def __init__(self) -> None:
        self.granted = time.monotonic()
        self.granted_at = time.time()  # the simulator's request log is in wall-clock time
        self.checks: list[float] = []

    def __call__(self) -> None:
        age = time.monotonic() - self.granted
        self.checks.append(round(age, 3))
        if age > LEASE_SECONDS:
            raise LeaseExpired(f"lease expired {age:.2f}s after it was granted")


Write = Callable[[KafkaClusterAdmin], Awaitable[Any]]
Target = Callable[[SimProcess], int]


def controller(sim: SimProcess) -> int:
    return int(sim.state()["controller_id"])


WRITES: dict[str, tuple[Target, Write]] = {
    # the write: (the broker it must reach, the write)
    "broker configs": (
        lambda sim: 2,
        lambda admin: admin.alter_broker_configs(
            2, [ConfigOp.set(config_keys.LEADER_REPLICATION_THROTTLED_RATE, "1000")]
        ),
    ),
    "topic configs": (
        lambda sim: 1,  # the adapter sends a topic's configs to the first live broker until it fails
        lambda admin: admin.alter_topic_configs(
            "orders", [ConfigOp.set(config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS, "0:1")]
        ),
    ),
    "reassignment": (controller, lambda admin: admin.alter_partition_reassignments({TP: [2, 3, 4]})),
    "preferred leaders": (controller, lambda admin: admin.elect_preferred_leaders([TP])),
    "log dirs": (lambda sim: 1, lambda admin: admin.alter_replica_log_dirs({(TP, 1): "/data/b"})),
}


@pytest.fixture
def zk_sim(tmp_path: Path) -> Iterator[SimProcess]:
    scenario: dict[str, Any] = {**SCENARIO, "kafka": {"version": "3.9", "mode": "zookeeper"}}
    with SimProcess(scenario, workdir=tmp_path / "sim", time_scale=0) as sim:
        yield sim


def restart(sim: SimProcess, broker: int) -> None:
    """On its old port. A client dialling a closed loopback port in the ephemeral range can connect to
    itself (TCP simultaneous open) and hold the port a moment: tried again meanwhile."""
    for _ in range(50):
        try:
            sim.start_broker(broker)
            return
        except ControlRequestError as exc:
            if "address already in use" not in str(exc.body):
                raise
            time.sleep(0.1)


@pytest.mark.parametrize("api", sorted(WRITES))
async def test_a_write_waiting_for_its_broker_past_the_lease_is_never_sent(
    zk_sim: SimProcess, api: str
) -> None:
    target, write = WRITES[api]
    admin = make_admin(zk_sim, client={"client.id": "leased"}, request_timeout=4 * DOWN_SECONDS, retry=RETRY)
    try:
        await admin.snapshot([TP])  # connected, every broker live in the adapter's view
        await admin.elect_preferred_leaders([TP])  # both clients know the controller
        broker = target(zk_sim)
        zk_sim.stop_broker(broker)
        back = threading.Timer(DOWN_SECONDS, restart, args=(zk_sim, broker))
        sent_before = len([r for r in zk_sim.write_requests() if r["client_id"] == "leased"])
        admin.write_fence = lease = Lease()
        back.start()
        outcome: Any = None
        try:
            outcome = await write(admin)
        except Exception as exc:  # the lease's refusal, or the write's own failure
            outcome = exc
        finally:
            back.join()
        await asyncio.sleep(DOWN_SECONDS)  # anything still queued has had time to leave
        sent = [r for r in zk_sim.write_requests() if r["client_id"] == "leased"][sent_before:]
        late = [r["api"] for r in sent if r["time"] - lease.granted_at > LEASE_SECONDS + SENDING_SECONDS]
        assert late == [], f"written after the lease ran out (checked at {lease.checks}): {outcome!r}"
        # a retry may reach another broker within the lease (a topic's configs go to any broker)
        assert isinstance(outcome, LeaseExpired) or (sent and lease.checks[-1] <= LEASE_SECONDS), outcome
    finally:
        await admin.close()
        gc.collect()


BUSY_SECONDS = 1.0


async def test_a_write_is_in_the_socket_when_the_fence_returns_not_at_the_io_loops_next_turn(
    zk_sim: SimProcess,
) -> None:
    """The fence leaves work on kafka-python's IO loop (as a large answer's decoding would be): the write's
    bytes are written before it, not after the loop's next turn."""
    admin = make_admin(zk_sim, client={"client.id": "flushed"})
    try:
        await admin.snapshot([TP])
        client = await asyncio.to_thread(admin._kp.get)  # the kafka-python client writes go through
        checked: list[float] = []

        def fence_then_busy_loop() -> None:
            checked.append(time.time())
            client._manager.call_soon(lambda: time.sleep(BUSY_SECONDS))

        admin.write_fence = fence_then_busy_loop
        await admin.alter_broker_configs(
            2, [ConfigOp.set(config_keys.LEADER_REPLICATION_THROTTLED_RATE, "7")]
        )
        received = [r["time"] for r in zk_sim.write_requests() if r["client_id"] == "flushed"]
        assert len(checked) == len(received) == 1
        assert received[0] - checked[0] < BUSY_SECONDS / 2, (
            f"sent {received[0] - checked[0]:.3f}s after the check"
        )
    finally:
        await admin.close()
        gc.collect()

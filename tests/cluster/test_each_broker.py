"""Requests sent to every broker at once (ClientCalls._each_broker), against the simulator over TCP: a
broker's failure stays that broker's error, whatever the other brokers and the calls sharing the client do."""

from __future__ import annotations

import asyncio
import gc
import socket
import threading
import time
from typing import Any

import pytest

from reassignd import config_keys
from reassignd.cluster import convert
from reassignd.cluster import kafka as kafka_module
from reassignd.cluster._kafka_python import broker_configs_request
from reassignd.cluster.api import TopicPartition
from reassignd.cluster.errors import KafkaErrorInfo
from reassignd.cluster.kafka import KafkaClusterAdmin
from reassignd.cluster.retry import RetryPolicy
from tests.cluster.conftest import make_admin
from tests.services.simulator import SimProcess

# kafka-python 3.0.12 leaks the socket of a refused connection (see test_kafka_admin.pytestmark).
pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings(
        "ignore:Exception ignored in. <socket.socket:pytest.PytestUnraisableExceptionWarning"
    ),
]

KEYS = (config_keys.LEADER_REPLICATION_THROTTLED_RATE, config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE)


async def test_concurrent_snapshots_share_the_client_without_failing(own_sim: SimProcess) -> None:
    """The daemon's cycle and HTTP status reads snapshot at once on one kafka-python client. Each snapshot
    has a request in flight to every broker at once; kafka-python refuses a request beyond its in-flight
    limit on a connection (NodeNotReadyError 'Node paused'), which read as a stale client: the client was
    replaced, cancelling the other calls' requests, and snapshots failed."""
    admin = make_admin(own_sim)
    try:
        await admin.snapshot_with_errors(with_sizes=True, broker_config_keys=KEYS)
        client = admin._kp.held
        assert client is not None
        results = await asyncio.gather(
            *(admin.snapshot_with_errors(with_sizes=True, broker_config_keys=KEYS) for _ in range(8))
        )
        assert [r.errors for r in results] == [()] * 8
        assert admin._kp.held is client  # never replaced: no request was refused
    finally:
        await admin.close()
        gc.collect()


async def test_a_broker_that_never_answers_fails_alone_within_the_timeout(own_sim: SimProcess) -> None:
    """A broker whose host hangs (a crash without RST, a partition) accepts the connection and answers
    nothing. Its request must fail alone after the request timeout; it held every broker's answer until
    kafka-python's own connection setup timeout (10 s), past the call's timeout: every broker read failed."""
    admin = make_admin(own_sim, request_timeout=1.0, retry=RetryPolicy(attempts=1))
    hung = socket.socket()
    try:
        await admin.describe_broker_configs([1, 2, 4], KEYS)  # the client knows broker 3, never dialled it
        port = own_sim.broker_ports[3]
        own_sim.stop_broker(3)
        hung.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        hung.bind(("127.0.0.1", port))
        hung.listen(8)  # never accepted, never answered
        started = time.monotonic()
        described = await admin.describe_broker_configs([1, 2, 3, 4], KEYS, live={1, 2, 3, 4})
        elapsed = time.monotonic() - started
        assert {b: d.error is None for b, d in described.items()} == {1: True, 2: True, 3: False, 4: True}
        assert described[1].values[config_keys.LEADER_REPLICATION_THROTTLED_RATE].value == "1000000"
        assert elapsed < 2 * (1.0 + 1.0) + 0.5  # the first pass and broker 3's attempt alone, each bounded
    finally:
        hung.close()
        await admin.close()
        gc.collect()


class RecordingObserver:
    def __init__(self) -> None:
        self.reports: list[tuple[str, str]] = []

    def call_failed(self, api: str, error: Any) -> None:
        self.reports.append((api, error.name))

    def call_succeeded(self, api: str, wall_time: float) -> None:
        self.reports.append((api, "ok"))


async def test_the_observer_gets_one_report_per_broker_request(own_sim: SimProcess) -> None:
    """As when each broker had a call of its own: a success per broker that answered, a failure per broker
    that did not. The first pass went to the metrics as one more call, a success even when no broker
    answered (reassignd_cluster_last_success_timestamp_seconds moved with the whole cluster down)."""
    observer = RecordingObserver()
    settings = make_admin(own_sim, request_timeout=1.0, retry=RetryPolicy(attempts=1))._settings
    admin = KafkaClusterAdmin(settings, observer=observer)
    try:
        await admin.describe_broker_configs([1, 2, 3, 4], KEYS)
        assert observer.reports == [("describe_cluster", "ok")] + [("describe_configs", "ok")] * 4
        observer.reports.clear()
        own_sim.stop_broker(3)  # after the caller read the live brokers
        described = await admin.describe_broker_configs([1, 2, 3, 4], KEYS, live={1, 2, 3, 4})
        assert [b for b, d in described.items() if d.error is not None] == [3]
        assert (
            sorted(observer.reports)
            == [("describe_configs", described[3].error.name)]
            + [  # type: ignore[union-attr]
                ("describe_configs", "ok")
            ]
            * 3
        )
        observer.reports.clear()
        for broker in (1, 2, 4):
            own_sim.stop_broker(broker)
        described = await admin.describe_broker_configs([1, 2, 3, 4], KEYS, live={1, 2, 3, 4})
        assert all(d.error is not None for d in described.values())
        assert sorted(observer.reports) == sorted(
            ("describe_configs", d.error.name) for d in described.values()
        )  # type: ignore[union-attr]
    finally:
        await admin.close()
        gc.collect()


async def test_a_broker_s_resource_error_is_its_error_entry(
    own_sim: SimProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hand-crafted: each broker asked for the next broker's resource, which Kafka refuses (INVALID_REQUEST,
    "Unexpected broker id"). The refusal is that broker's error entry, the call does not fail, and the
    metrics count it failed (a broker denying DescribeConfigs counted as a success)."""
    real = kafka_module.broker_configs_request
    monkeypatch.setattr(kafka_module, "broker_configs_request", lambda b, keys: real(b % 4 + 1, keys))
    observer = RecordingObserver()
    settings = make_admin(own_sim, request_timeout=1.0, retry=RetryPolicy(attempts=1))._settings
    admin = KafkaClusterAdmin(settings, observer=observer)
    try:
        described = await admin.describe_broker_configs([1, 2, 3, 4], KEYS)
    finally:
        await admin.close()
        gc.collect()
    assert {b: (d.error and d.error.name, d.values) for b, d in described.items()} == {
        b: ("INVALID_REQUEST", {}) for b in (1, 2, 3, 4)
    }
    assert "Unexpected broker id" in str(described[1].error)
    assert observer.reports == [("describe_cluster", "ok")] + [("describe_configs", "INVALID_REQUEST")] * 4


async def test_an_answer_that_cannot_be_read_is_that_broker_s_error(own_sim: SimProcess) -> None:
    """`read` failing on one broker's answer (an answer shaped unlike Kafka's) fails that broker only."""
    admin = make_admin(own_sim, request_timeout=1.0, retry=RetryPolicy(attempts=1))

    def read(broker: int, response: Any) -> int:
        if broker == 2:
            raise ValueError("not enough values to unpack (expected 1, got 0)")
        return len(response.results)

    requests = {b: broker_configs_request(b, list(KEYS)) for b in (1, 2, 3)}
    try:
        outcomes = await admin._each_broker("describe_configs", requests, read)
    finally:
        await admin.close()
        gc.collect()
    assert outcomes[1] == outcomes[3] == 1
    assert isinstance(outcomes[2], KafkaErrorInfo) and "not enough values" in str(outcomes[2])


async def test_close_while_a_broker_is_asked_again_leaves_no_client_behind(own_sim: SimProcess) -> None:
    """A broker asked again alone when the adapter closes: the retry bootstrapped a new kafka-python client
    after close() had taken the old one, and nothing closed it (its IO thread and sockets lived on)."""
    admin = make_admin(own_sim, request_timeout=1.0, retry=RetryPolicy(attempts=1))
    hung = socket.socket()
    before = {t.ident for t in threading.enumerate()}
    try:
        await admin.describe_broker_configs([1, 2, 4], KEYS)
        port = own_sim.broker_ports[3]
        own_sim.stop_broker(3)
        hung.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        hung.bind(("127.0.0.1", port))
        hung.listen(8)
        task = asyncio.create_task(admin.describe_broker_configs([1, 2, 3, 4], KEYS, live={1, 2, 3, 4}))
        await asyncio.sleep(1.2)  # the first pass gave up on broker 3, which is being asked alone
        await admin.close()
        described = await task
    finally:
        hung.close()
        await admin.close()
        gc.collect()
    assert described[3].error is not None and described[1].error is None
    assert admin._kp.held is None
    for thread in threading.enumerate():  # kafka-python's IO thread ends when its client closes
        if thread.ident not in before:
            thread.join(timeout=2)
    assert [t.name for t in threading.enumerate() if t.ident not in before] == []


async def test_no_keys_asked_reads_no_broker_config(own_sim: SimProcess) -> None:
    """keys=() asks for no config (None: all of them), as before and as describe_topic_configs does; the
    request named no key, which Kafka reads as every key (ConfigHelper: null or empty): all configs came."""
    admin = make_admin(own_sim, request_timeout=1.0, retry=RetryPolicy(attempts=1))
    try:
        none = await admin.describe_broker_configs([1, 2], ())
        every = await admin.describe_broker_configs([1], None)
        unknown = await admin.describe_broker_configs(
            [1], ["no.such.config", config_keys.LEADER_REPLICATION_THROTTLED_RATE]
        )
    finally:
        await admin.close()
        gc.collect()
    assert {b: (d.error, d.values) for b, d in none.items()} == {1: (None, {}), 2: (None, {})}
    assert config_keys.LEADER_REPLICATION_THROTTLED_RATE in every[1].values and len(every[1].values) > 10
    assert set(unknown[1].values) == {config_keys.LEADER_REPLICATION_THROTTLED_RATE}


async def test_each_answer_is_read_as_it_arrives_not_after_the_slowest_broker(
    own_sim: SimProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broker's DescribeLogDirs answer is converted as soon as it arrives: the decoded answers of every
    broker were held until the slowest had answered (a first full read of 100,000 partitions: about 15 MB),
    and the conversion waited for it. Broker 3 hangs; the others' answers are read long before it is given
    up on, then it is asked again alone and fails alone."""
    admin = make_admin(own_sim, request_timeout=2.0, retry=RetryPolicy(attempts=1))
    hung = socket.socket()
    read_at: dict[int, float] = {}
    real = convert.log_dir_listing

    def listing(broker: int, *args: Any) -> Any:
        read_at[broker] = time.monotonic()
        return real(broker, *args)

    monkeypatch.setattr(convert, "log_dir_listing", listing)
    hosts = {b: [TopicPartition("orders", p) for p in range(6)] for b in (1, 2, 3, 4)}
    try:
        await admin._log_dirs_by_broker({b: [] for b in (1, 2, 4)}, dirs_only=True)  # a client, connected
        port = own_sim.broker_ports[3]
        own_sim.stop_broker(3)
        hung.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        hung.bind(("127.0.0.1", port))
        hung.listen(8)  # never accepted, never answered
        read_at.clear()
        started = time.monotonic()
        result = await admin._log_dirs_by_broker(hosts)
    finally:
        hung.close()
        await admin.close()
        gc.collect()
    assert set(result.errors) == {3} and set(read_at) == {1, 2, 4}
    assert {b for _, b in result.replicas} == {1, 2, 4}
    assert max(read_at.values()) - started < 1.0  # broker 3 is given up on after 2.0 s


async def test_no_more_answers_than_in_flight_wait_to_be_read(
    own_sim: SimProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With `in_flight`, a request goes out only once an answer was read: kafka-python's IO thread decodes
    answers faster than they are converted, and with every request in flight most of a big first read's
    decoded answers could wait to be read (up to 75 of 100 on a 100,000-partition simulator)."""
    admin = make_admin(own_sim, request_timeout=2.0, retry=RetryPolicy(attempts=1))
    sent: list[int] = []
    unread_at_read: list[int] = []

    def read(broker: int, response: Any) -> int:
        unread_at_read.append(len(sent) - len(unread_at_read))
        time.sleep(0.05)  # slower than the answers come
        return len(response.results)

    requests = {b: broker_configs_request(b, list(KEYS)) for b in (1, 2, 3, 4)}
    try:
        await admin.describe_broker_configs([1, 2, 3, 4], KEYS)  # a client, connected
        manager = admin._kafka_python()._manager
        send = manager.send

        def counted(request: Any, node_id: int | None = None, **kwargs: Any) -> Any:
            sent.append(node_id or 0)
            return send(request, node_id=node_id, **kwargs)

        monkeypatch.setattr(manager, "send", counted)
        outcomes = await admin._each_broker("describe_configs", requests, read, in_flight=2)
    finally:
        await admin.close()
        gc.collect()
    assert outcomes == dict.fromkeys((1, 2, 3, 4), 1)
    assert sorted(sent) == [1, 2, 3, 4] and max(unread_at_read) <= 2


async def test_brokers_that_never_answer_share_one_timeout_in_a_window(own_sim: SimProcess) -> None:
    """With a window of one request in flight, two brokers that never answer each held it for a timeout of
    their own, one after the other (a network partition with 100 brokers and a window of 8: 13 timeouts
    for one read). The first pass ends within one timeout; each broker is then asked again alone."""
    admin = make_admin(own_sim, request_timeout=1.5, retry=RetryPolicy(attempts=1))
    hung = [socket.socket(), socket.socket()]
    requests = {b: broker_configs_request(b, list(KEYS)) for b in (1, 2, 3, 4)}
    try:
        await admin.describe_broker_configs([1, 2], KEYS)  # knows brokers 3 and 4, never dialled them
        for sock, broker in zip(hung, (3, 4), strict=True):
            port = own_sim.broker_ports[broker]
            own_sim.stop_broker(broker)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", port))
            sock.listen(8)  # never accepted, never answered
        started = time.monotonic()
        outcomes = await admin._each_broker(
            "describe_configs", requests, lambda b, r: len(r.results), in_flight=1
        )
        elapsed = time.monotonic() - started
    finally:
        for sock in hung:
            sock.close()
        await admin.close()
        gc.collect()
    assert outcomes[1] == outcomes[2] == 1
    assert isinstance(outcomes[3], KafkaErrorInfo) and isinstance(outcomes[4], KafkaErrorInfo)
    assert elapsed < 2 * 1.5 + 0.8, elapsed  # the first pass, then both brokers alone at once

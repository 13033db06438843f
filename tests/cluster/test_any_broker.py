"""Requests any broker answers (configs of topics; on KRaft the controller's, which every broker forwards) go
to a live broker, not to the controller a client library was last told of.

librdkafka sends DescribeConfigs and IncrementalAlterConfigs of topics to the controller its last Metadata
named; a KRaft broker names a random live broker there, and a broker killed a moment ago stays live until it
is fenced. On a real KRaft cluster (tests/realkafka/test_failures.py) that broker failed every snapshot for
22 s. The stand-in below answers as librdkafka does then: without `broker=` a request goes to the named
controller, and a request to the killed broker times out; and a fresh kafka-python client is sent back to
the killed broker by its own Metadata, as four in a row were within a second on real KRaft.
"""

from __future__ import annotations

import gc
import time
from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from reassignd.cluster import clients, kafka
from reassignd.cluster._kafka_python import kafka_errors
from reassignd.cluster.api import ConfigOp
from reassignd.cluster.errors import ClusterCallError
from reassignd.cluster.kafka import AdminSettings, KafkaClusterAdmin
from reassignd.cluster.retry import RetryPolicy
from reassignd.config_keys import LEADER_REPLICATION_THROTTLED_RATE, LEADER_REPLICATION_THROTTLED_REPLICAS


class KilledBrokerCluster:
    """Brokers 1-4 listed live; broker `killed` (also the controller Metadata named) does not answer."""

    def __init__(self, killed: int = 1) -> None:
        self.killed = killed
        self.asked: list[tuple[str, int | str]] = []
        self.metadata_asked = 0

    def poll(self, timeout: float) -> int:
        """The admin's event thread polls its handle: this one has no events."""
        time.sleep(timeout)
        return 0

    def describe_cluster(self, request_timeout: float) -> Future[Any]:
        nodes = [SimpleNamespace(id=b, rack=None) for b in (1, 2, 3, 4)]
        return _done(SimpleNamespace(cluster_id="c", controller=SimpleNamespace(id=self.killed), nodes=nodes))

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        """Metadata, which librdkafka sends to any broker that is up: answered, and no topic in it."""
        self.metadata_asked += 1
        return SimpleNamespace(cluster_id="c", controller_id=self.killed, topics={}, brokers={})

    def describe_configs(
        self, resources: list[Any], request_timeout: float, broker: int = -1
    ) -> dict[Any, Any]:
        return {r: self._answer("describe_configs", broker, {}) for r in resources}

    def send_fenced(self, client: Any, request: Any, to: int | str, fence: Any, timeout: float) -> Any:
        """Writes go through kafka-python (cluster/_kafka_python.py send_fenced), to the broker named."""
        fence()
        self.asked.append(("incremental_alter_configs", to))
        if to == self.killed:
            raise kafka_errors.KafkaTimeoutError("Request timed out")
        return SimpleNamespace(responses=[SimpleNamespace(error_code=0, error_message=None)])

    def _answer(self, api: str, broker: int, result: Any) -> Future[Any]:
        target = self.killed if broker == -1 else broker  # no broker=: the controller Metadata named
        self.asked.append((api, target))
        if target == self.killed:
            future: Future[Any] = Future()
            future.set_exception(
                KafkaException(KafkaError(KafkaError._TIMED_OUT, "Failed while waiting for controller"))
            )
            return future
        return _done(result)


def _done(result: Any) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_result(result)
    return future


def admin_on(cluster: KilledBrokerCluster) -> KafkaClusterAdmin:
    admin = KafkaClusterAdmin(
        AdminSettings(
            client={"bootstrap.servers": "127.0.0.1:9"},
            request_timeout=1.0,
            retry=RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.02),
        )
    )
    admin._ck = cluster
    return admin


class NoKafkaPythonClient:
    """Stands for kafka-python's client where the cluster's send_fenced answers instead."""

    def __init__(self, **config: Any) -> None:
        pass

    def close(self) -> None:
        pass


@pytest.fixture
async def admin_on_a_killed_broker(monkeypatch: pytest.MonkeyPatch) -> Any:
    cluster = KilledBrokerCluster(killed=1)
    monkeypatch.setattr(clients, "KafkaAdminClient", NoKafkaPythonClient)
    monkeypatch.setattr(kafka, "send_fenced", cluster.send_fenced)
    admin = admin_on(cluster)
    try:
        yield admin, cluster
    finally:
        await admin.close()
        gc.collect()


async def test_topic_configs_move_on_from_a_broker_that_does_not_answer_and_stay_there(
    admin_on_a_killed_broker: Any,
) -> None:
    admin, cluster = admin_on_a_killed_broker
    await admin._describe_cluster()  # what every snapshot asks first: brokers 1-4 listed
    described = await admin.describe_topic_configs(["orders"], [LEADER_REPLICATION_THROTTLED_REPLICAS])
    assert described["orders"].error is None
    await admin.alter_topic_configs("orders", [ConfigOp.append(LEADER_REPLICATION_THROTTLED_REPLICAS, "0:2")])
    assert cluster.asked == [
        ("describe_configs", 1),  # the first live broker: killed, not fenced yet
        ("describe_configs", 2),  # the retry asks the next one
        ("incremental_alter_configs", 2),  # and the next request stays with the broker that answered
    ]


async def test_a_brokers_own_configs_still_go_to_that_broker(admin_on_a_killed_broker: Any) -> None:
    admin, cluster = admin_on_a_killed_broker
    await admin._describe_cluster()
    await admin.alter_broker_configs(3, [ConfigOp.set(LEADER_REPLICATION_THROTTLED_RATE, "5")])
    with pytest.raises(ClusterCallError):
        await admin.alter_broker_configs(1, [ConfigOp.set(LEADER_REPLICATION_THROTTLED_RATE, "5")])
    assert cluster.asked == [("incremental_alter_configs", 3)] + [("incremental_alter_configs", 1)] * 3


class FreshKafkaPythonClient:
    """A kafka-python admin client on a KRaft cluster whose broker 4 was just killed (not fenced yet): its
    own Metadata names broker 4 as the controller, and a request there is refused."""

    KILLED = 4
    made: list[FreshKafkaPythonClient] = []

    def __init__(self, **config: Any) -> None:
        self._controller_id: int | None = None
        self.asked: list[int] = []
        FreshKafkaPythonClient.made.append(self)

    def list_partition_reassignments(self, request: Any, timeout_ms: int) -> dict[Any, Any]:
        if self._controller_id is None:
            self._controller_id = self.KILLED  # the random live broker its Metadata named
        self.asked.append(self._controller_id)
        if self._controller_id == self.KILLED:
            raise kafka_errors.KafkaConnectionError("111 ECONNREFUSED")
        return {}

    def close(self) -> None:
        pass


async def test_a_controller_request_moves_on_from_a_killed_broker_a_fresh_client_goes_back_to(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(clients, "KafkaAdminClient", FreshKafkaPythonClient)
    FreshKafkaPythonClient.made = []
    admin = admin_on(KilledBrokerCluster(killed=FreshKafkaPythonClient.KILLED))
    try:
        await admin._describe_cluster()  # what every snapshot asks first: brokers 1-4 listed
        assert await admin.list_partition_reassignments() == {}
        assert [c.asked for c in FreshKafkaPythonClient.made] == [[4], [1]]
    finally:
        await admin.close()
        gc.collect()


class CountingKafkaPythonClient:
    """A kafka-python client whose broker-routed call fails as `failure` says; counts the clients made."""

    made: list[CountingKafkaPythonClient] = []

    def __init__(self, **config: Any) -> None:
        self.closed = False
        CountingKafkaPythonClient.made.append(self)

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize(
    ("failure", "replaced"),
    [
        # the broker is down: a new client would be refused the same, and closing the shared one cancels
        # every other call in flight on it (a fresh-clone run: the cycle's ListPartitionReassignments
        # "Cancelled", then "the cluster cannot be reached" with 3 of 4 brokers up)
        (kafka_errors.KafkaConnectionError("111 ECONNREFUSED"), False),
        # kafka-python's metadata forgot a broker that is back: only a new client asks again
        (kafka_errors.UnknownBrokerIdError(), True),
    ],
)
async def test_a_broker_call_replaces_the_shared_client_only_when_its_view_is_stale(
    monkeypatch: pytest.MonkeyPatch, failure: Exception, replaced: bool
) -> None:
    monkeypatch.setattr(clients, "KafkaAdminClient", CountingKafkaPythonClient)
    CountingKafkaPythonClient.made = []
    admin = admin_on(KilledBrokerCluster())

    def call(client: Any) -> None:
        raise failure

    try:
        with pytest.raises(type(failure)):
            await admin._blocking(lambda: admin._on_broker(call))
        first = CountingKafkaPythonClient.made[0]
        assert (len(CountingKafkaPythonClient.made) > 1, first.closed) == (replaced, replaced)
    finally:
        await admin.close()
        gc.collect()

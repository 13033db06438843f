"""Both clients' errors normalise to Kafka's names and one retriable flag."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from reassignd.cluster._kafka_python import kafka_errors
from reassignd.cluster.errors import (
    REQUEST_TIMED_OUT,
    error_for_code,
    from_exception,
    from_kafka_python,
    from_librdkafka,
)


@pytest.mark.parametrize(
    ("code", "name", "retriable"),
    [
        (3, "UNKNOWN_TOPIC_OR_PARTITION", True),
        (8, "BROKER_NOT_AVAILABLE", True),
        (39, "INVALID_REPLICA_ASSIGNMENT", False),
        (41, "NOT_CONTROLLER", True),
        (84, "ELECTION_NOT_NEEDED", True),  # an InvalidMetadataException in Kafka
        (85, "NO_REASSIGNMENT_IN_PROGRESS", False),
        (9999, "KAFKA_ERROR_9999", False),
    ],
)
def test_codes_get_kafkas_names(code: int, name: str, retriable: bool) -> None:
    info = error_for_code(code)
    assert (info.name, info.code, info.retriable) == (name, code, retriable)


def test_librdkafka_names_are_normalised_to_kafkas() -> None:
    # librdkafka calls code 3 UNKNOWN_TOPIC_OR_PART; callers see Kafka's name either way.
    assert from_librdkafka(KafkaError(3)).name == "UNKNOWN_TOPIC_OR_PARTITION"
    assert from_exception(KafkaException(KafkaError(3))).name == "UNKNOWN_TOPIC_OR_PARTITION"


@pytest.mark.parametrize(
    ("code", "retriable"),
    [(KafkaError._TIMED_OUT, True), (KafkaError._TRANSPORT, True), (KafkaError._INVALID_ARG, False)],
)
def test_librdkafka_local_errors(code: int, retriable: bool) -> None:
    info = from_librdkafka(KafkaError(code))
    assert info.code is None
    assert info.name.startswith("_")
    assert info.retriable is retriable


def test_kafka_python_classes_and_instances() -> None:
    assert from_kafka_python(kafka_errors.NoReassignmentInProgressError).name == "NO_REASSIGNMENT_IN_PROGRESS"
    assert from_kafka_python(kafka_errors.NotControllerError("x")).retriable
    timeout = from_kafka_python(kafka_errors.KafkaTimeoutError("slow"))
    assert (timeout.name, timeout.retriable) == (REQUEST_TIMED_OUT, True)
    assert from_kafka_python(kafka_errors.KafkaConnectionError()).retriable


def test_a_broker_the_clients_metadata_dropped_is_retriable() -> None:
    """kafka-python raises UnknownBrokerIdError when its cached controller (or a broker) left its metadata:
    the client is replaced and a retry reaches the live one (CI stop 33 failed a ZooKeeper-mode controller
    failover on it: NodeNotReadyError first was retried, this one was not)."""
    assert from_kafka_python(kafka_errors.UnknownBrokerIdError(1)).retriable


def test_other_exceptions() -> None:
    assert from_exception(TimeoutError()).retriable
    assert from_exception(ConnectionRefusedError("no")).retriable
    bug = from_exception(KeyError("oops"))
    assert (bug.name, bug.retriable) == ("KeyError", False)
